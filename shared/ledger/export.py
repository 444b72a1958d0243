"""Exports of the ledger: JSON-LD, GraphML, Cypher and a CSV pair, with provenance on every
claim, streamed.

Each claim stays a claim in every format (an ``rdf:Statement``; a ``(:Claim)`` node between
its subject and object; a row with modality and asserter columns), and carries where it came
from: the source document, each evidence span (start and end offsets into the document's
text, the quote as the extractor gave it, the document's text at those offsets, the tier that
located it), the asserter, modality, polarity and hedge markers, the audit verdict, the file
and line it was imported from, and, for a claim that came from a run, the run, the receipt
digest and the policy version (columns of ``claims`` when the schema has them, else the fields
of that name the claim's line carried).

Exports stream: claims and entities are read from the store in pages (keyset pagination on
their ids, ``page_size`` rows a query) and written as they come, so memory does not grow with
the ledger; a 10M-claim ledger exports in the memory of one page.

Compared with ``xrad export`` (0.4.0), deliberately: quotes are never cut short (xrad cuts
GraphML's at 300 and Cypher's at 400 characters); the span offsets, tier, document text,
verifier note and run provenance are carried (xrad carries none); GraphML escapes attribute
quotes and drops characters XML cannot hold (xrad writes malformed XML for ``"`` in an id);
JSON-LD declares every prefix it uses and builds IRIs with percent-encoded ids; Cypher
``MERGE``s claims on their id, so loading a file twice duplicates nothing (xrad ``CREATE``s).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote as percent

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import aliased

from groundswell.shared.ledger.models import ClaimRow, EntityGroupRow, EntityRow, EvidenceRow
from groundswell.shared.ledger.store import Ledger

FORMATS = ("jsonld", "graphml", "cypher", "csv")
PAGE_SIZE = 1000
# Run provenance of a claim: the columns of the ``facts`` table (an admitted fact's run,
# policy version and receipt) when the ledger has it, else fields of that name on the line.
RUN_FIELDS = ("run_id", "receipt_digest", "policy_version")
FACTS = "facts"


@dataclass(frozen=True, slots=True)
class Span:
    document_id: str
    start: int
    end: int
    quote: str  # as the extractor gave it
    text: str  # the document's text at [start, end)
    tier: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.document_id,
            "start": self.start,
            "end": self.end,
            "quote": self.quote,
            "text": self.text,
            "tier": self.tier,
        }


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    type: str
    label: str
    group: str | None = None  # its resolution group (the group's label entity), if resolved


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim as exported: the claim, the entities it names, its spans and provenance."""

    id: str
    document_id: str
    relation: str
    subject: Entity
    object: Entity
    modality: str
    polarity: str
    asserter: str
    hedge_markers: list[str]
    qualifier: str | None
    confidence: float
    verified: bool | None
    verifier_note: str | None
    vocabulary: str | None
    origin: str
    spans: list[Span] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)  # RUN_FIELDS present on the claim

    @property
    def quote(self) -> str:
        return self.spans[0].quote if self.spans else ""


