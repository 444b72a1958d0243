"""The Parquet export in streaming steps (several row groups and part files), its schema and
manifest, and `groundswell query` over it."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from groundswell.shared.canonical import json_sha256
from groundswell.shared.cli import main
from groundswell.shared.export import service as export_service
from groundswell.shared.export.models import EXPORT_FORMAT, arrow_schema, manifest_key
from groundswell.shared.export.query import QueryError, run_query
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store


def sealed(body: dict) -> bytes:
    return json.dumps({**body, "receipt_sha256": json_sha256(body)}).encode()


def verify_receipt(n: int) -> dict:
    records = [
        {
            "line": i + 1,
            "record": {"id": f"q{i}", "claim": "x", "producer": "model-a"},
            "certificate": {
                "verdict": "grounded",
                "tier": "exact",
                "grounded": True,
                "tier_sound": True,
                "scope": "document",
                "start": i,
                "end": i + 3,
                "policy_fingerprint": "fp-v",
            },
        }
        for i in range(n)
    ]
    return {"kind": "verify", "policy": {"verify_fingerprint": "fp-v"}, "records": records}


def admit_receipt() -> dict:
    decisions = [
        {
            "candidate_id": "c1",
            "field": "revenue",
            "key": None,
            "value": "7,000",
            "unit": "USD",
            "outcome": "admitted",
            "codes": [],
            "evidence": {"start": 5, "end": 10},
        },
        {
            "candidate_id": "c2",
            "field": "year",
            "key": {"k": 1},
            "value": 2024,
            "unit": None,
            "outcome": "rejected",
            "codes": ["QUOTE_NOT_FOUND", "SCALE_WORD"],
            "evidence": None,
        },
    ]
    return {
        "kind": "admit",
        "policy": {"admit_fingerprint": "fp-a"},
        "records": [{"id": "c1", "producer": "model-b"}, {"id": "c2"}],
        "receipt": {"decisions": decisions},
    }


@pytest.fixture
def exported(tmp_path, monkeypatch):
    """Three documents (40 claims each, two candidates), written 16 rows a batch and 32 a
    part: several row groups and part files."""
    monkeypatch.setattr(export_service, "BATCH_ROWS", 16)
    monkeypatch.setattr(export_service, "PART_ROWS", 32)
    output = open_store(str(tmp_path / "out"), None)
    corpus = open_store(str(tmp_path / "corpus"), None)
    corpus.put(
        "labels/d1.json", json.dumps({"claims": {"q1": False}, "candidates": {"c2": True}}).encode()
    )
    rows = []
    for doc in ("d1", "d2", "d3"):
        for kind, body in (("admit", admit_receipt()), ("verify", verify_receipt(40))):
            key = f"receipts/{kind}/{doc}.json"
            output.put(key, sealed(body))
            rows.append({"doc_id": doc, "kind": kind, "status": "computed", "receipt": key})
    rows.append({"doc_id": "d4", "kind": "verify", "status": "failed", "receipt": None})
    root = open_store(str(tmp_path / "export"), None)
    manifest = export_service.export_rows(
        iter(rows), output, corpus, root, "run1", "default@1", "2026-01-01T00:00:00Z"
    )
    return tmp_path / "export", manifest


def test_rows_stream_into_row_groups_and_parts(exported):
    root, manifest = exported
    assert manifest.rows == {"certificates": 120, "decisions": 6} and manifest.units == 7
    parts = [f for f in manifest.files if f.table == "certificates"]
    assert [p.rows for p in parts] == [32, 32, 32, 24]
    first = root / parts[0].key
    assert first.parent.name == "run=run1" and first.parent.parent.name == "policy=default@1"
    meta = pq.ParquetFile(first)
    assert meta.metadata.num_row_groups == 2
    assert meta.schema_arrow.equals(arrow_schema("certificates"))
    assert meta.schema_arrow.metadata[b"groundswell.export.format"] == str(EXPORT_FORMAT).encode()
    stored = json.loads((root / manifest_key("run1")).read_text())
    assert stored["rows"] == manifest.rows and len(stored["files"]) == 5


def test_query_reads_back_every_row_and_the_partitions(exported):
    root, _ = exported
    settings = Settings()
    _, rows = run_query(
        str(root),
        "select policy, run, count(*), count(label), "
        "sum(case when label then 0 else 1 end) filter (where label is not null) "
        "from certificates group by all",
        settings,
    )
    assert rows == [("default@1", "run1", 120, 1, 1)]
    _, rows = run_query(
        str(root),
        "select doc_id, candidate_id, field, key, value, unit, outcome, codes, evidence_start, "
        "evidence_end, producer, label, policy_fingerprint from decisions where doc_id = 'd1' "
        "order by candidate_id",
        settings,
    )
    assert rows == [
        (
            "d1",
            "c1",
            "revenue",
            None,
            "7,000",
            "USD",
            "admitted",
            [],
            5,
            10,
            "model-b",
            None,
            "fp-a",
        ),
        (
            "d1",
            "c2",
            "year",
            '{"k": 1}',
            "2024",
            None,
            "rejected",
            ["QUOTE_NOT_FOUND", "SCALE_WORD"],
            None,
            None,
            None,
            True,
            "fp-a",
        ),
    ]
    _, rows = run_query(
        str(root), 'select producer, min(start), max("end") from certificates group by 1', settings
    )
    assert rows == [("model-a", 0, 42)]
    with pytest.raises(QueryError, match="nope"):
        run_query(str(root), "select nope from certificates", settings)


def test_an_empty_root_has_empty_views(tmp_path):
    _, rows = run_query(str(tmp_path), "select count(*) from decisions", Settings())
    assert rows == [(0,)]


def test_query_command(exported, monkeypatch):
    root, _ = exported
    done = CliRunner().invoke(
        main,
        [
            "query",
            "select outcome, count(*) n from decisions group by 1 order by 1",
            "--from",
            str(root),
            "--json",
        ],
    )
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [{"outcome": "admitted", "n": 3}, {"outcome": "rejected", "n": 3}]
    bad = CliRunner().invoke(main, ["query", "select from nowhere", "--from", str(root)])
    assert bad.exit_code == 2 and "groundswell: " in bad.output


def test_the_producer_column_falls_back_to_the_corpus_declared_producer():
    from groundswell.shared.export.service import certificate_rows, decision_rows

    declared = {"format": "layout", "model": "m1"}
    verify = {
        "records": [
            {"line": 1, "record": {"id": "q1", "claim": "x"}, "certificate": {}},
            {"line": 2, "record": {"id": "q2", "claim": "x", "producer": "own"}, "certificate": {}},
        ],
        "producer": declared,
    }
    rows = list(certificate_rows(verify, {}, {}))
    assert (
        rows[0]["producer"] == json.dumps(declared, sort_keys=True) and rows[1]["producer"] == "own"
    )
    admit = {
        "records": [{"id": "c1"}],
        "receipt": {"decisions": [{"candidate_id": "c1", "outcome": "admitted"}]},
        "producer": declared,
    }
    (row,) = decision_rows(admit, {}, {})
    assert json.loads(row["producer"]) == declared
