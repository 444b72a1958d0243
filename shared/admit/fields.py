"""A field's members (SPEC §2.3): the rules a schema field and a pack's template both follow.

A leaf of the package: the packet (``packet.py``) and the packs (``packs.py``) both check
fields with it, and it imports neither.
"""

from __future__ import annotations

from typing import Any

from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.text import fold, normalize_ws, to_decimal

COMPARATORS = ("eq", "gt", "ge", "lt", "le", "approx", "range")
TYPES = ("number", "integer", "string")
FIELD_MEMBERS = frozenset(
    {
        "type",
        "unit",
        "comparator",
        "minimum",
        "maximum",
        "required",
        "multiple",
        "keys",
        "aliases",
        "description",
        "template",
    }
)


def nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def word_list(where: str, value: object) -> list[str] | None:
    """keys / aliases: null, or a non-empty list of non-blank strings, distinct after the fold."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise PacketError(f"{where} must be null or a non-empty list of strings")
    seen: set[str] = set()
    for item in value:
        if not nonblank(item):
            raise PacketError(f"{where} holds {item!r}, not a non-blank string")
        k = fold(normalize_ws(item))
        if k in seen:
            raise PacketError(f"{where}: {item!r} equals another entry after normalisation")
        seen.add(k)
    return list(value)


def check_field(
    where: str, spec: object, *, allowed: frozenset[str] | None = None
) -> dict[str, Any]:
    """§2.3 rules for the members a field or a template gives (no defaults)."""
    if not isinstance(spec, dict):
        raise PacketError(f"{where} is not an object")
    extra = set(spec) - (allowed or FIELD_MEMBERS)
    if extra:
        raise PacketError(f"{where} has unknown members {sorted(extra)}")
    if "type" in spec and spec["type"] not in TYPES:
        raise PacketError(f"{where}.type {spec['type']!r} is not number, integer or string")
    if "unit" in spec and spec["unit"] is not None and not isinstance(spec["unit"], str):
        raise PacketError(f"{where}.unit is not a string or null")
    if "comparator" in spec and spec["comparator"] not in COMPARATORS:
        raise PacketError(f"{where}.comparator {spec['comparator']!r} is not a comparator")
    for bound in ("minimum", "maximum"):
        if bound in spec and spec[bound] is not None and to_decimal(spec[bound]) is None:
            raise PacketError(f"{where}.{bound} {spec[bound]!r} is not a decimal")
    for flag in ("required", "multiple"):
        if flag in spec and not isinstance(spec[flag], bool):
            raise PacketError(f"{where}.{flag} is not a boolean")
    for words in ("keys", "aliases"):
        if words in spec:
            word_list(f"{where}.{words}", spec[words])
    if "description" in spec and not nonblank(spec["description"]):
        raise PacketError(f"{where}.description is not a non-blank string")
    return spec
