"""Named, versioned policies: a verification part and an admission part, each fingerprinted.

Policies live in object storage under ``policies/<name>/<version>.json`` (the registry). A
version never changes once published: publishing a version that exists with other content is
refused, publishing the same content again is a no-op. The built-ins (gtrex's strict / default /
permissive verification, each with groundgate's default admission) are registered as version 1.

Each part has its own fingerprint over every setting that can move a verdict plus its engine
revision, so a new version that changes only admission settings recomputes no verification
receipt, and the reverse.

The verification part may enable the repair cascade (gtrex 1.1.0's): a ``repair`` object in
``verify`` with gtrex's setting names (``repair_mode``, ``salvage_policy``, ``repair_threshold``,
the guards' knobs, ``alignment``) and optionally ``calibration``: the sha256 of a calibration
stored in the registry (``calibrations/<sha256>.json``, content-addressed, create-once; see
:meth:`PolicyRegistry.put_calibration`). The threshold in force is the calibration's, else
``repair_threshold``, else the uncalibrated default (0.65), and the version records which.
Publishing refuses a calibration made under another repair configuration. The repair settings
enter the verification fingerprint only when repair is on (a mode other than ``off``), so a
version without them keeps its fingerprint and its receipts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from groundswell.shared.canonical import canonical_json, json_sha256, sha256_hex

if TYPE_CHECKING:
    from groundswell.shared.admit import Admitter
    from groundswell.shared.policy_document import PolicyDocument
    from groundswell.shared.repair import Repairer, RepairPolicy
    from groundswell.shared.repair.gtrex_policy import GtrexPolicy
    from groundswell.shared.storage import ObjectStore
    from groundswell.shared.verify import Verifier, VerifyPolicy

POLICY_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
POLICY_REF = re.compile(r"^(?P<name>[a-z][a-z0-9_-]{0,63})(?:@(?P<version>[1-9][0-9]*|latest))?$")
PREFIX = "policies/"
# Keys of a verification policy's dict that describe it rather than configure it.
_VERIFY_META = ("name", "version", "description", "fingerprint", "engine_revision", "schema")
# The repair object inside the verification part (gtrex's setting names, and "calibration").
REPAIR = "repair"
CALIBRATIONS = "calibrations/"
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class PolicyError(ValueError):
    """An unknown or malformed policy reference or policy document."""


class PolicyConflict(PolicyError):
    """A published version exists with other content: versions are immutable."""


@dataclass(frozen=True)
class PolicyVersion:
    name: str
    version: int
    verify: dict[str, Any]
    admit: dict[str, Any] | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The guarded admission's settings (None: groundgate's admission, unguarded).
    guard: dict[str, Any] | None = None
    # The calibration document ``verify.repair.calibration`` names, as the registry stored it
    # (loaded with the version; not part of its content, which holds the digest).
    calibration: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def repair_document(self) -> dict[str, Any] | None:
        """The ``repair`` object of the verification part, as published (None: none)."""
        doc = self.verify.get(REPAIR)
        return doc if isinstance(doc, dict) else None

    @cached_property
    def verify_policy(self):
        from groundswell.shared.text.transforms import regex_engine
        from groundswell.shared.verify import VerifyPolicy

        # The stored settings carry no identity; the verification policy takes this one.
        # Registry policies run their patterns with RE2: anyone with an API key publishes
        # them and every worker runs them, so their matching time must be linear.
        with regex_engine("re2"):
            return VerifyPolicy.from_dict(
                {
                    **{k: v for k, v in self.verify.items() if k != REPAIR},
                    "name": self.name,
                    "version": self.version,
                    "description": self.description,
                }
            )

    @cached_property
    def repair(self) -> RepairPart | None:
        """The repair cascade this version runs on every claim (None: repair is off)."""
        doc = self.repair_document
        if doc is None:
            return None
        return repair_part(self.verify_policy, doc, self.calibration)

    @cached_property
    def verify_fingerprint(self) -> str:
        """Covers every verification setting and the verification engine revision, and, when
        the version repairs, the repair identity (settings, threshold and its source)."""
        repair = self.repair
        if repair is None:
            return self.verify_policy.fingerprint
        return json_sha256({"verify": self.verify_policy.fingerprint, "repair": repair.identity})[
            :16
        ]

    @cached_property
    def admit_fingerprint(self) -> str:
        """Covers the admission policy, the spec version and the admission engine revision,
        and, when the version guards its admission, the guard settings and revision."""
        from groundswell.shared.admit import ENGINE_REVISION, SPEC_VERSION

        parts: dict[str, Any] = {
            "policy": self.admit,
            "spec": SPEC_VERSION,
            "engine": ENGINE_REVISION,
        }
        if self.guard is not None:
            from groundswell.shared.guarded import GUARD_REVISION

            parts["guard"] = {"settings": self.guard_settings.as_dict(), "revision": GUARD_REVISION}
        return json_sha256(parts)[:16]

    def admitter(self, document: str, schema: Any, policy: Any, /, **kwargs: Any) -> Admitter:
        """The admitter this version runs (``admit.admitter_for`` asks it): groundgate's, or
        the guarded one when the version has a ``guard`` part; ``policy`` is the admission
        settings in force (the version's, else the packet's own)."""
        from groundswell.shared.admit import Admitter

        if self.guard is None:
            return Admitter(document, schema, policy, **kwargs)
        from groundswell.shared.guarded.admitter import GuardedAdmitter
        from groundswell.shared.guarded.settings import GuardSettings

        guard = GuardSettings.from_dict(self.guard)
        return GuardedAdmitter(document, schema, policy, guard=guard, **kwargs)

    @cached_property
    def guard_settings(self) -> Any:
        """The guard's settings (GuardSettings), or None for groundgate's admission."""
        if self.guard is None:
            return None
        from groundswell.shared.guarded import GuardSettings, GuardSettingsError

        try:
            return GuardSettings.from_dict(self.guard)
        except GuardSettingsError as exc:
            raise PolicyError(str(exc)) from None

    def identity(self) -> dict[str, Any]:
        """What a run and a summary record about the policy (``repair`` only when it repairs)."""
        out: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "ref": self.ref,
            "verify_fingerprint": self.verify_fingerprint,
            "admit_fingerprint": self.admit_fingerprint,
        }
        if self.repair is not None:
            out["repair"] = self.repair.identity
        return out

    def content(self) -> dict[str, Any]:
        """What makes a version: compared when the same version is published again."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "verify": self.verify,
            "admit": self.admit,
            **({"guard": self.guard} if self.guard is not None else {}),
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.content(), **self.identity()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyVersion:
        return cls(
            name=data["name"],
            version=int(data["version"]),
            verify=data["verify"],
            admit=data.get("admit"),
            description=data.get("description", ""),
            guard=data.get("guard"),
        )


