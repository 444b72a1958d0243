"""gtrex's policy files and repair settings, read into groundswell's policy model.

A gtrex 1.1.0 policy file (``Policy.to_json()``, schema ``gtrex/policy/2``) holds the
verification settings groundswell's :class:`VerifyPolicy` has (ladder, markers, accept tier,
unsound tiers, ellipsis, fragments, contiguity, boundaries) and the settings of gtrex's repair
cascade (mode, salvage, threshold, guards, aligner). The first become a ``VerifyPolicy``
(with groundswell's own fingerprint); the second are kept, checked, as
:class:`RepairSettings`, which ``explain`` prints and ``verify`` does not read.

A file that carries gtrex's ``fingerprint`` is checked against it with gtrex's documented
recipe (SHA-256 over the sorted compact JSON of every field except the fingerprint, the
migration record and tier rationales; the first 16 hex digits), so an edited file is refused
as gtrex refuses it. Revision 6 files (gtrex 0.1.0b1 to 1.0.0) keep every field and load with
a note, as in gtrex.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundswell.shared.quick_settings import storage_url
from groundswell.shared.repair.policy import (
    REPAIR_MODES,
    SALVAGE_POLICIES,
    RepairPolicy,
    RepairSettings,
)
from groundswell.shared.verify.policy import (
    BUILTIN_VERIFY_POLICIES,
    VERDICT_SETTINGS,
    PolicyError,
    VerifyPolicy,
    get_verify_policy,
)

__all__ = ["REPAIR_MODES", "SALVAGE_POLICIES", "GtrexPolicy", "RepairSettings"]

GTREX_SCHEMA = "gtrex/policy/2"
GTREX_REVISIONS = (6, 7)
_VERIFY_FIELDS = ("ladder_name", "ladder", *VERDICT_SETTINGS)
_REPAIR_FIELDS = (
    "repair_mode",
    "repair_threshold",
    "salvage_policy",
    "numeric_guard",
    "polarity_guard",
    "min_repair_coverage",
    "max_source_expansion",
    "polarity_tokens",
    "alignment",
)
_IDENTITY_FIELDS = ("schema", "verifier_revision", *_VERIFY_FIELDS, *_REPAIR_FIELDS, "upstream")
_KNOWN_FIELDS = {*_IDENTITY_FIELDS, "fingerprint", "migrated_from"}


@dataclass(frozen=True)
class GtrexPolicy:
    verify: VerifyPolicy
    repair: RepairSettings
    fingerprint: str | None  # gtrex's, when the file states it
    notes: tuple[str, ...] = ()

    @property
    def repair_policy(self) -> RepairPolicy:
        return RepairPolicy(self.verify, self.repair)


def is_gtrex_policy(data: Any) -> bool:
    """Whether a parsed policy file is gtrex's (by its schema or its verifier revision)."""
    if not isinstance(data, Mapping):
        return False
    schema = data.get("schema")
    return (isinstance(schema, str) and schema.startswith(("gtrex/", "groundcheck/"))) or (
        "verifier_revision" in data
    )


