"""The PDF reader against groundgate 0.11.0's (in process, the dev-only oracle): the same text
byte for byte, the same groundgate_layout JSON and the same warnings, on every PDF of
../shared/raw and on small PDFs written here for the cases the corpus lacks; then what is ours
alone: page selection, limits and clear errors for files that are no readable PDF."""

from __future__ import annotations

import io
import json
from pathlib import Path

import groundgate.read
import pytest

from groundswell.shared.read import ReadError, Reading, ReadTimeout
from groundswell.shared.read.pdf import read_pdf
from tests.shared.read.minipdf import Encryption, Page, build, text

# text, layout JSON (as groundgate's CLI writes it), warnings
Oracle = tuple[str, str, tuple[str, ...]]


def groundgate_pdf(path: Path, pages: list[int] | None = None) -> Oracle | str:
    """groundgate's reading of a PDF, or its error message."""
    try:
        doc = groundgate.read.read(path, pages=pages)
    except groundgate.read.ReadError as e:
        return str(e)
    assert doc.layout is not None
    return doc.text, json.dumps(doc.layout.to_dict()), doc.warnings


def ours(reading: Reading) -> Oracle:
    return reading.text, json.dumps(reading.layout), tuple(reading.warnings)


# -- the corpus ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def raw_pdfs(shared_raw: Path) -> list[Path]:
    files = sorted(p for p in shared_raw.iterdir() if p.suffix.lower() == ".pdf")
    assert len(files) == 15, files
    return files


@pytest.fixture(scope="session")
def oracle_readings(raw_pdfs: list[Path]) -> dict[str, Oracle]:
    """groundgate's reading of each raw PDF, read once per session."""
    found = {}
    for path in raw_pdfs:
        reading = groundgate_pdf(path)
        assert not isinstance(reading, str), reading
        found[path.name] = reading
    return found


@pytest.fixture(scope="session")
def our_readings(raw_pdfs: list[Path]) -> dict[str, Reading]:
    return {path.name: read_pdf(path.read_bytes()) for path in raw_pdfs}


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at {i}: groundgate {a[max(0, i - 60) : i + 60]!r}, ours {b[max(0, i - 60) : i + 60]!r}"


@pytest.mark.corpus
def test_every_raw_pdf_reads_to_groundgates_text(
    oracle_readings: dict[str, Oracle], our_readings: dict[str, Reading]
) -> None:
    differ = {
        name: _first_difference(expected[0], our_readings[name].text)
        for name, expected in oracle_readings.items()
        if our_readings[name].text != expected[0]
    }
    assert not differ, differ
    assert all(len(expected[0]) > 3000 for name, expected in oracle_readings.items()
               if name != "NCT06155240_Prot_SAP_000.pdf")  # fmt: skip


@pytest.mark.corpus
def test_every_raw_pdf_has_groundgates_layout_json(
    oracle_readings: dict[str, Oracle], our_readings: dict[str, Reading]
) -> None:
    differ = [
        name
        for name, expected in oracle_readings.items()
        if json.dumps(our_readings[name].layout) != expected[1]
    ]
    assert not differ, differ
    words = sum(len(r.layout["words"]) for r in our_readings.values() if r.layout)
    assert words > 100_000


@pytest.mark.corpus
def test_every_raw_pdf_has_groundgates_warnings_and_its_page_count(
    oracle_readings: dict[str, Oracle], our_readings: dict[str, Reading]
) -> None:
    for name, expected in oracle_readings.items():
        reading = our_readings[name]
        assert tuple(reading.warnings) == expected[2], name
        assert reading.format == "pdf"
        assert reading.pages == len(json.loads(expected[1])["pages"]), name


@pytest.mark.corpus
def test_a_pdf_without_a_text_layer_warns_and_says_which_pages(
    our_readings: dict[str, Reading],
) -> None:
    scanned = our_readings["NCT06155240_Prot_SAP_000.pdf"]
    assert scanned.text == "" and scanned.pages == 1
    assert scanned.pages_without_text == [1]
    assert scanned.warnings == [
        "page 1 has no text layer; OCR the PDF first (for example with ocrmypdf)"
    ]
    assert scanned.layout is not None and scanned.layout["words"] == []
    others = [r for name, r in our_readings.items() if name != "NCT06155240_Prot_SAP_000.pdf"]
    assert all(r.pages_without_text == [] for r in others)


