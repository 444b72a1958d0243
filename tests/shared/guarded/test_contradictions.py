"""Guards flag what the document contradicts, never the absence of a contradiction (issue 29):
each case is one family of the real evaluations, written small."""

from __future__ import annotations

from typing import Any

import pytest

from groundswell.shared.admit import Admitter
from groundswell.shared.guarded.admitter import GuardedAdmitter

SBR = (
    "Combined Statement of Budgetary Resources\n"
    "For the Year Ended September 30, 2025 (Dollars in Millions)\n"
    "\n"
    "BUDGETARY\tACCOUNT\tTOTAL\n"
    "Appropriations\t$\t53,297\t—\t53,297\n"
    "Total Budgetary Resources\t$\t143,884\t$\t87,304\t$\t231,188\n"
)
SBR_SCHEMA = {
    "fields": {
        "total_budgetary_resources": {
            "type": "number",
            "unit": "USD",
            "multiple": True,
            "keys": ["2025", "2024"],
            "aliases": ["total budgetary resources"],
        }
    }
}


def items(doc: str, *quotes: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"source": "document", "role": role, "text": text} for role, text in quotes]


def decide(doc: str, schema: dict, cands: list[dict]) -> tuple[dict, dict]:
    plain = {d["candidate_id"]: d for d in Admitter(doc, schema).admit(cands)["decisions"]}
    guard = GuardedAdmitter(doc, schema).admit(cands)["decisions"]
    return plain, {d["candidate_id"]: d for d in guard}


def test_the_cell_of_a_several_column_statement_is_not_ambiguous():
    # a real reply (DOE's statement, four models): the total column's cell, quoted alone
    cell = {
        "id": "total",
        "field": "total_budgetary_resources",
        "value": "231188000000",
        "unit": "USD",
        "key": "2025",
        "evidence": items(
            SBR,
            ("value", "231,188"),
            ("field", "Total Budgetary Resources"),
            ("scale", "(Dollars in Millions)"),
        ),
    }
    plain, guarded = decide(SBR, SBR_SCHEMA, [cell])
    assert plain["total"]["outcome"] == "admitted"
    assert guarded["total"]["outcome"] == "admitted", guarded["total"]["codes"]
    assert "CELL_AMBIGUOUS" not in guarded["total"]["codes"]
    # the whole row quoted, with nothing naming the column, still says nothing of which
    row = dict(cell, id="row")
    row["evidence"] = [
        {"text": "Total Budgetary Resources\t$\t143,884\t$\t87,304\t$\t231,188"},
        *cell["evidence"][1:],
    ]
    _, guarded = decide(SBR, SBR_SCHEMA, [row])
    assert "CELL_AMBIGUOUS" in guarded["row"]["codes"]


STORES = "Stores by year\n\t2019\t2018\nStores open\t2019\t1,987\nStaff\t310\t295\n"
STORES_SCHEMA = {"fields": {"stores": {"type": "integer", "keys": ["2019", "2018"]}}}


def test_a_year_looking_number_is_a_header_only_where_the_candidate_points():
    def header(year: str, **item: Any) -> bool:
        cand = {"id": "c", "field": "stores", "value": year, "key": year}
        cand["evidence"] = [{"text": year, **item}]
        return "VALUE_IS_HEADER" in decide(STORES, STORES_SCHEMA, [cand])[1]["c"]["codes"]

    # the quote "2019" is also a cell of the Stores row: the value is that cell's
    assert not header("2019")
    # offsets on the header's 2019 point at the header
    start = STORES.index("2019")
    assert header("2019", start=start, end=start + 4)
    # a header year that no cell holds is the header's
    assert header("2018")


SHARES = (
    "Equity awards\n"
    "\tShares (in thousands)\tPrice\n"
    "Granted\t1,200\t35\n"
    "\n"
    "Headcount\n"
    "\t2019\t2018\n"
    "Engineers\t410\t380\n"
)
SHARES_SCHEMA = {
    "fields": {
        "price": {"type": "number", "aliases": ["Granted"]},
        "granted": {"type": "number", "aliases": ["Granted"]},
        "engineers_2019": {"type": "number", "aliases": ["Engineers", "2019"]},
    }
}


