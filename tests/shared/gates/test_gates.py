"""Quality gates on crafted summaries: every check at each level, exit codes and messages,
baselines from the catalog, bad gate files named by file:line: field."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.gates.models import GateError, parse_gate
from groundswell.shared.gates.service import evaluate, render
from groundswell.shared.runs.finish import write_record
from groundswell.shared.runs.layout import summary_key
from groundswell.shared.runs.models import RunRecord
from groundswell.shared.storage import open_store
from groundswell.shared.summary import admit_unit_counts, rates


def summary(counts: dict[str, int], **extra) -> dict:
    return {
        "run_id": "r1",
        "counts": counts,
        "rates": rates(counts),
        "failed_units": 0,
        "errors_total": 0,
        "index": {"units": 10},
        **extra,
    }


GOOD = {
    "claims": 100,
    "claims.accepted": 96,
    "claims.labelled_fabricated": 10,
    "claims.escapes": 1,
    "candidates": 50,
    "candidates.outcome.admitted": 40,
    "candidates.outcome.needs_verification": 6,
    "candidates.outcome.rejected": 4,
    "candidates.labelled_wrong": 20,
    "candidates.escapes": 1,
    "candidates.labelled_right": 30,
    "candidates.right_admitted": 27,
    "candidates.false_rejections": 1,
}

# metric, warn bounds, fail bounds, and a value per level (pass, warn, fail) as counters
CASES = [
    ("grounding_rate", {"min": 0.95}, {"min": 0.9}, [("claims.accepted", v) for v in (96, 92, 80)]),
    ("claims_escape_rate", {"max": 0.1}, {"max": 0.2}, [("claims.escapes", v) for v in (1, 2, 3)]),
    ("escape_rate", {"max": 0.05}, {"max": 0.1}, [("candidates.escapes", v) for v in (1, 2, 3)]),
    (
        "review_share",
        {"max": 0.15},
        {"max": 0.3},
        [("candidates.outcome.needs_verification", v) for v in (6, 10, 20)],
    ),
    (
        "rejected_share",
        {"max": 0.1},
        {"max": 0.2},
        [("candidates.outcome.rejected", v) for v in (4, 7, 11)],
    ),
    (
        "admitted_share",
        {"min": 0.7},
        {"min": 0.5},
        [("candidates.outcome.admitted", v) for v in (40, 30, 20)],
    ),
    (
        "right_admitted_rate",
        {"min": 0.85},
        {"min": 0.7},
        [("candidates.right_admitted", v) for v in (27, 24, 18)],
    ),
    (
        "false_rejection_rate",
        {"max": 0.05},
        {"max": 0.1},
        [("candidates.false_rejections", v) for v in (1, 2, 4)],
    ),
]


def gate(*checks: dict) -> str:
    return json.dumps({"gate": 1, "checks": list(checks)})


@pytest.mark.parametrize(("metric", "warn", "fail", "values"), CASES, ids=[c[0] for c in CASES])
def test_every_rate_check_at_each_level(metric, warn, fail, values):
    spec = parse_gate(gate({"metric": metric, "warn": warn, "fail": fail}))
    for (counter, value), level in zip(values, ("pass", "warn", "fail"), strict=True):
        result = evaluate(spec, summary({**GOOD, counter: value}))
        (check,) = result.checks
        assert check.status == level, (metric, value, check.message)
        assert (
            result.status == level and result.exit_code == {"pass": 0, "warn": 1, "fail": 2}[level]
        )
        assert check.message.startswith(f"{metric} = ")
        if level != "pass":
            bound = warn if level == "warn" else fail
            name, number = next(iter(bound.items()))
            assert f"{level}, crosses {name} {number:g}" in check.message


@pytest.mark.parametrize(("failed", "level"), [(0, "pass"), (1, "warn"), (3, "fail")])
def test_failed_units_and_their_share(failed, level):
    spec = parse_gate(
        gate(
            {"metric": "failed_units", "warn": {"max": 0}, "fail": {"max": 2}},
            {"metric": "failed_unit_share", "warn": {"max": 0.05}, "fail": {"max": 0.25}},
        )
    )
    result = evaluate(spec, {**summary(GOOD), "failed_units": failed})
    assert [c.status for c in result.checks] == [level, level]
    assert result.checks[0].value == failed and result.checks[1].value == failed / 10


def test_a_check_without_labels_is_skipped_and_says_why():
    unlabelled = {k: v for k, v in GOOD.items() if "label" not in k and "escape" not in k}
    spec = parse_gate(gate({"metric": "escape_rate", "fail": {"max": 0.0}}))
    result = evaluate(spec, summary(unlabelled))
    assert result.status == "pass" and result.checks[0].status == "skipped"
    assert "no labels" in result.checks[0].message


def test_the_worst_check_decides_and_render_lists_each_with_value_and_bound():
    spec = parse_gate(
        gate(
            {"metric": "grounding_rate", "warn": {"min": 0.97}},
            {"metric": "escape_rate", "fail": {"max": 0.01}},
            {"metric": "review_share", "warn": {"max": 0.5}},
        )
    )
    result = evaluate(spec, summary(GOOD))
    assert [c.status for c in result.checks] == ["warn", "fail", "pass"]
    assert result.status == "fail" and result.exit_code == 2
    text = render(result)
    assert "WARN    grounding_rate = 0.96: warn, crosses min 0.97" in text
    assert "FAIL    escape_rate = 0.05: fail, crosses max 0.01" in text
    assert "PASS    review_share = 0.12: pass (warn max 0.5)" in text
    assert text.endswith("gate fail (exit 2)")


def test_per_field_checks_read_the_fields_counters():
    receipt = {
        "decisions": [
            {"candidate_id": "a", "field": "revenue", "outcome": "admitted", "codes": []},
            {
                "candidate_id": "b",
                "field": "revenue",
                "outcome": "needs_verification",
                "codes": ["SCALE_WORD"],
            },
            {"candidate_id": "c", "field": "year", "outcome": "admitted", "codes": []},
            {
                "candidate_id": "d",
                "field": "bogus",
                "outcome": "rejected",
                "codes": ["FIELD_UNKNOWN"],
            },
        ]
    }
    labels = type("L", (), {"candidates": {"a": False, "c": True}, "claims": {}})()
    counts = dict(admit_unit_counts(receipt, labels))
    assert counts["candidates.field.revenue"] == 2
    assert counts["candidates.field.revenue.escapes"] == 1
    assert not any(k.startswith("candidates.field.bogus") for k in counts)
    spec = parse_gate(
        gate(
            {"metric": "review_share", "field": "revenue", "warn": {"max": 0.25}},
            {"metric": "review_share", "field": "year", "warn": {"max": 0.25}},
            {"metric": "escape_rate", "field": "revenue", "fail": {"max": 0}},
            {"metric": "escape_rate", "field": "year", "fail": {"max": 0}},
        )
    )
    result = evaluate(spec, summary(counts))
    assert [c.status for c in result.checks] == ["warn", "pass", "fail", "skipped"]
    assert result.checks[0].check == "review_share[revenue]"


def test_max_drop_against_a_baseline():
    spec = parse_gate(
        gate({"metric": "grounding_rate", "warn": {"max_drop": 0.01}, "fail": {"max_drop": 0.02}})
    )
    before = summary({**GOOD, "claims.accepted": 96})
    for now, level in ((96, "pass"), (95, "pass"), (94.5, "warn"), (93, "fail")):
        after = summary({**GOOD, "claims.accepted": now})
        result = evaluate(spec, after, {"corpus_previous": ("r0", before)})
        assert result.checks[0].status == level, (now, result.checks[0].message)
        assert result.checks[0].baseline == 0.96 and result.checks[0].baseline_run == "r0"
    lonely = evaluate(spec, before, {"corpus_previous": None})
    assert lonely.status == "pass"
    assert "max_drop not checked: no corpus previous run" in lonely.checks[0].message


def _by_producer(**grounded: int) -> dict:
    """A summary whose producers each verified 100 claims, ``grounded[key]`` of them accepted."""
    from groundswell.shared.producers import counter, summary_section
    from groundswell.shared.summary import merge

    parts = [
        {
            counter("claims", key): 100,
            counter("claims.accepted", key): n,
            counter("claims.aligned", key): 100,
            counter("disagree.exact_not_verified", key): 100 - n,
            counter("candidates", key): 10,
            counter("candidates.outcome.needs_verification", key): 10 - n // 10,
        }
        for key, n in grounded.items()
    ]
    return summary(GOOD, producers=summary_section(merge(*parts)))


def test_a_check_per_producer_reads_that_producers_rates():
    spec = parse_gate(
        gate(
            {"metric": "grounding_rate", "producer": "lx:m1", "fail": {"min": 0.9}},
            {"metric": "review_share", "producer": "lx:m2", "warn": {"max": 0.05}},
            {"metric": "grounding_rate", "producer": "lx:gone", "fail": {"min": 0.9}},
        )
    )
    result = evaluate(spec, _by_producer(**{"lx:m1": 95, "lx:m2": 80}))
    first, second, third = result.checks
    assert first.status == "pass" and first.value == 0.95 and first.producer == "lx:m1"
    assert first.check == "grounding_rate@lx:m1"
    assert second.status == "warn" and second.value == 0.2  # 2 of its 10 to review
    assert third.status == "skipped" and "producer lx:gone" in third.message
    assert result.status == "warn" and result.exit_code == 1


def test_a_check_for_each_producer_fails_on_the_worst_and_its_baseline_is_its_own():
    spec = parse_gate(
        gate(
            {"metric": "grounding_rate", "producer": "*", "fail": {"min": 0.9}},
            {"metric": "disagreement_rate", "producer": "*", "warn": {"max_drop": 0.01}},
        )
    )
    now = _by_producer(**{"lx:m1": 95, "lx:m2": 85})
    before = _by_producer(**{"lx:m1": 95, "lx:m2": 95})
    result = evaluate(spec, now, {"corpus_previous": ("r0", before)})
    by = {(r.metric, r.producer): r for r in result.checks}
    assert by[("grounding_rate", "lx:m1")].status == "pass"
    assert by[("grounding_rate", "lx:m2")].status == "fail"
    # Disagreements of m2 rose from 5% to 15%: a max_drop of a rate that should stay low is
    # not crossed (it rose); m1's did not move.
    assert by[("disagreement_rate", "lx:m2")].baseline == 0.05
    assert result.status == "fail" and result.exit_code == 2
    # The run-level disagreement rate sums every producer's.
    run_level = parse_gate(gate({"metric": "disagreement_rate", "fail": {"max": 0.05}}))
    assert evaluate(run_level, now).checks[0].value == 0.1
    # No producer in the summary: one skipped check that says so.
    lone = evaluate(spec, summary(GOOD))
    assert lone.checks[0].status == "skipped" and "names no producer" in lone.checks[0].message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "gate: 1\nchecks:\n  - metric: errors\n    producer: x\n    fail: {max: 0}\n",
            "g.yaml:3: checks.0: metric 'errors' has no per-producer value",
        ),
        (
            "gate: 1\nchecks:\n  - metric: review_share\n    producer: x\n    field: f\n"
            "    fail: {max: 0}\n",
            "g.yaml:3: checks.0: a check is per field or per producer, not both",
        ),
        (
            "gate: 1\nchecks:\n  - metric: grounding_rat\n    fail: {min: 0.9}\n",
            "g.yaml:3: checks.0: unknown metric 'grounding_rat'",
        ),
        (
            "gate: 1\nchecks:\n  - metric: errors\n    fail: {max: 0}\n  - metric: grounding_rate\n",
            "g.yaml:5: checks.1: a check needs warn or fail bounds",
        ),
        (
            "gate: 1\nchecks:\n  - metric: errors\n    fail: {maxx: 0}\n",
            "g.yaml:3: checks.0.fail.maxx: Extra inputs are not permitted",
        ),
        (
            "gate: 1\nchecks:\n  - metric: failed_units\n    field: x\n    fail: {max: 0}\n",
            "g.yaml:3: checks.0: metric 'failed_units' has no per-field value",
        ),
        ("gate: 2\nchecks: []\n", "g.yaml: gate: Input should be 1"),
        ("gate: 1\nchecks: [\n", "g.yaml:3: not YAML"),
        ("- 1\n", "g.yaml:1: a gate file is a mapping"),
    ],
)
def test_a_bad_gate_file_is_named_by_file_line_and_field(text, said):
    with pytest.raises(GateError) as exc:
        parse_gate(text, "g.yaml")
    assert str(exc.value).startswith(said), str(exc.value)


# -- the command, on runs in a local store ----------------------------------------------


def stored_run(store, run_id: str, created: str, counts: dict, **fields) -> None:
    record = RunRecord(
        id=run_id,
        corpus=fields.get("corpus", "/data/c"),
        output=store.url,
        policy={"ref": fields.get("policy", "default@1"), "name": "default", "version": 1},
        engines={},
        state=fields.get("state", "succeeded"),
        created_at=created,
        finished_at=created,
    )
    data = summary(
        counts,
        run_id=run_id,
        corpus=record.corpus,
        policy=record.policy,
        created_at=created,
        state=record.state,
    )
    store.put(summary_key(run_id), json.dumps(data).encode())
    write_record(store, record, data)


@pytest.fixture
def store(tmp_path, monkeypatch):
    for name in (
        "GROUNDSWELL_BROKER_URL",
        "GROUNDSWELL_REDIS_URL",
        "GROUNDSWELL_API_URL",
        "GROUNDSWELL_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", str(tmp_path / "out"))
    return open_store(str(tmp_path / "out"), None)


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_gate_command_exits_0_1_2_against_the_corpus_and_policy_baselines(store, tmp_path):
    at = "2026-01-0{}T00:00:00.000000+00:00"
    stored_run(store, "r1", at.format(1), {**GOOD, "claims.accepted": 99}, policy="default@1")
    stored_run(store, "r2", at.format(2), {**GOOD, "claims.accepted": 97}, policy="default@2")
    stored_run(store, "rx", at.format(3), {**GOOD, "claims.accepted": 10}, corpus="/other")
    stored_run(store, "rf", at.format(4), {**GOOD, "claims.accepted": 10}, state="failed")
    stored_run(store, "r3", at.format(5), {**GOOD, "claims.accepted": 96}, policy="default@1")
    path = tmp_path / "gate.yaml"
    for against, level, code, base in (
        ("corpus_previous", "pass", 0, "r2"),
        ("policy_previous", "warn", 1, "r1"),
    ):
        path.write_text(
            f"gate: 1\nchecks:\n  - metric: grounding_rate\n    against: {against}\n"
            "    warn: {max_drop: 0.02}\n    fail: {max_drop: 0.05}\n"
        )
        done = cli("gate", "r3", str(path))
        assert done.exit_code == code, done.output
        assert f"gate {level} (exit {code})" in done.output
        as_json = json.loads(cli("gate", "r3", str(path), "--json").output)
        assert as_json["checks"][0]["baseline_run"] == base
    path.write_text("gate: 1\nchecks:\n  - metric: grounding_rate\n    fail: {min: 0.97}\n")
    done = cli("gate", "r3", str(path))
    assert (
        done.exit_code == 2
        and "FAIL    grounding_rate = 0.96: fail, crosses min 0.97" in done.output
    )


def test_gate_command_errors_exit_3(store, tmp_path, monkeypatch):
    path = tmp_path / "gate.yaml"
    path.write_text("gate: 1\nchecks:\n  - metric: nope\n    fail: {max: 0}\n")
    stored_run(store, "r1", "2026-01-01T00:00:00.000000+00:00", GOOD)
    done = cli("gate", "r1", str(path))
    assert done.exit_code == 3 and f"{path}:3: checks.0: unknown metric 'nope'" in done.output
    done = cli("gate", "r1")
    assert done.exit_code == 3 and "GROUNDSWELL_GATE_FILE" in done.output
    path.write_text("gate: 1\nchecks:\n  - metric: errors\n    fail: {max: 0}\n")
    assert cli("gate", "nosuch", str(path)).exit_code == 3
    monkeypatch.setenv("GROUNDSWELL_GATE_FILE", str(path))
    assert cli("gate", "r1").exit_code == 0
