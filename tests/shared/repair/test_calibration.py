"""Calibration at gtrex 1.1.0 parity.

Differential: gtrex's ``conformal`` module (a dev-only oracle) and ours on the same generated
score sets give the same thresholds at full precision, the same p-values, rates, statuses,
assumptions and data digests, and refuse the same inputs with the same kind of error. What is
not compared is prose (guarantee texts, notes, error messages: ours are in our own words),
the schema names and the binding (our fingerprints are our own).

Unit tests: the record's loader refusals, binding checks, the calibrate report, the files.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gtrex
import gtrex.cli
import pytest
from gtrex import conformal as oracle

from groundswell.shared.repair.calibration import (
    GTREX_CALIBRATION_SCHEMA,
    REPORT_SCHEMA,
    Calibration,
    CalibrationError,
    CalibrationInputError,
    LabelledRepair,
    calibrate_coverage,
    calibrate_risk,
    calibration_report,
    evaluate_threshold,
    load_calibration,
    read_labelled,
)

Row = tuple[Any, Any, Any]
BINDING = {
    "pre_threshold_fingerprint": "p" * 16,
    "scorer_fingerprint": "s" * 16,
    "verifier_revision": 7,
    "scorer_revision": 4,
    "calibrated_under_policy": "f" * 16,
    "groundswell_version": "0.1.0",
}
IDENTITIES = {
    "fingerprint": "f" * 16,
    "pre_threshold_fingerprint": "p" * 16,
    "scorer_fingerprint": "s" * 16,
    "verifier_revision": 7,
    "scorer_revision": 4,
}
# Prose and identity: everything else in a calibration is compared exactly.
PROSE = ("schema", "guarantee", "notes", "binding")


# -- generated score sets -----------------------------------------------------------------


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def scored(
    rng: random.Random,
    n: int,
    *,
    faithful_share: float = 0.8,
    separation: float = 0.28,
    digits: int | None = None,
    groups: str = "unique",
) -> list[Row]:
    """n labelled rows: faithful scores around 0.88, unfaithful ``separation`` lower;
    ``digits`` rounds them (ties); ``groups``: unique, none, partial or repeated."""
    rows = []
    for i in range(n):
        faithful = rng.random() < faithful_share
        score = _clip(rng.gauss(0.88 if faithful else 0.88 - separation, 0.08))
        if digits is not None:
            score = round(score, digits)
        group: str | None = f"doc{i}"
        if groups == "none" or (groups == "partial" and i % 3 == 0):
            group = None
        elif groups == "repeated":
            group = f"doc{i % max(1, n // 3)}"
        rows.append((score, faithful, group))
    return rows


def score_sets() -> Iterator[tuple[str, list[Row]]]:
    rng = random.Random(20261130)
    for n in (1, 2, 3, 5, 9, 10, 19, 30, 58, 59, 60, 100, 199, 300, 1000, 2500):
        yield f"n={n}", scored(rng, n)
    for n in (40, 120, 400, 1500):
        yield f"ties n={n}", scored(rng, n, digits=2)
        yield f"coarse ties n={n}", scored(rng, n, digits=1)
        yield f"overlap n={n}", scored(rng, n, separation=0.05)
        yield f"no groups n={n}", scored(rng, n, groups="none")
        yield f"partial groups n={n}", scored(rng, n, groups="partial")
    for n in (1, 30, 200):
        yield f"all faithful n={n}", scored(rng, n, faithful_share=1.0)
        yield f"none faithful n={n}", scored(rng, n, faithful_share=0.0)
    yield "scores at 1.0", [(1.0, i % 7 != 0, f"d{i}") for i in range(150)]
    yield "scores at 0 and 1", [(float(i % 2), i % 5 != 0, f"d{i}") for i in range(300)]
    yield "one score", [(0.7, i % 20 != 0, f"d{i}") for i in range(400)]


def ours(rows: list[Row]) -> list[LabelledRepair]:
    return [LabelledRepair(*row) for row in rows]


def theirs(rows: list[Row]) -> list[oracle.LabelledRepair]:
    return [oracle.LabelledRepair(*row) for row in rows]


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or the kind of exception raised, gtrex's mapped to ours."""
    try:
        return "ok", call()
    except (CalibrationError, oracle.CalibrationError):
        return "CalibrationError", None
    except TypeError:
        return "TypeError", None
    except ValueError:
        return "ValueError", None


