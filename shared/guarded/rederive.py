"""Re-derivation of a guarded receipt: admit's ``check_receipt``, with the admitter the
receipt's ``guard`` member records (its settings, once they validate and its revision is this
engine's; otherwise that is the difference). A receipt without one is groundgate's and
re-derives as admit/rederive.py re-derives it, so this is the check for receipts of either.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from groundswell.shared.admit.engine import Admitter
from groundswell.shared.admit.rederive import check_receipt as check_admitted
from groundswell.shared.guarded.admitter import NAME, GuardedAdmitter
from groundswell.shared.guarded.settings import GUARD_REVISION, GuardSettings, GuardSettingsError


def check_receipt(receipt: Any, *args: Any, **kwargs: Any) -> list[str]:
    """Every difference between ``receipt`` and the receipt its inputs give ([] when it holds),
    guarded or not: the arguments of admit/rederive.py's ``check_receipt``."""
    return check_admitted(receipt, *args, guards=recorded_guard, **kwargs)


def recorded_guard(receipt: dict[str, Any]) -> tuple[Callable[..., Admitter] | None, str | None]:
    """The admitter of the guard settings a receipt records; or, when they cannot be
    re-derived under (another revision, a setting that does not validate), the difference
    that says so."""
    guard = receipt.get("guard")
    if not isinstance(guard, dict):
        return None, "guard is not an object of the guarded policy's settings"
    if guard.get("policy") != NAME:
        return None, f"guard names the policy {guard.get('policy')!r}, not {NAME!r}"
    if guard.get("revision") != GUARD_REVISION:
        return None, (
            f"guard is of revision {guard.get('revision')!r}; this engine re-derives "
            f"{GUARD_REVISION}"
        )
    try:
        settings = GuardSettings.from_dict(guard.get("settings"))
    except GuardSettingsError as exc:
        return None, f"guard settings are invalid: {exc}"
    return partial(GuardedAdmitter, guard=settings), None
