"""The review store over a run driven in this process (real Redis, a local output folder):
tasks made from the run's stored admission receipts are groundgate's tasks of the same
packets; answers are objects of their own, kept whoever answers; a reprocessing run with the
same receipts lists the same tasks and sees their answers; resolutions are stored under
their keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.review.formats import DEFAULT_REVIEW_POLICY, json_key
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.store import (
    ReviewUnavailable,
    RunReview,
    UnknownTask,
    answers_prefix,
    history_prefix,
    resolution_object,
    task_state,
)
from groundswell.shared.review.tasks import make_tasks
from groundswell.shared.settings import ApiKey, Settings
from tests.shared.runs.driving import drive


def drive_run(settings: Settings, corpus: str = str(SAMPLE_CORPUS), policy: str = "default"):
    """A run through the pipeline's own operations, its tasks sent to a list and run here."""
    from groundswell.shared.runs.models import RunSpec

    service, record, _ = drive(settings, RunSpec(corpus=corpus, policy=policy))
    return service, record


def answer(task: str, reviewer: str, verdict: str, decision=None, second: int = 0) -> dict:
    return {
        "format": "answer@1",
        "task": task,
        "reviewer": reviewer,
        "verdict": verdict,
        "decision": decision,
        "candidate": None,
        "codes_kept": [],
        "statements": None,
        "nodes": None,
        "reason_seen": True,
        "keys": 1,
        "ms": 1000 + second,
        "time": f"2026-11-30T12:00:{second:02d}Z",
    }


@pytest.fixture
def settings(redis_server, tmp_path) -> Settings:
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    return Settings(broker_url=redis_server.url, storage_url=str(tmp_path / "out"))


def test_tasks_answers_and_resolutions_of_a_stored_run(settings):
    service, record = drive_run(settings)
    review = RunReview(service, record)
    manifest = review.manifest()
    rows = [row for _, row in review.store.rows(manifest)]
    assert manifest["tasks"] == len(rows) > 5 and manifest["policy"] == DEFAULT_REVIEW_POLICY
    assert manifest["policy_ref"] == "default@1"

    # Each packet's tasks are groundgate's tasks of the packet (shared/review, tested equal to
    # groundgate's), and each is stored under its key.
    first_doc = rows[0]["doc_id"]
    packet = review.packet(first_doc, rows[0]["receipt"])
    assert isinstance(packet, ReviewPacket) and packet.key == rows[0]["packet"]
    expected = make_tasks(packet, DEFAULT_REVIEW_POLICY)
    assert [r["task"] for r in rows if r["doc_id"] == first_doc] == [
        json_key("task@1", t) for t in expected
    ]
    stored = review.store.task(rows[0]["task"])
    assert stored["task"] == expected[0] and stored["origin"]["run"] == record.id
    with pytest.raises(UnknownTask):
        review.store.task("sha256:" + "0" * 64)

    # Pages: cursors continue where the last page stopped; filters by document, field, code.
    page = review.store.page(manifest, 0, 3, {})
    assert len(page.rows) == 3 and page.cursor == "3"
    rest = review.store.page(manifest, int(page.cursor), 1000, {})
    assert [r["task"] for r in page.rows + rest.rows] == [r["task"] for r in rows]
    assert rest.cursor is None
    code = rows[-1]["codes"][0]
    coded = review.store.page(manifest, 0, 1000, {"code": code}).rows
    assert coded and all(code in r["codes"] for r in coded)
    assert len(coded) == sum(code in r["codes"] for r in rows)
    by_doc = review.store.page(manifest, 0, 1000, {"doc_id": first_doc, "field": rows[0]["field"]})
    assert {r["doc_id"] for r in by_doc.rows} == {first_doc}

    # Two reviewers disagree: both answers are kept, the task is disputed, not overwritten.
    one = next(r for r in rows if r["mode"] == "review")
    choices = [c["decision"] for c in review.store.task(one["task"])["task"]["choices"]]
    verdicts = [("confirm", None)] if len(choices) == 1 else [("choose", choices[0])]
    verdict, decision = verdicts[0]
    review.store.add_answer(answer(one["task"], "ann", verdict, decision, 1))
    assert task_state(review.store.answers(one["task"])) == "answered"
    review.store.add_answer(answer(one["task"], "bob", "not_in_document", None, 2))
    shown = review.task(one["task"])
    assert [a["reviewer"] for a in shown["answers"]] == ["ann", "bob"]
    assert shown["state"] == "disputed"
    keys = [i.key for p in review.output.list_pages(history_prefix(one["task"])) for i in p]
    assert len(keys) == 2
    disputed = review.store.page(manifest, 0, 1000, {}, state="disputed").rows
    assert [r["task"] for r in disputed] == [one["task"]]
    assert len(review.store.page(manifest, 0, 1000, {}, state="unanswered").rows) == len(rows) - 1

    # The resolution: the disputed slot is disputed; stored under its key beside the receipts.
    body = review.resolve(datetime(2026, 11, 30, 13, tzinfo=UTC))
    entry = next(e for e in body["packets"] if e["packet"] == one["packet"])
    resolution = json.loads(review.output.get(resolution_object(entry["resolution"])))
    assert json_key("resolution@1", resolution) == entry["resolution"]
    slot = next(s for s in resolution["slots"] if s["task"] == one["task"])
    assert slot["status"] == "disputed" and body["statuses"]["disputed"] == 1
    assert sorted(h["reviewer"] for h in resolution["answers"]) == ["ann", "bob"]
    assert review.store.run_resolution(record.id) == body

    # Ann changes her mind: her latest answer counts, both of hers are kept.
    review.store.add_answer(answer(one["task"], "ann", "not_in_document", None, 3))
    assert task_state(review.store.answers(one["task"])) == "answered"
    again = review.resolve()
    entry = next(e for e in again["packets"] if e["packet"] == one["packet"])
    assert entry["statuses"].get("not_in_document") == 1

    measured = review.measures(now=manifest["built_at"] + 60)
    assert measured["load"]["answered"] == 1 and measured["load"]["unanswered"] == len(rows) - 1
    assert measured["load"]["open_median_age_seconds"] == 60
    assert measured["measures"]["packets"] == 1
    item = one["item"]
    assert measured["measures"]["kinds"][item]["answers"] == 2  # ann's latest, and bob's

    # A reprocessing run finds the same receipts: the same tasks, with their answers.
    _, second = drive_run(settings)
    assert second.id != record.id
    again_review = RunReview(service, service.get(second.id))
    rows2 = [row for _, row in again_review.store.rows(again_review.manifest())]
    assert [r["task"] for r in rows2] == [r["task"] for r in rows]
    assert again_review.task(one["task"])["state"] == "answered"


