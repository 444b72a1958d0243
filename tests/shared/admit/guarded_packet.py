"""A packet of the labelled set (bench/escapes_data.py) that groundgate's admission admits and
the guarded policy sends to review with VALUE_NOT_IN_COLUMN: a value from the neighbouring
column of a real filing's table (family ``other_year``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from groundswell.shared.admit import admit_packet
from groundswell.shared.policies import resolve_policy

CODE = "VALUE_NOT_IN_COLUMN"


@lru_cache(maxsize=1)
def escaping_packet() -> dict[str, Any]:
    """The first such packet of the set (as a conformance-vector-shaped packet), whose one
    candidate is labelled wrong."""
    from bench.escapes_data import labelled_packets

    guarded = resolve_policy("guarded")
    for p in labelled_packets(limit_docs=40):
        if p.family != "other_year" or len(p.candidates) != 1:
            continue
        packet = {
            "document": p.document,
            "document_id": p.doc_id,
            "schema": p.schema,
            "candidates": p.candidates,
        }
        plain = admit_packet(packet)["decisions"][0]
        ruled = admit_packet(packet, guarded)["decisions"][0]
        if plain["outcome"] == "admitted" and CODE in ruled["codes"]:
            assert p.labels == {p.candidates[0]["id"]: False}
            return packet
    raise AssertionError(f"no other_year packet that default admits and guarded flags {CODE}")
