"""The review API on a real uvicorn over a real Redis and moto's S3: tasks of a finished run
listed and paged with filters, answers from the key's reviewer (and refused naming the member
when they break their task), two reviewers answering one task at the same moment both kept
and shown disputed, measures and the stored resolution; scopes keep reviewers and runners to
their routes."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import Settings, hash_api_key
from tests.conftest import API_KEY, running_api
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

RITA, SAM, OPS = "gs_rita_reviews", "gs_sam_reviews", "gs_ops_runs"


@pytest.fixture
def review_api(service_settings, output_bucket, tmp_path, redis_server):
    yield from _review_api(service_settings, output_bucket, tmp_path, redis_server)


@pytest.fixture
def capped_review_api(service_settings, output_bucket, tmp_path, redis_server):
    """The review API where one reviewer may give one task at most three answers."""
    values = {**service_settings, "review_max_answers": 3}
    yield from _review_api(values, output_bucket, tmp_path, redis_server)


def _review_api(service_settings, output_bucket, tmp_path, redis_server):
    values = {
        **service_settings,
        "storage_url": f"s3://{output_bucket}/out",
        "api_key_hashes": ",".join(
            [
                hash_api_key(API_KEY),
                f"rita:review:{hash_api_key(RITA)}",
                f"sam:review:{hash_api_key(SAM)}",
                f"ops:runs:{hash_api_key(OPS)}",
            ]
        ),
    }
    _, record = drive_run(Settings(**values))
    assert record.state == "succeeded", record.state
    with running_api(values, tmp_path) as url:
        yield url, record.id, redis_server.url


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60)


def _all_tasks(client: httpx.Client, run_id: str, **params) -> list[dict]:
    items, cursor = [], None
    while True:
        query = {"run": run_id, "limit": 2, **params}
        if cursor is not None:
            query["cursor"] = cursor
        page = client.get("/v1/review/tasks", params=query)
        assert page.status_code == 200, page.text
        items += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return items


def _correction(admin: httpx.Client, rita: httpx.Client, run_id: str, row: dict) -> dict:
    """A correction of the task of ``row``: its slot's first candidate under a new id."""
    unit = admin.get(f"/v1/runs/{run_id}/documents/{row['doc_id']}/receipts")
    decisions = unit.json()["admit"]["receipt"]["decisions"]
    task = rita.get(f"/v1/review/tasks/{row['task']}").json()["task"]
    wanted = decisions[task["slot"]["decisions"][0]]["candidate_id"]
    candidates = json.loads((SAMPLE_CORPUS / "candidates" / f"{row['doc_id']}.json").read_text())
    original = next(c for c in candidates if c["id"] == wanted)
    fix = {**original, "id": "fix-rita-1", "proposer": "person:rita"}
    return {"verdict": "correct", "candidate": fix, "codes_kept": task["codes"]}


