"""The resolution of a packet from its reviewers' answers, as ``groundgate review resolve`` 0.11
makes it.

Each reviewer's latest answer to a task counts. An answer **targets** a value: a choice of the
task (``confirm`` or ``choose``), ``not_in_document``, or a corrected value (``correct`` and
``adjust_span`` carry a candidate, which is admitted again with the packet's other candidates:
it counts only if the gate passes it and every flag it raises is one the reviewer saw and kept).
``unsure`` targets nothing. A slot then settles:

- with no task: ``admitted`` (its first passed decision) or ``rejected``;
- an audit whose every answer keeps the admitted value: ``admitted``;
- no target yet, or one target with fewer reviewers than the policy's ``agree``: ``open``;
- two or more targets: the policy's ``leads`` settle it if they agree, else ``disputed``;
- otherwise the target: ``corrected``, ``not_in_document``, ``admitted`` (audit), or
  ``confirmed`` / ``chosen``.

An answer that breaks its task stops the resolution with ``AnswerError`` naming the reviewer,
the record and the member; every record is checked before any correction is admitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.admit import PacketError, digest
from groundswell.shared.admit.engine import INFO_ORDER
from groundswell.shared.canonical import CanonicalError, canonical_text
from groundswell.shared.review.formats import (
    ANSWER_MEMBERS,
    CHAIN,
    check_review_policy,
    json_key,
)
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.tasks import Slot, TaskMaker, task_key

CORRECTIONS = frozenset({"correct", "adjust_span"})
VERDICTS = frozenset({"confirm", "choose", "not_in_document", "unsure"}) | CORRECTIONS
RECORD_MEMBERS = ANSWER_MEMBERS | frozenset(CHAIN)
# Every slot a policy can select, so each slot has its one task whatever the policy.
_EVERY_SLOT = {
    "format": "review-policy@1",
    "audit": {"rate": "1", "seed": ""},
    "agree": 1,
    "leads": [],
    "rejected": True,
}


class AnswerError(ValueError):
    """An answer that breaks its task: ``reviewer``, ``sequence`` (the record) and ``member``."""

    def __init__(self, reviewer: str, sequence: object, member: str, message: str) -> None:
        self.reviewer, self.sequence, self.member = reviewer, sequence, member
        self.reason = message
        shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in f"{reviewer}")
        super().__init__(f"answer {sequence!r} of reviewer {shown[:200]}: {member}: {message}")


@dataclass(frozen=True)
class Correction:
    receipt_key: str
    receipt: dict[str, Any]
    decision: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """What one record counts as: its target (None: it settles nothing), and whether an audit
    answer keeps the admitted value."""

    reviewer: str
    verdict: str
    target: tuple[Any, ...] | None
    keeps: bool
    decision: int | None = None
    correction: Correction | None = None


@dataclass(frozen=True)
class Seen:
    """One checked record, for the measures."""

    reviewer: str
    record: Mapping[str, Any]
    task_key: str
    task: dict[str, Any]
    answer: Answer


@dataclass
class Resolved:
    resolution: dict[str, Any]
    tasks: dict[str, dict[str, Any]]  # each task the resolution names, by key
    corrections: list[Correction] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)


@dataclass(frozen=True)
class _Pending:
    reviewer: str
    record: Mapping[str, Any]
    task_key: str
    slot: Slot
    task: dict[str, Any]
    answer: Answer | None  # None: a correction, read after every record is checked


class Resolver:
    """Resolves one packet; its tasks are made once for any number of policies and logs."""

    def __init__(self, packet: ReviewPacket) -> None:
        self.packet = packet
        self.maker = TaskMaker(packet)
        self.decisions = packet.receipt["decisions"]
        self.by_slot: dict[tuple[str, str | None, tuple[int, ...]], tuple[str, dict]] = {}
        self.by_key: dict[str, tuple[Slot, dict[str, Any]]] = {}
        for slot, task in self.maker.slot_tasks(_EVERY_SLOT):
            k = task_key(task)
            self.by_slot[slot.ident()] = (k, task)
            self.by_key[k] = (slot, task)
        self.ids = [c.get("id") for c in packet.candidates if isinstance(c, Mapping)]
        self._corrections: dict[tuple[str, str], Correction] = {}

    def made(self, policy: Mapping[str, Any]) -> set[str]:
        """The keys of the tasks the policy selects."""
        return {self.by_slot[s.ident()][0] for s in self.maker.chosen_slots(policy)}

    def resolve(
        self, policy: Mapping[str, Any], logs: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Resolved:
        """The ``resolution@1`` of the packet under ``policy`` from the answer logs (reviewer
        name -> log records, in order)."""
        policy = check_review_policy(policy)
        made = self.made(policy)
        pending = [
            self._check(name, record) for name in sorted(logs) for record in logs[name]
        ]  # every record is checked before the first correction is admitted
        heads = [
            {"reviewer": name, "head": logs[name][-1]["entry_sha256"]}
            for name in sorted(logs)
            if logs[name]
        ]
        latest: dict[str, dict[str, Answer]] = {}
        out = Resolved({}, {})
        for p in pending:
            answer = p.answer or self._read(p)
            latest.setdefault(p.task_key, {})[p.reviewer] = answer
            out.seen.append(Seen(p.reviewer, p.record, p.task_key, p.task, answer))
        slots = []
        for slot in self.maker.slots:
            found = self.by_slot.get(slot.ident())
            key = task = None
            if found is not None and (found[0] in made or found[0] in latest):
                key, task = found
                out.tasks[key] = task
            status, source = _settle(slot, self.decisions, task, latest.get(key or "", {}), policy)
            receipt = self.packet.receipt_key
            value: dict[str, Any] = {"value": None, "unit": None, "evidence": None}
            if isinstance(source, Correction):
                value, receipt = _value(source.decision), source.receipt_key
            elif source is not None:
                value = _value(self.decisions[source])
            slots.append(
                {
                    "field": slot.field,
                    "key": slot.key,
                    "decisions": list(slot.decisions),
                    "status": status,
                    **value,
                    "receipt": receipt,
                    "task": key,
                    "statements": None,
                    "nodes": None,
                }
            )
        out.resolution = {
            "format": "resolution@1",
            "packet": self.packet.key,
            "policy": json_key("review-policy@1", policy),
            "answers": heads,
            "slots": slots,
        }
        used = {
            a.correction.receipt_key: a.correction
            for answers in latest.values()
            for a in answers.values()
            if a.correction is not None
        }
        out.corrections = list(used.values())
        return out

    def _check(self, reviewer: str, record: Mapping[str, Any]) -> _Pending:
        """Check one record against its task; read it unless it is a correction."""
        sequence = record.get("sequence") if isinstance(record, Mapping) else None

        def fail(member: str, message: str) -> AnswerError:
            return AnswerError(reviewer, sequence, member, message)

        if not isinstance(record, Mapping):
            raise fail("record", "not a JSON object")
        if set(record) != RECORD_MEMBERS:
            missing = sorted(RECORD_MEMBERS - set(record))
            extra = sorted(set(record) - RECORD_MEMBERS)
            raise fail("record", f"not the members of answer@1: missing {missing}, unknown {extra}")
        if record["format"] != "answer@1":
            raise fail("format", "not answer@1")
        if record["reviewer"] != reviewer:
            raise fail("reviewer", "another reviewer than the log's")
        tk = record["task"]
        if not isinstance(tk, str) or tk not in self.by_key:
            raise fail("task", "not the key of a task of a slot of this packet")
        slot, task = self.by_key[tk]
        verdict = record["verdict"]
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            raise fail("verdict", f"one of {', '.join(sorted(VERDICTS))}")
        if record["statements"] is not None or record["nodes"] is not None:
            raise fail("statements", "statements and nodes are null in format 1")
        kept = record["codes_kept"]
        if not isinstance(kept, list) or not all(isinstance(c, str) for c in kept):
            raise fail("codes_kept", "not a list of codes")
        if len(set(kept)) != len(kept):
            raise fail("codes_kept", "a code is named twice")
        if kept and verdict not in CORRECTIONS:
            raise fail("codes_kept", "only a correction keeps codes")
        for name in ("keys", "ms"):
            if type(record[name]) is not int or record[name] < 0:
                raise fail(name, "not an integer of 0 or more")
        if not isinstance(record["reason_seen"], bool):
            raise fail("reason_seen", "not true or false")
        if not isinstance(record["time"], str):
            raise fail("time", "not a string")
        choices = [c["decision"] for c in task["choices"]]
        decision = record["decision"]
        if verdict == "choose":
            if type(decision) is not int or decision not in choices:
                raise fail("decision", f"not a choice of the task ({choices})")
        elif decision is not None:
            raise fail("decision", f"a {verdict} answer has none")
        if verdict not in CORRECTIONS and record["candidate"] is not None:
            raise fail("candidate", f"a {verdict} answer has none")

        def pending(answer: Answer | None) -> _Pending:
            return _Pending(reviewer, record, tk, slot, task, answer)

        if verdict == "unsure":
            return pending(Answer(reviewer, verdict, None, True))
        if verdict == "not_in_document":
            return pending(Answer(reviewer, verdict, ("not_in_document",), False))
        if verdict == "confirm" and len(choices) != 1:
            raise fail("verdict", "confirm needs a task with exactly one choice")
        if verdict in ("confirm", "choose"):
            chosen = choices[0] if verdict == "confirm" else decision
            one = len(choices) == 1
            return pending(Answer(reviewer, "choose", ("choose", chosen), one, chosen))
        self._check_candidate(record["candidate"], slot, fail)
        return pending(None)

    def _check_candidate(self, candidate: object, slot: Slot, fail: Any) -> None:
        if not isinstance(candidate, Mapping):
            raise fail("candidate", "a correction needs a candidate object")
        cid = candidate.get("id")
        if not isinstance(cid, str) or not cid.strip():
            raise fail("candidate.id", "not a string")
        if cid in self.ids:
            raise fail("candidate.id", "the id of a candidate of the packet")
        proposer = candidate.get("proposer")
        if not isinstance(proposer, str) or not proposer.startswith("person:"):
            raise fail("candidate.proposer", "does not start with person:")
        spec = self.maker.schema.fields[slot.field]
        if (
            candidate.get("field") != slot.field
            or _slot_key(candidate.get("key"), spec) != slot.key
        ):
            raise fail("candidate.field", "another field or key than the slot's")
        if spec.keys is None and candidate.get("key") is not None:
            raise fail("candidate.key", "the field has no keys")
        try:
            canonical_text(candidate)
        except (CanonicalError, RecursionError) as exc:
            raise fail("candidate", f"no canonical JSON form: {exc}") from exc

    def _read(self, p: _Pending) -> Answer:
        """Admit a checked correction again and read what it counts as."""
        record, slot = p.record, p.slot
        verdict = record["verdict"]
        candidate = record["candidate"]

        def fail(member: str, message: str) -> AnswerError:
            return AnswerError(p.reviewer, record.get("sequence"), member, message)

        memo = (p.task_key, canonical_text(candidate))
        if memo not in self._corrections:
            self._corrections[memo] = self._admit_correction(slot, candidate, fail)
        correction = self._corrections[memo]
        found = correction.decision
        spec = self.maker.schema.fields[slot.field]
        if found["outcome"] != "rejected" and (
            found.get("field") != slot.field or _slot_key(found.get("key"), spec) != slot.key
        ):
            raise fail("candidate", "the gate gives it another field or key than the slot's")
        counts = found["outcome"] == "admitted" or (
            found["outcome"] != "rejected"
            and set(found["codes"]) - set(INFO_ORDER) <= set(record["codes_kept"])
        )
        target: tuple[Any, ...] | None = None
        if counts:
            if p.task["item"] == "number":
                target = (verdict, found["value"], found.get("unit"), slot.key)
            else:
                span = found.get("evidence") or {}
                target = (verdict, found.get("ref"), span.get("start"), span.get("end"))
        return Answer(p.reviewer, verdict, target, False, None, correction)

    def _admit_correction(self, slot: Slot, candidate: Mapping[str, Any], fail: Any) -> Correction:
        """Admit the packet's candidates without the slot's, with the reviewer's, and the
        judgments without those of the removed candidates."""
        removed = {self.decisions[i]["candidate_sha256"] for i in slot.decisions}
        kept, gone = [], set()
        for c in self.packet.candidates:
            if digest("candidate", c) not in removed:
                kept.append(c)
            elif isinstance(c, Mapping) and type(c.get("id")) in (str, int):
                gone.add(c["id"])
        judgments = self.packet.judgments
        if judgments is not None:
            judgments = [
                j
                for j in judgments
                if not (
                    isinstance(j, Mapping)
                    and type(j.get("candidate_id")) in (str, int)
                    and j["candidate_id"] in gone
                )
            ]
        try:
            receipt = self.packet.admit_again([*kept, dict(candidate)], judgments)
        except PacketError as exc:
            raise fail("candidate", f"the correction's admission is invalid: {exc}") from exc
        mine = [d for d in receipt["decisions"] if d["candidate_id"] == candidate["id"]]
        if len(mine) != 1:
            raise fail("candidate", "the correction receipt has no one decision for it")
        return Correction(json_key("receipt@1", receipt), receipt, mine[0])


def _slot_key(key: object, spec: Any) -> str | None:
    return key if isinstance(key, str) and spec.keys is not None else None


def _value(d: Mapping[str, Any]) -> dict[str, Any]:
    evidence = d.get("evidence")
    span = None if evidence is None else {"start": evidence["start"], "end": evidence["end"]}
    return {"value": d["value"], "unit": d.get("unit"), "evidence": span}


def _settle(
    slot: Slot,
    decisions: Sequence[Mapping[str, Any]],
    task: Mapping[str, Any] | None,
    answers: Mapping[str, Answer],
    policy: Mapping[str, Any],
) -> tuple[str, int | Correction | None]:
    """The slot's status and where its value comes from (a decision, a correction, none)."""
    passed = [i for i in slot.decisions if decisions[i]["outcome"] != "rejected"]
    if task is None:
        return ("admitted", passed[0]) if passed else ("rejected", None)
    audit = task["mode"] == "audit"
    if audit and all(a.keeps for a in answers.values()):
        return "admitted", passed[0]
    counted = {r: a for r, a in answers.items() if a.target is not None}
    targets = {a.target for a in counted.values()}
    if not targets:
        return "open", None
    if len(targets) > 1:
        leads = {counted[r].target for r in policy["leads"] if r in counted}
        if len(leads) != 1:
            return "disputed", None
        (target,) = leads
    elif len(counted) < policy["agree"]:
        return "open", None
    else:
        (target,) = targets
    first = next(a for _, a in sorted(counted.items()) if a.target == target)
    if first.verdict in CORRECTIONS:
        return "corrected", first.correction
    if first.verdict == "not_in_document":
        return "not_in_document", None
    if audit:
        return "admitted", first.decision
    return ("confirmed" if len(task["choices"]) == 1 else "chosen"), first.decision


def resolve(
    packet: ReviewPacket,
    policy: Mapping[str, Any],
    logs: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Resolved:
    """The resolution of ``packet`` under ``policy`` from the answer logs."""
    return Resolver(packet).resolve(policy, logs)
