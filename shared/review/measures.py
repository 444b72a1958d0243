"""The measures of the review step, as ``groundgate review measures`` 0.11 counts them.

Per item kind (number, text, span), and per field within a kind, over each reviewer's latest
answer to each task:

- ``answers`` and ``ms_median`` (the median time on an item);
- ``one_key``: [answers given with one key press, answers];
- ``agreement``: [pairs that agree, pairs]; a pair is an answer and another reviewer's
  **blind label** (an answer to an audit task given without opening the reason) on the same
  task, two blind labels making one pair; an answer that targets nothing is in no pair;
- ``escapes``: [audit slots that resolve to another value than the admitted one, or to
  ``not_in_document``; audit slots an answer settled]: the wrong values admission let through,
  as the audit finds them;
- for text and span items, ``span_moved`` ([``adjust_span`` answers, answers]) and
  ``span_move_median`` (characters the two ends moved from the nearest choice).

A packet whose answers break their tasks is left out and named in ``skipped``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.admit import PacketError
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.resolve import Resolver, Seen

SPAN_ITEMS = frozenset({"text", "span"})
SETTLED = frozenset({"admitted", "confirmed", "chosen", "corrected", "not_in_document"})


def _median(values: Sequence[int]) -> int | float | None:
    if not values:
        return None
    m = statistics.median(values)
    return int(m) if m == int(m) else m


@dataclass
class Tally:
    ms: list[int] = field(default_factory=list)
    one_key: int = 0
    agree: int = 0
    pairs: int = 0
    escapes: int = 0
    audited: int = 0
    moved: int = 0
    moves: list[int] = field(default_factory=list)

    def as_dict(self, item: str) -> dict[str, Any]:
        n = len(self.ms)
        out: dict[str, Any] = {
            "answers": n,
            "ms_median": _median(self.ms),
            "one_key": [self.one_key, n],
            "agreement": [self.agree, self.pairs],
            "escapes": [self.escapes, self.audited],
        }
        if item in SPAN_ITEMS:
            out["span_moved"] = [self.moved, n]
            out["span_move_median"] = _median(self.moves)
        return out


class Measures:
    """Tallies over many packets; ``add`` one resolved packet at a time."""

    def __init__(self) -> None:
        self.kinds: dict[str, Tally] = {}
        self.fields: dict[str, dict[str, Tally]] = {}
        self.packets = 0
        self.skipped: list[str] = []

    def _tallies(self, item: str, name: str) -> tuple[Tally, Tally]:
        kind = self.kinds.setdefault(item, Tally())
        return kind, self.fields.setdefault(item, {}).setdefault(name, Tally())

    def add(
        self,
        packet: ReviewPacket,
        policy: Mapping[str, Any],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        resolver: Resolver | None = None,
    ) -> Exception | None:
        """Resolve one packet and count its answers; a packet whose answers break their tasks
        is left out, named in ``skipped``, and its error returned."""
        try:
            resolved = (resolver or Resolver(packet)).resolve(policy, logs)
        except (PacketError, ValueError) as exc:
            self.skipped.append(f"packet {packet.key}: {exc}")
            return exc
        self.packets += 1
        latest: dict[str, dict[str, Seen]] = {}
        for s in resolved.seen:
            latest.setdefault(s.task_key, {})[s.reviewer] = s
        for answers in latest.values():
            self._count_answers(answers)
        decisions = packet.receipt["decisions"]
        for slot in resolved.resolution["slots"]:
            answers = latest.get(slot["task"] or "", {})
            if not answers:
                continue
            task = next(iter(answers.values())).task
            if task["mode"] != "audit" or slot["status"] not in SETTLED:
                continue
            if all(s.answer.target is None for s in answers.values()):
                continue  # only unsure answers: nobody checked the value
            admitted = decisions[task["choices"][0]["decision"]]
            escaped = slot["status"] == "not_in_document" or (slot["value"], slot["unit"]) != (
                admitted["value"],
                admitted.get("unit"),
            )
            for t in self._tallies(task["item"], slot["field"]):
                t.audited += 1
                t.escapes += escaped
        return None

    def _count_answers(self, answers: Mapping[str, Seen]) -> None:
        blind = [
            s
            for s in answers.values()
            if s.task["mode"] == "audit"
            and s.record["reason_seen"] is False
            and s.answer.target is not None
        ]
        for s in answers.values():
            item = s.task["item"]
            for t in self._tallies(item, s.task["slot"]["field"]):
                t.ms.append(s.record["ms"])
                t.one_key += s.record["keys"] == 1
                if s.answer.target is not None:
                    for b in blind:  # two blind labels make one pair
                        if b.reviewer != s.reviewer and (s not in blind or s.reviewer < b.reviewer):
                            t.pairs += 1
                            t.agree += b.answer.target == s.answer.target
                if item in SPAN_ITEMS and s.answer.verdict == "adjust_span":
                    t.moved += 1
                    move = _span_move(s)
                    if move is not None:
                        t.moves.append(move)

    def as_dict(self) -> dict[str, Any]:
        kinds = {}
        for item in sorted(self.kinds):
            found = self.kinds[item].as_dict(item)
            found["fields"] = {f: t.as_dict(item) for f, t in sorted(self.fields[item].items())}
            kinds[item] = found
        return {
            "kinds": kinds,
            "packets": self.packets,
            "skipped": list(self.skipped),
            "other_split": 0,
            "no_split": 0,
        }


def _span_move(s: Seen) -> int | None:
    """Characters the two ends of a counted ``adjust_span`` answer moved from the nearest
    choice's span."""
    if s.answer.target is None:
        return None
    _, _, start, end = s.answer.target
    if type(start) is not int or type(end) is not int:
        return None
    moves = [
        abs(start - c["evidence"]["start"]) + abs(end - c["evidence"]["end"])
        for c in s.task["choices"]
        if isinstance(c.get("evidence"), Mapping)
    ]
    return min(moves) if moves else None


def measure(
    packets: Iterable[tuple[ReviewPacket, Mapping[str, Sequence[Mapping[str, Any]]]]],
    policy: Mapping[str, Any],
) -> dict[str, Any]:
    """The measures over (packet, answer logs) pairs, in packet key order as groundgate
    counts them; a packet nobody answered is not measured."""
    tallies = Measures()
    for packet, logs in sorted(packets, key=lambda pair: pair[0].key):
        answered = {name: records for name, records in logs.items() if records}
        if answered:
            tallies.add(packet, policy, answered)
    return tallies.as_dict()


def lines(measured: Mapping[str, Any]) -> list[str]:
    """The measures in words: one line per kind, then one per field of it."""

    def ratio(pair: Sequence[int]) -> str:
        return f"{pair[0]} of {pair[1]}"

    def line(name: str, m: Mapping[str, Any]) -> str:
        ms = "none" if m["ms_median"] is None else f"{m['ms_median']} ms"
        parts = [
            f"answers {m['answers']}",
            f"median time {ms}",
            f"one key {ratio(m['one_key'])}",
            f"agreement with blind labels {ratio(m['agreement'])}",
            f"escapes {ratio(m['escapes'])} audit slots",
        ]
        if "span_moved" in m:
            move = m["span_move_median"]
            parts.append(f"span moved {ratio(m['span_moved'])}")
            parts.append("median move " + ("none" if move is None else f"{move} characters"))
        shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in name)
        return f"{shown}: " + ", ".join(parts)

    out = [f"packets: {measured['packets']}"]
    for item, m in measured["kinds"].items():
        out.append(line(item, m))
        out += ["  " + line(f"{item} {f}", fm) for f, fm in m["fields"].items()]
    return out