def test_a_scale_statement_governs_only_its_scope():
    cands = [
        # the other column's "(in thousands)" does not scale the price
        {"id": "price", "field": "price", "value": "35", "evidence": [{"text": "35"}]},
        # its own column's does
        {"id": "shares", "field": "granted", "value": "1200", "evidence": [{"text": "1,200"}]},
        # nor does it make a scale for the document's other tables
        {"id": "eng", "field": "engineers_2019", "value": "410", "evidence": [{"text": "410"}]},
    ]
    plain, guarded = decide(SHARES, SHARES_SCHEMA, cands)
    assert plain["price"]["outcome"] == "admitted" and plain["eng"]["outcome"] == "admitted"
    assert "SCALE_NOT_APPLIED" not in guarded["price"]["codes"], guarded["price"]["guard"]
    assert "SCALE_NOT_APPLIED" not in guarded["eng"]["codes"], guarded["eng"]["guard"]
    assert "SCALE_NOT_APPLIED" in guarded["shares"]["codes"]


DATED = (
    "Deferred tax assets (in millions)\n"
    "\tApril 26, 2019\tApril 27, 2018\n"
    "Reserves and accruals\t$ 50\t$ 57\n"
)
VARIANCE = (
    "(In millions)\t2018\t2017\tDollar\n"
    "Net revenues\t$2,280\t$1,664\t$616\n"
    "Operating income\t$1,111\t$839\t$272\n"
)


@pytest.mark.parametrize(
    ("doc", "names", "wrong", "right", "under"),
    [
        # a dated header ("April 27, 2018") heads the 2018 column: not the field's 2019
        (DATED, ["Reserves and accruals", "2019"], "57", "50", "2018"),
        # a column without a year ("Dollar", the variance) is not the 2017 the field names
        (VARIANCE, ["Operating income", "2017"], "272", "839", "'Dollar'"),
    ],
)
def test_the_column_over_the_cell_is_not_the_year_the_field_names(doc, names, wrong, right, under):
    schema = {"fields": {"f": {"type": "number", "aliases": names}}}

    def flagged(number: str) -> dict:
        cand = {"id": "c", "field": "f", "value": f"{number}000000", "evidence": [{"text": number}]}
        return decide(doc, schema, [cand])[1]["c"]

    got = flagged(wrong)
    assert "VALUE_NOT_IN_COLUMN" in got["codes"], got["guard"]
    assert f"stands under {under}" in got["guard"][0]["detail"]
    assert "VALUE_NOT_IN_COLUMN" not in flagged(right)["codes"]


REANCHORED = (
    "Deferred tax assets\n"
    "\t2019\t2018\n"
    "Stock-based compensation\t16\t22\n"
    "\n"
    "The transition tax came to $22 million.\n"
)
REANCHORED_SCHEMA = {
    "fields": {
        "sbc_2019": {
            "type": "number",
            "unit": "USD",
            "aliases": ["Stock-based compensation", "2019"],
        }
    }
}


def test_the_cell_the_candidate_cites_counts_when_groundgate_re_anchors():
    start = REANCHORED.index("\t22\n") + 1
    cand = {
        "id": "w",
        "field": "sbc_2019",
        "value": "22000000",
        "unit": "USD",
        "evidence": [{"start": start, "end": start + 2, "text": "22"}],
    }
    plain, guarded = decide(REANCHORED, REANCHORED_SCHEMA, [cand])
    assert plain["w"]["outcome"] == "admitted" and "EVIDENCE_REANCHORED" in plain["w"]["codes"]
    assert "VALUE_NOT_IN_COLUMN" in guarded["w"]["codes"], guarded["w"]["guard"]


PROSE = "Results\n\nRevenue was $5.2 million and operating income was $1.1 million in the year.\n"
PROSE_SCHEMA = {"fields": {"revenue": {"type": "number", "unit": "USD", "aliases": ["revenue"]}}}
SENTENCE = "Revenue was $5.2 million and operating income was $1.1 million in the year."


def test_a_sentence_gives_the_field_the_number_its_name_stands_before():
    def sentence(cid: str, value: str) -> dict:
        evidence = [{"text": SENTENCE}]
        return {"id": cid, "field": "revenue", "value": value, "unit": "USD", "evidence": evidence}

    right, wrong = sentence("r", "5200000"), sentence("w", "1100000")
    plain, guarded = decide(PROSE, PROSE_SCHEMA, [right])
    assert plain["r"]["outcome"] == "admitted"
    assert guarded["r"]["outcome"] == "admitted", guarded["r"]["guard"]
    plain, guarded = decide(PROSE, PROSE_SCHEMA, [wrong])
    assert plain["w"]["outcome"] == "admitted"
    assert "VALUE_NOT_AT_FIELD" in guarded["w"]["codes"], guarded["w"]["guard"]
    assert "5.2" in guarded["w"]["guard"][0]["detail"]


