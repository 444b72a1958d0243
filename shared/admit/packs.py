"""Vocabulary packs and kind packs (SPEC §4.7-§4.9): loading, the checks L1-L12, the union.

The base pack ``en`` 1.1.0 and the built-in packs ship as JSON data beside this module (see
``packs/NOTICE.md``); each is loaded once and checked against the digest the spec pins.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.fields import check_field
from groundswell.shared.admit.text import fold, normalize_ws
from groundswell.shared.canonical import canonical_json

BASE_ID = "en"
BASE_VERSION = "1.1.0"
BASE_DIGEST = "sha256:15fb3c027b33e5aa83561ef894053a54f7c7e469825960c50266c6d0f03e6f0c"

# id -> (version, type, needs, digest): SPEC §4.8's table of built-in packs.
BUILT_IN: dict[str, tuple[str, str, str]] = {
    "finance": (
        "1.0.0",
        "vocabulary",
        "sha256:822c91124cbd23f29e683873975d4f3f85f2207dbbb02ca3664f0ef74848162b",
    ),
    "electronics": (
        "1.0.0",
        "vocabulary",
        "sha256:af8570f97b8e06fcceae56949a6e3b5ffab4992413cf8b6f474b6239989dbc5b",
    ),
    "us-10k": (
        "1.0.0",
        "kind",
        "sha256:ea4115fd9215c89b78369cd1291cf8482cb185602e037c076a8c17c8edbab102",
    ),
    "us-government-reports": (
        "1.0.0",
        "kind",
        "sha256:604297bba0b9543fae9d3099eaa6a810f2bdb0fcd0cf5f527d6903b374e44974",
    ),
    "annual-reports": (
        "1.0.0",
        "kind",
        "sha256:ca2433ec6dd249581310c977b29a54b4c70aa65acd3561701285a2f4ccf150e7",
    ),
    "component-datasheets": (
        "1.0.0",
        "kind",
        "sha256:3b0ac7d8b1dff0f25a33078c668739086b027704e75b7d4deba9a6ebf9c27538",
    ),
    "benefit-summaries": (
        "1.0.0",
        "kind",
        "sha256:a01109e7c7a72e248012161d8fe16b1937a77e09c328a6cdcbfd0e9d41ebe3d2",
    ),
}

QUALIFIER_COMPARATORS = ("approx", "gt", "lt", "ge", "le", "range")
POWERS = frozenset({3, 5, 6, 7, 9, 12})
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
PACK_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
VERSION = re.compile(r"(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)")
CURRENCY_CODE = re.compile(r"[A-Z]{3}")

# The vocabulary format: member -> sub-member -> kind of list ("words", "powers", "units",
# "comparators", "currencies"). A top-level list has no sub-members.
_WORDS, _POWERS, _UNITS, _COMPARATORS, _CURRENCIES = (
    "words",
    "powers",
    "units",
    "comparators",
    "currencies",
)
VOCAB_SHAPE: dict[str, dict[str, str] | str] = {
    "scale": {"words": _POWERS, "suffixes": _POWERS, "currency": _POWERS},
    "currency_signs": _WORDS,
    "units": _UNITS,
    "per_units": _WORDS,
    "qualifiers": {"before": _COMPARATORS, "after": _COMPARATORS, "negations": _WORDS},
    "ranges": {"connectors": _WORDS, "pair": _WORDS},
    "changes": {"words": _WORDS, "determiners": _WORDS, "stop_words": _WORDS},
    "sentence": {"abbreviations": _WORDS, "join_always": _WORDS, "join_before_code": _WORDS},
    "sign": {"loss": _WORDS, "gain": _WORDS, "negations": _WORDS},
    "null_literals": _WORDS,
    "heading_units": _CURRENCIES,
}
BASE_ONLY = frozenset(
    {
        ("qualifiers", "negations"),
        ("ranges", "pair"),
        ("changes", "words"),
        ("changes", "determiners"),
        ("sentence", "join_always"),
        ("sentence", "join_before_code"),
    }
)
_HEAD = ("groundgate_pack", "type", "id", "version", "description", "status")
STATUS_ROW = frozenset(
    {"kind", "field", "code", "status", "documents", "bound", "limit", "results"}
)
TEMPLATE_MEMBERS = frozenset({"type", "unit", "comparator", "aliases", "description"})
MAX_SAFE = 2**53


def pack_digest(pack_type: str, pack: dict[str, Any]) -> str:
    prefix = b"groundgate-pack/1:" + pack_type.encode("ascii") + b"\0"
    return "sha256:" + hashlib.sha256(prefix + canonical_json(pack)).hexdigest()


def with_defaults(pack: dict[str, Any]) -> dict[str, Any]:
    """A checked pack with every absent member filled in (the form its digest reads)."""
    out = copy.deepcopy(pack)
    out.setdefault("description", "")
    out.setdefault("status", [])
    if out["type"] == "kind":
        out.setdefault("needs", [])
        out.setdefault("fields", {})
        return out
    for member, shape in VOCAB_SHAPE.items():
        if isinstance(shape, dict):
            sub = out.setdefault(member, {})
            for name, kind in shape.items():
                sub.setdefault(name, {} if kind in (_POWERS, _COMPARATORS) else [])
        else:
            out.setdefault(member, {} if shape in (_UNITS, _CURRENCIES) else [])
    for unit in out["units"].values():
        unit.setdefault("prefixes", [])
        unit.setdefault("suffixes", [])
    for currency in out["heading_units"].values():
        currency.setdefault("names", [])
        currency.setdefault("sign", None)
    return out


# --- checks of one pack (L1-L5, L7 forms, L8, L9 shape) -------------------------------------


def _fail(pack_id: object, message: str) -> PacketError:
    return PacketError(f"pack {pack_id!r}: {message}")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _check_data(pid: object, value: Any) -> None:
    """L2 data only, and L4's limit on entries of one list or object."""
    if isinstance(value, bool | float):
        raise _fail(pid, f"L2: {value!r} is not data (no booleans or fractions)")
    if isinstance(value, int):
        if not -MAX_SAFE <= value <= MAX_SAFE:
            raise _fail(pid, f"L2: integer {value} is out of range")
    elif isinstance(value, dict):
        if len(value) > 2000:
            raise _fail(pid, "L4: an object of more than 2,000 entries")
        for v in value.values():
            _check_data(pid, v)
    elif isinstance(value, list):
        if len(value) > 2000:
            raise _fail(pid, "L4: a list of more than 2,000 entries")
        for v in value:
            _check_data(pid, v)
    elif value is not None and not isinstance(value, str):
        raise _fail(pid, f"L2: {type(value).__name__} is not data")