def test_an_unfinished_run_has_no_tasks_yet(settings):
    from groundswell.shared.runs.models import RunSpec
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import RunStore, redis_client

    service = RunService(
        settings, RunStore(redis_client(settings.state_redis_url)), lambda kind, args: None
    )
    record, _ = service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    with pytest.raises(ReviewUnavailable, match="once it has finished"):
        RunReview(service, record).manifest()


AUDIT = {
    **DEFAULT_REVIEW_POLICY,
    "audit": {"rate": "0.5", "seed": "run-review"},
    "agree": 2,
    "rejected": True,
}


def test_a_runs_tasks_are_groundgates_review_tasks_of_its_receipts(redis_server, tmp_path):
    """Under a review policy with an audit and rejected slots, the tasks stored for a run are,
    packet by packet and in order, the tasks groundgate's store makes of the same packets."""
    import redis

    from groundswell.shared.canonical import canonical_text
    from tests.shared.review.oracle import Oracle

    redis.Redis.from_url(redis_server.url).flushall()
    settings = Settings(
        broker_url=redis_server.url, storage_url=str(tmp_path / "out"), review_policy=AUDIT
    )
    service, record = drive_run(settings)
    review = RunReview(service, record)
    assert review.manifest()["policy"] == AUDIT
    listed = list(review.tasks())
    assert {task["mode"] for _, task in listed} == {"audit", "review"}
    oracle = Oracle(tmp_path / "groundgate")
    try:
        compared = 0
        units = list(review.units())  # every admission unit, with tasks or without
        assert len(units) == 9
        for doc_id, _, load in units:
            packet = load()
            assert packet is not None
            key = oracle.admit(
                {
                    "document": packet.text,
                    "schema": packet.schema,
                    "candidates": packet.candidates,
                    "policy": packet.policy,
                }
            )
            assert key == packet.key, doc_id
            theirs = [canonical_text(t) for t in oracle.tasks(key, AUDIT)]
            ours = [canonical_text(t) for r, t in listed if r["doc_id"] == doc_id]
            assert ours == theirs, doc_id
            compared += len(ours)
        assert compared == len(listed) > 10
    finally:
        oracle.close()


