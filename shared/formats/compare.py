"""Two producers' extractions of the same documents, side by side (``groundswell diff
--extractions CORPUS_A CORPUS_B``): which fields and values they disagree on.

Each corpus is a layout (what ``groundswell import`` writes, or written by hand). For each
document in both, the candidates are grouped by field and key, and each group's values are
compared as sets, numbers by value (``$1,496.5``, ``1496.50`` and ``1496.5`` are one value) and
text with case and runs of white space folded. A group is ``agree`` (the same values),
``differ`` (both give values, not the same), ``only_a`` or ``only_b``. The producers are named
from each corpus's ``import.json`` when it has one, else its ``corpus.yaml``, with the keys a
run's summary counts them under.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from typing import Any

from groundswell.shared.corpus import (
    CANDIDATES,
    InputFileError,
    candidates_key,
    doc_id_of,
    parse_candidates,
)
from groundswell.shared.producers import producer_key

_NUMBER = re.compile(r"^\(?[-+−]?[$€£¥]?\s*\d[\d,]*(\.\d+)?\s*%?\)?$")


def normalized(value: Any) -> str:
    """A value as compared: a number by its value, text folded."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    text = str(value).strip()
    if _NUMBER.match(text):
        negative = text.startswith("(") or text.lstrip("(").startswith(("-", "−"))
        digits = re.sub(r"[^\d.]", "", text)
        try:
            number = Decimal(digits).normalize()
        except InvalidOperation:
            return text
        return format(-number if negative else number, "f")
    return " ".join(text.split()).casefold()


def _groups(candidates: list[Any]) -> dict[tuple[str, str | None], set[str]]:
    out: dict[tuple[str, str | None], set[str]] = {}
    for c in candidates:
        if not isinstance(c, dict) or not isinstance(c.get("field"), str):
            continue
        key = c.get("key") if isinstance(c.get("key"), str) else None
        out.setdefault((c["field"], key), set()).add(normalized(c.get("value")))
    return out


def _ids(store: Any) -> set[str]:
    ids = set()
    for page in store.list_pages(CANDIDATES):
        for info in page:
            doc_id = doc_id_of(info.key, CANDIDATES)
            if doc_id is not None:
                ids.add(doc_id)
    return ids


def _producers(store: Any) -> list[dict[str, Any]]:
    """Who made a corpus's extractions: its import record's producers, else the producer its
    corpus.yaml declares (none: a corpus written by hand)."""
    from groundswell.shared.formats.corpus_file import declared_producer

    try:
        report = json.loads(store.get("import.json"))
    except Exception:  # no import record
        report = None
    producers = report.get("producers") if isinstance(report, dict) else None
    if isinstance(producers, list) and producers:
        return producers
    try:
        declared = declared_producer(store)
    except InputFileError:
        return []
    return [declared] if declared else []


def _keys(producers: list[dict[str, Any]]) -> list[str]:
    """The producers' keys, as a run's summary (``producers``) and metrics name them."""
    return [producer_key(p) for p in producers if isinstance(p, dict)]


def compare(store_a: Any, store_b: Any, limit: int = 50) -> dict[str, Any]:
    ids_a, ids_b = _ids(store_a), _ids(store_b)
    both = sorted(ids_a & ids_b)
    by_field: dict[str, Counter[str]] = {}
    differences: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    errors: list[str] = []
    for doc_id in both:
        groups = []
        for store in (store_a, store_b):
            try:
                cands, _ = parse_candidates(
                    store.get(candidates_key(doc_id)), candidates_key(doc_id)
                )
            except InputFileError as exc:
                errors.append(str(exc))
                cands = []
            groups.append(_groups(cands))
        a, b = groups
        for group in sorted(set(a) | set(b), key=lambda g: (g[0], g[1] or "")):
            va, vb = a.get(group), b.get(group)
            state = (
                "only_b"
                if va is None
                else "only_a"
                if vb is None
                else "agree"
                if va == vb
                else "differ"
            )
            by_field.setdefault(group[0], Counter())[state] += 1
            totals[state] += 1
            if state != "agree" and len(differences) < limit:
                differences.append(
                    {
                        "doc_id": doc_id,
                        "field": group[0],
                        "key": group[1],
                        "a": sorted(va or ()),
                        "b": sorted(vb or ()),
                        "state": state,
                    }
                )
    producers_a, producers_b = _producers(store_a), _producers(store_b)
    return {
        "producers_a": producers_a,
        "producers_b": producers_b,
        # The keys under which a run of each corpus counts them (``groundswell diff RUN_A
        # RUN_B`` compares those runs' rates by producer).
        "producer_keys_a": _keys(producers_a),
        "producer_keys_b": _keys(producers_b),
        "documents": len(both),
        "documents_only_a": len(ids_a - ids_b),
        "documents_only_b": len(ids_b - ids_a),
        "totals": {k: totals.get(k, 0) for k in ("agree", "differ", "only_a", "only_b")},
        "fields": {
            f: {k: c.get(k, 0) for k in ("agree", "differ", "only_a", "only_b")}
            for f, c in sorted(by_field.items())
        },
        "differences": differences,
        "differences_total": totals["differ"] + totals["only_a"] + totals["only_b"],
        "errors": errors,
    }
