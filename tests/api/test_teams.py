"""Isolation between teams (issue 25 item 8) on a real uvicorn over a real Redis: two teams'
keys, each limited to its corpus, and a key that sees every corpus. Every route with an
owned path parameter answers a team's own run, task or schedule and gives 404 for the other
team's (as for an id that does not exist, so ids leak nothing); lists, the review queue and
page, and /metrics show a team only its corpus; submitting for another team's corpus is 403.
A test over the app's routes makes sure the matrix covers every route with such a parameter."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.metrics import corpus_label
from groundswell.shared.settings import Settings, hash_api_key
from tests.conftest import API_KEY, running_api
from tests.shared.test_review_store import drive_run

ANA, BOB = "gs_ana_of_team_a", "gs_bob_of_team_b"

# (method, route template): the statuses a team's own resource may answer. Every route
# with an owned path parameter is here (test_the_matrix_covers_every_owned_route).
MATRIX: dict[tuple[str, str], set[int]] = {
    ("GET", "/v1/runs/{run_id}"): {200},
    ("POST", "/v1/runs/{run_id}/cancel"): {409},  # it already succeeded
    ("GET", "/v1/runs/{run_a}/diff/{run_b}"): {200},
    ("GET", "/v1/runs/{run_id}/report"): {200},
    ("GET", "/v1/runs/{run_id}/summary"): {200},
    ("GET", "/v1/runs/{run_id}/producers"): {200},
    ("GET", "/v1/runs/{run_id}/receipts"): {200},
    ("GET", "/v1/runs/{run_id}/documents/{doc_id}/receipts"): {200},
    ("GET", "/v1/schedules/{schedule_id}"): {200},
    ("DELETE", "/v1/schedules/{schedule_id}"): {204},
    ("GET", "/v1/review/tasks/{task_key}"): {200},
    ("POST", "/v1/review/tasks/{task_key}/answers"): {201},
    ("GET", "/v1/review/tasks/{task_key}/answers"): {200},
    ("GET", "/v1/runs/{run_id}/review/measures"): {200},
    ("POST", "/v1/runs/{run_id}/review/resolve"): {200},
    ("GET", "/v1/runs/{run_id}/review/resolution"): {200},
    ("GET", "/review/tasks/{task_key}"): {200},
    ("GET", "/v1/runs/{run_id}/gate"): {404},  # no gate configured for the corpus
    ("GET", "/v1/runs/{run_id}/hooks"): {200},
    ("POST", "/v1/runs/{run_id}/export"): {200, 202},
    ("GET", "/v1/runs/{run_id}/export"): {200, 404},
    # The sample corpus is text: its documents have no page to draw (404 either way; the
    # route still looks the run up for the key first).
    ("GET", "/v1/runs/{run_id}/documents/{doc_id}/pages/{page}.png"): {404},
    ("GET", "/review/tasks/{task_key}/pages/{page}.png"): {404},
    ("DELETE", "/v1/hooks/{hook_id}"): {204},
    ("GET", "/v1/streams/{stream_id}"): {200},
}
# Routes with a path parameter that no team owns: policies and the docs are the deployment's.
SHARED = {
    ("GET", "/v1/policies/{name}"),
    ("GET", "/v1/policies/{name}/versions/{version}"),
    ("GET", "/docs/static/{name}"),  # the API docs' own scripts and styles
}


def _all_routes(app) -> set[tuple[str, str]]:
    """(method, path template) of every route of the app, those of included routers too."""
    out = set()
    for route in app.routes:
        nested = getattr(route, "effective_route_contexts", None)
        for context in nested() if nested else [route]:
            path = getattr(context, "path", "")
            out |= {(m, path) for m in getattr(context, "methods", None) or () if m != "HEAD"}
    return out


def _route_templates(app) -> set[tuple[str, str]]:
    return {(method, path) for method, path in _all_routes(app) if "{" in path}


def test_the_matrix_covers_every_owned_route():
    from groundswell.api.main import create_app

    routes = _route_templates(create_app(Settings()))
    assert routes - SHARED == set(MATRIX), "a route with a path parameter is not in MATRIX"


@pytest.fixture
def teams(service_settings, tmp_path):
    """Two teams' corpora (copies of the sample corpus), a finished run of each, and the API
    with a key per team and one for every corpus."""
    corpora = {}
    for team in ("team-a", "team-b"):
        corpora[team] = tmp_path / "corpora" / team / "filings"
        shutil.copytree(SAMPLE_CORPUS, corpora[team])
        # Each team's own documents: review tasks are filed by their content, so two teams'
        # identical documents would share tasks.
        for doc in (corpora[team] / "documents").iterdir():
            doc.write_text(doc.read_text(encoding="utf-8") + f"\n{team}\n", encoding="utf-8")
    values = {
        **service_settings,
        # Each team also follows an S3 prefix of its own (a stream: S3 corpora only).
        "allowed_corpora": f"{tmp_path / 'corpora'},s3://teams",
        "api_key_hashes": ",".join(
            [
                hash_api_key(API_KEY),
                f"ana:runs+review:{hash_api_key(ANA)}:{tmp_path / 'corpora' / 'team-a'}|s3://teams/team-a",
                f"bob:runs+review:{hash_api_key(BOB)}:{tmp_path / 'corpora' / 'team-b'}|s3://teams/team-b",
            ]
        ),
        "api_rate_runs": "1000/minute",
    }
    runs = {}
    for team, corpus in corpora.items():
        _, record = drive_run(Settings(**values), corpus=str(corpus))
        assert record.state == "succeeded", record.state
        runs[team] = record.id
    with running_api(values, tmp_path) as url:
        yield url, corpora, runs, service_settings["broker_url"]


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60)


def _owned(client: httpx.Client, corpus: Path, run_id: str) -> dict[str, str]:
    """Values of the path parameters that this team owns: its run, a document, a task to
    review and a schedule."""
    tasks = client.get("/v1/review/tasks", params={"run": run_id, "limit": 200}).json()["items"]
    task = next(t for t in tasks if t["mode"] == "review")
    schedule = client.post(
        "/v1/schedules", json={"corpus": str(corpus), "every_seconds": 3600}
    ).json()
    hook = client.post("/v1/hooks", json={"url": "https://93.184.215.14/groundswell"})
    assert hook.status_code == 201, hook.text
    stream = client.post("/v1/streams", json={"corpus": f"s3://teams/{corpus.parent.name}/filings"})
    assert stream.status_code == 201, stream.text
    return {
        "stream_id": stream.json()["id"],
        "page": "1",
        "hook_id": hook.json()["id"],
        "run_id": run_id,
        "run_a": run_id,
        "run_b": run_id,
        "doc_id": task["doc_id"],
        "task_key": task["task"],
        "schedule_id": schedule["id"],
    }


def _call(client: httpx.Client, method: str, template: str, values: dict[str, str]):
    path = re.sub(r"{(\w+)}", lambda m: values[m.group(1)], template)
    body = {"verdict": "unsure"} if method == "POST" and path.endswith("/answers") else None
    return client.request(method, path, json=body)


def _page_or_api(api: httpx.Client, page: httpx.Client, template: str) -> httpx.Client:
    """The review page's routes take the signed-in session, the API's the key."""
    return page if template.startswith("/review/") else api


def _sign_in(url: str, key: str) -> httpx.Client:
    page = httpx.Client(base_url=url, timeout=60, follow_redirects=False)
    done = page.post("/review/sign-in", data={"key": key, "next": "/review"})
    assert done.status_code == 303, done.text
    return page


def test_each_team_sees_its_own_runs_and_nothing_of_the_other_s(teams):
    url, corpora, runs, redis_url = teams
    ana, bob, admin = _client(url, ANA), _client(url, BOB), _client(url, API_KEY)
    mine = _owned(ana, corpora["team-a"], runs["team-a"])
    theirs = _owned(bob, corpora["team-b"], runs["team-b"])

    # Every owned route: the other team's resource is 404, as an unknown id; the caller's
    # own answers as it would without teams. Deleting goes last (it removes the schedule).
    routes = sorted(MATRIX, key=lambda r: r[0] == "DELETE")
    page = _sign_in(url, ANA)
    answered = {}
    for method, template in routes:
        client = _page_or_api(ana, page, template)
        for who, values in (("mine", mine), ("theirs", theirs)):
            answered[(method, template, who)] = _call(client, method, template, values).status_code
        # A diff of the team's run against the other team's, either way round.
        if "{run_b}" in template:
            mixed = [{**mine, "run_b": theirs["run_id"]}, {**theirs, "run_b": mine["run_id"]}]
            answered[(method, template, "mixed")] = {
                _call(ana, method, template, v).status_code for v in mixed
            }.pop()
    wrong = {
        (m, t, who): code
        for (m, t, who), code in answered.items()
        if (who == "mine" and code not in MATRIX[(m, t)]) or (who != "mine" and code != 404)
    }
    assert wrong == {}, wrong
    # As an id of the same form that no run has: nothing tells the two apart.
    theirs_id = runs["team-b"]
    nobody_s = theirs_id[:-1] + ("0" if theirs_id[-1] != "0" else "1")
    unknown = ana.get(f"/v1/runs/{nobody_s}")
    assert unknown.status_code == 404
    assert ana.get(f"/v1/runs/{theirs_id}").json() == {
        "detail": unknown.json()["detail"].replace(nobody_s, theirs_id)
    }
    # The other team's task, answered by the admin key: bob's run is untouched by ana.
    assert _call(admin, "GET", "/v1/review/tasks/{task_key}", theirs).json()["answers"] == []

    # Lists: a team's runs and schedules only; the unlimited key sees both teams'.
    listed = ana.get("/v1/runs").json()
    assert [r["id"] for r in listed["items"]] == [runs["team-a"]]
    assert listed["pagination"]["total_count"] == 1
    assert {r["id"] for r in admin.get("/v1/runs").json()["items"]} == set(runs.values())
    assert bob.get("/v1/schedules").json() == {
        "items": [bob.get(f"/v1/schedules/{theirs['schedule_id']}").json()],
        "unreadable": [],
    }
    assert ana.get("/v1/schedules").json()["items"] == []  # its own was deleted above
    assert len(admin.get("/v1/schedules").json()["items"]) == 1
    # A record that is no schedule has no known corpus: a team's key does not see it.
    import redis

    from groundswell.shared.runs.schedules import PREFIX

    redis.Redis.from_url(redis_url).hset(PREFIX + "s", "s-0badf00d", b"{")
    assert ana.get("/v1/schedules").json() == {"items": [], "unreadable": []}
    assert [u["id"] for u in admin.get("/v1/schedules").json()["unreadable"]] == ["s-0badf00d"]
    assert ana.get("/v1/schedules/s-0badf00d").status_code == 404
    assert ana.delete("/v1/schedules/s-0badf00d").status_code == 404
    assert admin.delete("/v1/schedules/s-0badf00d").status_code == 204

    # The review queue: another team's run is 404, and the latest run under a policy is
    # the team's own (bob's run finished later).
    assert ana.get("/v1/review/tasks", params={"run": runs["team-b"]}).status_code == 404
    latest = ana.get("/v1/review/tasks", params={"policy": "default@latest"}).json()
    assert latest["run"] == runs["team-a"]
    assert (
        bob.get("/v1/review/tasks", params={"policy": "default@latest"}).json()["run"]
        == (runs["team-b"])
    )

    # The review page: recent runs of the team only; another team's queue and steps are not
    # there.
    queue = page.get("/review")
    assert queue.status_code == 200
    assert runs["team-a"] in queue.text and runs["team-b"] not in queue.text
    other = page.get("/review", params={"run": runs["team-b"]})
    assert other.status_code == 200 and f"no run {runs['team-b']}" in other.text
    step = page.get("/review/step", params={"run": runs["team-b"], "at": theirs["task_key"]})
    assert step.status_code == 404

    # Submitting for another team's corpus: 403 naming the key's corpora (its own request).
    for path in ("/v1/runs", "/v1/schedules"):
        body = {"corpus": str(corpora["team-b"])}
        if path == "/v1/schedules":
            body["every_seconds"] = 3600
        refused = ana.post(path, json=body)
        assert refused.status_code == 403, refused.text
        assert "is not among the corpora of the API key 'ana'" in refused.json()["detail"]
    assert ana.post("/v1/runs", json={"corpus": str(corpora["team-a"])}).status_code == 202

    # /metrics: with a team's key, the per-corpus series of its corpus only; without a key
    # (the operator's scrape) every corpus's.
    def corpora_in(text: str) -> set[str]:
        return {
            s.labels["corpus"]
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if "corpus" in s.labels
        }

    # Each team's corpus, and the S3 prefix it follows (its stream's lag).
    labels = {
        team: {corpus_label(str(c)), corpus_label(f"s3://teams/{team}/filings")}
        for team, c in corpora.items()
    }
    every = labels["team-a"] | labels["team-b"]
    assert corpora_in(httpx.get(f"{url}/metrics", timeout=60).text) == every
    assert corpora_in(ana.get("/metrics").text) == labels["team-a"]
    assert corpora_in(bob.get("/metrics").text) == labels["team-b"]
    assert corpora_in(admin.get("/metrics").text) == every
    assert "groundswell_runs_active" in ana.get("/metrics").text


def _team_ledger(tmp_path: Path, fill=None) -> Path:
    """The two teams' ledger of tests/shared/ledger/test_claim_corpus.py (``fill``: its
    ``two_teams``), in a SQLite file."""
    from groundswell.shared.ledger.store import Ledger
    from tests.shared.ledger.test_claim_corpus import two_teams

    db = tmp_path / "ledger.sqlite3"
    with Ledger.open(str(db)) as ledger:
        (fill or two_teams)(ledger, tmp_path)
    return db


def _team_app(redis_server, tmp_path: Path, db: Path):
    """The app over the ledger ``db``, with a key for every corpus, ana's (team-a) and
    bob's (team-b)."""
    from groundswell.api.main import create_app

    return create_app(
        Settings(
            broker_url=redis_server.url,
            storage_url=str(tmp_path / "out"),
            ledger_url=f"sqlite:///{db}",
            allowed_corpora=str(tmp_path),
            api_key_hashes=f"{hash_api_key(API_KEY)},"
            f"ana:runs+review:{hash_api_key(ANA)}:{tmp_path / 'team-a'},"
            f"bob:runs+review:{hash_api_key(BOB)}:{tmp_path / 'team-b'}",
        )
    )


