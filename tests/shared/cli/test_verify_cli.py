"""`groundswell verify / explain / sensitivity`: the JSON Lines contract, errors, and gtrex parity."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.verify import DEFAULT, STRICT

FILING = (
    "Operating loss was ($10.0 million) for the year ended December 31, 2023.\n"
    "We depend on a limited number of suppliers for key components, and the loss of any of\n"
    "these suppliers could materially and adversely affect our results of operations.\n"
    "Our \u201cAdvanced Materials\u201d segment \u2014 acquired in 2021 \u2014 generated "
    "revenue of &#36;88.5 million.\n"
)
RECORDS = [
    {"id": "q1", "claim": "We depend on a limited number of suppliers", "source_path": "f.txt"},
    {"id": "q2", "claim": "operating loss was ($10.0 million)", "source_path": "f.txt", "m": 1},
    {"id": "q3", "claim": "Operating loss was $100 million", "source_path": "f.txt"},
    {
        "id": "q4",
        "claim": "We depend on a limited number of suppliers for key components ... "
        "could materially and adversely affect our results of operations",
        "source_path": "f.txt",
    },
    {"id": "q5", "claim": 'Our "Advanced Materials" segment - acquired in 2021', "source": FILING},
    {"id": "q6", "claim": "The Company plans to open twelve new centres", "source_path": "f.txt"},
    {"id": "q7", "claim": "...", "source_path": "f.txt"},
]


def _write(path: Path, records: list[dict] | list[str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "f.txt").write_bytes(FILING.encode("utf-8"))
    _write(tmp_path / "claims.jsonl", RECORDS)
    return tmp_path


def run(work: Path, *args: str):
    runner = CliRunner()
    return runner.invoke(main, list(args), catch_exceptions=False, env={"COLUMNS": "120"})


def test_verify_writes_certificates_and_passes_fields_through(work: Path) -> None:
    out = work / "out.jsonl"
    manifest = work / "manifest.json"
    result = run(
        work,
        "verify",
        str(work / "claims.jsonl"),
        "--root",
        str(work),
        "-o",
        str(out),
        "--manifest",
        str(manifest),
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in RECORDS]
    assert list(rows[1]) == ["id", "claim", "source_path", "m", "groundswell"]
    assert "source" not in rows[4]  # the inline source is not repeated
    verdicts = [(r["groundswell"]["verdict"], r["groundswell"]["tier"]) for r in rows]
    assert verdicts == [
        ("grounded", "exact"),
        ("grounded", "case"),
        ("grounded_loose", "skeleton"),
        ("stitched", None),
        ("grounded", "typography"),
        ("unlocated", None),
        ("degenerate", None),
    ]
    cert = rows[0]["groundswell"]
    assert FILING[cert["start"] : cert["end"]] == cert["span_text"]
    assert cert["policy_fingerprint"] == DEFAULT.fingerprint

    data = json.loads(manifest.read_text(encoding="utf-8"))
    assert data["policy_fingerprint"] == DEFAULT.fingerprint
    assert data["tool"]["unicode_version"]
    assert data["tool"]["engine_revision"] >= 1
    assert data["inputs"] == {
        "input": str(work / "claims.jsonl"),
        "documents": 2,
        "documents_sha256": [hashlib.sha256(FILING.encode()).hexdigest()],
        "claims": 7,
        "at_offsets": False,
    }
    assert data["profile"]["by_tier"]["exact"] == 1
    assert data["profile"]["stitched"] == 1
    assert data["rates"]["policy_accepted_rate"] == pytest.approx(3 / 7)


def test_verify_to_stdout_and_summary_on_stderr(work: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "groundswell", "verify", "claims.jsonl", "--policy", "strict"],
        cwd=work,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert len(rows) == 7
    assert {r["groundswell"]["policy_fingerprint"] for r in rows} == {STRICT.fingerprint}
    assert b"grounded under policy strict@1" in result.stderr


def test_verify_at_offsets(work: Path) -> None:
    start = FILING.index("We depend")
    records = [
        {"claim": "We depend on a limited number", "source_path": "f.txt", "start": start,
         "end": start + 29},
        {"claim": "We depend on a limited number", "source_path": "f.txt", "start": start + 1,
         "end": start + 29},
    ]  # fmt: skip
    _write(work / "at.jsonl", records)
    out = work / "at-out.jsonl"
    result = run(work, "verify", str(work / "at.jsonl"), "--root", str(work), "--at-offsets",
                 "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    right, wrong = (json.loads(x)["groundswell"] for x in out.read_text().splitlines())
    assert (right["verdict"], right["scope"], right["requested_span"]) == (
        "grounded",
        "span",
        [start, start + 29],
    )
    assert (wrong["verdict"], wrong["found_elsewhere"]) == ("unlocated", True)


def test_at_offsets_checks_records_with_offsets_there_and_the_others_document_wide(
    work: Path,
) -> None:
    start = FILING.index("We depend")
    records = [
        {"claim": "We depend on a limited number", "source_path": "f.txt", "start": start + 1,
         "end": start + 29},
        {"claim": "We depend on a limited number", "source_path": "f.txt"},
        {"claim": "Operating loss was", "source_path": "f.txt", "start": None, "end": None},
    ]  # fmt: skip
    _write(work / "mixed.jsonl", records)
    out, manifest = work / "mixed-out.jsonl", work / "mixed-manifest.json"
    result = run(work, "verify", str(work / "mixed.jsonl"), "--root", str(work), "--at-offsets",
                 "-o", str(out), "--manifest", str(manifest))  # fmt: skip
    assert result.exit_code == 0, result.output
    certs = [json.loads(x)["groundswell"] for x in out.read_text().splitlines()]
    assert [(c["scope"], c["verdict"]) for c in certs] == [
        ("span", "unlocated"),
        ("document", "grounded"),
        ("document", "grounded"),
    ]
    assert "1 checked at their offsets, 2 without offsets verified document-wide" in (result.stderr)
    assert json.loads(manifest.read_text())["inputs"]["checked"] == {"span": 1, "document": 2}


@pytest.mark.parametrize(
    ("lines", "extra", "message"),
    [
        (['{"claim": "x", "source": "x"}', "{nope"], (), "claims.jsonl:2: invalid JSON"),
        (['{"claim": 3, "source": "x"}'], (), "claims.jsonl:1: 'claim' must be a string"),
        (['{"source": "x"}'], (), "claims.jsonl:1: 'claim' must be a string"),
        (['{"claim": "x"}'], (), "claims.jsonl:1: record has neither"),
        (['{"claim": "x", "source": "x", "source_path": "f.txt"}'], (), "has both"),
        (['{"claim": "x", "source_path": "missing.txt"}'], (), "claims.jsonl:1: source_path"),
        (['{"claim": "x", "source_path": "bad.txt"}'], (), "not valid UTF-8"),
        (['{"claim": "x", "source": "x", "groundswell": {}}'], (), "--replace-existing"),
        (['{"claim": "x", "source": "xyz", "start": 1}'], ("--at-offsets",), "both or neither"),
        (['{"claim": "x", "source": "xyz", "start": "0", "end": 1}'], ("--at-offsets",), "integer"),
        (['{"claim": "x", "source": "xyz", "start": 2, "end": 9}'], ("--at-offsets",), "span"),
        (['{"claim": "\\ud800", "source": "x"}'], (), "claims.jsonl:1: contains an unpaired"),
        (['{"claim": "x", "source": "x"}'], ("--policy", "nosuch"), "invalid policy"),
        (['["a list"]'], (), "claims.jsonl:1: a record is a JSON object"),
    ],
)
def test_invalid_input_exits_1_with_file_and_line(
    work: Path, lines: list[str], extra: tuple[str, ...], message: str
) -> None:
    (work / "bad.txt").write_bytes(b"\xff\xfe broken")
    _write(work / "claims.jsonl", lines)
    out = work / "never.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "groundswell", "verify", "claims.jsonl", "-o", str(out), *extra],
        cwd=work,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1
    assert message in result.stderr.decode("utf-8")
    assert "Traceback" not in result.stderr.decode("utf-8")
    assert not out.exists()  # all or nothing


def test_replace_existing_overwrites_the_result(work: Path) -> None:
    _write(work / "c.jsonl", [{"claim": "Operating loss", "source": FILING, "groundswell": 1}])
    out = work / "o.jsonl"
    result = run(work, "verify", str(work / "c.jsonl"), "--replace-existing", "-o", str(out))
    assert result.exit_code == 0
    assert json.loads(out.read_text())["groundswell"]["verdict"] == "grounded"


def test_policy_file_and_explain(work: Path) -> None:
    policy = DEFAULT.with_changes(name="mine", ellipsis_policy="reject")
    path = work / "policy.json"
    path.write_text(json.dumps(policy.as_dict()), encoding="utf-8")
    result = run(work, "explain", "--policy", str(path))
    assert result.exit_code == 0
    assert policy.fingerprint in result.output
    assert "ellipsis_policy     reject" in result.output
    assert "UNSOUND" in result.output and "unicode" in result.output
    as_json = run(work, "explain", "--policy", "permissive", "--json")
    assert json.loads(as_json.output)["accept_through"] == "skeleton"
    out = work / "o.jsonl"
    result = run(work, "verify", str(work / "claims.jsonl"), "--root", str(work), "--policy",
                 str(path), "-o", str(out))  # fmt: skip
    assert result.exit_code == 0
    q4 = json.loads(out.read_text().splitlines()[3])["groundswell"]
    assert (q4["verdict"], q4["policy_fingerprint"]) == ("unlocated", policy.fingerprint)


def test_guarded_verifies_as_default(work: Path) -> None:
    """guarded (a built-in beyond gtrex's three) has default's verification part."""
    found = {}
    for policy in ("default", "guarded", "guarded@1"):
        out = work / f"{policy}.jsonl"
        result = run(work, "verify", str(work / "claims.jsonl"), "--root", str(work),
                     "--policy", policy, "-o", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        found[policy] = [
            (c["verdict"], c.get("tier"), c["policy_fingerprint"])
            for c in (json.loads(line)["groundswell"] for line in out.read_text().splitlines())
        ]
    assert found["guarded"] == found["default"] == found["guarded@1"]
    assert [v for v, _, _ in found["guarded"]].count("grounded") == 3
    missing = run(work, "verify", str(work / "claims.jsonl"), "--policy", "guarded@2")
    assert missing.exit_code == 1 and "policy guarded has no version 2" in missing.output


def test_sensitivity_reports_the_spread(work: Path) -> None:
    out = work / "sens.json"
    result = run(work, "sensitivity", str(work / "claims.jsonl"), "--root", str(work),
                 "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "percentage points" in result.output
    data = json.loads(out.read_text())
    rates = {name: row["grounded_rate"] for name, row in data["policies"].items()}
    assert rates == {"strict": 1 / 7, "default": 3 / 7, "permissive": 4 / 7}
    assert data["spread_points"] == pytest.approx(100 * 3 / 7)


@pytest.mark.parametrize("policy", ["strict", "default", "permissive"])
def test_same_certificates_as_the_gtrex_cli(work: Path, policy: str) -> None:
    gtrex = str(Path(sys.executable).parent / "gtrex")
    ours, theirs = work / "ours.jsonl", work / "theirs.jsonl"
    args = ["claims.jsonl", "--policy", policy]
    subprocess.run([gtrex, "verify", *args, "-o", str(theirs)], cwd=work, check=True,
                   capture_output=True)  # fmt: skip
    result = run(work, "verify", str(work / "claims.jsonl"), "--root", str(work), "--policy",
                 policy, "-o", str(ours))  # fmt: skip
    assert result.exit_code == 0
    for a, b in zip(ours.read_text().splitlines(), theirs.read_text().splitlines(), strict=True):
        mine, gt = json.loads(a), json.loads(b)
        assert {k: v for k, v in mine.items() if k != "groundswell"} == {
            k: v for k, v in gt.items() if k != "gtrex"
        }
        keep = ("verdict", "tier", "start", "end", "grounded", "span_text", "fragment_statuses")
        assert {k: mine["groundswell"][k] for k in keep} == {k: gt["gtrex"][k] for k in keep}


# What `verify` never loads: admission, the services (Celery, its broker, Redis, the API), S3,
# the ledger's database layer; nor, for a built-in policy on a local store, pydantic and the
# settings class, or the registry and storage stack unless the store publishes something under
# the name; nor the repair cascade or its aligner; nor difflib, which click loads to suggest
# close matches when it tries a short option such as -o as a long one (app.Command).
NEVER = ("groundswell.shared.admit", "groundswell.api", "groundswell.workers", "celery",
         "kombu", "redis", "fastapi", "uvicorn", "boto3", "botocore", "httpx", "sqlalchemy",
         "psycopg", "limits", "pydantic", "groundswell.shared.settings",
         "groundswell.shared.repair.engine", "groundswell.shared.repair.align",
         "difflib")  # fmt: skip
UNPUBLISHED = ("groundswell.shared.policies", "groundswell.shared.storage")


def verify_modules(tmp_path, store) -> list[str]:
    (tmp_path / "doc.txt").write_text("Net sales rose 5%.\n")
    (tmp_path / "claims.jsonl").write_text(
        # grounded at the case tier: the Unicode tables are needed (and their cache's folder)
        json.dumps({"id": "a", "claim": "net sales rose 5%", "source_path": "doc.txt"}) + "\n"
    )
    code = (
        "import sys\n"
        "from groundswell.shared.cli import main\n"
        "main(['verify', 'claims.jsonl', '-o', 'out.jsonl'], standalone_mode=False)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(store)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"verdict": "grounded"' in (tmp_path / "out.jsonl").read_text()
    return done.stdout.strip().splitlines()[-1].split()


def test_verify_loads_neither_admission_nor_celery_nor_the_api_nor_settings(tmp_path):
    loaded = verify_modules(tmp_path, tmp_path / "store")
    assert [m for m in loaded if m.startswith(NEVER + UNPUBLISHED)] == []
    if sys.platform == "linux" and os.path.isabs(os.environ.get("HOME", "")):
        assert "platformdirs" not in loaded  # the per-user folders are found without it


def test_verify_reads_a_local_registry_without_settings_or_s3(tmp_path):
    from groundswell.shared.policies import PolicyRegistry
    from groundswell.shared.storage import open_store

    PolicyRegistry(open_store(str(tmp_path / "store"))).ensure_builtins()
    loaded = verify_modules(tmp_path, tmp_path / "store")
    assert "groundswell.shared.policies" in loaded  # default@1 is read from the registry
    assert [m for m in loaded if m.startswith(NEVER)] == []


def test_an_unpaired_surrogate_is_refused_and_a_pair_is_text(tmp_path: Path) -> None:
    lone = '{"claim": "a \\ud800 b", "source": "a b", "meta": {"k": ["\\udfff"]}}'
    pair = '{"claim": "smile \\ud83d\\ude00", "source": "we smile \\ud83d\\ude00 here"}'
    _write(tmp_path / "lone.jsonl", [lone])
    _write(tmp_path / "nested.jsonl", ['{"claim": "x", "source": "x", "m": {"\\udc00": 1}}'])
    _write(tmp_path / "upper.jsonl", ['{"claim": "x", "source": "x", "m": ["\\uDBFF"]}'])
    _write(tmp_path / "pair.jsonl", [pair])
    for name in ("lone", "nested", "upper"):
        result = run(tmp_path, "verify", str(tmp_path / f"{name}.jsonl"))
        assert result.exit_code == 1
        assert f"{name}.jsonl:1: contains an unpaired surrogate" in result.output
    result = run(tmp_path, "verify", str(tmp_path / "pair.jsonl"))
    assert result.exit_code == 0, result.output
    assert '"verdict": "grounded"' in result.output


def test_a_short_option_is_read_as_its_long_spelling_and_nothing_else():
    """`-o` reaches click as `--output` (so click builds no close-match error for it); values,
    anything after `--` or an unknown spelling, and an option missing its value stay as typed."""
    import click

    from groundswell.shared.cli.app import main as group

    command = group.get_command(click.Context(group), "verify")
    ctx = click.Context(command)

    def spelled(*args: str) -> list[str]:
        return command._long_spelling(ctx, list(args))

    assert spelled("c.jsonl", "-o", "out", "-h") == ["c.jsonl", "--output", "out", "--help"]
    assert spelled("--marker-pattern", "-o", "-o", "x") == [
        "--marker-pattern",
        "-o",
        "--output",
        "x",
    ]
    assert spelled("-", "-o", "x") == ["-", "--output", "x"]  # stdin, then the option
    assert spelled("--root=-o", "-o", "x") == ["--root=-o", "--output", "x"]
    assert spelled("c", "--", "-o", "x") == ["c", "--", "-o", "x"]
    assert spelled("-xo", "-o", "x") == ["-xo", "-o", "x"]
    assert spelled("c", "-o") == ["c", "-o"]


def test_a_short_option_without_its_value_is_named_as_typed(work: Path) -> None:
    result = CliRunner().invoke(main, ["verify", str(work / "claims.jsonl"), "-o"])
    assert result.exit_code == 2
    assert "Option '-o' requires an argument" in result.output


def test_verify_with_short_options_writes_where_they_say(work: Path) -> None:
    out = work / "short.jsonl"
    result = run(work, "verify", str(work / "claims.jsonl"), "--root", str(work), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n") == len(RECORDS)
