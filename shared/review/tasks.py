"""The review tasks of a packet, as ``groundgate review tasks`` 0.11 makes them.

A **slot** is what one person decides: a field and a key (the key is null for a field without
keys), or, for a ``multiple`` field, one decision. A required field that the receipt reports
``REQUIRED_FIELD_MISSING`` for is a slot with no decision. Slots are ordered by field, then key
(null first), then first decision.

A slot gets a ``task@1`` when

1. one of its decisions needs verification, or
2. its field is missing, or
3. it has exactly one decision that passed and that one was admitted, and the review policy's
   audit picks it (a hash of the seed, the packet key, the field, the key and, for a multiple
   field, the decision: deterministic, and independent of every other slot), or
4. every decision was rejected and the policy asks for rejected slots.

A task never holds the policy: the receipt decides its mode (``audit`` for case 3), so a slot
has the same task, and keeps its answers, under every policy that selects it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.index import ByteMap, TextIndex
from groundswell.shared.admit.occurrences import quote_pattern
from groundswell.shared.admit.packet import Schema
from groundswell.shared.admit.packs import Vocabulary, build_vocabulary
from groundswell.shared.admit.text import DEC, canonical, normalize_ws
from groundswell.shared.canonical import canonical_json
from groundswell.shared.review.formats import check_review_policy, json_key
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.settings import REVIEW_RATE_RE

MISSING = "REQUIRED_FIELD_MISSING"
AUDIT_TAG = b"groundgate-audit/1:"
LONG_VALUE = 300  # characters: a longer string value is asked about as a span
SPAN_WORDS = 8  # words quoted from each end of a span
SCALE_NAMES = {
    0: "not scaled",
    3: "in thousands",
    6: "in millions",
    9: "in billions",
    12: "in trillions",
}
TEMPLATE_PARTS = {
    "number@1": ("amount", "scale", "sign", "unit", "field", "key"),
    "text@1": ("text", "field", "key"),
    "span@1": ("start", "end", "field", "key"),
}
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


@dataclass(frozen=True)
class Slot:
    field: str
    key: str | None
    decisions: tuple[int, ...]
    missing: bool = False

    def sort_key(self) -> tuple[str, bool, str, int]:
        return (self.field, self.key is not None, self.key or "", (*self.decisions, -1)[0])

    def ident(self) -> tuple[str, str | None, tuple[int, ...]]:
        return self.field, self.key, self.decisions


def receipt_slots(receipt: Mapping[str, Any], schema: Schema) -> list[Slot]:
    """Every slot of the receipt, in order. A decision for a field the schema lacks is in none."""
    fields = schema.fields
    grouped: dict[tuple[str, str | None, int], list[int]] = {}
    for i, decision in enumerate(receipt["decisions"]):
        name = decision.get("field")
        spec = fields.get(name) if isinstance(name, str) else None
        if spec is None:
            continue
        key = decision.get("key")
        slot_key = key if isinstance(key, str) and spec.keys is not None else None
        grouped.setdefault((name, slot_key, i if spec.multiple else -1), []).append(i)
    missing = {
        c["field"]
        for c in receipt["coverage"]
        if c.get("code") == MISSING and c["field"] and c["field"] in fields
    }
    out = []
    marked = set()
    for (name, slot_key, _), found in grouped.items():
        is_missing = name in missing and not fields[name].multiple and slot_key is None
        if is_missing:
            marked.add(name)
        out.append(Slot(name, slot_key, tuple(found), is_missing))
    out += [Slot(name, None, (), True) for name in missing - marked]
    return sorted(out, key=Slot.sort_key)


def audit_picks(seed: str, packet: str, slot: Slot, multiple: bool, rate: str) -> bool:
    """Whether the audit picks the slot: H / 2**64 < rate, in exact integer arithmetic."""
    picked = [seed, packet, slot.field, slot.key, slot.decisions[0] if multiple else None]
    h = int.from_bytes(hashlib.sha256(AUDIT_TAG + canonical_json(picked)).digest()[:8], "big")
    if not REVIEW_RATE_RE.fullmatch(rate):
        raise ValueError(f"{rate!r} is not an audit rate")
    whole, _, fraction = rate.partition(".")
    return h * 10 ** len(fraction) < int(whole + fraction) << 64


def _passed(slot: Slot, decisions: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i in slot.decisions if decisions[i]["outcome"] != "rejected"]


def is_audit(slot: Slot, decisions: Sequence[Mapping[str, Any]]) -> bool:
    passed = _passed(slot, decisions)
    return len(passed) == 1 and decisions[passed[0]]["outcome"] == "admitted"


def selected(
    slot: Slot, decisions: Sequence[Mapping[str, Any]], policy: Mapping[str, Any], pick: Any
) -> bool:
    """Whether the slot gets a task under ``policy`` (``pick()`` runs the audit draw)."""
    if slot.missing or any(decisions[i]["outcome"] == "needs_verification" for i in slot.decisions):
        return True
    if slot.decisions and not _passed(slot, decisions):
        return bool(policy["rejected"])
    return is_audit(slot, decisions) and pick()


class _Text:
    """A text the values of a packet cite: UTF-8 byte spans to characters, number tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offsets = ByteMap(text)
        self._index: TextIndex | None = None

    def chars(self, span: tuple[int, int]) -> tuple[int, int] | None:
        start, end = span
        if not 0 <= start <= end <= self.offsets.n_bytes:
            return None
        s, e = self.offsets.to_char(start), self.offsets.to_char(end)
        return None if s is None or e is None else (s, e)

    def index(self) -> TextIndex:
        if self._index is None:
            self._index = TextIndex(self.text, _base_vocabulary())
        return self._index


