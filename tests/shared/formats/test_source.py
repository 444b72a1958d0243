"""Producer files read in place: a LangExtract JSONL planned a range at a time, each line
served as the native layout, with the receipts, summary and Merkle root of the same records
imported by `groundswell import`; a second run reuses every receipt; a bad line fails alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli.app import main
from groundswell.shared.corpus import InputFileError
from groundswell.shared.formats import source as source_module
from groundswell.shared.formats.source import ProducerCorpus, open_corpus
from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.plan import SourcePlanner, corpus_planner
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store
from tests.shared.formats import lx_fixtures

DOCUMENTS = 40
CORPUS_YAML = "format: langextract\nschema: schema.json\nproducer:\n  model: gemini-2.5-flash\n"


def _summary_counts(summary: dict) -> dict:
    """What a summary says of the corpus (not of the run: ids, places, times)."""
    drop = {"run_id", "corpus", "output", "created_at", "started_at", "finished_at"}
    return {k: v for k, v in summary.items() if k not in drop}


@pytest.fixture(scope="module")
def corpora(shared_corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("inplace")
    src, _ = lx_fixtures.write(shared_corpus, base / "src", DOCUMENTS)
    lines = src.read_bytes().splitlines(keepends=True)
    # A record without an id of its own (named <stem>-<line>), and blank lines between.
    anonymous = json.loads(lines[0])
    del anonymous["document_id"]
    data = b"".join(lines[:5]) + b"\n  \n" + b"".join(lines[5:])
    data += json.dumps(anonymous).encode() + b"\n"
    inplace = base / "inplace"
    (inplace / "extractions").mkdir(parents=True)
    (inplace / "extractions" / "lx.jsonl").write_bytes(data)
    (inplace / "schema.json").write_text(json.dumps(lx_fixtures.SCHEMA))
    (inplace / "corpus.yaml").write_text(CORPUS_YAML)
    result = CliRunner().invoke(
        main,
        [
            "import",
            "langextract",
            str(inplace / "extractions" / "lx.jsonl"),
            "--to",
            str(base / "imported"),
            "--schema",
            str(inplace / "schema.json"),
            # The producer corpus.yaml declares: receipts carry it, so the same records are
            # imported from the same producer.
            "--model",
            "gemini-2.5-flash",
            "--no-check",
        ],
    )
    assert result.exit_code == 0, result.output
    return base, inplace, base / "imported"


def _settings(tmp: Path) -> Settings:
    return Settings(storage_url=str(tmp), batch_bytes=60_000, batch_max_units=8)


def test_in_place_run_has_the_imported_layouts_receipts_summary_and_merkle_root(
    corpora, monkeypatch
) -> None:
    base, inplace, imported = corpora
    # Ranges much smaller than the file: planning reads it in many range reads.
    monkeypatch.setattr(source_module, "CHUNK_BYTES", 50_000)
    out_a, out_b = base / "out-imported", base / "out-inplace"
    a = run_in_process(str(imported), "default@1", str(out_a), _settings(out_a))
    b = run_in_process(str(inplace), "default@1", str(out_b), _settings(out_b))
    assert b["index"]["merkle_root"] == a["index"]["merkle_root"]
    assert _summary_counts(b) == _summary_counts(a)
    assert b["units"]["verify"]["done"] == b["units"]["admit"]["done"] == DOCUMENTS + 1
    assert b["failed_units"] == 0 and b["counts"]["claims"] > DOCUMENTS
    receipts = sorted(p.relative_to(out_b) for p in (out_b / "receipts").rglob("*.json"))
    assert receipts == sorted(p.relative_to(out_a) for p in (out_a / "receipts").rglob("*.json"))
    for key in receipts:
        assert (out_b / key).read_bytes() == (out_a / key).read_bytes()
    # Every record is its producer's, in both: the receipts carry it, the summary counts by it.
    assert list(b["producers"]) == ["langextract:gemini-2.5-flash"]
    assert (
        b["producers"]["langextract:gemini-2.5-flash"]["counts"]["claims"] == b["counts"]["claims"]
    )
    # A second run of the same files computes nothing: every receipt is found.
    again = run_in_process(str(inplace), "default@1", str(out_b), _settings(out_b))
    assert again["index"]["merkle_root"] == a["index"]["merkle_root"]
    for kind in ("verify", "admit"):
        assert again["units"][kind]["cached"] == DOCUMENTS + 1
        assert again["units"][kind]["computed"] == 0


def test_planning_resumes_from_its_cursor_range_by_range(corpora) -> None:
    _, inplace, _ = corpora
    store = open_store(str(inplace))
    whole = [u.key for u in corpus_planner(open_corpus(store), None, 1000, None)]
    corpus = ProducerCorpus(store, open_corpus(store).declared, chunk_bytes=30_000, page_size=3)
    steps: list[str] = []
    cursor = None
    for _ in range(500):
        planner = SourcePlanner(corpus, json.loads(json.dumps(cursor)) if cursor else None)
        steps += [u.key for u in planner.step(1)]
        cursor = planner.cursor()
        if planner.finished:
            break
    assert steps == whole
    assert len(whole) == 2 * (DOCUMENTS + 1)
    # The anonymous record, by its line (after two blank ones).
    assert f"verify/lx-{DOCUMENTS + 3}" in whole


def test_a_bad_line_fails_its_unit_alone_naming_file_line_and_field(corpora, tmp_path) -> None:
    _, inplace, _ = corpora
    corpus = tmp_path / "bad"
    shutil.copytree(inplace, corpus)
    path = corpus / "extractions" / "lx.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    broken = json.loads(lines[1])
    broken["extractions"][0]["char_interval"] = {"start_pos": 5, "end_pos": 10**7}
    lines[1] = json.dumps(broken).encode() + b"\n"
    lines[2] = b'{"document_id": "torn", "text": \n'
    path.write_bytes(b"".join(lines))
    out = tmp_path / "out"
    summary = run_in_process(str(corpus), "default@1", str(out), _settings(out))
    errors = {(e["file"], e["line"], e["field"]): e["message"] for e in summary["errors"]}
    file = "extractions/lx.jsonl"
    assert "start_pos <= end_pos" in errors[(file, 2, "extractions[0].char_interval")]
    assert "invalid JSON" in errors[(file, 3, None)]
    assert summary["units"]["verify"]["failed"] == 2
    # The torn line is planned for verification alone, so that its error counts once.
    assert summary["units"]["admit"]["failed"] == 1
    # The good records around them are verified and admitted as usual.
    assert summary["units"]["verify"]["done"] == DOCUMENTS + 1


def test_a_bad_corpus_file_is_an_error_naming_its_line(tmp_path) -> None:
    (tmp_path / "corpus.yaml").write_text("format: langextract\nfiles: {a: 1}\n")
    with pytest.raises(InputFileError) as info:
        open_corpus(open_store(str(tmp_path)))
    assert (info.value.error.file, info.value.error.line) == ("corpus.yaml", 2)
    # A native layout stays itself: no corpus.yaml, no format named.
    plain = tmp_path / "plain"
    plain.mkdir()
    store = open_store(str(plain))
    assert open_corpus(store) is store


def _grown_file(path: Path, lines: list[bytes], size: int) -> int:
    """A LangExtract JSONL of about ``size`` bytes: the records again and again, new ids."""
    written = n = 0
    with path.open("wb") as fh:
        while written < size:
            for raw in lines:
                n += 1
                line = raw.replace(b'"document_id": "', f'"document_id": "g{n}-'.encode(), 1)
                fh.write(line + b"\n")
                written += len(line) + 1
    return n


def _planning_peak(folder: Path) -> tuple[int, int]:
    """Units planned over the whole file, step by step as plan_run does (a fresh planner
    from the stored cursor each step), and the peak of Python memory while planning."""
    import tracemalloc

    corpus = open_corpus(open_store(str(folder)))
    cursor, units = None, 0
    tracemalloc.start()
    try:
        while True:
            planner = corpus_planner(corpus, cursor, 1000, None)
            units += len(planner.step(3))
            cursor = json.loads(json.dumps(planner.cursor()))
            if planner.finished:
                break
        return units, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_planning_memory_is_flat_in_the_files_size(corpora, tmp_path) -> None:
    _, inplace, _ = corpora
    lines = [
        r for r in (inplace / "extractions" / "lx.jsonl").read_bytes().splitlines() if r.strip()
    ]
    peaks = {}
    for size in (20 << 20, 160 << 20):
        folder = tmp_path / str(size)
        folder.mkdir()
        (folder / "corpus.yaml").write_text(CORPUS_YAML)
        records = _grown_file(folder / "lx.jsonl", lines, size)
        units, peaks[size] = _planning_peak(folder)
        assert units == 2 * records
        (folder / "lx.jsonl").unlink()
    # Eight times the file, the same memory: one range and one page of documents at a time.
    assert peaks[160 << 20] < 1.25 * peaks[20 << 20], peaks
    assert peaks[160 << 20] < 40 << 20, peaks


def test_a_finished_runs_report_and_review_read_each_record_where_its_row_says(
    corpora, redis_server, tmp_path, monkeypatch
) -> None:
    """The read side finds a document read in place by its index row's listing entry: the
    report's page and the review tasks read a range a document, never the file from its start."""
    import redis

    from groundswell.shared.report.service import report
    from groundswell.shared.review.store import RunReview
    from groundswell.shared.runs.models import RunSpec
    from groundswell.shared.storage.local import LocalStore
    from tests.shared.runs.driving import drive

    _, inplace, _ = corpora
    redis.Redis.from_url(redis_server.url).flushall()
    settings = Settings(broker_url=redis_server.url, storage_url=str(tmp_path / "out"))
    service, record, _ = drive(settings, RunSpec(corpus=str(inplace)))
    assert record.state == "succeeded", record.error
    from groundswell.shared.runs import execute

    execute._contexts.clear()  # as in another process: nothing the run converted is kept
    scans: list[str] = []
    original = ProducerCorpus.listed_documents

    def listed(self, cursor):
        scans.append("scan")
        return original(self, cursor)

    ranges: list[tuple[int, int]] = []
    read = LocalStore.get_range

    def get_range(self, key, start, end):
        ranges.append((start, end))
        return read(self, key, start, end)

    monkeypatch.setattr(ProducerCorpus, "listed_documents", listed)
    monkeypatch.setattr(LocalStore, "get_range", get_range)
    first = json.loads((inplace / "extractions" / "lx.jsonl").read_bytes().splitlines()[0])
    page = report(service, record)
    assert first["document_id"] in page
    assert ranges, "the report's page read its documents' texts"
    manifest = RunReview(service, record).manifest()
    assert manifest["tasks"] > 0
    assert scans == [] and ranges, "each record read by its row's entry"
    assert all(end - start < 200_000 for start, end in ranges)


