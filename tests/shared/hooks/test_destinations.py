"""A key's hook posts only to public hosts or to those the operator allows; each attempt is
counted by event and outcome."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from groundswell.shared import metrics
from groundswell.shared.hooks.destinations import HookRefused, check_destination
from groundswell.shared.hooks.models import Delivery
from groundswell.shared.hooks.service import attempt, delivery_key
from groundswell.shared.later import Later
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "http://localhost/x",
        "http://10.1.2.3/x",
        "http://192.168.0.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8080/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://[fd00::1]/",
    ],
)
def test_inward_addresses_are_refused(url):
    with pytest.raises(HookRefused, match="not a public address"):
        check_destination(url, [])


def test_public_and_allowed_hosts_pass():
    check_destination("https://93.184.215.14/hook", [])
    check_destination("http://127.0.0.1:9/x", ["127.0.0.1"])
    check_destination("http://hooks.internal.example/x", ["*.internal.example"])
    with pytest.raises(HookRefused):  # a wildcard names subdomains, not the domain itself
        check_destination(
            "http://internal.example/x", ["*.internal.example"], lambda h: ["10.0.0.1"]
        )
    # A name is judged by every address it resolves to: one private address is enough.
    with pytest.raises(HookRefused, match=r"10\.0\.0\.7"):
        check_destination("https://mixed.example/x", [], lambda h: ["93.184.215.14", "10.0.0.7"])
    check_destination("https://public.example/x", [], lambda h: ["93.184.215.14"])


def test_a_name_that_does_not_resolve_is_refused():
    def nowhere(host):
        raise HookRefused(f"host {host!r} does not resolve")

    with pytest.raises(HookRefused, match="does not resolve"):
        check_destination("https://nowhere.invalid/x", [], nowhere)


class _Ok(BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self):
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_metrics_know_every_event():
    from groundswell.shared import metrics
    from groundswell.shared.hooks.models import EVENTS

    assert metrics.HOOK_EVENTS == EVENTS


def _count(event, outcome):
    # Read from the counter itself: the global registry may hold an API's collector, which
    # another test of this process registered and which needs its Redis.
    labels = {"event": event, "outcome": outcome}
    for family in metrics.HOOK_DELIVERIES.collect():
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels == labels:
                return sample.value
    return 0.0


def _service(tmp_path, **settings):
    store = open_store(str(tmp_path))
    record = SimpleNamespace(id="r1", output=str(tmp_path))
    return SimpleNamespace(
        settings=Settings(hook_backoff_seconds=1, **settings),
        runs=SimpleNamespace(r=None),
        output_url=str(tmp_path),
        store=lambda url: store,
        get=lambda run_id: record,
    ), store


def _pending(store, url, hook_id="0123456789abcdef"):
    delivery = Delivery(
        id="d1",
        run_id="r1",
        hook_id=hook_id,
        event="finished",
        url=url,
        format="json",
        created_at="2026-12-03T00:00:00Z",
        body="{}",
    )
    store.put(delivery_key("r1", "d1"), delivery.model_dump_json().encode())


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    httpd.shutdown()
    httpd.server_close()


def test_a_keys_hook_to_a_loopback_host_is_refused_at_once_and_never_sent(tmp_path, server):
    service, store = _service(tmp_path)
    _pending(store, server)
    before, hits = _count("finished", "failed"), _Ok.hits
    done = attempt(service, "r1", "d1")  # no Later: a refusal is not retried
    assert done.status == "failed" and done.attempts == 1
    assert done.last_error.startswith("refused: host '127.0.0.1' is 127.0.0.1, not a public")
    assert _Ok.hits == hits  # nothing was sent
    assert _count("finished", "failed") == before + 1


def test_an_allowed_host_and_a_global_hook_are_delivered_and_counted(tmp_path, server):
    service, store = _service(tmp_path, hook_allowed_hosts=["127.0.0.1"])
    _pending(store, server)
    before, hits = _count("finished", "delivered"), _Ok.hits
    assert attempt(service, "r1", "d1").status == "delivered"
    assert _Ok.hits == hits + 1 and _count("finished", "delivered") == before + 1
    # The operator's own hooks (GROUNDSWELL_HOOKS) are not checked.
    service, store = _service(tmp_path / "global")
    _pending(store, server, hook_id="global-0123456789abcdef")
    assert attempt(service, "r1", "d1").status == "delivered"


def test_a_retried_attempt_is_counted_as_retried(tmp_path):
    service, store = _service(tmp_path, hook_allowed_hosts=["127.0.0.1"])
    _pending(store, "http://127.0.0.1:9/closed")  # nothing listens: a connection error
    before = _count("finished", "retried")
    with pytest.raises(Later):
        attempt(service, "r1", "d1")
    assert _count("finished", "retried") == before + 1


def test_a_send_under_anothers_lock_waits_for_that_lock_not_one_backoff(tmp_path, redis_server):
    """A worker killed while sending leaves its lock: the next attempt comes when the lock
    has expired, not every backoff until then (a spin of retries through the broker)."""
    import redis

    service, store = _service(tmp_path, hook_allowed_hosts=["127.0.0.1"])
    service.runs.r = redis.Redis.from_url(redis_server.url)
    _pending(store, "http://127.0.0.1:9/closed")
    service.runs.r.set("gs:hook:d1:sending", "1", ex=37)
    with pytest.raises(Later) as later:
        attempt(service, "r1", "d1")
    assert 30 <= later.value.countdown <= 37
    assert "being sent" in str(later.value)
    service.runs.r.delete("gs:hook:d1:sending")
