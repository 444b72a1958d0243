"""gtrex's command lines work unchanged: `verify`, `explain` and `sensitivity` take gtrex 1.1.0's
arguments, policy flags and policy files, and give gtrex's verdicts, tiers and offsets.

The differential test runs gtrex's CLI (in process, a dev-only oracle) and ours with the same
flags on claims made from real corpus documents, and compares every certificate field both
tools write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import gtrex
import gtrex.cli
import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.verify import DEFAULT
from tests.shared.verify import oracle
from tests.shared.verify.families import ClaimFactory, with_entities

DOCS = ("fedreg-2018-09909", "uslm-s3874_is")
COMPARED = oracle.COMPARED + oracle.DETAIL
GTREX_FILE_POLICY = dataclasses.replace(
    gtrex.DEFAULT,
    accept_through="typography",
    ellipsis_policy="ignore",
    require_contiguous=False,
    min_fragment_tokens=4,
    repair_mode="annotate",
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, shared_corpus: Path) -> Path:
    """Two corpus documents, one with page markers and HTML entities written in, and claims
    of every family (verbatim, whitespace, typography, case, punctuation, ellipses, ...)."""
    root = tmp_path_factory.mktemp("gtrex-flags")
    records = []
    for n, doc in enumerate(DOCS):
        text = (shared_corpus / "documents" / f"{doc}.txt").read_bytes().decode("utf-8")
        (root / f"{doc}.txt").write_bytes(text.encode("utf-8"))
        for i, claim in enumerate(ClaimFactory(text, seed=n).claims(per_family=2)):
            records.append({"id": f"{doc}-{i}", "claim": claim.claim, "source_path": f"{doc}.txt"})
    # Markers between paragraphs, and entities: what --marker-pattern and typography are for.
    text = (shared_corpus / "documents" / f"{DOCS[0]}.txt").read_text(encoding="utf-8")[:6000]
    marked = with_entities(text, seed=3).replace("\n\n", "\n[p7]\n", 5).replace(". ", ". [p3] ", 9)
    (root / "marked.txt").write_text(marked, encoding="utf-8")
    for i, claim in enumerate(ClaimFactory(text, seed=9).claims(per_family=1)):
        records.append({"id": f"m-{i}", "claim": claim.claim, "source_path": "marked.txt", "k": i})
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    (root / "claims.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "gtrex-policy.json").write_text(GTREX_FILE_POLICY.to_json(), encoding="utf-8")
    return root


def _gtrex(work: Path, args: list[str], stdin: bytes | None = None) -> list[dict]:
    out = work / "theirs.jsonl"
    err = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(contextlib.chdir(work))
        if stdin is not None:
            fake = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
            stack.enter_context(_stdin(fake))
        code = gtrex.cli.main(["verify", *args, "-o", str(out)])
    assert code in (0, None), err.getvalue()
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@contextlib.contextmanager
def _stdin(stream):
    import sys

    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _ours(work: Path, args: list[str], stdin: bytes | None = None) -> list[dict]:
    out = work / "ours.jsonl"
    with contextlib.chdir(work):
        result = CliRunner().invoke(main, ["verify", *args, "-o", str(out)], input=stdin)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


FLAG_SETS = [
    ["--policy", "strict"],
    ["--accept-through", "whitespace", "--ellipsis", "reject"],
    ["--accept-through", "skeleton", "--allow-unsound"],
    ["--policy", "permissive", "--ellipsis", "fragments"],
    ["--marker-pattern", r"\[p\d+\]", "--accept-through", "typography"],
    ["--policy-file", "gtrex-policy.json"],
    ["--policy", "strict", "--policy-file", "gtrex-policy.json", "--ellipsis", "reject"],
]


@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f))
def test_gtrex_flags_give_gtrex_certificates(work: Path, flags: list[str]) -> None:
    theirs = _gtrex(work, ["claims.jsonl", *flags])
    ours = _ours(work, ["claims.jsonl", *flags])
    assert len(ours) == len(theirs) == 90
    moved = []
    for mine, gt in zip(ours, theirs, strict=True):
        assert {k: v for k, v in mine.items() if k != "groundswell"} == {
            k: v for k, v in gt.items() if k != "gtrex"
        }
        a = {k: mine["groundswell"][k] for k in COMPARED}
        b = {k: gt["gtrex"][k] for k in COMPARED}
        if a != b:
            moved.append((mine["id"], mine["claim"], a, b))
    assert moved == []
    assert len({c["groundswell"]["policy_fingerprint"] for c in ours}) == 1


def test_claims_from_stdin_as_gtrex(work: Path) -> None:
    data = (work / "claims.jsonl").read_bytes()
    flags = ["--accept-through", "whitespace"]
    theirs = _gtrex(work, ["-", *flags], stdin=data)
    ours = _ours(work, ["-", *flags], stdin=data)
    assert [c["groundswell"]["verdict"] for c in ours] == [c["gtrex"]["verdict"] for c in theirs]
    assert [c["groundswell"]["start"] for c in ours] == [c["gtrex"]["start"] for c in theirs]
    manifest = work / "m.json"
    with contextlib.chdir(work):
        result = CliRunner().invoke(
            main, ["verify", "-", "--manifest", str(manifest), "-o", "o.jsonl"], input=b"{nope\n"
        )
    assert result.exit_code == 1 and "-:1: invalid JSON" in result.output
    assert not manifest.exists()


def test_sensitivity_reads_stdin(work: Path) -> None:
    data = (work / "claims.jsonl").read_bytes()
    with contextlib.chdir(work):
        result = CliRunner().invoke(main, ["sensitivity", "-", "-o", "-"], input=data)
    assert result.exit_code == 0, result.output
    assert "percentage points" in result.stderr
    assert set(json.loads(result.stdout)["policies"]) == {"strict", "default", "permissive"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--accept-through", "nosuch"], "'nosuch' is not a tier of the default ladder"),
        (["--policy", "strict", "--accept-through", "case"], "not a tier of the strict ladder"),
        (["--accept-through", "skeleton"], "pass --allow-unsound"),
        (["--marker-pattern", "("], "invalid marker pattern"),
        (["--ellipsis", "sometimes"], "'sometimes' is not one of"),
    ],
)
def test_a_bad_flag_value_is_a_usage_error(work: Path, flags: list[str], message: str) -> None:
    with contextlib.chdir(work):
        result = CliRunner().invoke(main, ["verify", "claims.jsonl", *flags, "-o", "x.jsonl"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "--" + flags[-2].lstrip("-") in result.output  # the message names the flag
    assert not (work / "x.jsonl").exists()


def test_gtrex_policy_files_are_checked(tmp_path: Path) -> None:
    source = tmp_path / "c.jsonl"
    source.write_text('{"claim": "Revenue rose", "source": "Revenue rose 5%."}\n')
    data = json.loads(gtrex.DEFAULT.to_json())

    def run(doc: dict) -> object:
        path = tmp_path / "p.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        out = tmp_path / "o.jsonl"
        return CliRunner().invoke(
            main, ["verify", str(source), "--policy-file", str(path), "-o", str(out)]
        )

    result = run(data)
    assert result.exit_code == 0, result.output
    edited = dict(data, accept_through="whitespace")  # the stored fingerprint no longer holds
    result = run(edited)
    assert result.exit_code == 1 and "stored fingerprint e7f3cb264417247b" in result.output
    result = run(dict(data, bogus=1))
    assert result.exit_code == 1 and "unknown policy fields: bogus" in result.output
    result = run({"schema": "gtrex/policy/1"})
    assert result.exit_code == 1 and "pre-release" in result.output
    partial = {"schema": "gtrex/policy/2", "accept_through": "whitespace", "repair_mode": "off"}
    result = run(partial)
    assert result.exit_code == 0, result.output
    assert "under policy p@1" in result.output
    old = dict(data, verifier_revision=6)
    from groundswell.shared.repair.gtrex_policy import gtrex_fingerprint

    old["fingerprint"] = gtrex_fingerprint(old)  # gtrex 1.0.0's DEFAULT: 4729e40976339c97
    assert old["fingerprint"] == "4729e40976339c97"
    result = run(old)
    assert result.exit_code == 0 and "verifier revision 6" in result.output


def test_explain_takes_gtrex_policy_and_repair_flags(work: Path) -> None:
    def explain(*args: str) -> str:
        with contextlib.chdir(work):
            result = CliRunner().invoke(main, ["explain", *args])
        assert result.exit_code == 0, result.output
        return result.output

    plain = explain()
    assert DEFAULT.fingerprint in plain and "repair_mode          substitute" in plain
    text = explain("--accept-through", "whitespace", "--ellipsis", "reject", "--repair-mode",
                   "annotate", "--salvage", "longest_grounded")  # fmt: skip
    assert DEFAULT.fingerprint not in text
    assert "accept_through      whitespace" in text and "ellipsis_policy     reject" in text
    assert "repair_mode          annotate" in text
    assert "salvage_policy       longest_grounded" in text
    assert "default@1 with --accept-through whitespace --ellipsis reject" in text
    strict = explain("--policy", "strict")
    assert "repair_mode          off" in strict  # gtrex's STRICT only verifies
    from_file = explain("--policy-file", "gtrex-policy.json")
    assert "accept_through      typography" in from_file
    assert "repair_mode          annotate" in from_file
    as_json = json.loads(explain("--policy-file", "gtrex-policy.json", "--json"))
    assert (as_json["accept_through"], as_json["ellipsis_policy"]) == ("typography", "ignore")
    with contextlib.chdir(work):
        bad = CliRunner().invoke(main, ["explain", "--repair-mode", "rewrite"])
    assert bad.exit_code == 2
