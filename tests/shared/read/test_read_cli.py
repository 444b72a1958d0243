"""`groundswell read` against `groundgate read` (0.11.0, in process): the same stdout bytes, the
same exit status and the same warnings, on the HTML and XML files of ../shared/raw and on the
edge cases; the deliberate differences exit 2 with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from groundswell.shared.cli import main
from tests.shared.cli.groundgate_oracle import groundgate_cli
from tests.shared.read.cases import DIFFERENT, SAME, write

RAW_MARKUP = ("html", "htm", "xhtml", "xml")


def groundswell(*args: str) -> Result:
    return CliRunner().invoke(main, ["read", *args], catch_exceptions=False)


def same_as_groundgate(args: list[str]) -> tuple[int, bytes, str]:
    """Run both; assert they agree; groundgate's exit status, stdout and stderr."""
    code, out, err = groundgate_cli(["read", *args])
    result = groundswell(*args)
    assert result.exit_code == code, (result.stderr, err)
    assert result.stdout_bytes == out
    if code == 0:  # the warnings, word for word but for the program's name
        assert result.stderr == err.replace("groundgate:", "groundswell:")
    return code, out, err


def raw_markup(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower().lstrip(".") in RAW_MARKUP)


@pytest.mark.corpus
def test_every_html_and_xml_file_of_shared_raw_reads_byte_for_byte(shared_raw: Path) -> None:
    files = raw_markup(shared_raw)
    assert len(files) == 7, files  # 3 inline-XBRL filings, 4 USLM files (one is .XML)
    for path in files:
        code, out, _ = same_as_groundgate([str(path)])
        assert code == 0 and len(out) > 10_000, path


@pytest.mark.parametrize("name", sorted(SAME))
def test_edge_cases_from_the_command_line(tmp_path: Path, name: str) -> None:
    same_as_groundgate([str(write(tmp_path, name, SAME[name]))])


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_refused_files_exit_2_with_the_reason(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name, DIFFERENT[name][0])
    result = groundswell(str(path))
    assert result.exit_code == 2 and result.stdout_bytes == b""
    assert result.stderr.startswith(f"groundswell: {path}: ")


def test_output_file_and_layout_of_a_non_pdf(tmp_path: Path) -> None:
    source = write(tmp_path, "doc.html", b"<p>caf\xc3\xa9</p><p>two</p>")
    out = tmp_path / "doc.txt"
    result = groundswell(str(source), "-o", str(out))
    assert result.exit_code == 0 and result.stdout_bytes == b""
    assert out.read_bytes() == "café\n\ntwo".encode()
    layout = tmp_path / "layout.json"
    code, _, err = same_as_groundgate([str(source), "--layout", str(layout)])
    assert code == 2 and err == "groundgate: --layout needs a PDF\n"
    assert groundswell(str(source), "--layout", str(layout)).stderr == (
        "groundswell: --layout needs a PDF\n"
    )
    assert not layout.exists()


def test_bad_arguments_exit_2_as_groundgate(tmp_path: Path) -> None:
    source = write(tmp_path, "doc.xml", b"<r>x</r>")
    for pages in ("0", "3-1", "a", "1-100001", "1,,2"):
        same_as_groundgate([str(source), "--pages", pages])
    same_as_groundgate([str(source), "--pages", "1-3,7"])  # read whole: not a PDF
    same_as_groundgate([str(tmp_path / "missing.html")])
    same_as_groundgate([str(write(tmp_path, "doc.rtf", b"{\\rtf1}"))])
    result = groundswell("-")
    assert result.exit_code == 2 and "its name's ending tells its format" in result.stderr
