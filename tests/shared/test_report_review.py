"""`groundswell report RECEIPT DOC SCHEMA CANDIDATES`: groundgate's report form.

The receipt is re-derived first (exit 1 and no page on a mismatch, 2 on an invalid input, as
groundgate 0.11.0 exits), then its review page shows each candidate's outcome, codes and value
with its evidence highlighted in the document; no input text ever becomes markup.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import groundgate.cli
import pytest
from click.testing import CliRunner

from groundswell.shared.admit import admit, admit_packet
from groundswell.shared.cli import main
from tests.shared.admit import conformance as conf


def _write(folder: Path, vector: dict[str, Any], receipt: dict[str, Any]) -> list[str]:
    """The vector's inputs as files; the arguments of `report` for them."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doc.txt").write_bytes(vector["document"].encode("utf-8"))
    for name in ("schema", "candidates"):
        (folder / f"{name}.json").write_text(json.dumps(vector[name]))
    (folder / "receipt.json").write_text(json.dumps(receipt))
    args = [str(folder / n) for n in ("receipt.json", "doc.txt", "schema.json", "candidates.json")]
    for name in ("policy", "judgments", "references"):
        if vector.get(name) is not None:
            (folder / f"{name}.json").write_text(json.dumps(vector[name]))
            args += [f"--{name}", str(folder / f"{name}.json")]
    if vector.get("document_source") is not None:
        args += ["--document-source", vector["document_source"]]
    return args


def _vector(name: str) -> dict[str, Any]:
    return conf.load(conf.conformance_dir() / "vectors" / f"{name}.json")


def _report(*args: str):
    return CliRunner().invoke(main, ["report", *args])


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes |= {name for name, _ in attrs}
        if tag not in ("meta", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-3:])
        self.open.pop()


def _parsed(page: str) -> _Markup:
    parsed = _Markup()
    parsed.feed(page)
    assert not parsed.open  # every element is closed, in order
    return parsed


def test_review_page_of_a_conformance_vector(tmp_path: Path):
    vector = _vector("19e-references")  # document and reference evidence, parts, a review
    receipt = admit_packet(vector)
    args = _write(tmp_path, vector, receipt)
    done = _report(*args, "-o", str(tmp_path / "review.html"))
    assert done.exit_code == 0, done.output
    page = (tmp_path / "review.html").read_text(encoding="utf-8")
    _parsed(page)
    assert "receipt verified" in page and receipt["receipt_sha256"] in page
    outcomes = [d["outcome"] for d in receipt["decisions"]]
    for outcome in set(outcomes):
        assert page.count(f'<mark class="o-{outcome}">{outcome}</mark>') >= outcomes.count(outcome)
    # Those that need a person come first.
    assert page.index('<mark class="o-needs_verification">') < page.index(
        '<mark class="o-admitted">admitted</mark><br>'
    )
    # Document evidence is highlighted in the document and linked; reference evidence is shown
    # in its reference's text.
    body = page.split('<div class="doc">')[1]
    assert '<span id="ev-' in body
    # Two candidates cite one span: the one that needs a person gives the colour; both are named.
    assert (
        '<mark class="o-needs_verification" title="e7: needs_verification, e2: admitted">' in body
    )
    assert '<mark class="o-admitted">$170,000</mark>' in page  # in irs-221's text
    # Without -o the page goes to stdout, as groundgate's does.
    to_stdout = _report(*args)
    assert to_stdout.exit_code == 0 and to_stdout.stdout.startswith("<!doctype html>")
    assert to_stdout.stdout == page


