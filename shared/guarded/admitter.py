"""The guarded admitter: groundgate's decision procedure, then the guards on each value that
passed the checked path, then the resolution of competing proposals by what the guards found.

Each guard is deterministic and reads only the document (through :class:`TableView`) and the
candidate; what it finds goes into the decision's ``guard`` member, in words and with byte
offsets, so a reviewer sees why and ``check-receipt`` re-derives it.
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal
from typing import Any

from groundswell.shared.admit.digest import digest
from groundswell.shared.admit.engine import Admitter, Decision
from groundswell.shared.admit.guard_codes import GUARD_FLAGS
from groundswell.shared.admit.items import Ctx, Match
from groundswell.shared.guarded.settings import DEFAULT_GUARD, GUARD_REVISION, GuardSettings
from groundswell.shared.guarded.tables import YEAR, Cell, TableView, fold_label

NAME = "guarded"
# The flags that say the document contradicts a candidate (CELL_AMBIGUOUS says only that it
# does not pick one value): a proposal contradicted so loses to one that is not.
CONTRADICTIONS = frozenset(GUARD_FLAGS) - {"CELL_AMBIGUOUS"}
# The contradictions that say the field is not where a proposal's value stands (another
# column, row, the header, another quantity of its sentence, a number of another kind). The
# others (a bracketed cell given positive, a number given unscaled) say the proposal misread
# its cell, which may still be the field's: they settle a conflict only between readings of
# one cell (guard revision 5).
NOT_THERE = frozenset(
    {
        "VALUE_NOT_IN_COLUMN",
        "VALUE_NOT_IN_ROW",
        "VALUE_IS_HEADER",
        "VALUE_NOT_AT_FIELD",
        "OTHER_PROPOSAL_AT_FIELD",
        "UNIT_KIND_MISMATCH",
    }
)
# Names of fields that hold a percentage; and names that may (a rate, a margin), which a
# percentage does not contradict.
_PERCENT_NAME = re.compile(r"%|percent", re.IGNORECASE)
_PERCENT_ABLE = re.compile(r"%|percent|\brates?\b|margin|ratio|yield|\bshare\b", re.IGNORECASE)
_CURRENCIES = ("$", "€", "£", "¥")
# a day written before its month, "31 December 2019" (guard revision 6)
_MONTH_AFTER = re.compile(
    r"[ \u00a0]{1,2}(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?"
    r"|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
_DATE_NAME = re.compile(r"\bdays?\b|\bdates?\b|\bdated\b", re.IGNORECASE)


_MONTH = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?[ \u00a0]{0,2}\Z",
    re.IGNORECASE,
)


def _kind(view: TableView, t: Any) -> str:
    """What a number is, for telling which numbers compete with a value: a year, a day of a
    date, a percentage, an amount in a currency, or a plain number. Only numbers of the
    value's own kind make a row or sentence ambiguous ("March 2, 2026" holds one year)."""
    if YEAR.fullmatch(t.text):
        return "year"
    before = view.text[max(0, t.start - 12) : t.start]
    if len(t.text) <= 2 and (
        _MONTH.search(before) or _MONTH_AFTER.match(view.text, t.end, t.end + 12)
    ):
        return "day"
    if view.percent_after(t.end):
        return "percent"
    if before.rstrip(" (\u00a0").endswith(_CURRENCIES):
        return "amount"
    return "number"


def _year_alias(text: str) -> bool:
    return bool(YEAR.fullmatch(text.strip()))