TWO_TABLES = (
    "Revenue by region\n"
    "\t2019\t2018\n"
    "UK\t1,245\t1,190\n"
    "Ireland\t310\t520\n"
    "\n"
    "Revenue by segment\n"
    "\t2019\n"
    "Retail\t1,300\n"
)
TWO_SCHEMA = {"fields": {"uk_2019": {"type": "number", "aliases": ["UK", "2019"]}}}


def test_a_second_proposal_loses_to_the_one_at_the_fields_row_and_column():
    right = {"id": "right", "field": "uk_2019", "value": "1245", "evidence": [{"text": "1,245"}]}
    # another table's cell: no row of that table is the field's, so no row guard fires
    wrong = {"id": "wrong", "field": "uk_2019", "value": "1300", "evidence": [{"text": "1,300"}]}
    plain, guarded = decide(TWO_TABLES, TWO_SCHEMA, [wrong, right])
    assert {d["outcome"] for d in plain.values()} == {"needs_verification"}
    assert "OTHER_PROPOSAL_AT_FIELD" in guarded["wrong"]["codes"], guarded["wrong"]["guard"]
    assert guarded["wrong"]["outcome"] == "needs_verification"
    assert guarded["right"]["outcome"] == "admitted", guarded["right"]["codes"]
    assert "CONFLICT_RESOLVED" in guarded["right"]["codes"]
    # alone, the other table's cell is not contradicted (nothing says where the field is)
    _, alone = decide(TWO_TABLES, TWO_SCHEMA, [wrong])
    assert "OTHER_PROPOSAL_AT_FIELD" not in alone["wrong"]["codes"]


def test_a_refused_proposal_at_the_fields_cell_still_contradicts_the_other():
    # the right cell's row holds a percentage within groundgate's unit window: it refuses the
    # cell (UNIT_NOT_IN_EVIDENCE) and admits the other table's amount
    doc = TWO_TABLES.replace("UK\t1,245\t1,190", "UK\t1,245\t12%").replace(
        "Retail\t1,300", "Retail\t$1,300"
    )
    schema = {"fields": {"uk_2019": {"type": "number", "unit": "USD", "aliases": ["UK", "2019"]}}}
    right = {"id": "right", "field": "uk_2019", "value": "1245", "unit": "USD"}
    right["evidence"] = [{"text": "1,245"}]
    wrong = dict(right, id="wrong", value="1300", evidence=[{"text": "1,300"}])
    plain, guarded = decide(doc, schema, [right, wrong])
    assert plain["right"]["outcome"] == "rejected", plain["right"]["codes"]
    assert plain["wrong"]["outcome"] == "admitted", plain["wrong"]["codes"]
    assert "OTHER_PROPOSAL_AT_FIELD" in guarded["wrong"]["codes"], guarded["wrong"]["guard"]
    assert "'right'" in guarded["wrong"]["guard"][-1]["detail"]


# --- guard revision 5 ------------------------------------------------------------------------

AWARDS = (
    "Non-vested awards\tShares\tWeighted-Average Grant Date Fair Value\n"
    "Granted\t473,550\t$53.53\n"
    "Vested\t(365,223)\t$41.83\n"
)
AWARDS_SCHEMA = {"fields": {"vested": {"type": "number", "aliases": ["Vested"]}}}


def test_a_misread_cell_elsewhere_in_the_row_does_not_settle_a_conflict():
    # a generated pair (TAT-QA's share awards): the shares vested given positive, beside the
    # fair value column's amount. The bracket says the first misread its cell, not that the
    # field is not there, so the other is not shown right: both stay in review
    shares = {"id": "shares", "field": "vested", "value": "365223"}
    shares["evidence"] = [{"text": "365,223"}, {"role": "sign", "text": "(365,223)"}]
    price = {"id": "price", "field": "vested", "value": "41.83", "evidence": [{"text": "41.83"}]}
    plain, guarded = decide(AWARDS, AWARDS_SCHEMA, [shares, price])
    assert {d["outcome"] for d in plain.values()} == {"needs_verification"}
    assert "SIGN_BRACKETED" in guarded["shares"]["codes"]
    assert guarded["price"]["outcome"] == "needs_verification", guarded["price"]["codes"]
    assert "CONFLICT_RESOLVED" not in guarded["price"]["codes"]
    assert "CONFLICTING_CANDIDATES" in guarded["price"]["codes"]
    # two readings of the one cell: the bracket settles which reading is the table's
    negative = dict(shares, id="negative", value="-365223")
    _, guarded = decide(AWARDS, AWARDS_SCHEMA, [shares, negative])
    assert guarded["negative"]["outcome"] == "admitted", guarded["negative"]["codes"]
    assert "CONFLICT_RESOLVED" in guarded["negative"]["codes"]
    assert guarded["shares"]["outcome"] == "needs_verification"