def assert_same(mine: Calibration, gtrex_one: oracle.Calibration) -> None:
    a, b = mine.as_dict(), gtrex_one.as_dict()
    assert {k: v for k, v in a.items() if k not in PROSE} == {
        k: v for k, v in b.items() if k not in PROSE
    }
    # Full precision, sign of zero included.
    assert repr(mine.threshold) == repr(gtrex_one.threshold)
    assert len(a["notes"]) == len(b["notes"])
    assert a["schema"] == "groundswell/calibration/1"
    assert ("NOT CERTIFIED" in a["guarantee"]) == ("NOT CERTIFIED" in b["guarantee"])


def compare_risk(rows: list[Row], **kwargs: Any) -> str:
    mine = outcome(lambda: calibrate_risk(ours(rows), **kwargs))
    other = outcome(lambda: oracle.calibrate_risk(theirs(rows), **kwargs))
    assert mine[0] == other[0], (mine, other)
    if mine[0] == "ok":
        assert_same(mine[1], other[1])
    return mine[0]


# -- risk -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "rows"), list(score_sets()), ids=lambda v: v)
def test_risk_matches_gtrex(name: str, rows: list[Row]) -> None:
    outcomes = {
        compare_risk(rows, alpha=alpha, delta=delta)
        for alpha, delta in ((0.05, 0.05), (0.1, 0.1), (0.02, 0.2), (0.3, 0.01))
    }
    assert outcomes <= {"ok", "CalibrationError"}


def test_risk_statuses_and_refusals_cover_both_outcomes() -> None:
    # The generated sets are not all certified and not all refused.
    results = [compare_risk(rows) for _, rows in score_sets()]
    assert "ok" in results
    assert "CalibrationError" in results


@pytest.mark.parametrize(("n", "expected"), [(58, "CalibrationError"), (59, "ok")])
def test_accepting_nothing_needs_59_examples(n: int, expected: str) -> None:
    # All unfaithful, all below 1.0: only the endpoint 1.0 has zero violations, and
    # 0.95**58 = 0.051 > 0.05 while 0.95**59 = 0.0485.
    rows = [(0.2 + i / 1000, False, f"d{i}") for i in range(n)]
    assert compare_risk(rows) == expected
    if expected == "ok":
        result = calibrate_risk(ours(rows))
        assert result.threshold == 1.0
        assert result.empirical["accepted"] == 0
        assert len(result.notes) == 2  # candidates, and "accepts none"


@pytest.mark.parametrize("seed", range(6))
def test_grids_match_gtrex(seed: int) -> None:
    rng = random.Random(seed)
    rows = scored(rng, rng.choice((80, 300, 900)), digits=rng.choice((None, 2)))
    grids = [
        [i / 100 for i in range(101)],
        [0.65],
        [1.0],
        [0.5, 0.5, 0.9, 0.7],
        sorted(rng.random() for _ in range(25)),
        [row[0] for row in rows[:40]],
    ]
    for grid in grids:
        compare_risk(rows, grid=grid)
        compare_risk(rows, grid=tuple(grid), alpha=0.1, delta=0.1)


