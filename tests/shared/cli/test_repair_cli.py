"""`groundswell repair` against `gtrex repair` (gtrex 1.1.0 in process, a dev-only oracle).

The same arguments on near-miss claims made from real corpus documents (and gtrex's own
``rep-*`` edge cases) give the same records: the stored ``claim``, action, stage, accepted,
grounded, changed, threshold and its source, the certificates' verdicts, tiers and offsets,
the alignment's scores and span, the salvage. Then what is ours to get right the same way:
threshold precedence and its provenance in the manifest, calibrations bound to the policy,
and the error contract (file:line, exit 1 for input, 2 for arguments).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

import gtrex
import gtrex.cli
import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.settings import get_settings
from tests.shared.verify.families import ClaimFactory

DOCS = ("fedreg-2018-09909", "sec-aapl-10k-2024-11-01")
# The reference sits beside the shared corpus (GROUNDSWELL_SHARED_CORPUS), wherever the clone is.
CASES = get_settings().shared_corpus.parent / "reference" / "gtrex" / "cases.jsonl"
CERT = ("verdict", "tier", "tier_sound", "grounded", "start", "end", "span_text", "contiguous")
FLAG_SETS = (
    [],
    ["--repair-mode", "annotate"],
    ["--repair-mode", "off"],
    ["--salvage", "longest_grounded"],
    ["--salvage", "longest_grounded", "--repair-mode", "annotate"],
    ["--threshold", "0.9"],
    ["--threshold", "0.3", "--drop-rejected"],
    ["--policy", "strict"],
    ["--policy", "permissive", "--repair-mode", "substitute"],
    ["--ellipsis", "reject", "--threshold", "0.5"],
)


def near_misses(text: str, seed: int, n: int) -> list[str]:
    """Claims a model gets nearly right: a word dropped, swapped or added, punctuation
    stripped, a figure changed, a negation dropped or added, two spans stitched."""
    rng = random.Random(seed)
    spans = [c.claim for c in ClaimFactory(text, seed=seed).claims(per_family=1)]
    words = text.split()
    out = []
    for _ in range(n):
        i = rng.randrange(max(1, len(words) - 30))
        span = words[i : i + rng.randint(8, 24)]
        kind = rng.randrange(7)
        if kind == 0 and len(span) > 3:
            del span[rng.randrange(1, len(span) - 1)]
        elif kind == 1:
            span[rng.randrange(len(span))] = rng.choice(words)
        elif kind == 2:
            span.insert(rng.randrange(len(span)), rng.choice(("not", "may", "also", "higher")))
        elif kind == 3:
            span = [w.strip(".,;:()") for w in span]
        elif kind == 4:
            span = [str(int(w) + 1) if w.isdigit() else w for w in span]
        elif kind == 5:
            span = [w for w in span if w.lower() not in ("not", "no", "never")]
        else:
            j = rng.randrange(max(1, len(words) - 15))
            span = [*span[:10], "...", *words[j : j + 10]]
        out.append(" ".join(span))
    return out + spans


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, shared_corpus: Path) -> Path:
    root = tmp_path_factory.mktemp("repair-cli")
    records: list[dict[str, Any]] = []
    for n, doc in enumerate(DOCS):
        text = (shared_corpus / "documents" / f"{doc}.txt").read_bytes().decode("utf-8")
        (root / f"{doc}.txt").write_bytes(text.encode("utf-8"))
        for i, claim in enumerate(near_misses(text, n, 40)):
            records.append({"id": f"{doc}-{i}", "claim": claim, "source_path": f"{doc}.txt"})
    for line in CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"].startswith("rep-") and "source" in case:
            records.append({"id": case["id"], "claim": case["claim"], "source": case["source"]})
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    (root / "claims.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def run_ours(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_gtrex(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = gtrex.cli.main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def comparable(record: dict[str, Any], key: str) -> dict[str, Any]:
    """What both tools must agree on (fingerprints and prose notes are each tool's own)."""
    result = record[key]
    out = {k: v for k, v in record.items() if k != key}
    for name in ("action", "stage", "accepted", "grounded", "changed", "claim_original"):
        out[name] = result[name]
    out["threshold"] = (result.get("threshold"), result.get("threshold_source"))
    for part in ("before", "after"):
        cert = result[part]
        out[part] = None if cert is None else {k: cert[k] for k in CERT}
    out["alignment"] = result.get("alignment")
    salvage = result.get("salvage")
    if salvage is not None:
        cert = salvage["certificate"]
        out["salvage"] = (salvage["kept"], salvage["discarded"], cert["start"], cert["end"])
    return out


@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "defaults")
def test_records_equal_gtrex_repair(work: Path, flags: list[str]) -> None:
    ours, theirs = work / f"ours{len(flags)}.jsonl", work / f"theirs{len(flags)}.jsonl"
    common = [str(work / "claims.jsonl"), "--root", str(work), *flags]
    code, _, err = run_ours(["repair", *common, "-o", str(ours)])
    assert code == 0, err
    assert run_gtrex(["repair", *common, "-o", str(theirs)])[0] == 0
    a, b = read(ours), read(theirs)
    assert len(a) == len(b)
    assert [list(r) for r in a] == [[k if k != "gtrex" else "groundswell" for k in r] for r in b]
    differing = [
        (x["id"], y["id"])
        for x, y in zip(a, b, strict=True)
        if comparable(x, "groundswell") != comparable(y, "gtrex")
    ]
    assert not differing, differing[:5]
    if flags == []:
        stages = {r["groundswell"]["stage"] for r in a}
        assert {"verify", "alignment", "numeric_guard", "polarity_guard"} <= stages
        assert "note: no threshold given" in err