def gtrex_fingerprint(data: Mapping[str, Any]) -> str:
    """gtrex's fingerprint of a complete policy document (its documented recipe)."""
    doc = {k: v for k, v in data.items() if k not in ("fingerprint", "migrated_from")}
    doc["ladder"] = [
        {k: v for k, v in tier.items() if k != "rationale"} if isinstance(tier, Mapping) else tier
        for tier in doc.get("ladder") or []
    ]
    if isinstance(doc.get("polarity_tokens"), list):
        doc["polarity_tokens"] = sorted(doc["polarity_tokens"])
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def from_gtrex(data: Mapping[str, Any], *, name: str = "gtrex") -> GtrexPolicy:
    """A gtrex policy document as a groundswell policy and its repair settings."""
    if not isinstance(data, Mapping):
        raise PolicyError("a policy is a JSON object")
    schema = data.get("schema", GTREX_SCHEMA)
    if schema != GTREX_SCHEMA:
        raise PolicyError(
            f"gtrex policy schema {schema!r} comes from a gtrex pre-release; load it with "
            f"gtrex 1.1.0 and save it again (Policy.to_json()) to get {GTREX_SCHEMA!r}"
        )
    revision = data.get("verifier_revision", 7)
    if revision not in GTREX_REVISIONS:
        raise PolicyError(
            f"verifier_revision {revision!r} is not read here (gtrex 0.1.0b1 to 1.1.0 write "
            f"{' or '.join(map(str, GTREX_REVISIONS))}); save the file again with gtrex 1.1.0"
        )
    unknown = set(data) - _KNOWN_FIELDS
    if unknown:
        raise PolicyError(f"unknown policy fields: {', '.join(sorted(unknown))}")
    mapped: dict[str, Any] = {k: data[k] for k in _VERIFY_FIELDS if k in data}
    ladder = mapped.get("ladder")
    if isinstance(ladder, list):
        # gtrex's tier rationales are its own prose; the steps are what a verdict rests on.
        mapped["ladder"] = [
            {k: v for k, v in t.items() if k != "rationale"} if isinstance(t, Mapping) else t
            for t in ladder
        ]
    mapped["name"] = name
    stated = data.get("fingerprint")
    mapped["description"] = "read from a gtrex policy file" + (
        f" (gtrex fingerprint {stated})" if isinstance(stated, str) else ""
    )
    policy = VerifyPolicy.from_dict(mapped)
    repair = RepairSettings.from_dict({k: data[k] for k in _REPAIR_FIELDS if k in data})
    notes: list[str] = []
    if stated is not None:
        if not isinstance(stated, str):
            raise PolicyError("fingerprint must be a string")
        if all(k in data for k in _IDENTITY_FIELDS):
            full = dict(data)
            full["accept_through"] = policy.accept_tier  # gtrex digests the resolved tier
            actual = gtrex_fingerprint(full)
            if actual != stated:
                raise PolicyError(
                    f"stored fingerprint {stated} does not match this policy ({actual}); the "
                    "file was edited or written by a different version"
                )
    if revision == 6:
        notes.append(
            "a gtrex 0.1.0b1-1.0.0 policy (verifier revision 6): read with every field "
            "unchanged; revision 7 changed repair only, not verification"
        )
    return GtrexPolicy(policy, repair, stated if isinstance(stated, str) else None, tuple(notes))


def load_policy_file(path: str | Path) -> GtrexPolicy:
    """A policy file in either format: gtrex's, or groundswell's own."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PolicyError(f"{path}: invalid JSON: {exc}") from exc
    try:
        if is_gtrex_policy(data):
            stem = Path(path).stem.replace("@", "-") or "gtrex"
            return from_gtrex(data, name=stem)
        policy = VerifyPolicy.from_dict(data)
    except PolicyError as exc:
        raise PolicyError(f"{path}: {exc}") from exc
    return GtrexPolicy(policy, RepairSettings.for_policy(policy), None)


def unpublished_builtin(ref: str) -> GtrexPolicy | None:
    """The built-in ``ref`` names (NAME or NAME@N) when the configured store is a local folder
    that publishes nothing under the name, so no registry version can be meant: found with one
    look for ``policies/<name>/``, without the registry, the settings class or the storage
    stack. None otherwise (an S3 store, something published, a file of that name, a version
    the built-in has not): :func:`groundswell.shared.policies.policy_for_ref` then decides."""
    name = ref.partition("@")[0]
    if name not in BUILTIN_VERIFY_POLICIES or os.path.exists(ref):
        return None
    url = storage_url()
    if url.startswith("s3://"):
        return None
    url = url.removeprefix("file://")
    # no store opens at another scheme's URL: the registry would find nothing there either
    if "://" not in url and os.path.lexists(os.path.join(url, "policies", name)):
        return None
    try:
        policy = get_verify_policy(ref)
    except PolicyError:
        return None
    return GtrexPolicy(policy, RepairSettings.for_policy(policy), None)
