"""Property tests on generated tables: a right value (the cell under its column and row,
scaled by the statement in force, signed by its brackets) is never contradicted by a guard,
and each planted wrong one (the next column, the next row, the number as written, a bracketed
number made positive) is never admitted."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.shared.admit import Admitter
from groundswell.shared.guarded import DEFAULT_GUARD
from groundswell.shared.guarded.admitter import CONTRADICTIONS, GuardedAdmitter
from groundswell.shared.guarded.settings import CHECKS, RELIEFS

LABELS = ["Revenue", "Cost of sales", "Gross profit", "Other income", "Net assets", "Inventory"]
# Where the table's scale is stated, and what it says
SCALES = [
    (None, 0),
    ("caption", 3),  # "(in thousands)" on the line above the table
    ("after", 6),  # a sentence after the table (the only statement in the text)
    ("header", 3),  # "$'000" in the label cell of the header line
]


@st.composite
def tables(draw: Any) -> dict[str, Any]:
    ncols = draw(st.integers(2, 3))
    years = draw(st.lists(st.integers(2010, 2024), min_size=ncols, max_size=ncols, unique=True))
    nrows = draw(st.integers(2, 5))
    labels = draw(st.permutations(LABELS))[:nrows]
    values = draw(
        st.lists(
            st.integers(11, 999_999), min_size=nrows * ncols, max_size=nrows * ncols, unique=True
        )
    )
    brackets = draw(st.lists(st.booleans(), min_size=nrows * ncols, max_size=nrows * ncols))
    where, power = draw(st.sampled_from(SCALES))
    lines = ["Selected financial data"]
    if where == "caption":
        lines.append("(in thousands)")
    head = "$'000" if where == "header" else ""
    lines.append(head + "\t" + "\t".join(str(y) for y in years))
    cells = {}
    for r, label in enumerate(labels):
        row = [label]
        for c in range(ncols):
            v = values[r * ncols + c]
            text = f"{v:,}"
            row.append(f"({text})" if brackets[r * ncols + c] else text)
            cells[(r, c)] = (v, brackets[r * ncols + c], text)
        lines.append("\t".join(row))
    lines.append("")
    if where == "after":
        lines.append("The figures above are in millions.")
    lines.append("")
    doc = "\n".join(lines)
    r = draw(st.integers(0, nrows - 1))
    c = draw(st.integers(0, ncols - 1))
    keyed = draw(st.booleans())
    whole_row = draw(st.booleans())
    return {
        "doc": doc,
        "years": [str(y) for y in years],
        "labels": labels,
        "cells": cells,
        "power": power,
        "at": (r, c),
        "keyed": keyed,
        "whole_row": whole_row,
        "line0": lines.index(next(x for x in lines if x.startswith(labels[0]))),
    }


def _offsets(doc: str, start: int, end: int) -> dict[str, Any]:
    s = len(doc[:start].encode())
    return {"start": s, "end": s + len(doc[start:end].encode()), "text": doc[start:end]}


def _cell_span(t: dict[str, Any], r: int, c: int) -> tuple[int, int]:
    doc = t["doc"]
    lines = doc.split("\n")
    n = t["line0"] + r
    pos = sum(len(x) + 1 for x in lines[:n])
    parts = lines[n].split("\t")
    pos += sum(len(p) + 1 for p in parts[: c + 1])
    _, _, text = t["cells"][(r, c)]
    return pos + parts[c + 1].index(text), pos + parts[c + 1].index(text) + len(text)


def _row_span(t: dict[str, Any], r: int) -> tuple[int, int]:
    lines = t["doc"].split("\n")
    n = t["line0"] + r
    pos = sum(len(x) + 1 for x in lines[:n])
    return pos, pos + len(lines[n])


def _packet(t: dict[str, Any], r: int, c: int, value: Decimal) -> tuple[dict, dict]:
    """A candidate for the field of the target cell whose value item is cell (r, c)."""
    tr, tc = t["at"]
    label, year = t["labels"][tr], t["years"][tc]
    if t["keyed"]:
        spec = {"type": "number", "aliases": [label], "keys": t["years"]}
    else:
        spec = {"type": "number", "aliases": [label, year]}
    span = _row_span(t, r) if t["whole_row"] and (r, c) == t["at"] else _cell_span(t, r, c)
    cand = {"id": "c", "field": "f", "value": str(value), "evidence": [_offsets(t["doc"], *span)]}
    if t["keyed"]:
        cand["key"] = year
    return {"fields": {"f": spec}}, cand


def _meant(t: dict[str, Any], r: int, c: int) -> Decimal:
    v, bracketed, _ = t["cells"][(r, c)]
    return Decimal(-v if bracketed else v) * Decimal(10) ** t["power"]


def _decide(t: dict[str, Any], schema: dict, cand: dict, guard=DEFAULT_GUARD) -> dict:
    (d,) = GuardedAdmitter(t["doc"], schema, guard=guard).admit([cand])["decisions"]
    return d


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tables())
def test_a_right_value_is_never_contradicted(t):
    r, c = t["at"]
    schema, cand = _packet(t, r, c, _meant(t, r, c))
    d = _decide(t, schema, cand)
    assert d["outcome"] != "rejected", d
    assert not set(d["codes"]) & CONTRADICTIONS, (t["doc"], d)


@SETTINGS
@given(tables())
def test_planted_wrong_values_are_never_admitted(t):
    r, c = t["at"]
    ncols, nrows = len(t["years"]), len(t["labels"])
    wrong = [
        (r, (c + 1) % ncols, _meant(t, r, (c + 1) % ncols)),  # the next column
        ((r + 1) % nrows, c, _meant(t, (r + 1) % nrows, c)),  # the next row
    ]
    v, bracketed, _ = t["cells"][(r, c)]
    if t["power"]:
        wrong.append((r, c, Decimal(-v if bracketed else v)))  # the number as written
    if bracketed:
        wrong.append((r, c, -_meant(t, r, c)))  # brackets dropped
    for wr, wc, value in wrong:
        schema, cand = _packet({**t, "whole_row": False}, wr, wc, value)
        d = _decide(t, schema, cand)
        assert d["outcome"] != "admitted", (t["doc"], cand, d)


@SETTINGS
@given(tables(), st.integers(0, 1), st.integers(0, 1))
def test_with_every_guard_off_the_decisions_are_groundgates(t, dr, dc):
    off = replace(DEFAULT_GUARD, **{c: "off" for c in CHECKS}, **{r: False for r in RELIEFS})
    r, c = t["at"]
    r, c = (r + dr) % len(t["labels"]), (c + dc) % len(t["years"])
    schema, cand = _packet(t, r, c, _meant(t, r, c))
    guarded = _decide(t, schema, cand, off)
    (plain,) = Admitter(t["doc"], schema).admit([cand])["decisions"]
    assert guarded.pop("guard") == []
    assert guarded == plain