@dataclass(frozen=True)
class RepairPart:
    """A version's repair: the cascade's policy (with the threshold in force), where that
    threshold came from, and the calibration's digest when it came from one."""

    policy: RepairPolicy
    threshold: float
    threshold_source: str  # calibration | policy | default
    calibration: str | None = None

    @cached_property
    def identity(self) -> dict[str, Any]:
        """What receipts and fingerprints record: changing any of it recomputes them."""
        from groundswell.shared.repair.params import SCORER_REVISION

        return {
            "fingerprint": self.policy.fingerprint,
            "repair_mode": self.policy.settings.repair_mode,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "calibration": self.calibration,
            "scorer_revision": SCORER_REVISION,
        }

    def repairer(self, text: str, verifier: Verifier) -> Repairer:
        """The cascade over ``text``, sharing ``verifier``'s projections."""
        from groundswell.shared.repair import Repairer

        repairer = Repairer(text, self.policy, verifier=verifier, warn=False)
        # Its settings carry the threshold in force, which it would call the policy's.
        repairer.threshold_source = self.threshold_source
        return repairer


def repair_settings(doc: dict[str, Any]) -> Any:
    """The cascade's settings of a ``repair`` object (its ``calibration`` aside)."""
    from dataclasses import fields

    from groundswell.shared.repair import RepairSettings
    from groundswell.shared.verify.policy import PolicyError as VerifyPolicyError

    if not isinstance(doc, dict):
        raise PolicyError("repair must be an object of gtrex's repair settings")
    known = {f.name for f in fields(RepairSettings)} | {"calibration"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise PolicyError(
            f"unknown repair settings: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    try:
        return RepairSettings.from_dict({k: v for k, v in doc.items() if k != "calibration"})
    except (VerifyPolicyError, TypeError, ValueError) as exc:
        raise PolicyError(f"repair: {exc}") from None


def calibration_digest(repair: Any) -> str | None:
    """The digest a ``repair`` object names as its calibration, when it is one."""
    digest = repair.get("calibration") if isinstance(repair, dict) else None
    return digest if isinstance(digest, str) and SHA256.match(digest) else None


def repair_part(
    verify_policy: VerifyPolicy, doc: dict[str, Any], calibration: dict[str, Any] | None
) -> RepairPart | None:
    """A version's repair from its ``repair`` object and the calibration it names (the
    stored document); None when the mode is ``off``. The threshold in force: the
    calibration's, else ``repair_threshold``, else the uncalibrated default."""
    from groundswell.shared.repair import DEFAULT_REPAIR_THRESHOLD, RepairPolicy
    from groundswell.shared.repair.calibration import Calibration

    settings = repair_settings(doc)
    if settings.repair_mode == "off":
        return None
    digest = doc.get("calibration")
    if digest is not None:
        if not isinstance(digest, str) or not SHA256.match(digest):
            raise PolicyError(
                "repair.calibration must be the sha256 (64 hex digits) of a calibration"
            )
        if calibration is None:
            raise PolicyError(
                f"calibration {digest} is not loaded (read the version from its registry)"
            )
        try:
            found = Calibration.from_dict(calibration)
            found.check_binding(RepairPolicy(verify_policy, settings).identities())
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"repair.calibration {digest[:16]}: {exc}") from None
        threshold, source = found.threshold, "calibration"
    elif settings.repair_threshold is not None:
        threshold, source = settings.repair_threshold, "policy"
    else:
        threshold, source = DEFAULT_REPAIR_THRESHOLD, "default"
    policy = RepairPolicy(verify_policy, replace(settings, repair_threshold=threshold))
    return RepairPart(policy, threshold, source, digest)


def calibration_document(document: Any) -> dict[str, Any]:
    """The risk calibration a document holds (a bare calibration, or a calibrate report's
    ``risk`` part), in its stored form; PolicyError when it is not one repair can deploy."""
    from groundswell.shared.repair.calibration import RISK_METHOD, Calibration

    if not isinstance(document, dict):
        raise PolicyError("a calibration is a JSON object")
    try:  # a calibrate report holds it as its "risk" part
        calibration = Calibration.from_dict(document.get("risk", document))
        # What repair deploys bounds false acceptance, under the policy it was made for.
        if calibration.method != RISK_METHOD or not calibration.bound:
            state = "bound" if calibration.bound else "unbound (made without a policy)"
            raise ValueError(
                f"repair deploys a bound {RISK_METHOD} calibration; this one is "
                f"{calibration.method}, {state}"
            )
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"not a usable risk calibration: {exc}") from None
    return calibration.as_dict()