def test_a_new_policy_version_that_leaves_admission_alone_keeps_tasks_and_answers(settings):
    """Reprocessing under a version that changes only verification: the same admission
    receipts, so the same packets and tasks, and the answers given under the first run."""
    service, first = drive_run(settings)
    review = RunReview(service, first)
    rows = [row for _, row in review.store.rows(review.manifest())]
    review.store.add_answer(answer(rows[0]["task"], "ann", "not_in_document", None, 1))
    policy, created = service.publish_policy(
        {"name": "team", "extends": "default@1", "verify": {"accept_through": "exact"}}
    )
    assert (
        created
        and policy.admit_fingerprint == service.policies.resolve("default@1").admit_fingerprint
    )
    _, second = drive_run(settings, policy="team@1")
    again = RunReview(service, service.get(second.id))
    manifest = again.manifest()
    assert manifest["policy_ref"] == "team@1"
    assert [row["task"] for _, row in again.store.rows(manifest)] == [r["task"] for r in rows]
    assert again.task(rows[0]["task"])["state"] == "answered"
    assert again.measures()["load"]["answered"] == 1


def test_a_stored_run_s_tasks_are_read_without_redis(settings):
    """What a `review tasks RUN` command needs: the run from storage alone (no Redis)."""
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import StorageOnly

    service, record = drive_run(settings)
    offline = RunService(Settings(storage_url=settings.storage_url), StorageOnly(), None)
    stored = offline.get(record.id)
    assert stored.terminal
    made = [task for _, task in RunReview(offline, stored).tasks()]  # made from storage alone
    assert len(made) > 5
    assert [task for _, task in RunReview(service, record).tasks()] == made
    packet = RunReview(service, record).packet
    rows = [row for row, _ in RunReview(service, record).tasks()]
    assert (
        made[0]
        == make_tasks(packet(rows[0]["doc_id"], rows[0]["receipt"]), DEFAULT_REVIEW_POLICY)[0]
    )


def test_tasks_are_not_made_from_a_document_that_changed_since_the_run(settings, tmp_path):
    import shutil

    from groundswell.shared.review.store import InputsChanged

    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    service, record = drive_run(settings, str(corpus))
    doc_id, _, load = next(iter(RunReview(service, record).units()))
    assert load() is not None
    path = corpus / "documents" / f"{doc_id}.txt"
    path.write_text(path.read_text() + " changed")
    with pytest.raises(InputsChanged, match=f"documents/{doc_id}.txt: the document changed"):
        RunReview(service, record).manifest()


def test_review_tasks_run_writes_a_stored_run_s_tasks(settings, tmp_path, monkeypatch):
    """``groundswell review tasks --run RUN``: the run's tasks from storage (no broker)."""
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    service, record = drive_run(settings)
    monkeypatch.delenv("GROUNDSWELL_BROKER_URL", raising=False)
    env = {"GROUNDSWELL_STORAGE_URL": settings.storage_url, "GROUNDSWELL_BROKER_URL": ""}
    out = tmp_path / "tasks.jsonl"
    got = CliRunner().invoke(main, ["review", "tasks", "--run", record.id, "-o", str(out)], env=env)
    assert got.exit_code == 0, got.output
    lines = out.read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t for _, t in RunReview(service, record).tasks()]
    assert len(got.output.splitlines()) == len(lines) > 5  # each task's key
    both = CliRunner().invoke(main, ["review", "tasks", str(out), "--run", record.id], env=env)
    assert both.exit_code == 2 and "one of the two" in both.output
    missing = CliRunner().invoke(main, ["review", "tasks", "--run", "r-nope"], env=env)
    assert missing.exit_code == 2 and "no run r-nope" in missing.output
    positional = CliRunner().invoke(main, ["review", "tasks", record.id], env=env)
    assert positional.exit_code == 0 and positional.output == out.read_text()
    no_file = CliRunner().invoke(main, ["review", "tasks", "nope.json"], env=env)
    assert no_file.exit_code == 2 and "nope.json: no such file" in no_file.output


