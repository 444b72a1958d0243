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


REVIEWERS = ("alice", "bob", "lead")


def _record(task_key: str, reviewer: str, verdict: str, rng: Any, **members: Any) -> dict:
    return {
        "format": "answer@1", "task": task_key, "reviewer": reviewer, "verdict": verdict,
        "decision": None, "candidate": None, "codes_kept": [], "statements": None,
        "nodes": None, "reason_seen": rng.random() < 0.5, "keys": rng.choice([1, 1, 2, 5]),
        "ms": rng.randrange(200, 9000), "time": "2026-11-30T12:00:00Z", **members,
    }  # fmt: skip


def _correction(packet: ReviewPacket, task: dict, reviewer: str, n: int, rng: Any) -> dict | None:
    """A reviewer's candidate for the task's slot: a copy of one of its candidates (the same
    value, a changed value or unit, or no key), proposed by the person."""
    from groundswell.shared.admit import digest

    decisions = [packet.receipt["decisions"][i] for i in task["slot"]["decisions"]]
    if not decisions:
        return None
    wanted = rng.choice(decisions)["candidate_sha256"]
    found = [c for c in packet.candidates if digest("candidate", c) == wanted]
    if not found or not isinstance(found[0], dict):
        return None
    candidate = {**found[0], "id": f"fix-{reviewer}-{n}", "proposer": f"person:{reviewer}"}
    if packet.parsed_schema.fields[task["slot"]["field"]].keys is None:
        candidate.pop("key", None)  # a key for a field without keys breaks the task
    change = rng.random()
    if change < 0.25 and isinstance(candidate.get("value"), str):
        candidate["value"] = candidate["value"] + "1"
    elif change < 0.35:
        candidate["unit"] = "EUR"
    return candidate


def answer_logs(
    packet: ReviewPacket, tasks: list[tuple[str, dict]], rng: Any, share: float = 0.7
) -> dict[str, list[dict]]:
    """Answers to a share of the tasks by one to three reviewers: every verdict, reviewers who
    agree and who disagree, second answers (the latest counts), corrections that the gate
    passes, flags or rejects."""
    logs: dict[str, list[dict]] = {}
    n = 0
    for key, task in tasks:
        if rng.random() > share:
            continue
        choices = [c["decision"] for c in task["choices"]]
        for reviewer in rng.sample(REVIEWERS, rng.choice([1, 1, 2, 3])):
            for _ in range(rng.choice([1, 1, 1, 2])):
                n += 1
                verdicts = ["not_in_document", "unsure", "correct", "adjust_span"]
                verdicts += ["choose"] * 3 if choices else []
                verdicts += ["confirm"] * 3 if len(choices) == 1 else []
                verdict = rng.choice(verdicts)
                members: dict[str, Any] = {}
                if verdict == "choose":
                    members["decision"] = rng.choice(choices)
                if verdict in ("correct", "adjust_span"):
                    candidate = _correction(packet, task, reviewer, n, rng)
                    if candidate is None:
                        verdict = "not_in_document"
                    else:
                        members["candidate"] = candidate
                        codes = task["codes"]
                        members["codes_kept"] = rng.sample(codes, rng.randrange(len(codes) + 1))
                logs.setdefault(reviewer, []).append(_record(key, reviewer, verdict, rng,
                                                             **members))  # fmt: skip
    return logs