class LedgerReader:
    """The claims and entities of a ledger, read in pages of ``page_size`` in id order.
    ``fetch_claims`` and ``fetch_entities`` read one page; ``claims()`` and ``entities()``
    iterate them all. ``unjudged_only``: only claims with no audit verdict. ``sees`` (a team
    key's): only the claims of the corpora it accepts, and only the entities they name."""

    def __init__(
        self,
        ledger: Ledger,
        page_size: int = PAGE_SIZE,
        *,
        unjudged_only: bool = False,
        sees: Callable[[str], bool] | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.ledger = ledger
        self.page_size = page_size
        self.unjudged_only = unjudged_only
        self._facts = _run_table(ledger)
        self.corpora: list[str] | None = None
        if sees is not None:
            from groundswell.shared.ledger.queries import seen_corpora

            with ledger.engine.connect() as conn:
                self.corpora = seen_corpora(conn, sees)

    def fetch_claims(self, after: str | None, limit: int) -> list[Claim]:
        subject, obj = aliased(EntityRow), aliased(EntityRow)
        query = (
            select(
                ClaimRow.__table__,
                subject.type.label("subject_type"),
                subject.label.label("subject_label"),
                obj.type.label("object_type"),
                obj.label.label("object_label"),
            )
            .join(subject, subject.id == ClaimRow.subject_entity_id)
            .join(obj, obj.id == ClaimRow.object_entity_id)
            .order_by(ClaimRow.id)
            .limit(limit)
        )
        if after is not None:
            query = query.where(ClaimRow.id > after)
        if self.unjudged_only:
            query = query.where(ClaimRow.verified.is_(None))
        if self.corpora is not None:
            query = query.where(ClaimRow.corpus.in_(self.corpora))
        with self.ledger.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
            spans: dict[str, list[Span]] = {}
            if rows:
                ids = [r["id"] for r in rows]
                evidence = conn.execute(
                    select(EvidenceRow.__table__)
                    .where(EvidenceRow.claim_id.in_(ids))
                    .order_by(EvidenceRow.claim_id, EvidenceRow.seq)
                ).mappings()
                for e in evidence:
                    spans.setdefault(e["claim_id"], []).append(
                        Span(
                            e["document_id"], e["start"], e["end"], e["quote"], e["text"], e["tier"]
                        )
                    )
                runs = self._runs(conn, ids)
        return [_claim(r, spans.get(r["id"], []), runs.get(r["id"], {})) for r in rows]

    def _runs(self, conn: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
        if self._facts is None:
            return {}
        facts = self._facts
        fields = [c for c in facts.columns if c.name != "claim_id"]
        rows = conn.execute(select(facts.c.claim_id, *fields).where(facts.c.claim_id.in_(ids)))
        return {r[0]: {c.name: v for c, v in zip(fields, r[1:], strict=True)} for r in rows}

    def fetch_entities(self, after: str | None, limit: int) -> list[Entity]:
        query = (
            select(EntityRow.id, EntityRow.type, EntityRow.label, EntityGroupRow.group_id)
            .join(EntityGroupRow, EntityGroupRow.entity_id == EntityRow.id, isouter=True)
            .order_by(EntityRow.id)
        )
        if after is not None:
            query = query.where(EntityRow.id > after)
        if self.corpora is not None:
            # An entity a visible claim names, either end (each an index lookup of its claims).
            named = [
                exists().where(end == EntityRow.id, ClaimRow.corpus.in_(self.corpora))
                for end in (ClaimRow.subject_entity_id, ClaimRow.object_entity_id)
            ]
            query = query.where(or_(*named))
        with self.ledger.engine.connect() as conn:
            return [Entity(*r) for r in conn.execute(query.limit(limit)).all()]

    def claims(self) -> Iterator[Claim]:
        return _pages(self.fetch_claims, self.page_size)

    def entities(self) -> Iterator[Entity]:
        return _pages(self.fetch_entities, self.page_size)


def _pages(fetch, size: int) -> Iterator[Any]:
    after = None
    while True:
        page = fetch(after, size)
        yield from page
        if len(page) < size:
            return
        after = page[-1].id


def _run_table(ledger: Ledger) -> Any:
    """The ``facts`` table's claim id and run columns, when the ledger has that table."""
    from sqlalchemy import column, inspect, table

    inspector = inspect(ledger.engine)
    if not inspector.has_table(FACTS):
        return None
    names = {c["name"] for c in inspector.get_columns(FACTS)}
    present = [f for f in RUN_FIELDS if f in names]
    if "claim_id" not in names or not present:
        return None
    return table(FACTS, column("claim_id"), *(column(f) for f in present))


def _claim(r: Any, spans: list[Span], run: dict[str, Any]) -> Claim:
    run = dict(run)
    extra = r["extra"] or {}
    for name in RUN_FIELDS:
        if run.get(name) is None and extra.get(name) is not None:
            run[name] = extra[name]
    return Claim(
        id=r["id"],
        document_id=r["document_id"],
        relation=r["relation"],
        subject=Entity(r["subject_entity_id"], r["subject_type"], r["subject_label"]),
        object=Entity(r["object_entity_id"], r["object_type"], r["object_label"]),
        modality=r["modality"],
        polarity=r["polarity"],
        asserter=r["asserter"],
        hedge_markers=list(r["hedge_markers"] or []),
        qualifier=r["qualifier"],
        confidence=r["confidence"],
        verified=r["verified"],
        verifier_note=r["verifier_note"],
        vocabulary=r["vocabulary"],
        origin=r["origin"],
        spans=spans,
        run={k: v for k, v in run.items() if v is not None},
    )


@dataclass
class Written:
    """What an export wrote."""

    entities: int = 0
    claims: int = 0


# -- JSON-LD ------------------------------------------------------------------------------

NS = "https://groundswell.dev/ns/ledger#"
CONTEXT: dict[str, Any] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "prov": "http://www.w3.org/ns/prov#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "gs": NS,
    "subject": {"@id": "rdf:subject", "@type": "@id"},
    "predicate": {"@id": "rdf:predicate", "@type": "@id"},
    "object": {"@id": "rdf:object", "@type": "@id"},
    "label": {"@id": "rdfs:label"},
    "surfaceForm": {"@id": "gs:surfaceForm"},
    "group": {"@id": "gs:resolvedAs", "@type": "@id"},
    "asserter": {"@id": "prov:wasAttributedTo"},
    "source": {"@id": "prov:wasDerivedFrom", "@type": "@id"},
    "modality": {"@id": "gs:modality"},
    "polarity": {"@id": "gs:polarity"},
    "quote": {"@id": "gs:quote"},
    "hedgeMarkers": {"@id": "gs:hedgeMarker"},
    "qualifier": {"@id": "gs:qualifier"},
    "confidence": {"@id": "gs:confidence", "@type": "xsd:double"},
    "verified": {"@id": "gs:verified", "@type": "xsd:boolean"},
    "verifierNote": {"@id": "gs:verifierNote"},
    "vocabulary": {"@id": "gs:vocabulary"},
    "origin": {"@id": "gs:origin"},
    "evidence": {"@id": "gs:evidence"},
    "start": {"@id": "gs:start", "@type": "xsd:integer"},
    "end": {"@id": "gs:end", "@type": "xsd:integer"},
    "text": {"@id": "gs:text"},
    "tier": {"@id": "gs:tier"},
    "run": {"@id": "gs:run", "@type": "@id"},
    "receiptDigest": {"@id": "gs:receiptDigest"},
    "policyVersion": {"@id": "gs:policyVersion"},
}
_JSONLD_RUN = {
    "run_id": "run",
    "receipt_digest": "receiptDigest",
    "policy_version": "policyVersion",
}


def iri(kind: str, value: str) -> str:
    """A compact IRI for an entity, claim, document, relation, type or run: the id
    percent-encoded, so spaces and quotes in ids make valid IRIs."""
    return f"gs:{kind}/{percent(value, safe='')}"


def _entity_node(e: Entity) -> dict[str, Any]:
    node = {
        "@id": iri("entity", e.id),
        "@type": iri("type", e.type),
        "label": e.label,
        "surfaceForm": [e.label],
    }
    if e.group is not None:
        node["group"] = iri("entity", e.group)
    return node


def _claim_node(c: Claim) -> dict[str, Any]:
    node: dict[str, Any] = {
        "@id": iri("claim", c.id),
        "@type": "rdf:Statement",
        "subject": iri("entity", c.subject.id),
        "predicate": iri("relation", c.relation),
        "object": iri("entity", c.object.id),
        "modality": c.modality,
        "polarity": c.polarity,
        "asserter": c.asserter,
        "quote": c.quote,
        "hedgeMarkers": c.hedge_markers,
        "confidence": c.confidence,
        "source": iri("document", c.document_id),
        "evidence": [
            {**s.as_dict(), "@type": "gs:Span", "source": iri("document", s.document_id)}
            for s in c.spans
        ],
        "origin": c.origin,
    }
    for key, name in (
        ("verified", "verified"),
        ("verifier_note", "verifierNote"),
        ("qualifier", "qualifier"),
        ("vocabulary", "vocabulary"),
    ):
        value = getattr(c, key)
        if value is not None:
            node[name] = value
    for key, value in c.run.items():
        node[_JSONLD_RUN[key]] = iri("run", str(value)) if key == "run_id" else value
    return node


def write_jsonld(reader: LedgerReader, out: TextIO) -> Written:
    """One JSON-LD document: ``@context`` and a ``@graph`` of entities, then claims (one node
    a line)."""
    written = Written()
    out.write('{"@context": ' + json.dumps(CONTEXT) + ',\n "@graph": [')
    sep = "\n  "
    for e in reader.entities():
        out.write(sep + json.dumps(_entity_node(e), ensure_ascii=False))
        sep = ",\n  "
        written.entities += 1
    for c in reader.claims():
        out.write(sep + json.dumps(_claim_node(c), ensure_ascii=False))
        sep = ",\n  "
        written.claims += 1
    out.write("\n]}\n")
    return written


# -- the flat record of a claim (GraphML data, Cypher properties, CSV columns) -------------


def _flat(c: Claim) -> dict[str, Any]:
    """A claim's provenance as flat values: the first span's offsets and text, and every
    span as JSON (``evidence``), for formats without nested values."""
    first = c.spans[0] if c.spans else None
    return {
        "relation": c.relation,
        "modality": c.modality,
        "asserter": c.asserter,
        "verified": c.verified,
        "quote": c.quote,
        "polarity": c.polarity,
        "hedge_markers": c.hedge_markers,
        "qualifier": c.qualifier,
        "confidence": c.confidence,
        "verifier_note": c.verifier_note,
        "source": c.document_id,
        "start": first.start if first else None,
        "end": first.end if first else None,
        "text": first.text if first else None,
        "tier": first.tier if first else None,
        "evidence": json.dumps([s.as_dict() for s in c.spans], ensure_ascii=False),
        "vocabulary": c.vocabulary,
        "origin": c.origin,
        **{f: c.run.get(f) for f in RUN_FIELDS},
    }


# -- GraphML ------------------------------------------------------------------------------

_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_GRAPHML_TYPES = {"start": "int", "end": "int", "confidence": "double"}


def _xml(value: Any) -> str:
    """Text for an XML attribute or element: escaped (quotes too), characters XML 1.0
    cannot hold replaced with U+FFFD."""
    text = _XML_ILLEGAL.sub("\ufffd", str(value))
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\r", "&#13;")
    )


