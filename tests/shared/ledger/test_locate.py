"""The locator: xrad's three passes and their order, with offsets into the original text."""

from __future__ import annotations

from groundswell.shared.ledger.locate import CASE, EXACT, WHITESPACE, DocumentText, locate

TEXT = (
    "Acme Ltd hereby acquires Beta Inc. Reuters reports that Beta Inc owns Gamma Holdings. "
    "The auditor does not accept that Acme acquired Beta."
)


def test_exact_then_case_then_whitespace():
    assert locate(TEXT, "hereby acquires") == (9, 24, EXACT)
    assert locate(TEXT, "ACME LTD") == (0, 8, CASE)
    assert locate(TEXT, "hereby\n   acquires") == (9, 24, WHITESPACE)  # the source's end


def test_a_paraphrase_is_never_found():
    assert locate(TEXT, "Acme purchased Beta") is None
    assert locate(TEXT, "") is None and locate(TEXT, "   ") is None
    assert locate("", "Acme") is None


def test_the_quote_is_stripped_and_the_occurrence_nearest_the_hint_wins():
    assert locate(TEXT, "  hereby acquires \n") == (9, 24, EXACT)
    assert locate("Beta. " * 5, "Beta", hint=18).start == 18
    assert locate("Beta. " * 5, "Beta").start == 0


def test_a_quote_inside_one_line_of_a_crlf_text_is_found_and_one_across_lines_too():
    crlf = "Acme Ltd hereby\r\nacquires Beta Inc.\r\n"
    assert locate(crlf, "acquires Beta") == (17, 30, EXACT)
    assert locate(crlf, "hereby acquires") == (9, 25, WHITESPACE)


def test_case_offsets_point_at_the_matched_source_text_when_lowering_changes_length():
    # 'İ' lower-cases to two characters: offsets found in the lowered text are mapped back.
    text = "İİİ ACME LTD signed"
    at = locate(text, "acme ltd")
    assert at == (4, 12, CASE) and text[at.start : at.end] == "ACME LTD"
    text = "ßİ Straße İstanbul AG"
    at = locate(text, "İSTANBUL ag")
    assert text[at.start : at.end] == "İstanbul AG" and at.tier == CASE


def test_a_case_hit_inside_one_characters_lower_case_form_is_not_a_case_hit():
    # 'i' is the first half of 'İ'.lower(): no case hit there (the whitespace pass, case-blind
    # as xrad's, may still take the whole character).
    doc = DocumentText("İx")
    at = doc.locate("ix")
    assert at is None or (at.tier != CASE)


def test_one_document_serves_many_quotes():
    doc = DocumentText(TEXT)
    assert [doc.locate(q).tier for q in ("Beta Inc", "beta INC owns", "Gamma\tHoldings")] == [
        EXACT,
        CASE,
        WHITESPACE,
    ]