def test_one_response_per_file_is_a_unit_in_place_as_imported(shared_corpus, tmp_path) -> None:
    """Azure analyzeResult files (UTF-16 offsets past non-BMP characters), one a document:
    read in place, the receipts and Merkle root of the same files imported."""
    from tests.shared.formats.test_providers import HEADING, NUMBER, _azure

    texts = [
        p.read_text(encoding="utf-8")
        for p in sorted((shared_corpus / "documents").glob("tatqa-*.txt"))
        if len(NUMBER.findall(p.read_text(encoding="utf-8"))) >= 3
    ][:4]
    corpus = tmp_path / "azure"
    (corpus / "results").mkdir(parents=True)
    for n, raw in enumerate(texts):
        text = HEADING + raw
        spans = [(f"amount_{i}", m) for i, m in enumerate(list(NUMBER.finditer(text))[:3])]
        body = _azure(text, "utf16CodeUnit", spans)
        (corpus / "results" / f"invoice-{n}.json").write_text(json.dumps(body))
    schema = {"fields": {f"amount_{i}": {"type": "number", "unit": "USD"} for i in range(3)}}
    (corpus / "schema.json").write_text(json.dumps(schema))
    # The producer declared as the import is given it (receipts carry the declared producer,
    # and each claim its record's): corpus.yaml's producer is import's --model and
    # --producer-version.
    (corpus / "corpus.yaml").write_text(
        "format: azure-di\nschema: schema.json\nfiles: results/\n"
        "producer: {model: prebuilt-invoice, producer_version: '2024-11-30'}\n"
    )
    args = ["import", "azure-di", str(corpus / "results"), "--to", str(tmp_path / "imported"),
            "--schema", str(corpus / "schema.json"), "--no-check", "--model", "prebuilt-invoice",
            "--producer-version", "2024-11-30"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out_a, out_b = tmp_path / "out-a", tmp_path / "out-b"
    a = run_in_process(str(tmp_path / "imported"), "default@1", str(out_a), _settings(out_a))
    b = run_in_process(str(corpus), "default@1", str(out_b), _settings(out_b))
    assert b["documents"] == len(texts) and b["failed_units"] == 0
    assert b["counts"]["candidates.outcome.admitted"] > 0
    assert b["index"]["merkle_root"] == a["index"]["merkle_root"]
    assert _summary_counts(b) == _summary_counts(a)


def test_lines_longer_than_a_range_and_than_the_limit(corpora, tmp_path) -> None:
    """A range that cuts a line is read on to the line's end; a line over the limit fails
    alone, naming its line, and planning goes on after it."""
    _, inplace, _ = corpora
    store = open_store(str(inplace))
    declared = open_corpus(store).declared
    small = ProducerCorpus(store, declared, chunk_bytes=1000)  # far shorter than a line
    assert [d.doc_id for p in small.listed_documents(None) for d in p] == [
        d.doc_id for p in open_corpus(store).listed_documents(None) for d in p
    ]
    limited = ProducerCorpus(store, declared, chunk_bytes=1000, max_bytes=1500)
    docs = [d for p in limited.listed_documents(None) for d in p]
    lines = (inplace / "extractions" / "lx.jsonl").read_bytes().splitlines()
    records = [n for n, raw in enumerate(lines, 1) if raw.strip()]
    assert [d.doc_id for d in docs] == [f"lx-{n}" for n in records]  # each over the limit
    from groundswell.shared.runs.units import UnitRunner

    with (
        pytest.raises(InputFileError) as info,
        UnitRunner.listed({docs[0].doc_id: docs[0].entries}),
    ):
        limited.get(f"claims/{docs[0].doc_id}.jsonl")
    assert (info.value.error.file, info.value.error.line) == ("extractions/lx.jsonl", records[0])
    assert "longer than 1500 bytes" in info.value.error.message


class LazyJsonl:
    """A LangExtract JSONL of ``n`` fixed-width lines, made on each range read (nothing is
    written: a file of gigabytes costs no disk)."""

    url = "lazy://"

    def __init__(self, n: int) -> None:
        text = "Revenue rose to $12.5 million in 2019. " * 200
        x = {"extraction_class": "amount", "extraction_text": "$12.5 million",
             "char_interval": {"start_pos": 16, "end_pos": 29}, "alignment_status": "match_exact"}  # fmt: skip
        record = {"document_id": "d##########", "text": text, "extractions": [x]}
        self.template = json.dumps(record).encode()
        self.n, self.width = n, len(self.template) + 1
        self.size = n * self.width

    def _line(self, i: int) -> bytes:
        return self.template.replace(b"##########", b"%010d" % i) + b"\n"

    def get_range(self, key: str, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        first, last = start // self.width, (end - 1) // self.width
        data = b"".join(self._line(i) for i in range(first, last + 1))
        return data[start - first * self.width : end - first * self.width]

    def list_pages(self, prefix: str, start_after: str | None = None, **_: object):
        from groundswell.shared.storage import ObjectInfo

        if start_after is None:
            yield [ObjectInfo("lx.jsonl", self.size, "etag")]

    def get(self, key: str, max_bytes: int | None = None) -> bytes:
        raise KeyError(key)


def plan_lazy(n: int) -> str:
    """Plan a lazy file of ``n`` lines as plan_run does; units, bytes, peak RSS (a fresh
    process runs it: the peak is planning's)."""
    import resource

    from groundswell.shared.formats.corpus_file import CorpusFile

    store = LazyJsonl(n)
    corpus = ProducerCorpus(store, CorpusFile(format="langextract"))  # type: ignore[arg-type]
    cursor, units = None, 0
    while True:
        planner = corpus_planner(corpus, cursor, 1000, None)  # type: ignore[arg-type]
        units += len(planner.step(3))
        cursor = json.loads(json.dumps(planner.cursor()))
        if planner.finished:
            break
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return json.dumps({"units": units, "bytes": store.size, "peak": peak})


def test_planning_a_multi_gigabyte_jsonl_holds_flat_memory() -> None:
    import subprocess
    import sys

    got = {}
    for n in (10_000, 300_000):  # 80 MB and 2.4 GB of LangExtract lines
        code = f"from tests.shared.formats.test_source import plan_lazy; print(plan_lazy({n}))"
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, done.stderr
        got[n] = json.loads(done.stdout.splitlines()[-1])
        assert got[n]["units"] == 2 * n
    assert got[300_000]["bytes"] > 2_400_000_000
    assert got[300_000]["peak"] < got[10_000]["peak"] * 1.1, got


def test_a_mapped_jsonl_read_in_place_by_the_mapping_corpus_yaml_names(shared_corpus, tmp_path):
    """The user's own JSONL through the mapping corpus.yaml names: the imported layout's
    receipts and Merkle root; a mapping that is missing fails the run's units saying so."""
    from tests.shared.formats.test_mapped import INSTRUCTOR, SENTENCE

    corpus = tmp_path / "own"
    corpus.mkdir()
    lines = []
    for path in sorted((shared_corpus / "documents").glob("tatqa-dev-*.txt"))[:40]:
        text = path.read_text(encoding="utf-8")
        found = SENTENCE.findall(text)[:2]
        if len(found) == 2:
            facts = [{"fact": "said", "substring_quote": found}]
            lines.append(json.dumps({"doc_id": path.stem, "text": text, "facts": facts}))
    (corpus / "facts.jsonl").write_text("\n".join(lines[:6]) + "\n")
    (corpus / "mapping.yaml").write_text(INSTRUCTOR)
    # Declared as the import is given it (the mapping names the same producer).
    (corpus / "corpus.yaml").write_text(
        "format: mapped\nmapping: mapping.yaml\n"
        "producer: {model: gpt-4o-2024-08-06, prompt_version: facts-v2}\n"
    )
    args = ["import", "mapped", str(corpus / "facts.jsonl"), "--mapping",
            str(corpus / "mapping.yaml"), "--to", str(tmp_path / "imported"), "--no-check",
            "--model", "gpt-4o-2024-08-06", "--prompt-version", "facts-v2"]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    out_a, out_b = tmp_path / "out-a", tmp_path / "out-b"
    a = run_in_process(str(tmp_path / "imported"), "default@1", str(out_a), _settings(out_a))
    b = run_in_process(str(corpus), "default@1", str(out_b), _settings(out_b))
    assert b["units"]["verify"]["computed"] == 6 and b["counts"]["claims.accepted"] == 12
    assert b["index"]["merkle_root"] == a["index"]["merkle_root"]
    assert _summary_counts(b) == _summary_counts(a)
    (corpus / "mapping.yaml").unlink()
    with pytest.raises(InputFileError) as info:
        list(open_corpus(open_store(str(corpus))).listed_documents(None))
    assert (info.value.error.file, info.value.error.field) == ("corpus.yaml", "mapping")


def _with_duplicates(inplace: Path, corpus: Path) -> tuple[list[int], list[str]]:
    """A copy of the in-place corpus whose file gives two ids twice (one again in another
    case, as import compares them): the lines of the later records and the ids."""
    shutil.copytree(inplace, corpus)
    path = corpus / "extractions" / "lx.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    first, second = json.loads(lines[1]), json.loads(lines[8])
    again = {**first, "text": first["text"] + "\nanother text", "extractions": []}
    upper = {**second, "document_id": second["document_id"].upper()}
    assert upper["document_id"] != second["document_id"]
    lines.insert(10, json.dumps(again).encode() + b"\n")
    lines.append(json.dumps(upper).encode() + b"\n")
    path.write_bytes(b"".join(lines))
    return [11, len(lines)], [first["document_id"], upper["document_id"]]


def test_a_second_record_of_an_id_fails_alone_as_import_refuses_it(corpora, tmp_path) -> None:
    _, inplace, imported = corpora
    corpus = tmp_path / "dup"
    later, ids = _with_duplicates(inplace, corpus)
    file = "extractions/lx.jsonl"
    out = tmp_path / "out"
    summary = run_in_process(str(corpus), "default@1", str(out), _settings(out))
    errors = {(e["file"], e["line"], e["field"]): e["message"] for e in summary["errors"]}
    assert set(errors) == {(file, n, "document_id") for n in later}, errors
    for message in errors.values():
        assert "is given by an earlier record too" in message
    assert repr(ids[1]) in errors[(file, later[1], "document_id")]
    # Each later record is one failed verification unit; every other record runs as the
    # imported layout's (whose import refused the same two records, naming the same lines).
    assert summary["units"]["verify"]["failed"] == 2
    assert summary["units"]["admit"]["failed"] == 0
    assert summary["units"]["verify"]["done"] == DOCUMENTS + 3  # the two failed ones too
    assert summary["units"]["admit"]["done"] == DOCUMENTS + 1
    result = CliRunner().invoke(
        main,
        ["import", "langextract", str(corpus / file), "--to", str(tmp_path / "imported"),
         "--schema", str(corpus / "schema.json"), "--model", "gemini-2.5-flash", "--no-check"],
    )  # fmt: skip
    assert result.exit_code == 1
    refused = json.loads((tmp_path / "imported" / "import.json").read_text())["errors"]
    assert {(e["line"], e["field"]) for e in refused} == {(n, "document_id") for n in later}
    out_a = tmp_path / "out-imported"
    a = run_in_process(str(imported), "default@1", str(out_a), _settings(out_a))
    assert summary["counts"]["errors"] == 2
    # Planned as documents of their own (as a bad line is), whose only count is their error.
    assert summary["counts"]["documents.format.text"] == a["counts"]["documents.format.text"] + 2
    drop = {"errors", "errors.verify", "documents.format.text"}
    assert {k: v for k, v in summary["counts"].items() if k not in drop} == {
        k: v for k, v in a["counts"].items() if k not in drop
    }
    receipts = sorted(p.relative_to(out) for p in (out / "receipts").rglob("*.json"))
    assert receipts == sorted(p.relative_to(out_a) for p in (out_a / "receipts").rglob("*.json"))
    for key in receipts:  # the first record of each id, as imported
        assert (out / key).read_bytes() == (out_a / key).read_bytes()


def test_duplicates_are_found_across_planning_steps_here_and_elsewhere(corpora, tmp_path) -> None:
    """A planner resumed from a cursor knows the ids before it: from this process's last
    pass over the source, or (planned elsewhere) by listing the source again from its start."""
    _, inplace, _ = corpora
    corpus = tmp_path / "dup"
    later, _ = _with_duplicates(inplace, corpus)
    store = open_store(str(corpus))
    whole = [u.key for u in corpus_planner(open_corpus(store), None, 1000, None)]
    assert {k for k in whole if ".duplicate" in k} == {f"verify/lx-{n}.duplicate" for n in later}
    for elsewhere in (False, True):
        source = ProducerCorpus(store, open_corpus(store).declared, chunk_bytes=30_000, page_size=3)
        steps: list[str] = []
        cursor = None
        for _ in range(500):
            if elsewhere:
                source_module._SEEN.clear()
            planner = SourcePlanner(source, json.loads(json.dumps(cursor)) if cursor else None)
            steps += [u.key for u in planner.step(1, _window(5))]
            cursor = planner.cursor()
            if planner.finished:
                break
        assert steps == whole, elsewhere


def _window(units: int):
    """A planning window that takes documents until ``units`` units (the rest of the page
    is held, and the next planner resumes before the source's own position)."""
    taken: list[int] = []

    def take(mine: list) -> bool:
        if sum(taken) + len(mine) > units:
            return False
        taken.append(len(mine))
        return True

    return take


def _sent_pdf_records() -> dict[str, dict]:
    """An Anthropic call sent a PDF (two pages) and a text, and a Bedrock call sent the PDF
    as document bytes, each citing pages (one quotation on the page cited, one on another)."""
    import base64

    from tests.shared.read import minipdf

    pdf = minipdf.build(
        [
            minipdf.text(72, 700, "Revenue was 391,035 in fiscal 2024."),
            minipdf.text(72, 700, "Revenue guidance is withdrawn."),
        ]
    )
    data = base64.b64encode(pdf).decode()
    text = "Net sales rose 2 percent to 391,035 million dollars."

    def page(quote: str, n: int) -> dict:
        return {"type": "page_location", "cited_text": quote, "document_index": 0,
                "document_title": None, "start_page_number": n, "end_page_number": n + 1}  # fmt: skip

    char = {"type": "char_location", "cited_text": text[:15], "document_index": 1,
            "document_title": None, "start_char_index": 0, "end_char_index": 15}  # fmt: skip
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "content": [{"type": "text", "text": "Revenue rose.", "citations": [
            page("Revenue was 391,035", 1), page("guidance is withdrawn", 1), char]}],
    }  # fmt: skip
    anthropic = {
        "id": "pdf-call",
        "documents": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": data}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": text}},
        ],
        "message": message,
    }  # fmt: skip
    cite = {"sourceContent": [{"text": "guidance is withdrawn"}],
            "location": {"documentPage": {"documentIndex": 0, "start": 2, "end": 2}}}  # fmt: skip
    bedrock = {
        "id": "bedrock-call",
        "documents": [{"format": "pdf", "name": "report", "source": {"bytes": data}}],
        "response": {"output": {"message": {"role": "assistant", "content": [
            {"citationsContent": {"content": [{"text": "Guidance is gone."}],
                                  "citations": [cite]}}]}}},
    }  # fmt: skip
    return {"anthropic": anthropic, "bedrock": bedrock}


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_a_pdf_sent_to_the_provider_is_read_in_place_as_imported(fmt, tmp_path) -> None:
    """A document sent as a file (base64 PDF) is that PDF in place too: read by the PDF
    reader, its page citations verified on the text of those pages, with the receipts,
    summary and Merkle root of the same records imported."""
    record = _sent_pdf_records()[fmt]
    corpus = tmp_path / "calls"
    corpus.mkdir()
    lines = [json.dumps(record), json.dumps({**record, "id": f"{record['id']}-again"})]
    (corpus / "calls.jsonl").write_text("\n".join(lines) + "\n")
    # Declaring the producer import finds (the model the Anthropic message names): receipts
    # carry the declared one.
    model = "producer: {model: claude-sonnet-4-5}\n" if fmt == "anthropic" else ""
    (corpus / "corpus.yaml").write_text(f"format: {fmt}\nfiles: [calls.jsonl]\n{model}")
    args = ["import", fmt, str(corpus / "calls.jsonl"), "--to", str(tmp_path / "imported")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out_a, out_b = tmp_path / "out-a", tmp_path / "out-b"
    a = run_in_process(str(tmp_path / "imported"), "default@1", str(out_a), _settings(out_a))
    b = run_in_process(str(corpus), "default@1", str(out_b), _settings(out_b))
    assert b["failed_units"] == 0, b["errors"]
    assert b["index"]["merkle_root"] == a["index"]["merkle_root"]
    assert _summary_counts(b) == _summary_counts(a)
    pdfs = 2  # one PDF a record
    assert b["counts"]["documents.format.pdf"] == pdfs
    assert b["units"]["read"]["done"] == pdfs
    # Each quotation cited by page is bound where it is on that page of the text read, and
    # verified there; one not on the page cited (anthropic: page 1 cited, the text on page 2)
    # stays unbound and is verified over the document, as imported.
    assert b["counts"]["claims.accepted"] == {"anthropic": 3, "bedrock": 1}[fmt] * pdfs
    source = open_corpus(open_store(str(corpus)))
    pdf_id = f"{record['id']}-0" if fmt == "anthropic" else record["id"]
    claims = [json.loads(c) for c in source.get(f"claims/{pdf_id}.jsonl").splitlines()]
    bound = {c["claim"]: (c.get("start"), c.get("end")) for c in claims}
    if fmt == "anthropic":
        assert bound["Revenue was 391,035"] == (0, 19)
        assert bound["guidance is withdrawn"] == (None, None)
    else:
        start, end = bound["guidance is withdrawn"]
        assert start > 19 and end - start == len("guidance is withdrawn")
    receipts = sorted(p.relative_to(out_b) for p in (out_b / "receipts").rglob("*.json"))
    assert receipts and receipts == sorted(
        p.relative_to(out_a) for p in (out_a / "receipts").rglob("*.json")
    )
    for key in receipts:
        assert (out_b / key).read_bytes() == (out_a / key).read_bytes()
    # A reader of the finished run (report, review) finds the PDF in place and its reading.
    from groundswell.shared.policies import PolicyRegistry
    from groundswell.shared.runs.units import UnitRunner

    output = open_store(str(out_b))
    runner = UnitRunner(source, output, PolicyRegistry(output).resolve("default@1"))
    assert runner.find_source(pdf_id) == f"documents/{pdf_id}.pdf"
    document = runner.indexed_document(pdf_id, None)
    assert document.source is not None and document.source["format"] == "pdf"
    assert "guidance is withdrawn" in document.text()


def test_a_changed_run_over_records_read_in_place_equals_a_full_run(
    corpora, redis_server, tmp_path
) -> None:
    """``run --changed`` over producer files: a document's layout key names its record (by
    document id), a producer file's key every record of the file; the documents named are
    read and checked, the others reused unread with their entries as listed now (a record
    earlier in the file moved them), and the run is a full run's (summary, Merkle root)."""
    import redis

    from groundswell.shared.runs.execute import _contexts
    from groundswell.shared.runs.models import RunSpec
    from tests.shared.runs.driving import drive

    _, inplace, _ = corpora
    corpus = tmp_path / "corpus"
    shutil.copytree(inplace, corpus)
    redis.Redis.from_url(redis_server.url).flushall()
    settings = Settings(
        broker_url=redis_server.url, storage_url=str(tmp_path / "out"), batch_max_units=8
    )

    def run(**spec) -> dict:
        _contexts.clear()  # each run as in a fresh process: nothing converted is kept
        service, record, _ = drive(settings, RunSpec(corpus=str(corpus), **spec))
        assert record.state in ("succeeded", "partially_failed"), record.error
        return service.summary(record.id)

    def full() -> dict:
        out = tmp_path / f"full-{len(list(tmp_path.glob('full-*')))}"
        return run_in_process(str(corpus), "default@1", str(out), _settings(out))

    first = run()
    path = corpus / "extractions" / "lx.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # One record's extractions cut (its claims and candidates change, and every later line
    # moves), one record deleted, one added at the end.
    cut = json.loads(lines[1])
    cut["extractions"] = cut["extractions"][:1]
    gone = json.loads(lines[8])
    added = json.loads(lines[9])
    added.update(document_id="added-record", text=added["text"] + "\nadded")
    lines[1] = json.dumps(cut).encode() + b"\n"
    del lines[8]
    lines.append(json.dumps(added).encode() + b"\n")
    path.write_bytes(b"".join(lines))
    named = [f"claims/{cut['document_id']}.jsonl", f"documents/{gone['document_id']}.txt"]
    by_id = run(changed=named)
    # Each row locates its record in the file as it is now (what the read side reads it by),
    # the rows reused by the list's word too.
    from groundswell.shared.runs.index import RunIndex

    listed = {
        doc.doc_id: doc.entries
        for page in open_corpus(open_store(str(corpus))).listed_documents(None)
        for doc in page
    }
    rows = list(RunIndex(open_store(str(tmp_path / "out")), by_id["run_id"]).rows())
    assert len(rows) == 2 * len(listed)
    for row in rows:
        assert row["listing"] == {k: listed[row["doc_id"]][k] for k in row["listing"]}, row
    expected = full()
    for got in (by_id, run(changed=["extractions/lx.jsonl", "notes.txt"])):
        errors = got["counts"].pop("errors", 0) - expected["counts"].get("errors", 0)
        assert got["counts"] == {k: v for k, v in expected["counts"].items() if k != "errors"}
        assert got["index"]["merkle_root"] == expected["index"]["merkle_root"]
        assert got["documents"] == expected["documents"] == first["documents"]
        assert errors in (0, 1)  # the second list's line naming no corpus file
    assert by_id["index"]["merkle_root"] != first["index"]["merkle_root"]
    # By id: only the record named and the new one are computed (verify and admit), the
    # rest reused by the list's word although their lines moved.
    assert by_id["units"]["verify"]["computed"] == by_id["units"]["admit"]["computed"] == 2
    # Each row reused locates its record in the file as it is now: a plain rerun, which
    # compares every entry, reuses every unit by listing and matches.
    again = run()
    assert again["index"]["merkle_root"] == expected["index"]["merkle_root"]
    for kind in ("verify", "admit"):
        assert again["units"][kind]["computed"] == 0


def test_labels_beside_records_read_in_place_count_as_in_the_imported_layout(
    corpora, tmp_path
) -> None:
    """A corpus read in place asks a document's labels only when it has labels at all (one
    listing): with a labels file, the same label counts as the imported layout's."""
    _, inplace, imported = corpora
    first = json.loads((inplace / "extractions" / "lx.jsonl").read_bytes().splitlines()[0])
    labels = json.dumps({"claims": {"0": True, "1": False}, "candidates": {"0": False}})
    runs = {}
    for name, folder in (("inplace", inplace), ("imported", imported)):
        corpus = tmp_path / name
        shutil.copytree(folder, corpus)
        (corpus / "labels").mkdir()
        (corpus / "labels" / f"{first['document_id']}.json").write_text(labels)
        out = tmp_path / f"out-{name}"
        runs[name] = run_in_process(str(corpus), "default@1", str(out), _settings(out))
    assert runs["inplace"]["counts"]["claims.labelled"] == 2
    assert runs["inplace"]["counts"]["candidates.labelled"] == 1
    assert runs["inplace"]["counts"] == runs["imported"]["counts"]
    assert runs["inplace"]["index"]["merkle_root"] == runs["imported"]["index"]["merkle_root"]
    assert (
        ProducerCorpus(
            open_store(str(inplace)), open_corpus(open_store(str(inplace))).declared
        ).has_labels()
        is False
    )