def test_repeated_groups_refused_or_uncertified() -> None:
    rows = scored(random.Random(5), 600, groups="repeated")
    assert compare_risk(rows) == "CalibrationError"
    assert compare_risk(rows, allow_repeated_groups=True) == "ok"
    result = calibrate_risk(ours(rows), allow_repeated_groups=True)
    assert result.guarantee_status == "uncertified"
    assert result.assumptions["group_check"] == "bypassed"
    assert result.guarantee.startswith("NOT CERTIFIED")
    # Allowed but absent: still conditional.
    unique = scored(random.Random(6), 300)
    compare_risk(unique, allow_repeated_groups=True)
    assert calibrate_risk(ours(unique), allow_repeated_groups=True).guarantee_status == (
        "conditional"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": 0},
        {"alpha": 1},
        {"alpha": True},
        {"alpha": "0.05"},
        {"alpha": math.nan},
        {"delta": 1.5},
        {"delta": -0.1},
        {"grid": []},
        {"grid": [0.5, 1.2]},
        {"grid": [math.nan]},
        {"grid": [True]},
        {"grid": ["0.5"]},
        {"allow_repeated_groups": 1},
    ],
    ids=repr,
)
def test_bad_arguments_raise_like_gtrex(kwargs: dict[str, Any]) -> None:
    assert compare_risk(scored(random.Random(1), 100), **kwargs) in ("TypeError", "ValueError")


def test_no_examples_and_bad_examples() -> None:
    assert compare_risk([]) == "CalibrationError"
    for call in (calibrate_risk, oracle.calibrate_risk):
        with pytest.raises(TypeError):
            call([(0.5, True, None)])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "row",
    [
        (math.nan, True, None),
        (math.inf, True, None),
        (1.0000001, True, None),
        (-0.01, False, None),
        (True, True, None),
        ("0.5", True, None),
        (None, True, None),
        (0.5, 1, None),
        (0.5, None, None),
        (0.5, True, 1.5),
        (0.5, True, ["doc"]),
        (10**400, True, None),
    ],
    ids=repr,
)
def test_labelled_repair_validation_matches_gtrex(row: Row) -> None:
    mine = outcome(lambda: LabelledRepair(*row))
    other = outcome(lambda: oracle.LabelledRepair(*row))
    assert mine[0] == other[0] != "ok"


def test_integer_groups_are_their_decimal_strings() -> None:
    # gtrex's command line reads an integer group as str(group); the library does the same.
    assert LabelledRepair(0.5, True, 7).group == "7"
    with pytest.raises(TypeError):
        LabelledRepair(0.5, True, True)  # type: ignore[arg-type]
    rows = [(0.9, True, 7), (0.8, True, "7")]
    with pytest.raises(CalibrationError, match="more than one example"):
        calibrate_risk(ours(rows))


def test_large_set_is_fast_and_matches() -> None:
    rng = random.Random(99)
    rows = scored(rng, 20000, separation=0.2)
    mine = calibrate_risk(ours(rows))
    other = oracle.calibrate_risk(theirs(rows), grid=[mine.threshold])
    # gtrex on the full candidate set is slow at this size; at the certified threshold
    # the statistics agree, and the smaller sets above compare the whole search.
    assert dict(mine.empirical) == dict(other.empirical)
    assert mine.data_sha256 == other.data_sha256


# -- coverage and evaluate_threshold --------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.1, 0.05, 0.2, 0.5, 0.01, 0.3333])
def test_coverage_matches_gtrex(alpha: float) -> None:
    rng = random.Random(int(alpha * 10000))
    for n in (0, 1, 2, 8, 9, 10, 19, 20, 99, 100, 101, 250, 1000):
        for digits in (None, 2):
            scores = [r[0] for r in scored(rng, n, faithful_share=1.0, digits=digits)]
            mine = outcome(lambda s=scores: calibrate_coverage(s, alpha=alpha))
            other = outcome(lambda s=scores: oracle.calibrate_coverage(s, alpha=alpha))
            assert mine[0] == other[0], (n, mine, other)
            if mine[0] == "ok":
                assert_same(mine[1], other[1])
                assert mine[1].delta is None


