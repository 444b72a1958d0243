"""Reading as a unit kind: a corpus of PDF, HTML, XML and text through the in-process core."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundswell.shared.corpus import doc_id_of, source_format
from groundswell.shared.receipts import open_receipt
from groundswell.shared.report.service import run_report
from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.plan import CorpusPlanner, step_batches
from groundswell.shared.runs.reading import READINGS, StoredReading, reader, reading_key
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store
from tests.shared.runs.mixed_corpus import READ_DOCUMENTS, write_mixed_corpus


@pytest.fixture(scope="module")
def mixed(shared_raw: Path, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("mixed-corpus")
    return folder, write_mixed_corpus(folder, shared_raw)


def test_document_sources_of_any_supported_ending():
    assert doc_id_of("documents/a.PDF", "documents/") == "a"
    assert doc_id_of("documents/a.b.htm", "documents/") == "a.b"
    assert doc_id_of("documents/a.docx", "documents/") is None
    assert doc_id_of("documents/sub/a.txt", "documents/") is None
    assert source_format("documents/a.XML") == "xml"
    assert source_format("documents/a.txt") == "text"


def test_planning_holds_the_units_of_a_read_document_behind_its_read_batch(mixed):
    folder, _ = mixed
    store = open_store(str(folder), Settings())
    units = list(CorpusPlanner(store, None, page_size=2))  # small pages: the merge across
    specs = step_batches(units, 4_000_000, 64)
    reads = [s for s in specs if s.kind == "read"]
    assert sorted(d for r in reads for d in r.doc_ids) == ["bill", "filing", "protocol", "scan"]
    # Reading a PDF byte costs far more than verifying one: the two PDFs (82 and 64 KB) are
    # not read in one batch of the 4 MB budget, so two workers share them.
    assert not any({"protocol", "scan"} <= set(r.doc_ids) for r in reads)
    bill = next(r for r in reads if "bill" in r.doc_ids)
    assert bill.source("bill") == "documents/bill.XML"
    for read in reads:  # each read batch holds the verify and admit batches of its documents
        held = [s for s in specs if s.after == read.batch]
        assert sorted(h.batch for h in held) == sorted(read.then or [])
        assert {h.kind for h in held} <= {"verify", "admit"} and held
        for h in held:
            assert set(h.doc_ids) <= set(read.doc_ids)
    plain = [s for s in specs if s.kind != "read" and s.after is None]
    assert sorted(d for s in plain for d in s.doc_ids if s.kind == "verify") == ["note", "twice"]
    twice = next(s for s in plain if "twice" in s.doc_ids)
    assert twice.source("twice") == ["documents/twice.pdf", "documents/twice.txt"]


def test_mixed_corpus_in_process_reads_once_and_a_second_run_reads_nothing(mixed, tmp_path):
    folder, texts = mixed
    settings = Settings()
    output = str(tmp_path / "out")
    summary = run_in_process(str(folder), "default", output, settings)
    counts, units = summary["counts"], summary["units"]
    assert {k: v for k, v in counts.items() if k.startswith("documents.format.")} == {
        "documents.format.pdf": 2,
        "documents.format.html": 1,
        "documents.format.xml": 1,
        "documents.format.text": 1,
        "documents.format.conflict": 1,
    }
    assert units["read"]["computed"] == READ_DOCUMENTS and units["read"]["cached"] == 0
    # The scan's one page has no text layer: OCR read it (reader ocr-1), nothing failed
    assert not [k for k in counts if k.startswith("read.failed.")]
    assert counts["read.pages"] == 3  # the protocol's two pages and the scan's one
    assert counts["claims"] >= 4 * 5  # the four readable documents' claims were verified
    assert units["verify"]["failed"] == 1 and units["admit"]["failed"] == 0  # twice (no candidates)
    messages = [e["message"] for e in summary["errors"]]
    assert not any("no text layer" in m for m in messages), messages
    assert any("2 source files" in m for m in messages), messages

    out = open_store(output, settings)
    keys = [i.key for page in out.list_pages(READINGS) for i in page]
    assert len(keys) == READ_DOCUMENTS
    protocol = (folder / "documents" / "protocol.pdf").read_bytes()
    import hashlib

    sha = hashlib.sha256(protocol).hexdigest()
    stored = StoredReading.loads(out.get(reading_key(sha, reader())))
    assert stored.text == texts["protocol"] and stored.pages == 2 and stored.layout

    # The receipts of a read document name its source and reader; spans have their pages.
    receipts = [
        open_receipt(out.get(i.key), i.key)
        for page in out.list_pages("receipts/verify/")
        for i in page
    ]
    by_source = {r["source"]["sha256"]: r for r in receipts if "source" in r}
    receipt = by_source[sha]
    assert receipt["source"] == {"sha256": sha, "format": "pdf", "reader": reader()}
    assert receipt["document_sha256"] == hashlib.sha256(texts["protocol"].encode()).hexdigest()
    located = [r for r in receipt["records"] if r["certificate"]["start"] is not None]
    assert located and all(r["pages"][0] in (1, 2) for r in located)
    failed = [r for r in receipts if "failure" in r]
    assert not any("no text layer" in r["failure"]["message"] for r in failed)
    # the scan's claim ("Protocol", its title's last word) is verified on the recognised text
    scan_sha = hashlib.sha256((folder / "documents" / "scan.pdf").read_bytes()).hexdigest()
    scan = by_source[scan_sha]
    assert scan["source"]["reader"] == reader() and "ocr=ocr-1/" in reader()
    assert [r["certificate"]["verdict"] for r in scan["records"]] == ["grounded"]
    assert scan["records"][0]["pages"] == [1]

    again = run_in_process(str(folder), "default", output, settings)
    assert again["units"]["read"]["computed"] == 0
    assert again["units"]["read"]["cached"] == READ_DOCUMENTS
    assert again["units"]["verify"]["computed"] == again["units"]["admit"]["computed"] == 0
    assert again["counts"] == counts
    assert again["index"]["merkle_root"] == summary["index"]["merkle_root"]


def test_a_new_policy_reads_nothing_again(mixed, tmp_path):
    folder, _ = mixed
    settings = Settings()
    output = str(tmp_path / "out")
    run_in_process(str(folder), "default", output, settings)
    strict = run_in_process(str(folder), "strict", output, settings)
    assert strict["units"]["read"]["computed"] == 0
    assert strict["units"]["verify"]["computed"] > 0  # a new policy part: recomputed
    assert strict["counts"]["read.pages"] == 3


def test_held_batches_are_sent_once_by_the_record_of_their_read_batch(
    mixed, redis_server, tmp_path
):
    """The pipeline's own operations, driven here with a queue of sent tasks: the verify
    and admit batches of read documents are sent only when their read batch is recorded,
    a second delivery of the read batch sends nothing, and reconcile never resends them."""
    import redis

    from groundswell.shared.runs.models import RunSpec
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import RunStore, redis_client

    folder, _ = mixed
    redis.Redis.from_url(redis_server.url).flushall()
    settings = Settings(broker_url=redis_server.url, storage_url=str(tmp_path / "out"))
    sent: list[tuple[str, list]] = []
    service = RunService(
        settings,
        RunStore(redis_client(settings.state_redis_url)),
        lambda kind, args: sent.append((kind, args)),
    )
    record, _ = service.submit(RunSpec(corpus=str(folder), policy="default"))
    assert sent.pop(0) == ("plan", [record.id])
    service.plan(record.id)
    kinds = [k for k, _ in sent]
    assert kinds.count("read") >= 2  # the PDFs are read in batches of their own
    # Sent: the read batch and the text documents' batches; the two held ones are not.
    held_before = {a[1] for k, a in sent if k in ("verify", "admit")}
    assert len(held_before) >= 2  # note and twice (maybe in two planning steps)
    read = next(a for k, a in sent if k == "read")
    while sent:
        kind, args = sent.pop(0)
        if kind == "finalize":
            service.finalize(args[0])
            continue
        if kind == "plan":
            service.plan(args[0])
            continue
        outcome = service.execute(args[0], args[1], f"token-{len(sent)}")
        if args == read:
            released = [a[1] for k, a in sent if k in ("verify", "admit")]
            assert set(released) - held_before, "the read batch released nothing"
            assert service.execute(read[0], read[1], "again") == "done"
        assert outcome in ("computed", "done", "duplicate"), outcome
    summary = service.summary(record.id)
    assert summary is not None and summary["units"]["read"]["computed"] == READ_DOCUMENTS
    # The report shows a read document's spans in its text read, with their PDF pages.
    html = run_report(service, record.id)
    assert "(page 1" in html or "(page 2" in html