# Every ledger route shows a team's key its corpora's claims (the review: the merges that
# move only those; test_a_team_key_reviews_only_the_merges_of_its_own_claims).
FILTERED = {"claims", "search", "history", "disagreements", "path", "state", "export", "review"}


def test_a_team_key_sees_only_its_corpora_s_claims_in_the_ledger(redis_server, tmp_path):
    """Claims carry their corpus: every ledger route shows a team's key only its corpora's
    claims (listing, search, history, disagreements, path, state, export); a key without
    corpora reads everything as before."""
    from fastapi.testclient import TestClient

    from groundswell.api.routes.ledger import close_ledgers

    app = _team_app(redis_server, tmp_path, _team_ledger(tmp_path))
    ledger_routes = {
        r[1].removeprefix("/v1/ledger/") for r in _all_routes(app) if r[1].startswith("/v1/ledger/")
    }
    assert ledger_routes == FILTERED
    try:
        with TestClient(app) as client:

            def get(key: str, route: str, **params) -> httpx.Response:
                answer = client.get(
                    f"/v1/ledger/{route}", params=params, headers={"X-API-Key": key}
                )
                assert answer.status_code == 200, (route, answer.text)
                return answer

            def claims(key: str) -> list[str]:
                return [c["claim_id"] for c in get(key, "claims").json()["items"]]

            assert claims(ANA) == ["contract:a1", "contract:a3"]
            assert claims(API_KEY) == [f"contract:{c}" for c in ("a1", "a3", "b1", "b3")]
            found = get(ANA, "search", q="acme").json()["items"]
            assert sorted(h["claim_id"] for h in found) == ["contract:a1", "contract:a3"]
            history = get(ANA, "history", document="contract", field="price").json()
            assert sorted(h["claim_id"] for h in history["items"]) == ["contract:a1", "contract:a3"]

            # Disagreements: a team's own sides only; one with fewer than two is not listed.
            def disagreements(key: str, kind: str) -> list[list[list[str]]]:
                rows = get(key, "disagreements", kind=kind).json()["items"]
                if kind == "contradiction":
                    return [[[c["claim_id"]] for c in row["sides"]] for row in rows]
                return [[[c["claim_id"] for c in s["claims"]] for s in r["sides"]] for r in rows]

            a1, a3, b1, b3 = (["contract:" + c] for c in ("a1", "a3", "b1", "b3"))
            assert disagreements(API_KEY, "contradiction") == [[a1, a3], [a1, b3]]
            assert disagreements(ANA, "contradiction") == [[a1, a3]]
            assert disagreements(BOB, "contradiction") == []
            assert disagreements(API_KEY, "objects") == [[a1, b1]]
            assert disagreements(ANA, "objects") == disagreements(BOB, "objects") == []
            assert disagreements(API_KEY, "facts") == [[a1, b1, a3]]
            assert disagreements(ANA, "facts") == [[a1, a3]]
            assert disagreements(BOB, "facts") == []
            mine = get(ANA, "disagreements", kind="facts").json()["items"][0]
            assert mine["sides_total"] == 2

            # The path search walks a team's claims only: team-b's entity is unknown to ana.
            def path(key: str, start: str, goal: str) -> dict:
                return get(key, "path", start=start, goal=goal).json()

            chain = path(API_KEY, "Beta Inc", "Gamma Holdings")
            assert [h["claim_id"] for h in chain["hops"]] == ["contract:a1", "contract:b1"]
            refused = path(ANA, "Beta Inc", "Gamma Holdings")
            assert not refused["found"] and refused["unknown"] == ["Gamma Holdings"]
            assert [h["claim_id"] for h in path(ANA, "Beta Inc", "Acme Ltd")["hops"]] == a1
            alone = path(BOB, "Beta Inc", "Gamma Holdings")  # b3 rejects: it links nothing
            assert not alone["found"] and alone["unknown"] == [], alone

            # State: the counts of a team's claims; the deployment's revision and vocabularies.
            everything, ana_s = get(API_KEY, "state").json(), get(ANA, "state").json()
            assert (everything["claims"], ana_s["claims"]) == (4, 2)
            assert ana_s["modality"] == {"assertion": 1, "rejected": 1}
            assert (everything["entities"], ana_s["entities"]) == (3, 2)
            assert ana_s["evidence"] == sum(ana_s["tier"].values()) == 2
            assert ana_s["documents"] == 1 and ana_s["revision"] == everything["revision"]
            assert ana_s["vocabularies"] == everything["vocabularies"]

            # Export: a team's claims, and only the entities they name.
            for fmt, claim_of in (("csv-edges", "contract:"), ("jsonld", "gs:claim/contract%3A")):
                text = get(ANA, "export", format=fmt).text
                assert claim_of + "a1" in text and claim_of + "a3" in text, text
                assert claim_of + "b1" not in text and claim_of + "b3" not in text
                assert "Gamma Holdings" not in text
                assert "Gamma Holdings" in get(API_KEY, "export", format=fmt).text
            nodes = get(ANA, "export", format="csv-nodes").text.splitlines()[1:]
            assert sorted(n.split(",")[1] for n in nodes) == ["Acme Ltd", "Beta Inc"]

    finally:
        close_ledgers()


