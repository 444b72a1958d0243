"""Writing a finished run's certificates and decisions as Parquet, in streaming steps.

The run's index is read piece by piece and the receipts of :data:`FETCH_LOT` rows at a time
(fetched side by side); rows gather
in column buffers of :data:`BATCH_ROWS` rows, written as row groups to a part file of at
most :data:`PART_ROWS` rows, which is put in the export store when full. Memory therefore
depends on those two numbers, never on the run. Everything written is a function of the
run's index, receipts and labels, so an export done again writes the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from groundswell.shared.export.models import (
    TABLES,
    ExportFile,
    ExportManifest,
    arrow_schema,
    manifest_key,
    part_key,
)
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.service import RunService

BATCH_ROWS = 16_384
PART_ROWS = 262_144
FETCH_LOT = 256  # index rows whose receipts are fetched at once
FETCH_THREADS = 16
KINDS = ("verify", "admit")
EXPORT_PREFIX = "exports/parquet"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _producer(record: Any, receipt: dict[str, Any]) -> str | None:
    """The record's own producer member, else the producer the corpus declares (its
    receipt's ``producer``), as text; None when neither says."""
    own = record.get("producer") if isinstance(record, dict) else None
    return _text(own if own is not None else receipt.get("producer"))


def certificate_rows(
    receipt: dict[str, Any], base: dict[str, Any], labels: dict[str, bool]
) -> Iterator[dict[str, Any]]:
    """One row per claim of a verification receipt."""
    fingerprint = (receipt.get("policy") or {}).get("verify_fingerprint")
    for item in receipt.get("records") or ():
        cert = item.get("certificate") or {}
        record = item.get("record") or {}
        claim_id = record.get("id") if isinstance(record, dict) else None
        repair = item.get("repair") if isinstance(item.get("repair"), dict) else {}
        yield {
            **base,
            "claim_id": _text(claim_id),
            "line": _int(item.get("line")),
            "verdict": cert.get("verdict"),
            "tier": cert.get("tier"),
            "grounded": bool(cert.get("grounded")),
            "tier_sound": cert.get("tier_sound"),
            "scope": cert.get("scope"),
            "start": _int(cert.get("start")),
            "end": _int(cert.get("end")),
            "repair_action": repair.get("action"),
            "policy_fingerprint": cert.get("policy_fingerprint") or fingerprint,
            "producer": _producer(record, receipt),
            "label": labels.get(str(claim_id)) if claim_id is not None else None,
        }


def _spans(evidence: Any) -> list[dict[str, Any]]:
    items = evidence if isinstance(evidence, list) else [evidence]
    return [e for e in items if isinstance(e, dict) and _int(e.get("start")) is not None]


def decision_rows(
    receipt: dict[str, Any], base: dict[str, Any], labels: dict[str, bool]
) -> Iterator[dict[str, Any]]:
    """One row per candidate of an admission receipt."""
    fingerprint = (receipt.get("policy") or {}).get("admit_fingerprint")
    given = {str(c.get("id")): c for c in receipt.get("records") or () if isinstance(c, dict)}
    for decision in (receipt.get("receipt") or {}).get("decisions") or ():
        candidate_id = decision.get("candidate_id")
        spans = _spans(decision.get("evidence"))
        yield {
            **base,
            "candidate_id": _text(candidate_id),
            "field": _text(decision.get("field")),
            "key": _text(decision.get("key")),
            "value": _text(decision.get("value")),
            "unit": _text(decision.get("unit")),
            "outcome": decision.get("outcome"),
            "codes": [str(c) for c in decision.get("codes") or ()],
            "evidence_start": spans[0]["start"] if spans else None,
            "evidence_end": _int(spans[0].get("end")) if spans else None,
            "evidence_spans": len(spans),
            "policy_fingerprint": fingerprint,
            "producer": _producer(given.get(str(candidate_id)), receipt),
            "label": labels.get(str(candidate_id)) if candidate_id is not None else None,
        }


class _TableWriter:
    """One table's column buffers and its current part file."""

    def __init__(self, table: str, store: ObjectStore, policy_ref: str, run_id: str) -> None:
        self.table, self.store = table, store
        self.policy_ref, self.run_id = policy_ref, run_id
        self.schema = arrow_schema(table)
        self.buffer: list[dict[str, Any]] = []
        self.part = 0
        self.part_rows = 0
        self.rows = 0
        self.files: list[ExportFile] = []
        self._writer: Any = None
        self._path: str | None = None

    def add(self, row: dict[str, Any]) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            fd, self._path = tempfile.mkstemp(prefix="groundswell-export-", suffix=".parquet")
            os.close(fd)
            self._writer = pq.ParquetWriter(self._path, self.schema, compression="zstd")
        batch = pa.RecordBatch.from_pylist(self.buffer, schema=self.schema)
        self._writer.write_batch(batch)
        self.part_rows += len(self.buffer)
        self.rows += len(self.buffer)
        self.buffer = []
        if self.part_rows >= PART_ROWS:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        assert self._path is not None
        try:
            with open(self._path, "rb") as f:
                data = f.read()
        finally:
            os.unlink(self._path)
        key = part_key(self.table, self.policy_ref, self.run_id, self.part)
        self.store.put(key, data)
        digest = hashlib.sha256(data).hexdigest()
        self.files.append(
            ExportFile(
                table=self.table, key=key, rows=self.part_rows, bytes=len(data), sha256=digest
            )
        )
        self._writer, self._path = None, None
        self.part += 1
        self.part_rows = 0

    def finish(self) -> None:
        self._flush()
        self._close_part()

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._path:
            os.unlink(self._path)


