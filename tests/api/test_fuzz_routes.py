"""Every route of the app, its path, query and header parameters drawn by hypothesis from
hostile values (``..``, ``%2e%2e``, huge and negative numbers, base64 cursors of JSON lists
and objects, unicode, NUL, very long strings), with an admin key and a signed-in review
session: no answer is a 5xx (issue 25, item 5).

The routes come from the app's own route table, so a new route is fuzzed without a change
here; a route with a parameter this file cannot draw (a cookie, a body without an example
below) fails, naming it. The app runs in process (FastAPI's TestClient) over a real Redis, a
local output store holding a finished run of the sample corpus (so real ids reach deep) and
a SQLite ledger; each route is tried ``EXAMPLES`` times (the total stays under a minute)."""

from __future__ import annotations

import base64
import json
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import fastapi.routing
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.api.main import create_app
from groundswell.api.routes.ledger import close_ledgers
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.review.store import RunReview
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.ledger.graphs import C, record
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

ADMIN = "gs_fuzz_admin_key"
EXAMPLES = 20

# A valid body for each route that takes one, so that its path and query parameters, not
# a missing body, decide the answer. A new route with a body needs an entry here.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/runs"): {"json": {"corpus": str(SAMPLE_CORPUS), "dry_run": True}},
    ("POST", "/v1/policies"): {"json": {"name": "fuzz", "base": "default@1"}},
    ("POST", "/v1/policies/calibrations"): {"json": {"format": "calibration@1"}},
    ("POST", "/v1/schedules"): {"json": {"corpus": str(SAMPLE_CORPUS), "every_seconds": 3600}},
    ("POST", "/v1/review/tasks/{task_key}/answers"): {"json": {"verdict": "unsure"}},
    ("POST", "/v1/ledger/review"): {"json": {"decisions": [{"id": "x", "verdict": "defer"}]}},
    ("POST", "/v1/ledger/claims"): {
        "json": {"corpus": str(SAMPLE_CORPUS), "document_id": "x", "claim": {"quote": "q"}}
    },
    ("POST", "/v1/hooks"): {"json": {"url": "https://93.184.215.14/groundswell"}},
    ("POST", "/v1/streams"): {"json": {"corpus": "s3://fuzz/corpus"}},
    ("POST", "/v1/events/s3"): {"json": {"Records": []}},
    ("POST", "/review/sign-in"): {"data": {"key": ADMIN, "next": "/review"}},
    ("POST", "/review/sign-out"): {"data": {}},
}
# Routes that end the session: tried with a client of their own.
OWN_CLIENT = {"/review/sign-in", "/review/sign-out"}


@dataclass(frozen=True)
class Param:
    where: str  # path, query or header
    name: str
    many: bool  # a query parameter given any number of times
    choices: tuple[str, ...]  # a Literal's values


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    params: tuple[Param, ...]
    body: bool

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def _choices(annotation: Any) -> tuple[str, ...]:
    """The values of a Literal, also inside ``X | None`` and ``list[X]``."""
    if typing.get_origin(annotation) is typing.Literal:
        return tuple(str(v) for v in typing.get_args(annotation))
    return tuple(c for arg in typing.get_args(annotation) for c in _choices(arg))


def _many(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (list, tuple, set) or any(
        _many(a) for a in typing.get_args(annotation)
    )


def _flat(dependant: Any, where: str) -> dict[str, Any]:
    """The parameters of one kind a route reads, its dependencies' included, by name."""
    found = {f.alias: f for f in getattr(dependant, f"{where}_params")}
    for sub in dependant.dependencies:
        found = {**_flat(sub, where), **found}
    return found


def app_routes(app) -> Iterator[Route]:
    """Every (method, route) of the app with the parameters it reads; fails on one it
    cannot draw."""
    iterate = getattr(fastapi.routing, "iter_route_contexts", None)  # FastAPI >= 0.16x
    for route in iterate(app.routes) if iterate else app.routes:
        dependant = getattr(route, "dependant", None)
        params: list[Param] = []
        body = False
        if dependant is not None:
            assert not _flat(dependant, "cookie"), f"{route.path}: cookies are not fuzzed"
            for where in ("path", "query", "header"):
                for name, field in _flat(dependant, where).items():
                    annotation = field.field_info.annotation
                    params.append(Param(where, name, _many(annotation), _choices(annotation)))
            body = bool(_flat(dependant, "body"))
        for method in sorted(route.methods or ()):
            if method == "HEAD":
                continue
            if body:
                assert (method, route.path) in BODIES, (
                    f"{method} {route.path} takes a body: add an example to BODIES"
                )
            yield Route(method, route.path, tuple(params), body)


ROUTES = list(app_routes(create_app(Settings(_env_file=None))))


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "..",
            ".",
            "../..",
            "../../../../etc/passwd",
            "%2e%2e",
            "..%2f..",
            "/",
            "\\",
            "\x00",
            "a\x00b",
            "",
            " ",
            "null",
            "[]",
            "{}",
            "-1",
            "0",
            str(2**63),
            str(-(2**63) - 1),
            str(10**30),
            "1e308",
            "NaN",
            "-Infinity",
            "x" * 10_000,
            "é\u202e\U0001f600" * 500,
            _cursor([10**30]),
            _cursor([{}, []]),
            _cursor({"k": {"a": 1}}),
            _cursor({"s": None, "o": 10**30}),
            "!!not-base64!!",
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    JSON.map(_cursor),
    st.text(max_size=40),
)
# Header values are latin-1 text without line breaks or NUL (HTTP forbids them).
HEADER = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300)


