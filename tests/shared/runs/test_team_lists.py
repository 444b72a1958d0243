"""Per-corpus run lists (issue 25 item 8): a team's key lists only the runs of its corpora,
newest first and paged, read from a sorted set per corpus (a page costs the page, not every
run); after a loss of Redis, or a Redis from before these lists, they are rebuilt from the
run catalog in storage."""

from __future__ import annotations

import pytest
import redis

from groundswell.shared.runs.models import RunSpec
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import RunStore, redis_client
from groundswell.shared.settings import Settings, hash_api_key, parse_api_key


@pytest.fixture
def service(redis_server, tmp_path) -> RunService:
    redis.Redis.from_url(redis_server.url).flushall()
    settings = Settings(broker_url=redis_server.url, storage_url=str(tmp_path / "out"))
    return RunService(settings, RunStore(redis_client(redis_server.url)), lambda *_: None)


def _submit(service: RunService, corpus: str, n: int) -> list[str]:
    return [service.submit(RunSpec(corpus=corpus))[0].id for _ in range(n)]


def test_a_team_key_lists_only_its_corpora_s_runs_newest_first(service, tmp_path):
    a1 = _submit(service, str(tmp_path / "a" / "one"), 3)
    b = _submit(service, str(tmp_path / "b"), 4)
    a2 = _submit(service, str(tmp_path / "a" / "two"), 2)
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'a'}")
    bob = parse_api_key(f"bob:runs:{hash_api_key('j')}:{tmp_path / 'b'}")
    newest_a = list(reversed(a1 + a2))
    records, total = service.list_runs(0, 3, ana)
    assert total == 5 and [r.id for r in records] == newest_a[:3]
    records, total = service.list_runs(3, 3, ana)
    assert total == 5 and [r.id for r in records] == newest_a[3:]
    assert [r.id for r in service.list_runs(0, 10, bob)[0]] == list(reversed(b))
    everyone, total = service.list_runs(0, 20)
    assert total == 9 and {r.id for r in everyone} == set(a1 + a2 + b)
    nobody = parse_api_key(f"cy:runs:{hash_api_key('c')}:{tmp_path / 'c'}")
    assert service.list_runs(0, 10, nobody) == ([], 0)


def test_the_per_corpus_lists_are_rebuilt_after_a_loss_of_redis(service, tmp_path):
    a = _submit(service, str(tmp_path / "a"), 2)
    _submit(service, str(tmp_path / "b"), 2)
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'a'}")
    service.runs.r.flushall()
    records, total = service.list_runs(0, 10, ana)
    assert total == 2 and [r.id for r in records] == list(reversed(a))


def test_a_redis_from_before_the_per_corpus_lists_gets_them_from_storage(service, tmp_path):
    a = _submit(service, str(tmp_path / "a"), 2)
    r = service.runs.r
    # What an older release left: the run list and its epoch, no per-corpus lists.
    for key in r.scan_iter("gs:runs:corpus:*"):
        r.delete(key)
    r.delete("gs:corpora")
    r.set("gs:epoch", "0123456789abcdef")
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'a'}")
    assert [x.id for x in service.list_runs(0, 10, ana)[0]] == list(reversed(a))


def test_a_run_submitted_while_a_team_pages_shows_at_once(service, tmp_path):
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'a'}|{tmp_path / 'b'}")
    first = _submit(service, str(tmp_path / "a"), 1) + _submit(service, str(tmp_path / "b"), 1)
    assert service.list_runs(0, 10, ana)[1] == 2
    later = _submit(service, str(tmp_path / "b"), 1)
    records, total = service.list_runs(0, 10, ana)
    assert total == 3 and [r.id for r in records] == list(reversed(first + later))