def _labels(corpus: ObjectStore | None, doc_id: str) -> dict[str, Any]:
    """A document's gold labels (``labels/<doc_id>.json``), {} when it has none."""
    from groundswell.shared.corpus import labels_key

    if corpus is None:
        return {}
    try:
        loaded = json.loads(corpus.get(labels_key(doc_id)))
    except (KeyError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _lots(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    lot: list[dict[str, Any]] = []
    for row in rows:
        lot.append(row)
        if len(lot) >= size:
            yield lot
            lot = []
    if lot:
        yield lot


def _receipt(output: ObjectStore, key: str, digest: str | None) -> dict[str, Any] | None:
    """The receipt an index row names, when it is the one the row recorded (its stated
    ``receipt_sha256``; re-hashing its canonical JSON, check-receipt's work, would cost four
    fifths of the export's time). None when it is gone or another."""
    try:
        body = json.loads(output.get(key))
    except (KeyError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    if digest is not None and body.get("receipt_sha256") != digest:
        return None
    return body


def export_rows(
    rows: Iterator[dict[str, Any]],
    output: ObjectStore,
    corpus: ObjectStore | None,
    destination: ObjectStore,
    run_id: str,
    policy_ref: str,
    written_at: str,
) -> ExportManifest:
    """Write the tables of a run from its index rows; returns (and stores) the manifest."""
    writers = {t: _TableWriter(t, destination, policy_ref, run_id) for t in TABLES}
    units = 0
    # Threads pay where requests wait (S3); a folder or memory is read faster in line.
    remote = str(getattr(output, "url", "")).startswith("s3://")
    pool = ThreadPoolExecutor(FETCH_THREADS if remote else 1, thread_name_prefix="export-fetch")
    fetch = pool.map if remote else map
    try:
        # A lot of rows at a time: its receipts and labels fetched side by side (storage
        # latency, not CPU, bounds a run on S3), then written in index order.
        for lot in _lots(rows, FETCH_LOT):
            units += len(lot)
            wanted = [
                r
                for r in lot
                if r.get("status") != "failed" and r.get("receipt") and r.get("kind") in KINDS
            ]
            receipts = fetch(
                lambda r: _receipt(output, r["receipt"], r.get("receipt_sha256")), wanted
            )
            docs = sorted({r["doc_id"] for r in wanted})
            gold = dict(zip(docs, fetch(lambda d: _labels(corpus, d), docs), strict=True))
            for row, receipt in zip(wanted, receipts, strict=True):
                if receipt is None:
                    continue  # a lost receipt costs its rows, not the export
                doc_id, key = row["doc_id"], row["receipt"]
                base = {
                    "run_id": run_id,
                    "policy_ref": policy_ref,
                    "doc_id": doc_id,
                    "receipt": key,
                }
                labels = gold[doc_id]
                if row["kind"] == "verify":
                    claims = labels.get("claims") if isinstance(labels.get("claims"), dict) else {}
                    for out in certificate_rows(receipt, base, claims):
                        writers["certificates"].add(out)
                else:
                    cands = labels.get("candidates")
                    cands = cands if isinstance(cands, dict) else {}
                    for out in decision_rows(receipt, base, cands):
                        writers["decisions"].add(out)
        for writer in writers.values():
            writer.finish()
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    finally:
        pool.shutdown(wait=True)
    manifest = ExportManifest(
        run_id=run_id,
        policy_ref=policy_ref,
        root=destination.url,
        rows={t: w.rows for t, w in writers.items()},
        files=[f for w in writers.values() for f in w.files],
        units=units,
        written_at=written_at,
    )
    destination.put(manifest_key(run_id), manifest.model_dump_json(indent=2).encode())
    return manifest


def export_root(service: RunService, record: RunRecord) -> str:
    """Where a run's export goes: GROUNDSWELL_EXPORT_URL, else ``exports/parquet`` in the
    run's output store."""
    from groundswell.shared.storage import join_url

    return service.settings.export_url or join_url(record.output, EXPORT_PREFIX)


def export_run(service: RunService, run_id: str, root: str | None = None) -> ExportManifest:
    """Export a finished run (its index and receipts, read through the read side);
    :class:`RunNotReady` when it has not ended with an index."""
    from groundswell.shared.results.service import RunNotReady, finished_record
    from groundswell.shared.runs.index import IndexMissing, RunIndex
    from groundswell.shared.runs.models import iso, utcnow

    record = finished_record(service, run_id, "exported")
    output = service.store(record.output)
    try:
        index = RunIndex(output, run_id)
    except IndexMissing:
        raise RunNotReady(f"run {run_id} ended {record.state} without an index") from None
    try:
        corpus = service.store(record.corpus)
    except Exception:
        corpus = None  # labels are optional: a corpus gone since costs only them
    destination = service.store(root or export_root(service, record))
    return export_rows(
        index.rows(),
        output,
        corpus,
        destination,
        run_id,
        str(record.policy.get("ref")),
        iso(utcnow()),
    )
