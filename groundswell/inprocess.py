"""The in-process Python API: verify quotations and admit candidate facts, with typed results.

gtrex's call shapes carry over (``Verifier(document, policy).verify(claim)``, the one-shot
``verify_claim(claim, document)``), as do groundgate's (``admit(document, schema,
candidates)`` with ``receipt.decisions``). Policies are named as the CLI names them (a
built-in, NAME@N from the configured registry, or a policy file) and resolved by the same
helpers, so ``policy="guarded"`` means here what it means to ``groundswell verify|admit``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundswell.shared.verify import Certificate, VerifyPolicy
from groundswell.shared.verify import Verifier as _Engine

Claim = str | Mapping[str, Any]
PolicyRef = str | Path | VerifyPolicy


def _verify_policy(policy: PolicyRef) -> VerifyPolicy:
    """``policy`` as ``groundswell verify --policy`` reads it (ValueError naming it)."""
    if isinstance(policy, VerifyPolicy):
        return policy
    from groundswell.shared.policies import policy_for_ref
    from groundswell.shared.verify.policy import PolicyError

    if not isinstance(policy, str | Path):
        raise TypeError(
            f"policy must be a name (default, default@1, guarded...), a policy file or a "
            f"VerifyPolicy, not {type(policy).__name__}"
        )
    try:
        return policy_for_ref(policy).verify
    except PolicyError as exc:
        raise ValueError(str(exc)) from None


def _claims(claims: Any, call: str) -> list[Claim]:
    """The list ``claims`` names; a str (or one record) is refused, since iterating it would
    verify each character (or each key) as a claim."""
    if isinstance(claims, str | bytes):
        raise TypeError(
            f"{call}: claims is a {type(claims).__name__}, not a list of claims (iterating it "
            "would verify each character); for one claim call "
            "groundswell.verify_claim(claim, document), gtrex's verify(claim, doc) order, "
            "or pass [claim]"
        )
    if isinstance(claims, Mapping):
        raise TypeError(f"{call}: claims is one record, not a list of them: pass [record]")
    if not isinstance(claims, Iterable):
        raise TypeError(f"{call}: claims must be a list of claims, not {type(claims).__name__}")
    return list(claims)


def _document(document: Any, call: str) -> str:
    if not isinstance(document, str):
        raise TypeError(f"{call}: document must be a str, not {type(document).__name__}")
    return document


class Verifier:
    """Claims checked against one document under one policy: the document is normalized
    and indexed once, on first use, then shared by every claim (gtrex's ``Verifier``)."""

    def __init__(self, document: str, policy: PolicyRef = "default") -> None:
        self.document = _document(document, "Verifier(document, policy)")
        self.policy = _verify_policy(policy)
        self._engine = _Engine(self.document, self.policy)

    def verify(self, claim: str) -> Certificate:
        """Whether the whole quotation is anywhere in the document, at which tier, where."""
        if not isinstance(claim, str):
            raise TypeError(f"verify(claim): claim must be a str, not {type(claim).__name__}")
        return self._engine.verify(claim)

    def verify_at(self, claim: str, start: int, end: int) -> Certificate:
        """Whether the quotation is at ``[start, end)`` (character offsets) only."""
        if not isinstance(claim, str):
            raise TypeError(f"verify_at(claim): claim must be a str, not {type(claim).__name__}")
        return self._engine.verify_at(claim, start, end)

    def verify_all(self, claims: Iterable[Claim]) -> list[Certificate]:
        """A certificate per claim: a string, or a record with ``claim`` and optional
        ``start``/``end`` (then checked there, as a run checks it)."""
        out = []
        for n, claim in enumerate(_claims(claims, "verify_all(claims)")):
            if isinstance(claim, str):
                out.append(self.verify(claim))
                continue
            text = claim.get("claim") if isinstance(claim, Mapping) else None
            if not isinstance(text, str):
                raise TypeError(
                    f"claims[{n}]: a claim is a str or a record with a string 'claim', "
                    f"not {type(claim).__name__}"
                    + (" without one" if isinstance(claim, Mapping) else "")
                )
            start, end = claim.get("start"), claim.get("end")
            if start is not None and end is not None:
                out.append(self.verify_at(text, start, end))
            else:
                out.append(self.verify(text))
        return out


def verify(
    document: str, claims: Iterable[Claim], policy: PolicyRef = "default"
) -> list[Certificate]:
    """Certificates of ``claims`` (a list of strings, or records with "claim" and optional
    "start"/"end") against ``document``, under a policy as the CLI names it: verdict, tier,
    offsets into the original text. One claim: :func:`verify_claim`."""
    call = "verify(document, claims)"
    checked = _claims(claims, call)  # before the document: verify(claim, doc) names claims
    return Verifier(_document(document, call), policy).verify_all(checked)


def verify_claim(claim: str, document: str, policy: PolicyRef = "default") -> Certificate:
    """One claim against ``document`` (gtrex's one-shot ``verify(claim, doc)`` order). For
    many claims of one document, a :class:`Verifier` normalizes the document once."""
    return Verifier(document, policy).verify(claim)


def verify_at(
    claim: str, document: str, start: int, end: int, policy: PolicyRef = "default"
) -> Certificate:
    """One claim at ``[start, end)`` of ``document`` (gtrex's one-shot ``verify_at``)."""
    return Verifier(document, policy).verify_at(claim, start, end)


# -- admission --------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One candidate's decision: ``outcome`` (admitted, needs_verification, rejected) and
    its ``codes``; ``data`` is the receipt's record of it, every member."""

    candidate_id: str | None
    field: str | None
    key: Any
    value: Any
    unit: Any
    outcome: str
    codes: tuple[str, ...]
    data: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        return cls(
            candidate_id=data.get("candidate_id"),
            field=data.get("field"),
            key=data.get("key"),
            value=data.get("value"),
            unit=data.get("unit"),
            outcome=data["outcome"],
            codes=tuple(data.get("codes") or ()),
            data=data,
        )


@dataclass(frozen=True)
class Receipt:
    """An admission receipt (groundgate's specification v0.11): its decisions, summary and
    digest; ``to_dict()`` is the receipt itself, ``to_json()`` its bytes as the CLI writes."""

    decisions: tuple[Decision, ...]
    summary: Mapping[str, Any]
    receipt_sha256: str
    _data: dict[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Receipt:
        return cls(
            decisions=tuple(Decision.from_dict(d) for d in data.get("decisions", ())),
            summary=data.get("summary") or {},
            receipt_sha256=data.get("receipt_sha256", ""),
            _data=data,
        )

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def to_json(self) -> str:
        from groundswell.shared.cli.admit import _dump

        return _dump(self._data)

    def outcomes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for decision in self.decisions:
            counts[decision.outcome] = counts.get(decision.outcome, 0) + 1
        return counts


def _admit_version(policy: str | Path) -> tuple[dict[str, Any] | None, Any]:
    """A str policy as ``groundswell admit --policy`` reads it: a file (groundgate's
    admission policy JSON) or a policy version NAME[@N] (the configured registry's, else a
    built-in such as guarded); ValueError naming it otherwise."""
    from groundswell.shared.policies import POLICY_REF, PolicyError, local_policy

    text = str(policy)
    if Path(text).is_file():
        return json.loads(Path(text).read_text(encoding="utf-8")), None
    if not POLICY_REF.match(text):
        raise ValueError(f"policy {text!r} is neither a policy file nor NAME[@N]")
    try:
        version = local_policy(text)
        _ = version.guard_settings  # a guard that does not validate is refused here
    except PolicyError as exc:
        raise ValueError(f"policy {text}: {exc}") from None
    return None, version


def admit(
    document: str,
    schema: dict[str, Any],
    candidates: list[Any],
    policy: str | Path | dict[str, Any] | None = None,
    *,
    admission_policy: dict[str, Any] | None = None,
    **options: Any,
) -> Receipt:
    """The receipt of ``candidates``: each admitted, sent for verification or rejected,
    with its codes. ``policy`` is a policy version as the CLI names it (``"guarded"``,
    ``"default@1"``, NAME@N from the registry: its admission and guards), or groundgate's
    admission policy (a dict or a JSON file); ``admission_policy`` gives groundgate's beside
    a version. Options: document_id, document_source, references, judgments, packs.
    Raises PacketError for an invalid packet."""
    from groundswell.shared.admit import admit as _admit

    call = "admit(document, schema, candidates)"
    _document(document, call)
    if isinstance(candidates, str | bytes | Mapping):
        raise TypeError(f"{call}: candidates must be a list of candidate objects")
    version = None
    if isinstance(policy, str | Path):
        loaded, version = _admit_version(policy)
        if loaded is not None:
            policy = loaded
        else:
            policy = None
    if admission_policy is not None:
        if policy is not None:
            raise TypeError("give groundgate's admission policy once: policy or admission_policy")
        policy = admission_policy
    if policy is not None and not isinstance(policy, dict):
        raise TypeError(f"policy must be a name, a file or a dict, not {type(policy).__name__}")
    receipt = _admit(document, schema, list(candidates), policy, version=version, **options)
    return Receipt.from_dict(receipt)


def check_receipt(
    receipt: Receipt | dict[str, Any],
    document: str,
    schema: dict[str, Any],
    candidates: list[Any],
    policy: dict[str, Any] | None = None,
) -> list[str]:
    """Re-derive ``receipt`` from its inputs: the differences, empty when it holds. A
    receipt as a run stores it (``{"receipt": ...}`` with its inputs' digests) is unwrapped."""
    from groundswell.shared.guarded.rederive import check_receipt as _check

    data = receipt.to_dict() if isinstance(receipt, Receipt) else receipt
    if "decisions" not in data and isinstance(data.get("receipt"), dict):
        data = data["receipt"]
    return _check(data, document, schema, candidates, policy)
