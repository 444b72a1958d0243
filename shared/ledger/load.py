"""Loading a run's receipts into the ledger: the ``ledger`` unit of a run with ``ledger`` on.

One ledger unit per document: the admitted decisions of its admission receipt become claims
whose asserter is the document (subject: the document, relation: the field, object: the
value), each with its fact row (field, key, value, unit, run, policy version, receipt
digest) and its evidence span; the grounded quotations of its verification receipt become
``quotes`` claims with their span and tier as evidence (verification's tier, typography and
skeleton included: :data:`~groundswell.shared.ledger.models.EVIDENCE_TIERS`).

Exactly once: a claim's id is derived from the receipt's digest, the decision's (or
quotation's) index and the run's policy version, and a write replaces a stored claim of the
same id, so a redelivered or repeated unit adds nothing. A reprocessing run under another
policy version writes claims of other ids beside the old ones: the history of a fact
(:mod:`groundswell.shared.ledger.history`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from groundswell.shared.admit.index import ByteMap
from groundswell.shared.corpus import InputError
from groundswell.shared.ledger.models import EVIDENCE_TIERS, FactRow, entity_id
from groundswell.shared.ledger.store import ClaimIn
from groundswell.shared.text.nfc import NfcText, to_nfc

DOCUMENT_TYPE = "Document"
VALUE_TYPE = "Value"
QUOTATION_TYPE = "Quotation"
QUOTES = "quotes"  # the relation of a grounded quotation's claim
# What the ledger's columns hold: a field is a claim's relation too (both 200 characters).
FIELD_LENGTH = FactRow.__table__.c.field.type.length
UNIT_LENGTH = FactRow.__table__.c.unit.type.length


# The ids this module derives: the pipeline's own, which an import may never write.
PIPELINE_PREFIXES = ("fact:", "quote:")


def claim_id(kind: str, receipt_sha256: str, index: int, policy_version: str) -> str:
    """``fact:<32 hex>`` or ``quote:<32 hex>``: one per (receipt, index, policy version)."""
    digest = hashlib.sha256(f"{receipt_sha256}\x00{index}\x00{policy_version}".encode())
    return f"{kind}:{digest.hexdigest()[:32]}"


def _value_label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


@dataclass
class Loaded:
    """What one document's receipts give the ledger."""

    claims: list[ClaimIn] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    # Grounded at a tier the ledger's evidence does not hold (a policy's own ladder may name
    # tiers of its own): not written, counted.
    skipped_tier: int = 0

    def counters(self, refused: Collection[str] = ()) -> dict[str, int]:
        """What the rows add to a run's counters: ``ledger.facts``, ``ledger.quotations`` and
        ``ledger.quotations.tier.<tier>``, ``ledger.quotations_skipped_tier``; ``refused``
        names the claims the database did not store."""
        out: Counter[str] = Counter()
        out["ledger.facts"] = sum(f["claim_id"] not in refused for f in self.facts)
        for claim in self.claims:
            if claim.claim["id"].startswith("quote:") and claim.claim["id"] not in refused:
                out["ledger.quotations"] += 1
                out[f"ledger.quotations.tier.{claim.evidence[0]['tier']}"] += 1
        out["ledger.quotations_skipped_tier"] = self.skipped_tier
        return dict(out)


def _unfit(decision: dict[str, Any]) -> tuple[str, str] | None:
    """(field, why) when an admitted decision is not a fact the ledger can hold: checked here
    so that both backends refuse it alike (SQLite does not enforce lengths), before anything
    of the document is written."""
    name = decision.get("field")
    if not isinstance(name, str) or not name:
        return "field", "an admitted decision without a field"
    if len(name) > FIELD_LENGTH:
        return "field", f"a field name of {len(name)} characters (the ledger holds {FIELD_LENGTH})"
    key = decision.get("key")
    if key is not None and not isinstance(key, str):
        return "key", f"key {key!r} is not a string"
    unit = decision.get("unit")
    if unit is not None and not (isinstance(unit, str) and len(unit) <= UNIT_LENGTH):
        return "unit", f"unit {unit!r} is not a string of at most {UNIT_LENGTH} characters"
    return None


def _char_span(
    offsets: ByteMap, start: Any, end: Any, nfc: NfcText | None = None
) -> tuple[int, int] | None:
    """UTF-8 byte offsets (admission evidence's) as character offsets, or None if invalid.
    ``nfc``: the document was admitted on its NFC form, so the offsets are the NFC text's and
    are first moved back into the document (a span NFC merged into one character widens)."""
    if not (isinstance(start, int) and isinstance(end, int)):
        return None
    if nfc is not None:
        start, end = nfc.original_offset(start, end=False), nfc.original_offset(end, end=True)
    if not 0 <= start < end <= offsets.n_bytes:
        return None
    at_start, at_end = offsets.to_char(start), offsets.to_char(end)
    return None if at_start is None or at_end is None else (at_start, at_end)