def _check_word(pid: object, word: object, where: str, *, lower: bool = False) -> str:
    if not isinstance(word, str):
        raise _fail(pid, f"L3: {where} holds {word!r}, not a word")
    if not word.strip():
        raise _fail(pid, f"L3: a blank word in {where}")
    if unicodedata.normalize("NFC", word) != word:
        raise _fail(pid, f"L3: {word!r} in {where} is not NFC")
    if word != word.strip() or "\n" in word or "\t" in word:
        raise _fail(pid, f"L3: {word!r} in {where} has whitespace at an end, a tab or a line break")
    if len(word) > 64:
        raise _fail(pid, f"L3: {word[:20]!r}... in {where} has more than 64 code points")
    if lower and word != word.lower():
        raise _fail(pid, f"L3: {word!r} in {where} is not in lowercase")
    return word


def _check_words(pid: object, value: object, where: str, *, lower: bool = False) -> None:
    if not isinstance(value, list):
        raise _fail(pid, f"L1: {where} is not a list of words")
    for word in value:
        _check_word(pid, word, where, lower=lower)
    if where == "sentence.abbreviations":
        for word in value:
            if not word.endswith("."):
                raise _fail(pid, f"L3: abbreviation {word!r} does not end with a dot")
    if where == "currency_signs":
        for sign in value:
            if len(sign) != 1 or unicodedata.category(sign)[0] in "LNZC":
                raise _fail(pid, f"L3: {sign!r} is not a currency sign")


