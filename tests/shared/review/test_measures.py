"""Measures: groundswell's review measures equal ``groundgate review measures`` 0.11's over the
same packets and answer logs (answers, times, one-key answers, agreement with blind labels,
escapes the audit finds, span moves), and a packet with a bad answer is left out by both."""

from __future__ import annotations

import random

from groundswell.shared.review.formats import chain
from groundswell.shared.review.measures import lines, measure
from groundswell.shared.review.tasks import TaskMaker, task_key
from tests.shared.review.oracle import POLICIES, Oracle, answer_logs


def test_measures_equal_groundgates(cases, tmp_path) -> None:
    from groundgate.review.measures import lines as their_lines
    from groundgate.review.measures import measures as their_measures

    rng = random.Random(1015)
    oracle = Oracle(tmp_path / "store")
    ours = []
    bad = None
    for case in cases[1::8]:
        key = oracle.admit(case.packet)
        tasks = [(task_key(t), t) for t in TaskMaker(case.ours).tasks(POLICIES[1])]
        logs = answer_logs(case.ours, tasks, rng, share=0.9)
        if bad is None and logs:  # one packet's answer names a task of another packet
            name = sorted(logs)[0]
            logs[name].append({**logs[name][-1], "task": "sha256:" + "1" * 64})
            bad = key
        for name, records in logs.items():
            for r in records:
                oracle.answer(key, name, r)
        ours.append((case.ours, {n: chain(rs) for n, rs in logs.items()}))
    oracle.close()
    for policy in (POLICIES[1], {**POLICIES[2], "leads": ["lead"]}):
        theirs = their_measures(oracle.store, policy)
        mine = measure(ours, policy)
        expected = theirs.to_dict()
        assert [s.split(": ")[0] for s in mine["skipped"]] == [f"packet {bad}"]
        assert [s.split(": ")[0] for s in expected["skipped"]] == [f"packet {bad}"]
        mine["skipped"] = expected["skipped"] = []
        assert mine == expected
        assert lines(mine) == their_lines(theirs)
    number = mine["kinds"]["number"]
    assert mine["packets"] > 20 and number["answers"] > 120
    assert 0 < number["agreement"][0] < number["agreement"][1]
    assert 0 < number["escapes"][0] < number["escapes"][1]
    print(lines(mine)[:3])
