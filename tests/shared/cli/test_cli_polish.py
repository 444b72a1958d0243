"""Issue 26's cosmetic findings in the CLI: each one as a new user saw it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.runs.plan import nothing_to_do
from tests.shared.cli.test_calibrate import rows
from tests.shared.cli.test_verify_cli import RECORDS, _write


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "120", **(env or {})})


@pytest.fixture()
def claims(tmp_path: Path) -> Path:
    (tmp_path / "f.txt").write_text("We depend on a limited number of suppliers.\n")
    return _write(tmp_path / "claims.jsonl", [r for r in RECORDS if r.get("source_path")])


def test_a_misspelled_policy_names_every_built_in_guarded_too(claims: Path) -> None:
    result = invoke("verify", str(claims), "--root", str(claims.parent), "--policy", "strcit")
    assert result.exit_code == 1  # verify's input errors exit 1, as gtrex's do
    assert result.stderr.count("\n") == 1 and "strcit" in result.stderr
    for name in ("strict", "default", "permissive", "guarded"):
        assert name in result.stderr, result.stderr


def test_sensitivity_json_prints_the_comparison_on_stdout(claims: Path) -> None:
    result = invoke("sensitivity", str(claims), "--root", str(claims.parent), "--json")
    assert result.exit_code == 0, result.output
    comparison = json.loads(result.stdout)
    assert set(comparison["policies"]) == {"strict", "default", "permissive"}
    assert "percentage points" in result.stderr  # the table still reads on stderr


def test_verify_json_prints_the_manifest_when_the_records_go_to_a_file(claims: Path) -> None:
    out = claims.parent / "out.jsonl"
    result = invoke("verify", str(claims), "--root", str(claims.parent), "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inputs"]["claims"] == len(out.read_text().splitlines())
    # without -o the certificates are the JSON on stdout, as without --json
    plain = invoke("verify", str(claims), "--root", str(claims.parent), "--json")
    assert plain.exit_code == 0
    assert [json.loads(line)["id"] for line in plain.stdout.splitlines()]


def test_calibrate_prints_counts_as_integers(tmp_path: Path) -> None:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(rows(1, 400))
    result = invoke("calibrate", str(labelled), "--compare", "0.8")
    assert result.exit_code == 0, result.output
    figures = {
        line.split()[0]: line.split()[1]
        for line in result.stdout.splitlines()
        if line[:4] == "    "
    } | {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[-8:] if line}
    assert figures["n"] == "400"
    assert figures["accepted"].isdigit() and figures["violations"].isdigit()
    assert figures["acceptance_rate"].startswith("0.")


def test_api_key_new_env_appends_to_the_keys_already_exported() -> None:
    printed = invoke(
        "api-key",
        "new",
        "--env",
        "--name",
        "ana",
        "--corpora",
        "/a",
        "--corpora",
        "/b",
        env={"GROUNDSWELL_ALLOWED_CORPORA": "/"},
    )
    assert printed.exit_code == 0, printed.output
    script = (
        "export GROUNDSWELL_API_KEY_HASHES=old-entry\n"
        + printed.stdout
        + 'printf %s "$GROUNDSWELL_API_KEY_HASHES"'
    )
    shell = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0, shell.stderr
    old, new = shell.stdout.split(",")
    assert old == "old-entry" and new.startswith("ana:") and new.endswith(":/a|/b")
    # and alone in a fresh shell: no leading comma
    alone = subprocess.run(
        ["bash", "-c", printed.stdout + 'printf %s "$GROUNDSWELL_API_KEY_HASHES"'],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert alone.stdout.startswith("ana:")


def test_counts_of_one_are_singular(tmp_path) -> None:
    message, _ = nothing_to_do(
        SimpleNamespace(corpus=str(tmp_path)),  # a folder that exists
        {"ignored.documents_without_units": 1, "ignored.files": 1},
    )
    assert "found 1 document without" in message and "1 file outside" in message
    message, _ = nothing_to_do(
        SimpleNamespace(corpus=str(tmp_path)),
        {"ignored.documents_without_units": 2, "ignored.files": 3},
    )
    assert "2 documents without" in message and "3 files outside" in message


def test_help_groups_the_commands_with_their_whole_first_sentence() -> None:
    from groundswell.shared.cli.app import COMMAND_MODULES

    text = invoke("--help").stdout
    assert "…" not in text
    sections = ["Pipeline:", "Services:", "gtrex tools:", "groundgate tools:", "Ledger:", "Review:"]
    at = [text.index(s) for s in sections]
    assert at == sorted(at)
    commands = text.split("Pipeline:")[1].splitlines()
    listed = [line.split()[0] for line in commands if re.match(r"  [a-z]", line)]
    assert sorted(listed) == sorted(COMMAND_MODULES)  # each command once
    assert text.index("  run ") < text.index("  verify ") < text.index("  admit ")


def test_no_rst_markup_in_any_help() -> None:
    import click

    from groundswell.shared.cli import load_all

    load_all()

    def walk(group: click.Group, path: tuple[str, ...] = ()):
        for name, command in group.commands.items():
            yield (*path, name)
            if isinstance(command, click.Group):
                yield from walk(command, (*path, name))

    for path in walk(main):
        text = invoke(*path, "--help").stdout
        assert "``" not in text and ":class:" not in text, path


def test_submit_help_documents_the_policy_and_the_api_settings() -> None:
    text = invoke("submit", "--help").stdout
    policy = text.split("--policy", 1)[1].split("--idempotency-key")[0]
    assert "NAME@N" in policy
    assert "GROUNDSWELL_API_URL" in text and "GROUNDSWELL_API_KEY" in text


def _on_a_terminal(*args: str) -> str:
    """What ``groundswell ARGS`` prints with stdout on a pseudo-terminal."""
    import os
    import pty
    import sys

    command = [str(Path(sys.executable).with_name("groundswell")), *args]
    main_fd, child_fd = pty.openpty()
    child = subprocess.Popen(command, stdout=child_fd, stderr=subprocess.PIPE, env=os.environ)
    os.close(child_fd)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    assert child.wait(timeout=120) == 0, child.stderr.read()
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_admit_on_a_terminal_prints_a_table_and_the_readme_says_it_differs() -> None:
    from groundswell.shared.cli.runs import SAMPLE_CORPUS

    doc = "velmora-label"
    inputs = [
        str(SAMPLE_CORPUS / "documents" / f"{doc}.txt"),
        str(SAMPLE_CORPUS / "schema.json"),
        str(SAMPLE_CORPUS / "candidates" / f"{doc}.json"),
    ]
    piped = invoke("admit", *inputs).stdout
    receipt = json.loads(piped)  # not a terminal: the receipt, as groundgate prints it
    table = _on_a_terminal("admit", *inputs)
    assert not table.lstrip().startswith("{") and receipt["decisions"]
    assert json.loads(_on_a_terminal("admit", *inputs, "--json")) == receipt
    readme = " ".join((Path(__file__).parents[3] / "README.md").read_text().split())
    assert "Unlike groundgate, which prints the receipt's JSON on a terminal too" in readme


@pytest.mark.parametrize(
    ("args", "pointer"),
    [
        (["verify", "r.json", "d.txt", "s.json", "c.json"], "groundswell check-receipt RECEIPT"),
        (["verify", "--root", "x", "r.json", "d.txt", "s.json", "c.json"], "check-receipt"),
        (["review", "serve", "--store", "x", "--reviewer", "ana"], "the API's /review"),
        (["store", "check", "--store", "x"], "groundswell check-receipt"),
        (["admit", "--store", "x", "d.txt", "s.json", "c.json"], "GROUNDSWELL_STORAGE_URL"),
        (["check-receipt", "--store", "x", "PACKET"], "GROUNDSWELL_STORAGE_URL"),
    ],
)
def test_groundgate_command_lines_get_one_line_naming_the_equivalent(args, pointer) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and pointer in result.stderr, result.stderr
    assert result.stderr.startswith("groundswell: ")


def test_other_usage_errors_are_click_s_own() -> None:
    result = invoke("verify", "a.jsonl", "b.jsonl")
    assert result.exit_code == 2 and "unexpected extra argument" in result.stderr
    assert "Usage:" in invoke("sivew").stderr


@pytest.mark.parametrize(
    "page",
    [
        b"<!-- saved from url=(0042)https://example.org/ -->" + b" " * 2000 + b"<html><body>x",
        b"<head><title>Sign in</title></head><body>Please sign in</body>",
        b'<?xml version="1.0"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml">',
        b"<div class='error'>Not found</div>",
    ],
)
def test_read_calls_a_web_page_named_pdf_html(tmp_path: Path, page: bytes) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(page)
    result = invoke("read", str(fake))
    assert result.exit_code != 0
    assert result.stderr.rstrip().endswith("it looks like HTML"), result.stderr


def test_read_still_calls_xml_xml(tmp_path: Path) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b'<?xml version="1.0"?>\n<filing><item>Revenue</item></filing>')
    assert invoke("read", str(fake)).stderr.rstrip().endswith("it looks like XML")