@cache
def _base_vocabulary() -> Vocabulary:
    return build_vocabulary([])


def _byte_span(value: object) -> tuple[int, int] | None:
    if not isinstance(value, Mapping):
        return None
    start, end = value.get("start"), value.get("end")
    return (start, end) if type(start) is int and type(end) is int else None


class TaskMaker:
    """Makes the tasks of one packet; the texts are read once for all its slots."""

    def __init__(self, packet: ReviewPacket) -> None:
        self.packet = packet
        self.schema = packet.parsed_schema
        self.decisions = packet.receipt["decisions"]
        self.texts: dict[str | None, _Text] = {None: _Text(packet.text)}
        for ref in packet.references or ():
            if isinstance(ref, Mapping) and isinstance(ref.get("id"), str):
                text = ref.get("text")
                if isinstance(text, str):
                    self.texts[ref["id"]] = _Text(text)
        self.slots = receipt_slots(packet.receipt, self.schema)

    def tasks(self, policy: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ``task@1`` objects the policy selects, in slot order."""
        return [task for _, task in self.slot_tasks(policy)]

    def slot_tasks(self, policy: Mapping[str, Any]) -> list[tuple[Slot, dict[str, Any]]]:
        return [(slot, self.task(slot)) for slot in self.chosen_slots(policy)]

    def chosen_slots(self, policy: Mapping[str, Any]) -> list[Slot]:
        """The slots that get a task under the review policy, in order."""
        policy = check_review_policy(policy)
        seed, rate = policy["audit"]["seed"], policy["audit"]["rate"]
        out = []
        for slot in self.slots:
            multiple = self.schema.fields[slot.field].multiple

            def pick(slot: Slot = slot, multiple: bool = multiple) -> bool:
                return audit_picks(seed, self.packet.key, slot, multiple, rate)

            if selected(slot, self.decisions, policy, pick):
                out.append(slot)
        return out

    def task(self, slot: Slot) -> dict[str, Any]:
        spec = self.schema.fields[slot.field]
        passed = _passed(slot, self.decisions)
        chosen = [self.decisions[i] for i in passed]
        if any(not isinstance(d.get("value"), str) for d in chosen):
            raise PacketError(f"{slot.field}: a passed decision has no value")
        if spec.type in ("number", "integer"):
            item = "number"
        elif any(self._long(d) for d in chosen):
            item = "span"
        else:
            item = "text"
        choices = []
        for i, d in zip(passed, chosen, strict=True):
            span = _byte_span(d.get("evidence"))
            shown = self._number_shown(d, span) if item == "number" else _quoted(d["value"], item)
            evidence = None if span is None else {"start": span[0], "end": span[1]}
            choices.append(
                {
                    "decision": i,
                    "value": d["value"],
                    "unit": d.get("unit"),
                    "shown": shown,
                    "evidence": evidence,
                }
            )
        template = f"{item}@1"
        question, named = _ask(item, slot, spec.unit, [c["shown"] for c in choices])
        codes = [MISSING] if slot.missing else []
        for i in slot.decisions:
            codes += [c for c in self.decisions[i]["codes"] if c not in codes]
        return {
            "format": "task@1",
            "packet": self.packet.key,
            "slot": {"field": slot.field, "key": slot.key, "decisions": list(slot.decisions)},
            "item": item,
            "mode": "audit" if is_audit(slot, self.decisions) else "review",
            "template": template,
            "question": question,
            "parts": [p for p in TEMPLATE_PARTS[template] if p in named],
            "codes": codes,
            "choices": choices,
            "places": self._places(slot),
        }

    def _long(self, decision: Mapping[str, Any]) -> bool:
        """A long string value (asked about as a span): over 300 characters, or its first
        occurrence in its evidence crosses a line break."""
        value = decision["value"]
        if len(value) > LONG_VALUE:
            return True
        text = self.texts.get(decision.get("ref"))
        span = _byte_span(decision.get("evidence"))
        if text is None or span is None or not value.strip():
            return False
        chars = text.chars(span)
        if chars is None:
            return False
        found = quote_pattern(tuple(value.split())).search(text.text, *chars)
        return found is not None and not _LINE_BREAKS.isdisjoint(found.group())

    def _number_shown(self, decision: Mapping[str, Any], span: tuple[int, int] | None) -> str:
        """The amount in full, its unit, and the number as written with scale and sign."""
        try:
            amount = Decimal(decision["value"])
        except InvalidOperation:
            amount = Decimal("NaN")
        if not amount.is_finite():
            raise PacketError(f"the value {decision['value']!r} is not a number")
        sign = "negative" if amount < 0 else "zero" if amount == 0 else "positive"
        unit = decision.get("unit")
        unit_words = unit if isinstance(unit, str) else "with no unit"
        text = self.texts.get(decision.get("ref"))
        written = None if span is None or text is None else _as_written(amount, span, text)
        if written is None:
            return f"{amount:,f} {unit_words} (written form not found, {sign})"
        return f"{amount:,f} {unit_words} (written {written[0]}, {written[1]}, {sign})"

    def _places(self, slot: Slot) -> list[dict[str, Any]]:
        """The document spans of the slot's decisions (values and parts), in offset order."""
        spans: set[tuple[int, int]] = set()
        for i in slot.decisions:
            d = self.decisions[i]
            if d.get("ref") is not None:
                continue
            for found in (d.get("evidence"), *(d.get("parts") or ())):
                span = _byte_span(found)
                if span is not None:
                    spans.add(span)
        return [{"start": s, "end": e, "page": None, "box": None} for s, e in sorted(spans)]


def _as_written(amount: Decimal, span: tuple[int, int], text: _Text) -> tuple[str, str] | None:
    """The first number token of the span whose value, at a scale of 10**0 to 10**12 in steps
    of three, is the amount; with the scale's name."""
    chars = text.chars(span)
    if chars is None:
        return None
    want = canonical(amount.copy_abs())
    for token in text.index().tokens_in(*chars):
        if token.value is None:
            continue
        for power, name in SCALE_NAMES.items():
            if canonical(token.value.copy_abs().scaleb(power, DEC)) == want:
                return text.text[token.start : token.end], name
    return None


def _quoted(value: str, item: str) -> str:
    if item == "text":
        return f'"{value}"'
    words = value.split()
    head, tail = " ".join(words[:SPAN_WORDS]), " ".join(words[-SPAN_WORDS:])
    return f'from "{head}" to "{tail}" ({len(value)} characters)'


def _ask(item: str, slot: Slot, unit: str | None, shown: list[str]) -> tuple[str, set[str]]:
    """The question of the item's template, and the parts it names."""
    name = normalize_ws(slot.field.replace("_", " "))
    if slot.key is None:
        subject, named = name, {"field"}
    else:
        subject, named = f"{name} for {normalize_ws(slot.key)}", {"field", "key"}
    one = shown[0] if len(shown) == 1 else None
    if item == "number":
        if not shown:
            if unit is None:
                return f"What is {subject}?", named
            return f"What is {subject}, in {unit}?", named | {"unit"}
        named |= {"amount", "scale", "sign", "unit"}
        return (f"Is {subject} {one}?" if one else f"Which amount is {subject}?"), named
    if item == "text":
        if not shown:
            return f"What is the {subject}?", named
        return (f"Is {one} the {subject}?" if one else f"Which text is the {subject}?"), named | {
            "text"
        }
    if not shown:
        return f"Where do the start and the end of the {subject} occur?", named
    ask = f"Is the {subject} the text {one}?" if one else f"Which text is the {subject}?"
    return ask, named | {"start", "end"}


def make_tasks(packet: ReviewPacket, policy: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``task@1`` objects of the packet under the review policy, in slot order."""
    return TaskMaker(packet).tasks(policy)


def task_key(task: Mapping[str, Any]) -> str:
    return json_key("task@1", task)