def _check_powers(pid: object, value: object, where: str) -> None:
    if not isinstance(value, dict):
        raise _fail(pid, f"L1: {where} is not an object of words and powers of ten")
    for word, power in value.items():
        _check_word(pid, word, where, lower=where == "scale.words")
        if not isinstance(power, int) or isinstance(power, bool):
            raise _fail(pid, f"L2: the power of {word!r} in {where} is not an integer")


def _check_vocabulary_lists(pid: object, pack: dict[str, Any], *, base: bool) -> None:
    for member, shape in VOCAB_SHAPE.items():
        if member not in pack:
            continue
        value = pack[member]
        if isinstance(shape, dict):
            if not isinstance(value, dict):
                raise _fail(pid, f"L1: {member} is not an object")
            for name, sub in value.items():
                if name not in shape:
                    raise _fail(pid, f"L1: {member}.{name} is not a member of the format")
                if not base and (member, name) in BASE_ONLY:
                    raise _fail(pid, f"L5: only the base pack can give {member}.{name}")
                where = f"{member}.{name}"
                kind = shape[name]
                if kind == _POWERS:
                    _check_powers(pid, sub, where)
                elif kind == _COMPARATORS:
                    if not isinstance(sub, dict):
                        raise _fail(pid, f"L1: {where} is not an object of comparators")
                    for comparator, phrases in sub.items():
                        if comparator not in QUALIFIER_COMPARATORS:
                            raise _fail(pid, f"L1: {where}.{comparator} is not a comparator")
                        _check_words(pid, phrases, f"{where}.{comparator}")
                else:
                    _check_words(pid, sub, where, lower=where == "sentence.abbreviations")
        elif shape == _UNITS:
            if not isinstance(value, dict):
                raise _fail(pid, "L1: units is not an object")
            for code, unit in value.items():
                _check_word(pid, code, "units")
                if not isinstance(unit, dict) or set(unit) - {"prefixes", "suffixes"}:
                    raise _fail(pid, f"L1: unit {code!r} holds members other than the forms")
                for name, forms in unit.items():
                    _check_words(pid, forms, f"units.{code}.{name}")
        elif shape == _CURRENCIES:
            if not isinstance(value, dict):
                raise _fail(pid, "L1: heading_units is not an object")
            for code, currency in value.items():
                if not isinstance(code, str) or not CURRENCY_CODE.fullmatch(code):
                    raise _fail(pid, f"L1: {code!r} is not a code of three capitals")
                if not isinstance(currency, dict) or set(currency) - {"names", "sign"}:
                    raise _fail(pid, f"L1: currency {code!r} holds other members")
                _check_words(pid, currency.get("names", []), f"heading_units.{code}.names")
                sign = currency.get("sign")
                if sign is not None:
                    _check_words(pid, [sign], "currency_signs")
        else:
            _check_words(pid, value, member, lower=member == "null_literals")


def _check_status(pid: object, rows: object, *, built_in: bool) -> None:
    if not isinstance(rows, list):
        raise _fail(pid, "L8: status is not a list of rows")
    for row in rows:
        if not isinstance(row, dict) or set(row) != STATUS_ROW:
            raise _fail(pid, "L8: a malformed status row")
        if row["status"] not in ("draft", "measured"):
            raise _fail(pid, f"L8: status {row['status']!r} is not draft or measured")
        if row["status"] == "measured" and not built_in:
            raise _fail(pid, "L8: a measured status row in a pack that is not built in")


def check_field_members(
    where: str, spec: dict[str, Any], allowed: frozenset[str] | None = None
) -> None:
    """The rules of §2.3 for the members a field (or a template) gives."""
    check_field(where, spec, allowed=allowed)


