"""Where a run's files live in the output store (docs/run-bookkeeping.md has the why).

::

    runs/<run_id>/run.json                  the run record (written at submit and when it ends)
    runs/<run_id>/plan/<step>.json          one planning step: its batches, the listing cursor
    runs/<run_id>/segments/<nnnnnn>/<batch>.json   one batch's results: rows and summed counters
    runs/<run_id>/finalize/...              finalize's checkpoint and sorted runs (temporary)
    runs/<run_id>/index/manifest.json       the index: pieces, unit count, Merkle root
    runs/<run_id>/index/<piece>.jsonl       index rows sorted by (doc_id, kind)
    runs/<run_id>/index/highlights.json     the documents a person should see first
    runs/<run_id>/summary.json              the summary
    runs/<run_id>/diffs/<run_b>/...         the diff against another run, once asked for
    catalog/runs/<newest first>-<id>.json   one small entry per run, listed newest first
    catalog/active/<run_id>.json            present while a run is unfinished
"""

from __future__ import annotations

BATCH_DIGITS = 10
STEP_DIGITS = 8


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}/"


def run_json(run_id: str) -> str:
    return f"runs/{run_id}/run.json"


def changed_key(run_id: str) -> str:
    """The documents a ``run --changed`` run names (a sorted JSON list), kept beside the run
    rather than on its record, so no record in Redis grows with the list."""
    return f"{run_prefix(run_id)}changed.json"


def summary_key(run_id: str) -> str:
    return f"runs/{run_id}/summary.json"


def plan_prefix(run_id: str) -> str:
    return f"runs/{run_id}/plan/"


def plan_key(run_id: str, step: int) -> str:
    return f"runs/{run_id}/plan/{step:0{STEP_DIGITS}d}.json"


def segment_prefix(run_id: str) -> str:
    return f"runs/{run_id}/segments/"


def segment_key(run_id: str, batch: str) -> str:
    """Ten thousand top-level batches a folder (the id's leading digits), in batch order."""
    return f"runs/{run_id}/segments/{batch[:6]}/{batch}.json"


def batch_of(key: str) -> str:
    """The batch id of a segment key."""
    return key.rsplit("/", 1)[1].removesuffix(".json")


def batch_id(seq: int) -> str:
    """Top-level batches are numbered in planning order; children are ``<parent>.<0|1>``.

    Fixed width, so no id is a prefix of another and a batch's descendants list right
    before it (``12.0`` < ``12.1`` < ``12.json``): segment listings group by top-level id.
    """
    return f"{seq:0{BATCH_DIGITS}d}"


def finalize_prefix(run_id: str) -> str:
    return f"runs/{run_id}/finalize/"


def finalize_state_key(run_id: str) -> str:
    return f"runs/{run_id}/finalize/state.json"


def sorted_run_key(run_id: str, level: int, run: int, chunk: int) -> str:
    return f"runs/{run_id}/finalize/L{level}/{run:06d}-{chunk:06d}.jsonl"


def index_prefix(run_id: str) -> str:
    return f"runs/{run_id}/index/"


def manifest_key(run_id: str) -> str:
    return f"runs/{run_id}/index/manifest.json"


def piece_key(run_id: str, piece: int) -> str:
    return f"runs/{run_id}/index/{piece:06d}.jsonl"


def highlights_key(run_id: str) -> str:
    return f"runs/{run_id}/index/highlights.json"


def diff_prefix(run_a: str, run_b: str) -> str:
    return f"runs/{run_a}/diffs/{run_b}/"


CATALOG_RUNS = "catalog/runs/"
CATALOG_ACTIVE = "catalog/active/"

_INVERT = str.maketrans("0123456789", "9876543210")


def catalog_key(run_id: str, created_at: str) -> str:
    """Keys list oldest first; inverting the digits of the creation time lists the newest
    first (``created_at`` is ISO 8601 with microseconds, so runs of one second still sort)."""
    digits = "".join(ch for ch in created_at if ch.isdigit()).ljust(20, "0")
    return f"{CATALOG_RUNS}{digits.translate(_INVERT)}-{run_id}.json"


def active_key(run_id: str) -> str:
    return f"{CATALOG_ACTIVE}{run_id}.json"


def run_id_of_catalog_key(key: str) -> str:
    return key.rsplit("/", 1)[1].removesuffix(".json").split("-", 1)[1]
