"""The decision procedure of SPEC §3: one receipt for a document, a schema and its candidates.

:class:`Admitter` validates the packet's fixed parts and reads the document once (tokens,
sentences, lines, mentions, headings, units and qualifiers are indexed lazily and kept), then
decides any number of candidates against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from groundswell.shared.admit.checked import CheckedPath
from groundswell.shared.admit.currency import CurrencyNames, CurrencyScales, ScaleForms
from groundswell.shared.admit.digest import SPEC_VERSION, digest, text_digest
from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.guard_codes import GUARD_FLAGS, GUARD_INFO
from groundswell.shared.admit.index import TextIndex, Token
from groundswell.shared.admit.items import Ctx, Item, Match, Rejected, parse_items
from groundswell.shared.admit.keys import KeyReader, Mentions
from groundswell.shared.admit.packet import (
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
from groundswell.shared.admit.packs import pack_word_key
from groundswell.shared.admit.rules import TextRules, UnitTable, alternation
from groundswell.shared.admit.tables import Headings, Lines, Tables
from groundswell.shared.admit.text import canonical, normalize_verbatim, normalize_ws, parse_value

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
# The guarded policy's codes come after groundgate's (groundgate's policies never raise them).
_CODE_RANK = {
    c: i for i, c in enumerate(FLAG_ORDER + INFO_ORDER + tuple(GUARD_FLAGS) + tuple(GUARD_INFO))
}
FLAGS = frozenset(FLAG_ORDER) | frozenset(GUARD_FLAGS)
_CITATION_FLAG = {
    "sign": "SIGN_CITATION_INVALID",
    "scale": "SCALE_CITATION_INVALID",
    "unit": "UNIT_CITATION_INVALID",
    "key": "KEY_CITATION_INVALID",
}
_ACTION_RANK = {"admit": 0, "review": 1, "reject": 2}


@dataclass
class Decision:
    index: int
    candidate: Any
    sha: str
    field_name: str | None = None
    key: str | None = None
    codes: set[str] = field(default_factory=set)
    value: str | None = None
    value_dec: Decimal | None = None
    unit: str | None = None
    source: str | None = None
    ref: str | None = None
    url: str | None = None
    evidence: dict[str, int] | None = None
    evidence_chars: tuple[int, int] | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    packs: list[str] = field(default_factory=list)
    rejected: str | None = None
    place: Fraction | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.rejected is None

    @property
    def outcome(self) -> str:
        if self.rejected is not None:
            return "rejected"
        return "needs_verification" if self.codes & FLAGS else "admitted"

    def to_dict(self) -> dict[str, Any]:
        cid = self.candidate.get("id") if isinstance(self.candidate, dict) else None
        codes = (
            [self.rejected]
            if self.rejected is not None
            else sorted(self.codes, key=_CODE_RANK.__getitem__)
        )
        out: dict[str, Any] = {
            "candidate_id": cid,
            "candidate_sha256": self.sha,
            "field": self.field_name,
            "key": self.key,
            "outcome": self.outcome,
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


@dataclass
class _SchemaParts:
    """What a schema's vocabulary builds, independent of any document."""

    table: UnitTable
    schema_sha256: str
    null_literals: set[str]
    currency_scales: CurrencyScales
    currency_names: CurrencyNames
    scale_forms: ScaleForms
    loss_words: re.Pattern[str] | None
    gain_words: re.Pattern[str]
    sign_negation: re.Pattern[str]
    pack_words: dict[str, Any]