def check_pack(pack: object, *, built_in: bool = False) -> dict[str, Any]:
    """L1-L5, L7 forms, L8, L9 shape and L12 for one pack. Returns it after defaults."""
    if not isinstance(pack, dict):
        raise PacketError("a pack is not an object")
    pid = pack.get("id")
    if pack.get("groundgate_pack") != 1 or isinstance(pack.get("groundgate_pack"), bool):
        raise _fail(pid, "L1: groundgate_pack is not 1")
    kind = pack.get("type")
    if kind not in ("vocabulary", "kind"):
        raise _fail(pid, f"L1: type {kind!r} is not vocabulary or kind")
    allowed = set(_HEAD) | ({"needs", "fields"} if kind == "kind" else set(VOCAB_SHAPE))
    for member in pack:
        if member not in allowed:
            raise _fail(pid, f"L1: member {member!r} is not in the {kind} pack format")
    for member in ("id", "version"):
        if member not in pack:
            raise _fail(pid, f"L1: the pack has no {member}")
    _check_data(pid, pack)
    if _depth(pack) > 8:
        raise _fail(pid, "L4: a JSON nesting depth of more than 8")
    if len(canonical_json(pack)) > 256 * 1024:
        raise _fail(pid, "L4: more than 256 KiB as canonical JSON")
    if not isinstance(pid, str) or len(pid) > 64 or not PACK_ID.fullmatch(pid):
        raise _fail(pid, "L7: the id is not lowercase letters and digits with single dashes")
    version = pack["version"]
    if not isinstance(version, str) or not VERSION.fullmatch(version):
        raise _fail(pid, f"L7: version {version!r} is not MAJOR.MINOR.PATCH")
    if not built_in:
        if pid == BASE_ID or pid in BUILT_IN:
            raise _fail(pid, "L7: a given pack has the id of a built-in pack")
        if "-x-" not in pid:
            raise _fail(pid, "L7: an app's own pack id holds -x- and a name")
    description = pack.get("description", "")
    if not isinstance(description, str):
        raise _fail(pid, "L1: description is not text")
    _check_status(pid, pack.get("status", []), built_in=built_in)
    if kind == "vocabulary":
        _check_vocabulary_lists(pid, pack, base=built_in and pid == BASE_ID)
    else:
        _check_kind_shape(pid, pack)
    return with_defaults(pack)


def _check_kind_shape(pid: object, pack: dict[str, Any]) -> None:
    needs = pack.get("needs", [])
    if not isinstance(needs, list):
        raise _fail(pid, "L9: needs is not a list")
    seen: set[str] = set()
    for entry in needs:
        if not isinstance(entry, dict) or set(entry) != {"id", "version"}:
            raise _fail(pid, "L9: a needs entry holds other members than id and version")
        nid, nver = entry["id"], entry["version"]
        if not isinstance(nid, str) or not PACK_ID.fullmatch(nid) or len(nid) > 64:
            raise _fail(pid, f"L7: needs entry id {nid!r} has the wrong form")
        if not isinstance(nver, str) or not VERSION.fullmatch(nver):
            raise _fail(pid, f"L7: needs entry version {nver!r} has the wrong form")
        if nid == BASE_ID:
            raise _fail(pid, "L9: a needs entry names the base pack")
        if nid == pid:
            raise _fail(pid, "L9: a needs entry names the pack itself")
        if nid in seen:
            raise _fail(pid, f"L9: needs names {nid!r} twice")
        seen.add(nid)
    fields = pack.get("fields", {})
    if not isinstance(fields, dict):
        raise _fail(pid, "L9: fields is not an object")
    if len(fields) > 200:
        raise _fail(pid, "L4: more than 200 field templates")
    for name, template in fields.items():
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise _fail(pid, f"L9: template name {name!r} breaks the field name rule")
        if not isinstance(template, dict):
            raise _fail(pid, f"L9: template {name!r} is not an object")
        extra = set(template) - TEMPLATE_MEMBERS
        if extra:
            raise _fail(pid, f"L9: template {name!r} holds {sorted(extra)}")
        try:
            check_field_members(f"template {name!r}", template, allowed=TEMPLATE_MEMBERS)
        except PacketError as exc:
            raise _fail(pid, f"L9: {exc}") from exc