def _graphml_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def write_graphml(reader: LedgerReader, out: TextIO) -> Written:
    """GraphML: entities as nodes (label, type), claims as edges from subject to object with
    every field of the claim as data."""
    written = Written()
    sample = _flat(_EMPTY_CLAIM)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write('<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n')
    for name in ("label", "type", "group"):
        out.write(f'  <key id="{name}" for="node" attr.name="{name}" attr.type="string"/>\n')
    for name in sample:
        kind = _GRAPHML_TYPES.get(name, "string")
        out.write(f'  <key id="{name}" for="edge" attr.name="{name}" attr.type="{kind}"/>\n')
    out.write('  <graph edgedefault="directed">\n')
    for e in reader.entities():
        group = "" if e.group is None else f'<data key="group">{_xml(e.group)}</data>'
        out.write(
            f'    <node id="{_xml(e.id)}"><data key="label">{_xml(e.label)}</data>'
            f'<data key="type">{_xml(e.type)}</data>{group}</node>\n'
        )
        written.entities += 1
    for c in reader.claims():
        out.write(
            f'    <edge id="{_xml(c.id)}" source="{_xml(c.subject.id)}" '
            f'target="{_xml(c.object.id)}">\n'
        )
        for key, value in _flat(c).items():
            if value is not None:
                out.write(f'      <data key="{key}">{_xml(_graphml_value(value))}</data>\n')
        out.write("    </edge>\n")
        written.claims += 1
    out.write("  </graph>\n</graphml>\n")
    return written


