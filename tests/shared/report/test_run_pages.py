"""The report of a run, a page at a time: its table of contents, filters by verdict, outcome,
code and document, counts per document, failed units with their errors, links from codes and
decisions to the report, receipts and review tasks, cursors both ways, and a page of a
10,000-document run that reads and weighs what one page holds."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.report.pages import SCAN_BUDGET, ReportQuery
from groundswell.shared.report.service import report, run_report
from groundswell.shared.results.service import RunResults
from groundswell.shared.review.store import RunReview
from groundswell.shared.runs import index as run_index
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.runs.synthetic_run import CountingStore, synthetic_run
from tests.shared.test_review_store import drive_run


def _hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]


def _shown(page: str) -> list[str]:
    """The documents with a section on the page, in order."""
    return [html.unescape(d) for d in re.findall(r'<h3 id="([^"]*)"', page)]


def _decision_rows(page: str) -> list[str]:
    """The table rows of the decisions shown in the documents' sections."""
    section = page.split('<h2 id="documents">')[1]
    return [r for r in section.split("<tr>") if "review queue</a>" in r or "review task</a>" in r]


def _link(page: str, rel: str) -> dict[str, str] | None:
    found = re.search(rf'<a href="\?([^"]*)" rel="{rel}">', page)
    if found is None:
        return None
    return dict(parse_qsl(html.unescape(found.group(1))))


# -- a real run of the sample corpus, with a bad record and a document that fails -----------


@pytest.fixture
def stored_run(redis_server, tmp_path):
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    with (corpus / "claims" / "velmora-label.jsonl").open("a") as f:
        f.write("{not json\n")  # a bad record: reported by file and line, the unit goes on
    (corpus / "documents" / "latin1.txt").write_bytes("caf\xe9 total 12".encode("latin-1"))
    (corpus / "claims" / "latin1.jsonl").write_text('{"id": "q1", "claim": "total 12"}\n')
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        api_key_hashes=hash_api_key("gs_report_key"),
        allowed_corpora=str(tmp_path),
    )
    service, record = drive_run(settings, str(corpus))
    return settings, service, record


