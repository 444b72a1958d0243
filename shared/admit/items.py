"""Evidence items and the per-candidate context the checks read (SPEC §2.5, §4.6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from groundswell.shared.admit.index import TextIndex, Token

SOURCES = ("document", "reference", "external", "knowledge")
ROLES = ("value", "sign", "scale", "unit", "field", "key")
MAX_FIELD_ITEMS = 8


class Rejected(Exception):
    """Control flow inside one decision (a rejecting step); it never leaves the engine."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(slots=True)
class Item:
    source: str
    role: str
    ref: str | None
    start: int | None
    end: int | None
    text: str | None
    url: str | None
    raw: dict[str, Any]

    @property
    def has_offsets(self) -> bool:
        return self.start is not None

    @property
    def outside(self) -> bool:
        return self.source in ("external", "knowledge")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _blank(v: object) -> bool:
    return not isinstance(v, str) or not v.strip()


def parse_items(evidence: Any, references: dict[str, Any]) -> list[Item] | None:
    """The evidence items of a candidate, or None when step 1 finds them malformed."""
    if evidence is None:
        return []
    if isinstance(evidence, dict):
        raw_items = [evidence]
    elif isinstance(evidence, list) and all(isinstance(x, dict) for x in evidence):
        raw_items = evidence
    else:
        return None
    items: list[Item] = []
    roles: dict[str, int] = {}
    for r in raw_items:
        if any(v is None for v in r.values()):
            return None
        source = r.get("source", "document")
        if source not in SOURCES:
            return None
        text = r.get("text")
        if text is not None and not isinstance(text, str):
            return None
        if source in ("external", "knowledge"):
            if "role" in r or "start" in r or "end" in r or "ref" in r or _blank(text):
                return None
            url = r.get("url")
            if source == "external":
                if _blank(url) or _blank(r.get("retrieved")):
                    return None
            elif "url" in r or "retrieved" in r:
                return None
            items.append(Item(source, "value", None, None, None, text, url, r))
            continue
        role = r.get("role", "value")
        if role not in ROLES or "url" in r or "retrieved" in r:
            return None
        ref = r.get("ref")
        if source == "reference":
            if not isinstance(ref, str) or ref not in references:
                return None
        elif "ref" in r:
            return None
        has_s, has_e = "start" in r, "end" in r
        if has_s != has_e:
            return None
        if has_s and (not _is_int(r["start"]) or not _is_int(r["end"])):
            return None
        if not has_s and _blank(text):
            return None
        roles[role] = roles.get(role, 0) + 1
        if roles[role] > (MAX_FIELD_ITEMS if role == "field" else 1):
            return None
        items.append(
            Item(
                source,
                role,
                ref,
                r["start"] if has_s else None,
                r["end"] if has_s else None,
                text,
                None,
                r,
            )
        )
    return items


@dataclass
class Match:
    """Where steps 10 and 11 leave a value: its token (or string occurrence) and parts."""

    token: Token | None
    start: int  # the value's position: the token, or the string's first occurrence
    end: int
    missing: set[str] = field(default_factory=set)
    derived: bool = False
    no_unit_form: bool = False  # step 11 passed because no unit form is next to the token
    unit_present: bool = True  # the unit is supplied (at the token, by an item or a place)
    conflict: bool = False  # a heading conflict at the token (§4.3)

    @property
    def clean(self) -> bool:
        """Steps 10 and 11 pass with no missing part."""
        return not self.missing and self.unit_present


@dataclass
class Fail:
    """Steps 10 and 11 reject at a span; ``token`` is the first token step 10 matched."""

    code: str
    token: Token | None = None


@dataclass
class Ctx:
    """One candidate on the checked (or outside) path: its field, value and items."""

    spec: Any  # FieldSpec
    value: Any  # Decimal, or the normalised string of a string field
    cand: dict[str, Any]
    items: list[Item]
    value_item: Item | None
    index: TextIndex
    sign: Item | None = None
    scale: Item | None = None
    unit: Item | None = None
    fields: list[Item] = field(default_factory=list)
    key: Item | None = None
    item_scale: Decimal | None = None  # the scale factor a scale item's text gives
    outside: bool = False  # reading an external item's text: no items, no heading units

    @property
    def is_string(self) -> bool:
        return self.spec.type == "string"