def test_answered_runs_reach_the_gauges_through_reconcile(settings):
    """Answering marks the run; the periodic reconcile computes its numbers from storage and
    keeps them per corpus and policy version, where the API's collector reads them. An older
    run's numbers never replace a newer run's."""
    from groundswell.api.routes.metrics import review_families
    from groundswell.shared import upkeep
    from groundswell.shared.metrics import corpus_label

    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    assert upkeep.reconcile(service)["reviews"] == 0  # nothing answered: nothing refreshed
    assert service.runs.review_latest() == {}
    one = next(r for r in rows if r["mode"] == "review")
    review.store.add_answer(answer(one["task"], "ann", "not_in_document", None, 1))
    service.runs.mark_reviewed(record.id)
    service.runs.mark_reviewed(record.id)  # marked twice, refreshed once
    assert upkeep.reconcile(service)["reviews"] == 1
    assert upkeep.reconcile(service)["reviews"] == 0
    numbers = service.runs.review_latest()[(record.corpus, "default@1")]
    assert numbers["run_id"] == record.id and numbers["reviewers"] == 1
    assert numbers["tasks"] == {"unanswered": len(rows) - 1, "answered": 1, "disputed": 0}
    assert numbers["open_median_age_seconds"] >= 0
    service.runs.set_review_latest(record.corpus, "default@1", "19990101T000000Z-0", numbers)
    assert service.runs.review_latest()[(record.corpus, "default@1")]["run_id"] == record.id

    families = {f.name: f.samples for f in review_families(service.runs.review_latest())}
    labels = {"corpus": corpus_label(record.corpus), "policy": "default", "version": "1"}
    by_state = {s.labels["state"]: s.value for s in families["groundswell_review_tasks"]}
    assert by_state == {"unanswered": len(rows) - 1, "answered": 1, "disputed": 0}
    assert all(s.labels.items() >= labels.items() for s in families["groundswell_review_tasks"])
    (reviewers,) = families["groundswell_review_reviewers"]
    assert reviewers.value == 1 and reviewers.labels == labels


def test_review_resolve_and_measures_of_a_run_from_the_command_line(settings, tmp_path):
    """``review resolve --run RUN --answers FILE``: a team's answers (answer@1 records or a
    groundgate answer log) are checked against their stored tasks, stored once (a second
    import adds nothing), and the run is resolved; a bad answer exits 2 naming its file and
    line and stores nothing. ``review measures --run RUN`` counts them."""
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    one = next(r for r in rows if r["mode"] == "review")
    env = {"GROUNDSWELL_STORAGE_URL": settings.storage_url, "GROUNDSWELL_BROKER_URL": ""}
    cli = CliRunner()

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**answer(one["task"], "ann", "maybe"), "verdict": "maybe"}) + "\n")
    got = cli.invoke(
        main, ["review", "resolve", "--run", record.id, "--answers", str(bad)], env=env
    )
    assert got.exit_code == 2 and f"{bad}:1: verdict:" in got.output, got.output
    assert review.store.answers(one["task"]) == []
    # A stored answer is named by its time: only a UTC time is one.
    for time in ("2026-11-30/../../elsewhere", "yesterday"):
        odd = tmp_path / "odd.jsonl"
        odd.write_text(json.dumps({**answer(one["task"], "ann", "unsure"), "time": time}) + "\n")
        args = ["review", "resolve", record.id, str(odd)]
        got = cli.invoke(main, args, env=env)
        assert got.exit_code == 2 and f"{odd}:1: time: not a UTC time" in got.output, got.output
        assert review.store.answers(one["task"]) == []

    good = tmp_path / "answers.jsonl"
    good.write_text(json.dumps(answer(one["task"], "ann", "not_in_document", None, 3)) + "\n")
    out = tmp_path / "resolutions.jsonl"
    args = ["review", "resolve", record.id, str(good), "-o", str(out)]  # the form
    got = cli.invoke(main, args, env=env)
    assert got.exit_code == 0, got.output
    assert "answers: 1 stored, 0 stored before" in got.output
    assert [a["reviewer"] for a in review.store.answers(one["task"])] == ["ann"]
    resolutions = [json.loads(x) for x in out.read_text().splitlines()]
    slot = next(s for r in resolutions for s in r["slots"] if s["task"] == one["task"])
    assert slot["status"] == "not_in_document"
    again = cli.invoke(main, args, env=env)
    assert "answers: 0 stored, 1 stored before" in again.output
    assert len(review.store.answers(one["task"])) == 1

    measured = cli.invoke(main, ["review", "measures", "--run", record.id, "--json"], env=env)
    assert measured.exit_code == 0, measured.output
    body = json.loads(measured.output)
    assert body["load"]["answered"] == 1 and body["load"]["unanswered"] == len(rows) - 1
    words = cli.invoke(main, ["review", "measures", record.id], env=env)
    assert f"tasks: {len(rows)}, answered 1, disputed 0" in words.output
    assert cli.invoke(main, ["review", "measures"], env=env).exit_code == 2