def manifest_of(work: Path, args: list[str], name: str) -> dict[str, Any]:
    path = work / f"{name}.json"
    code, _, err = run_ours(
        ["repair", str(work / "claims.jsonl"), "--root", str(work), "-o", str(work / "x.jsonl"),
         "--manifest", str(path), *args]
    )  # fmt: skip
    assert code == 0, err
    return json.loads(path.read_text(encoding="utf-8"))


def test_threshold_precedence_and_its_source(work: Path) -> None:
    policy = gtrex.DEFAULT.with_threshold(0.8)
    (work / "policy.json").write_text(policy.to_json(), encoding="utf-8")
    seen = {
        "default": manifest_of(work, [], "m-default"),
        "flag": manifest_of(work, ["--threshold", "0.75"], "m-flag"),
        "policy": manifest_of(work, ["--policy-file", str(work / "policy.json")], "m-policy"),
        "flag over policy": manifest_of(
            work, ["--policy-file", str(work / "policy.json"), "--threshold", "0.7"], "m-both"
        ),
        "off": manifest_of(work, ["--repair-mode", "off"], "m-off"),
    }
    got = {k: (m["inputs"]["repair_threshold"], m["inputs"]["repair_threshold_source"])
           for k, m in seen.items()}  # fmt: skip
    assert got == {
        "default": (0.65, "default"),
        "flag": (0.75, "threshold_flag"),
        "policy": (0.8, "policy"),
        "flag over policy": (0.7, "threshold_flag"),
        "off": (None, None),
    }
    repairs = seen["default"]["repairs"]
    assert (
        repairs["total"] == sum(repairs["by_action"].values()) == sum(repairs["by_stage"].values())
    )
    assert (
        seen["default"]["policy_identities"]["fingerprint"]
        != seen["flag"]["policy_identities"]["fingerprint"]
    )
    # The threshold is not part of what a calibration binds to.
    assert (
        seen["default"]["policy_identities"]["pre_threshold_fingerprint"]
        == seen["flag"]["policy_identities"]["pre_threshold_fingerprint"]
    )