@pytest.mark.corpus
def test_the_filings_have_table_rows(our_readings: dict[str, Reading]) -> None:
    filings = [r for name, r in our_readings.items() if name.startswith("2023")]
    assert len(filings) == 3 and all(r.text.count("\t") > 500 for r in filings)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "pages", [[2, 3], [1, 4], [3, 4, 5, 9], [9], [4, 1, 4]], ids=lambda p: ",".join(map(str, p))
)
def test_page_selection_is_groundgates(shared_raw: Path, pages: list[int]) -> None:
    path = shared_raw / "20071229X02007.pdf"
    expected = groundgate_pdf(path, pages)
    reading = read_pdf(path.read_bytes(), pages=pages)
    assert ours(reading) == expected
    assert reading.pages == 4


@pytest.mark.corpus
def test_page_ranges_as_text(shared_raw: Path) -> None:
    data = (shared_raw / "NARA2022.pdf").read_bytes()
    assert ours(read_pdf(data, pages="2-3,5")) == ours(read_pdf(data, pages=[5, 2, 3]))
    whole = read_pdf(data)
    first = read_pdf(data, pages="1")
    assert whole.text.startswith(first.text + "\n\f")
    with pytest.raises(ReadError, match="bad page range"):
        read_pdf(data, pages="3-1")


# -- small PDFs: each case read by both readers ---------------------------------------------


def _sup(x: float, y: float, s: str, size: float = 7) -> bytes:
    return text(x, y, s, size)


RULED = b"".join(
    [
        b"0.5 w\n",
        *(b"72 %d m 372 %d l S\n" % (y, y) for y in (700, 680, 660, 640)),
        *(b"%d 640 m %d 700 l S\n" % (x, x) for x in (72, 222, 372)),
        text(76, 686, "Question", 10),
        text(226, 686, "Answer", 10),
        text(76, 666, "What is it?", 10),
        text(226, 666, "A test", 10),
        text(76, 646, "Who wrote it?", 10),
        text(226, 646, "Nobody", 10),
    ]
)

NUMBERS = (
    b"".join(
        text(72, 700 - 16 * i, label, 10)
        + b"".join(text(300 + 80 * k, 700 - 16 * i, v, 10) for k, v in enumerate(values))
        for i, (label, values) in enumerate(
            [
                ("Revenue", ["$ 1,234", "$ 1,100"]),
                ("Cost of sales", ["(456)", "(400)"]),
                ("Other", ["", "12"]),
                ("Net income", ["778", "712"]),
            ]
        )
    )
    + text(300, 716, "2024", 10)
    + text(380, 716, "2023", 10)
)

TOKENS = (
    b"% a comment line\nBT /F1 12 Tf 14 TL 72 700 Td (Escapes: \\(a\\) \\\\ \\101\\102 \\0530)Tj "
    b"T* (nested (parens) here) Tj T* <48656C6C6F20686578> Tj T* "
    b"[(Ke) 120 (rned) -250 (TJ) 30.5 (array)] TJ T* 2 Tc (spaced out) Tj 0 Tc "
    b"T* 1.5 Tw 120 Tz (scaled words) Tj 100 Tz 0 Tw "
    b"T* (quote op) ' 3 1 (dquote op) \" ET\n"
    b"/Span <</ActualText (x) /MCID 3>> BDC BT /F1 9 Tf .5 0 0 .5 72 560 Tm (half) Tj ET EMC\n"
    b"q 1 0 0 1 72 520 cm BT /F1 +10 Tf -0. 0 Td (moved) Tj ET Q\n"
    b"BT /F#31 11 Tf 72 500 Td (name with a hex escape) Tj ET\n"
)

IDENTITY_V = (  # a CID font written top to bottom, with no ToUnicode: codes read as (cid:N)
    b"<< /Type /Font /Subtype /Type0 /BaseFont /Helvetica /Encoding /Identity-V"
    b" /DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Helvetica"
    b" /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>] >>"
)
CID_RUN = b"BT /F2 12 Tf 100 700 Td <00410042004300200044> Tj ET\n" + text(72, 400, "Across")