def test_a_task_is_found_from_its_document_and_the_queue_steps_from_it(settings, monkeypatch):
    """The run's task list is read a piece at a time: a task's row is found by bisecting
    the pieces by document, and a step to the next or previous task reads only the rows
    between them (bounded by STEP_SCAN)."""
    import groundswell.shared.review.store as store_module
    from groundswell.api.routes import review_page

    monkeypatch.setattr(store_module, "PIECE_ROWS", 2)
    service, record = drive_run(settings)
    review = RunReview(service, record)
    manifest = review.manifest()
    rows = [row for _, row in review.store.rows(manifest)]
    assert len(manifest["pieces"]) >= 4
    reads: list[str] = []
    get = review.store.store.get
    monkeypatch.setattr(review.store.store, "get", lambda key: reads.append(key) or get(key))
    for n, row in enumerate(rows):
        reads.clear()
        assert review.store.row_of(manifest, row["doc_id"], row["task"]) == n
        assert len(reads) <= len(manifest["pieces"]).bit_length() + 2
    assert review.store.row_of(manifest, rows[0]["doc_id"], "sha256:" + "0" * 64) is None

    # A key of every corpus: the steps pass through the run's own visibility check.
    ANYONE = ApiKey("anyone", "", frozenset({"review"}))

    def step(at: str, to: str, **filters) -> str | None:
        return review_page._neighbour(service, record.id, filters, None, at, to, ANYONE)

    keys = [r["task"] for r in rows]
    assert [step(k, "next") for k in keys] == [*keys[1:], None]
    assert [step(k, "prev") for k in keys] == [None, *keys[:-1]]
    code = rows[-1]["codes"][0]
    coded = [r["task"] for r in rows if code in r["codes"]]
    assert step(keys[0], "next", code=code) == next(k for k in coded if k != keys[0])
    monkeypatch.setattr(review_page, "STEP_SCAN", 1)
    far = next(i for i, r in enumerate(rows[1:], 1) if code in r["codes"])
    assert step(keys[0], "next", code=code) == (keys[far] if far == 1 else None)


def _counting(store, monkeypatch) -> dict[str, int]:
    """Count the reads (get, head, exists, listing pages) of ``store``."""
    calls = {"reads": 0}
    for name in ("get", "head", "exists", "list_pages"):
        real = getattr(store, name)

        def wrapped(*args, _real=real, **kwargs):
            calls["reads"] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(store, name, wrapped)
    return calls


def test_a_reviewer_past_the_cap_is_refused_and_a_later_reviewer_still_counts(settings):
    """One reviewer may give a task at most ``review_max_answers`` answers: past them the
    store refuses (nothing is stored, nothing ignored); another reviewer's answer after many
    still counts in the latest answers, the state, the resolution and the measures."""
    from groundswell.shared.review.store import TooManyAnswers

    settings = settings.model_copy(update={"review_max_answers": 5})
    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    one = next(r for r in rows if r["mode"] == "review")
    for n in range(5):
        review.store.add_answer(answer(one["task"], "ann", "unsure", None, n))
    with pytest.raises(TooManyAnswers, match="ann has given 5 answers to task sha256:"):
        review.store.add_answer(answer(one["task"], "ann", "unsure", None, 9))
    assert review.store.answer_count(one["task"], "ann") == 5
    review.store.add_answer(answer(one["task"], "bob", "not_in_document", None, 10))
    shown = review.task(one["task"])
    assert set(shown["latest"]) == {"ann", "bob"} and shown["state"] == "answered"
    assert shown["latest"]["bob"]["verdict"] == "not_in_document"
    body = review.resolve()
    entry = next(e for e in body["packets"] if e["packet"] == one["packet"])
    assert entry["statuses"].get("not_in_document") == 1
    measured = review.measures()
    assert measured["load"]["reviewers"] == 2 and measured["load"]["answered"] == 1
    # Each reviewer's history is kept, page by page, in the order it was given.
    page = review.store.history(one["task"], "ann", None, 2)
    assert [a["ms"] for a in page.rows] == [1000, 1001] and page.cursor is not None
    rest = review.store.history(one["task"], "ann", page.cursor, 10)
    assert [a["ms"] for a in rest.rows] == [1002, 1003, 1004] and rest.cursor is None


