"""A LangExtract JSONL read in place on moto's S3 server by real workers: the summary and
Merkle root of the same records imported as the native layout, a second run that computes
nothing, and worker memory that stays flat when the file grows eightfold
(``groundswell_task_peak_rss_bytes`` of the plan, verify and admit tasks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli.app import main
from groundswell.shared.runs.models import RunSpec
from groundswell.workers.embedded import free_port, wait_for_port
from tests.conftest import s3_client
from tests.integration.corpus_gen import upload
from tests.shared.formats import lx_fixtures
from tests.workers.test_metrics import scrape

pytestmark = pytest.mark.integration

DOCUMENTS = 30
GROWN = 8  # the larger file: each record this many times, each copy a document of its own
CORPUS_YAML = "format: langextract\nschema: schema.json\n"


def _copies(lines: list[bytes], times: int) -> bytes:
    """Each record ``times`` times under new ids, its text grown by a line per copy (a new
    document for the receipts; the offsets stay where they were)."""
    out = []
    for copy in range(times):
        for raw in lines:
            record = json.loads(raw)
            record["document_id"] = f"{record['document_id']}-c{copy}"
            record["text"] += "\n" * copy
            out.append(json.dumps(record, ensure_ascii=False).encode() + b"\n")
    return b"".join(out)


@pytest.fixture
def corpora(shared_corpus: Path, tmp_path: Path, lane) -> dict[str, str]:
    src, _ = lx_fixtures.write(shared_corpus, tmp_path / "src", DOCUMENTS)
    lines = src.read_bytes().splitlines()
    schema = json.dumps(lx_fixtures.SCHEMA)
    folders = {}
    for name, data in (("inplace", _copies(lines, 1)), ("grown", _copies(lines, GROWN))):
        folder = tmp_path / name
        (folder / "lx").mkdir(parents=True)
        (folder / "lx" / "extractions.jsonl").write_bytes(data)
        (folder / "schema.json").write_text(schema)
        (folder / "corpus.yaml").write_text(CORPUS_YAML)
        folders[name] = folder
    result = CliRunner().invoke(
        main,
        [
            "import",
            "langextract",
            str(folders["inplace"] / "lx" / "extractions.jsonl"),
            "--to",
            str(tmp_path / "imported"),
            "--schema",
            str(folders["inplace"] / "schema.json"),
            "--no-check",
        ],
    )
    assert result.exit_code == 0, result.output
    folders["imported"] = tmp_path / "imported"
    bucket = lane.new_bucket("corpus")
    client = s3_client(lane.s3_endpoint)
    for name, folder in folders.items():
        upload(folder, client, bucket, name)
    return {name: f"s3://{bucket}/{name}" for name in folders}


def _counts(summary: dict) -> dict:
    drop = {"run_id", "id", "corpus", "created_at", "started_at", "finished_at", "previous_run"}
    return {k: v for k, v in summary.items() if k not in drop}


def _peaks(port: int) -> dict[str, float]:
    samples = scrape(port)
    return {
        dict(labels)["task"]: value
        for (name, labels), value in samples.items()
        if name == "groundswell_task_peak_rss_bytes"
    }


def test_a_jsonl_read_in_place_runs_as_its_imported_layout_with_flat_memory(
    pipeline, corpora, tmp_path
) -> None:
    port = free_port()
    worker = pipeline.start_worker(
        "w1", concurrency=2, metrics_port=port, metrics_dir=tmp_path / "m1"
    )
    record, _ = pipeline.service.submit(RunSpec(corpus=corpora["inplace"]))
    inplace = pipeline.wait(record.id)
    record, _ = pipeline.service.submit(RunSpec(corpus=corpora["imported"]))
    imported = pipeline.wait(record.id)
    assert inplace["state"] == "succeeded", inplace.get("errors")
    assert inplace["index"]["merkle_root"] == imported["index"]["merkle_root"]
    for member in ("documents", "bytes", "counts", "rates", "errors_total"):
        assert inplace[member] == imported[member], member
    for kind in ("verify", "admit"):
        # The same receipts: the imported layout's run finds every one the in-place run
        # wrote (same output store) and computes none.
        assert inplace["units"][kind]["computed"] == DOCUMENTS
        assert imported["units"][kind]["cached"] == DOCUMENTS

    # Again: each unit is reused from the first run (its line's listing entry unchanged).
    record, _ = pipeline.service.submit(RunSpec(corpus=corpora["inplace"]))
    again = pipeline.wait(record.id)
    assert again["index"]["merkle_root"] == imported["index"]["merkle_root"]
    for kind in ("verify", "admit"):
        assert again["units"][kind]["cached"] == DOCUMENTS
        assert again["units"][kind]["computed"] == 0
    wait_for_port(port)
    small = _peaks(port)
    worker.stop()

    # Eight times the records, read by a fresh worker (its peaks are this run's alone).
    port = free_port()
    pipeline.start_worker("w2", concurrency=2, metrics_port=port, metrics_dir=tmp_path / "m2")
    record, _ = pipeline.service.submit(RunSpec(corpus=corpora["grown"]))
    grown = pipeline.wait(record.id, timeout=400)
    assert grown["state"] == "succeeded", grown.get("errors")
    # The first copy is the small file's records: their receipts are found.
    assert grown["units"]["admit"]["computed"] == (GROWN - 1) * DOCUMENTS
    assert grown["units"]["admit"]["done"] == GROWN * DOCUMENTS
    wait_for_port(port)
    large = _peaks(port)
    print({task: (small.get(task), large[task]) for task in large})
    for task in ("plan", "verify", "admit"):
        # Flat: a batch and a planning range at a time, whatever the file's size.
        assert large[task] < small[task] * 1.15 + 8e6, (task, small[task], large[task])


def test_a_second_record_of_an_id_fails_alone_on_real_workers(
    pipeline, lane, shared_corpus, tmp_path
) -> None:
    """Two records with one document id, planned and run by a real worker on moto's S3: the
    later one's unit fails naming its file, line and id field, the first runs as usual."""
    src, _ = lx_fixtures.write(shared_corpus, tmp_path / "src", 6)
    lines = src.read_bytes().splitlines()
    again = {**json.loads(lines[1]), "extractions": []}
    data = b"\n".join([*lines, json.dumps(again).encode()]) + b"\n"
    folder = tmp_path / "dup"
    (folder / "lx").mkdir(parents=True)
    (folder / "lx" / "extractions.jsonl").write_bytes(data)
    (folder / "schema.json").write_text(json.dumps(lx_fixtures.SCHEMA))
    (folder / "corpus.yaml").write_text(CORPUS_YAML)
    bucket = lane.new_bucket("dup")
    upload(folder, s3_client(lane.s3_endpoint), bucket, "dup")
    pipeline.start_worker("w1", concurrency=2)
    record, _ = pipeline.service.submit(RunSpec(corpus=f"s3://{bucket}/dup"))
    summary = pipeline.wait(record.id)
    errors = [(e["file"], e["line"], e["field"]) for e in summary["errors"]]
    assert errors == [("lx/extractions.jsonl", 7, "document_id")], summary["errors"]
    assert "is given by an earlier record too" in summary["errors"][0]["message"]
    assert summary["units"]["verify"]["failed"] == 1
    assert summary["units"]["verify"]["done"] == 7 and summary["units"]["admit"]["done"] == 6
    assert summary["units"]["admit"]["failed"] == 0
