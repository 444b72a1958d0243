"""Recording one claim as an agent does (issue 32 item 7): the line an import would read,
checked by the import's own code (so a refusal is the import's, word for word), against a
document of a corpus, then written create-once under an id namespaced by its source.

An agent cannot assert without quoting: a quote not in the document, a relation outside the
vocabulary, a bad modality are refused with the import's reason, and a near miss says where
the closest span of the document is (so the agent can quote it); a ``reported`` claim whose
quote does not name its asserter is stored and warned (:func:`.importer.asserter_warning`).
``POST /v1/ledger/claims`` and the MCP server's ``record_claim`` and ``check_quote`` are
this module over HTTP and MCP.

Ids: ``<document>:<claim_id>`` (the agent's id, or ``c`` and 16 hex digits of the digest of
the claim's content when it gives none), so two sources never share an id. Create-once: an
id recorded already is never replaced; the same claim again is answered ``created: false``
(a retry), another claim under that id is refused (``exists``). A claim whose quote does not
name its subject (or a reported claim's asserter) is answered with ``widened``, the smallest
wider span that does (:mod:`.widen`), kept with the claim as a suggestion, never applied.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text as sql

from groundswell.shared.corpus import decode_document, document_key
from groundswell.shared.ledger.folding import search_text
from groundswell.shared.ledger.importer import (
    INVALID,
    QUOTE_NOT_FOUND,
    Refusal,
    claims_of_file,
    corpus_vocabulary,
)
from groundswell.shared.ledger.locate import DocumentText
from groundswell.shared.ledger.store import ClaimIn, Ledger
from groundswell.shared.ledger.vocab import Vocabulary
from groundswell.shared.ledger.widen import SUGGESTION, suggestion

EXISTS = "exists"
NEAREST_AT_LEAST = 0.5  # of the quote's words a span must share to be offered
_DOCUMENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,199}")
_TOKEN = re.compile(r"[^\W_]+")
# What makes two recordings the same claim (a retry), beside its evidence quote.
_SAME = ("relation", "subject_entity_id", "object_entity_id", "modality", "polarity", "asserter")


class NoDocument(LookupError):
    """The document to record against is not in the corpus (or its id is not one)."""


@dataclass(frozen=True)
class Source:
    """A document to record against: its corpus, id, text and the corpus's vocabulary."""

    corpus: str
    document_id: str
    text: str
    vocabulary: Vocabulary | None = None


def open_source(corpus: str, document_id: str) -> Source:
    """``documents/<document_id>.txt`` of ``corpus`` (a folder or s3:// prefix), with the
    corpus's ``vocabulary.yaml`` if it has one; NoDocument when there is no such document."""
    from groundswell.shared.storage import open_store

    if not _DOCUMENT_ID.fullmatch(document_id) or ".." in document_id:
        raise NoDocument(
            f"{document_id[:80]!r} is not a document id (letters, digits, '.', '_', '@', '-')"
        )
    key = document_key(document_id)
    try:
        data = open_store(corpus).get(key)
    except KeyError:
        raise NoDocument(f"no document {key} in {corpus}") from None
    return Source(corpus, document_id, decode_document(data, key), corpus_vocabulary(corpus))


def nearest_span(text: str, quote: str) -> dict[str, Any] | None:
    """The span of ``text`` of as many words as ``quote`` sharing the most of its words
    (folded as search folds them), when it shares at least half: ``{start, end, text,
    shared}``. One pass over the document's words, the window's counts kept as it slides."""
    wanted = Counter(search_text(quote).split())
    n = sum(wanted.values())
    if not n:
        return None
    tokens = [(m.start(), m.end(), search_text(m.group(0))) for m in _TOKEN.finditer(text)]
    have: Counter = Counter()
    shared = best = 0
    best_at = -1
    for i, (_, _, word) in enumerate(tokens):
        have[word] += 1
        if have[word] <= wanted[word]:
            shared += 1
        if i >= n:
            gone = tokens[i - n][2]
            if have[gone] <= wanted[gone]:
                shared -= 1
            have[gone] -= 1
        if shared > best:
            best, best_at = shared, i
    if best_at < 0 or best / n < NEAREST_AT_LEAST:
        return None
    first = max(0, best_at - n + 1)
    while first < best_at and tokens[first][2] not in wanted:  # start on a shared word
        first += 1
    start, end = tokens[first][0], tokens[best_at][1]
    return {"start": start, "end": end, "text": text[start:end], "shared": round(best / n, 3)}


def check_quote(source: Source, quote: str) -> dict[str, Any]:
    """Whether ``quote`` is in the document as the import locates it: ``{found: true, start,
    end, tier}``, or ``{found: false, message, nearest}``."""
    at = DocumentText(source.text).locate(quote) if isinstance(quote, str) else None
    if at is not None:
        return {"found": True, "start": at.start, "end": at.end, "tier": at.tier}
    return {
        "found": False,
        "message": f"quote not found in {source.document_id} (exact, case-insensitive and "
        "whitespace-insensitive; never fuzzy)",
        "nearest": nearest_span(source.text, quote) if isinstance(quote, str) else None,
    }