def test_the_run_form_still_takes_one_run_id(tmp_path: Path, monkeypatch):
    from groundswell.shared.cli import policies
    from groundswell.shared.report import service as report_service

    def run_report(service, run_id: str, documents: int) -> str:
        return f"<p>{run_id} {documents}</p>"

    monkeypatch.setattr(policies, "_registry_service", lambda: (object(), None))
    monkeypatch.setattr(report_service, "run_report", run_report)
    out = tmp_path / "run.html"
    done = _report("r1", "--documents", "3", "-o", str(out))
    assert done.exit_code == 0 and out.read_text() == "<p>r1 3</p>"
    wrong = _report("r1", "--title", "x")
    assert (
        wrong.exit_code == 2 and "--title: only with RECEIPT DOC SCHEMA CANDIDATES" in wrong.output
    )
    assert _report("a", "b").exit_code == 2
    # A page holds 1 to 1000 documents, as the API's: 0 would fail in the page's cursor (a
    # traceback) and a negative count would show every document of the run.
    for bad in ("0", "-1", "1001"):
        refused = _report("r1", "--documents", bad, "-o", str(out))
        assert refused.exit_code == 2 and "--documents" in refused.output


def _tampered(receipt: dict[str, Any]) -> dict[str, Any]:
    changed = json.loads(json.dumps(receipt))
    changed["decisions"][0]["outcome"] = "admitted"
    return changed


CASES = {
    "verified": lambda v, r: (v, r),
    "tampered decision": lambda v, r: (v, _tampered(r)),
    "another document": lambda v, r: ({**v, "document": v["document"] + " "}, r),
    "candidates not a list": lambda v, r: ({**v, "candidates": {"a": 1}}, r),
    "receipt not an object": lambda v, r: (v, [r]),
}


@pytest.mark.parametrize("case", CASES)
def test_exit_codes_match_groundgates(tmp_path: Path, case: str, capsys):
    vector = _vector("07f-abbreviation-dots")
    vector, receipt = CASES[case](vector, admit_packet(vector))
    args = _write(tmp_path, vector, receipt)
    out = tmp_path / "page.html"
    ours = _report(*args, "-o", str(out))
    theirs = groundgate.cli.main(["report", *args, "-o", str(tmp_path / "theirs.html")])
    capsys.readouterr()
    assert ours.exit_code == theirs, ours.output
    assert out.exists() == (theirs == 0)  # no page for a receipt that does not match
    if theirs == 1:
        assert "mismatch: " in ours.output


def test_pack_dir_finds_the_packs_the_receipt_names(tmp_path: Path):
    vector = _vector("90-kind-needs")  # a kind pack that needs a vocabulary pack
    receipt = admit_packet(vector)
    args = _write(tmp_path, {k: v for k, v in vector.items() if k != "packs"}, receipt)
    missing = _report(*args)
    assert missing.exit_code == 1 and "is not built in or given" in missing.output
    packs = tmp_path / "packs"
    packs.mkdir()
    for i, pack in enumerate(vector["packs"]):
        (packs / f"pack-{i}.json").write_text(json.dumps(pack))
    (packs / "not-a-pack.json").write_text('{"groundgate_pack": 2}')
    found = _report(*args, "--pack-dir", str(packs), "-o", str(tmp_path / "p.html"))
    assert found.exit_code == 0, found.output
    given = [
        a for i in range(len(vector["packs"])) for a in ("--pack", str(packs / f"pack-{i}.json"))
    ]
    assert _report(*args, *given, "-o", str(tmp_path / "q.html")).exit_code == 0