class GuardedAdmitter(Admitter):
    """An :class:`Admitter` whose receipts carry the guards' findings (policy ``guarded``)."""

    def __init__(self, *args: Any, guard: GuardSettings = DEFAULT_GUARD, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard

    def view(self, ctx: Ctx) -> TableView:
        idx = ctx.index
        return self._cached(idx, "guard-view", None, lambda: TableView(idx.text))

    def _receipt_members(self) -> dict[str, Any]:
        member = self.__dict__.get("_guard_member")
        if member is None:  # the same for every receipt of this admitter
            settings = self.guard.as_dict()
            member = {
                "policy": NAME,
                "revision": GUARD_REVISION,
                "settings": settings,
                "sha256": digest("guard", {"revision": GUARD_REVISION, "settings": settings}),
            }
            self.__dict__["_guard_member"] = member
        return {"guard": copy.deepcopy(member)}

    def _decide(self, index: int, cand: Any) -> Decision:
        d = super()._decide(index, cand)
        d.extra.setdefault("guard", [])
        return d

    # --- per value -----------------------------------------------------------------------

    def _after_match(self, d: Decision, ctx: Ctx, m: Match) -> None:
        super()._after_match(d, ctx, m)
        t = m.token
        if t is None or t.value is None or ctx.is_string or ctx.outside:
            return
        if not isinstance(ctx.value, Decimal):
            return
        view = self.view(ctx)
        found: list[dict[str, Any]] = d.extra.setdefault("guard", [])
        cell = view.cell(t.dstart)
        g = self.guard
        # where the value stands, for telling competing proposals apart (read over all
        # candidates in _flag_conflicts; never written into the receipt)
        self.__dict__.setdefault("_fields_at", {})[id(d)] = self._at_field(ctx, d, view, cell, t)
        self.__dict__.setdefault("_cells_of", {})[id(d)] = t.dstart

        def note(check: str, code: str, detail: str, span: tuple[int, int] | None = None) -> None:
            entry: dict[str, Any] = {"check": check, "code": code, "detail": detail}
            if span is not None:
                entry["at"] = ctx.index.byte_span(*span)
            found.append(entry)
            d.codes.add(code)

        def relieve(check: str, code: str, removed: list[str], detail: str, span=None) -> None:
            for flag in removed:
                d.codes.discard(flag)
            note(check, code, f"{detail} (took off {', '.join(removed)})", span)

        value = ctx.value
        written = abs(t.value)
        spec = ctx.spec
        names = [a for a in (spec.aliases or []) if not _year_alias(a)]
        year_names = {a.strip() for a in (spec.aliases or []) if _year_alias(a)}
        percent_field = spec.unit == "%" or any(_PERCENT_NAME.search(a) for a in names)
        percent_able = percent_field or any(_PERCENT_ABLE.search(a) for a in names)
        bracketed = cell is not None and view.bracketed(t.dstart, t.end)
        percent_token = view.percent_after(t.end) or (
            cell is not None and self._column_says(view, cell, "%")
        )

        header_year = cell is not None and self._is_header_year(view, cell, t, ctx)
        if header_year and g.on("header"):
            note(
                "header",
                "VALUE_IS_HEADER",
                f"{t.text} is a year of the table's column header",
                (t.start, t.end),
            )

        key = ctx.cand.get("key") if spec.keys is not None else None
        for at, what in self._cells_cited(ctx, d, view, cell):
            if at.header_line is None:
                continue
            named = {key} if isinstance(key, str) else year_names
            named = {y for y in named if y in at.header_years}
            if at.column_year is not None:
                under = at.column_year
                elsewhere = bool(named) and at.column_year not in named
            else:
                # the cell's column has no year of its own ("Dollar", "Change"), while the
                # year the candidate names heads another column of the header
                hs, he = view.slots(at.header_line)[at.slot]
                under = repr(" ".join(view.text[hs:he].split()) or "an empty header")
                elsewhere = bool(named) and not named & set(view.years_in(hs, he))
            if elsewhere and g.on("column"):
                note(
                    "column",
                    "VALUE_NOT_IN_COLUMN",
                    f"{what} stands under {under}; the candidate names {', '.join(sorted(named))}",
                    (t.start, t.end) if at is cell else None,
                )
                break
            if (
                at is cell
                and isinstance(key, str)
                and key == cell.column_year
                and "KEY_NOT_AT_VALUE" in d.codes
                and g.relieve_key
            ):
                d.missing.discard("key")
                relieve(
                    "column",
                    "KEY_AT_COLUMN",
                    ["KEY_NOT_AT_VALUE"],
                    f"{key} is the column header over the cell",
                    (t.start, t.end),
                )

        if cell is not None and cell.label is not None and names and g.on("row"):
            mine = fold_label(cell.label)
            wanted = {fold_label(a) for a in names}
            if mine not in wanted:
                other = [n for n, lab in view.row_labels(cell.block) if lab in wanted]
                if other:
                    note(
                        "row",
                        "VALUE_NOT_IN_ROW",
                        f"the cell's row is {cell.label!r}; the field's row is line "
                        f"{other[0] - cell.line:+d} from it",
                        (t.start, t.end),
                    )

        unscaled = self._unscaled(cell, view, names, spec.name)
        in_force = (
            view.scale_in_force(cell, g.caption_lines, g.document_scale)
            if cell is not None
            else None
        )
        if (
            in_force is not None
            and not header_year
            and t.scaled is None
            and not percent_token
            and not percent_field
            and not unscaled
        ):
            factor = Decimal(10) ** in_force.power
            statement = view.text[in_force.start : in_force.end]
            if abs(value) == written and written != 0 and g.on("scale"):
                note(
                    "scale",
                    "SCALE_NOT_APPLIED",
                    f"{statement!r} ({in_force.where}) scales the number: "
                    f"{t.text} means {written * factor:f}",
                    (in_force.start, in_force.end),
                )
            elif abs(value) == written * factor and g.relieve_scale:
                taken = []
                cited = ctx.item_scale
                if "SCALE_CITATION_INVALID" in d.codes and (cited is None or cited == factor):
                    taken.append("SCALE_CITATION_INVALID")
                if "scale" in d.missing:
                    d.missing.discard("scale")
                    if not d.missing & {"sign", "scale", "unit"}:
                        taken.append("PART_MISSING")
                if taken:
                    relieve(
                        "scale",
                        "SCALE_IN_FORCE",
                        taken,
                        f"{statement!r} ({in_force.where}) is in force at the cell",
                        (in_force.start, in_force.end),
                    )

        if bracketed:
            # a quote of "23,699" that another table writes unbracketed may be that cell's: the
            # bracket of the cell read here does not contradict it (guard revision 7)
            item = ctx.value_item
            quoted = item is None or not item.has_offsets
            if (
                value > 0
                and g.on("sign")
                and not (quoted and view.unbracketed_cell(t.text, t.start))
            ):
                note(
                    "sign",
                    "SIGN_BRACKETED",
                    f"the table writes ({t.text}), a negative amount; the value is positive",
                    (t.start, t.end),
                )
            elif value < 0 and "sign" in d.missing and g.relieve_sign:
                d.missing.discard("sign")
                taken = [] if d.missing & {"sign", "scale", "unit"} else ["PART_MISSING"]
                if taken:
                    relieve(
                        "sign",
                        "SIGN_IN_BRACKETS",
                        taken,
                        f"the table writes ({t.text}), a negative amount",
                        (t.start, t.end),
                    )
                else:
                    note("sign", "SIGN_IN_BRACKETS", f"the table writes ({t.text})")

        if g.on("unit_kind"):
            amount_token = view.text[max(0, t.start - 2) : t.start].strip().endswith(_CURRENCIES)
            if percent_token and not percent_able and spec.unit not in (None, "%"):
                note(
                    "unit_kind",
                    "UNIT_KIND_MISMATCH",
                    f"{t.text} is a percentage; the field is an amount ({spec.unit})",
                    (t.start, t.end),
                )
            elif percent_token and not percent_able and names and spec.unit is None:
                note(
                    "unit_kind",
                    "UNIT_KIND_MISMATCH",
                    f"{t.text} is a percentage; the field's names do not say percent",
                    (t.start, t.end),
                )
            elif percent_field and not percent_token and amount_token:
                note(
                    "unit_kind",
                    "UNIT_KIND_MISMATCH",
                    f"{t.text} is an amount; the field is a percentage",
                    (t.start, t.end),
                )
            elif (
                spec.unit == "%"
                and not percent_token
                and cell is not None
                and (pct := self._percent_in_row(view, cell)) is not None
            ):
                # "Satellite\t(85,423)\t(89,231)\t3,808\t4.3%": the row gives its percentage
                # in another cell, marked; this one is not (guard revision 5)
                note(
                    "unit_kind",
                    "UNIT_KIND_MISMATCH",
                    f"{t.text} is not a percentage; the field is one, and its row gives "
                    f"{view.text[pct[0] : pct[1]]!r} as one",
                    (t.start, t.end),
                )
            elif (
                (names or spec.unit is not None)
                and _kind(view, t) == "day"
                and not any(_DATE_NAME.search(a) for a in [*names, spec.name])
            ):
                # "outstanding as of September 29, 2019": 29 is the day of a date, not a
                # quantity (guard revision 5); a field named for a day or date may hold one
                before = " ".join(view.text[max(0, t.start - 12) : t.start].split())
                note(
                    "unit_kind",
                    "UNIT_KIND_MISMATCH",
                    f"{t.text} is the day of a date ({before} {t.text}); the field is a quantity",
                    (t.start, t.end),
                )

        if g.on("ambiguous") and not any(
            f["check"] in ("column", "row", "header") for f in found if f["code"] in GUARD_FLAGS
        ):
            self._ambiguity(d, ctx, m, view, cell, note)

    def _ambiguity(self, d, ctx, m, view, cell, note) -> None:
        """A whole row or sentence quoted with other numbers in it, and nothing in the
        candidate that picks this one: the cell under its key or column name."""
        t = m.token
        if t is None:
            return
        span = d.evidence_chars
        if span is None:
            return  # the evidence was not located
        s, e = span
        if cell is not None:
            # a table row quoted whole: the other cells of the row that the evidence covers
            # and that hold a number of the value's kind (not its label); the cell alone,
            # quoted or bound by offsets, names the value
            key = ctx.cand.get("key") if ctx.spec.keys is not None else None
            years = {a.strip() for a in (ctx.spec.aliases or []) if _year_alias(a)}
            if cell.column_year is not None and (
                key == cell.column_year or cell.column_year in years
            ):
                return  # the column names the cell
            slots = view.slots(cell.line)
            kind = _kind(view, t)
            others = [
                j
                for j, (a, b) in enumerate(slots)
                if j not in (0, cell.slot)
                and a < e
                and b > s
                and any(
                    x.value is not None and _kind(view, x) == kind
                    for x in ctx.index.tokens_in(a, b)
                )
            ]
            if not others:
                return
            note(
                "ambiguous",
                "CELL_AMBIGUOUS",
                f"the quoted row holds {len(others)} other value cell(s) and the candidate names no "
                "column that picks this one",
                (t.start, t.end),
            )
            return
        kind = _kind(view, t)
        numbers = [
            x for x in ctx.index.tokens_in(s, e) if x.value is not None and _kind(view, x) == kind
        ]
        quoted = [x for x in numbers if x.dstart != t.dstart]
        if not quoted:
            return
        # which number the sentence gives for the field: the one its name stands before
        # ("revenue was $5.2 million and operating income $1.1 million": 5.2 is revenue's)
        names = [fold_label(a) for a in (ctx.spec.aliases or []) if not _year_alias(a)]
        named_at = self._named_numbers(view, numbers, s, names)
        if t.dstart in named_at:
            return  # the sentence names the field at the value
        if named_at:
            x, name = next(iter(named_at.values()))
            note(
                "ambiguous",
                "VALUE_NOT_AT_FIELD",
                f"the quoted sentence gives {x.text} for {name!r}; the value is another of "
                "its numbers",
                (t.start, t.end),
            )
            return
        if quoted:
            note(
                "ambiguous",
                "CELL_AMBIGUOUS",
                f"the quoted sentence holds {len(quoted)} other number(s) and the candidate "
                "names nothing that picks this one",
                (t.start, t.end),
            )

    def _cells_cited(
        self, ctx: Ctx, d: Decision, view: TableView, cell: Cell | None
    ) -> list[tuple[Cell, str]]:
        """The table cells the candidate puts its value in: the value's cell, and, when
        groundgate re-anchored the evidence away from the candidate's offsets, the cell those
        offsets cite (the extractor's own choice, which a column can contradict)."""
        out = [(cell, "the cell")] if cell is not None else []
        item = ctx.value_item
        if "EVIDENCE_REANCHORED" in d.codes and item is not None and item.has_offsets:
            pos = ctx.index.bytes.to_char(item.start)
            cited = view.cell(pos) if pos is not None else None
            if cited is not None and (
                cell is None or (cited.line, cited.slot) != (cell.line, cell.slot)
            ):
                out.append((cited, "the cell the candidate's offsets cite"))
        return out

    @staticmethod
    def _named_numbers(view: TableView, numbers: list[Any], start: int, names: list[str]) -> dict:
        """The numbers of a quoted sentence that a name of the field stands before, in the
        stretch of text since the previous number: its position -> (the number, the name)."""
        out: dict[int, tuple[Any, str]] = {}
        if not names:
            return out
        prev = start
        for x in numbers:
            clause = fold_label(view.text[prev : x.start])
            hit = next((n for n in names if n and n in clause), None)
            if hit is not None:
                out[x.dstart] = (x, hit)
            prev = x.end
        return out

    def _at_field(self, ctx: Ctx, d: Decision, view: TableView, cell: Cell | None, t: Any):
        """Whether the document names the field and its key at the value: a cell whose row
        label is a name of the field and whose column is the key's (or the year the field
        names), or a quoted sentence that names the field before the value. Returns (True,
        where) when it does, (False, where) when it does not, None when it cannot tell (the
        field has no names of that kind)."""
        self.__dict__["_index_view"] = (ctx.index, view)
        if cell is not None:
            return self._cell_fits(ctx.spec, d.key, cell)
        names = {fold_label(a) for a in (ctx.spec.aliases or []) if not _year_alias(a)}
        span = d.evidence_chars
        if not names or span is None:
            return None
        s, e = span
        kind = _kind(view, t)
        numbers = [
            x for x in ctx.index.tokens_in(s, e) if x.value is not None and _kind(view, x) == kind
        ]
        named = self._named_numbers(view, numbers, s, sorted(names))
        return (t.dstart in named, "the quoted sentence")

    @staticmethod
    def _cell_fits(spec: Any, key: str | None, cell: Cell):
        """(True, where) when the cell's row label is a name of the field and its column is the
        key's (or the year the field names); (False, where) when not; None when the field
        has no row names or no year to tell by."""
        names = {fold_label(a) for a in (spec.aliases or []) if not _year_alias(a)}
        key = key if spec.keys is not None else None
        years = (
            {key}
            if isinstance(key, str)
            else {a.strip() for a in (spec.aliases or []) if _year_alias(a)}
        )
        if not names or not years or cell.label is None or cell.header_line is None:
            return None
        fits = fold_label(cell.label) in names and cell.column_year in years
        return (fits, f"the cell at {cell.label!r}, {cell.column_year or 'no year'}")

    def _cited_fits(self, d: Decision):
        """For a proposal groundgate refused before reading its value: the cell its value
        item cites (by offsets, or a quote of one cell found once), judged as above."""
        index_view = self.__dict__.get("_index_view")
        cand = d.candidate if isinstance(d.candidate, dict) else {}
        items = cand.get("evidence")
        items = [items] if isinstance(items, dict) else items
        if index_view is None or not isinstance(items, list) or d.field_name is None:
            return None
        index, view = index_view
        item = next(
            (i for i in items if isinstance(i, dict) and i.get("role", "value") == "value"), None
        )
        if item is None or not isinstance(item.get("text"), str) or "\t" in item["text"]:
            return None
        text = item["text"]
        start = item.get("start")
        if isinstance(start, int) and not isinstance(start, bool):
            pos = index.bytes.to_char(start)
        else:
            pos = view.text.find(text) if text and view.text.count(text) == 1 else None
        cell = view.cell(pos) if pos is not None and pos >= 0 else None
        if cell is None:
            return None
        return self._cell_fits(self.schema.fields[d.field_name], d.key, cell)

    @staticmethod
    def _percent_in_row(view: TableView, cell: Cell) -> tuple[int, int] | None:
        """The span of another cell of the cell's row that holds a number marked ``%``."""
        for j, (a, b) in enumerate(view.slots(cell.line)):
            if j in (0, cell.slot):
                continue
            for m in _DIGITS.finditer(view.text, a, b):
                if view.percent_after(m.end()) or view.text[m.end() : m.end() + 2] == ")%":
                    return a, b
        return None

    def _column_says(self, view: TableView, cell: Cell, mark: str) -> bool:
        if cell.header_line is None:
            return False
        s, e = view.slots(cell.header_line)[cell.slot]
        return mark in view.text[s:e]

    def _is_header_year(self, view: TableView, cell: Cell, t: Any, ctx: Ctx) -> bool:
        """The value is a year of a column header: its token stands on a header line, and
        either the candidate's offsets point there, or no table cell of the document holds
        the same number (a quote of "2019" that a cell holds is that cell's, not the
        header's)."""
        if not YEAR.fullmatch(t.text):
            return False
        if not (view.header_like(cell.line) and len(view.years_in(*view.span(cell.line))) >= 2):
            return False
        item = ctx.value_item
        if item is not None and item.has_offsets:
            return True
        return not view.number_in_a_cell(t.text)

    def _unscaled(self, cell: Cell | None, view: TableView, names: list[str], field: str) -> bool:
        """A row or field whose numbers a table's scale does not scale (per share, %...):
        the words match whole ("rate" is not in "integration")."""
        pattern = self.__dict__.get("_unscaled_pattern")
        if pattern is None:
            words = sorted(self.guard.unscaled_words, key=len, reverse=True)
            alternation = "|".join(re.escape(w.strip()) for w in words)
            pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)
            self.__dict__["_unscaled_pattern"] = pattern
        texts = [*names, field]
        if cell is not None and cell.label:
            texts.append(cell.label)
        return any(pattern.search(x) for x in texts)

    # --- over all candidates ---------------------------------------------------------------

    def _competing(self, decisions: list[Decision], at_field: dict[int, Any]) -> None:
        """A second proposal for a single-valued field: when another proposal's value stands
        where the document names the field (its row and its key's column, or the sentence that
        names it before the number) and this one's does not, the document contradicts this
        one, whatever groundgate made of the other (it may have been refused for a missing
        part)."""
        groups: dict[tuple[str, str | None], list[Decision]] = {}
        for d in decisions:
            if d.field_name is None or d.value is None:
                continue
            if self.schema.fields[d.field_name].multiple:
                continue
            groups.setdefault((d.field_name, d.key), []).append(d)
        for group in groups.values():
            if len({d.value for d in group}) < 2:
                continue
            for d in group:
                mine = at_field.get(id(d))
                if not d.passed or mine is None or mine[0]:
                    continue
                for o in group:
                    if id(o) not in at_field and o.value != d.value:
                        at_field[id(o)] = self._cited_fits(o)
                other = next(
                    (
                        o
                        for o in group
                        if o.value != d.value and (at_field.get(id(o)) or (False,))[0]
                    ),
                    None,
                )
                if other is None:
                    continue
                cid = other.candidate.get("id") if isinstance(other.candidate, dict) else None
                d.codes.add("OTHER_PROPOSAL_AT_FIELD")
                d.extra.setdefault("guard", []).append(
                    {
                        "check": "competing",
                        "code": "OTHER_PROPOSAL_AT_FIELD",
                        "detail": f"proposal {cid!r} gives {other.value} where the document names "
                        f"the field ({at_field[id(other)][1]}); this value stands at "
                        f"{mine[1]}, which does not",
                    }
                )

    def _flag_conflicts(self, decisions: list[Decision]) -> None:
        super()._flag_conflicts(decisions)
        at_field = self.__dict__.pop("_fields_at", {})
        cells = self.__dict__.pop("_cells_of", {})
        if self.guard.on("competing"):
            self._competing(decisions, at_field)
        if not self.guard.resolve_conflicts:
            return
        groups: dict[tuple[str, str | None], list[Decision]] = {}
        for d in decisions:
            if d.passed and "CONFLICTING_CANDIDATES" in d.codes:
                groups.setdefault((d.field_name or "", d.key), []).append(d)
        for group in groups.values():
            contradicted = [d for d in group if d.codes & CONTRADICTIONS]
            standing = [d for d in group if not d.codes & CONTRADICTIONS]
            if not contradicted or len({d.value for d in standing}) != 1:
                continue
            # a proposal that misread its cell (sign, scale) is out only where the standing
            # one reads that same cell: elsewhere the field may still be at its cell
            mine = {cells.get(id(d)) for d in standing}
            if any(
                not d.codes & NOT_THERE
                and (cells.get(id(d)) is None or cells.get(id(d)) not in mine)
                for d in contradicted
            ):
                continue
            for d in standing:
                d.codes.discard("CONFLICTING_CANDIDATES")
                d.codes.add("CONFLICT_RESOLVED")
                d.extra.setdefault("guard", []).append(
                    {
                        "check": "conflicts",
                        "code": "CONFLICT_RESOLVED",
                        "detail": f"{len(contradicted)} other proposal(s) for the field were "
                        "contradicted by a guard (took off CONFLICTING_CANDIDATES)",
                    }
                )