def test_the_reads_of_an_answer_do_not_grow_with_the_answers(settings, monkeypatch):
    """Storing an answer and reading a task's answers read as many objects after 60 answers
    as after 2: one current answer per reviewer, never the history."""
    settings = settings.model_copy(update={"review_max_answers": 100})
    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    task = rows[0]["task"]
    calls = _counting(review.store.store, monkeypatch)
    costs = []
    for n in range(60):
        calls["reads"] = 0
        review.store.add_answer(answer(task, "ann" if n % 2 else "bob", "unsure", None, n % 60))
        review.store.answers(task)
        costs.append(calls["reads"])
    assert len(set(costs[2:])) == 1, costs
    assert len(review.store.answers(task)) == 2


def test_answers_in_the_layout_before_are_moved_on_read(settings):
    """Answers stored one object each (``review/answers/<h>/<stamp>-<id>.json``, before issue
    25) are read as before, moved once into the current answers and histories, and a second
    import of them adds nothing."""
    from groundswell.shared.canonical import canonical_text

    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    task = rows[0]["task"]
    old = [answer(task, "ann", "unsure", None, s) for s in (1, 2, 3)]
    old.append(answer(task, "bob", "not_in_document", None, 4))
    for n, a in enumerate(old):
        key = f"{answers_prefix(task)}20261130T12000{n}000000Z-{n:032x}.json"
        review.output.put(key, canonical_text(a).encode())
    shown = review.task(task)
    assert shown["latest"] == {"ann": old[2], "bob": old[3]}
    assert [a["ms"] for a in review.store.history(task, "ann", None, 10).rows] == [1001, 1002, 1003]
    assert list(review.output.list_pages(answers_prefix(task))) == []  # moved
    assert review.store.answer_count(task, "ann") == 3
    assert review.task(task)["latest"] == shown["latest"]
    assert task in review.store.answered()
    assert review.store.import_answer(old[0]) is False
    assert review.store.answer_count(task, "ann") == 3


def test_an_import_past_the_cap_names_its_file_and_line(settings, tmp_path):
    """``review resolve RUN FILE`` stores a file's answers as the API does: one past the
    answers a reviewer may give a task exits 2 naming the file and line."""
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    service, record = drive_run(settings)
    review = RunReview(service, record)
    task = next(row for _, row in review.store.rows(review.manifest()))["task"]
    env = {
        "GROUNDSWELL_STORAGE_URL": settings.storage_url,
        "GROUNDSWELL_BROKER_URL": "",
        "GROUNDSWELL_REVIEW_MAX_ANSWERS": "2",
    }
    given = tmp_path / "answers.jsonl"
    given.write_text(
        "".join(json.dumps(answer(task, "ann", "unsure", None, s)) + "\n" for s in (1, 2, 3))
    )
    got = CliRunner().invoke(main, ["review", "resolve", record.id, str(given)], env=env)
    assert got.exit_code == 2, got.output
    assert f"{given}:3: ann has given 2 answers to task {task}" in got.output
    assert review.store.answer_count(task, "ann") == 2


def test_one_reviewer_answering_at_once_from_many_places_stops_at_the_cap(settings):
    """Ten answers of one reviewer at the same moment with room for four: four are stored
    (each under a number of its own), six refused, and the current answer counts four."""
    import threading

    from groundswell.shared.review.store import ReviewStore, TooManyAnswers

    service, record = drive_run(settings)
    review = RunReview(service, record)
    task = next(row for _, row in review.store.rows(review.manifest()))["task"]
    barrier = threading.Barrier(10)
    outcomes: list[str] = []

    def give(n: int) -> None:
        store = ReviewStore(review.output, max_answers=4)
        barrier.wait()
        try:
            store.add_answer(answer(task, "ann", "unsure", None, n))
            outcomes.append("stored")
        except TooManyAnswers:
            outcomes.append("refused")

    threads = [threading.Thread(target=give, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 6 + ["stored"] * 4
    history = review.store.history(task, "ann", None, 50).rows
    assert len(history) == 4 and review.store.answer_count(task, "ann") == 4
    assert review.store.answers(task)[0] in history
