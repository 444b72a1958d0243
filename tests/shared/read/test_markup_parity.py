"""HTML, XML and text read as groundgate 0.11.0 reads them: the same text, byte for byte, the
same warnings and the same errors, on edge-case files and on random markup."""

from __future__ import annotations

from pathlib import Path

import pytest
from groundgate.read import markup as groundgate_markup
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.read import ReadError, Reading, read_bytes, read_path, reader_id
from groundswell.shared.read.markup import XMLError, html_text, xml_text
from tests.shared.read.cases import DIFFERENT, SAME, groundgate_read, write


def ours(path: Path) -> tuple[str, tuple[str, ...]] | str:
    try:
        reading = read_path(path)
    except ReadError as exc:
        return str(exc)
    return reading.text, tuple(reading.warnings)


@pytest.mark.parametrize("name", sorted(SAME))
def test_edge_cases_read_as_groundgate_reads_them(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, SAME[name])
    expected, got = groundgate_read(path), ours(path)
    if isinstance(expected, str):  # an error: ours says the same, sometimes with more detail
        assert isinstance(got, str) and got.startswith(expected), (expected, got)
    else:
        assert got == expected


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_mislabelled_and_empty_files_are_refused_with_a_clear_error(
    tmp_path: Path, name: str
) -> None:
    data, why = DIFFERENT[name]
    path = write(tmp_path, name, data)
    with pytest.raises(ReadError) as caught:
        read_path(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    if data:
        assert any(word in message for word in ("PDF", "HTML", "ZIP")), (why, message)
    else:
        assert "empty (0 bytes)" in message


def test_reading_fields_and_suffixes_without_regard_to_case() -> None:
    reading = read_bytes(b"<R><P>x</P></R>", "dir/Bill.XmL")
    assert reading == Reading("x", "xml", reader=reader_id({}))
    assert read_bytes(b"<p>y</p>", "a.HTM").format == "html"
    assert read_bytes(b"z", "a.Markdown").format == "text"
    assert read_bytes(b"<p>y</p>", "no-ending", format="html").text == "y"
    with pytest.raises(ValueError, match="unknown format"):
        read_bytes(b"x", "a.txt", format="docx")
    with pytest.raises(ValueError, match="no xml reader option"):
        read_bytes(b"<r/>", "a.xml", colour="blue")


def test_text_is_nfc_and_the_empty_warning_names_the_file() -> None:
    reading = read_bytes("<p>e\u0301</p>".encode(), "/some/where/doc.html")
    assert reading.text == "\u00e9"
    blank = read_bytes(b"<p>\xc2\xa0</p>", "/some/where/blank.html")
    assert blank.text == "" and blank.warnings == ["blank.html: no text was extracted"]


def test_pages_are_checked_but_ignored_outside_pdfs() -> None:
    assert read_bytes(b"<p>y</p>", "a.html", pages="1-3,7").text == "y"
    with pytest.raises(ValueError, match="bad page range '0'"):
        read_bytes(b"<p>y</p>", "a.html", pages="0")


# Random markup from a vocabulary of the tags, attributes and text the readers treat specially.
_TAGS = ["p", "div", "span", "td", "th", "tr", "table", "sup", "sub", "br", "pre", "script",
         "style", "head", "title", "li", "b", "hr", "img", "meta", "noscript", "template",
         "caption", "TD", "Sup", "x:td"]  # fmt: skip
_ATTRS = ["", " hidden", ' style="display:none"', ' style="Visibility : Hidden"', ' class="a"']
_TEXT = [" ", "\n", "\t", "a", " b ", "10", "5", "x y", "\xa0", "&amp;", "&#169;", "\r\n",
         "  \n  ", "e\u0301", "\u00b2", "<!-- c -->", "<![CDATA[q<]]>", "&lt;"]  # fmt: skip


def _element(children: st.SearchStrategy[str], xml: bool) -> st.SearchStrategy[str]:
    tags = [t for t in _TAGS if ":" not in t] if xml else _TAGS
    attrs = st.just("") if xml else st.sampled_from(_ATTRS)
    form = st.just("closed") if xml else st.sampled_from(["closed", "closed", "open", "self"])

    def build(tag: str, attr: str, how: str, inner: str) -> str:
        if how == "self":
            return f"<{tag}{attr}/>"
        if how == "open":
            return f"<{tag}{attr}>{inner}"
        return f"<{tag}{attr}>{inner}</{tag}>"

    return st.builds(build, st.sampled_from(tags), attrs, form, children)


def _markup(xml: bool) -> st.SearchStrategy[str]:
    text = st.sampled_from(_TEXT)
    return st.recursive(
        text,
        lambda inner: st.lists(st.one_of(text, _element(inner, xml)), max_size=5).map("".join),
        max_leaves=30,
    )


@settings(max_examples=300, deadline=None)
@given(_markup(xml=False))
def test_random_html_reads_as_groundgate(source: str) -> None:
    assert html_text(source) == groundgate_markup.html_text(source)


@settings(max_examples=300, deadline=None)
@given(_markup(xml=True))
def test_random_xml_reads_as_groundgate(body: str) -> None:
    data = f"<r>{body}</r>".encode()
    try:
        expected: str | tuple[str, str] = groundgate_markup.xml_text(data)
    except SyntaxError as exc:  # ElementTree's ParseError
        expected = ("error", str(exc))
    try:
        got: str | tuple[str, str] = xml_text(data)
    except XMLError as exc:
        got = ("error", str(exc))
    assert got == expected