@dataclass
class Recorded:
    """What recording one claim did: stored (``created``: newly), or refused."""

    claim_id: str | None = None
    created: bool = False
    located: dict[str, Any] | None = None
    refusal: Refusal | None = None
    warnings: list[Refusal] = field(default_factory=list)
    nearest: dict[str, Any] | None = None
    widened: dict[str, Any] | None = None  # a wider quote naming what this one does not

    @property
    def ok(self) -> bool:
        return self.refusal is None

    def as_dict(self) -> dict[str, Any]:
        if self.refusal is not None:
            out: dict[str, Any] = {
                "ok": False,
                "error": self.refusal.code,
                "field": self.refusal.field,
                "message": self.refusal.message,
            }
            if self.refusal.code == QUOTE_NOT_FOUND:
                out["nearest"] = self.nearest
            return out
        return {
            "ok": True,
            "claim_id": self.claim_id,
            "created": self.created,
            "located_at": [self.located["start"], self.located["end"]] if self.located else None,
            "tier": self.located["tier"] if self.located else None,
            "warnings": [w.message for w in self.warnings],
            **({"widened": self.widened} if self.widened is not None else {}),
        }


def _content_id(fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "c" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def record_claim(
    ledger: Ledger, source: Source, fields: dict[str, Any], *, recorder: str
) -> Recorded:
    """Check ``fields`` (a claim line of the import's format) against ``source`` as an import
    would, and store it create-once as ``<document>:<claim_id>``; ``recorder`` (the key's
    name) is where it came from (``origin``)."""
    if not isinstance(fields, dict):
        return Recorded(refusal=Refusal("request", 1, None, INVALID, "a claim is a JSON object"))
    line = dict(fields)
    line.setdefault("claim_id", _content_id(line))
    line.setdefault("source_id", source.document_id)
    warnings: list[Refusal] = []
    try:
        data = json.dumps(line, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        return Recorded(refusal=Refusal("request", 1, None, INVALID, f"not JSON text: {exc}"))
    claims, refusals = claims_of_file(
        data,
        f"recorded by {recorder}",
        source.text,
        source.document_id,
        vocab=source.vocabulary,
        warnings=warnings,
    )
    if refusals:
        refusal = refusals[0]
        nearest = None
        if refusal.code == QUOTE_NOT_FOUND:
            nearest = nearest_span(source.text, line.get("quote") or "")
        return Recorded(refusal=refusal, nearest=nearest)
    (claim,) = claims
    claim_id = f"{source.document_id}:{line['claim_id']}"
    claim.claim["id"] = claim_id
    claim.claim["corpus"] = source.corpus
    for e in claim.evidence:
        e["claim_id"] = claim_id
    evidence = claim.evidence[0]
    located = {"start": evidence["start"], "end": evidence["end"], "tier": evidence["tier"]}
    widened = suggestion(
        source.text,
        evidence["start"],
        evidence["end"],
        line["subject_id"],
        claim.claim["modality"],
        line["asserter"],
    )
    if widened is not None:  # kept as a suggestion; the evidence is what was quoted
        claim.claim["extra"] = {**claim.claim["extra"], SUGGESTION: widened}
    stored = _stored(ledger, claim_id)
    if stored is not None:
        if _same(stored, claim):
            return Recorded(claim_id, False, located, warnings=warnings, widened=widened)
        message = (
            f"claim id {claim_id!r} is recorded already, as another claim: a recorded claim is "
            "never replaced (give the claim an id of its own, or none for one derived from it)"
        )
        return Recorded(refusal=Refusal("request", 1, "claim_id", EXISTS, message))
    failed: list[str] = []
    ledger.write_claims([claim], reject=lambda _c, why: failed.append(why))
    if failed:
        message = f"the ledger's database refused this claim: {failed[0]}"
        return Recorded(refusal=Refusal("request", 1, None, INVALID, message))
    return Recorded(claim_id, True, located, warnings=warnings, widened=widened)


def _stored(ledger: Ledger, claim_id: str) -> dict[str, Any] | None:
    columns = ", ".join(f"c.{c}" for c in _SAME)
    with ledger.engine.connect() as conn:
        row = (
            conn.execute(
                sql(
                    f"SELECT {columns}, e.quote FROM claims c LEFT JOIN evidence e "
                    "ON e.claim_id = c.id AND e.seq = 0 WHERE c.id = :id"
                ),
                {"id": claim_id},
            )
            .mappings()
            .first()
        )
    return dict(row) if row is not None else None


def _same(stored: dict[str, Any], claim: ClaimIn) -> bool:
    return all(stored[c] == claim.claim[c] for c in _SAME) and (
        stored["quote"] == claim.evidence[0]["quote"]
    )
