"""Claims recorded the same way in the ledger and in xrad 0.4.0 (the oracle), for the query
tests: generated graphs of named entities, quotes made of a small English vocabulary."""

from __future__ import annotations

import random
import sqlite3
import string
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from groundswell.shared.ledger.models import MODALITIES, entity_id
from groundswell.shared.ledger.store import ClaimIn, Ledger

TYPE = "Entity"
WORDS = [
    "acquired",
    "acquires",
    "acquisition",
    "owns",
    "owned",
    "owner",
    "merger",
    "merged",
    "shares",
    "share",
    "holding",
    "subsidiary",
    "board",
    "approved",
    "approval",
    "agreement",
    "agreements",
    "reported",
    "denied",
    "contract",
    "contracts",
    "transferred",
    "transfer",
]
RELATIONS = ("ACQUIRED", "OWNS", "SUPPLIES")
# Letters that xrad's fold keeps as they are (it maps j, y and v, and drops digits).
_LETTERS = "".join(c for c in string.ascii_lowercase if c not in "jyv")


@dataclass(frozen=True)
class C:
    """A claim of a generated graph."""

    id: str
    subject: str
    relation: str
    object: str
    modality: str = "assertion"
    polarity: str = "affirmed"
    asserter: str = "the filing"
    document: str = "doc"
    quote: str = "Acme acquired Beta"
    subject_type: str = TYPE


def two_stars(n: int) -> list[C]:
    """Two stars of ``n`` leaves joined leaf to leaf far from their hubs: a search between
    the hubs (without the frontier probe) reads every leaf's claims before it can meet."""
    claims = [C(f"a{i:03d}", "Hub A", "OWNS", f"A {i:03d}") for i in range(n)]
    claims += [C(f"b{i:03d}", "Hub B", "OWNS", f"B {i:03d}") for i in range(n)]
    return [*claims, C("j", f"A {n - 1:03d}", "OWNS", f"B {n - 1:03d}")]


def name(rng: random.Random) -> str:
    return "".join(rng.choice(_LETTERS) for _ in range(7)).capitalize()


def random_graph(rng: random.Random, entities: int, claims: int, *, hub: float = 0.0) -> list[C]:
    """``claims`` claims over ``entities`` entities: relation, modality and polarity at random
    (mostly assertions; some rejected, some denied; a fifth repeat an earlier triple, so
    disagreements exist); ``hub`` of the subjects are the first entity."""
    names = sorted({name(rng) for _ in range(entities)})
    out: list[C] = []
    for i in range(claims):
        if out and rng.random() < 0.2:
            base = rng.choice(out)
            s, r, o = base.subject, base.relation, base.object
        else:
            s = names[0] if rng.random() < hub else rng.choice(names)
            o = rng.choice(names)
            r = rng.choice(RELATIONS)
        modality = rng.choices(MODALITIES, weights=(10, 4, 2, 3, 1, 1))[0]
        polarity = "denied" if rng.random() < 0.08 else "affirmed"
        quote = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 9)))
        out.append(
            C(
                f"c{i:05d}",
                s,
                r,
                o,
                modality,
                polarity,
                rng.choice(["the filing", "Reuters", "the auditor"]),
                f"doc{rng.randrange(5)}",
                quote,
            )
        )
    return out


def record(ledger: Ledger, claims: list[C], **write) -> None:
    """Write ``claims`` to the ledger, as the importer would have made them (``write``: the
    options of ``Ledger.write_claims``)."""
    ledger.write_claims(claims_in(claims), **write)


def claims_in(claims: list[C]) -> list[ClaimIn]:
    """``claims`` as the importer would have made them."""
    now = datetime.now(UTC)
    rows = []
    for c in claims:
        s, o = entity_id(c.subject_type, c.subject), entity_id(TYPE, c.object)
        rows.append(
            ClaimIn(
                claim={
                    "id": c.id,
                    "document_id": c.document,
                    "relation": c.relation,
                    "subject_entity_id": s,
                    "object_entity_id": o,
                    "modality": c.modality,
                    "polarity": c.polarity,
                    "asserter": c.asserter,
                    "hedge_markers": [],
                    "qualifier": None,
                    "confidence": 0.0,
                    "verified": None,
                    "verifier_note": None,
                    "vocabulary": None,
                    "origin": "test",
                    "extra": {},
                    "recorded_at": now,
                },
                evidence=[
                    {
                        "claim_id": c.id,
                        "seq": 0,
                        "document_id": c.document,
                        "start": 0,
                        "end": len(c.quote),
                        "quote": c.quote,
                        "text": c.quote,
                        "tier": "exact",
                    }
                ],
                entities=[(s, c.subject_type, c.subject), (o, TYPE, c.object)],
            )
        )
    return rows


def record_in_xrad(db: Path, claims: list[C]) -> sqlite3.Connection:
    """The same claims through xrad's API (entities, then claims with their evidence)."""
    from xrad import Claim, Entity, Evidence, store

    conn = store.connect(db)
    labels = sorted({c.subject for c in claims} | {c.object for c in claims})
    store.add_entities(conn, [Entity(entity_id=n, type=TYPE, label=n) for n in labels])
    store.add_claims(
        conn,
        [
            Claim(
                claim_id=c.id,
                source_id=c.document,
                relation=c.relation,
                subject_id=c.subject,
                object_id=c.object,
                subject_entity_id=c.subject,
                object_entity_id=c.object,
                modality=c.modality,
                polarity=c.polarity,
                asserter=c.asserter,
                evidence=[Evidence(source_id=c.document, quote=c.quote, start=0, end=len(c.quote))],
            )
            for c in claims
        ],
    )
    return conn