# --- the built-in packs --------------------------------------------------------------------


@dataclass(frozen=True)
class Pack:
    id: str
    version: str
    type: str
    digest: str
    data: dict[str, Any]  # after defaults
    built_in: bool = False

    def entry(self) -> dict[str, str]:
        return {"id": self.id, "type": self.type, "version": self.version, "sha256": self.digest}


def _read_packaged(pid: str, version: str) -> dict[str, Any]:
    path = resources.files("groundswell.shared.admit").joinpath("packs", pid, f"{version}.json")
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def built_in_pack(pid: str) -> Pack:
    """A pack that ships with the engine, checked against the digest the spec pins."""
    if pid == BASE_ID:
        version, kind, want = BASE_VERSION, "vocabulary", BASE_DIGEST
    else:
        version, kind, want = BUILT_IN[pid]
    data = check_pack(_read_packaged(pid, version), built_in=True)
    digest = pack_digest(kind, data)
    if digest != want:
        raise RuntimeError(
            f"the packaged pack {pid} {version} has digest {digest}, not {want}: refusing to run"
        )
    return Pack(pid, version, kind, digest, data, built_in=True)


# --- the union (§4.8) ------------------------------------------------------------------------


def _added_order(words: list[str]) -> list[str]:
    return sorted(words, key=lambda w: (-len(w), w))


def _merge_words(base: list[str], extra: list[list[str]]) -> list[str]:
    seen = set(base)
    added: list[str] = []
    for words in extra:
        for w in words:
            if w not in seen:
                seen.add(w)
                added.append(w)
    return list(base) + _added_order(added)


def _merge_powers(base: dict[str, int], extra: list[dict[str, int]]) -> dict[str, int]:
    out = dict(base)
    added: dict[str, int] = {}
    for words in extra:
        for w, p in words.items():
            if w not in out and w not in added:
                added[w] = p
    for w in _added_order(list(added)):
        out[w] = added[w]
    return out


def _key(word: str) -> str:
    return fold(normalize_ws(word))


@dataclass
class Vocabulary:
    """The word lists that the rules of §4 read: the base pack and the packs of a packet."""

    scale_words: dict[str, int]
    scale_suffixes: dict[str, int]
    currency_scales: dict[str, int]
    currency_signs: list[str]
    units: dict[str, tuple[list[str], list[str]]]
    per_units: list[str]
    before: dict[str, list[str]]
    after: dict[str, list[str]]
    negations: list[str]
    connectors: list[str]
    pair: list[str]
    change_words: list[str]
    determiners: list[str]
    stop_words: list[str]
    abbreviations: list[str]
    join_always: list[str]
    join_before_code: list[str]
    loss: list[str]
    gain: list[str]
    sign_negations: list[str]
    null_literals: list[str]
    heading_units: dict[str, tuple[list[str], str | None]]
    # pack id -> the words it adds (folded, whitespace-normalised), for decision "packs".
    added: dict[str, set[str]] = field(default_factory=dict)
    fingerprint: tuple[str, ...] = ()


