"""Run hooks on real workers: a receiver in the test checks every signature, answers 500s
that are retried with backoff, and sees one delivery per event even when the worker holding
the retry is SIGKILLed and the delivery task is sent again."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import redis

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.hooks.service import deliveries
from groundswell.shared.hooks.signing import DELIVERY_HEADER, SIGNATURE_HEADER, verify
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.runs.service import DELIVER
from groundswell.shared.settings import hash_api_key
from tests.conftest import API_KEY, running_api, wait_until

pytestmark = pytest.mark.integration
SECRET = "whsec_test_receiver"


class Receiver:
    """An HTTP server on loopback: answers each request with the next status of ``plan``
    (then 200), remembers what it got and whether the signature held."""

    def __init__(self, plan: list[int]) -> None:
        self.plan = list(plan)
        self.got: list[dict] = []
        self.first = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                answer = receiver.plan.pop(0) if receiver.plan else 200
                receiver.got.append(
                    {
                        "delivery": self.headers[DELIVERY_HEADER],
                        "signed": verify(SECRET, self.headers[SIGNATURE_HEADER] or "", body),
                        "body": json.loads(body),
                        "answer": answer,
                    }
                )
                self.send_response(answer)
                self.end_headers()
                receiver.first.set()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made: list[Receiver] = []
    yield lambda plan: made.append(Receiver(plan)) or made[-1]
    for r in made:
        r.close()


def hook_env(url: str) -> dict:
    return {
        "hooks": json.dumps([{"url": url, "secret": SECRET}]),
        "hook_backoff_seconds": 0.5,
        "hook_backoff_max_seconds": 2,
        "hook_max_attempts": 5,
    }


def test_a_run_hook_is_signed_retried_after_500s_and_its_status_shown(
    pipeline, receiver, service_settings, tmp_path
):
    rx = receiver([500, 503])
    pipeline.start_worker("w1", **hook_env(rx.url))
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    summary = pipeline.wait(record.id)
    wait_until(lambda: [g for g in rx.got if g["answer"] == 200], 60, "a delivered hook")
    assert [g["answer"] for g in rx.got] == [500, 503, 200]
    assert all(g["signed"] for g in rx.got)
    assert len({g["delivery"] for g in rx.got}) == 1  # one delivery, three attempts
    body = rx.got[-1]["body"]
    assert body["type"] == "run.finished" and body["run"]["id"] == record.id
    assert body["run"]["state"] == summary["state"] and body["delivery"] == rx.got[0]["delivery"]
    assert body["rates"]["grounding_rate"] == summary["rates"]["claims_accepted"]
    (delivery,) = wait_until(
        lambda: [d for d in deliveries(pipeline.service, record.id) if d.status == "delivered"],
        30,
        "the delivery recorded",
    )
    assert delivery.attempts == 3 and delivery.last_status == 200

    values = {
        **service_settings,
        "storage_url": pipeline.values["storage_url"],
        "api_key_hashes": hash_api_key(API_KEY),
        **hook_env(rx.url),
    }
    with running_api(values, tmp_path) as url:
        headers = {"X-API-Key": API_KEY}
        shown = httpx.get(f"{url}/v1/runs/{record.id}/hooks", headers=headers).json()["items"]
        assert [(d["status"], d["attempts"], d["event"]) for d in shown] == [
            ("delivered", 3, "finished")
        ]
        assert "body" not in shown[0]
        # A key's hook may not post into the server's network (the receiver is on loopback).
        inward = httpx.post(f"{url}/v1/hooks", headers=headers, json={"url": rx.url})
        assert inward.status_code == 422 and "not a public address" in inward.text
        added = httpx.post(
            f"{url}/v1/hooks",
            headers=headers,
            json={"url": "https://93.184.215.14/hook", "format": "slack"},
        )
        assert added.status_code == 201 and added.json()["secret"].startswith("whsec_")
        listed = httpx.get(f"{url}/v1/hooks", headers=headers).json()["items"]
        assert {h["format"] for h in listed} == {"json", "slack"}
        assert all("secret" not in h for h in listed)
        gone = httpx.delete(f"{url}/v1/hooks/{added.json()['id']}", headers=headers)
        assert gone.status_code == 204
        # An id that no hook can have is no hook (a long one was once an OS error, a 500).
        for hostile in ("x" * 10_000, added.json()["id"].upper(), "global-0"):
            assert httpx.delete(f"{url}/v1/hooks/{hostile}", headers=headers).status_code == 404


def test_no_duplicate_delivery_after_a_worker_sigkill(pipeline, receiver):
    rx = receiver([500])
    # Short limits: the retry the killed worker held comes back within a visibility timeout.
    pipeline.values = {
        **pipeline.values,
        "task_soft_time_limit": 8,
        "task_time_limit": 10,
        "visibility_timeout": 12,
    }
    # A retry 20 s away: the worker is killed while it holds it (well before it is due, even
    # on a busy machine, so never while it is sending).
    slow = {"hook_backoff_seconds": 20, "hook_backoff_max_seconds": 20}
    w1 = pipeline.start_worker("w1", **{**hook_env(rx.url), **slow})
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    pipeline.wait(record.id)
    assert rx.first.wait(60), "no delivery came"
    wait_until(lambda: deliveries(pipeline.service, record.id)[0].attempts == 1, 30, "attempt 1")
    w1.kill()  # it held the retry (a countdown message, unacknowledged)
    assert len(rx.got) == 1, "the retry ran before the kill"
    pipeline.start_worker("w2", **hook_env(rx.url))
    (delivered,) = wait_until(
        lambda: [d for d in deliveries(pipeline.service, record.id) if d.status == "delivered"],
        120,
        "the delivery, after the kill",
    )
    # The task sent again, twice (a redelivery, a duplicate): nothing more is posted.
    for _ in range(2):
        pipeline.service.enqueue(DELIVER, [record.id, delivered.id])
    queue = redis.Redis.from_url(pipeline.settings.broker_url)
    wait_until(lambda: queue.llen("control") == 0, 30, "the duplicates taken")
    wait_until(lambda: not queue.exists(f"gs:hook:{delivered.id}:sending"), 30, "no send")
    assert [g["answer"] for g in rx.got] == [500, 200]
    assert all(g["signed"] for g in rx.got)
    assert deliveries(pipeline.service, record.id)[0].attempts == 2