def test_layout_pages_are_shown_and_must_be_of_the_document(tmp_path: Path):
    vector = _vector("01-admitted")
    receipt = admit_packet(vector)
    args = _write(tmp_path, vector, receipt)
    middle = len(vector["document"].encode()) // 2
    layout = {
        "groundgate_layout": "0.1",
        "document_sha256": receipt["document"]["sha256"],
        "pages": [
            {"page": 7, "width": 612, "height": 792, "start": 0, "end": middle},
            {"page": 8, "width": 612, "height": 792, "start": middle, "end": 2 * middle + 1},
        ],
        "words": [],
    }
    (tmp_path / "layout.json").write_text(json.dumps(layout))
    done = _report(*args, "--layout", str(tmp_path / "layout.json"), "--title", "IRS 590-A")
    assert done.exit_code == 0, done.output
    assert '<span class="page">page 7</span>' in done.output
    assert '<span class="page">page 8</span>' in done.output
    assert "· page 7<br>" in done.output and "<title>IRS 590-A</title>" in done.output
    other = {**layout, "document_sha256": "sha256:" + "0" * 64}
    (tmp_path / "other.json").write_text(json.dumps(other))
    refused = _report(*args, "--layout", str(tmp_path / "other.json"))
    assert refused.exit_code == 2 and "different document" in refused.output


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def test_hostile_text_in_a_review_comes_out_escaped(tmp_path: Path):
    """The document, candidate ids, values and codes, a reference's text, a URL and the title
    are all text on the page (this fails when the templates' autoescape is off)."""
    document = f"Plan name: {HOSTILE}. The fee is $250."
    schema = {"fields": {"plan": {"type": "string"}, "fee": {"type": "integer", "unit": "USD"}}}
    references = [{"id": "r1", "text": f"Fee: $250 {HOSTILE}"}]
    candidates = [
        {"id": HOSTILE, "field": "plan", "value": HOSTILE, "evidence": {"text": HOSTILE}},
        {"id": "f1", "field": "fee", "value": 250, "unit": "USD", "evidence": {"text": "$250"}},
        {
            "id": "f2",
            "field": "fee",
            "value": 250,
            "unit": "USD",
            "evidence": [{"source": "reference", "ref": "r1", "text": "$250"}],
        },
        {
            "id": "f3",
            "field": "fee",
            "value": 250,
            "unit": "USD",
            "evidence": [
                {"source": "external", "url": "javascript:alert(3)", "text": f"$250 {HOSTILE}"}
            ],
        },
        {"id": "f4", "field": HOSTILE, "value": HOSTILE, "evidence": {"text": HOSTILE}},
    ]
    source = f"https://example.com/{HOSTILE}"
    receipt = admit(document, schema, candidates, references=references, document_source=source)
    assert receipt["summary"]["admitted"] >= 2
    vector = {
        "document": document,
        "schema": schema,
        "candidates": candidates,
        "references": references,
        "document_source": source,
    }
    args = _write(tmp_path, vector, receipt)
    done = _report(*args, "--title", HOSTILE)
    assert done.exit_code == 0, done.output
    page = done.output
    assert "<script" not in page and "<img" not in page and '"><img' not in page
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    )
    parsed = _parsed(page)
    assert not {"script", "img"} & set(parsed.tags) and "onerror" not in parsed.attributes
    assert 'href="javascript:' not in page  # a URL that is not a web address is not a link
    assert '<mark class="o-admitted" title="' in page  # the hostile span is still highlighted


def test_a_receipt_stored_by_a_run_is_reviewed_on_the_text_the_run_read(tmp_path: Path):
    from tests.shared.cli.test_admit_groundgate import _run_receipts

    corpus, stored = _run_receipts(tmp_path)
    args = [
        str(stored["quad"]),
        "-",  # the document from standard input, as groundgate's report reads it
        str(corpus / "schema.json"),
        str(corpus / "candidates" / "quad.json"),
    ]
    # Not NFC (an em quad): the run admitted its NFC form, where the evidence offsets point.
    quad = (corpus / "documents" / "quad.txt").read_bytes()
    done = CliRunner().invoke(main, ["report", *args], input=quad)
    assert done.exit_code == 0, done.output
    assert 'title="b: rejected, a: admitted">$1,200</mark> in 2023.' in done.stdout
    plain = corpus / "documents" / "plain.txt"
    wrong = CliRunner().invoke(main, ["report", *args], input=plain.read_bytes())
    assert wrong.exit_code == 1 and "not rendering" in wrong.stderr and not wrong.stdout