def build_vocabulary(packs: list[Pack]) -> Vocabulary:
    """The union of the base pack and the given vocabulary packs, after the L6 checks."""
    base = built_in_pack(BASE_ID).data
    extra = [p.data for p in packs if p.type == "vocabulary"]
    everything = [base, *extra]

    def sub(d: dict[str, Any], member: str, name: str) -> Any:
        return d[member][name]

    def words(member: str, name: str | None = None) -> list[str]:
        get = (lambda d: d[member]) if name is None else (lambda d: sub(d, member, name))
        return _merge_words(get(base), [get(d) for d in extra])

    def powers(name: str) -> dict[str, int]:
        return _merge_powers(base["scale"][name], [d["scale"][name] for d in extra])

    # L6: one power for each scale word and form, and only the powers of the spec.
    for name in ("words", "suffixes", "currency"):
        seen: dict[str, int] = {}
        for d in everything:
            for w, p in d["scale"][name].items():
                if p not in POWERS:
                    raise PacketError(f"L6: scale {name} {w!r} has the power {p}")
                k = _key(w)
                if seen.setdefault(k, p) != p:
                    raise PacketError(f"L6: scale {name} {w!r} has two powers")
    # Units: merge forms per code; one code for each form.
    units: dict[str, tuple[list[str], list[str]]] = {}
    codes = list(base["units"]) + _added_order(
        [c for d in extra for c in d["units"] if c not in base["units"]]
    )
    for code in dict.fromkeys(codes):
        prefixes = _merge_words(
            base["units"].get(code, {}).get("prefixes", []),
            [d["units"][code]["prefixes"] for d in extra if code in d["units"]],
        )
        suffixes = _merge_words(
            base["units"].get(code, {}).get("suffixes", []),
            [d["units"][code]["suffixes"] for d in extra if code in d["units"]],
        )
        units[code] = (prefixes, suffixes)
    owner: dict[str, str] = {}
    for code, (prefixes, suffixes) in units.items():
        for form in (*prefixes, *suffixes):
            if owner.setdefault(_key(form), code) != code:
                raise PacketError(f"L6: unit form {form!r} is under two unit codes")
    unit_suffixes = {s for _, suffixes in units.values() for s in suffixes}
    scale_suffixes = powers("suffixes")
    for w in scale_suffixes:
        if set(suffix_cases(w)) & unit_suffixes:
            raise PacketError(f"L6: scale suffix {w!r} is also a unit suffix")
    # Qualifiers: one comparator for each phrase; a pack phrase neither holds nor sits in a
    # phrase of another comparator.
    before: dict[str, list[str]] = {}
    after: dict[str, list[str]] = {}
    for side, target in (("before", before), ("after", after)):
        comparators = list(base["qualifiers"][side]) + _added_order(
            [c for d in extra for c in d["qualifiers"][side] if c not in base["qualifiers"][side]]
        )
        for c in dict.fromkeys(comparators):
            target[c] = _merge_words(
                base["qualifiers"][side].get(c, []),
                [d["qualifiers"][side][c] for d in extra if c in d["qualifiers"][side]],
            )
    phrase_owner: dict[str, str] = {}
    for table in (before, after):
        for c, phrases in table.items():
            for ph in phrases:
                if phrase_owner.setdefault(_key(ph), c) != c:
                    raise PacketError(f"L6: qualifier {ph!r} is in two comparator lists")
    all_phrases = [
        (c, _key(ph)) for table in (before, after) for c, ps in table.items() for ph in ps
    ]
    for d in extra:
        for side in ("before", "after"):
            for c, phrases in d["qualifiers"][side].items():
                for ph in phrases:
                    k = _key(ph)
                    for oc, other in all_phrases:
                        if oc != c and other != k and (_holds(k, other) or _holds(other, k)):
                            raise PacketError(
                                f"L6: qualifier {ph!r} ({c}) overlaps {other!r} ({oc})"
                            )
    loss = words("sign", "loss")
    gain = words("sign", "gain")
    if {_key(w) for w in loss} & {_key(w) for w in gain}:
        raise PacketError("L6: a loss word is also a gain word")
    # Currencies of heading units: one code for each name, one sign for each currency.
    heading: dict[str, tuple[list[str], str | None]] = {}
    codes = list(base["heading_units"]) + _added_order(
        [c for d in extra for c in d["heading_units"] if c not in base["heading_units"]]
    )
    for code in dict.fromkeys(codes):
        sources = [d["heading_units"][code] for d in everything if code in d["heading_units"]]
        signs = {s["sign"] for s in sources if s["sign"] is not None}
        if len(signs) > 1:
            raise PacketError(f"L6: currency {code} has two signs")
        names = _merge_words(
            base["heading_units"].get(code, {}).get("names", []),
            [s["names"] for s in sources[1:]]
            if code in base["heading_units"]
            else [s["names"] for s in sources],
        )
        heading[code] = (names, next(iter(signs)) if signs else None)
    name_owner: dict[str, str] = {}
    for code, (names, _) in heading.items():
        for name in names:
            if name_owner.setdefault(_key(name), code) != code:
                raise PacketError(f"L6: currency name {name!r} is under two codes")

    added: dict[str, set[str]] = {}
    base_words = _all_words(base)
    for p in packs:
        if p.type == "vocabulary":
            added[p.id] = {k for lst, k in _all_words(p.data) if (lst, k) not in base_words}
    return Vocabulary(
        scale_words=powers("words"),
        scale_suffixes=scale_suffixes,
        currency_scales=powers("currency"),
        currency_signs=words("currency_signs"),
        units=units,
        per_units=words("per_units"),
        before=before,
        after=after,
        negations=words("qualifiers", "negations"),
        connectors=words("ranges", "connectors"),
        pair=words("ranges", "pair"),
        change_words=words("changes", "words"),
        determiners=words("changes", "determiners"),
        stop_words=words("changes", "stop_words"),
        abbreviations=words("sentence", "abbreviations"),
        join_always=words("sentence", "join_always"),
        join_before_code=words("sentence", "join_before_code"),
        loss=loss,
        gain=gain,
        sign_negations=words("sign", "negations"),
        null_literals=words("null_literals"),
        heading_units=heading,
        added=added,
        fingerprint=tuple(sorted(p.digest for p in packs if p.type == "vocabulary")),
    )