def test_report_pages_filters_counts_failures_and_links(stored_run):
    _, service, record = stored_run
    run = record.id
    summary = service.summary(run)
    page = run_report(service, run)
    HTMLParser().feed(page)
    # The table of contents and its sections.
    for section in ("summary", "codes", "documents", "failed"):
        assert f'<a href="#{section}">' in page and f'<h2 id="{section}">' in page
    docs = _shown(page)
    assert docs == sorted(docs) and len(docs) == 10  # id order, one page
    assert _link(page, "next") is None and _link(page, "prev") is None

    # Counts per document in the document list: claims by verdict, candidates by outcome.
    listing = page[page.index('<table class="doclist">') :]
    listing = listing[: listing.index("</table>")]
    receipts = RunResults(service).document_receipts(run, "velmora-label")
    verdicts = Counter(r["certificate"]["verdict"] for r in receipts["verify"]["records"])
    outcomes = Counter(d["outcome"] for d in receipts["admit"]["receipt"]["decisions"])
    row = next(r for r in listing.split("<tr>") if '"#velmora-label"' in r)
    for verdict, n in verdicts.items():
        assert f'<mark class="v-{verdict}">{verdict}</mark> {n}' in row
    for outcome, n in outcomes.items():
        assert f'<mark class="o-{outcome}">{outcome}</mark> {n}' in row

    # Failed units with their errors: file:line and message, linked to their document.
    failed = page[page.index('<h2 id="failed">') :]
    assert f"{summary['failed_units']} failed units" in failed and summary["failed_units"] >= 1
    assert "<code>claims/velmora-label.jsonl:" in failed
    assert "<code>documents/latin1.txt:1</code>" in failed and "not UTF-8" in failed
    assert "?document=latin1" in failed

    # Each filter: the documents that pass, and only their matching items.
    codes = [k.split(".", 2)[2] for k in summary["counts"] if k.startswith("candidates.code.")]
    code = codes[0]
    by_code = run_report(service, run, code=code)
    assert (
        f"Showing code <code>{code}</code>" in by_code
        and '<a href="?">clear filters</a>' in by_code
    )
    coded = _shown(by_code)
    assert coded and set(coded) < set(docs)
    for doc in coded:
        decisions = RunResults(service).document_receipts(run, doc)["admit"]["receipt"]["decisions"]
        assert any(code in d.get("codes", ()) for d in decisions)
    decisions = _decision_rows(by_code)
    assert decisions and all(f"<code>{code}</code>" in r for r in decisions)
    assert "<th>claim</th>" not in by_code  # a filter on candidates hides the claims

    rejected = run_report(service, run, outcome="rejected")
    for doc in _shown(rejected):
        decisions = RunResults(service).document_receipts(run, doc)["admit"]["receipt"]["decisions"]
        assert any(d["outcome"] == "rejected" for d in decisions)
    decisions = _decision_rows(rejected)
    assert decisions and all('<mark class="o-rejected"' in r for r in decisions)

    unlocated = run_report(service, run, verdict="unlocated")
    assert _shown(unlocated) and set(_shown(unlocated)) < set(docs)
    section = unlocated.split('<table class="doclist">')[1]
    assert (
        "<th>candidate</th>" not in section
        and 'class="v-grounded">' not in section.split("</table>", 1)[1]
    )
    assert _shown(run_report(service, run, document="velmora-label")) == ["velmora-label"]

    # Links: each code to its decisions here and in the review queue; each decision to its
    # receipts and to the review queue of its document (the run's tasks are not made yet).
    hrefs = _hrefs(page)
    assert "?" + urlencode({"code": code}) in hrefs
    assert f"/review?run={run}&code={code}" in hrefs
    assert f"/v1/runs/{run}/documents/velmora-label/receipts" in hrefs
    assert f"/review?run={run}&document=velmora-label" in hrefs
    assert not any(h.startswith("/review/tasks/") for h in hrefs)
    # Once the run's tasks are made, each decision that has one links to it.
    manifest = RunReview(service, record).manifest()
    tasks = {r["task"] for _, r in RunReview(service, record).store.rows(manifest)}
    linked = [h for h in _hrefs(run_report(service, run)) if h.startswith("/review/tasks/")]
    assert linked and {h.removeprefix("/review/tasks/") for h in linked} <= tasks

    # Pages: two documents a page, onwards to the last page and back.
    seen, query, pages = [], {}, 0
    while True:
        got = run_report(service, run, 2, **query)
        pages += 1
        shown = _shown(got)
        assert len(shown) == 2 or (len(shown) >= 1 and _link(got, "next") is None)
        assert not set(shown) & set(seen)
        seen += shown
        following = _link(got, "next")
        if following is None:
            break
        assert following["documents"] == "2" and set(following) == {"after", "documents"}
        if pages == 2:
            back = _link(got, "prev")
            assert _shown(run_report(service, run, 2, before=back["before"])) == seen[:2]
        query = {"after": following["after"]}
    assert seen == docs and pages == 5 and _link(got, "prev") is not None
    # Filters stay on while paging.
    first = run_report(service, run, 1, code=code)
    assert _link(first, "next") == {"code": code, "after": coded[0], "documents": "1"}


def test_report_links_resolve_through_the_api(stored_run):
    from fastapi.testclient import TestClient

    from groundswell.api.main import create_app

    settings, _, record = stored_run
    with TestClient(create_app(settings), headers={"X-API-Key": "gs_report_key"}) as client:
        got = client.get(f"/v1/runs/{record.id}/report", params={"outcome": "rejected"})
        assert got.status_code == 200, got.text
        receipts = {h for h in _hrefs(got.text) if h.startswith("/v1/runs/")}
        assert receipts
        for href in sorted(receipts)[:3]:
            answer = client.get(href)
            assert answer.status_code == 200 and answer.json()["admit"]["receipt"]
        following = client.get(f"/v1/runs/{record.id}/report", params={"documents": 3})
        after = _link(following.text, "next")["after"]
        second = client.get(f"/v1/runs/{record.id}/report", params={"documents": 3, "after": after})
        assert second.status_code == 200 and _shown(second.text)[0] > after