# -- Cypher -------------------------------------------------------------------------------

_CYPHER_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CYPHER_SPECIAL = re.compile("[\\\\'\x00-\x1f]")


def _cypher_escape(match: re.Match) -> str:
    ch = match.group()
    return _CYPHER_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def cypher_literal(value: Any) -> str:
    """A Cypher literal: strings single-quoted with escapes, lists, numbers, booleans, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    return "'" + _CYPHER_SPECIAL.sub(_cypher_escape, str(value)) + "'"


def _cypher_map(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {cypher_literal(v)}" for k, v in values.items()) + "}"


def write_cypher(reader: LedgerReader, out: TextIO) -> Written:
    """Cypher for Neo4j: entities and claims ``MERGE``d on their ids (loading twice changes
    nothing), each claim a ``(:Claim)`` node ``-[:SUBJECT]->`` and ``-[:OBJECT]->`` its
    entities, never a typed relationship that would lose who said it."""
    written = Written()
    out.write(
        "// groundswell ledger export: each claim is a (:Claim) node with its provenance\n"
        "CREATE CONSTRAINT ledger_entity IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;\n"
        "CREATE CONSTRAINT ledger_claim IF NOT EXISTS FOR (c:Claim) REQUIRE c.id IS UNIQUE;\n\n"
    )
    for e in reader.entities():
        out.write(
            f"MERGE (e:Entity {{id: {cypher_literal(e.id)}}}) "
            f"SET e.label = {cypher_literal(e.label)}, e.type = {cypher_literal(e.type)}, "
            f"e.group = {cypher_literal(e.group)};\n"
        )
        written.entities += 1
    out.write("\n")
    for c in reader.claims():
        out.write(
            f"MATCH (s:Entity {{id: {cypher_literal(c.subject.id)}}}), "
            f"(o:Entity {{id: {cypher_literal(c.object.id)}}})\n"
            f"MERGE (c:Claim {{id: {cypher_literal(c.id)}}})\n"
            f"SET c += {_cypher_map(_flat(c))}\n"
            "MERGE (c)-[:SUBJECT]->(s) MERGE (c)-[:OBJECT]->(o);\n"
        )
        written.claims += 1
    return written


# -- CSV ----------------------------------------------------------------------------------

NODE_COLUMNS = ["id", "label", "type", "surface_forms", "group"]
# xrad's edge columns first, in its order; then the provenance it does not carry.
EDGE_COLUMNS = [
    "claim_id",
    "subject",
    "relation",
    "object",
    "modality",
    "asserter",
    "polarity",
    "verified",
    "quote",
    "source",
    "subject_label",
    "subject_type",
    "object_label",
    "object_type",
    "hedge_markers",
    "qualifier",
    "confidence",
    "verifier_note",
    "start",
    "end",
    "text",
    "tier",
    "evidence",
    "vocabulary",
    "origin",
    *RUN_FIELDS,
]


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return value


def write_csv(reader: LedgerReader, nodes: TextIO, edges: TextIO) -> Written:
    """Two CSV files: entities (``nodes``) and claims (``edges``), one row each."""
    written = write_csv_nodes(reader, nodes)
    written.claims = write_csv_edges(reader, edges).claims
    return written


def write_csv_nodes(reader: LedgerReader, out: TextIO) -> Written:
    """The entities as CSV, one row each (the nodes file of ``write_csv``)."""
    written = Written()
    wn = csv.writer(out)
    wn.writerow(NODE_COLUMNS)
    for e in reader.entities():
        wn.writerow([e.id, e.label, e.type, e.label, e.group or ""])
        written.entities += 1
    return written


def write_csv_edges(reader: LedgerReader, out: TextIO) -> Written:
    """The claims as CSV, one row each (the edges file of ``write_csv``)."""
    written = Written()
    we = csv.writer(out)
    we.writerow(EDGE_COLUMNS)
    for c in reader.claims():
        row = {
            **_flat(c),
            "claim_id": c.id,
            "subject": c.subject.id,
            "object": c.object.id,
            "subject_label": c.subject.label,
            "subject_type": c.subject.type,
            "object_label": c.object.label,
            "object_type": c.object.type,
        }
        we.writerow([_csv_value(row[k]) for k in EDGE_COLUMNS])
        written.claims += 1
    return written


_EMPTY_CLAIM = Claim(
    id="",
    document_id="",
    relation="",
    subject=Entity("", "", ""),
    object=Entity("", "", ""),
    modality="",
    polarity="",
    asserter="",
    hedge_markers=[],
    qualifier=None,
    confidence=0.0,
    verified=None,
    verifier_note=None,
    vocabulary=None,
    origin="",
)

WRITERS = {"jsonld": write_jsonld, "graphml": write_graphml, "cypher": write_cypher}
