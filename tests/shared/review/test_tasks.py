"""Tasks: groundswell's task sets equal ``groundgate review tasks`` 0.11's on the same packets
(conformance vectors and labelled packets), under several review policies."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from groundswell.shared.canonical import canonical_json
from groundswell.shared.review.formats import ReviewError
from groundswell.shared.review.tasks import TaskMaker, make_tasks, task_key
from tests.shared.review.oracle import POLICIES


def test_packet_keys_are_groundgates(cases) -> None:
    for case in cases:
        assert case.ours.key == case.key, case.name
        assert case.ours.receipt == case.theirs.receipt, case.name


def test_task_sets_equal_groundgates_under_every_policy(cases) -> None:
    from groundgate.review.tasks import make_tasks as oracle_tasks

    counts: Counter[str] = Counter()
    for case in cases:
        maker = TaskMaker(case.ours)
        for policy in POLICIES:
            theirs = oracle_tasks(
                case.key, case.theirs.receipt, case.theirs.text, case.schema, policy,
                references=case.theirs.references,
            )  # fmt: skip
            ours = maker.tasks(policy)
            assert canonical_json(ours) == canonical_json(theirs), (case.name, policy)
            counts["tasks"] += len(ours)
            counts.update(f"{t['item']} {t['mode']}" for t in ours)
            counts.update("missing" for t in ours if "REQUIRED_FIELD_MISSING" in t["codes"])
    # Every kind of task is compared, not only the easy ones.
    assert counts["tasks"] > 2000
    for kind in ("number review", "number audit", "text review", "text audit", "missing"):
        assert counts[kind] > 0, counts
    print(dict(counts))


def test_written_tasks_and_keys_equal_groundgates(cases, oracle) -> None:
    """``review tasks`` itself (the store path) on a sample: same tasks, same keys."""
    for case in cases[::25]:
        for policy in POLICIES[1:3]:
            theirs = oracle.tasks(case.key, policy)
            ours = make_tasks(case.ours, policy)
            assert ours == theirs, case.name
            written = {task_key(t) for t in ours}
            assert all(oracle.store.get("task@1", k) for k in written)


def test_audit_pick_is_deterministic_and_follows_the_rate(cases) -> None:
    audits = {}
    for rate in ("0", "0.2", "0.5", "1"):
        policy = {**POLICIES[0], "audit": {"rate": rate, "seed": "s"}}
        audits[rate] = {
            task_key(t) for c in cases for t in TaskMaker(c.ours).tasks(policy)
            if t["mode"] == "audit"
        }  # fmt: skip
    assert not audits["0"]
    assert audits["0.2"] < audits["0.5"] < audits["1"]  # a higher rate picks a superset
    share = len(audits["0.2"]) / len(audits["1"])
    assert 0.1 < share < 0.3, share


def test_a_task_holds_no_policy(cases) -> None:
    """The same slot gets the same task bytes under every policy that selects it."""
    case = next(c for c in cases if any(d["outcome"] == "admitted"
                                        for d in c.ours.receipt["decisions"]))  # fmt: skip
    maker = TaskMaker(case.ours)
    by_slot = {}
    for policy in POLICIES:
        for t in maker.tasks(policy):
            ident = canonical_json(t["slot"])
            assert by_slot.setdefault(ident, t) == t


@pytest.mark.parametrize(
    ("change", "member"),
    [
        ({"agree": 0}, "agree"),
        ({"audit": {"rate": "0.50", "seed": ""}}, "audit.rate"),
        ({"audit": {"rate": "2", "seed": ""}}, "audit.rate"),
        ({"leads": ["a", "a"]}, "leads"),
        ({"rejected": "yes"}, "rejected"),
        ({"format": "review-policy@2"}, "format"),
        ({"extra": 1}, "unknown"),
    ],
)
def test_a_bad_review_policy_is_refused_like_groundgate(cases, change, member) -> None:
    from groundgate.review.tasks import check_policy

    policy = {**copy.deepcopy(POLICIES[0]), **change}
    with pytest.raises(ReviewError, match=member):
        make_tasks(cases[0].ours, policy)
    with pytest.raises(ValueError):
        check_policy(policy)