def test_coverage_refuses_like_gtrex() -> None:
    for scores, alpha in (([0.5] * 8, 0.1), ([0.5, True], 0.1), ([0.5], 0), ([1.5], 0.1)):
        mine = outcome(lambda s=scores, a=alpha: calibrate_coverage(s, alpha=a))
        other = outcome(lambda s=scores, a=alpha: oracle.calibrate_coverage(s, alpha=a))
        assert mine[0] == other[0] != "ok"


def test_evaluate_threshold_matches_gtrex() -> None:
    for index, (_, rows) in enumerate(score_sets()):
        for threshold in (0.0, 0.65, 0.9, 1.0, rows[0][0] if rows else 0.5):
            assert evaluate_threshold(ours(rows), threshold) == oracle.evaluate_threshold(
                theirs(rows), threshold
            ), index
    assert evaluate_threshold([], 0.5) == {} == oracle.evaluate_threshold([], 0.5)
    for bad in (1.5, math.nan, True):
        assert (
            outcome(lambda b=bad: evaluate_threshold([], b))[0]
            == (outcome(lambda b=bad: oracle.evaluate_threshold([], b))[0])
        )


# -- the record ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def risk() -> Calibration:
    return calibrate_risk(ours(scored(random.Random(3), 300)), binding=BINDING)


@pytest.fixture(scope="module")
def coverage() -> Calibration:
    return calibrate_coverage([0.5 + i / 100 for i in range(40)], binding=BINDING)


def test_round_trip(risk: Calibration, coverage: Calibration) -> None:
    for calibration in (risk, coverage):
        document = json.loads(json.dumps(calibration.as_dict()))
        again = Calibration.from_dict(document)
        assert again == calibration
        assert again.as_dict() == calibration.as_dict()
    assert risk.bound
    assert dict(risk.binding or {}) == BINDING


def _edited(calibration: Calibration, **changes: Any) -> dict[str, Any]:
    document = calibration.as_dict()
    for key, value in changes.items():
        if value is ...:
            del document[key]
        else:
            document[key] = value
    return document


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"extra": 1}, "unknown calibration fields: extra"),
        ({"acceptance_rule": "score > threshold"}, "acceptance_rule"),
        ({"acceptance_rule": ...}, "acceptance_rule"),
        ({"stage": ...}, "'stage'"),
        ({"stage": "verification"}, "stage"),
        ({"target": "conditional_false_acceptance"}, "controls"),
        ({"method_revision": 1}, "revision 1"),
        ({"method_revision": 2.0}, "revision 2.0"),
        ({"method_revision": ...}, "revision None"),
        ({"method": "bonferroni"}, "bonferroni"),
        ({"delta": None}, "needs delta"),
        ({"delta": 0}, "delta"),
        ({"schema": "groundswell/calibration/2"}, "groundswell/calibration/2"),
        ({"schema": ...}, "0.1.0a1"),
        ({"schema": "gtrex/calibration/legacy-0.1.0a1"}, "0.1.0a1"),
        ({"threshold": ...}, "'threshold'"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": "0.7"}, "threshold"),
        ({"n": 0}, "n must be"),
        ({"n": 3.0}, "n must be"),
        ({"n": True}, "n must be"),
        ({"guarantee_status": "certified"}, "guarantee_status"),
        ({"notes": "a note"}, "notes"),
        ({"notes": [1]}, "notes"),
        ({"binding": []}, "binding"),
        ({"empirical": []}, "empirical"),
        ({"guarantee": ...}, "'guarantee'"),
    ],
    ids=repr,
)
def test_from_dict_refuses(risk: Calibration, changes: dict[str, Any], error: str) -> None:
    with pytest.raises((TypeError, ValueError), match=error.replace("(", r"\(")):
        Calibration.from_dict(_edited(risk, **changes))


