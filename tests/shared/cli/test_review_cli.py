"""``groundswell review tasks|resolve|measures`` against ``groundgate review`` 0.11 on the same
files: the same task keys and bytes, the same resolution and lines, the same measures; answer
logs move from groundgate's store to groundswell as they are; bad answers exit 2 naming
file:line:member."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.canonical import canonical_text
from groundswell.shared.cli import main
from groundswell.shared.review.formats import reviewer_key
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.tasks import TaskMaker, task_key
from tests.shared.review.oracle import (
    POLICIES,
    Oracle,
    answer_logs,
    labelled_packets,
    vector_packets,
)

GROUNDGATE = str(Path(sys.executable).parent / "groundgate")
POLICY = {**POLICIES[2], "leads": ["lead"], "audit": {"rate": "0.5", "seed": "cli"}}


def ours(*args: str):
    return CliRunner().invoke(main, ["review", *args], catch_exceptions=False)


def theirs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([GROUNDGATE, "review", *args], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Labelled packets and conformance vectors as files, in a groundgate store, with answers to their tasks."""
    tmp = tmp_path_factory.mktemp("review-cli")
    policy = tmp / "policy.json"
    policy.write_text(json.dumps(POLICY))
    oracle = Oracle(tmp / "store")
    packets, keys, answers = [], [], []
    rng = random.Random(6)
    for n, packet in enumerate(labelled_packets(4)[:4] + vector_packets()[:4]):
        key = oracle.admit(packet)
        if key is None:
            continue
        path = tmp / f"packet-{n}.json"
        path.write_text(json.dumps(packet))
        packets.append(str(path))
        keys.append(key)
        review = ReviewPacket.admitted(packet)
        tasks = [(task_key(t), t) for t in TaskMaker(review).tasks(POLICY)]
        for name, records in answer_logs(review, tasks, rng, share=0.9).items():
            for r in records:
                oracle.answer(keys[-1], name, r)
                answers.append(r)
    oracle.close()
    # packets and reviewers interleaved; each reviewer's answers to a packet in log order
    (tmp / "answers.jsonl").write_text("".join(canonical_text(r) + "\n" for r in answers))
    (tmp / "no-answers.jsonl").write_text("\n")
    return tmp, packets, keys, oracle


def test_tasks_equal_groundgates(setup) -> None:
    tmp, packets, keys, oracle = setup
    got = ours("tasks", *packets, "-o", str(tmp / "tasks.jsonl"), "--review-policy",
               str(tmp / "policy.json"))  # fmt: skip
    assert got.exit_code == 0, got.output
    expected = []
    for key in keys:
        run = theirs("tasks", "--store", str(tmp / "store"), "--policy", str(tmp / "policy.json"),
                     key)  # fmt: skip
        assert run.returncode == 0, run.stderr
        expected += run.stdout.split()
    assert got.output.split() == expected and len(expected) >= 8
    lines = (tmp / "tasks.jsonl").read_bytes().splitlines()
    assert lines == [oracle.store.get("task@1", k) for k in expected]
    assert ours("tasks", packets[0]).output.splitlines()[0].startswith('{"choices":')


def test_resolve_equals_groundgates(setup) -> None:
    tmp, packets, keys, oracle = setup
    reviewers = sorted({json.loads(line)["reviewer"] for line in
                        (tmp / "answers.jsonl").read_text().splitlines()})  # fmt: skip
    expected, stored, logs = "", [], []
    for key in keys:
        args = ["--store", str(tmp / "store"), "--policy", str(tmp / "policy.json")]
        run = theirs("resolve", *args, *[f"--reviewer={r}" for r in reviewers], key)
        assert run.returncode == 0, run.stderr
        expected += run.stdout
        stored.append(oracle.store.get("resolution@1", run.stdout.split()[0]))
        folder = tmp / "store" / "logs" / "answers" / key[7:]
        logs += [folder / f"{reviewer_key(r)[7:]}.jsonl" for r in reviewers]
    out = tmp / "resolutions.jsonl"
    got = ours("resolve", *packets, "--answers", str(tmp / "answers.jsonl"), "-o", str(out),
               "--review-policy", str(tmp / "policy.json"), "--answers",
               str(tmp / "no-answers.jsonl"))  # fmt: skip
    assert got.exit_code == 0, got.output
    assert got.output == expected
    assert out.read_bytes().splitlines() == stored
    statuses = {
        w
        for w in (
            "(admitted)",
            "(confirmed)",
            "(chosen)",
            "(corrected)",
            "(open:",
            "(disputed:",
            "(not_in_document:",
            "(rejected:",
        )
        if w in expected
    }
    assert len(statuses) >= 4, statuses  # fmt: skip
    # groundgate's answer log files, as they are, give the same resolutions
    given = [a for log in logs if log.exists() for a in ("--answers", str(log))]
    again = ours("resolve", *packets, *given, "--policy", str(tmp / "policy.json"))
    assert again.output == expected


