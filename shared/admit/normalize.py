"""Admitting a document that is not in NFC: the packet moved onto the document's NFC form.

The SPEC admits NFC text only (what groundgate's ``read`` writes). A corpus document that is not
NFC is admitted against its NFC form instead: every document offset a candidate cites (evidence
spans and ``search_region``) is translated from the original's bytes to the NFC text's, and
document quotes are normalized the same way. The receipt's wrapper records that the document
was normalized with the digests of both forms; since the translation is a function of the
original text and candidates, anyone holding them re-derives the same receipt.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Any

from groundswell.shared.admit.items import _is_int
from groundswell.shared.text.nfc import NfcText, to_nfc


@dataclass
class NormalizedPacket:
    text: str
    candidates: list[Any]
    # None when the document was already NFC; otherwise what the receipt records.
    note: dict[str, Any] | None


def _span(nfc: NfcText, span: dict[str, Any]) -> dict[str, Any]:
    if not (_is_int(span.get("start")) and _is_int(span.get("end"))):
        return span  # malformed: admission reports it as it is
    return {
        **span,
        "start": nfc.offset(span["start"], end=False),
        "end": nfc.offset(span["end"], end=True),
    }


def _item(nfc: NfcText, item: Any) -> Any:
    if not isinstance(item, dict) or item.get("source", "document") != "document":
        return item  # references, external and knowledge items cite other texts
    out = _span(nfc, item) if "start" in item or "end" in item else dict(item)
    if isinstance(out.get("text"), str):
        out["text"] = unicodedata.normalize("NFC", out["text"])
    return out


def _candidate(nfc: NfcText, cand: Any) -> Any:
    if not isinstance(cand, dict):
        return cand
    out = dict(cand)
    evidence = cand.get("evidence")
    if isinstance(evidence, list):
        out["evidence"] = [_item(nfc, item) for item in evidence]
    elif isinstance(evidence, dict):
        out["evidence"] = _item(nfc, evidence)
    region = cand.get("search_region")
    if isinstance(region, dict):
        out["search_region"] = _span(nfc, region)
    return out


def nfc_packet(text: str, candidates: list[Any]) -> NormalizedPacket:
    """The document's NFC form and the candidates moved onto it (unchanged when already NFC)."""
    nfc = to_nfc(text)
    if not nfc.changed:
        return NormalizedPacket(text, candidates, None)
    moved = [_candidate(nfc, cand) for cand in candidates]
    note = {
        "form": "NFC",
        "original_sha256": _sha256(text),
        "text_sha256": _sha256(nfc.text),
        "candidates_changed": sum(a != b for a, b in zip(candidates, moved, strict=True)),
    }
    return NormalizedPacket(nfc.text, moved, note)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