def test_from_dict_refuses_coverage_with_delta(coverage: Calibration) -> None:
    with pytest.raises(ValueError, match="no delta"):
        Calibration.from_dict(_edited(coverage, delta=0.05))
    with pytest.raises(ValueError, match="controls"):
        Calibration.from_dict(_edited(coverage, target="joint_false_acceptance"))
    with pytest.raises(TypeError):
        Calibration.from_dict([coverage.as_dict()])  # type: ignore[arg-type]


def test_from_dict_missing_status_is_uncertified(risk: Calibration) -> None:
    assert Calibration.from_dict(_edited(risk, guarantee_status=...)).guarantee_status == (
        "uncertified"
    )


def test_gtrex_documents_load_and_are_refused_by_binding() -> None:
    rows = scored(random.Random(4), 300)
    for policy, made in (
        (gtrex.DEFAULT, oracle.calibrate_risk(theirs(rows), policy=gtrex.DEFAULT)),
        (
            gtrex.STRICT,
            oracle.calibrate_coverage([r[0] for r in rows if r[1]], policy=gtrex.STRICT),
        ),
    ):
        loaded = Calibration.from_dict(json.loads(json.dumps(made.as_dict())))
        assert loaded.schema == GTREX_CALIBRATION_SCHEMA
        assert loaded.as_dict() == made.as_dict()
        with pytest.raises(ValueError) as refused:
            loaded.check_binding(IDENTITIES)
        message = str(refused.value)
        assert made.binding is not None
        assert made.binding["pre_threshold_fingerprint"] in message
        assert IDENTITIES["pre_threshold_fingerprint"] in message
        assert "gtrex 1.1.0" in message
        # Against gtrex's own identities it passes, as gtrex's check does.
        loaded.check_binding(policy.identities())


def test_check_binding(risk: Calibration) -> None:
    risk.check_binding(IDENTITIES)
    unbound = calibrate_risk(ours(scored(random.Random(3), 300)))
    with pytest.raises(ValueError, match="unbound"):
        unbound.check_binding(IDENTITIES)
    other = dict(IDENTITIES, pre_threshold_fingerprint="q" * 16)
    with pytest.raises(ValueError, match=f"{'p' * 16}.*{'q' * 16}"):
        risk.check_binding(other)
    for key, value in (
        ("scorer_fingerprint", "t" * 16),
        ("verifier_revision", 8),
        ("scorer_revision", 5),
    ):
        with pytest.raises(ValueError, match=f"{key} is {BINDING[key]!r} but this policy's is"):
            risk.check_binding(dict(IDENTITIES, **{key: value}))
    # The policy's own fingerprint may move (a new threshold) without refusing.
    risk.check_binding(dict(IDENTITIES, fingerprint="0" * 16))


def test_binding_must_have_its_keys() -> None:
    rows = ours(scored(random.Random(3), 100))
    with pytest.raises(ValueError, match="missing groundswell_version"):
        calibrate_risk(
            rows, binding={k: v for k, v in BINDING.items() if k != "groundswell_version"}
        )
    with pytest.raises(ValueError, match="unexpected gtrex_version"):
        calibrate_coverage([0.5] * 20, binding=dict(BINDING, gtrex_version="1.1.0"))
    with pytest.raises(TypeError):
        calibrate_coverage([0.5] * 20, binding=[("a", 1)])  # type: ignore[arg-type]


def test_record_is_read_only(risk: Calibration) -> None:
    with pytest.raises(TypeError):
        risk.empirical["p_value"] = 0.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        risk.threshold = 0.1  # type: ignore[misc]


# -- the report ---------------------------------------------------------------------------