@pytest.fixture(scope="module")
def stack(redis_server, tmp_path_factory):
    """The app over a real Redis, a finished run of the sample corpus and a ledger; the
    values that name them (so a hostile value of one parameter meets real values of the
    others); a client with the admin key signed in to the review page."""
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    tmp = tmp_path_factory.mktemp("fuzz")
    db = tmp / "ledger.sqlite3"
    with Ledger.open(str(db)) as ledger:
        record(
            ledger,
            [
                C("k1", "Acme Ltd", "ACQUIRED", "Beta Inc", quote="Acme Ltd acquires Beta Inc"),
                C("k2", "Beta Inc", "OWNS", "Gamma", "reported", quote="Beta Inc owns Gamma"),
            ],
        )
    fast = "100000/second"  # the limits are tested elsewhere; here they would hide answers
    app_settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp / "out"),
        ledger_url=f"sqlite:///{db}",
        api_key_hashes=f"ada:admin:{hash_api_key(ADMIN)}",
        allowed_corpora=f"{SAMPLE_CORPUS},{tmp}",
        session_secret="fuzz-secret",
        api_rate_per_key=fast,
        api_rate_per_address=fast,
        api_rate_failed_auth=fast,
        api_rate_runs=fast,
        min_schedule_seconds=1,
    )
    service, run = drive_run(app_settings)
    review = RunReview(service, run)
    (_, row), *_ = review.store.rows(review.manifest())
    app = create_app(app_settings)
    with TestClient(app, headers={"X-API-Key": ADMIN}) as client:
        signed = client.post(
            "/review/sign-in", data={"key": ADMIN, "next": "/review"}, follow_redirects=False
        )
        assert signed.status_code == 303, signed.text
        schedule = client.post("/v1/schedules", json=BODIES[("POST", "/v1/schedules")]["json"])
        assert schedule.status_code == 201, schedule.text
        known = {
            "run_id": [run.id],
            "run_a": [run.id],
            "run_b": [run.id],
            "run": [run.id],
            "task_key": [row["task"]],
            "at": [row["task"]],
            "doc_id": [row["origin"]["doc_id"] if "origin" in row else "velmora-label"],
            "document": ["velmora-label", "d"],
            "name": ["default"],
            "version": ["1"],
            "policy": ["default@1", "default"],
            "schedule_id": [schedule.json()["id"]],
            "start": ["Acme Ltd"],
            "goal": ["Gamma"],
            "q": ["acme"],
            "field": ["total"],
            "corpus": [str(SAMPLE_CORPUS)],
        }
        with TestClient(app) as bare:
            yield client, bare, known
    close_ledgers()


def _values(param: Param, known: dict[str, list[str]]) -> st.SearchStrategy:
    if param.where == "header":
        return HEADER
    usual = [*known.get(param.name, []), *param.choices]
    one = st.one_of(st.sampled_from(usual), HOSTILE) if usual else HOSTILE
    return st.lists(one, max_size=3) if param.many else one


def _url(path: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        # Dots encoded too: ``..`` reaches the route as ``curl --path-as-is`` sends it.
        path = path.replace("{" + name + "}", quote(value, safe="").replace(".", "%2E"))
    return path


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_no_route_answers_a_hostile_parameter_with_a_5xx(stack, route: Route):
    client, bare, known = stack
    tried = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(st.fixed_dictionaries({p.name: _values(p, known) for p in route.params}))
    def attempt(drawn: dict[str, Any]) -> None:
        by = {p.name: p for p in route.params}
        path = {k: v for k, v in drawn.items() if by[k].where == "path"}
        query = {k: v for k, v in drawn.items() if by[k].where == "query"}
        headers = {k: v for k, v in drawn.items() if by[k].where == "header"}
        use = bare if route.path in OWN_CLIENT else client
        answer = use.request(
            route.method,
            _url(route.path, path),
            params=query,
            headers=headers,
            follow_redirects=False,
            **BODIES.get((route.method, route.path), {}),
        )
        tried.append(drawn)
        assert answer.status_code < 500, (str(route), drawn, answer.text[:500])

    attempt()
    print(f"{route}: {len(tried)} inputs")
    assert len(tried) >= (EXAMPLES if route.params else 1)
