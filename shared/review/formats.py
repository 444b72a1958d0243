"""The review formats of groundgate 0.11: store keys, review policies and answer logs.

A stored object is named by its key: ``sha256:`` and the SHA-256 of ``groundgate-object/1:``,
the kind (``task@1``...), a zero byte and the object's canonical JSON. Tasks and resolutions
name packets, receipts, policies and other tasks by these keys, so a task made here has the
key groundgate gives it, and the two tools can exchange tasks and answers.

An answer log is one reviewer's answers to the tasks of one packet, in order. Each record
carries ``sequence`` (1, 2, ...), ``previous`` (the ``entry_sha256`` of the record before,
or null) and ``entry_sha256`` (the key of the record without it, as kind
``answers-entry@1``): a log cannot lose or reorder a record unnoticed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from groundswell.shared.canonical import CanonicalError, canonical_json
from groundswell.shared.settings import check_review_policy as check_policy_format

OBJECT_PREFIX = b"groundgate-object/1:"
REVIEW_FORMATS = ("review-policy@1", "task@1", "answer@1", "resolution@1")
KEY_RE = re.compile(r"sha256:[0-9a-f]{64}")
TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z")
CHAIN = ("sequence", "previous", "entry_sha256")
ANSWER_MEMBERS = frozenset(
    {
        "format",
        "task",
        "reviewer",
        "verdict",
        "decision",
        "candidate",
        "codes_kept",
        "statements",
        "nodes",
        "reason_seen",
        "keys",
        "ms",
        "time",
    }
)

# No audit, one answer settles a slot, no lead, no task for a slot the gate rejected.
DEFAULT_REVIEW_POLICY: dict[str, Any] = {
    "format": "review-policy@1",
    "audit": {"rate": "0", "seed": ""},
    "agree": 1,
    "leads": [],
    "rejected": False,
}


class ReviewError(ValueError):
    """Review input that breaks its format; the message names the member."""


def object_key(kind: str, data: bytes) -> str:
    """The store key of ``data`` stored as ``kind``."""
    h = hashlib.sha256(OBJECT_PREFIX)
    h.update(kind.encode("ascii"))
    h.update(b"\0")
    h.update(data)
    return "sha256:" + h.hexdigest()


def json_key(kind: str, value: Any) -> str:
    """The store key of a JSON value stored as ``kind`` (its canonical JSON)."""
    return object_key(kind, canonical_json(value))


def reviewer_key(name: str) -> str:
    """The key an answer log is filed under: the reviewer's name as ``reviewer@1``."""
    return object_key("reviewer@1", name.encode("utf-8"))


def check_review_policy(policy: object) -> dict[str, Any]:
    """``policy`` if it is a ``review-policy@1`` object with every member; else ReviewError
    (the check itself is the settings', which hold one: GROUNDSWELL_REVIEW_POLICY)."""
    try:
        return check_policy_format(policy)
    except ValueError as exc:
        raise ReviewError(str(exc)) from None


def _entry_sha256(entry: Mapping[str, Any]) -> str:
    return json_key("answers-entry@1", entry)


def chain(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One reviewer's answers as the records of an answer log (adds the chain members)."""
    out: list[dict[str, Any]] = []
    previous = None
    for n, record in enumerate(records, 1):
        taken = [m for m in CHAIN if m in record]
        if taken:
            raise ReviewError(f"{', '.join(taken)}: set by the log, not by the answer")
        try:
            entry = {**record, "sequence": n, "previous": previous}
            previous = _entry_sha256(entry)
        except CanonicalError as exc:
            raise ReviewError(f"the answer has no canonical JSON form: {exc}") from exc
        out.append({**entry, "entry_sha256": previous})
    return out


def check_chain(records: list[Mapping[str, Any]]) -> None:
    """Raise ReviewError at the first record of a log that does not continue its chain."""
    previous = None
    for n, record in enumerate(records, 1):
        if any(m not in record for m in CHAIN):
            raise ReviewError(f"answer {n}: a log record has sequence, previous and entry_sha256")
        body = {m: v for m, v in record.items() if m != "entry_sha256"}
        if (
            type(record["sequence"]) is not int
            or record["sequence"] != n
            or record["previous"] != previous
            or record["entry_sha256"] != _entry_sha256(body)
        ):
            raise ReviewError(f"answer {n}: the record does not continue the log's chain")
        previous = record["entry_sha256"]
