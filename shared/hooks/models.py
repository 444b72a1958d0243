"""Hooks and their deliveries.

A hook is global (``GROUNDSWELL_HOOKS``, a JSON list) or belongs to an API key (``POST
/v1/hooks``, stored in the output store under ``hooks/``): a key's hook hears of the runs of
the corpora that key sees. A delivery is one event of one run for one hook, stored under the
run (``runs/<run_id>/hooks/<delivery>.json``) with its body, so each retry sends the same
bytes and its status can be read back.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

HookEvent = Literal["finished", "failed", "gate_failed"]
EVENTS: tuple[HookEvent, ...] = ("finished", "failed", "gate_failed")
DeliveryStatus = Literal["pending", "delivered", "failed"]


class HookIn(BaseModel):
    """What a caller gives to add a hook."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=8, max_length=2000)
    events: list[HookEvent] = Field(default_factory=lambda: list(EVENTS), min_length=1)
    format: Literal["json", "slack"] = "json"
    secret: SecretStr | None = Field(
        default=None, description="The signing secret (made for you when left out)."
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("a hook's url is http:// or https://")
        return value


class Hook(HookIn):
    id: str
    owner: str | None = None  # the API key's name; None: a global hook

    @classmethod
    def make(cls, given: HookIn, owner: str | None) -> Hook:
        secret = given.secret or SecretStr("whsec_" + secrets.token_urlsafe(24))
        return cls(**{**given.model_dump(), "secret": secret}, id=secrets.token_hex(8), owner=owner)

    def public(self) -> dict:
        """What the API shows of a hook: never its secret."""
        return self.model_dump(exclude={"secret"})


def delivery_id(run_id: str, hook_id: str, event: str) -> str:
    return hashlib.sha256(f"{run_id}\n{hook_id}\n{event}".encode()).hexdigest()[:24]


class Delivery(BaseModel):
    id: str
    run_id: str
    hook_id: str
    event: HookEvent
    url: str
    format: Literal["json", "slack"]
    status: DeliveryStatus = "pending"
    attempts: int = 0
    last_status: int | None = None
    last_error: str | None = None
    created_at: str
    last_attempt_at: str | None = None
    delivered_at: str | None = None
    body: str  # the JSON text sent (signed per attempt)

    def public(self) -> dict:
        return self.model_dump(exclude={"body"})
