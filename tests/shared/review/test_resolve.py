"""Resolutions: groundswell's resolution@1 equals ``groundgate review resolve`` 0.11's on the
same packets and answer logs (accept, choose, correct, reject, unsure; agreement, disputes,
leads, second answers), and bad answers are refused as groundgate refuses them."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from groundswell.shared.review.formats import chain
from groundswell.shared.review.resolve import AnswerError, Resolver
from groundswell.shared.review.tasks import task_key
from tests.shared.review.oracle import POLICIES, answer_logs
from tests.shared.review.test_formats import validator

RESOLVE_POLICIES = [POLICIES[1], POLICIES[2]]  # agree 1, and agree 2 with a lead


def _oracle_resolve(oracle, case, logs: dict, policy: dict, prefix: str):
    """Append the logs to groundgate's store under reviewer names ``prefix`` + name, and
    resolve. Our logs use the same names."""
    for name, records in logs.items():
        for r in records:
            oracle.answer(case.key, prefix + name, {**r, "reviewer": prefix + name})
    return oracle.resolve(case.key, policy, [prefix + name for name in logs])


def _renamed(logs: dict, prefix: str) -> dict:
    return {prefix + n: [{**r, "reviewer": prefix + n} for r in rs] for n, rs in logs.items()}


def test_resolutions_equal_groundgates(cases, oracle) -> None:
    from groundgate.review.resolve import AnswerError as TheirError

    resolution_format, answer_format = validator("resolution@1"), validator("answer@1")
    rng = random.Random(15)
    statuses: Counter[str] = Counter()
    compared = 0
    for number, case in enumerate(cases[::6]):
        resolver = Resolver(case.ours)
        tasks = [(task_key(t), t) for t in resolver.maker.tasks(POLICIES[1])]
        if not tasks:
            continue
        for p, policy in enumerate(RESOLVE_POLICIES):
            logs = answer_logs(case.ours, tasks, rng)
            prefix = f"r{number}p{p}-"
            if p == 1:
                policy = {**policy, "leads": [prefix + "lead"]}
            ours_logs = {n: chain(rs) for n, rs in _renamed(logs, prefix).items()}
            try:
                theirs = _oracle_resolve(oracle, case, logs, policy, prefix)
            except TheirError as exc:  # both refuse the same answer
                with pytest.raises(AnswerError) as caught:
                    resolver.resolve(policy, ours_logs)
                assert (caught.value.reviewer, caught.value.sequence) == (
                    exc.reviewer, exc.sequence)  # fmt: skip
                statuses["refused"] += 1
                continue
            for name, records in ours_logs.items():
                assert records == oracle.log(case.key, name)
            ours = resolver.resolve(policy, ours_logs)
            assert ours.resolution == theirs.resolution, case.name
            resolution_format.validate(ours.resolution)
            for records in ours_logs.values():
                for record in records:
                    answer_format.validate(record)
            compared += 1
            statuses.update(s["status"] for s in ours.resolution["slots"])
            for receipt_key in {c.receipt_key for c in ours.corrections}:
                assert oracle.store.get("receipt@1", receipt_key)  # groundgate kept the same
    print(compared, dict(statuses))
    assert compared > 50
    for status in ("admitted", "confirmed", "chosen", "corrected", "not_in_document", "open",
                   "disputed", "rejected"):  # fmt: skip
        assert statuses[status] > 0, statuses


def _case_with_task(cases, *, choices: int):
    for case in cases:
        tasks = Resolver(case.ours).maker.tasks(POLICIES[1])
        for t in tasks:
            if len(t["choices"]) == choices and t["mode"] == "review":
                return case, t
    raise AssertionError("no such task")


def _answer(of: dict, reviewer: str = "ann", **members) -> dict:
    return {
        "format": "answer@1", "task": task_key(of), "reviewer": reviewer, "verdict": "confirm",
        "decision": None, "candidate": None, "codes_kept": [], "statements": None,
        "nodes": None, "reason_seen": False, "keys": 1, "ms": 900,
        "time": "2026-11-30T12:00:00Z", **members,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("members", "member"),
    [
        ({"task": "sha256:" + "0" * 64}, "task"),
        ({"verdict": "maybe"}, "verdict"),
        ({"verdict": "choose", "decision": 999}, "decision"),
        ({"decision": 0}, "decision"),
        ({"codes_kept": ["X"]}, "codes_kept"),
        ({"keys": -1}, "keys"),
        ({"reviewer": "bob"}, "reviewer"),
        ({"statements": []}, "statements"),
        ({"verdict": "correct"}, "candidate"),
        ({"verdict": "correct", "candidate": {"id": "x", "field": "f", "value": "1",
                                              "proposer": "model"}}, "candidate.proposer"),
    ],
)  # fmt: skip
def test_a_bad_answer_is_refused_as_groundgate_refuses_it(cases, oracle, members, member) -> None:
    from groundgate.review.resolve import AnswerError as TheirError

    case, task = _case_with_task(cases, choices=1)
    record = _answer(task, **members)
    with pytest.raises(AnswerError, match=f": {member}: ") as caught:
        Resolver(case.ours).resolve(POLICIES[1], {"ann": chain([record])})
    assert caught.value.reviewer == "ann" and caught.value.sequence == 1
    name = f"bad-{member}-{len(str(members))}"
    oracle.answer(case.key, name, {**record, "reviewer": name if members.get("reviewer") is None
                                   else "someone-else"})  # fmt: skip
    with pytest.raises(TheirError):
        oracle.resolve(case.key, POLICIES[1], [name])


def test_confirm_needs_one_choice(cases) -> None:
    case, task = _case_with_task(cases, choices=2)
    with pytest.raises(AnswerError, match="verdict: confirm needs"):
        Resolver(case.ours).resolve(POLICIES[1], {"ann": chain([_answer(task)])})


def test_the_latest_answer_counts_and_disagreement_is_shown(cases) -> None:
    case, task = _case_with_task(cases, choices=1)
    resolver = Resolver(case.ours)
    slot = task["slot"]

    def status(logs: dict, policy=POLICIES[1]) -> str:
        slots = resolver.resolve(policy, {n: chain(r) for n, r in logs.items()}).resolution
        (found,) = [s for s in slots["slots"] if s["decisions"] == slot["decisions"]
                    and s["field"] == slot["field"] and s["key"] == slot["key"]]  # fmt: skip
        return found["status"]

    confirm = _answer(task)
    absent = _answer(task, verdict="not_in_document")
    assert status({}) == "open"
    assert status({"ann": [confirm]}) == "confirmed"
    assert status({"ann": [confirm, absent]}) == "not_in_document"
    assert (
        status({"ann": [confirm], "bob": [_answer(task, "bob", verdict="not_in_document")]})
        == "disputed"
    )
    with_lead = {**POLICIES[1], "leads": ["bob"]}
    assert status({"ann": [confirm], "bob": [_answer(task, "bob", verdict="not_in_document")]},
                  with_lead) == "not_in_document"  # fmt: skip
    assert status({"ann": [confirm]}, {**POLICIES[1], "agree": 2}) == "open"
    assert status({"ann": [_answer(task, verdict="unsure")]}) == "open"


def test_a_correction_is_admitted_again_by_the_runs_policy_version() -> None:
    """Under a guarded version a reviewer's correction meets the guards too: the header year
    given as the value is admitted by groundgate's admission, and held by guarded's."""
    from groundswell.shared.admit import admitter_for
    from groundswell.shared.review.packets import ReviewPacket
    from tests.shared.guarded.test_admitter import DOC, GUARDED, SCHEMA, at

    cands = [{"id": "a", "field": "uk", "key": "2019", "value": "1190", "evidence": [at("1,190")]}]
    fix = {"id": "r1", "field": "uk", "key": "2019", "value": "2019", "proposer": "person:ann",
           "evidence": [at("2019")]}  # fmt: skip
    seen = {}
    for name, version in (("default", None), ("guarded", GUARDED)):
        receipt = admitter_for(version, DOC, SCHEMA).admit(cands)
        resolver = Resolver(ReviewPacket(DOC, SCHEMA, cands, receipt, version=version))
        (task,) = resolver.maker.tasks(POLICIES[1])
        record = _answer(task, verdict="correct", candidate=fix)
        out = resolver.resolve(POLICIES[1], {"ann": chain([record])})
        (correction,) = out.corrections
        seen[name] = (out.resolution["slots"][0]["status"], correction.decision["codes"])
    assert seen["default"] == ("corrected", [])
    assert seen["guarded"] == ("open", ["VALUE_IS_HEADER"])
