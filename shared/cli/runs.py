"""`groundswell` commands: runs."""

from __future__ import annotations

from shared.cli.app import main  # noqa: F401
