"""gtrex 1.1.0's ``repair`` as a test oracle: the same (source, claim, policy) through gtrex's
``Repairer`` and through groundswell's, compared field by field.

Everything ``Repair.as_dict()`` says is compared, except what legitimately differs: policy
fingerprints and the wording of notes. Floats are compared exactly, and a value must have the
same type on both sides (``1`` is not ``1.0``, ``0`` is not ``False``). Besides the dictionary,
the text the record would store (gtrex's ``Repair.text``, what ``gtrex repair`` writes as the
record's ``claim``) is compared as ``text``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gtrex

from tests.shared.verify.oracle import gtrex_policy

# Paths whose values may differ: identity of the policy, wording of notes. The salvage caveat
# is wording too: only that there is one is compared.
IGNORED = ("policy_fingerprint", "notes")
WORDING = ("caveat",)
ABSENT = "<absent>"
WORDED = "<text>"


def our_policy(name: str = "default", **overrides: Any):
    from groundswell.shared.repair import get_repair_policy

    policy = get_repair_policy(name)
    return policy.with_changes(**overrides) if overrides else policy


def gtrex_repairer(source: str, name: str = "default", **overrides: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtrex.DefaultThresholdWarning)
        return gtrex.Repairer(source, gtrex_policy(name, **overrides))


def our_repairer(source: str, name: str = "default", **overrides: Any) -> Any:
    from groundswell.shared.repair import Repairer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning at the default threshold is not compared
        return Repairer(source, our_policy(name, **overrides))


def stored_text(document: dict[str, Any]) -> str | None:
    """The text a record carries after repair, read from ``as_dict()`` alone: the model's
    wording when accepted as given or annotated, else the certified source text."""
    if not document.get("accepted"):
        return None
    after = document.get("after")
    if document.get("action") in ("accepted", "annotated") or after is None:
        return document.get("claim_original")
    return after.get("span_text")


def outcome(repairer: Any, claim: str) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = repairer.repair(claim)
    except (TypeError, ValueError) as exc:
        return {"error": type(exc).__name__}
    document = dict(result.as_dict())
    document["text"] = getattr(result, "text", stored_text(document))
    return document


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """``{"a": {"b": [1]}}`` -> ``{"a.b[0]": 1}``, and ``{"a": {}}`` -> ``{"a": {}}``."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in WORDING and isinstance(item, str) and item:
                item = WORDED
            if key not in IGNORED:
                out.update(flatten(item, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(value, (list, tuple)) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{path}[{i}]"))
        return out
    return {path: value}


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every path whose value differs, as ``{path: (ours, theirs)}``; a path present on one side
    only shows ``"<absent>"`` on the other."""
    if "error" in ours or "error" in theirs:
        return {} if ours.get("error") == theirs.get("error") else {"error": (ours, theirs)}
    mine, gold = flatten(ours), flatten(theirs)
    return {
        path: (mine.get(path, ABSENT), gold.get(path, ABSENT))
        for path in sorted(mine.keys() | gold.keys())
        if not _same(mine.get(path, ABSENT), gold.get(path, ABSENT))
    }


Factory = Callable[..., Any]


class Pair:
    """One document repaired by both engines under one policy; each engine keeps one repairer
    for all of the document's claims, as production does. ``ours`` may be replaced (by
    ``gtrex_repairer``, to check the harness against gtrex itself)."""

    def __init__(
        self, source: str, name: str = "default", *, ours: Factory = our_repairer, **overrides
    ) -> None:
        self.theirs = gtrex_repairer(source, name, **overrides)
        self.ours = ours(source, name, **overrides)

    def run(self, claim: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return outcome(self.ours, claim), outcome(self.theirs, claim)

    def compare(self, claim: str) -> dict[str, tuple[Any, Any]]:
        return differences(*self.run(claim))
