"""The HTML report highlights each span in its source and puts what needs a person first."""

from __future__ import annotations

from html.parser import HTMLParser

from groundswell.shared.report import render_report

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
    assert '<span class="tag bad">escape</span>' in page  # labelled wrong, admitted
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