def load_document(
    doc_id: str,
    text: str,
    *,
    run_id: str,
    policy_version: str,
    admit: tuple[str, dict[str, Any]] | None,
    verify: tuple[str, dict[str, Any]] | None,
    now: datetime | None = None,
    corpus: str | None = None,
) -> Loaded:
    """The ledger rows of one document from its (receipt key, receipt) pairs."""
    now = now or datetime.now(UTC)
    out = Loaded()
    doc_entity = (entity_id(DOCUMENT_TYPE, doc_id), DOCUMENT_TYPE, doc_id)

    def claim(cid: str, relation: str, obj: tuple[str, str, str], origin: str, extra: dict):
        return {
            "id": cid,
            "document_id": doc_id,
            "relation": relation,
            "subject_entity_id": doc_entity[0],
            "object_entity_id": obj[0],
            "modality": "assertion",
            "polarity": "affirmed",
            "asserter": doc_id,
            "hedge_markers": [],
            "qualifier": None,
            "confidence": 1.0,
            "verified": None,
            "verifier_note": None,
            "vocabulary": None,
            "origin": origin,
            "extra": extra,
            "recorded_at": now,
            "corpus": corpus,
        }

    def span(cid: str, start: int, end: int, quote: str, tier: str) -> list[dict[str, Any]]:
        return [
            {
                "claim_id": cid,
                "seq": 0,
                "document_id": doc_id,
                "start": start,
                "end": end,
                "quote": quote,
                "text": text[start:end],
                "tier": tier,
            }
        ]

    if admit is not None:
        key, receipt = admit
        digest = receipt["receipt_sha256"]
        offsets = ByteMap(text)
        # A document that is not NFC was admitted on its NFC form (the receipt says so).
        nfc = to_nfc(text) if receipt.get("normalized") else None
        decisions = (receipt.get("receipt") or {}).get("decisions") or []
        for index, decision in enumerate(decisions):
            if decision.get("outcome") != "admitted":
                continue
            where = f"{key}:{index + 1}"
            unfit = _unfit(decision)
            if unfit is not None:
                out.errors.append(InputError(key, unfit[1], index + 1, unfit[0]))
                continue
            fieldname = decision["field"]
            evidence = decision.get("evidence") or {}
            at = _char_span(offsets, evidence.get("start"), evidence.get("end"), nfc)
            if at is None:
                out.errors.append(
                    InputError(
                        key,
                        f"evidence span {evidence!r} is not in the document",
                        index + 1,
                        "evidence",
                    )
                )
                continue
            value = decision.get("value")
            obj = (entity_id(VALUE_TYPE, _value_label(value)), VALUE_TYPE, _value_label(value))
            cid = claim_id("fact", digest, index, policy_version)
            extra = {"candidate_id": decision.get("candidate_id"), "key": decision.get("key")}
            if decision.get("unit") is not None:
                extra["unit"] = decision["unit"]
            out.claims.append(
                ClaimIn(
                    claim(cid, fieldname, obj, where, extra),
                    span(cid, at[0], at[1], text[at[0] : at[1]], "exact"),
                    [doc_entity, obj],
                )
            )
            out.facts.append(
                {
                    "claim_id": cid,
                    "field": fieldname,
                    "key": decision.get("key") or "",
                    "value": value,
                    "unit": decision.get("unit"),
                    "run_id": run_id,
                    "policy_version": policy_version,
                    "receipt_digest": digest,
                }
            )
    if verify is not None:
        key, receipt = verify
        digest = receipt["receipt_sha256"]
        for index, record in enumerate(receipt.get("records") or []):
            cert = record.get("certificate") or {}
            if cert.get("verdict") != "grounded" or not cert.get("contiguous", True):
                continue
            line = record.get("line") or index + 1
            start, end = cert.get("start"), cert.get("end")
            if not (
                isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)
            ):
                out.errors.append(
                    InputError(
                        key, f"span [{start}, {end}) is not in the document", line, "certificate"
                    )
                )
                continue
            if cert.get("tier") not in EVIDENCE_TIERS:
                out.skipped_tier += 1
                continue
            quote = (record.get("record") or {}).get("claim")
            label = f"{doc_id}#{(record.get('record') or {}).get('id', line)}"
            obj = (entity_id(QUOTATION_TYPE, label), QUOTATION_TYPE, label)
            cid = claim_id("quote", digest, index, policy_version)
            extra = {
                "claim": (record.get("record") or {}).get("id"),
                "receipt_digest": digest,
                "policy_version": policy_version,
                "run_id": run_id,
            }
            out.claims.append(
                ClaimIn(
                    claim(cid, QUOTES, obj, f"{key}:{line}", extra),
                    span(
                        cid,
                        start,
                        end,
                        quote if isinstance(quote, str) else text[start:end],
                        cert["tier"],
                    ),
                    [doc_entity, obj],
                )
            )
    return out