def _schema_parts(schema: Schema) -> _SchemaParts:
    """Built once per parsed schema (kept on it), so that a corpus of many documents under
    one schema pays for its vocabulary once, not per document."""
    parts = schema.__dict__.get("_parts")
    if parts is None:
        vocab = schema.vocabulary
        names = CurrencyNames(vocab)
        parts = _SchemaParts(
            table=UnitTable(schema.units, vocab),
            schema_sha256=digest("schema", schema.digest_object),
            null_literals={w.strip().lower() for w in vocab.null_literals},
            currency_scales=CurrencyScales(vocab),
            currency_names=names,
            scale_forms=ScaleForms(vocab, names, schema.units),
            loss_words=re.compile(alternation(vocab.loss)) if vocab.loss else None,
            gain_words=re.compile(alternation(vocab.gain) or r"(?!x)x"),
            sign_negation=re.compile(
                "(?:" + (alternation(vocab.sign_negations) or r"(?!x)x") + r")\s*\Z"
            ),
            pack_words={pid: words for pid, words in vocab.added.items() if words},
        )
        schema.__dict__["_parts"] = parts
    return parts


class Admitter:
    """A prepared document: validated inputs and text indexes that serve every candidate."""

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
        shared = _schema_parts(self.schema)
        self.table = shared.table
        self.doc = TextIndex(document, self.vocab)
        self.schema_sha256 = shared.schema_sha256
        self.policy_sha256 = digest("policy", self.policy.digest_object)
        self.document_sha256 = text_digest("document", document)
        self._null_literals = shared.null_literals
        self.currency_scales = shared.currency_scales
        self.currency_names = shared.currency_names
        self.scale_forms = shared.scale_forms
        self.loss_words = shared.loss_words
        self.gain_words = shared.gain_words
        self.sign_negation = shared.sign_negation
        self.checked = CheckedPath(self)
        self._ref_index: dict[str, TextIndex] = {}
        self._per_text: dict[tuple[int, str, Any], Any] = {}
        self._pack_words = shared.pack_words
        self._doc_packs: set[str] | None = None

    # --- per-text helpers (each built once per text) --------------------------------------

    def text_index(self, item: Item) -> TextIndex:
        if item.source == "reference":
            assert item.ref is not None
            idx = self._ref_index.get(item.ref)
            if idx is None:
                idx = TextIndex(self.references[item.ref]["text"], self.vocab)
                self._ref_index[item.ref] = idx
            return idx
        return self.doc

    def _cached(self, index: TextIndex, kind: str, key: Any, build: Any) -> Any:
        k = (id(index), kind, key)
        got = self._per_text.get(k)
        if got is None:
            got = build()
            self._per_text[k] = got
        return got

    def rules(self, index: TextIndex) -> TextRules:
        return self._cached(
            index, "rules", None, lambda: TextRules(index, self.table, self.policy.unit_window)
        )

    def lines(self, index: TextIndex) -> Lines:
        return self._cached(index, "lines", None, lambda: Lines(index))

    def headings(self, index: TextIndex) -> Headings:
        return self._cached(index, "headings", None, lambda: Headings(self, index))

    def tables(self, index: TextIndex) -> Tables:
        return self._cached(index, "tables", None, lambda: Tables(self, index))

    def key_reader(self, index: TextIndex, keys: list[str]) -> KeyReader:
        return self._cached(index, "keys", tuple(keys), lambda: KeyReader(self, index, keys))

    def mentions(self, index: TextIndex, words: list[str]) -> Mentions:
        return self._cached(index, "mentions", tuple(words), lambda: Mentions(index, words))

    def all_aliases(self, index: TextIndex) -> Mentions | None:
        words = sorted({a for f in self.schema.fields.values() for a in (f.aliases or [])})
        return self.mentions(index, words) if words else None

    def evidence_units(self, t: Token, index: TextIndex, spec: FieldSpec) -> dict[str, Any]:
        """§5 evidence_units: the units found at a token whose unit check did not pass."""
        at = self.rules(index).units_at(t)
        codes = set(at.prefix_codes)
        per = False
        if at.suffix is not None and at.suffix.in_sentence:
            codes |= set(at.suffix.codes)
            per = at.suffix.per
        codes = {c for c in codes if not self.table.vacuous(c)}
        headers, statements, currency = self.headings(index).report(t)
        return {
            "token": index.byte_span(t.start, t.end),
            "next": sorted(codes),
            "per": per,
            "headers": headers,
            "statements": statements,
            "currency": currency,
        }

    # --- the receipt -----------------------------------------------------------------------

    def admit(self, candidates: list[Any], judgments: list[Any] | None = None) -> dict[str, Any]:
        if not isinstance(candidates, list | tuple):
            raise PacketError("candidates is not a list")
        candidates = list(candidates)
        check_json_numbers("candidates", candidates)
        parsed_judgments = parse_judgments(judgments, candidates)
        decisions = [self._decide(i, c) for i, c in enumerate(candidates)]
        self._flag_confidence(decisions)
        self._flag_conflicts(decisions)
        relations = self._relations(decisions)
        applied = self._judge(decisions, parsed_judgments)
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
            **self._receipt_members(),
            "decisions": out_decisions,
            "coverage": coverage,
            "judgments": applied,
        }
        if self.schema.relations:
            receipt["relations"] = relations
        receipt["summary"] = summary
        receipt["receipt_sha256"] = digest("receipt", receipt)
        return receipt

    def _receipt_members(self) -> dict[str, Any]:
        """Members a policy layered over groundgate's adds to the receipt (none here)."""
        return {}

    # --- one candidate ---------------------------------------------------------------------

    def _decide(self, index: int, cand: Any) -> Decision:
        d = Decision(index, cand, digest("candidate", cand))
        try:
            self._check(d, cand)
        except Rejected as r:
            d.rejected = r.code
        d.packs = self._decision_packs(cand)
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
        if not isinstance(cand, dict):
            raise Rejected("CANDIDATE_INVALID")
        items = parse_items(cand.get("evidence"), self.references)
        if items is not None:
            self._note_value_item(d, items)
        self._step1(cand, items)
        assert items is not None
        spec = self.schema.fields.get(cand["field"])
        if spec is None:
            raise Rejected("FIELD_UNKNOWN")
        value = self._steps3to6(d, cand, spec)
        if spec.keys is not None and cand.get("key") not in spec.keys:
            raise Rejected("KEY_INVALID")
        value_items = [it for it in items if not it.outside and it.role == "value"]
        outside = [it for it in items if it.outside]
        if not value_items and not outside:
            raise Rejected("NO_EVIDENCE")
        if value_items:
            self._checked_path(d, cand, spec, value, value_items[0], items)
        else:
            self._outside_path(d, cand, spec, value, items, outside)

    def _step1(self, cand: dict[str, Any], items: list[Item] | None) -> None:
        value = cand.get("value")
        if not isinstance(cand.get("field"), str):
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
        if items is None:
            raise Rejected("CANDIDATE_INVALID")

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

    # --- the checked path (§3.1) -----------------------------------------------------------

    def _checked_path(
        self,
        d: Decision,
        cand: dict[str, Any],
        spec: FieldSpec,
        value: Any,
        item: Item,
        items: list[Item],
    ) -> None:
        cp = self.checked
        ctx = cp.context(spec, value, cand, items, item)
        idx = ctx.index
        d.source = item.source
        d.ref = item.ref
        d.evidence = None
        cited = idx.char_span(item.start, item.end) if item.has_offsets else None
        if cited is not None:
            d.evidence = idx.byte_span(*cited)
            d.evidence_chars = cited
        region = (0, idx.n)
        if item.source == "document" and cand.get("search_region") is not None:
            r = cand["search_region"]
            span = idx.char_span(r["start"], r["end"])
            if span is None:
                raise Rejected("SPAN_INVALID")
            region = span
        if item.has_offsets and cited is None:
            raise Rejected("SPAN_INVALID")
        m = cp.settle(ctx, cp.value_match(d, ctx, region))
        self._after_match(d, ctx, m)

    def _after_match(self, d: Decision, ctx: Ctx, m: Match) -> None:
        """Role checks, missing parts and the flags of a value that passed steps 10-11."""
        cp = self.checked
        spec = ctx.spec
        idx = ctx.index
        item = ctx.value_item
        passes = cp.check_roles(d, ctx, m)
        if m.derived:
            d.codes.add("VALUE_DERIVED")
        d.missing |= m.missing
        if not m.unit_present:
            d.missing.add("unit")
        for role, flag in _CITATION_FLAG.items():
            if role in passes and not passes[role] and role != "key":
                d.codes.add(flag)
        if ctx.fields and spec.aliases and not passes["field"]:
            d.codes.add("FIELD_CITATION_INVALID")
        if item is not None and item.has_offsets and item.text is not None:
            s, e = d.evidence_chars or (0, 0)
            if normalize_verbatim(item.text) != normalize_verbatim(idx.text[s:e]):
                d.codes.add("NON_VERBATIM_EVIDENCE")
        self._value_flags(d, ctx, m)
        if spec.keys is not None:
            self._key_flags(d, ctx, m, passes.get("key"))
        if d.missing & {"sign", "scale", "unit"}:
            d.codes.add("PART_MISSING")
        t = m.token
        if t is not None and ("unit" in d.missing or "UNIT_CITATION_INVALID" in d.codes):
            d.extra["evidence_units"] = self.evidence_units(t, idx, spec)
        if t is not None and t.value is not None:
            d.place = _place(t, ctx.value)

    def _value_flags(self, d: Decision, ctx: Ctx, m: Match) -> None:
        t = m.token
        if t is None or ctx.spec.type == "string":
            return
        comparators = self.rules(ctx.index).comparators(t)
        if any(c != ctx.spec.comparator for c in comparators):
            d.codes.add("QUALIFIED_VALUE")
        if t.scaled is not None and t.value is not None and abs(ctx.value) == abs(t.value):
            d.codes.add("SCALE_WORD")

    def _key_flags(self, d: Decision, ctx: Ctx, m: Match, key_item_passed: bool | None) -> None:
        key = ctx.cand.get("key")
        at = self.checked.keys_at(ctx, m)
        if key_item_passed is False:
            d.codes.add("KEY_CITATION_INVALID")
        if key in at:
            return
        if (
            key_item_passed
            and not at
            and self.key_reader(ctx.index, ctx.spec.keys).column_rule(ctx, m)
        ):
            d.codes.add("KEY_CITED")
            return
        d.codes.add("KEY_NOT_AT_VALUE")
        if ctx.key is None:
            d.missing.add("key")

    # --- the outside path (§3.2) -----------------------------------------------------------

    def _outside_path(
        self,
        d: Decision,
        cand: dict[str, Any],
        spec: FieldSpec,
        value: Any,
        items: list[Item],
        outside: list[Item],
    ) -> None:
        holders: list[tuple[Item, str, Match | None, TextIndex | None]] = []
        for it in outside:
            assert it.text is not None
            if it.source == "knowledge":
                holders.append((it, self.policy.knowledge, None, None))
                continue
            idx = self._cached(
                self.doc, "external", it.text, lambda t=it.text: TextIndex(t, self.vocab)
            )
            ctx = Ctx(spec, value, cand, [], None, idx, outside=True)
            m = self.checked.at(ctx, 0, idx.n)
            if isinstance(m, Match) and m.clean:
                action = "admit" if self._allowed(it.url or "") else self.policy.other
                holders.append((it, action, m, idx))
        if not holders:
            raise Rejected("VALUE_NOT_IN_EVIDENCE")
        best = min(
            range(len(holders)),
            key=lambda i: (
                _ACTION_RANK[holders[i][1]],
                0 if holders[i][0].source == "external" else 1,
                i,
            ),
        )
        it, action, m, idx = holders[best]
        d.source = it.source
        d.url = it.url if it.source == "external" else None
        d.ref = None
        d.evidence = None
        if action == "reject":
            raise Rejected("SOURCE_REJECTED")
        if action == "review":
            d.codes.add("EVIDENCE_QUOTED" if it.source == "external" else "EVIDENCE_STATED")
        else:
            d.codes.add("ADMITTED_BY_POLICY")
        if m is not None and idx is not None:
            ctx = Ctx(spec, value, cand, [], None, idx, outside=True)
            self._value_flags(d, ctx, m)
            t = m.token
            if t is not None and self.headings(idx).conflict(t, spec.unit or "") and spec.unit:
                d.missing.add("unit")
                d.codes.add("PART_MISSING")
            if spec.keys is not None:
                key = cand.get("key")
                at = self.key_reader(idx, spec.keys).keys_at(m.start, m.end)
                if key not in at:
                    d.codes.add("KEY_NOT_AT_VALUE")
                    if not any(i.role == "key" and not i.outside for i in items):
                        d.missing.add("key")
        d.place = _written_place(d.value)

    def _allowed(self, url: str) -> bool:
        for entry in self.policy.allow:
            if entry == "*":
                return True
            if entry == "document-domain":
                mine = _host(url)
                theirs = _host(self.document_source) if self.document_source else None
                if mine is not None and theirs is not None and mine == theirs:
                    return True
                continue
            if url.startswith(entry):
                return True
        return False

    # --- flags over all candidates ---------------------------------------------------------

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
            if self.schema.fields[d.field_name].multiple:
                continue
            groups.setdefault((d.field_name, d.key), []).append(d)
        for group in groups.values():
            if len({d.value for d in group}) > 1:
                for d in group:
                    d.codes.add("CONFLICTING_CANDIDATES")

    def _relations(self, decisions: list[Decision]) -> list[dict[str, Any]]:
        """Step 13 (§3.4): each relation at each relation key, exact arithmetic."""
        out = []
        passed: dict[tuple[str, str | None], list[Decision]] = {}
        for d in decisions:
            if d.passed and d.field_name is not None:
                key = d.key if self.schema.fields[d.field_name].keys is not None else None
                passed.setdefault((d.field_name, key), []).append(d)
        failed: set[int] = set()
        for rel in self.schema.relations:
            names = [rel.total] + [p for p, _ in rel.parts]
            if rel.keyed:
                common = set(self.schema.fields[rel.total].keys or [])
                for n in names[1:]:
                    common &= set(self.schema.fields[n].keys or [])
                keys: list[str | None] = sorted(common)
            else:
                keys = [None]
            for key in keys:
                values: dict[str, tuple[Fraction, Fraction]] = {}
                for n in names:
                    group = passed.get((n, key), [])
                    distinct = {d.value for d in group}
                    if not group or len(distinct) != 1 or group[0].value_dec is None:
                        break
                    places = [d.place for d in group if d.place is not None]
                    place = min(places) if places else Fraction(0)
                    values[n] = (Fraction(group[0].value_dec), place)
                else:
                    total, tplace = values[rel.total]
                    diff = total
                    allowance = Fraction(rel.tolerance) + tplace / 2
                    for n, f in rel.parts:
                        v, place = values[n]
                        diff -= Fraction(f) * v
                        allowance += abs(Fraction(f)) * place / 2
                    holds = abs(diff) <= allowance
                    out.append(
                        {
                            "id": rel.id,
                            "key": key,
                            "holds": holds,
                            "difference": _fraction_text(diff),
                            "allowance": _fraction_text(allowance),
                        }
                    )
                    if not holds:
                        for n in names:
                            for d in passed.get((n, key), []):
                                failed.add(d.index)
        for d in decisions:
            if d.index in failed:
                d.codes.add("RELATION_FAILED")
        out.sort(key=lambda r: (r["id"], "" if r["key"] is None else r["key"]))
        return out

    def _judge(self, decisions: list[Decision], judgments: list[dict[str, Any]]) -> list[Any]:
        """Step 12: recorded judgments that apply, and what each does."""
        judge = self.policy.judge
        if judge is None:
            return []
        applied = []
        for j in judgments:
            if j["judge"] != {"id": judge["id"], "digest": judge["digest"]}:
                continue
            question = j["question"]
            table = judge.get("clear" if question == "key" else "doubt", {})
            threshold = table.get("KEY_NOT_AT_VALUE" if question == "key" else "field_match")
            if threshold is None:
                continue
            d = decisions[j["_index"]]
            if not d.passed:
                continue
            p = j["p"]
            if question == "key":
                key = d.candidate.get("key")
                if p >= threshold:
                    if "KEY_NOT_AT_VALUE" in d.codes:
                        if j.get("answer") == key:
                            d.codes.discard("KEY_NOT_AT_VALUE")
                            d.codes.add("MODEL_CLEARED")
                        else:
                            d.codes.add("MODEL_DOUBT")
                    elif "KEY_CITED" in d.codes and j.get("answer") != key:
                        d.codes.add("MODEL_DOUBT")
                entry = {
                    "candidate_sha256": d.sha,
                    "question": "key",
                    "answer": j.get("answer"),
                    "p": p,
                }
            else:
                if p < threshold:
                    d.codes.add("MODEL_DOUBT")
                entry = {"candidate_sha256": d.sha, "question": "field_match", "p": p}
            applied.append((d.sha, d.index, question, entry))
        applied.sort(key=lambda a: (a[0], a[1], a[2]))
        return [a[3] for a in applied]

    def _coverage(self, decisions: list[Decision]) -> list[dict[str, str]]:
        present = {d.field_name for d in decisions if d.passed}
        return [
            {"field": name, "code": "REQUIRED_FIELD_MISSING"}
            for name in sorted(self.schema.fields)
            if self.schema.fields[name].required and name not in present
        ]

    # --- §5 decision packs -----------------------------------------------------------------

    def _decision_packs(self, cand: Any) -> list[str]:
        out: set[str] = set()
        if self._pack_words:
            if self._doc_packs is None:
                texts = [pack_word_key(self.document)] + [
                    pack_word_key(r["text"]) for r in self.references.values()
                ]
                self._doc_packs = {
                    pid
                    for pid, words in self._pack_words.items()
                    if any(w in t for t in texts for w in words)
                }
            out |= self._doc_packs
            strings = [pack_word_key(s) for s in _strings(cand)]
            for pid, words in self._pack_words.items():
                if pid not in out and any(w in s for s in strings for w in words):
                    out.add(pid)
        if isinstance(cand, dict) and isinstance(cand.get("field"), str):
            spec = self.schema.fields.get(cand["field"])
            if spec is not None and spec.template_pack is not None:
                out.add(spec.template_pack)
        return sorted(out)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _place(t: Token, value: Any) -> Fraction:
    """The place of a token's value (§3.4): its last written digit, scaled with the value."""
    place = Fraction(1, 10**t.places)
    if t.value:
        place = place * abs(Fraction(value)) / abs(Fraction(t.value))
    return place


def _written_place(value: str | None) -> Fraction | None:
    if value is None:
        return None
    _, dot, frac = value.partition(".")
    return Fraction(1, 10 ** len(frac)) if dot else Fraction(1)


def _fraction_text(x: Fraction) -> str:
    """The canonical decimal of a fraction whose denominator divides a power of ten."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    x = abs(x)
    places = 0
    while (x * 10**places).denominator != 1 and places < 1000:
        places += 1
    digits = str(int(x * 10**places)).rjust(places + 1, "0")
    whole, frac = digits[: len(digits) - places], digits[len(digits) - places :].rstrip("0")
    return sign + whole + ("." + frac if frac else "")


def _host(url: str) -> str | None:
    """The host of a URL (§2.4)."""
    i = url.find("://")
    if i == -1:
        return None
    rest = url[i + 3 :]
    for stop in "/\\?#":
        j = rest.find(stop)
        if j != -1:
            rest = rest[:j]
    at = rest.rfind("@")
    if at != -1:
        rest = rest[at + 1 :]
    if rest.startswith("["):
        j = rest.find("]")
        return rest[: j + 1].lower() if j != -1 else rest.lower()
    colon = rest.find(":")
    if colon != -1:
        rest = rest[:colon]
    return rest.lower()