def suffix_cases(word: str) -> tuple[str, ...]:
    """The cases in which a scale suffix matches: as listed, capitalised and in capitals."""
    return tuple(dict.fromkeys((word, word[:1].upper() + word[1:], word.upper())))


def _holds(outer: str, inner: str) -> bool:
    """``inner`` matches in ``outer`` as whole words (both folded and normalised)."""
    pattern = r"(?<![^\W_])" + re.escape(inner) + r"(?![^\W_])"
    if not inner[:1].isalnum():
        pattern = re.escape(inner)
    return re.search(pattern, outer) is not None


def _all_words(pack: dict[str, Any]) -> set[tuple[str, str]]:
    """Every word of a vocabulary pack as (list, comparison form), for §5 decision packs."""
    out: set[tuple[str, str]] = set()
    where = ""

    def add(word: str) -> None:
        out.add((where, pack_word_key(word)))

    for member, shape in VOCAB_SHAPE.items():
        value = pack[member]
        where = member
        if isinstance(shape, dict):
            for name, kind in shape.items():
                sub = value[name]
                if kind == _COMPARATORS:
                    for comparator, phrases in sub.items():
                        where = f"{member}.{name}.{comparator}"
                        for w in phrases:
                            add(w)
                else:
                    where = f"{member}.{name}"
                    for w in sub:
                        add(w)
        elif shape == _UNITS:
            for code, unit in value.items():
                for name in ("prefixes", "suffixes"):
                    where = f"units.{code}.{name}"
                    for w in unit[name]:
                        add(w)
        elif shape == _CURRENCIES:
            for code, currency in value.items():
                where = f"heading_units.{code}"
                for w in currency["names"]:
                    add(w)
        else:
            for w in value:
                add(w)
    return out


def pack_word_key(text: str) -> str:
    """§5 decision packs: the §4 fold of ſ ı İ K, then casefold, whitespace runs as one space."""
    return _WS_RUN.sub(" ", text.translate(_SPECIAL_FOLD).casefold())


_SPECIAL_FOLD = {0x017F: "s", 0x0131: "i", 0x0130: "i", 0x212A: "k"}
_WS_RUN = re.compile(r"\s+")