RSUS = (
    "There were 60,272 of such RSUs outstanding as of September 29, 2019.\n"
    "Name\tAge\tPosition\n"
    "Suzanne E. Maratta\t37\tVice President and Corporate Controller\n"
)


@pytest.mark.parametrize(
    ("field", "value", "quote", "flagged"),
    [
        ({"aliases": ["RSUs outstanding"]}, "29", None, True),  # the day of the date
        ({"aliases": ["RSUs outstanding"]}, "60272", None, False),  # the quantity
        ({"aliases": ["RSU vesting day"]}, "29", None, False),  # a field named for a day
        ({}, "29", None, False),  # a field without names asks for anything
        ({"aliases": ["Age"]}, "37", "37", False),  # "Maratta": no month before the cell
    ],
)
def test_the_day_of_a_date_is_no_quantity_of_a_named_field(field, value, quote, flagged):
    schema = {"fields": {"f": {"type": "number", **field}}}
    sentence = RSUS.splitlines()[0]
    cand = {"id": "c", "field": "f", "value": value, "evidence": [{"text": quote or sentence}]}
    plain, guarded = decide(RSUS, schema, [cand])
    codes = guarded["c"]["codes"]
    assert ("UNIT_KIND_MISMATCH" in codes) is flagged, guarded["c"]["guard"]
    if flagged:
        assert plain["c"]["outcome"] == "admitted"  # groundgate lets the day through
        assert guarded["c"]["outcome"] == "needs_verification"
        assert "day of a date" in guarded["c"]["guard"][0]["detail"]


RESTRUCTURING = (
    "(in millions)\n"
    "\tBalances, January 31, 2018\tAdditions\tAdjustments (1)\tBalances, January 31, 2019\n"
    "Employee terminations costs\t$53.0\t$39.2\t$(0.5)\t$2.0\n"
    "Total\t$55.5\t$42.4\t$(0.4)\t$2.1\n"
)


def test_a_header_with_a_footnote_mark_still_names_its_columns():
    # a generated right value (TAT-QA): the field names the row and the year, the candidate
    # quotes the row; revision 4 read no header (the "(1)" of "Adjustments (1)" is a number)
    # and sent the value to review as ambiguous
    field = {"type": "number", "unit": "USD", "aliases": ["Total", "2018"]}
    row = "Total\t$55.5\t$42.4\t$(0.4)\t$2.1"
    # and the 2019 column's cell, $2.1, stands under another year than the field's
    args = ("(in millions)", "55500000", "2100000", "$2.1")
    _row_admitted_other_column_not(RESTRUCTURING, field, row, *args)


def _row_admitted_other_column_not(doc, field, row, scale, value, other, other_cell):
    """The field's row quoted whole is admitted as groundgate admits it; the cell of the
    row's other year column, quoted alone, stands under another year than the field's."""
    schema = {"fields": {"f": field}}
    unit = {"unit": field["unit"]} if "unit" in field else {}
    scale_item = {"role": "scale", "text": scale}
    right = {"id": "right", "field": "f", "value": value, **unit}
    right["evidence"] = [{"text": row}, scale_item]
    plain, guarded = decide(doc, schema, [right])
    assert plain["right"]["outcome"] == "admitted", plain["right"]["codes"]
    assert guarded["right"]["outcome"] == "admitted", guarded["right"]["guard"]
    wrong = dict(right, id="wrong", value=other, evidence=[{"text": other_cell}, scale_item])
    _, guarded = decide(doc, schema, [wrong])
    assert "VALUE_NOT_IN_COLUMN" in guarded["wrong"]["codes"], guarded["wrong"]["guard"]


SUBSCRIBERS = (
    "\t2019\t2018\tCHANGE\t% CHANGE\n"
    "IPTV\t91,476\t110,790\t(19,314)\t(17.4%)\n"
    "Satellite\t(85,423)\t(89,231)\t3,808\t4.3%\n"
    "As of December 31, 2019, we held a 32.0% ownership interest in the partnership.\n"
)


