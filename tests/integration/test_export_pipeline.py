"""A real run on S3, exported by a worker as it finishes (GROUNDSWELL_EXPORT_PARQUET), read
back with DuckDB over S3 and compared row by row with the run's receipts and labels."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.export.models import manifest_key
from groundswell.shared.export.query import run_query
from groundswell.shared.receipts import open_receipt
from groundswell.shared.runs.index import RunIndex
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.storage import join_url
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def as_text(value):
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


def test_a_finished_run_is_exported_and_reads_back_row_by_row(pipeline):
    pipeline.start_worker("w1", export_parquet=True)
    service = pipeline.service
    record, _ = service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    summary = pipeline.wait(record.id)
    output = service.store(record.output)
    root = join_url(record.output, "exports/parquet")
    exports = service.store(root)
    manifest = json.loads(wait_until(lambda: _get(exports, manifest_key(record.id)), 60, "export"))
    counts = summary["counts"]
    assert manifest["rows"] == {"certificates": counts["claims"], "decisions": counts["candidates"]}

    certificates, decisions = [], []
    for row in RunIndex(output, record.id).rows():
        receipt = open_receipt(output.get(row["receipt"]), row["receipt"])
        doc = row["doc_id"]
        labels = json.loads(_get(service.store(record.corpus), f"labels/{doc}.json") or "{}")
        if row["kind"] == "verify":
            for item in receipt["records"]:
                c, cid = item["certificate"], item["record"]["id"]
                certificates.append(
                    (
                        doc,
                        cid,
                        item["line"],
                        c["verdict"],
                        c["tier"],
                        c["grounded"],
                        c["start"],
                        c["end"],
                        labels.get("claims", {}).get(cid),
                    )
                )
        else:
            for d in receipt["receipt"]["decisions"]:
                cid = d["candidate_id"]
                decisions.append(
                    (
                        doc,
                        cid,
                        d["field"],
                        as_text(d["value"]),
                        d["outcome"],
                        d["codes"],
                        labels.get("candidates", {}).get(cid),
                    )
                )
    settings = pipeline.settings
    _, got = run_query(
        root,
        f'select doc_id, claim_id, line, verdict, tier, grounded, start, "end", label '
        f"from certificates where run = '{record.id}' order by doc_id, line",
        settings,
    )
    assert got == sorted(certificates, key=lambda r: (r[0], r[2]))
    _, got = run_query(
        root,
        "select doc_id, candidate_id, field, value, outcome, codes, label from decisions "
        "order by doc_id, candidate_id",
        settings,
    )
    assert got == sorted(decisions, key=lambda r: (r[0], r[1]))
    _, [(policy, labelled, escapes)] = run_query(
        root,
        "select any_value(policy), count(label), count(*) filter (where label = false and "
        "outcome = 'admitted') from decisions",
        settings,
    )
    assert policy == record.policy["ref"] and labelled == counts["candidates.labelled"]
    assert escapes == counts["candidates.escapes"]


def _get(store, key):
    try:
        return store.get(key)
    except KeyError:
        return None