def test_a_team_key_reviews_only_the_merges_of_its_own_claims(redis_server, tmp_path):
    """Entities are shared between teams: a team's key lists and answers the held merges
    whose claims are all its corpora's; answering one that moves another team's claims is a
    403 naming it (nothing written), as for a merge it does not list; a key without corpora
    lists and answers them all."""
    from fastapi.testclient import TestClient

    from groundswell.api.routes.ledger import close_ledgers
    from tests.shared.ledger.test_claim_corpus import held_merges

    ids: dict[str, str] = {}
    db = _team_ledger(tmp_path, lambda ledger, root: ids.update(held_merges(ledger, root)))
    app = _team_app(redis_server, tmp_path, db)
    own, shared = ids["Delte Corp"], ids["Acme Products"]
    try:
        with TestClient(app) as client:

            def review(key: str, *answers: str) -> httpx.Response:
                if not answers:
                    return client.get("/v1/ledger/review", headers={"X-API-Key": key})
                body = {
                    "decisions": [{"id": i, "verdict": "reject", "reason": "no"} for i in answers]
                }
                return client.post("/v1/ledger/review", json=body, headers={"X-API-Key": key})

            listed = {k: review(k).json() for k in (ANA, BOB, API_KEY)}
            assert [q["id"] for q in listed[ANA]["items"]] == [own]
            assert listed[ANA]["queue"]["open"] == 1 and listed[API_KEY]["queue"]["open"] == 2
            assert listed[BOB]["items"] == [] and listed[BOB]["queue"]["open"] == 0
            for key, answers in ((ANA, [shared]), (ANA, [own, shared]), (BOB, [own])):
                refused = review(key, *answers)
                assert refused.status_code == 403, refused.text
                assert "sees only its corpora" in refused.json()["detail"]
                assert (own if key == BOB else shared) in refused.json()["detail"]
            assert review(API_KEY).json()["queue"]["decided"] == 0  # nothing was written
            assert review(ANA, own).json()["new"] == 1
            assert review(ANA).json()["queue"] == {
                **listed[ANA]["queue"],
                "open": 0,
                "rejected": 1,
                "decided": 1,
            }
            assert review(API_KEY, shared).json()["new"] == 1
    finally:
        close_ledgers()
