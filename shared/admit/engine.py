"""The decision procedure of SPEC §3: one receipt for a document, a schema and its candidates.

:class:`Admitter` reads the document once (tokens, sentences, lines, units and qualifiers are
indexed lazily and kept), then decides any number of candidates against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from shared.admit.digest import SPEC_VERSION, digest, text_digest
from shared.admit.errors import PacketError
from shared.admit.index import TextIndex, Token
from shared.admit.packet import (
    FieldSpec,
    Policy,
    Schema,
    check_document,
    check_json_numbers,
    parse_judgments,
    parse_policy,
    parse_references,
    parse_schema,
)
from shared.admit.rules import TextRules, UnitTable
from shared.admit.text import (
    canonical,
    is_blank,
    mul,
    normalize_verbatim,
    normalize_ws,
    parse_value,
    pow10,
)

SOURCES = ("document", "reference", "external", "knowledge")
ROLES = ("value", "sign", "scale", "unit", "field", "key")
ROLE_ORDER = ("sign", "scale", "unit", "field", "key")
MISSING_ORDER = ("sign", "scale", "unit", "key")
FLAG_ORDER = (
    "NON_VERBATIM_EVIDENCE",
    "QUALIFIED_VALUE",
    "SCALE_WORD",
    "PART_MISSING",
    "SIGN_CITATION_INVALID",
    "SCALE_CITATION_INVALID",
    "UNIT_CITATION_INVALID",
    "FIELD_CITATION_INVALID",
    "KEY_NOT_AT_VALUE",
    "KEY_CITATION_INVALID",
    "EVIDENCE_QUOTED",
    "EVIDENCE_STATED",
    "LOW_CONFIDENCE",
    "CONFLICTING_CANDIDATES",
    "RELATION_FAILED",
    "MODEL_DOUBT",
)
INFO_ORDER = (
    "EVIDENCE_REANCHORED",
    "VALUE_DERIVED",
    "KEY_CITED",
    "ADMITTED_BY_POLICY",
    "MODEL_CLEARED",
)
_CODE_RANK = {c: i for i, c in enumerate(FLAG_ORDER + INFO_ORDER)}
FLAGS = frozenset(FLAG_ORDER)
MISSING_POWERS = (3, 5, 6, 7, 9, 12)
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


@dataclass
class Match:
    """Where steps 10 and 11 leave a value item: the token, and the parts that are missing."""

    token: Token | None
    start: int  # the value's position (token start, or string occurrence)
    end: int
    missing: set[str] = field(default_factory=set)
    derived: bool = False
    unit_form_missing: bool = False  # no unit form next to the token (step 11)

    @property
    def clean(self) -> bool:
        return not self.missing and not self.unit_form_missing


@dataclass
class Fail:
    """Steps 10 and 11 reject at a span; ``token`` is the first token step 10 matched."""

    code: str
    token: Token | None = None


@dataclass
class Decision:
    index: int
    candidate: Any
    sha: str
    field_name: str | None = None
    key: str | None = None
    outcome: str = "admitted"
    codes: set[str] = field(default_factory=set)
    value: str | None = None
    value_dec: Decimal | None = None
    unit: str | None = None
    source: str | None = None
    ref: str | None = None
    url: str | None = None
    evidence: dict[str, int] | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    packs: list[str] = field(default_factory=list)
    rejected: str | None = None
    passed: bool = False
    place: Decimal | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cid = self.candidate.get("id") if isinstance(self.candidate, dict) else None
        if self.rejected is not None:
            codes = [self.rejected]
            outcome = "rejected"
        else:
            codes = sorted(self.codes, key=_CODE_RANK.__getitem__)
            outcome = "needs_verification" if self.codes & FLAGS else "admitted"
        out: dict[str, Any] = {
            "candidate_id": cid,
            "candidate_sha256": self.sha,
            "field": self.field_name,
            "key": self.key,
            "outcome": outcome,
            "codes": codes,
            "value": self.value,
            "unit": self.unit,
            "source": self.source,
            "ref": self.ref,
            "url": self.url,
            "evidence": self.evidence,
            "parts": self.parts,
            "missing": [m for m in MISSING_ORDER if m in self.missing],
            "packs": self.packs,
        }
        out.update(self.extra)
        return out


class Admitter:
    """A prepared document: validated inputs and a text index that serve every candidate."""

    def __init__(
        self,
        document: str,
        schema: dict[str, Any] | Schema,
        policy: dict[str, Any] | Policy | None = None,
        *,
        document_id: str | None = None,
        document_source: str | None = None,
        references: list[Any] | None = None,
        packs: list[Any] | None = None,
    ) -> None:
        check_document(document, document_source)
        self.document = document
        self.document_id = document_id
        self.document_source = document_source
        self.schema = schema if isinstance(schema, Schema) else parse_schema(schema, packs)
        self.policy = policy if isinstance(policy, Policy) else parse_policy(policy)
        check_json_numbers("references", references)
        self.references = parse_references(references)
        self.vocab = self.schema.vocabulary
        self.table = UnitTable(self.schema.units, self.vocab)
        self.doc = TextIndex(document, self.vocab)
        self._ref_index: dict[str, TextIndex] = {}
        self._rules: dict[int, TextRules] = {}
        self.schema_sha256 = digest("schema", self.schema.digest_object)
        self.policy_sha256 = digest("policy", self.policy.digest_object)
        self.document_sha256 = text_digest("document", document)
        self._null_literals = {w.strip().lower() for w in self.vocab.null_literals}

    # --- texts -----------------------------------------------------------------------------

    def text_index(self, item: Item) -> TextIndex:
        if item.source == "reference":
            assert item.ref is not None
            idx = self._ref_index.get(item.ref)
            if idx is None:
                idx = TextIndex(self.references[item.ref]["text"], self.vocab)
                self._ref_index[item.ref] = idx
            return idx
        return self.doc

    def rules(self, index: TextIndex) -> TextRules:
        got = self._rules.get(id(index))
        if got is None:
            got = TextRules(index, self.table, self.policy.unit_window)
            self._rules[id(index)] = got
        return got

    # --- the receipt -----------------------------------------------------------------------

    def admit(self, candidates: list[Any], judgments: list[Any] | None = None) -> dict[str, Any]:
        if not isinstance(candidates, list | tuple):
            raise PacketError("candidates is not a list")
        check_json_numbers("candidates", list(candidates))
        parsed_judgments = parse_judgments(judgments, list(candidates))
        decisions = [self._decide(i, c) for i, c in enumerate(candidates)]
        self._flag_confidence(decisions)
        self._flag_conflicts(decisions)
        del parsed_judgments
        coverage = self._coverage(decisions)
        ordered = sorted(decisions, key=lambda d: (d.sha, d.index))
        summary = {"admitted": 0, "needs_verification": 0, "rejected": 0}
        out_decisions = []
        for d in ordered:
            dd = d.to_dict()
            summary[dd["outcome"]] += 1
            out_decisions.append(dd)
        receipt: dict[str, Any] = {
            "groundgate": SPEC_VERSION,
            "document": {
                "id": self.document_id,
                "sha256": self.document_sha256,
                "source": self.document_source,
            },
            "references": [
                {
                    "id": r["id"],
                    "sha256": text_digest("reference", r["text"]),
                    "source": r["source"],
                }
                for r in sorted(self.references.values(), key=lambda r: r["id"])
            ],
            "packs": [p.entry() for p in self.schema.packs],
            "schema_sha256": self.schema_sha256,
            "policy_sha256": self.policy_sha256,
            "decisions": out_decisions,
            "coverage": coverage,
            "judgments": [],
        }
        if self.schema.relations:
            receipt["relations"] = []
        receipt["summary"] = summary
        receipt["receipt_sha256"] = digest("receipt", receipt)
        return receipt

    # --- one candidate ---------------------------------------------------------------------

    def _decide(self, index: int, cand: Any) -> Decision:
        d = Decision(index, cand, digest("candidate", cand))
        try:
            self._check(d, cand)
        except Rejected as r:
            d.rejected = r.code
        d.passed = d.rejected is None
        return d

    def _describe(self, d: Decision, cand: Any) -> None:
        """The members of a decision that do not depend on how far the checks got (§5)."""
        if not isinstance(cand, dict):
            return
        name = cand.get("field")
        if not isinstance(name, str):
            return
        d.field_name = name
        unit = cand.get("unit")
        if isinstance(unit, str):
            d.unit = unit
        spec = self.schema.fields.get(name)
        if spec is None:
            return
        key = cand.get("key")
        if spec.keys is not None and isinstance(key, str):
            d.key = key
        raw = cand.get("value")
        if spec.type == "string":
            if isinstance(raw, str) and normalize_ws(raw):
                d.value = normalize_ws(raw)
        elif isinstance(raw, int) and not isinstance(raw, bool):
            d.value_dec = Decimal(raw)
            d.value = canonical(d.value_dec)
        elif isinstance(raw, str):
            dec = parse_value(raw)
            if dec is not None:
                d.value_dec = dec
                d.value = canonical(dec)

    def _check(self, d: Decision, cand: Any) -> None:
        self._describe(d, cand)
        items = self._step1(d, cand)
        spec = self._step2(d, cand)
        value = self._steps3to6(d, cand, spec)
        self._step7(d, cand, spec)
        value_items = [it for it in items if not it.outside and it.role == "value"]
        outside = [it for it in items if it.outside]
        if not value_items and not outside:
            raise Rejected("NO_EVIDENCE")
        if value_items:
            self._checked_path(d, cand, spec, value, value_items[0], items)
        else:
            self._outside_path(d, cand, spec, value, outside)

    # Step 1 ------------------------------------------------------------------------------

    def _step1(self, d: Decision, cand: Any) -> list[Item]:
        if not isinstance(cand, dict):
            raise Rejected("CANDIDATE_INVALID")
        items, well_formed = self._items(cand)
        if well_formed and items is not None:
            self._note_value_item(d, items)
        f = cand.get("field")
        value = cand.get("value")
        if not isinstance(f, str):
            raise Rejected("CANDIDATE_INVALID")
        if value is None or isinstance(value, bool) or not isinstance(value, str | int):
            raise Rejected("CANDIDATE_INVALID")
        for member in ("unit", "key"):
            v = cand.get(member)
            if v is not None and not isinstance(v, str):
                raise Rejected("CANDIDATE_INVALID")
        conf = cand.get("confidence")
        if conf is not None and (
            isinstance(conf, bool) or not isinstance(conf, int | float) or not 0 <= conf <= 1
        ):
            raise Rejected("CANDIDATE_INVALID")
        region = cand.get("search_region")
        if region is not None and (
            not isinstance(region, dict)
            or not _is_int(region.get("start"))
            or not _is_int(region.get("end"))
        ):
            raise Rejected("CANDIDATE_INVALID")
        if not well_formed or items is None:
            raise Rejected("CANDIDATE_INVALID")
        return items

    def _note_value_item(self, d: Decision, items: list[Item]) -> None:
        """Before step 9, the receipt still names a well-formed value item and its span."""
        for it in items:
            if not it.outside and it.role == "value":
                d.source = it.source
                d.ref = it.ref
                if it.has_offsets:
                    idx = self.text_index(it)
                    span = idx.char_span(it.start, it.end)
                    if span is not None:
                        d.evidence = {"start": it.start, "end": it.end}  # type: ignore[dict-item]
                return

    def _items(self, cand: dict[str, Any]) -> tuple[list[Item] | None, bool]:
        raw = cand.get("evidence")
        if raw is None:
            return [], True
        if isinstance(raw, dict):
            raw_items = [raw]
        elif isinstance(raw, list) and all(isinstance(x, dict) for x in raw):
            raw_items = raw
        else:
            return None, False
        items: list[Item] = []
        roles: dict[str, int] = {}
        for r in raw_items:
            if any(v is None for v in r.values()):
                return None, False
            source = r.get("source", "document")
            if source not in SOURCES:
                return None, False
            text = r.get("text")
            if text is not None and not isinstance(text, str):
                return None, False
            if source in ("external", "knowledge"):
                if "role" in r or "start" in r or "end" in r or "ref" in r:
                    return None, False
                if is_blank(text):
                    return None, False
                url = r.get("url")
                if source == "external":
                    if is_blank(url) or is_blank(r.get("retrieved")):
                        return None, False
                elif "url" in r or "retrieved" in r:
                    return None, False
                items.append(Item(source, "value", None, None, None, text, url, r))
                continue
            role = r.get("role", "value")
            if role not in ROLES:
                return None, False
            if "url" in r or "retrieved" in r:
                return None, False
            ref = r.get("ref")
            if source == "reference":
                if not isinstance(ref, str) or ref not in self.references:
                    return None, False
            elif "ref" in r:
                return None, False
            has_s, has_e = "start" in r, "end" in r
            if has_s != has_e:
                return None, False
            if has_s and (not _is_int(r["start"]) or not _is_int(r["end"])):
                return None, False
            if not has_s and is_blank(text):
                return None, False
            roles[role] = roles.get(role, 0) + 1
            if role == "field":
                if roles[role] > MAX_FIELD_ITEMS:
                    return None, False
            elif roles[role] > 1:
                return None, False
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
        return items, True

    # Steps 2-7 ---------------------------------------------------------------------------

    def _step2(self, d: Decision, cand: dict[str, Any]) -> FieldSpec:
        spec = self.schema.fields.get(cand["field"])
        if spec is None:
            raise Rejected("FIELD_UNKNOWN")
        return spec

    def _steps3to6(self, d: Decision, cand: dict[str, Any], spec: FieldSpec) -> Any:
        raw = cand["value"]
        if str(raw).strip().lower() in self._null_literals:
            raise Rejected("NULL_STRING_LITERAL")
        if spec.type == "string":
            if not isinstance(raw, str) or not normalize_ws(raw):
                raise Rejected("TYPE_INVALID")
            value: Any = d.value
        else:
            dec = d.value_dec
            if dec is None or (spec.type == "integer" and dec != dec.to_integral_value()):
                raise Rejected("TYPE_INVALID")
            value = dec
            if spec.minimum is not None and dec < spec.minimum:
                raise Rejected("RANGE_INVALID")
            if spec.maximum is not None and dec > spec.maximum:
                raise Rejected("RANGE_INVALID")
        if cand.get("unit") != spec.unit:
            raise Rejected("UNIT_INVALID")
        return value

    def _step7(self, d: Decision, cand: dict[str, Any], spec: FieldSpec) -> None:
        if spec.keys is not None and cand.get("key") not in spec.keys:
            raise Rejected("KEY_INVALID")

    # The checked path --------------------------------------------------------------------

    def _checked_path(
        self,
        d: Decision,
        cand: dict[str, Any],
        spec: FieldSpec,
        value: Any,
        item: Item,
        items: list[Item],
    ) -> None:
        idx = self.text_index(item)
        d.source = item.source
        d.ref = item.ref
        d.evidence = None
        cited = None
        if item.has_offsets:
            cited = idx.char_span(item.start, item.end)
            if cited is not None:
                d.evidence = idx.byte_span(*cited)
        region = (0, idx.n)
        if item.source == "document" and cand.get("search_region") is not None:
            r = cand["search_region"]
            span = idx.char_span(r["start"], r["end"])
            if span is None:
                raise Rejected("SPAN_INVALID")
            region = span
        if item.has_offsets:
            span = cited
            if span is None:
                raise Rejected("SPAN_INVALID")
            match = self._cited(d, spec, value, item, idx, span, region)
        else:
            match = self._quoted(d, spec, value, item, idx, region)
        rules = self.rules(idx)
        if match.derived:
            d.codes.add("VALUE_DERIVED")
        d.missing |= match.missing
        if match.unit_form_missing:
            d.missing.add("unit")
        if d.missing & {"sign", "scale", "unit"}:
            d.codes.add("PART_MISSING")
        if match.token is not None and ("unit" in d.missing or "UNIT_CITATION_INVALID" in d.codes):
            d.extra["evidence_units"] = self._evidence_units(match.token, idx)
        if item.has_offsets and item.text is not None and d.evidence is not None:
            s = idx.bytes.to_char(d.evidence["start"])
            e = idx.bytes.to_char(d.evidence["end"])
            if normalize_verbatim(item.text) != normalize_verbatim(idx.text[s:e]):
                d.codes.add("NON_VERBATIM_EVIDENCE")
        t = match.token
        if t is not None and spec.type != "string":
            comparators = rules.comparators(t)
            if any(c != spec.comparator for c in comparators):
                d.codes.add("QUALIFIED_VALUE")
            if t.scaled is not None and t.value is not None and abs(value) == abs(t.value):
                d.codes.add("SCALE_WORD")
            d.place = _place(t, value)

    def _cited(
        self,
        d: Decision,
        spec: FieldSpec,
        value: Any,
        item: Item,
        idx: TextIndex,
        span: tuple[int, int],
        region: tuple[int, int],
    ) -> Match:
        match = self._at(spec, value, idx, *span)
        if isinstance(match, Match) and match.clean:
            return match
        if self.policy.reanchor and not is_blank(item.text):
            assert item.text is not None
            passing = []
            for s, e in self._occurrences(idx, item.text, region):
                if (s, e) == span:
                    continue
                m = self._at(spec, value, idx, s, e)
                if isinstance(m, Match) and m.clean:
                    passing.append((s, e, m))
                    if len(passing) > 1:
                        break
            if len(passing) == 1:
                s, e, m = passing[0]
                d.evidence = idx.byte_span(s, e)
                d.codes.add("EVIDENCE_REANCHORED")
                return m
        if isinstance(match, Fail):
            self._reject_at(d, match, idx)
        return match

    def _quoted(
        self,
        d: Decision,
        spec: FieldSpec,
        value: Any,
        item: Item,
        idx: TextIndex,
        region: tuple[int, int],
    ) -> Match:
        assert item.text is not None
        occurrences = self._occurrences(idx, item.text, region)
        if not occurrences:
            raise Rejected("QUOTE_NOT_FOUND")
        for s, e in occurrences:
            m = self._at(spec, value, idx, s, e)
            if isinstance(m, Match) and m.clean:
                d.evidence = idx.byte_span(s, e)
                return m
        s, e = occurrences[0]
        d.evidence = idx.byte_span(s, e)
        m = self._at(spec, value, idx, s, e)
        if isinstance(m, Fail):
            self._reject_at(d, m, idx)
        return m

    def _reject_at(self, d: Decision, fail: Fail, idx: TextIndex) -> Match:
        if fail.code == "UNIT_NOT_IN_EVIDENCE" and fail.token is not None:
            d.extra["evidence_units"] = self._evidence_units(fail.token, idx)
        raise Rejected(fail.code)

    def _evidence_units(self, t: Token, idx: TextIndex) -> dict[str, Any]:
        """§5 evidence_units: the units found at a token whose unit check did not pass."""
        at = self.rules(idx).units_at(t)
        codes = set(at.prefix_codes)
        per = False
        if at.suffix is not None and at.suffix.in_sentence:
            codes |= set(at.suffix.codes)
            per = at.suffix.per
        codes = {c for c in codes if not self.table.vacuous(c)}
        return {
            "token": idx.byte_span(t.start, t.end),
            "next": sorted(codes),
            "per": per,
            "headers": [],
            "statements": [],
            "currency": [],
        }

    def _occurrences(
        self, idx: TextIndex, quote: str, region: tuple[int, int]
    ) -> list[tuple[int, int]]:
        parts = quote.split()
        if not parts:
            return []
        pattern = _quote_pattern(tuple(parts))
        lo, hi = region
        out = []
        pos = lo
        text = idx.text
        while True:
            m = pattern.search(text, pos, hi)
            if m is None:
                break
            out.append((m.start(), m.end()))
            pos = m.start() + 1
        return out

    # Steps 10 and 11 ---------------------------------------------------------------------

    def _at(self, spec: FieldSpec, value: Any, idx: TextIndex, s: int, e: int) -> Match | Fail:
        """Steps 10 and 11 at [s, e): a Match (maybe with missing parts), or the Fail."""
        if spec.type == "string":
            return self._string_at(value, idx, s, e)
        rules = self.rules(idx)
        tokens = idx.tokens_in(s, e)
        unit = spec.unit
        matching = []
        for t in tokens:
            if t.value is None:
                continue
            derived = self._derived(t, spec, idx)
            for dv, is_derived in derived:
                if dv == value:
                    matching.append((t, is_derived))
                    break
        if matching:
            if unit is None or self.table.vacuous(unit):
                t, der = matching[0]
                return Match(t, t.start, t.end, derived=der)
            for t, der in matching:
                if rules.units_at(t).has(unit):
                    return Match(t, t.start, t.end, derived=der)
            for t, der in matching:
                if not rules.units_at(t).form_next:
                    return Match(t, t.start, t.end, derived=der, unit_form_missing=True)
            return Fail("UNIT_NOT_IN_EVIDENCE", self._first_step10(spec, value, idx, tokens))
        for t in tokens:
            if t.value is None:
                continue
            missing = self._missing_parts(t, spec, value, idx)
            if missing is None:
                continue
            m = Match(t, t.start, t.end, missing=missing)
            if unit is None or self.table.vacuous(unit) or rules.units_at(t).has(unit):
                return m
            if not rules.units_at(t).form_next:
                m.unit_form_missing = True
                return m
            return Fail("UNIT_NOT_IN_EVIDENCE", t)
        return Fail("VALUE_NOT_IN_EVIDENCE")

    def _first_step10(
        self, spec: FieldSpec, value: Decimal, idx: TextIndex, tokens: list[Token]
    ) -> Token | None:
        """The first token that step 10 matches when a part can be missing."""
        for t in tokens:
            if t.value is None:
                continue
            if any(dv == value for dv, _ in self._derived(t, spec, idx)):
                return t
            if self._missing_parts(t, spec, value, idx) is not None:
                return t
        return None

    def _derived(self, t: Token, spec: FieldSpec, idx: TextIndex) -> list[tuple[Decimal, bool]]:
        """The token's derived values (§4.6), each with whether it is a derived reading."""
        assert t.value is not None
        out = [(t.value, False)]
        if t.scaled is not None:
            out.append((t.scaled, False))
        if spec.unit is not None and self._bracketed(t, spec, idx):
            out += [(-abs(v), True) for v, _ in list(out) if v != -abs(v)]
        return out

    def _bracketed(self, t: Token, spec: FieldSpec, idx: TextIndex) -> bool:
        """Brackets around the value: ``(`` before with whitespace and unit prefixes, ``)`` after."""
        text = idx.text
        j = t.start
        prefixes = self.table.units.get(spec.unit or "", ([], []))[0]
        while True:
            while j > 0 and text[j - 1].isspace():
                j -= 1
            for p in sorted(prefixes, key=len, reverse=True):
                if text.startswith(p, j - len(p)) and j - len(p) >= 0:
                    j -= len(p)
                    break
            else:
                break
        if j == 0 or text[j - 1] != "(":
            return False
        k = t.end
        n = idx.n
        while k < n and text[k].isspace():
            k += 1
        return k < n and text[k] == ")"

    def _missing_parts(
        self, t: Token, spec: FieldSpec, value: Decimal, idx: TextIndex
    ) -> set[str] | None:
        assert t.value is not None
        derived = [dv for dv, _ in self._derived(t, spec, idx)]
        if any(value == -dv for dv in derived):
            return {"sign"}
        if t.scaled is None:
            for power in MISSING_POWERS:
                f = pow10(power)
                if any(value == mul(dv, f) for dv in derived):
                    return {"scale"}
            for power in MISSING_POWERS:
                if value == -mul(t.value, pow10(power)):
                    return {"sign", "scale"}
        return None

    def _string_at(self, value: str, idx: TextIndex, s: int, e: int) -> Match | Fail:
        pattern = _quote_pattern(tuple(value.split()))
        m = pattern.search(idx.text, s, e)
        if m is None:
            return Fail("VALUE_NOT_IN_EVIDENCE")
        return Match(None, m.start(), m.end())

    # The outside path --------------------------------------------------------------------

    def _outside_path(
        self,
        d: Decision,
        cand: dict[str, Any],
        spec: FieldSpec,
        value: Any,
        outside: list[Item],
    ) -> None:
        raise Rejected("VALUE_NOT_IN_EVIDENCE")

    # Flags over all candidates -----------------------------------------------------------

    def _flag_confidence(self, decisions: list[Decision]) -> None:
        floor = self.policy.min_confidence
        if floor is None:
            return
        for d in decisions:
            if d.passed:
                conf = d.candidate.get("confidence")
                if conf is not None and conf < floor:
                    d.codes.add("LOW_CONFIDENCE")

    def _flag_conflicts(self, decisions: list[Decision]) -> None:
        groups: dict[tuple[str, str | None], list[Decision]] = {}
        for d in decisions:
            if not d.passed or d.field_name is None:
                continue
            spec = self.schema.fields[d.field_name]
            if spec.multiple:
                continue
            groups.setdefault((d.field_name, d.key), []).append(d)
        for group in groups.values():
            if len({d.value for d in group}) > 1:
                for d in group:
                    d.codes.add("CONFLICTING_CANDIDATES")

    def _coverage(self, decisions: list[Decision]) -> list[dict[str, str]]:
        present = {d.field_name for d in decisions if d.passed}
        return [
            {"field": name, "code": "REQUIRED_FIELD_MISSING"}
            for name in sorted(self.schema.fields)
            if self.schema.fields[name].required and name not in present
        ]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _place(t: Token, value: Decimal) -> Decimal:
    place = pow10(-t.places)
    if t.value:
        place = abs(place * value / t.value)
    return place


_QUOTE_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _quote_pattern(parts: tuple[str, ...]) -> re.Pattern[str]:
    pattern = _QUOTE_CACHE.get(parts)
    if pattern is None:
        pattern = re.compile(r"\s+".join(re.escape(p) for p in parts))
        if len(_QUOTE_CACHE) > 4096:
            _QUOTE_CACHE.clear()
        _QUOTE_CACHE[parts] = pattern
    return pattern
