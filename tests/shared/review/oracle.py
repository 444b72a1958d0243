"""groundgate 0.11.0's review step as a test oracle (a dev-only dependency), and the packets
the differential tests feed to both tools: groundgate's conformance vectors and packets of the
labelled set."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

from groundswell.shared.review.packets import ReviewPacket
from tests.shared.admit.conformance import load, vector_files

REPO = Path(__file__).resolve().parents[3]

# Review policies the differential tests run: the default, audits at several rates and seeds,
# and rejected slots asked about.
POLICIES: list[dict[str, Any]] = [
    {"format": "review-policy@1", "audit": {"rate": "0", "seed": ""}, "agree": 1, "leads": [],
     "rejected": False},
    {"format": "review-policy@1", "audit": {"rate": "1", "seed": ""}, "agree": 1, "leads": [],
     "rejected": True},
    {"format": "review-policy@1", "audit": {"rate": "0.3", "seed": "s1"}, "agree": 2,
     "leads": ["lead"], "rejected": False},
    {"format": "review-policy@1", "audit": {"rate": "0.05", "seed": "x"}, "agree": 1,
     "leads": [], "rejected": True},
]  # fmt: skip


def vector_packets() -> list[dict[str, Any]]:
    """The conformance vectors that admit (an invalid packet has no receipt to review)."""
    from groundswell.shared.admit import PacketError

    out = []
    for path in vector_files():
        packet = load(path)
        try:
            ReviewPacket.admitted(packet)
        except PacketError:
            continue
        out.append(packet)
    return out


@cache
def labelled_packets(limit_docs: int = 20) -> list[dict[str, Any]]:
    sys.path.insert(0, str(REPO))
    from bench.escapes_data import labelled_packets as packets

    return [
        {"document": p.document, "schema": p.schema, "candidates": p.candidates,
         "document_id": p.doc_id}
        for p in packets(limit_docs=limit_docs)
    ]  # fmt: skip


class Oracle:
    """A groundgate store folder holding packets, answer logs and what groundgate makes."""

    def __init__(self, root: Path) -> None:
        from groundgate.store import FolderStore

        self.store = FolderStore(root)

    def admit(self, packet: dict[str, Any]) -> str | None:
        """The packet key, or None when groundgate's store refuses the packet (its inputs in
        canonical JSON give another receipt: 5.0 is stored as 5)."""
        from groundgate.pack import PacketError
        from groundgate.store.packets import admit_packet

        try:
            key, _ = admit_packet(
                self.store,
                packet["document"],
                packet["schema"],
                packet["candidates"],
                packet.get("policy"),
                packet.get("document_id"),
                packet.get("judgments"),
                references=packet.get("references"),
                document_source=packet.get("document_source"),
                packs=packet.get("packs") or (),
            )
        except PacketError as exc:
            assert "canonical JSON" in str(exc), exc
            return None
        return key

    def tasks(self, key: str, policy: dict[str, Any]) -> list[dict[str, Any]]:
        from groundgate.review.tasks import write_tasks

        written = write_tasks(self.store, key, policy)
        assert not written.problems, written.problems
        return [t for _, t in written.tasks]

    def answer(self, key: str, reviewer: str, record: dict[str, Any]) -> None:
        from groundgate.store import reviewer_key

        self.store.append(("answers", key, reviewer_key(reviewer)), record)

    def log(self, key: str, reviewer: str) -> list[dict[str, Any]]:
        from groundgate.store import reviewer_key

        return self.store.read(("answers", key, reviewer_key(reviewer)))

    def resolve(self, key: str, policy: dict[str, Any], reviewers: list[str]) -> Any:
        from groundgate.review.resolve import write_resolution

        return write_resolution(self.store, key, policy, reviewers)

    def measures(self, policy: dict[str, Any]) -> dict[str, Any]:
        from groundgate.review.measures import measures

        return measures(self.store, policy).to_dict()

    def close(self) -> None:
        self.store.close()