def test_review_over_the_api(review_api):
    url, run_id, redis_url = review_api
    rita, sam, ops = _client(url, RITA), _client(url, SAM), _client(url, OPS)

    # Scopes: a runs key reviews nothing and publishes no policy, a review key reads no runs,
    # and a digest alone (the old form) may do everything.
    refused = ops.get("/v1/review/tasks", params={"run": run_id})
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "the API key 'ops' has the scopes runs; this route needs the scope 'review' (or admin)"
    )
    assert ops.post(f"/v1/runs/{run_id}/review/resolve").status_code == 403
    assert ops.get(f"/v1/runs/{run_id}").status_code == 200
    assert ops.get("/v1/policies").status_code == 200
    publish = ops.post("/v1/policies", json={"name": "scoped", "extends": "default@1"})
    assert publish.status_code == 403 and "needs the scope 'admin'" in publish.json()["detail"]
    assert rita.get(f"/v1/runs/{run_id}").status_code == 403
    assert "needs the scope 'runs'" in rita.get("/v1/policies").json()["detail"]
    admin = _client(url, API_KEY)
    assert admin.get(f"/v1/runs/{run_id}").status_code == 200
    assert admin.get("/v1/review/tasks", params={"run": run_id}).status_code == 200
    wrong = _client(url, "gs_nobody").get(f"/v1/runs/{run_id}")
    assert wrong.status_code == 403 and wrong.json()["detail"] == "invalid API key"

    # The tasks, paged by cursor; filters by code, document and policy version.
    first = rita.get("/v1/review/tasks", params={"run": run_id, "limit": 3}).json()
    assert first["policy"] == "default@1" and len(first["items"]) == 3
    assert first["next_cursor"] == "3"
    tasks = _all_tasks(rita, run_id)
    assert len(tasks) == first["tasks"] > 5
    assert all(t["state"] == "unanswered" for t in tasks)
    code = tasks[0]["codes"][0]
    assert _all_tasks(rita, run_id, code=code) == [t for t in tasks if code in t["codes"]]
    doc = tasks[-1]["doc_id"]
    assert _all_tasks(rita, run_id, document=doc) == [t for t in tasks if t["doc_id"] == doc]
    assert len(_all_tasks(rita, run_id, policy="default")) == len(tasks)
    assert _all_tasks(rita, run_id, policy="strict@1") == []
    assert rita.get("/v1/review/tasks", params={"run": "nope"}).status_code == 404
    # Without a run: the latest finished run under a policy version.
    latest = rita.get("/v1/review/tasks", params={"policy": "default@latest", "limit": 3}).json()
    assert latest["run"] == run_id and latest["items"] == first["items"]
    none = rita.get("/v1/review/tasks", params={"policy": "strict"})
    assert none.status_code == 404 and none.json()["detail"] == "no finished run under strict@1"
    neither = rita.get("/v1/review/tasks")
    assert neither.status_code == 422 and neither.json()["detail"].startswith("run: give a run")
    bad_state = rita.get("/v1/review/tasks", params={"run": run_id, "state": "done"})
    assert bad_state.status_code == 422 and "state" in bad_state.json()["detail"]

    # One task with its answers; unknown keys are 404.
    one = next(t for t in tasks if t["mode"] == "review")
    shown = rita.get(f"/v1/review/tasks/{one['task']}").json()
    assert shown["task"]["format"] == "task@1" and shown["answers"] == []
    assert shown["origin"] == {"run": run_id, "doc_id": one["doc_id"], "receipt": one["receipt"]}
    assert rita.get("/v1/review/tasks/sha256:" + "0" * 64).status_code == 404
    assert rita.get("/v1/review/tasks/nope").status_code == 404
    missing = rita.post(
        "/v1/review/tasks/sha256:" + "1" * 64 + "/answers", json={"verdict": "unsure"}
    )
    assert missing.status_code == 404

    # Bad answers: 422 naming the member; the reviewer and time are the server's.
    path = f"/v1/review/tasks/{one['task']}/answers"
    forged = rita.post(path, json={"verdict": "unsure", "reviewer": "sam"})
    assert forged.status_code == 422 and forged.json()["detail"].startswith("reviewer: set by")
    wrong_choice = rita.post(path, json={"verdict": "choose", "decision": 999})
    assert wrong_choice.status_code == 422
    assert wrong_choice.json()["detail"].startswith("decision: not a choice of the task")
    verdict = rita.post(path, json={"verdict": "maybe"})
    assert verdict.status_code == 422 and verdict.json()["detail"].startswith("verdict:")
    assert rita.get(f"/v1/review/tasks/{one['task']}").json()["answers"] == []

    # Two reviewers answer the task at the same moment: both are kept, the task is disputed.
    choices = [c["decision"] for c in shown["task"]["choices"]]
    agree = (
        {"verdict": "confirm"}
        if len(choices) == 1
        else {"verdict": "choose", "decision": choices[0]}
    )
    bodies = {"rita": (rita, agree), "sam": (sam, {"verdict": "not_in_document", "ms": 900})}
    barrier = threading.Barrier(len(bodies))
    results: dict[str, httpx.Response] = {}

    def send(name: str) -> None:
        client, body = bodies[name]
        barrier.wait()
        results[name] = client.post(path, json=body)

    threads = [threading.Thread(target=send, args=(name,)) for name in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {n: r.status_code for n, r in results.items()} == {"rita": 201, "sam": 201}
    assert results["rita"].json()["answer"]["reviewer"] == "rita"
    assert results["sam"].json()["answer"]["time"].endswith("Z")
    after = rita.get(f"/v1/review/tasks/{one['task']}").json()
    assert sorted(a["reviewer"] for a in after["answers"]) == ["rita", "sam"]
    assert after["state"] == "disputed" and set(after["latest"]) == {"rita", "sam"}
    disputed = _all_tasks(rita, run_id, state="disputed")
    assert [t["task"] for t in disputed] == [one["task"]]
    assert len(_all_tasks(rita, run_id, state="unanswered")) == len(tasks) - 1

    # A correction is admitted again with the packet's other candidates: the reviewer's
    # candidate (a person's) is stored as given; a model's is refused naming the member.
    other = next(t for t in tasks if t["task"] != one["task"] and t["mode"] == "review")
    correction = _correction(admin, rita, run_id, other)
    fix = correction["candidate"]
    model = rita.post(
        f"/v1/review/tasks/{other['task']}/answers",
        json={**correction, "candidate": {**fix, "proposer": "model:x"}},
    )
    assert model.status_code == 422
    assert model.json()["detail"].startswith("candidate.proposer: the proposer is the API key's")
    made = rita.post(f"/v1/review/tasks/{other['task']}/answers", json=correction)
    assert made.status_code == 201, made.text
    assert made.json()["answer"]["candidate"] == fix and made.json()["state"] == "answered"

    # Measures and the resolution.
    measured = rita.get(f"/v1/runs/{run_id}/review/measures").json()
    assert measured["load"]["disputed"] == 1 and measured["load"]["reviewers"] == 2
    assert measured["load"]["answered"] == 1
    assert measured["load"]["unanswered"] == len(tasks) - 2
    assert measured["measures"]["packets"] == len({one["packet"], other["packet"]})
    assert sum(k["answers"] for k in measured["measures"]["kinds"].values()) == 3
    # ... and kept for the gauges, per policy version (no run id among the labels).
    from prometheus_client.parser import text_string_to_metric_families

    scraped = httpx.get(f"{url}/metrics", timeout=60).text
    family = next(
        f for f in text_string_to_metric_families(scraped) if f.name == "groundswell_review_tasks"
    )
    by_state = {s.labels["state"]: s.value for s in family.samples}
    assert by_state == {"unanswered": len(tasks) - 2, "answered": 1, "disputed": 1}
    assert {s.labels["policy"] + "@" + s.labels["version"] for s in family.samples} == {"default@1"}
    assert rita.get(f"/v1/runs/{run_id}/review/resolution").status_code == 404
    resolved = sam.post(f"/v1/runs/{run_id}/review/resolve")
    assert resolved.status_code == 200, resolved.text
    body = resolved.json()
    assert body["statuses"]["disputed"] == 1 and body["skipped"] == []
    assert rita.get(f"/v1/runs/{run_id}/review/resolution").json() == body

    # Redis lost: tasks, answers and the resolution are in object storage, and stay.
    import redis

    redis.Redis.from_url(redis_url).flushall()
    kept = rita.get(f"/v1/review/tasks/{one['task']}").json()
    assert sorted(a["reviewer"] for a in kept["answers"]) == ["rita", "sam"]
    assert [t["task"] for t in _all_tasks(rita, run_id, state="disputed")] == [one["task"]]
    assert rita.get(f"/v1/runs/{run_id}/review/resolution").json() == body


def test_misspelled_filters_are_refused_naming_what_exists(review_api):
    url, run_id, _ = review_api
    admin = _client(url, API_KEY)
    tasks = admin.get("/v1/review/tasks", params={"run": run_id, "code": "SCALEWORD"})
    assert tasks.status_code == 422, tasks.text
    detail = tasks.json()["detail"]
    assert "unknown code 'SCALEWORD' (did you mean SCALE_WORD?)" in detail
    assert "REQUIRED_FIELD_MISSING" in detail and "VALUE_NOT_IN_COLUMN" in detail  # a guard's
    for name, wrong, known in (
        ("verdict", "grouned", "grounded_loose"),
        ("outcome", "admited", "needs_verification"),
        ("code", "SCALEWORD", "SCALE_WORD"),
    ):
        report = admin.get(f"/v1/runs/{run_id}/report", params={name: wrong})
        assert report.status_code == 422, report.text
        assert f"unknown {name} '{wrong}'" in report.json()["detail"] and known in report.text
    # Known codes still filter, the coverage code too (its tasks have no decision).
    missing = admin.get(
        "/v1/review/tasks", params={"run": run_id, "code": "REQUIRED_FIELD_MISSING"}
    )
    assert missing.status_code == 200, missing.text
    ok = admin.get(f"/v1/runs/{run_id}/report", params={"code": "SCALE_WORD"})
    assert ok.status_code == 200


def test_answers_past_the_cap_are_refused_and_a_later_reviewer_counts(capped_review_api):
    """Issue 25, item 2: one reviewer's answers to a task stop at the cap with a 409 (never
    a 201 that is then ignored); another reviewer's answer after them counts in the latest
    answers, the state, the resolution and the measures; each reviewer's history is paged."""
    url, run_id, _ = capped_review_api
    rita, sam = _client(url, RITA), _client(url, SAM)
    tasks = _all_tasks(rita, run_id)
    one = next(t for t in tasks if t["mode"] == "review")
    path = f"/v1/review/tasks/{one['task']}/answers"
    for ms in (1, 2, 3):
        assert rita.post(path, json={"verdict": "unsure", "ms": ms}).status_code == 201
    refused = rita.post(path, json={"verdict": "unsure", "ms": 4})
    assert refused.status_code == 409, refused.text
    assert refused.json()["detail"].startswith(f"rita has given 3 answers to task {one['task']}")
    made = sam.post(path, json={"verdict": "not_in_document"})
    assert made.status_code == 201 and made.json()["answers"] == 4
    shown = rita.get(f"/v1/review/tasks/{one['task']}").json()
    assert set(shown["latest"]) == {"rita", "sam"} and shown["state"] == "answered"
    assert shown["latest"]["rita"]["ms"] == 3
    assert shown["counts"] == {"rita": 3, "sam": 1}
    resolved = sam.post(f"/v1/runs/{run_id}/review/resolve").json()
    entry = next(e for e in resolved["packets"] if e["packet"] == one["packet"])
    assert entry["statuses"].get("not_in_document") == 1
    measured = rita.get(f"/v1/runs/{run_id}/review/measures").json()
    assert measured["load"]["reviewers"] == 2 and measured["load"]["answered"] == 1

    # The history, paged: each reviewer's answers in the order given, nothing lost.
    first = rita.get(path, params={"reviewer": "rita", "limit": 2}).json()
    assert [a["ms"] for a in first["items"]] == [1, 2] and first["next_cursor"]
    rest = rita.get(path, params={"reviewer": "rita", "cursor": first["next_cursor"]}).json()
    assert [a["ms"] for a in rest["items"]] == [3] and rest["next_cursor"] is None
    every = rita.get(path).json()["items"]
    assert sorted((a["reviewer"], a["ms"]) for a in every) == [
        ("rita", 1),
        ("rita", 2),
        ("rita", 3),
        ("sam", 0),
    ]
    for bad in ({"cursor": "../../x"}, {"limit": 0}, {"reviewer": "x" * 300}):
        assert rita.get(path, params=bad).status_code == 422, bad
    assert rita.get("/v1/review/tasks/sha256:" + "2" * 64 + "/answers").status_code == 404


def test_a_correction_is_bounded_and_proposed_by_the_key(capped_review_api):
    """Issue 25, low item: a correction's candidate has the members of a candidate and a
    bounded size (not 950 KB of anything), and its proposer is the key's name: one naming
    someone else is refused, an answer without one is given the key's."""
    url, run_id, _ = capped_review_api
    rita, admin = _client(url, RITA), _client(url, API_KEY)
    tasks = _all_tasks(rita, run_id)
    row = next(t for t in tasks if t["mode"] == "review")
    correction = _correction(admin, rita, run_id, row)
    path = f"/v1/review/tasks/{row['task']}/answers"
    fix = correction["candidate"]

    def refused(candidate: dict) -> str:
        got = rita.post(path, json={**correction, "candidate": candidate})
        assert got.status_code == 422, got.text[:300]
        return got.json()["detail"]

    huge = refused({**fix, "evidence": {**fix["evidence"], "text": "x" * 950_000}})
    assert huge.startswith("candidate: 95"), huge
    assert "bytes of JSON, at most 16384" in huge
    blob = refused({**fix, "notes": {"a": "b" * 100}})
    assert blob.startswith("candidate.notes: Extra inputs are not permitted"), blob
    forged = refused({**fix, "proposer": "person:sam"})
    assert forged.startswith("candidate.proposer: the proposer is the API key's name"), forged
    model = refused({**fix, "proposer": "model:x"})
    assert model.startswith("candidate.proposer: the proposer is the API key's name"), model
    assert rita.get(f"/v1/review/tasks/{row['task']}").json()["answers"] == []

    anonymous = {k: v for k, v in fix.items() if k != "proposer"}
    made = rita.post(path, json={**correction, "candidate": anonymous})
    assert made.status_code == 201, made.text
    assert made.json()["answer"]["candidate"] == {**anonymous, "proposer": "person:rita"}