# -- 10,000 documents: a page reads and weighs what it shows ---------------------------------


def _render(service, record, **query) -> tuple[str, CountingStore]:
    store = service.store(None)
    store.gets.clear()
    run_index._manifests.clear()
    run_index._pieces.clear()
    return report(service, record, ReportQuery(**query)), store


def test_a_page_of_a_10000_document_run_reads_and_weighs_one_page():
    big, big_record = synthetic_run(10_000, rare_every=4_000)
    small, small_record = synthetic_run(1_000)
    page, store = _render(big, big_record, per_page=100)
    assert len(page.encode()) < 300_000 and len(_shown(page)) == 100
    # Reads: the index manifest, one piece, the highlights and the review manifest (absent),
    # and the page's 100 documents (two receipts, a text and labels each).
    pieces = [k for k in store.gets if "/index/" in k and k.endswith(".jsonl")]
    assert len(pieces) == 1
    assert store.reads <= 4 * 100 + 6
    _, small_store = _render(small, small_record, per_page=100)
    assert store.reads == small_store.reads  # what a page costs does not grow with the run

    # The last page, reached by cursor, has no next link; a filter scans a bounded part.
    last, store = _render(big, big_record, per_page=100, after="doc-09899")
    assert _shown(last)[-1] == "doc-09999" and _link(last, "next") is None
    rare, store = _render(big, big_record, per_page=100, code="RARE_CODE")
    assert _shown(rare) == ["doc-03999", "doc-07999"]
    index_reads = sum(n for k, n in store.gets.items() if "/index/" in k)
    assert index_reads <= SCAN_BUDGET // run_index.PIECE_ROWS + 3
    assert store.reads <= index_reads + 2 * 4 + 6


def test_previous_pages_read_the_index_backwards_across_pieces():
    service, record = synthetic_run(5_000)
    page, _ = _render(service, record, per_page=50, before="doc-04110")
    shown = _shown(page)  # rows 8192 on (doc-04096) are in the second piece
    assert shown == [f"doc-{i:05d}" for i in range(4060, 4110)]
    assert _link(page, "prev") == {"before": "doc-04060"}
    assert _link(page, "next") == {"after": "doc-04109"}
    first, _ = _render(service, record, per_page=50, before="doc-00030")
    assert _shown(first)[0] == "doc-00000" and _link(first, "prev") is None


def test_review_task_lookup_bisects_the_task_list_and_reads_a_few_pieces():
    from groundswell.shared.review.links import REVIEW_PIECES, review_tasks

    objects = {}
    pieces = []
    for n in range(40):  # 40 pieces of 10 documents, two tasks each
        rows = [
            {
                "task": f"sha256:{n:02d}{d}{s}",
                "doc_id": f"d{n * 10 + d:04d}",
                "field": "f",
                "key": str(s),
            }
            for d in range(10)
            for s in range(2)
        ]
        key = f"runs/r/review/{n}.jsonl"
        objects[key] = "".join(json.dumps(r) + "\n" for r in rows).encode()
        pieces.append({"key": key, "rows": len(rows)})
    objects["runs/r/review/manifest.json"] = json.dumps({"pieces": pieces}).encode()
    reads = Counter()

    def get(key):
        reads[key] += 1
        return objects[key]

    found = review_tasks(get, "r", ["d0123", "d0125", "d0131"])
    assert found.task("d0123", "f", "1") == "sha256:1231" and found.covers("d0131")
    assert found.task("d0131", "f", "0") == "sha256:1310"
    assert found.task("d0123", "g", "1") is None
    assert sum(reads.values()) <= 1 + 6 + 2  # the manifest, a bisection, the range
    sparse = review_tasks(get, "r", ["d0005", "d0395"])  # a sparse page: the rest unlooked
    assert sparse.task("d0005", "f", "0") == "sha256:0050"
    assert not sparse.covers("d0395") and sparse.through is not None
    assert review_tasks(lambda key: objects.pop("x"), "r", ["d0001"]) is None
    assert REVIEW_PIECES >= 2


