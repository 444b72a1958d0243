"""Pages and page regions of located spans in a read PDF: in the admission receipt (beside
groundgate's receipt), and in the run's HTML report (page, word boxes, an outline drawing)."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.read import read_bytes
from groundswell.shared.read.regions import span_pages, span_regions, utf8_offsets
from groundswell.shared.receipts import open_receipt
from groundswell.shared.report.render import render_report
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store
from tests.shared.read.minipdf import build, text

# Page 2 follows a page with a non-ASCII word: character and byte offsets differ there.
PDF = build(
    [
        text(72, 700, "Le café ouvre le matin.") + text(72, 680, "Its menu is short."),
        text(72, 700, "Net sales were 391 million.") + text(72, 600, "<b>Revenue</b> 77."),
    ]
)


@pytest.fixture(scope="module")
def reading():
    return read_bytes(PDF, "d.pdf")


def _unit_runner(tmp_path, text_read: str):
    corpus = open_store(str(tmp_path / "corpus"))
    corpus.put("documents/d.pdf", PDF)
    corpus.put(
        "claims/d.jsonl",
        b'{"id": "q1", "claim": "Net sales were 391 million"}\n'
        b'{"id": "q2", "claim": "Its menu is short"}\n',
    )
    data = text_read.encode()
    at = data.index(b"391")
    candidates = [
        {
            "id": "k1",
            "field": "sales",
            "value": "391",
            "evidence": {"start": at, "end": at + 3, "text": "391"},
        },
        {"id": "k2", "field": "sales", "value": "5", "evidence": {"text": "nowhere 5"}},
    ]
    corpus.put("candidates/d.json", json.dumps(candidates).encode())
    corpus.put("schema.json", json.dumps({"fields": {"sales": {"type": "number"}}}).encode())
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return UnitRunner(corpus, output, registry.resolve("default@1")), output


def test_regions_bisect_the_layout_in_bytes(reading):
    layout, txt = reading.layout, reading.text
    assert "café" in txt
    data = txt.encode()
    at = data.index(b"391")
    assert span_pages(layout, at, at + 3) == [2]
    (region,) = span_regions(layout, at, at + 3)
    word = next(w for w in layout["words"] if w[0] == at)
    assert (region["page"], region["x0"], region["top"], region["x1"], region["bottom"]) == (
        2,
        *word[3:],
    )
    assert (region["width"], region["height"]) == (612, 792)
    # A span over the two pages has both pages and one region on each.
    last = data.index(b"short") + 5
    whole = span_regions(layout, data.index(b"menu"), data.index(b"million") + 7)
    assert [r["page"] for r in whole] == [1, 2]
    assert span_pages(layout, data.index(b"menu"), last) == [1]
    # Character offsets after "é" are one less than byte offsets.
    char_at = txt.index("391")
    assert char_at == at - 1 and utf8_offsets(txt, [char_at])[char_at] == at
    assert span_regions(layout, at, at) == [] and span_pages(None, 0, 3) == []


def test_an_admission_unit_of_a_pdf_records_the_pages_of_its_evidence(tmp_path, reading):
    runner, output = _unit_runner(tmp_path, reading.text)
    result = runner.unit("admit", "d", "documents/d.pdf")
    assert result.status == "computed", result.errors
    body = open_receipt(output.get(result.receipt_key), result.receipt_key)
    decisions = body["receipt"]["decisions"]
    k1 = next(n for n, d in enumerate(decisions) if d["candidate_id"] == "k1")
    assert decisions[k1]["source"] == "document"
    assert body["pages"][str(k1)] == [2]
    assert "pages" not in json.dumps(body["receipt"])  # groundgate's receipt as groundgate's
    # The verify unit of the same PDF: pages from the character offsets, through bytes.
    verify = runner.unit("verify", "d", "documents/d.pdf")
    vbody = open_receipt(output.get(verify.receipt_key), verify.receipt_key)
    pages = {r["record"]["id"]: r.get("pages") for r in vbody["records"]}
    assert pages == {"q1": [2], "q2": [1]}


def test_the_report_shows_page_and_region_of_claims_and_candidates(tmp_path, reading):
    runner, output = _unit_runner(tmp_path, reading.text)
    units = {
        "verify": runner.unit("verify", "d", "documents/d.pdf"),
        "admit": runner.unit("admit", "d", "documents/d.pdf"),
    }
    index = [
        {"doc_id": "d", "kind": kind, "status": u.status, "receipt": u.receipt_key, "errors": []}
        for kind, u in units.items()
    ]

    def receipt(key):
        return open_receipt(output.get(key), key)

    page = render_report(
        {"run_id": "r1", "counts": {}, "rates": {}, "policy": {}},
        index,
        receipt,
        lambda d: reading.text,
        lambda d: {},
        load_layout=lambda d: reading.layout,
    )
    data = reading.text.encode()
    at = data.index(b"391")
    word = next(w for w in reading.layout["words"] if w[0] == at)
    claim_box = span_regions(
        reading.layout, data.index(b"Net"), data.index(b"million") + len(b"million")
    )[0]
    claim_caption = (
        f"page 2, x {claim_box['x0']:g}–{claim_box['x1']:g}, "
        f"y {claim_box['top']:g}–{claim_box['bottom']:g}"
    )
    cand_caption = f"page 2, x {word[3]:g}–{word[5]:g}, y {word[4]:g}–{word[6]:g}"
    assert claim_caption in page and cand_caption in page
    assert page.count("(page 2)") >= 2 and "(page 1)" in page  # claims q1, q2; candidate k1
    assert page.count("<svg ") >= 3 and 'viewBox="0 0 612 792"' in page
    assert f'x="{word[3]:g}" y="{word[4]:g}"' in page
    # Hostile text from the PDF is escaped, in snippets and captions alike.
    assert "&lt;b&gt;Revenue&lt;/b&gt;" in page and "<b>Revenue</b>" not in page


def test_report_regions_escape_hostile_text_and_skip_bad_boxes():
    txt = 'x <script>alert(1)</script> 42 "'
    data = txt.encode()
    at = data.index(b"42")
    layout = {
        "pages": [{"page": 1, "width": 100, "height": 50, "start": 0, "end": len(data)}],
        "words": [
            [0, 1, 1, 1, 1, 2, 2],
            [2, 27, 1, "<svg>", 3, 4, 5],  # not a number: no region from it alone
            [at, at + 2, 1, 10, 20, 14, 26],
        ],
    }
    receipts = {
        "r/v": {
            "records": [
                {
                    "line": 1,
                    "record": {"id": "<i>c</i>", "claim": "<script>alert(1)</script>"},
                    "certificate": {"verdict": "grounded", "tier": "exact", "grounded": True}
                    | {"start": 2, "end": 27},
                },
                {
                    "line": 2,
                    "record": {"id": "c2", "claim": "42"},
                    "certificate": {"verdict": "grounded", "tier": "exact", "grounded": True}
                    | {"start": at, "end": at + 2},
                },
            ]
        }
    }
    index = [{"doc_id": "d", "kind": "verify", "status": "computed", "receipt": "r/v"}]
    page = render_report(
        {"counts": {}, "rates": {}, "policy": {}},
        index,
        receipts.get,
        lambda d: txt,
        lambda d: {},
        load_layout=lambda d: layout,
    )
    assert "<script>" not in page and "<i>c</i>" not in page and "<svg>" not in page
    assert "&lt;script&gt;" in page
    assert "page 1, x 10–14, y 20–26" in page and "(page 1)" in page