def gtrex_report(tmp: Path, rows: list[Row], *flags: str) -> tuple[dict[str, Any] | None, int]:
    """gtrex calibrate's report and exit status (in process)."""
    source = tmp / "gtrex-in.jsonl"
    source.write_text(
        "".join(
            json.dumps(dict(zip(("score", "faithful", "group"), r, strict=True))) + "\n"
            for r in rows
        )
    )
    out = tmp / "gtrex-report.json"
    out.unlink(missing_ok=True)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = gtrex.cli.main(["calibrate", str(source), "-o", str(out), *flags])
    return (json.loads(out.read_text()) if out.exists() else None), status


IDENTITY_KEYS = ("schema", "gtrex_version", "groundswell_version", "bound_to")


def assert_same_report(mine: dict[str, Any], other: dict[str, Any]) -> None:
    assert mine["schema"] == REPORT_SCHEMA
    assert mine["bound_to"] == IDENTITIES
    assert {k for k in mine if k not in IDENTITY_KEYS} == {
        k for k in other if k not in IDENTITY_KEYS
    }
    for key in mine:
        if key in IDENTITY_KEYS:
            continue
        if key in ("risk", "coverage"):
            strip = lambda d: {k: v for k, v in d.items() if k not in PROSE}  # noqa: E731
            assert strip(mine[key]) == strip(other[key])
            assert len(mine[key]["notes"]) == len(other[key]["notes"])
        elif key == "errors":
            assert mine[key].keys() == other[key].keys()
        else:
            assert mine[key] == other[key], key


@pytest.mark.parametrize(
    ("rows", "kwargs", "flags"),
    [
        (scored(random.Random(11), 300), {"compare": 0.65}, ["--compare", "0.65"]),
        (scored(random.Random(12), 5), {}, []),
        (scored(random.Random(13), 300, faithful_share=0.0), {}, []),
        (scored(random.Random(14), 40), {"method": "coverage"}, ["--method", "coverage"]),
        (
            scored(random.Random(15), 120),
            {"method": "risk", "alpha": 0.1},
            ["--method", "risk", "--alpha", "0.1"],
        ),
        (
            scored(random.Random(16), 200, groups="repeated"),
            {"allow_repeated_groups": True, "delta": 0.2, "coverage_alpha": 0.2},
            ["--allow-repeated-groups", "--delta", "0.2", "--coverage-alpha", "0.2"],
        ),
        (scored(random.Random(17), 200, groups="repeated"), {}, []),
        (
            scored(random.Random(18), 8, faithful_share=1.0),
            {"method": "coverage"},
            ["--method", "coverage"],
        ),
    ],
)
def test_report_matches_gtrex(
    tmp_path: Path, rows: list[Row], kwargs: dict[str, Any], flags: list[str]
) -> None:
    mine, ok = calibration_report(ours(rows), binding=BINDING, **kwargs)
    other, status = gtrex_report(tmp_path, rows, *flags)
    assert other is not None
    assert_same_report(mine, other)
    assert ok == (status == 0)
    json.dumps(mine, allow_nan=False)


def test_report_without_binding_and_bad_method() -> None:
    report, ok = calibration_report(ours(scored(random.Random(2), 300)), method="risk")
    assert ok and report["bound_to"] is None and report["risk"]["binding"] is None
    with pytest.raises(ValueError, match="method"):
        calibration_report([], method="all")


# -- files --------------------------------------------------------------------------------


def test_load_calibration(tmp_path: Path, risk: Calibration) -> None:
    report, _ = calibration_report(ours(scored(random.Random(3), 300)), binding=BINDING)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert load_calibration(path) == risk
    bare = tmp_path / "risk.json"
    bare.write_text(json.dumps(risk.as_dict()))
    assert load_calibration(bare) == risk

    failed, _ = calibration_report(ours(scored(random.Random(3), 5)), binding=BINDING)
    path.write_text(json.dumps(failed))
    with pytest.raises(CalibrationInputError, match=f"^{path}: the report holds no risk"):
        load_calibration(path)
    bare.write_text(json.dumps(calibrate_coverage([0.5] * 30).as_dict()))
    with pytest.raises(CalibrationInputError, match=f"^{bare}: a split_conformal_coverage"):
        load_calibration(bare)
    bare.write_text("{")
    with pytest.raises(CalibrationInputError, match=f"^{bare}: not a JSON calibration"):
        load_calibration(bare)
    bare.write_text("[]")
    with pytest.raises(CalibrationInputError, match=f"^{bare}: a calibration is a JSON object"):
        load_calibration(bare)
    bare.write_text(json.dumps(_edited(risk, extra=1)))
    with pytest.raises(CalibrationInputError, match=f"^{bare}: not a usable calibration: unknown"):
        load_calibration(bare)
    with pytest.raises(CalibrationInputError, match="cannot read"):
        load_calibration(tmp_path / "missing.json")