_BUILTIN_DESCRIPTIONS = {
    "strict": "Only character-identical quotations are grounded; groundgate's default admission.",
    "default": "Sound tiers (exact to case) are grounded; stitched quotations are reported, "
    "not grounded; groundgate's default admission.",
    "permissive": "Accepts the unsound skeleton tier, ignores ellipses and admits stitched "
    "fragments: for measuring how much such a policy inflates a rate.",
}


_GUARDED_DESCRIPTION = (
    "default's verification; groundgate's admission with guards on top: the cell under the "
    "named column and row, the scale in force, bracketed negatives, percentages against amounts; "
    "flags what contradicts a candidate and relieves groundgate flags the document settles."
)


def builtin_policies() -> dict[str, PolicyVersion]:
    from groundswell.shared.verify import get_verify_policy

    out = {}
    for name, text in _BUILTIN_DESCRIPTIONS.items():
        settings = {
            k: v for k, v in get_verify_policy(name).as_dict().items() if k not in _VERIFY_META
        }
        out[name] = PolicyVersion(name, 1, settings, None, text)
    from groundswell.shared.guarded import DEFAULT_GUARD

    # default's verification; groundgate's admission (or the packet's own), then the guards
    out["guarded"] = PolicyVersion(
        "guarded",
        1,
        out["default"].verify,
        None,
        _GUARDED_DESCRIPTION,
        guard=DEFAULT_GUARD.as_dict(),
    )
    return out


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME@latest`` (version None) or ``NAME@N``."""
    match = POLICY_REF.match(ref.strip())
    if not match:
        raise PolicyError(
            f"invalid policy reference {ref!r}: expected NAME, NAME@VERSION or NAME@latest, e.g. default@1"
        )
    version = match.group("version")
    return match.group("name"), (int(version) if version and version != "latest" else None)


def check_parts(
    verify: dict[str, Any],
    admit: dict[str, Any] | None,
    calibration: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Validate both parts with their engines; return the complete verification settings.

    ``calibration`` reads a stored calibration by digest, for a ``repair`` object that names
    one: its binding must match the repair configuration."""
    from groundswell.shared.admit import PacketError
    from groundswell.shared.admit import admit as admit_packet
    from groundswell.shared.text.transforms import regex_engine
    from groundswell.shared.verify import VerifyPolicy

    repair = verify.get(REPAIR)
    try:
        with regex_engine("re2"):  # what the workers will run it with
            checked = VerifyPolicy.from_dict({k: v for k, v in verify.items() if k != REPAIR})
            complete = checked.as_dict()
    except ValueError as exc:
        raise PolicyError(f"verify: {exc}") from None
    if repair is not None:
        digest, found = calibration_digest(repair), None
        if digest is not None:
            if calibration is None:
                raise PolicyError("verify.repair.calibration: no registry to read it from")
            found = calibration(digest)
        try:
            repair_part(checked, repair, found)
        except PolicyError as exc:
            raise PolicyError(
                f"verify.{exc}" if str(exc).startswith("repair") else f"verify.repair: {exc}"
            ) from None
        complete[REPAIR] = repair
    if admit is not None:
        try:
            admit_packet("x", {"fields": {}}, [], admit)
        except PacketError as exc:
            raise PolicyError(f"admit: {exc}") from None
    return complete


