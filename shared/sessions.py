"""The server's record of the review page's sessions (Redis, with the session's TTL).

A signed cookie alone cannot be taken back: until its expiry a copy of it works anywhere. So
each session also has a record, ``gs:session:<id>`` holding the digest of its key and
expiring with it, and a set per key, ``gs:sessions:<digest>``, of that key's session ids.
A cookie is accepted only while its record exists and names the cookie's key; signing out
deletes the record, ``groundswell api-key revoke-sessions NAME`` deletes every record of a
key, and a session refused because its key is gone from the settings is deleted too.
"""

from __future__ import annotations

import redis

PREFIX = "gs:session:"
KEY_PREFIX = "gs:sessions:"


class SessionStore:
    """Session records in the run-state Redis."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def add(self, session_id: str, digest: str, ttl_s: int) -> None:
        """Record a new session of the key ``digest`` (hex) for ``ttl_s`` seconds."""
        pipe = self.r.pipeline()
        pipe.set(PREFIX + session_id, digest, ex=ttl_s)
        pipe.sadd(KEY_PREFIX + digest, session_id)
        # Every session lives ttl_s: the key's set lives as long as its newest one (ids of
        # expired sessions linger in it until then, harmless: their records are gone).
        pipe.expire(KEY_PREFIX + digest, ttl_s)
        pipe.execute()

    def holds(self, session_id: str, digest: str) -> bool:
        """Whether the session is live and a session of the key ``digest``."""
        return self.r.get(PREFIX + session_id) == digest

    def revoke(self, session_id: str) -> None:
        digest = self.r.getdel(PREFIX + session_id)
        if digest:
            self.r.srem(KEY_PREFIX + digest, session_id)

    def revoke_key(self, digest: str) -> int:
        """End every session of the key ``digest`` (hex); how many were live."""
        ids = sorted(self.r.smembers(KEY_PREFIX + digest))
        pipe = self.r.pipeline()
        for session_id in ids:
            pipe.delete(PREFIX + session_id)
        pipe.delete(KEY_PREFIX + digest)
        return sum(pipe.execute()[:-1]) if ids else 0