def test_load_gtrex_report(tmp_path: Path) -> None:
    rows = scored(random.Random(21), 300)
    _, status = gtrex_report(tmp_path, rows)
    assert status == 0
    path = tmp_path / "gtrex-report.json"
    loaded = load_calibration(path)
    assert loaded.schema == GTREX_CALIBRATION_SCHEMA
    assert loaded.threshold == calibrate_risk(ours(rows)).threshold
    with pytest.raises(ValueError, match=r"gtrex 1\.1\.0"):
        loaded.check_binding(IDENTITIES)


GOOD_LINES = [
    '{"score": 0.9, "faithful": true, "group": "d1", "note": "kept"}',
    "",
    "   ",
    '{"score": 1, "faithful": false, "group": 7}',
    '{"score": 0, "faithful": true}',
]


def test_read_labelled(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(GOOD_LINES).encode() + b"\n\n")
    assert read_labelled(path) == [
        LabelledRepair(0.9, True, "d1"),
        LabelledRepair(1.0, False, "7"),
        LabelledRepair(0.0, True, None),
    ]
    assert read_labelled(path) == [
        LabelledRepair(e.score, e.faithful, e.group) for e in gtrex.cli._read_labelled(path)
    ]


@pytest.mark.parametrize(
    "line",
    [
        '{"faithful": true}',
        '{"score": true, "faithful": true}',
        '{"score": "0.5", "faithful": true}',
        '{"score": NaN, "faithful": true}',
        '{"score": Infinity, "faithful": true}',
        '{"score": 1.5, "faithful": true}',
        '{"score": -0.5, "faithful": true}',
        '{"score": 0.5, "faithful": 1}',
        '{"score": 0.5, "faithful": "true"}',
        '{"score": 0.5}',
        '{"score": 0.5, "faithful": true, "group": 1.5}',
        '{"score": 0.5, "faithful": true, "group": ["a"]}',
        '{"score": 0.5, "faithful": true, "group": {}}',
        '{"score": 0.5, "faithful": true, "x": "\\ud800"}',
        "[0.5, true]",
        "{not json",
    ],
)
def test_read_labelled_refuses_like_gtrex(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"score": 0.5, "faithful": true}\n\n' + line + "\n")
    with pytest.raises(CalibrationInputError, match=f"^{path}:3: "):
        read_labelled(path)
    with pytest.raises(SystemExit, match=f"^{path}:3: "):
        gtrex.cli._read_labelled(path)


def test_read_labelled_bad_bytes_and_boolean_group(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"score": 0.5, "faithful": true}\n{"score": 0.5, "faithful": \xff}\n')
    with pytest.raises(CalibrationInputError, match=f"^{path}:2: not valid UTF-8"):
        read_labelled(path)
    # Deliberately stricter than gtrex, which reads a boolean group as "True".
    path.write_text('{"score": 0.5, "faithful": true, "group": true}\n')
    with pytest.raises(CalibrationInputError, match=f"^{path}:1: 'group' must be"):
        read_labelled(path)
    with pytest.raises(CalibrationInputError, match="cannot read"):
        read_labelled(tmp_path / "missing.jsonl")
