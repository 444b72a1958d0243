"""What a user publishes as a policy version (``PolicyRegistry.publish``, ``POST
/v1/policies``), validated at the boundary. Apart from the registry so that reading a published
version (every local command's ``--policy``) does not load pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PolicyDocument(BaseModel):
    """What a user publishes. ``verify`` may be partial: it is applied over ``extends``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    description: str | None = Field(
        default=None, description="Default: the base and what this version changes."
    )
    extends: str | None = Field(
        default=None, description="A policy ref whose parts are the base (default: NAME@latest)."
    )
    verify: dict[str, Any] = Field(default_factory=dict)
    admit: dict[str, Any] | None = None
    guard: dict[str, Any] | None = Field(
        default=None,
        description="Guard settings (the guarded admission), applied over the base's guard, or "
        "over the default settings when the base has none; null drops the base's guard.",
    )