CASES: dict[str, bytes] = {
    "vertical-font": build([CID_RUN], font2=IDENTITY_V),
    "form-xobjects": build(
        [
            Page(
                text(72, 700, "On the page") + b"/Fm1 Do q 0.5 0 0 0.5 300 100 cm /Fm2 Do Q\n",
                forms={
                    "Fm1": text(72, 650, "In a form") + text(72, 630, "Its second line"),
                    "Fm2": text(72, 700, "A scaled form") + b"/Fm1 Do\n",  # draws Fm1 again
                },
            )
        ]
    ),
    "inline-image": build(
        [
            text(72, 700, "Before the image")
            + b"q 20 0 0 20 72 600 cm BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xff(\x80 EI Q\n"
            + text(72, 560, "After the image")
        ]
    ),
    "undefined-codes": build([CID_RUN], font2=IDENTITY_V.replace(b"Identity-V", b"Identity-H")),
    "superscripts": build(
        [
            text(72, 700, "Cells 10")
            + _sup(115.4, 705, "9")
            + text(119.4, 700, "5 and x")
            + _sup(158.9, 705, "2")
            + text(72, 680, "H")
            + _sup(80.7, 676, "2")
            + text(84.6, 680, "O")
        ]
    ),
    "ligatures": build([b"BT /F2 12 Tf 72 700 Td (\x80nd the \x81ow) Tj ET\n"]),
    "off-page": build(
        [
            Page(
                text(72, 700, "Visible")
                + text(-300, 700, "CROPMARK")
                + text(20, 20, "slug")
                + text(72, 680, "Also visible"),
                crop=(50, 50, 562, 742),
            )
        ]
    ),
    "rotated": build([Page(text(72, 700, "Turned page") + text(72, 600, "Second"), rotate=90)]),
    "upside-down": build([Page(text(72, 700, "Half turn"), rotate=180, media=(0, 0, 400, 800))]),
    "three-quarters": build([Page(text(72, 700, "Three quarters"), rotate=270)]),
    "offset-media": build([Page(text(172, 800, "Origin moved"), media=(100, 100, 712, 892))]),
    "empty-pages": build([b"", text(72, 700, "Only the middle page"), b"0 0 m 100 100 l S\n"]),
    "ruled-table": build([RULED]),
    "number-table": build([NUMBERS]),
    "tokens": build([TOKENS]),
    "split-streams": build(
        [Page([b"BT /F1 12 Tf 72 700 Td (first ", b"stream) Tj ET", b"\nBT 72 680 Td (x) Tj ET"])]
    ),
    "compressed-encrypted": build(
        [text(72, 700, "Sealed"), text(72, 700, "Page two")],
        encryption=Encryption(revision=3),
        compress=True,
    ),
    "words-and-gaps": build(
        [
            text(72, 700, "Tight")
            + text(104.5, 700, "Apart")
            + text(300, 700, "Far away")
            + text(72, 400, "Lower block")
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_small_pdfs_read_as_groundgate_reads_them(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.pdf"
    path.write_bytes(CASES[name])
    expected = groundgate_pdf(path)
    assert not isinstance(expected, str), expected
    assert ours(read_pdf(CASES[name])) == expected


def test_scripts_are_marked_and_glyphs_outside_the_page_dropped() -> None:
    assert read_pdf(CASES["superscripts"]).text == "Cells 10^9 5 and x^2\n\nH_2O"
    off = read_pdf(CASES["off-page"])
    assert off.text == "Visible\n\nAlso visible"
    assert off.warnings == ["page 1: dropped 2 words drawn outside the visible page"]
    assert read_pdf(CASES["ligatures"]).text == "find the flow"
    assert "Question\tAnswer\nWhat is it?\tA test" in read_pdf(CASES["ruled-table"]).text
    empty = read_pdf(CASES["empty-pages"])
    assert empty.text == "\n\fOnly the middle page\n\f"
    assert empty.pages_without_text == [1, 3] and empty.pages == 3


def test_the_same_bytes_every_time() -> None:
    first = ours(read_pdf(CASES["number-table"]))
    assert all(ours(read_pdf(CASES["number-table"])) == first for _ in range(3))


# -- errors and limits: ours -----------------------------------------------------------------


def _refused(tmp_path: Path, data: bytes) -> tuple[str, str]:
    """groundgate's error and ours for one file (both must refuse it)."""
    path = tmp_path / "bad.pdf"
    path.write_bytes(data)
    theirs = groundgate_pdf(path)
    assert isinstance(theirs, str), "groundgate read it"
    with pytest.raises(ReadError) as raised:
        read_pdf(data)
    return theirs, str(raised.value)


def test_a_zero_byte_file(tmp_path: Path) -> None:
    _, message = _refused(tmp_path, b"")
    assert message == "the file is empty (0 bytes), not a PDF"


def test_html_named_pdf(tmp_path: Path) -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>404</title></head><body>Not found</body></html>"
    _, message = _refused(tmp_path, page)
    assert message == "not a PDF (no %PDF- header); it looks like HTML"
    _, message = _refused(tmp_path, b"PK\x03\x04" + bytes(100))
    assert (
        message
        == "not a PDF (no %PDF- header); it looks like a ZIP archive (such as .docx or .xlsx)"
    )


def test_truncated_files(tmp_path: Path) -> None:
    whole = CASES["number-table"]
    for cut in (20, len(whole) // 2, len(whole) - 30):
        _, message = _refused(tmp_path, whole[:cut])
        assert message.startswith("the PDF is truncated or damaged: it ends without %%EOF"), cut


def test_a_password_protected_file(tmp_path: Path) -> None:
    for revision in (2, 3):
        data = build([text(72, 700, "Secret")], encryption=Encryption(b"pw", revision=revision))
        theirs, message = _refused(tmp_path, data)
        assert "PDFPasswordIncorrect" in theirs
        assert message == "the PDF is encrypted and needs a password; decrypt it first"


def test_page_and_time_limits() -> None:
    data = build([text(72, 700, f"Page {n}") for n in range(1, 6)])
    with pytest.raises(ReadError, match="5 pages to read, more than the limit of 4"):
        read_pdf(data, max_pages=4)
    assert read_pdf(data, max_pages=4, pages="2-5").text == "Page 2\n\fPage 3\n\fPage 4\n\fPage 5"
    assert read_pdf(data, max_pages=None).pages == 5
    with pytest.raises(ReadTimeout, match="longer than the limit of 1e-09 s"):
        read_pdf(data, time_limit=1e-9)
    with pytest.raises(ReadError, match="pages must be 1-based"):
        read_pdf(data, pages=[0, 1])
    assert read_pdf(data, pages=[7]).warnings == ["no pages were extracted"]


# -- reader option pdf_tables=cells-1: a better reading of number tables ---------------------


def _statement(rows: list[tuple[str, list[tuple[float, str]]]], late: bytes = b"") -> bytes:
    """A one-page number table: years over two columns, then labelled rows of figures at the
    given x; ``late`` is drawn last (pdfminer then makes it lines of its own)."""
    content = text(335, 716, "2024", 10) + text(435, 716, "2023", 10)
    for i, (label, cells) in enumerate(rows):
        content += text(72, 700 - 16 * i, label, 10)
        content += b"".join(text(x, 700 - 16 * i, v, 10) for x, v in cells)
    return build([content + late])


ONE_SIGNED_ROW = _statement(
    [
        ("Net income", [(300, "$"), (330, "1,234"), (400, "$"), (430, "1,100")]),
        ("Other items", [(342, "56"), (442, "78")]),
        ("Total", [(330, "1,290"), (430, "1,178")]),
    ]
)
MARKED_LABELS = _statement(
    [
        ("Products", [(330, "7,735"), (430, "10,852")]),
        ("Services", [(330, "20,766"), (430, "19,516")]),
        ("Total", [(330, "28,501"), (430, "30,368")]),
    ],
    late=text(118.5, 700, "(1)", 10) + text(114.6, 684, "(2)", 10),
)
SMALL_NEGATIVE = _statement(
    [
        ("Revenue", [(330, "7,735"), (430, "10,852")]),
        ("Other income", [(430, "5")]),
        ("Total", [(330, "7,734"), (430, "10,857")]),
    ],
    late=text(336, 684, "(1)", 10),
)


@pytest.mark.parametrize(
    ("data", "groundgates", "better"),
    [
        (
            ONE_SIGNED_ROW,
            "\t2024\t2023\nNet income $ 1,234 $ 1,100\nOther items\t56\t78\nTotal\t1,290\t1,178",
            "\t2024\t2023\nNet income\t$ 1,234\t$ 1,100\nOther items\t56\t78\nTotal\t1,290\t1,178",
        ),
        (
            MARKED_LABELS,
            "\t\t2024\t2023\nProducts\t(1)\t7,735\t10,852\nServices\t(2)\t20,766\t19,516\n"
            "Total\t\t28,501\t30,368",
            "\t2024\t2023\nProducts (1)\t7,735\t10,852\nServices (2)\t20,766\t19,516\n"
            "Total\t28,501\t30,368",
        ),
        (  # "(1)" under a column of figures is an amount, not a footnote mark
            SMALL_NEGATIVE,
            "\t2024\t2023\nRevenue\t7,735\t10,852\nOther income\t(1)\t5\nTotal\t7,734\t10,857",
            "\t2024\t2023\nRevenue\t7,735\t10,852\nOther income\t(1)\t5\nTotal\t7,734\t10,857",
        ),
    ],
    ids=["one-signed-row", "marked-labels", "small-negative"],
)
def test_cells_1_reads_number_tables_better(
    tmp_path: Path, data: bytes, groundgates: str, better: str
) -> None:
    path = tmp_path / "table.pdf"
    path.write_bytes(data)
    expected = groundgate_pdf(path)
    assert not isinstance(expected, str)
    assert expected[0] == groundgates == read_pdf(data).text  # the default is groundgate's
    reading = read_pdf(data, pdf_tables="cells-1")
    assert reading.text == better
    words = json.loads(expected[1])["words"]  # the same words, only the separators differ
    assert sorted(w[3:] for w in reading.layout["words"]) == sorted(w[3:] for w in words)


def test_cells_1_is_the_only_table_reading() -> None:
    with pytest.raises(ValueError, match="pdf_tables is one of cells-1, not 'cells-2'"):
        read_pdf(ONE_SIGNED_ROW, pdf_tables="cells-2")


@pytest.mark.corpus
def test_cells_1_on_the_filings(shared_raw: Path) -> None:
    """The documented examples: Apple's net sales by category (page 10) and Amazon's
    statement of comprehensive income (page 5), whose rows groundgate writes without tabs."""
    apple = (shared_raw / "2023-Q1-AAPL.pdf").read_bytes()
    theirs = read_pdf(apple, pages="10").text
    assert "\n\n\n2022 2021\n\n\niPhone ® (1) $ 65,775 $ 71,628\n" in theirs
    assert "\nServices (3) 20,766 19,516\n" in theirs
    ours_ = read_pdf(apple, pages="10", pdf_tables="cells-1").text
    assert (
        "\n\t2022\t2021\niPhone ® (1)\t$ 65,775\t$ 71,628\nMac ® (1)\t7,735\t10,852\n"
        "iPad ® (1)\t9,396\t7,248\nWearables, Home and Accessories (1)(2)\t13,482\t14,701\n"
        "Services (3)\t20,766\t19,516\nTotal net sales (4)\t$ 117,154\t$ 123,945\n"
    ) in ours_
    amazon = (shared_raw / "2023-Q1-AMZN.pdf").read_bytes()
    assert "\nNet income (loss) $ (3,844) $ 3,172\n" in read_pdf(amazon, pages="5").text
    better = read_pdf(amazon, pages="5", pdf_tables="cells-1").text
    assert "\n\t2022\t2023\nNet income (loss)\t$ (3,844)\t$ 3,172\n" in better
    assert "\nComprehensive income (loss)\t$ (4,833)\t$ 3,686\n" in better


def test_a_page_of_scattered_glyphs_is_refused_not_ordered_for_ever() -> None:
    """Ordering text boxes compares every pair: more than MAX_BOXES (2,000) boxes on one
    page, such as a chart drawn as lone glyphs, is an error, not minutes and gigabytes."""
    glyphs = b"".join(
        b"BT /F1 5 Tf %d %d Td (x) Tj ET\n" % (10 + 14 * col, 10 + 12 * row)
        for row in range(45)
        for col in range(50)
    )
    data = build([text(72, 700, "A title"), Page(glyphs, media=(0, 0, 800, 600))])
    assert read_pdf(data, pages="1").text == "A title"
    with pytest.raises(ReadError, match=r"^page 2: 2,250 text boxes on one page, more than"):
        read_pdf(data)


def test_the_deadline_is_checked_inside_a_long_page() -> None:
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    from groundswell.shared.read.pdf_engine import CHECK_EVERY, PageReader

    data = build([b"q Q " * (3 * CHECK_EVERY) + text(72, 700, "late")])
    page = next(PDFPage.create_pages(PDFDocument(PDFParser(io.BytesIO(data)))))
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ReadTimeout("too long")

    with pytest.raises(ReadTimeout):
        PageReader(check=check).read(page)
    assert len(calls) == 2
