"""The exported tables: their columns, version and layout (docs/export.md).

Layout under the export root (a folder or s3://bucket/prefix; by default ``exports/parquet``
in the run's output store), Hive-style partitions by policy version and run::

    <root>/certificates/policy=<name>@<version>/run=<run_id>/part-00000.parquet
    <root>/decisions/policy=<name>@<version>/run=<run_id>/part-00000.parquet
    <root>/manifests/<run_id>.json      what was written: format, files, rows, sha256

A reader that knows the partitions (DuckDB's ``hive_partitioning``) gets ``policy`` and
``run`` columns from the folder names; every file also carries ``run_id`` and ``policy_ref``
itself. Columns are only ever added within a format version; a change of meaning is a new
version (``EXPORT_FORMAT``), written under ``<root>`` beside the old one's manifests.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

EXPORT_FORMAT = 1
TABLES = ("certificates", "decisions")

# (column, arrow type name, nullable, what it is)
CERTIFICATE_COLUMNS: list[tuple[str, str, str]] = [
    ("run_id", "string", "the run"),
    ("policy_ref", "string", "the run's policy version, name@version"),
    ("doc_id", "string", "the document"),
    ("claim_id", "string", "the claim's id (JSON text when it is not a string)"),
    ("line", "int64", "the claim's line in claims/<doc_id>.jsonl"),
    ("verdict", "string", "grounded, grounded_loose, stitched, unlocated, degenerate"),
    ("tier", "string", "the tightest tier it was found at (null: not found)"),
    ("grounded", "bool", "accepted under the policy"),
    ("tier_sound", "bool", "the tier is sound (not the skeleton)"),
    ("scope", "string", "span (checked at the claim's offsets) or document"),
    ("start", "int64", "code-point offset of the span in the document (null: not found)"),
    ("end", "int64", "end offset (exclusive)"),
    ("repair_action", "string", "the repair cascade's action, when the policy repairs"),
    ("policy_fingerprint", "string", "the verification policy's fingerprint"),
    ("producer", "string", "the claim record's producer member, else the corpus's declared one"),
    ("label", "bool", "the gold label (true: genuine quotation), when one exists"),
    ("receipt", "string", "the receipt's key in the output store"),
]
DECISION_COLUMNS: list[tuple[str, str, str]] = [
    ("run_id", "string", "the run"),
    ("policy_ref", "string", "the run's policy version, name@version"),
    ("doc_id", "string", "the document"),
    ("candidate_id", "string", "the candidate's id (JSON text when it is not a string)"),
    ("field", "string", "the schema field"),
    ("key", "string", "the candidate's key (JSON text when it is not a string)"),
    ("value", "string", "the value as given (JSON text when it is not a string)"),
    ("unit", "string", "the unit"),
    ("outcome", "string", "admitted, needs_verification, rejected"),
    ("codes", "list<string>", "the decision's reason codes, in the receipt's order"),
    ("evidence_start", "int64", "code-point offset of the first evidence span"),
    ("evidence_end", "int64", "its end offset (exclusive)"),
    ("evidence_spans", "int64", "how many evidence spans the decision cites"),
    ("policy_fingerprint", "string", "the admission policy's fingerprint"),
    ("producer", "string", "the candidate's producer member, else the corpus's declared one"),
    ("label", "bool", "the gold label (true: the right value), when one exists"),
    ("receipt", "string", "the receipt's key in the output store"),
]
COLUMNS = {"certificates": CERTIFICATE_COLUMNS, "decisions": DECISION_COLUMNS}


def arrow_schema(table: str) -> Any:
    """The pyarrow schema of a table (its version in the schema's metadata)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "list<string>": pa.list_(pa.string()),
    }
    fields = [
        pa.field(name, types[kind], metadata={"doc": doc}) for name, kind, doc in COLUMNS[table]
    ]
    meta = {"groundswell.export.format": str(EXPORT_FORMAT), "groundswell.table": table}
    return pa.schema(fields, metadata=meta)


def partition(policy_ref: str, run_id: str) -> str:
    return f"policy={policy_ref}/run={run_id}"


def part_key(table: str, policy_ref: str, run_id: str, part: int) -> str:
    return f"{table}/{partition(policy_ref, run_id)}/part-{part:05d}.parquet"


def manifest_key(run_id: str) -> str:
    return f"manifests/{run_id}.json"


class ExportFile(BaseModel):
    table: str
    key: str
    rows: int
    bytes: int
    sha256: str


class ExportManifest(BaseModel):
    format: int = EXPORT_FORMAT
    run_id: str
    policy_ref: str
    root: str
    rows: dict[str, int]
    files: list[ExportFile]
    units: int
    written_at: str