def labelled(work: Path, n: int = 120) -> Path:
    rng = random.Random(5)
    rows = []
    for i in range(n):
        faithful = rng.random() < 0.85
        score = min(1.0, max(0.0, rng.gauss(0.9 if faithful else 0.55, 0.07)))
        rows.append(json.dumps({"score": score, "faithful": faithful, "group": f"doc{i}"}))
    path = work / "labelled.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_calibration_sets_the_threshold_and_is_bound_to_the_policy(work: Path) -> None:
    data = labelled(work)
    report = work / "calibration.json"
    code, _, err = run_ours(["calibrate", str(data), "-o", str(report), "--alpha", "0.1"])
    assert code == 0, err
    threshold = json.loads(report.read_text(encoding="utf-8"))["risk"]["threshold"]
    m = manifest_of(work, ["--calibration", str(report)], "m-cal")
    assert m["inputs"]["repair_threshold"] == threshold
    assert m["inputs"]["repair_threshold_source"] == "calibration"
    assert m["calibration"]["threshold"] == threshold
    records = read(work / "x.jsonl")
    assert {r["groundswell"]["threshold"] for r in records} == {threshold}

    # Made for another pre-threshold configuration (salvage on): refused, naming the file.
    other = work / "calibration-salvage.json"
    code, _, err = run_ours(
        ["calibrate", str(data), "-o", str(other), "--salvage", "longest_grounded"]
    )
    assert code == 0, err
    code, _, err = run_ours(["repair", str(work / "claims.jsonl"), "--root", str(work),
                             "--calibration", str(other)])  # fmt: skip
    assert code == 1
    assert str(other) in err and "pre-threshold" in err

    # gtrex's own calibration is bound to gtrex's scorer, not ours: refused.
    theirs = work / "gtrex-calibration.json"
    assert run_gtrex(["calibrate", str(data), "-o", str(theirs), "--alpha", "0.1"])[0] == 0
    code, _, err = run_ours(["repair", str(work / "claims.jsonl"), "--root", str(work),
                             "--calibration", str(theirs)])  # fmt: skip
    assert code == 1 and str(theirs) in err

    # A coverage calibration bounds recall, not false acceptance.
    coverage = work / "coverage.json"
    run_ours(["calibrate", str(data), "-o", str(coverage), "--method", "coverage"])
    code, _, err = run_ours(["repair", str(work / "claims.jsonl"), "--root", str(work),
                             "--calibration", str(coverage)])  # fmt: skip
    assert code == 1 and "risk" in err


def test_errors_name_the_file_and_line(work: Path, tmp_path: Path) -> None:
    claims = str(work / "claims.jsonl")
    code, _, err = run_ours(["repair", claims, "--threshold", "0.5", "--calibration", claims])
    assert code == 1 and "not both" in err
    assert run_ours(["repair", claims, "--threshold", "1.5"])[0] == 2
    assert run_gtrex(["repair", claims, "--threshold", "1.5"])[0] == 2

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"claim": "a", "source": "a b"}\n{"claim": \n', encoding="utf-8")
    code, out, err = run_ours(["repair", str(bad)])
    assert code == 1 and f"{bad}:2:" in err and out == ""
    assert run_gtrex(["repair", str(bad)])[0] == 1

    done = tmp_path / "done.jsonl"
    done.write_text('{"claim": "a b", "source": "a b c", "groundswell": {}}\n', encoding="utf-8")
    code, _, err = run_ours(["repair", str(done)])
    assert code == 1 and f"{done}:1:" in err and "--replace-existing" in err
    code, out, _ = run_ours(["repair", str(done), "--replace-existing"])
    assert code == 0 and json.loads(out)["groundswell"]["action"] == "accepted"


def test_drop_rejected_keeps_only_retained_records(work: Path) -> None:
    code, out, _ = run_ours(
        ["repair", str(work / "claims.jsonl"), "--root", str(work), "--drop-rejected"]
    )
    assert code == 0
    kept = [json.loads(line) for line in out.splitlines()]
    assert kept and all(r["groundswell"]["accepted"] for r in kept)
    code, out, _ = run_ours(["repair", str(work / "claims.jsonl"), "--root", str(work)])
    assert len(out.splitlines()) > len(kept)
