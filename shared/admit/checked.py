"""The checked path (SPEC §3.1, §4.6): steps 10 and 11 at a span, re-anchoring, quotes, role
items, missing parts, and the keys at the value."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from groundswell.shared.admit import occurrences as occ
from groundswell.shared.admit.index import Token
from groundswell.shared.admit.items import Ctx, Fail, Item, Match, Rejected
from groundswell.shared.admit.keys import Mentions
from groundswell.shared.admit.text import digits_value, fold, mul, normalize_verbatim, pow10

if TYPE_CHECKING:
    from groundswell.shared.admit.engine import Admitter, Decision

MISSING_POWERS = (3, 5, 6, 7, 9, 12)
_LETTERS = re.compile(r"[^\W\d_]+")


class CheckedPath:
    """Steps 9-11 and the role checks for one admitter (schema, policy, vocabulary)."""

    def __init__(self, admitter: Admitter) -> None:
        self.a = admitter
        self.vocab = admitter.vocab
        self.table = admitter.table
        self._scale_word_re = _scale_word_pattern(list(self.vocab.scale_words))
        self._scale_folded = {fold(w): p for w, p in self.vocab.scale_words.items()}

    # --- context ---------------------------------------------------------------------------

    def context(
        self, spec: Any, value: Any, cand: dict[str, Any], items: list[Item], vitem: Item | None
    ) -> Ctx:
        idx = self.a.text_index(vitem) if vitem is not None else self.a.doc
        ctx = Ctx(spec, value, cand, items, vitem, idx)
        for it in items:
            if it.outside or it.role == "value":
                continue
            if it.role == "field":
                ctx.fields.append(it)
            else:
                setattr(ctx, it.role, it)
        if ctx.scale is not None:
            ctx.item_scale = self.item_scale(ctx.scale)
        return ctx

    def item_text(self, item: Item) -> str:
        """An item's text: its ``text``, or the text at its offsets in its own source."""
        if item.text is not None:
            return item.text
        idx = self.a.text_index(item)
        span = idx.char_span(item.start, item.end)
        return idx.text[span[0] : span[1]] if span is not None else ""

    def item_scale(self, item: Item) -> Decimal | None:
        """The factor of the first scale word (with a final s) or currency scale in the text."""
        text = self.item_text(item)
        folded = fold(text)
        best: tuple[int, int] | None = None
        m = self._scale_word_re.search(folded)
        if m is not None:
            best = (m.start(), self._scale_folded[m.group(1)])
        cs = self.a.currency_scales.first(text)
        if cs is not None and (best is None or cs[0] < best[0]):
            best = (cs[0], cs[2])
        return pow10(best[1]) if best is not None else None

    # --- steps 10 and 11 ------------------------------------------------------------------

    def at(self, ctx: Ctx, s: int, e: int, *, cited: bool = False) -> Match | Fail:
        """Steps 10 and 11 at [s, e) of the value's text."""
        idx = ctx.index
        if ctx.is_string:
            return self._string_at(ctx, s, e)
        rules = self.a.rules(idx)
        unit = ctx.spec.unit
        tokens = idx.tokens_in(s, e)
        matching: list[tuple[Token, bool]] = []
        for t in tokens:
            if t.value is None:
                continue
            for dv, derived in self.derived(ctx, t):
                if dv == ctx.value:
                    matching.append((t, derived))
                    break
        if matching:
            candidates = [(t, der, set()) for t, der in matching]
        else:
            candidates = []
            for t in tokens:
                if t.value is None:
                    continue
                missing = self.missing_parts(ctx, t)
                if missing is not None:
                    candidates.append((t, False, missing))
                    break
            if not candidates:
                return Fail("VALUE_NOT_IN_EVIDENCE")
        if unit is None or self.table.vacuous(unit):
            t, der, missing = candidates[0]
            return self._finish(ctx, Match(t, t.start, t.end, set(missing), der), cited)
        # Choices are made as if no heading unit reaches a token; a heading conflict applies
        # at the evidence only (settle).
        for t, der, missing in candidates:
            if rules.units_at(t).has(unit):
                return self._finish(ctx, Match(t, t.start, t.end, set(missing), der), cited)
        for t, der, missing in candidates:
            if not rules.units_at(t).form_next:
                m = Match(t, t.start, t.end, set(missing), der, no_unit_form=True)
                return self._finish(ctx, m, cited)
        return Fail("UNIT_NOT_IN_EVIDENCE", candidates[0][0])

    def settle(self, ctx: Ctx, m: Match) -> Match:
        """A heading conflict at the evidence's token: the unit is never present (§4.3)."""
        t = m.token
        unit = ctx.spec.unit
        if t is None or unit is None or ctx.outside:
            return m
        if self.a.headings(ctx.index).conflict(t, unit):
            m.conflict = True
            if ctx.unit is None:
                m.unit_present = False
        return m

    def _finish(self, ctx: Ctx, m: Match, cited: bool) -> Match:
        """The missing unit, and the scale a heading gives (§3.1)."""
        t = m.token
        assert t is not None
        if m.no_unit_form:
            if ctx.unit is not None or (cited and self.unit_at_place(ctx, t)):
                m.unit_present = True
            else:
                m.unit_present = False
        if (
            not ctx.outside
            and ctx.scale is None
            and t.scaled is None
            and ctx.spec.unit != "%"
            and "scale" not in m.missing
            and self.a.headings(ctx.index).scale_reaches(t)
            and abs(ctx.value) == abs(t.value)
        ):
            m.missing.add("scale")
            m.derived = False
        return m

    def _as_written(self, ctx: Ctx, t: Token) -> list[Decimal]:
        assert t.value is not None
        values = [t.value]
        if self.negative(ctx, t):
            values.append(-abs(t.value))
        return values

    def _string_at(self, ctx: Ctx, s: int, e: int) -> Match | Fail:
        parts = tuple(ctx.value.split())
        found = occ.within(occ.occurrences(ctx.index, " ".join(parts)), s, e)
        if not found:
            return Fail("VALUE_NOT_IN_EVIDENCE")
        vs, ve = found[0]
        return Match(None, vs, ve)

    def negative(self, ctx: Ctx, t: Token) -> bool:
        """A sign item, or brackets around the token on a field with a unit (§4.6)."""
        if ctx.sign is not None and not ctx.outside:
            return True
        return ctx.spec.unit is not None and self.brackets(ctx, t) is not None

    def derived(self, ctx: Ctx, t: Token) -> list[tuple[Decimal, bool]]:
        """The token's derived values, each with whether it is a derived reading (§4.6)."""
        assert t.value is not None
        if ctx.item_scale is not None and t.scaled is None and not ctx.outside:
            out = [(mul(t.value, ctx.item_scale), True)]
        else:
            out = [(t.value, False)]
            if t.scaled is not None:
                out.append((t.scaled, False))
        if self.negative(ctx, t):
            out += [(-abs(v), True) for v, _ in list(out) if v != -abs(v)]
        # A reading equal to the number as written or its scaled value is not derived (0).
        plain = {t.value, t.scaled}
        return [(v, der and v not in plain) for v, der in out]

    def missing_parts(self, ctx: Ctx, t: Token) -> set[str] | None:
        """The parts a token misses for the value: sign, then scale, then both (§3.1)."""
        assert t.value is not None
        value = ctx.value
        derived = [dv for dv, _ in self.derived(ctx, t)]
        has_sign = ctx.sign is not None and not ctx.outside
        has_scale = ctx.scale is not None and not ctx.outside
        if not has_sign and value < 0 and any(value == -abs(dv) for dv in derived):
            return {"sign"}
        if not has_scale and t.scaled is None:
            for power in MISSING_POWERS:
                f = pow10(power)
                if any(value == mul(dv, f) for dv in derived):
                    return {"scale"}
            if not has_sign:
                for power in MISSING_POWERS:
                    if value == -mul(abs(t.value), pow10(power)):
                        return {"sign", "scale"}
        return None

    def brackets(self, ctx: Ctx, t: Token) -> tuple[int, int] | None:
        """The ``(`` and ``)`` around the token, with whitespace and unit prefixes between."""
        idx = ctx.index
        text = idx.text
        j = t.start
        unit = ctx.spec.unit
        prefixes = sorted(self.table.units.get(unit or "", ([], []))[0], key=len, reverse=True)
        while True:
            while j > 0 and text[j - 1].isspace():
                j -= 1
            for p in prefixes:
                if j - len(p) >= 0 and text.startswith(p, j - len(p)):
                    j -= len(p)
                    break
            else:
                break
        if j == 0 or text[j - 1] != "(":
            return None
        k = t.end
        n = idx.n
        while k < n and text[k].isspace():
            k += 1
        if k < n and text[k] == ")":
            return j - 1, k + 1
        return None

    # --- the value item: cited span, re-anchoring, quotes ---------------------------------

    def value_match(self, d: Decision, ctx: Ctx, region: tuple[int, int]) -> Match:
        item = ctx.value_item
        assert item is not None
        idx = ctx.index
        if item.has_offsets:
            span = idx.char_span(item.start, item.end)
            assert span is not None
            match = self.at(ctx, *span, cited=True)
            if isinstance(match, Match) and match.clean:
                return match
            if (
                self.a.policy.reanchor
                and item.text is not None
                and item.text.strip()
                and self.could_pass(ctx, item.text)
            ):
                passing = []
                for s, e in occ.within(occ.occurrences(idx, item.text), *region):
                    if (s, e) == span:
                        continue
                    m = self.at(ctx, s, e)
                    if isinstance(m, Match) and m.clean:
                        passing.append((s, e, m))
                        if len(passing) > 1:
                            break
                if len(passing) == 1:
                    s, e, m = passing[0]
                    d.evidence = idx.byte_span(s, e)
                    d.evidence_chars = (s, e)
                    d.codes.add("EVIDENCE_REANCHORED")
                    return m
            if isinstance(match, Fail):
                self.reject(d, ctx, match)
            return match
        assert item.text is not None
        found = occ.within(occ.occurrences(idx, item.text), *region)
        if not found:
            raise Rejected("QUOTE_NOT_FOUND")
        if ctx.fields and ctx.spec.aliases:
            passing_field = []
            for s, e in found:
                m = self.at(ctx, s, e)
                if isinstance(m, Match) and self.field_check(ctx, m):
                    passing_field.append((s, e))
            if passing_field:
                found = passing_field
        if len(found) == 1 or self.could_pass(ctx, item.text):
            for s, e in found:
                m = self.at(ctx, s, e)
                if isinstance(m, Match) and m.clean:
                    d.evidence = idx.byte_span(s, e)
                    d.evidence_chars = (s, e)
                    return m
        s, e = found[0]
        d.evidence = idx.byte_span(s, e)
        d.evidence_chars = (s, e)
        m = self.at(ctx, s, e, cited=True)
        if isinstance(m, Fail):
            self.reject(d, ctx, m)
        assert isinstance(m, Match)
        return m

    def could_pass(self, ctx: Ctx, quote: str) -> bool:
        """Can any occurrence of ``quote`` hold the value with no missing part?

        Every token inside an occurrence is written with characters of the quote, so its
        value is the value of a number in the quote, and a value that passes is that number,
        its negative, or it scaled by a scale word, a suffix or the scale item. When no such
        number gives the candidate's value, no occurrence can pass, and re-anchoring (which
        would try each of possibly thousands of occurrences) has nothing to find.
        """
        if ctx.is_string:
            return True
        target = abs(ctx.value)
        for v in _numbers_in(quote):
            for f in self._factors(ctx):
                if mul(v, f) == target:
                    return True
        return False

    def _factors(self, ctx: Ctx) -> list[Decimal]:
        powers = {0, *self.vocab.scale_words.values(), *self.vocab.scale_suffixes.values()}
        out = [pow10(p) for p in sorted(powers)]
        if ctx.item_scale is not None:
            out.append(ctx.item_scale)
        return out

    def reject(self, d: Decision, ctx: Ctx, fail: Fail) -> None:
        if fail.code == "UNIT_NOT_IN_EVIDENCE" and fail.token is not None:
            d.extra["evidence_units"] = self.a.evidence_units(fail.token, ctx.index, ctx.spec)
        raise Rejected(fail.code)

    # --- role items (§4.6) ----------------------------------------------------------------

    def locate(self, ctx: Ctx, item: Item, m: Match) -> tuple[tuple[int, int] | None, bool]:
        """The item's span in the value's text, and whether it is found there verbatim."""
        vi = ctx.value_item
        assert vi is not None
        if item.source != vi.source or item.ref != vi.ref:
            return None, False
        idx = ctx.index
        if item.has_offsets:
            span = idx.char_span(item.start, item.end)
            if span is None:
                return None, False
            if item.text is not None and normalize_verbatim(item.text) != normalize_verbatim(
                idx.text[span[0] : span[1]]
            ):
                return span, False
            return span, True
        assert item.text is not None
        found = occ.occurrences(idx, item.text)
        if not found:
            return None, False
        held = occ.holding(found, m.start, m.end)
        if held is not None:
            return held, True
        before = occ.last_before(found, m.start)
        if item.role == "unit" and m.token is not None:
            for o in before:
                if self.unit_form_at_place(ctx, m.token, o):
                    return o, True
        if before:
            return before[0], True
        # "After the value" starts at the value's position, as groundgate reads it: "6%"
        # overlapping the end of the token 22.6 is after it (issue 14).
        after = occ.first_after(found, m.start)
        return (after, True) if after is not None else (None, False)

    def check_roles(self, d: Decision, ctx: Ctx, m: Match) -> dict[str, bool]:
        """Check each role item at the value; fill ``d.parts``; return passes by role."""
        results: dict[str, bool] = {}
        parts: list[dict[str, Any]] = []
        idx = ctx.index
        field_passes = []
        for role in ("sign", "scale", "unit", "field", "key"):
            items = ctx.fields if role == "field" else [getattr(ctx, role)]
            for item in items:
                if item is None:
                    continue
                span, verbatim = self.locate(ctx, item, m)
                ok = span is not None and verbatim
                if ok:
                    assert span is not None
                    ok = self._role_check(ctx, role, item, span, m)
                if role == "field":
                    field_passes.append(ok)
                else:
                    results[role] = ok
                start = end = None
                if span is not None:
                    b = idx.byte_span(*span)
                    start, end = b["start"], b["end"]
                parts.append({"role": role, "start": start, "end": end, "passed": ok})
        results["field"] = any(field_passes)
        d.parts = parts
        return results

    def _role_check(self, ctx: Ctx, role: str, item: Item, span: tuple[int, int], m: Match) -> bool:
        if ctx.is_string and role not in ("key", "field"):
            return False
        if role == "key":
            return self.key_check(ctx, span)
        if role == "field":
            return self.field_item_check(ctx, span, m)
        t = m.token
        assert t is not None
        if role == "sign":
            return self.sign_check(ctx, span, t)
        if role == "scale":
            return self.scale_check(ctx, span, t)
        return self.unit_check(ctx, span, m)

    # key -----------------------------------------------------------------------------------

    def key_check(self, ctx: Ctx, span: tuple[int, int]) -> bool:
        key = ctx.cand.get("key")
        if not isinstance(key, str) or ctx.spec.keys is None:
            return False
        reader = self.a.key_reader(ctx.index, ctx.spec.keys)
        return any(mn.word == key for mn in reader.mentions.within(*span))

    # field ---------------------------------------------------------------------------------

    def aliases(self, ctx: Ctx) -> Mentions | None:
        if not ctx.spec.aliases:
            return None
        return self.a.mentions(ctx.index, ctx.spec.aliases)

    def field_check(self, ctx: Ctx, m: Match) -> bool:
        """The field check passes when one of the field items passes (§4.6)."""
        for item in ctx.fields:
            span, verbatim = self.locate(ctx, item, m)
            if span is not None and verbatim and self.field_item_check(ctx, span, m):
                return True
        return False

    def first_passing_field(self, ctx: Ctx, m: Match) -> tuple[int, int] | None:
        for item in ctx.fields:
            span, verbatim = self.locate(ctx, item, m)
            if span is not None and verbatim and self.field_item_check(ctx, span, m):
                return span
        return None

    def field_item_check(self, ctx: Ctx, span: tuple[int, int], m: Match) -> bool:
        mentions = self.aliases(ctx)
        if mentions is None:
            return False
        s, e = span
        if not mentions.within(s, e):
            return False
        vstart = m.start
        if e > vstart:
            return False
        idx = ctx.index
        text = idx.text
        if not _LETTERS.search(text, e, vstart):
            return True  # at the row
        tables = self.a.tables(idx)
        if tables.label_cell(ctx, span, m):
            return True
        s0, s1 = idx.sentence_of(vstart)
        if s < s0 or e > s1:
            return False
        if idx.has_token_between(e, vstart):
            return False
        return not tables.after_label_slot(span, vstart)

    # sign ----------------------------------------------------------------------------------

    def sign_check(self, ctx: Ctx, span: tuple[int, int], t: Token) -> bool:
        s, e = span
        br = self.brackets(ctx, t)
        if br is not None and s <= br[0] and e >= br[1]:
            return True
        loss = self.a.loss_words
        if loss is None or e > t.start:
            return False
        idx = ctx.index
        folded = idx.folded
        s0, _ = idx.sentence_of(t.start)
        if s < s0:
            return False
        between = idx.text[s : t.start]
        if "\n" in between or "\t" in between or idx.has_token_between(s, t.start):
            return False
        if self.a.gain_words.search(folded, s, t.start):
            return False
        for lm in loss.finditer(folded, s, e):
            head = folded[max(s0, lm.start() - 16) : lm.start()]
            if self.a.sign_negation.search(head):
                continue
            words = _LETTERS.findall(folded, lm.end(), t.start)
            if len(words) <= 4:
                return True
        return False

    # scale ---------------------------------------------------------------------------------

    def scale_check(self, ctx: Ctx, span: tuple[int, int], t: Token) -> bool:
        s, e = span
        if e > t.start:
            return False
        idx = ctx.index
        power = self.a.scale_forms.holds(ctx, idx, s, e)
        cs_power = None
        cs = self.a.currency_scales.first(idx.text, s, e)
        if cs is not None:
            cs_power = cs[2]
        if power is None and cs_power is None:
            return False
        item_power = power if power is not None else cs_power
        folded = idx.folded
        if self._scale_word_re.search(folded[e : t.start]):
            return False
        for _, _, p in self.a.currency_scales.all_in(idx.text, e, t.start):
            if p != item_power:
                return False
        return True

    # unit ----------------------------------------------------------------------------------

    def unit_forms_in(self, ctx: Ctx, s: int, e: int) -> list[tuple[int, int, str]]:
        """Forms of the field's unit held as a whole in [s, e): (start, end, kind).

        "As a whole" reads the text before a form (a form inside a longer word after a letter
        is not held), but not past ``e``: the span ends there, so a form at its end is whole
        also when the word goes on, as groundgate reads it ("percent" of "percentage").
        """
        unit = ctx.spec.unit
        if unit is None:
            return []
        prefixes, suffixes = self.table.units.get(unit, ([], []))
        text = ctx.index.text
        out = []
        for kind, forms in (("prefix", prefixes), ("suffix", suffixes)):
            for form in forms:
                i = text.find(form, s, e)
                while i != -1 and i + len(form) <= e:
                    j = i + len(form)
                    ok = not (form[0].isalnum() and i > 0 and text[i - 1].isalnum())
                    ok = ok and not (form[-1].isalnum() and j < e and text[j].isalnum())
                    if ok:
                        out.append((i, j, kind))
                    i = text.find(form, i + 1, e)
        return out

    def unit_check(self, ctx: Ctx, span: tuple[int, int], m: Match) -> bool:
        t = m.token
        assert t is not None
        unit = ctx.spec.unit
        if unit is None or m.conflict:
            return False
        s, e = span
        idx = ctx.index
        rules = self.a.rules(idx)
        forms = self.unit_forms_in(ctx, s, e)
        if forms:
            if rules.units_at(t).has(unit):
                return True
            if (
                e <= t.start
                and not rules.units_at(t).form_next
                and self.field_check(ctx, m)
                and any(self.unit_form_place(ctx, t, f) for f in forms)
            ):
                return True
        heads = self.a.headings(idx)
        if (
            e <= t.start
            and not rules.units_at(t).form_next
            and heads.item_holds_heading_unit(s, e, t)
            and self.field_check(ctx, m)
            and heads.heading_currency(t, unit)
        ):
            return True
        return self.table.vacuous(unit) and self.a.currency_names.holds(idx, s, e, unit)

    def unit_form_place(self, ctx: Ctx, t: Token, form: tuple[int, int, str]) -> bool:
        return self.a.tables(ctx.index).unit_place(ctx, t, form)

    def unit_form_at_place(self, ctx: Ctx, t: Token, span: tuple[int, int]) -> bool:
        """An occurrence of a unit item holds a form of the unit at a unit place."""
        return any(self.unit_form_place(ctx, t, f) for f in self.unit_forms_in(ctx, *span))

    def unit_at_place(self, ctx: Ctx, t: Token) -> bool:
        """#249: the field check passes and a form of the field's unit is at a unit place."""
        if not ctx.fields or not ctx.spec.aliases:
            return False
        m = Match(t, t.start, t.end)
        if not self.field_check(ctx, m):
            return False
        return self.a.tables(ctx.index).any_unit_form_at_place(ctx, t)

    # keys at the value -----------------------------------------------------------------

    def keys_at(self, ctx: Ctx, m: Match) -> set[str]:
        reader = self.a.key_reader(ctx.index, ctx.spec.keys)
        return reader.keys_at(m.start, m.end)


_DIGIT_RUN = re.compile(r"(?<![0-9,])[0-9][0-9,]*(?:\.[0-9]+)?")


def _numbers_in(quote: str) -> set[Decimal]:
    """Absolute values of every number a token inside ``quote`` can have (a superset)."""
    out: set[Decimal] = set()
    for m in _DIGIT_RUN.finditer(quote):
        body = m.group()
        for cut in {body, body.rstrip(","), body.partition(".")[0]}:
            value = digits_value(cut) if cut else None
            if value is not None:
                out.add(value)
        # A token can start inside a run only after a "." (never after a digit or a comma).
    for m in re.finditer(r"(?<=\.)[0-9][0-9,]*(?:\.[0-9]+)?", quote):
        value = digits_value(m.group().rstrip(","))
        if value is not None:
            out.add(value)
    return out


def _scale_word_pattern(words: list[str]) -> re.Pattern[str]:
    """Scale words, each also with a final ``s``, matched whole over folded text."""
    alts = "|".join(re.escape(fold(w)) for w in sorted(words, key=len, reverse=True))
    if not alts:
        return re.compile(r"(?!x)x")
    return re.compile(r"(?<![^\W_])(" + alts + r")s?(?![^\W_])")
