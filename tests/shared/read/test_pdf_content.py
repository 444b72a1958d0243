"""The fast content-stream tokenizer against pdfminer's own content parser: the same objects,
of the same types, on every content stream of the corpus's PDFs and on generated streams; or
no answer (the reader then uses pdfminer's parser) where pdfminer's result depends on its
buffers or on inline images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pdfminer.pdfdocument import PDFDocument
from pdfminer.pdfinterp import PDFContentParser
from pdfminer.pdfpage import PDFPage
from pdfminer.pdfparser import PDFParser
from pdfminer.pdftypes import PDFStream, dict_value, resolve1, stream_value
from pdfminer.psparser import PSEOF, PSKeyword, PSLiteral

from groundswell.shared.read.pdf_content import content_objects


def shape(obj: Any) -> Any:
    """An object as comparable data: its type, and for names and keywords their identity."""
    if isinstance(obj, bool | int | float | bytes):
        return type(obj).__name__, obj
    if isinstance(obj, PSLiteral | PSKeyword):
        return type(obj).__name__, id(obj)
    if isinstance(obj, list):
        return "list", [shape(x) for x in obj]
    if isinstance(obj, dict):
        return "dict", [(k, shape(v)) for k, v in obj.items()]
    return "other", repr(obj)


def pdfminer_objects(streams: list[bytes]) -> list[Any] | str:
    """What pdfminer's content parser gives, or the name of the error it raises."""
    wrapped = []
    for data in streams:
        stream = PDFStream({"Length": len(data)}, data)
        stream.data = data  # already decoded
        wrapped.append(stream)
    out = []
    try:
        parser = PDFContentParser(wrapped)
        while True:
            out.append(parser.nextobject()[1])
    except PSEOF:
        return out
    except Exception as e:  # an error pdfminer raises: ours must not answer
        return type(e).__name__


def agree(streams: list[bytes]) -> bool:
    """True when we give pdfminer's objects, or give no answer."""
    ours = content_objects(streams)
    if ours is None:
        return True
    theirs = pdfminer_objects(streams)
    assert not isinstance(theirs, str), f"pdfminer raised {theirs}, we answered"
    assert [shape(x) for x in ours] == [shape(x) for x in theirs], streams
    return False


def _form_streams(resources: Any, seen: set[int]) -> list[PDFStream]:
    found = []
    xobjects = dict_value(resolve1(dict_value(resources).get("XObject", {})) or {})
    for ref in xobjects.values():
        stream = stream_value(ref)
        if stream.objid in seen or "Form" not in str(stream.get("Subtype")):
            continue
        seen.add(stream.objid)
        found.append(stream)
        if stream.get("Resources"):
            found.extend(_form_streams(stream["Resources"], seen))
    return found


@pytest.mark.corpus
def test_content_streams_of_the_raw_pdfs(shared_raw: Path) -> None:
    """Every third page of every raw PDF, with the forms it draws (pdfminer's parser is slow;
    the reader's parity tests read every page our way)."""
    pages = forms = answered = 0
    for path in sorted(shared_raw.glob("*.pdf")):
        with path.open("rb") as fh:
            document = PDFDocument(PDFParser(fh))
            seen: set[int] = set()  # a form drawn on many pages is compared once
            for n, page in enumerate(PDFPage.create_pages(document)):
                if n % 3:
                    continue
                pages += 1
                answered += not agree([stream_value(s).get_data() for s in page.contents])
                if page.resources:
                    for form in _form_streams(page.resources, seen):
                        forms += 1
                        answered += not agree([form.get_data()])
    assert pages == 102 and answered == pages + forms  # no stream needed pdfminer's parser


CASES = [
    b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET",
    b"1 2 3 re f 0.5 .5 -.5 +3 5. -0. 1.2.3 -- --4 - + . 12abc 1-2",
    b"(a\\(b\\)c) (nested (one (two)) x) (\\101\\1012\\7\\777) (oct\\0053) (\\q\\\nz) (\\n\\t\\b\\f\\r)",
    b"<48 65 6c6C 6f> <4> <> <4865G> <<>> < < <</A 1 /B [1 2] /C <</D (x)>> >> BDC",
    b"/Name /N#41me /#4 /#g /# /  /a#20b [/A /B] {1 2} ] } >> > )",
    b"% comment\n1 % to the end\r2 %\n true false null T* ' \" d0 d1 \x80 \x00 1\x002 abc\x00d",
    b"[(Ke) 120 (rned) -250.5 (TJ)] TJ [(unclosed) 1 2",
    b"<< /A 1 /B >> x",  # an odd dictionary: pdfminer raises
    b"q BI /W 1 /H 1 /BPC 8 ID \x00\xff EI Q",  # an inline image: pdfminer's parser reads it
    b"(unterminated string",
    b"<48656c",
    b"(crlf\\\r\nescape)",
]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
def test_hand_written_streams(data: bytes) -> None:
    agree([data])


@pytest.mark.parametrize(
    "parts",
    [
        [b"BT /F1 12 Tf (first ", b"stream) Tj ET"],  # a string across the joint
        [b"1 2 /", b"Name 3"],
        [b"BT 1 0 0 1 72 700 Tm (a) Tj", b"ET BT (b) Tj ET"],
        [b"0 0 m 10 10 l", b"", b"S 1 2 <<", b"/A 1>> BDC EMC"],
        [b"(x) Tj <48", b"65> Tj"],
        [b"%comment", b"1 2 d"],
        [b"12", b"34 Tw"],
    ],
)
def test_several_streams_of_one_page(parts: list[bytes]) -> None:
    agree(parts)


_PIECES = [
    b" ", b"\n", b"\r", b"\t", b"\x00", b"1", b"-", b"+", b".", b"0.5", b"23", b"Tj", b"T*",
    b"true", b"(", b")", b"\\", b"\\1", b"\\12", b"\\n", b"\\)", b"<", b">", b"<<", b">>",
    b"[", b"]", b"{", b"}", b"/", b"#", b"#4", b"#41", b"A", b"f", b"%", b"'", b"\"", b"\x80",
    b"\xff", b"e", b"BT", b"ET", b"\\\n", b"(ab)", b"(a(b)c)", b"(x\\)y)", b"<41>", b"<4 1 a>",
    b"(\\101)", b"(\\1012)", b"/a#4", b"/F1",
]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=40).map(b"".join), min_size=1,
                max_size=3))  # fmt: skip
def test_generated_streams(parts: list[bytes]) -> None:
    agree(parts)
