"""Named, versioned reader options: a better reading where groundgate's is plainly wrong, never
the default. ``xml_breaks="uslm-1"`` sets apart the words that groundgate fuses across USLM
elements, and changes nothing but whitespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.read import READER_VERSION, read_bytes, read_path, reader_id
from groundswell.shared.read.ocr import ocr_id
from groundswell.shared.settings import get_settings

USLM = "http://schemas.gpo.gov/xml/uslm"

OCR = ocr_id(get_settings())  # e.g. ocr-1/tesseract-5.3.0/eng/300dpi/floor-50/missing


def uslm(body: str) -> bytes:
    return f'<bill xmlns="{USLM}">{body}</bill>'.encode()


def both(body: str) -> tuple[str, str]:
    data = uslm(body)
    return read_bytes(data, "b.xml").text, read_bytes(data, "b.xml", xml_breaks="uslm-1").text


@pytest.mark.parametrize(
    ("body", "groundgate", "better"),
    [
        (  # titles end a line
            "<longTitle><docTitle>A BILL</docTitle><officialTitle>Making appropriations"
            "</officialTitle></longTitle><enactingFormula>Be it enacted,</enactingFormula>",
            "A BILLMaking appropriationsBe it enacted,",
            "A BILL\nMaking appropriations\nBe it enacted,",
        ),
        (  # a number, a heading and the text after them are words of their own
            "<title><num>TITLE I</num><heading>DEPARTMENT OF JUSTICE</heading></title>"
            "<level><heading>immigration review</heading><content>For an amount</content></level>",
            "TITLE IDEPARTMENT OF JUSTICE\n\nimmigration reviewFor an amount",
            "TITLE I DEPARTMENT OF JUSTICE\n\nimmigration review For an amount",
        ),
        (  # but the printed law's ".—" and "(5)(A)" stay as they are
            "<section><heading>Short Title.—</heading><content>This Act</content></section>"
            "<paragraph><num>(5)</num><subparagraph><num>(A)</num>text</subparagraph></paragraph>",
            "Short Title.—This Act\n\n(5)(A)text",
            "Short Title.—This Act\n\n(5)(A) text",
        ),
        (  # page markers and margin notes are not running text
            "<content>amended by<page>130 STAT. 1009</page>and<sidenote><p>Applicability.</p>"
            "</sidenote>Notwithstanding section 2</content>",
            "amended by130 STAT. 1009and\n\nApplicability.\n\nNotwithstanding section 2",
            "amended by\n130 STAT. 1009\nand\n\nApplicability.\n\nNotwithstanding section 2",
        ),
        (  # punctuation after an element never gets a space before it
            "<action><date>June 19, 2019</date><actionDescription>Mr. Shelby</actionDescription>"
            "</action><p><num>Sec. 2</num>. <heading>Text</heading>, and</p>",
            "June 19, 2019Mr. Shelby\n\nSec. 2. Text, and",
            "June 19, 2019 Mr. Shelby\n\nSec. 2. Text, and",
        ),
    ],
)
def test_uslm_1_sets_fused_words_apart(body: str, groundgate: str, better: str) -> None:
    assert both(body) == (groundgate, better)


@pytest.mark.corpus
def test_uslm_1_on_the_raw_xml_files_changes_only_whitespace(shared_raw: Path) -> None:
    fused = ("An ActTo", "BILLMaking", "IDEPARTMENT", "TITLE.This", "2019Mr.", "1009and")
    seen = set()
    for path in sorted(shared_raw.glob("*.[xX][mM][lL]")):
        plain = read_path(path)
        better = read_path(path, xml_breaks="uslm-1")
        assert better.reader == f"{READER_VERSION};ocr={OCR};xml_breaks=uslm-1"
        assert "".join(better.text.split()) == "".join(plain.text.split()), path
        assert not [word for word in fused if word in better.text], path
        seen |= {word for word in fused if word in plain.text}
    assert seen == set(fused)  # groundgate's reading has every one of them


def test_options_are_named_and_checked() -> None:
    # The OCR that reads pages without text is part of every reading's reader, in name order.
    assert read_bytes(b"<r/>x", "a.html").reader == f"{READER_VERSION};ocr={OCR}"
    assert reader_id({"b": "2", "a": "1"}) == f"{READER_VERSION};a=1;b=2;ocr={OCR}"
    with pytest.raises(ValueError, match="xml_breaks is one of uslm-1, not 'uslm-2'"):
        read_bytes(uslm(""), "b.xml", xml_breaks="uslm-2")
    with pytest.raises(ValueError, match="no html reader option is called xml_breaks"):
        read_bytes(b"<p>x</p>", "a.html", xml_breaks="uslm-1")
    for name in ("xml_breaks", "max_pages"):  # the limits come from settings only
        with pytest.raises(ValueError, match=f"no pdf reader option is called {name}"):
            read_bytes(b"%PDF-1.7\n", "a.pdf", **{name: "1"})


def test_the_command_line_takes_options(tmp_path: Path) -> None:
    path = tmp_path / "bill.XML"
    path.write_bytes(uslm("<docTitle>An Act</docTitle><officialTitle>To amend</officialTitle>"))
    run = CliRunner().invoke
    assert run(main, ["read", str(path)]).stdout == "An ActTo amend"
    better = run(main, ["read", str(path), "--option", "xml_breaks=uslm-1"])
    assert better.exit_code == 0 and better.stdout == "An Act\nTo amend"
    wrong = run(main, ["read", str(path), "--option", "xml_breaks=2"])
    assert wrong.exit_code == 2 and "xml_breaks is one of uslm-1" in wrong.stderr
    assert run(main, ["read", str(path), "--option", "nonsense"]).exit_code == 2