def guard_part(doc: PolicyDocument, base: PolicyVersion | None) -> dict[str, Any] | None:
    """The complete guard settings of a version published from ``doc`` over ``base``: the
    document's settings over the base's guard (or the default settings when the base has
    none); the base's guard when the document names none; none for ``"guard": null``."""
    from groundswell.shared.guarded import DEFAULT_GUARD, GuardSettings, GuardSettingsError

    inherited = base.guard if base is not None else None
    if doc.guard is None:
        return None if "guard" in doc.model_fields_set else inherited
    try:
        under = GuardSettings.from_dict(inherited) if inherited is not None else DEFAULT_GUARD
        return GuardSettings.from_dict({**under.as_dict(), **doc.guard}).as_dict()
    except GuardSettingsError as exc:
        raise PolicyError(str(exc)) from None


class PolicyRegistry:
    """Policies and their versions in an object store."""

    # Versions never change, so a process can keep every one it has read.
    _cache: ClassVar[dict[tuple[str, str, int], PolicyVersion]] = {}

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    @staticmethod
    def key(name: str, version: int) -> str:
        return f"{PREFIX}{name}/{version}.json"

    def names(self) -> list[str]:
        seen: set[str] = set()
        for page in self.store.list_pages(PREFIX):
            for info in page:
                name = info.key[len(PREFIX) :].split("/", 1)[0]
                seen.add(name)
        return sorted(seen)

    def versions(self, name: str) -> list[int]:
        out = []
        for page in self.store.list_pages(f"{PREFIX}{name}/"):
            for info in page:
                stem = info.key.rsplit("/", 1)[-1].removesuffix(".json")
                if stem.isdigit():
                    out.append(int(stem))
        return sorted(out)

    def get(self, name: str, version: int | None = None) -> PolicyVersion:
        if version is None:
            versions = self.versions(name)
            if not versions:
                raise PolicyError(
                    f"unknown policy {name!r}: known policies are {', '.join(self.names())}"
                )
            version = versions[-1]
        cache_key = (self.store.url, name, version)
        policy = self._cache.get(cache_key)
        if policy is None:
            try:
                data = self.store.get(self.key(name, version))
            except KeyError:
                known = self.versions(name)
                if not known:
                    raise PolicyError(
                        f"unknown policy {name!r}: known policies are {', '.join(self.names())}"
                    ) from None
                raise PolicyError(
                    f"policy {name} has no version {version} (versions: {', '.join(map(str, known))})"
                ) from None
            try:
                stored = PolicyVersion.from_dict(json.loads(data))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                # A file that is not a version (written by hand, cut short): the caller's
                # PolicyError (a 4xx), never a failure of whoever reads the registry.
                raise PolicyError(
                    f"{self.key(name, version)} is unreadable in the policy store "
                    f"({type(exc).__name__}: {str(exc)[:120]})"
                ) from None
            policy = self._with_calibration(stored)
            self._cache[cache_key] = policy
        return policy

    def listing(self) -> list[tuple[str, list[int], PolicyVersion]]:
        """Each policy's name, versions and latest version. A name whose latest
        version cannot be read is skipped (logged with its key, counted): one bad file in
        the store hides no other policy."""
        from groundswell.shared import metrics

        out = []
        for name in self.names():
            try:
                versions = self.versions(name)
                out.append((name, versions, self.get(name)))
            except PolicyError as exc:
                metrics.bad_record("policies", f"{PREFIX}{name}/", exc)
        return out

    # -- calibrations of the repair threshold -----------------------------------------------

    def _with_calibration(self, policy: PolicyVersion) -> PolicyVersion:
        """The version with the calibration its repair names, read from this registry."""
        digest = calibration_digest(policy.repair_document)
        if digest is None or policy.calibration is not None:
            return policy
        return replace(policy, calibration=self.get_calibration(digest))

    @staticmethod
    def calibration_key(digest: str) -> str:
        return f"{CALIBRATIONS}{digest}.json"

    def put_calibration(self, document: dict[str, Any]) -> str:
        """Store a risk calibration (or a calibrate report's risk part) once; return its
        sha256, which a policy's ``verify.repair.calibration`` names. Storing it again is a
        no-op; an unbound or coverage calibration is refused."""
        data = canonical_json(calibration_document(document))
        digest = sha256_hex(data)
        self.store.put(self.calibration_key(digest), data, create_only=True)
        return digest

    def get_calibration(self, digest: str) -> dict[str, Any]:
        """A stored calibration by its sha256 (checked against its bytes)."""
        if not SHA256.match(digest):
            raise PolicyError(f"{digest!r} is not a sha256 (64 lowercase hex digits)")
        try:
            data = self.store.get(self.calibration_key(digest))
        except KeyError:
            raise PolicyError(
                f"no calibration {digest} in the registry (store it first: "
                "groundswell policy calibration FILE)"
            ) from None
        if sha256_hex(data) != digest:
            raise PolicyError(f"the stored calibration {digest} does not match its digest")
        return json.loads(data)

    def resolve(self, ref: str) -> PolicyVersion:
        name, version = parse_ref(ref)
        return self.get(name, version)

    def publish(
        self, document: dict[str, Any] | PolicyDocument, version: int | None = None
    ) -> tuple[PolicyVersion, bool]:
        """Publish a version (the next one by default). Returns (version, created)."""
        from pydantic import ValidationError

        from groundswell.shared.policy_document import PolicyDocument

        try:
            doc = (
                document
                if isinstance(document, PolicyDocument)
                else PolicyDocument.model_validate(document)
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise PolicyError(
                f"{loc}: {first.get('msg')}" if loc else str(first.get("msg"))
            ) from None
        existing = self.versions(doc.name)
        base: PolicyVersion | None = None
        if doc.extends:
            base = self.resolve(doc.extends)
        elif existing:
            base = self.get(doc.name, existing[-1])
        verify = {**(base.verify if base else {}), **doc.verify}
        if REPAIR in doc.verify and doc.verify[REPAIR] is None:
            del verify[REPAIR]  # "repair": null drops the base's repair
        for key in _VERIFY_META:
            verify.pop(key, None)
        admit = doc.admit if doc.admit is not None else (base.admit if base else None)
        guard = guard_part(doc, base)
        changed = sorted(
            {*doc.verify}
            | ({"admit"} if doc.admit is not None else set())
            | ({"guard"} if "guard" in doc.model_fields_set else set())
        )
        description = doc.description
        if description is None:
            # The base's description would describe the base, not this version: say what it is.
            description = (
                f"{base.ref} with {', '.join(changed) or 'nothing'} changed" if base else ""
            )
        verify = check_parts(verify, admit, self.get_calibration)
        for key in _VERIFY_META:
            verify.pop(key, None)
        if version is None:
            latest = self.get(doc.name, existing[-1]) if existing else None
            next_version = (existing[-1] + 1) if existing else 1
            if doc.description is None and latest is not None:
                description = latest.description  # compared as unchanged when nothing else is
            candidate = self._with_calibration(
                PolicyVersion(doc.name, next_version, verify, admit, description, guard=guard)
            )
            if latest is not None and _same(latest, candidate, ignore_version=True):
                return latest, False
            if doc.description is None and base is not None:
                candidate = replace(
                    candidate,
                    description=f"{base.ref} with {', '.join(changed) or 'nothing'} changed",
                )
        else:
            candidate = self._with_calibration(
                PolicyVersion(doc.name, version, verify, admit, description, guard=guard)
            )
        return self._put(candidate)

    def _put(self, policy: PolicyVersion) -> tuple[PolicyVersion, bool]:
        data = canonical_json(policy.as_dict())
        if self.store.put(self.key(policy.name, policy.version), data, create_only=True):
            return policy, True
        stored = self.get(policy.name, policy.version)
        if _same(stored, policy):
            return stored, False
        raise PolicyConflict(
            f"{policy.ref} is already published with other content; versions never change: "
            f"publish {policy.name}@{self.versions(policy.name)[-1] + 1} instead"
        )

    def ensure_builtins(self) -> None:
        """Register the built-in policies as version 1 (a no-op once they exist)."""
        for policy in builtin_policies().values():
            if not self.store.exists(self.key(policy.name, policy.version)):
                self._put(policy)


def _same(a: PolicyVersion, b: PolicyVersion, ignore_version: bool = False) -> bool:
    left, right = a.content(), b.content()
    if ignore_version:
        left.pop("version")
        right.pop("version")
    return (
        canonical_json(left) == canonical_json(right)
        and a.verify_fingerprint == b.verify_fingerprint
    )


def registered_policy(ref: str) -> PolicyVersion | None:
    """A version from the registry of the configured store, for a local command, without
    writing to the store: None when ``ref`` is no policy reference, the store holds nothing
    under the name or cannot be read (the built-in is then the one meant); PolicyError for a
    version the registry does not hold."""
    from groundswell.shared.quick_settings import storage_url
    from groundswell.shared.storage import StorageError, StorageRefused, open_store

    try:
        name, _ = parse_ref(ref)
    except PolicyError:
        return None
    url = storage_url()  # a folder's store needs no other setting: Settings is built for S3
    try:
        registry = PolicyRegistry(open_store(url))
        if not registry.versions(name):
            return None
        return registry.resolve(ref)
    except (StorageError, StorageRefused, OSError):
        return None


def local_policy(ref: str) -> PolicyVersion:
    """``ref`` as a local command reads it: the configured registry's version when the
    registry holds the name, else the built-in (PolicyError when neither knows it)."""
    return registered_policy(ref) or resolve_policy(ref)


def resolve_policy(ref: str) -> PolicyVersion:
    """A built-in policy by ``name`` or ``name@version``, without a registry (local commands)."""
    name, version = parse_ref(ref)
    policies = builtin_policies()
    if name not in policies:
        raise PolicyError(f"unknown policy {name!r}: known policies are {', '.join(policies)}")
    policy = policies[name]
    if version is not None and version != policy.version:
        raise PolicyError(f"policy {name} has no version {version} (latest is {policy.version})")
    return policy


def policy_for_ref(ref: str | Path) -> GtrexPolicy:
    """A policy as every local command (and the Python API) reads ``ref``: a policy file
    (groundswell's or gtrex's), or NAME / NAME@N / NAME@latest, from the policy registry of
    the configured store when it holds that name (what ``run`` uses), else a built-in
    (``guarded`` verifies as ``default``). The verification PolicyError
    (``verify/policy.py``) says which and why."""
    from groundswell.shared.repair.gtrex_policy import (
        GtrexPolicy,
        load_policy_file,
        unpublished_builtin,
    )
    from groundswell.shared.repair.policy import RepairSettings
    from groundswell.shared.verify.policy import PolicyError as VerifyPolicyError
    from groundswell.shared.verify.policy import get_verify_policy

    ref = str(ref)
    builtin = unpublished_builtin(ref)
    if builtin is not None:
        return builtin
    try:
        if Path(ref).exists() or ref.endswith(".json"):
            return load_policy_file(ref)  # its messages name the file
    except VerifyPolicyError as exc:
        raise VerifyPolicyError(f"invalid policy: {exc}") from None
    try:
        registered = _registered_gtrex(ref)
        if registered is not None:
            return registered
        policy = get_verify_policy(ref)
    except VerifyPolicyError as exc:
        raise VerifyPolicyError(f"invalid policy ({ref}): {exc}") from None
    return GtrexPolicy(policy, RepairSettings.for_policy(policy), None)


def _registered_gtrex(ref: str) -> GtrexPolicy | None:
    """The verification part of a published version, and its repair settings (with the
    threshold in force when the version repairs), without writing to the store."""
    from groundswell.shared.repair.gtrex_policy import GtrexPolicy
    from groundswell.shared.repair.policy import RepairSettings
    from groundswell.shared.verify.policy import BUILTIN_VERIFY_POLICIES
    from groundswell.shared.verify.policy import PolicyError as VerifyPolicyError

    try:
        version = registered_policy(ref)
        if version is None:
            # nothing published under that name here: gtrex's built-in, or one of ours
            # beyond gtrex's (guarded: default's verification)
            name = parse_ref(ref)[0] if POLICY_REF.match(ref) else None
            if name in BUILTIN_VERIFY_POLICIES or name is None:
                return None
            version = resolve_policy(ref)  # an unknown name: refused, naming every built-in
        policy = version.verify_policy
        if version.repair is not None:
            return GtrexPolicy(policy, version.repair.policy.settings, None)
        if version.repair_document is not None:  # published with repair_mode off
            return GtrexPolicy(policy, RepairSettings(repair_mode="off"), None)
        return GtrexPolicy(policy, RepairSettings.for_policy(policy), None)
    except PolicyError as exc:
        raise VerifyPolicyError(str(exc)) from None
