"""The single-receipt review page of a document read from a PDF (issue 33 item 8, its page
images): `groundswell report RECEIPT DOC SCHEMA CANDIDATES --pdf FILE` shows the cited pages
as images held in the page (``data:`` URLs, so the file still fetches nothing), each value's
box numbered as its card and drawn where the layout puts the word, over the word's ink; a
PDF that does not read to the receipt's document is refused (exit 2)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.read import read_path
from groundswell.shared.settings import get_settings
from tests.integration.corpus_gen import SCHEMA
from tests.shared.read.test_render import ink_box, pixels
from tests.shared.runs.mixed_corpus import SOURCES

PROTOCOL = SOURCES["protocol"][0]


def _value_item(candidate: dict) -> dict:
    ev = candidate["evidence"]
    return ev[0] if isinstance(ev, list) else ev


def _candidate(text: str, cid: str, before: str, value: str) -> dict:
    at = len(text[: text.index(before) + len(before)].encode())
    return {
        "id": cid,
        "field": "figure_1" if cid == "n1" else "figure_2",
        "value": value,
        "evidence": {"start": at, "end": at + len(value.encode()), "text": value},
    }


@pytest.fixture
def pdf_receipt(shared_raw: Path, tmp_path: Path):
    return write_pdf_receipt(shared_raw, tmp_path)


def write_pdf_receipt(shared_raw: Path, tmp_path: Path):
    """(the `report` arguments, the PDF, its layout, the candidates) of a receipt admitted on
    the text the protocol PDF reads to."""
    pdf = tmp_path / "protocol.pdf"
    shutil.copyfile(shared_raw / PROTOCOL, pdf)
    reading = read_path(pdf)
    (tmp_path / "doc.txt").write_bytes(reading.text.encode())
    candidates = [
        _candidate(reading.text, "n1", "recruit ", "20"),
        _candidate(reading.text, "n2", "recruit 20 ", "subjects"),  # a word, not a number
    ]
    # n1 also cites where its field is named: a role item, boxed in the other colour.
    n1 = candidates[0]
    n1["evidence"] = [n1["evidence"], {"role": "field", "text": "sample size"}]
    (tmp_path / "candidates.json").write_text(json.dumps(candidates))
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    inputs = [str(tmp_path / n) for n in ("doc.txt", "schema.json", "candidates.json")]
    admitted = CliRunner().invoke(main, ["admit", *inputs, "-o", str(tmp_path / "receipt.json")])
    assert admitted.exit_code == 0, admitted.output
    return [str(tmp_path / "receipt.json"), *inputs], pdf, reading.layout, candidates


def _images(page: str) -> list[tuple[int, str, list[dict[str, float | str]]]]:
    """(page number, the PNG's bytes as base64, boxes) of each page image."""
    out = []
    for figure in re.findall(r'<figure class="pageimg".*?</figure>', page, flags=re.S):
        number = int(re.search(r'data-page="(\d+)"', figure).group(1))
        data = re.search(r'<img src="data:image/png;base64,([^"]+)"', figure).group(1)
        boxes = [
            {"css": css, "x": float(x), "y": float(y), "w": float(w), "h": float(h)}
            for css, x, y, w, h in re.findall(
                r'<rect class="bx-(\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
                r'height="([\d.]+)"',
                figure,
            )
        ]
        labels = re.findall(r'<text class="bx-label"[^>]*>([^<]+)</text>', figure)
        out.append((number, data, boxes, labels))
    return out


def test_the_cited_page_is_in_the_page_with_each_value_boxed_over_its_word(pdf_receipt, tmp_path):
    args, pdf, layout, candidates = pdf_receipt
    out = tmp_path / "review.html"
    done = CliRunner().invoke(main, ["report", *args, "--pdf", str(pdf), "-o", str(out)])
    assert done.exit_code == 0, done.output
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and 'src="http' not in page
    images = _images(page)
    assert len(images) == 1
    number, data, boxes, labels = images[0]
    # Both values are on one page, numbered as their cards (the candidates' order here).
    assert sorted(labels) == ["1", "2"]
    assert re.search(r'<span class="num-key">1</span> <code>n1</code>', page)
    assert f'href="#page-image-{number}"' in page  # a card links to its page's image
    png = base64.b64decode(data)
    rendered = pixels(png)
    dpi = get_settings().page_image_dpi
    size = next(p for p in layout["pages"] if p["page"] == number)
    assert rendered[0] == pytest.approx(size["width"] * dpi / 72, abs=1)
    scale = rendered[0] / size["width"]
    values = [b for b in boxes if b["css"] == "value"]
    assert len(values) == 2
    for candidate, box in zip(candidates, values, strict=True):
        at = _value_item(candidate)["start"]
        word = next(w for w in layout["words"] if w[0] <= at < w[1])
        assert word[2] == number
        # The drawn box is the word's (padded by a point), and the word's ink is inside it.
        drawn = (box["x"] + 1, box["y"] + 1, box["x"] + box["w"] - 1, box["y"] + box["h"] - 1)
        assert all(abs(a - b) < 0.02 for a, b in zip(drawn, word[3:], strict=True))
        pixel_box = tuple(
            int(v * scale)
            for v in (box["x"], box["y"], box["x"] + box["w"] + 1, box["y"] + box["h"] + 1)
        )
        ink = ink_box(rendered, pixel_box)
        assert ink is not None, pixel_box
        assert ink[2] - ink[0] >= (pixel_box[2] - pixel_box[0]) / 2, (ink, pixel_box)


def test_without_pdf_there_is_no_image_and_a_pdf_of_another_document_is_refused(
    pdf_receipt, shared_raw, tmp_path
):
    args, _, _, _ = pdf_receipt
    plain = CliRunner().invoke(main, ["report", *args])
    assert plain.exit_code == 0 and '<figure class="pageimg"' not in plain.output
    other = tmp_path / "other.pdf"
    shutil.copyfile(shared_raw / "NCT06155240_Prot_SAP_000.pdf", other)  # no text layer
    refused = CliRunner().invoke(main, ["report", *args, "--pdf", str(other)])
    assert refused.exit_code == 2 and str(other) in refused.output
    text = tmp_path / "doc.txt"
    not_pdf = CliRunner().invoke(main, ["report", *args, "--pdf", str(text)])
    assert not_pdf.exit_code == 2 and "not a PDF" in not_pdf.output
    run_only = CliRunner().invoke(main, ["report", "some-run", "--pdf", str(text)])
    assert run_only.exit_code == 2 and "--pdf" in run_only.output


def test_role_items_are_boxed_in_their_own_colour_on_both_pages(pdf_receipt, tmp_path):
    """The receipt page and the run report's document view draw a value's role items (here
    the field's name) over the page as well, in the role colour."""
    from groundswell.shared.report.render import render_report

    args, pdf, layout, _ = pdf_receipt
    receipt = json.loads(Path(args[0]).read_text())
    n1 = next(d for d in receipt["decisions"] if d["candidate_id"] == "n1")
    (part,) = [p for p in n1["parts"] if p["role"] == "field"]
    word = next(w for w in layout["words"] if w[0] <= part["start"] < w[1])
    out = tmp_path / "review.html"
    done = CliRunner().invoke(main, ["report", *args, "--pdf", str(pdf), "-o", str(out)])
    assert done.exit_code == 0, done.output
    ((_, _, boxes, _),) = _images(out.read_text(encoding="utf-8"))
    roles = [b for b in boxes if b["css"] == "role"]
    assert len(roles) == 1 and roles[0]["x"] == pytest.approx(word[3] - 1, abs=0.02)
    text = Path(args[1]).read_text(encoding="utf-8")
    page = render_report(
        {"run_id": "r1", "counts": {}, "rates": {}, "policy": {"ref": "default@1"}},
        [{"doc_id": "protocol", "kind": "admit", "receipt": "k"}],
        lambda key: {"receipt": receipt},
        lambda doc_id: text,
        lambda doc_id: {},
        load_layout=lambda doc_id: layout,
    )
    figure = page[page.index('<figure class="pageimg"') : page.index("</figure>")]
    assert 'src="/v1/runs/r1/documents/protocol/pages/' in figure
    assert figure.count('class="bx-value"') == 2 and figure.count('class="bx-role"') == 1
    assert f'x="{round(word[3] - 1, 2)}"' in figure
