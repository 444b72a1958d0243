"""One groundgate store (the oracle) and the packets every review test feeds to both tools."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groundswell.shared.review.packets import ReviewPacket
from tests.shared.review.oracle import Oracle, labelled_packets, vector_packets

LABELLED_DOCS = 4


@dataclass
class Case:
    """A packet both tools hold: its groundgate key and loaded packet, and ours."""

    name: str
    packet: dict[str, Any]
    key: str
    theirs: Any  # groundgate.store.packets.Packet, its receipt re-derived
    schema: Any  # groundgate's Schema of it
    ours: ReviewPacket


@pytest.fixture(scope="session")
def oracle(tmp_path_factory) -> Iterator[Oracle]:
    found = Oracle(tmp_path_factory.mktemp("groundgate-store"))
    yield found
    found.close()


@pytest.fixture(scope="session")
def cases(oracle: Oracle) -> list[Case]:
    from groundgate.review.tasks import checked_packet

    named = [(f"vector {p['name']}", p) for p in vector_packets()]
    named += [(f"labelled {p['document_id']} #{n}", p) for n, p in
              enumerate(labelled_packets(LABELLED_DOCS))]  # fmt: skip
    out = []
    for name, packet in named:
        key = oracle.admit(packet)
        if key is None:  # groundgate's store refuses it (5.0 in an input); nothing to compare
            continue
        theirs, schema, _, problems = checked_packet(oracle.store, key)
        assert not problems, (name, problems)
        out.append(Case(name, packet, key, theirs, schema, ReviewPacket.admitted(packet)))
    assert len(out) > 250
    return out