@pytest.mark.parametrize(
    ("aliases", "value", "quote", "flagged"),
    [
        (["Satellite"], "-89231", "(89,231)", True),  # a count for the row's percentage
        (["Satellite"], "4.3", "4.3%", False),  # the row's percentage
        (["IPTV"], "-17.4", "(17.4%)", False),  # bracketed, marked after the bracket
        ([], "31", "As of December 31, 2019, we held a 32.0% ownership interest", True),
        ([], "32", "As of December 31, 2019, we held a 32.0% ownership interest", False),
    ],
)
def test_a_percentage_field_is_not_given_an_unmarked_number(aliases, value, quote, flagged):
    schema = {"fields": {"f": {"type": "number", "unit": "%", "aliases": aliases}}}
    if not aliases:
        del schema["fields"]["f"]["aliases"]
    cand = {"id": "c", "field": "f", "value": value, "unit": "%", "evidence": [{"text": quote}]}
    plain, guarded = decide(SUBSCRIBERS, schema, [cand])
    codes = guarded["c"]["codes"]
    assert ("UNIT_KIND_MISMATCH" in codes) is flagged, (plain["c"]["codes"], guarded["c"]["guard"])
    if flagged:
        assert plain["c"]["outcome"] == "admitted", plain["c"]["codes"]
        assert guarded["c"]["outcome"] == "needs_verification"


SEGMENTS = (
    "\tThree months ended\t\t\t\n"
    "\t31 December 2019\t\t31 December 2018\t\n"
    "\tAmount\t% of revenues\tAmount\t% of revenues\n"
    "\t(RMB in millions, unless specified)\t\t\t\n"
    "VAS\t26,120\t50%\t20,330\t47%\n"
)


def test_a_header_dated_day_first_names_its_columns():
    # a generated right value (TAT-QA): the row quoted whole, the field named by its row and
    # year; revision 5 read "31" as a number, so no header, and sent it to review as ambiguous
    field = {"type": "number", "aliases": ["VAS", "2019"]}
    row = "VAS\t26,120\t50%\t20,330\t47%"
    args = ("in millions", "26120000000", "20330000000", "20,330")
    _row_admitted_other_column_not(SEGMENTS, field, row, *args)
    # and in prose the day of such a date is no quantity of a named field
    doc = "Revenue was RMB 1,200 million for the 31 December 2019 quarter.\n"
    schema = {"fields": {"revenue": {"type": "number", "aliases": ["revenue"]}}}
    cand = {"id": "c", "field": "revenue", "value": "31", "evidence": [{"text": doc.strip()}]}
    _, guarded = decide(doc, schema, [cand])
    assert "UNIT_KIND_MISMATCH" in guarded["c"]["codes"], guarded["c"]["guard"]


NET_COST = (
    "Consolidated Statement of Net Cost\n"
    "( IN MILLION S )\n"
    "Total Gross Costs\t$ 25,599\n"
    "Net Costs\t$ 23,699\n"
    "\n"
    "Consolidated Statement of Changes in Net Position\n"
    "( IN MILLION S )\n"
    "Imputed Financing\t369\n"
    "Net Cost of Operations\t(23,699)\n"
)


def test_a_bracket_contradicts_only_the_cell_the_candidate_names():
    # a real reply (NASA's statements, the fourth real hold-out): "23,699" quoted for the net
    # cost, read by groundgate at the bracketed cell of the Statement of Changes in Net
    # Position, while the Statement of Net Cost writes it unbracketed
    names = ["Net Costs", "Net Cost of Operations"]
    schema = {"fields": {"ncost": {"type": "number", "aliases": names}}}
    cand = {"id": "c", "field": "ncost", "value": "23699000000"}
    cand["evidence"] = [
        {"text": "23,699"},
        {"role": "scale", "text": "( IN MILLION S )"},
        {"role": "field", "text": "Net Cost of Operations"},
    ]
    plain, guarded = decide(NET_COST, schema, [cand])
    assert plain["c"]["outcome"] == "admitted", plain["c"]["codes"]
    assert guarded["c"]["outcome"] == "admitted", guarded["c"]["guard"]
    # bound by offsets to the bracketed cell, the positive value is contradicted
    start = NET_COST.index("23,699)")
    bound = dict(cand, id="b", evidence=[{"text": "23,699", "start": start, "end": start + 6}])
    bound["evidence"] += cand["evidence"][1:]
    _, guarded = decide(NET_COST, schema, [bound])
    assert "SIGN_BRACKETED" in guarded["b"]["codes"], guarded["b"]["guard"]