def test_the_cli_writes_a_filtered_page_of_a_run(stored_run, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    settings, service, record = stored_run
    monkeypatch.setenv("GROUNDSWELL_BROKER_URL", settings.broker_url)
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", settings.storage_url)
    out = tmp_path / "page.html"
    args = ["report", record.id, "-o", str(out), "--documents", "2", "--outcome", "rejected"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert _shown(page) == _shown(run_report(service, record.id, 2, outcome="rejected"))
    assert "Showing outcome <code>rejected</code>" in page
    after = _link(page, "next")["after"]
    result = CliRunner().invoke(main, [*args, "--after", after])
    assert result.exit_code == 0 and _shown(out.read_text())[0] > after


def test_the_cli_refuses_a_misspelled_filter_in_one_line_naming_what_exists(
    stored_run, monkeypatch
):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    settings, service, record = stored_run
    monkeypatch.setenv("GROUNDSWELL_BROKER_URL", settings.broker_url)
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", settings.storage_url)
    for option, wrong, named in (
        ("--verdict", "grouned", "(did you mean grounded?)"),
        ("--outcome", "rejeted", "admitted, needs_verification, rejected"),
        ("--code", "SCALEWORD", "SCALE_WORD"),
    ):
        result = CliRunner().invoke(main, ["report", record.id, option, wrong])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1 and named in result.output
    with pytest.raises(ValueError, match="unknown code 'NOPE'"):
        run_report(service, record.id, 2, code="NOPE")


def test_rows_written_before_rows_carried_counts_are_filtered_by_their_receipts():
    service, record = synthetic_run(300, rare_every=100, tallies=False)
    rare, store = _render(service, record, per_page=10, code="RARE_CODE")
    assert _shown(rare) == ["doc-00099", "doc-00199", "doc-00299"]
    assert _link(rare, "next") is None
    assert store.gets["receipts"] == 600 + 2 * 3  # each read to filter; the page's to show
    rejected, _ = _render(service, record, per_page=10, outcome="rejected")
    assert _shown(rejected)[:2] == ["doc-00000", "doc-00003"]
    counted = _render(service, record, per_page=10)[0]
    assert '<mark class="v-grounded">grounded</mark> 3' in counted


def test_a_page_s_last_document_with_tasks_in_the_next_piece_links_them_all():
    """A document's tasks may go on in the next piece of the task list: the last document
    of a page has all its tasks looked up, not only those of the piece it starts in."""
    from groundswell.shared.review.links import review_tasks

    def row(doc: str, field: str) -> dict:
        return {"task": f"sha256:{doc}-{field}", "doc_id": doc, "field": field, "key": None}

    split = [[row("a", "f"), row("b", "f")], [row("b", "g"), row("c", "f")]]
    objects = {f"runs/r/review/{n}.jsonl": rows for n, rows in enumerate(split)}
    pieces = [{"key": key, "rows": len(rows)} for key, rows in objects.items()]
    stored = {
        k: "".join(json.dumps(r) + "\n" for r in rows).encode() for k, rows in objects.items()
    }
    stored["runs/r/review/manifest.json"] = json.dumps({"pieces": pieces}).encode()

    found = review_tasks(stored.__getitem__, "r", ["a", "b"])
    assert found.task("b", "f", None) == "sha256:b-f"
    assert found.task("b", "g", None) == "sha256:b-g" and found.covers("b")
