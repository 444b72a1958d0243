"""Admission: the decision procedure of groundgate's specification v0.11, with receipts.

``admit`` decides typed candidate facts against a document and a schema: each is admitted,
sent for verification, or rejected with a reason code, and the receipt hashes every input
(SPEC §5, §6). ``Admitter`` prepares a document once for many calls.
"""

from __future__ import annotations

from typing import Any

from groundswell.shared.admit.digest import SPEC_VERSION, digest
from groundswell.shared.admit.engine import Admitter
from groundswell.shared.admit.errors import PacketError

# Bumped whenever a change to this package can move a decision or a receipt byte.
# 2: non-NFC documents are admitted on their NFC form.
# 3: a unit or scale item holds a form or currency name "as a whole" up to its own end, as
#    groundgate reads it ("percent" of "percentage" holds "percent"); "in" of a scale form is
#    read with the text before the item; the first occurrence "after the value" starts at the
#    value's start (issue 14).
# 4: a unit form after the value, also on its own line, is no unit place of it (#249): only
#    forms from the first line of the value's table up to the value count, as groundgate reads
#    them.
ENGINE_REVISION = "groundswell-admit/4"


def admit(
    document: str,
    schema: dict[str, Any],
    candidates: list[Any],
    policy: dict[str, Any] | None = None,
    *,
    document_id: str | None = None,
    document_source: str | None = None,
    references: list[Any] | None = None,
    judgments: list[Any] | None = None,
    packs: list[Any] | None = None,
    version: Any = None,
) -> dict[str, Any]:
    """The SPEC §5 receipt for ``candidates``; raises PacketError for an invalid packet (§2).

    ``version`` (a policy version) decides under that version's admission (see
    :func:`admitter_for`), over ``policy`` when given; None is groundgate's, under ``policy``."""
    admitter = admitter_for(
        version,
        document,
        schema,
        policy=policy,
        document_id=document_id,
        document_source=document_source,
        references=references,
        packs=packs,
    )
    return admitter.admit(candidates, judgments)


def admit_packet(packet: dict[str, Any], version: Any = None) -> dict[str, Any]:
    """The receipt for a conformance-vector-shaped packet (``expected`` is ignored), under
    the policy version ``version`` over the packet's own admission policy (see ``admit``)."""
    if not isinstance(packet, dict):
        raise PacketError("a packet is a JSON object")
    for member in ("document", "schema", "candidates"):
        if member not in packet:
            raise PacketError(f"the packet has no {member}")
    return admit(
        packet["document"],
        packet["schema"],
        packet["candidates"],
        packet.get("policy"),
        document_id=packet.get("document_id"),
        document_source=packet.get("document_source"),
        references=packet.get("references"),
        judgments=packet.get("judgments"),
        packs=packet.get("packs"),
        version=version,
    )


__all__ = [
    "ENGINE_REVISION",
    "SPEC_VERSION",
    "Admitter",
    "PacketError",
    "admit",
    "admit_packet",
    "admitter_for",
    "digest",
]


def admitter_for(policy: Any, document: str, schema: Any, /, **kwargs: Any) -> Admitter:
    """The admitter a policy version runs, over the version's admission settings (else the
    packet's own): groundgate's for None, or the one the version makes itself (its
    ``admitter(document, schema, policy, **kwargs)``: the guarded one when the version has a
    ``guard`` part, see policies.py). admit/ knows no admitter built on it."""
    admit_policy = kwargs.pop("policy", None)
    if admit_policy is None and policy is not None:
        admit_policy = getattr(policy, "admit", None)
    make = getattr(policy, "admitter", None)
    if make is None:
        return Admitter(document, schema, admit_policy, **kwargs)
    return make(document, schema, admit_policy, **kwargs)
