"""The HTML report highlights each span in its source and puts what needs a person first."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from groundswell.shared.report.render import char_offsets, render_report

TEXT = "Revenue was $7,000 in 2024. The café sold 12 units."


def _receipts():
    return {
        "r/v": {
            "records": [
                {
                    "line": 1,
                    "record": {"id": "c1", "claim": "Revenue was $7,000"},
                    "certificate": {
                        "verdict": "grounded",
                        "tier": "exact",
                        "grounded": True,
                        "start": 0,
                        "end": 18,
                    },
                },
                {
                    "line": 2,
                    "record": {"id": "c2", "claim": "Revenue was <b>9</b>"},
                    "certificate": {
                        "verdict": "unlocated",
                        "tier": None,
                        "grounded": False,
                        "start": None,
                        "end": None,
                    },
                },
            ]
        },
        "r/a": {
            "receipt": {
                "decisions": [
                    # "12" sits after "é" (two bytes in UTF-8): bytes 43-45 are characters 42-44.
                    {
                        "candidate_id": "k1",
                        "field": "units",
                        "value": "12",
                        "outcome": "admitted",
                        "codes": [],
                        "source": "document",
                        "evidence": {"start": 43, "end": 45},
                    },
                ]
            }
        },
    }


def test_report_highlights_spans_and_flags_escapes():
    receipts = _receipts()
    index = [
        {"doc_id": "d1", "kind": "verify", "status": "computed", "receipt": "r/v", "errors": []},
        {"doc_id": "d1", "kind": "admit", "status": "computed", "receipt": "r/a", "errors": []},
        {
            "doc_id": "d0",
            "kind": "verify",
            "status": "failed",
            "receipt": None,
            "errors": [{"file": "claims/d0.jsonl", "line": 3, "message": "invalid JSON"}],
        },
    ]
    summary = {
        "run_id": "r1",
        "counts": {"claims": 2, "claims.tier.exact": 1},
        "rates": {},
        "policy": {"ref": "default@1"},
    }
    page = render_report(
        summary, index, receipts.get, lambda d: TEXT, lambda d: {"candidates": {"k1": False}}, 10
    )
    assert '<mark class="v-grounded">Revenue was $7,000</mark>' in page
    assert '<mark class="o-admitted">12</mark>' in page  # byte offsets mapped to characters
    assert (
        '<span class="tag bad">escape: wrong value admitted</span>' in page
    )  # labelled wrong, admitted
    assert "Revenue was &lt;b&gt;9&lt;/b&gt;" in page and "<b>9</b>" not in page
    assert page.index('id="d0"') < page.index('id="d1"')  # the failed document first
    assert "claims/d0.jsonl:3" in page
    HTMLParser().feed(page)


def test_report_limits_documents():
    index = [
        {"doc_id": f"d{i}", "kind": "verify", "status": "computed", "receipt": None, "errors": []}
        for i in range(5)
    ]
    page = render_report({"run_id": "r"}, index, lambda k: None, lambda d: None, lambda d: {}, 2)
    assert page.count("<h3 id=") == 2 and "3 more documents not shown" in page


HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'


def _hostile_page() -> str:
    text = f"Before {HOSTILE} the total was 12 units. {HOSTILE}"
    at = text.encode().index(b"12")
    receipts = {
        "v": {
            "records": [
                {
                    "line": 1,
                    "record": {"id": HOSTILE, "claim": HOSTILE},
                    "certificate": {
                        "verdict": HOSTILE,
                        "tier": HOSTILE,
                        "grounded": True,
                        "start": 7,
                        "end": 7 + len(HOSTILE),
                    },
                }
            ]
        },
        "a": {
            "receipt": {
                "decisions": [
                    {
                        "candidate_id": HOSTILE,
                        "field": HOSTILE,
                        "value": HOSTILE,
                        "unit": HOSTILE,
                        "outcome": HOSTILE,
                        "codes": [HOSTILE],
                        "source": "document",
                        "evidence": {"start": at, "end": at + 2},
                    }
                ]
            }
        },
    }
    index = [
        {"doc_id": HOSTILE, "kind": "verify", "status": "computed", "receipt": "v"},
        {"doc_id": HOSTILE, "kind": "admit", "status": "computed", "receipt": "a"},
        {
            "doc_id": "d2",
            "kind": "verify",
            "status": "failed",
            "receipt": None,
            "errors": [{"file": HOSTILE, "line": 1, "message": HOSTILE}],
        },
    ]
    summary = {
        "run_id": HOSTILE,
        "state": HOSTILE,
        "corpus": HOSTILE,
        "finished_at": HOSTILE,
        "index": {"merkle_root": HOSTILE},
        "counts": {"claims": 1, f"candidates.code.{HOSTILE}": 1},
        "rates": {},
        "policy": {"ref": HOSTILE, "verify_fingerprint": HOSTILE, "admit_fingerprint": HOSTILE},
    }
    labels = {"claims": {HOSTILE: True}, "candidates": {HOSTILE: False}}
    return render_report(summary, index, receipts.get, lambda d: text, lambda d: labels, 10)


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}


def test_hostile_text_in_a_run_comes_out_escaped():
    """Text from documents, claims, candidates, errors and the summary never becomes markup
    (this fails when the templates' autoescape is off)."""
    page = _hostile_page()
    assert "<script" not in page and "<img" not in page and '"><img' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    parsed = _Markup()
    parsed.feed(page)
    assert not parsed.tags & {"script", "img"} and "onerror" not in parsed.attributes
    assert page.count('<mark class="o-') >= 1  # the candidate's span is still highlighted


def test_reports_are_jinja_templates_with_autoescape_shipped_as_package_data():
    from importlib import resources

    from groundswell.shared.report.render import environment

    assert environment().autoescape is True
    files = resources.files("groundswell.shared").joinpath("templates")
    assert {"run_report.html", "review.html"} <= {f.name for f in files.iterdir()}


def test_char_offsets_maps_bytes_to_characters_in_one_pass():
    text = "a€b😀c"  # 1, 3, 1, 4, 1 bytes
    assert char_offsets(text, [0, 1, 4, 5, 9, 10, 99]) == {0: 0, 1: 1, 4: 2, 5: 3, 9: 4, 10: 5}
    assert char_offsets(text, [2, 6]) == {}  # inside a character: not a place in the text
    assert char_offsets("abc", [3, 1, 4]) == {1: 1, 3: 3}


def test_a_large_run_document_maps_its_offsets_in_one_pass(monkeypatch):
    """Byte offsets map to characters in one pass per document, not one pass per candidate
    (the first implementation walked the text once per candidate and took about 4 s on a 1 MB
    document with 3,000 candidates). Counted, not timed: a busy machine cannot fail it."""
    import groundswell.shared.report.render as report

    passes = []
    real = report.char_offsets

    def counted(text, offsets):
        offsets = list(offsets)
        passes.append(len(offsets))
        return real(text, offsets)

    monkeypatch.setattr(report, "char_offsets", counted)
    line = "Ventes nettes: 12 345 € — café, naïve; "
    text = line * (1_000_000 // len(line.encode()))
    data = text.encode()
    decisions, at = [], 0
    for i in range(3000):
        at = data.index(b"12", at + 1)
        decisions.append(
            {
                "candidate_id": f"k{i}",
                "outcome": "admitted",
                "source": "document",
                "evidence": {"start": at, "end": at + 2},
            }
        )
    receipts = {"a": {"receipt": {"decisions": decisions}}}
    index = [{"doc_id": "d", "kind": "admit", "status": "computed", "receipt": "a"}]
    page = report.render_report(
        {"run_id": "r"}, index, receipts.get, lambda d: text, lambda d: {}, 1
    )
    assert passes == [6000]
    assert page.count('<mark class="o-admitted">12</mark>') == 3000


def test_a_normalized_document_shows_admission_spans_in_its_nfc_text():
    # The run admitted the NFC form (U+037E became ';', one byte shorter): the evidence bytes
    # are offsets into that form, and the page must highlight the value, not a shifted span.
    text = "A\u037e B\u037e sales were 391 million."
    nfc = "A; B; sales were 391 million."
    start = nfc.encode().index(b"391")
    decision = {
        "candidate_id": "k",
        "field": "sales",
        "value": "391000000",
        "outcome": "admitted",
        "codes": [],
        "source": "document",
        "evidence": {"start": start, "end": start + 3},
    }
    receipts = {"r/a": {"normalized": {"form": "NFC"}, "receipt": {"decisions": [decision]}}}
    index = [{"doc_id": "d", "kind": "admit", "status": "computed", "receipt": "r/a", "errors": []}]
    page = render_report({"run_id": "r"}, index, receipts.get, lambda d: text, lambda d: {}, 1)
    assert '<mark class="o-admitted">391</mark>' in page


def test_report_and_summary_table_show_repairs_with_before_and_after(tmp_path):
    """A run under a policy that repairs: counts by action and stage, and each repaired claim
    with the model's text and the source's; a wrong repair is marked."""
    from io import StringIO

    from rich.console import Console

    from groundswell.shared.cli.render import print_summary
    from groundswell.shared.receipts import open_receipt
    from groundswell.shared.summary import rates
    from tests.shared.runs.test_units import SAMPLE_DOC, _sample_runner

    runner, corpus, output = _sample_runner(
        tmp_path, {"repair_mode": "substitute", "salvage_policy": "longest_grounded"}
    )
    unit = runner.unit("verify", SAMPLE_DOC)
    counts = dict(unit.counts)
    summary = {"run_id": "r1", "counts": counts, "rates": rates(counts), "policy": {}}
    index = [
        {"doc_id": SAMPLE_DOC, "kind": "verify", "status": "computed", "receipt": unit.receipt_key}
    ]
    text = corpus.get(f"documents/{SAMPLE_DOC}.txt").decode()
    labels = json.loads(corpus.get(f"labels/{SAMPLE_DOC}.json"))
    page = render_report(
        summary,
        index,
        lambda key: open_receipt(output.get(key), key),
        lambda d: text,
        lambda d: labels,
    )
    assert "<h3>Repairs (" in page and "Repairs by stage" in page
    assert "wrong repairs: kept by a repair, labelled not genuine" in page
    # q07: the model's wording, then the source's, placed in the source.
    assert '<del class="before">Total Flight Time 412 hours all aircraft 38 hours' in page
    assert '<ins class="after">Total Flight Time: 412 hours (all aircraft), 38 hours' in page
    assert page.count('<span class="tag bad">wrong repair</span>') == counts["repairs.wrong"] == 1
    assert "score 0.886 ≥ 0.65 (default)" in page
    _Markup().feed(page)

    out = StringIO()
    print_summary(summary, console=Console(file=out, width=160))
    table = out.getvalue()
    assert f"Claims through repair: {counts['repairs']}" in table
    assert "substituted" in table and "numeric_guard" in table
    assert "wrong repairs (kept, labelled not genuine)" in table


def test_the_gold_table_counts_right_values_sent_to_review():
    from groundswell.shared.report.render import _summary_view

    counts = {
        "candidates.labelled": 5,
        "candidates.right_admitted": 2,
        "candidates.right_reviewed": 3,
        "candidates.reviews": 4,
    }
    gold = dict(_summary_view({"counts": counts, "rates": {}})["gold"])
    assert gold["right values admitted"] == 2
    assert gold["right values sent to review"] == 3
    assert gold["sent to review"] == 4


def test_every_code_the_summary_counts_is_in_both_code_tables_and_links_to_its_tasks():
    import io

    from rich.console import Console

    from groundswell.shared.cli.render import print_summary

    counts = {
        "candidates": 3,
        "candidates.outcome.needs_verification": 3,
        "candidates.code.SCALE_WORD": 2,
        "coverage.REQUIRED_FIELD_MISSING": 4,
    }
    summary = {"run_id": "r1", "state": "succeeded", "counts": counts, "rates": {}}
    out = io.StringIO()
    print_summary(summary, console=Console(file=out, width=160))
    table = out.getvalue()
    assert "REQUIRED_FIELD_MISSING" in table and "SCALE_WORD" in table
    page = render_report(summary, [], lambda k: None, lambda d: None, lambda d: {}, 1)
    by_code = page.split('id="codes"', 1)[1].split("</table>", 1)[0]
    assert '<a href="/review?run=r1&amp;code=REQUIRED_FIELD_MISSING"><code>' in by_code
    assert '>REQUIRED_FIELD_MISSING</code></a></td><td class="num">4<' in by_code
    assert "SCALE_WORD" in by_code