def test_measures_equal_groundgates(setup) -> None:
    tmp, packets, _, _ = setup
    run = theirs("measures", "--store", str(tmp / "store"), "--policy", str(tmp / "policy.json"),
                 "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    got = ours("measures", *packets, "--answers", str(tmp / "answers.jsonl"), "--policy",
               str(tmp / "policy.json"), "--json")  # fmt: skip
    assert got.exit_code == 0, got.output
    assert json.loads(got.output) == json.loads(run.stdout)
    assert json.loads(got.output)["packets"] >= 6


def _bad(tmp: Path, n: int, **change) -> Path:
    lines = (tmp / "answers.jsonl").read_text().splitlines()
    record = json.loads(lines[n - 1])
    record.update(change)
    lines[n - 1] = json.dumps(record)
    path = tmp / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "sha256:" + "2" * 64}, "task: not a task of a slot of the packets given"),
        ({"verdict": "maybe"}, "verdict: one of"),
        ({"keys": "many"}, "keys: not an integer"),
    ],
)
def test_a_bad_answer_exits_2_naming_file_line_member(setup, change, message) -> None:
    tmp, packets, _, _ = setup
    bad = _bad(tmp, 3, **change)
    got = ours("resolve", *packets, "--answers", str(bad))
    assert got.exit_code == 2, got.output
    assert f"{bad}:3: {message}" in got.output
    if "task" not in change:  # measures leaves that packet out, naming the record
        got = ours("measures", *packets, "--answers", str(bad))
        assert got.exit_code == 1 and f"{bad}:3: {message}" in got.output
    (tmp / "one.jsonl").write_text((tmp / "answers.jsonl").read_text().splitlines()[0])
    got = ours("resolve", packets[-1], "--answers", str(tmp / "one.jsonl"))
    if got.exit_code == 2:  # the record answers another packet's task
        assert "one.jsonl:1: task: not a task of a slot of the packets given" in got.output


def test_bad_json_and_bad_policy_exit_2(setup) -> None:
    tmp, packets, _, _ = setup
    (tmp / "broken.jsonl").write_text('{"a": 1}\n{not json\n')
    got = ours("resolve", packets[0], "--answers", str(tmp / "broken.jsonl"))
    assert got.exit_code == 2 and "broken.jsonl:1: reviewer" in got.output
    (tmp / "bad-policy.json").write_text(json.dumps({**POLICY, "agree": 0}))
    got = ours("tasks", packets[0], "--policy", str(tmp / "bad-policy.json"))
    assert got.exit_code == 2 and "agree" in got.output


def test_a_log_half_chained_or_broken_exits_2(setup) -> None:
    tmp, packets, _, _ = setup
    lines = (tmp / "answers.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    mixed = tmp / "mixed.jsonl"
    mixed.write_text(json.dumps({**first, "sequence": 1, "previous": None,
                                 "entry_sha256": "sha256:" + "0" * 64}) + "\n")  # fmt: skip
    got = ours("resolve", *packets, "--answers", str(mixed))
    assert got.exit_code == 2 and f"{mixed}:1: reviewer {first['reviewer']}: answer 1" in got.output
    (tmp / "not-a-packet.json").write_text('{"document": "x", "schema": {}, "candidates": []}')
    got = ours("tasks", str(tmp / "not-a-packet.json"))
    assert got.exit_code == 2 and "not-a-packet.json: invalid packet" in got.output
