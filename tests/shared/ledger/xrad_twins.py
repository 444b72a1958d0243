"""The same claims in xrad 0.4.0 (recorded through its MCP server, as an agent would, with
their entities) and in our ledger (imported from a corpus's relations files), and each export
read back into one canonical form, modulo ids and order, for the differential tests."""

from __future__ import annotations

import csv
import json
import random
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import xrad.audit
import xrad.export
import xrad.mcp

from groundswell.shared.ledger import audit
from groundswell.shared.ledger.export import (
    LedgerReader,
    write_csv,
    write_cypher,
    write_graphml,
    write_jsonld,
)
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.store import Ledger
from tests.shared.ledger.corpora import CONTRACT, make_corpus

NAMES = [
    ("Acme Ltd", "Party"),
    ("Beta Inc", "Party"),
    ("Gamma Holdings", "Party"),
    ("the Registry", "Instrument"),
    ("Delta & Sons <UK>", "Party"),
    ("O'Neil Trust", "Party"),
    ("Epsilon", "Entity"),
]
RELATIONS = ["ACQUIRED", "OWNS", "PARTY_TO", "MENTIONS"]
MODALITIES = ["assertion", "reported", "conjecture", "rejected", "declined", "question"]


def contract_claims() -> list[dict]:
    """Hand-written claims on the contract: every modality, hedge markers, case and
    whitespace tiers."""
    return [
        _claim("Acme Ltd", "ACQUIRED", "Beta Inc", "Acme Ltd hereby acquires Beta Inc"),
        _claim(
            "Beta Inc",
            "OWNS",
            "Gamma Holdings",
            "beta inc OWNS gamma holdings",
            modality="reported",
            asserter="Reuters (rep. agreement)",
            hedge_markers=["reports"],
        ),
        _claim(
            "Acme Ltd",
            "ACQUIRED",
            "Beta Inc",
            "does not accept that Acme Ltd\nacquired",
            modality="rejected",
            asserter="the auditor",
        ),
        _claim(
            "the Registry",
            "MENTIONS",
            "Gamma Holdings",
            "registry has not been updated",
            modality="declined",
        ),
    ]


def _claim(subject, relation, obj, quote, **fields) -> dict:
    types = dict(NAMES)
    return {
        "subject": subject,
        "relation": relation,
        "object": obj,
        "quote": quote,
        "modality": fields.pop("modality", "assertion"),
        "asserter": fields.pop("asserter", "the agreement"),
        "subject_type": types[subject],
        "object_type": types[obj],
        **fields,
    }


def _clean(quote: str) -> bool:
    """Characters both exports can carry: xrad's GraphML writes control characters (and a
    bare CR is lost by any XML reader); those are compared in their own test."""
    return all(ord(c) >= 0x20 or c in "\n\t" for c in quote)


def generated_claims(text: str, rng: random.Random, n: int = 16) -> list[dict]:
    """Claims on a real document: windows of its words as they are, upper-cased, with their
    whitespace changed, and one long one (past xrad's GraphML and Cypher cuts)."""
    words = list(re.finditer(r"\S+", text))
    if len(words) < 120:
        return []
    out = []
    for i in range(n):
        span = 90 if i == 0 else rng.randrange(2, 12)
        first = rng.randrange(len(words) - span - 1)
        window = text[words[first].start() : words[first + span].end()]
        kind = i % 3
        quote = (
            window.upper() if kind == 1 else " \n ".join(window.split()) if kind == 2 else window
        )
        if not _clean(quote):
            continue
        (s, _), (o, _) = rng.sample(NAMES, 2)
        out.append(
            _claim(
                s,
                rng.choice(RELATIONS),
                o,
                quote,
                modality=MODALITIES[i % len(MODALITIES)],
                asserter=rng.choice(["the filing", "Reuters", "the auditor"]),
                hedge_markers=["allegedly"] if i % 4 == 3 else [],
            )
        )
    return out


@dataclass
class Twins:
    """One xrad database and one ledger holding the same claims (ids equal)."""

    xrad_db: Path
    ledger: Ledger
    ids: list[str]


def record_twins(root: Path, ledger: Ledger, documents: dict[str, tuple[str, list[dict]]]):
    """Record each document's claims through xrad's MCP ``record_claim`` and import the same
    claims (with the ids xrad gave them) into ``ledger``."""
    xrad_db = root / "xrad.db"
    (root / "docs").mkdir(parents=True, exist_ok=True)
    relations: dict[str, list[dict]] = {}
    texts = {}
    for doc_id, (text, claims) in documents.items():
        source = root / "docs" / f"{doc_id}.txt"
        source.write_text(text, encoding="utf-8")
        server = xrad.mcp.Server(xrad_db, source, None)
        lines = []
        for c in claims:
            args = {k: v for k, v in c.items() if k != "hedge_markers" or v}
            if c.get("hedge_markers"):
                args["hedge_markers"] = c["hedge_markers"]
            answer = server.record_claim(args)
            assert answer["ok"], answer
            lines.append(
                {
                    "claim_id": answer["claim_id"],
                    "subject_id": c["subject"],
                    "object_id": c["object"],
                    **{k: v for k, v in c.items() if k not in ("subject", "object")},
                }
            )
        server.conn.close()
        relations[doc_id] = lines
        texts[doc_id] = text
    corpus = make_corpus(root / "corpus", texts, relations, vocab=None)
    report = import_into(ledger, str(corpus))
    assert not report.refusals, report.refusals[:3]
    ids = [line["claim_id"] for lines in relations.values() for line in lines]
    assert report.stored == len(ids)
    return Twins(xrad_db, ledger, ids)


def contract_documents() -> dict[str, tuple[str, list[dict]]]:
    return {"contract": (CONTRACT, contract_claims())}


def judge_both(twins: Twins) -> list[dict]:
    """The same verdicts recorded in both (a third supported, a fifth refuted)."""
    import sqlite3

    verdicts = [
        {"claim_id": cid, "supported": i % 5 != 0, "reason": f"verdict {i}"}
        for i, cid in enumerate(twins.ids)
        if i % 3 == 0 or i % 5 == 0
    ]
    with sqlite3.connect(twins.xrad_db) as conn:
        xrad.audit.record(conn, verdicts)
    audit.record(twins.ledger, audit.read_verdicts({"verdicts": verdicts}))
    return verdicts


# -- exports, read back ---------------------------------------------------------------------


def xrad_exports(twins: Twins) -> dict[str, object]:
    import sqlite3

    conn = sqlite3.connect(twins.xrad_db)
    conn.row_factory = sqlite3.Row
    try:
        nodes, edges = xrad.export.to_csv(conn)
        return {
            "jsonld": xrad.export.to_jsonld(conn),
            "graphml": xrad.export.to_graphml(conn),
            "cypher": xrad.export.to_cypher(conn),
            "csv": (nodes, edges),
        }
    finally:
        conn.close()


def our_exports(ledger: Ledger, page_size: int = 7) -> dict[str, object]:
    from io import StringIO

    out = {}
    for name, writer in (
        ("jsonld", write_jsonld),
        ("graphml", write_graphml),
        ("cypher", write_cypher),
    ):
        buf = StringIO()
        writer(LedgerReader(ledger, page_size), buf)
        out[name] = buf.getvalue()
    nodes, edges = StringIO(), StringIO()
    write_csv(LedgerReader(ledger, page_size), nodes, edges)
    out["csv"] = (nodes.getvalue(), edges.getvalue())
    return out


# A claim in canonical form: its id and what every format carries, entities as (type, label).
FIELDS = ("subject", "relation", "object", "modality", "asserter", "quote", "verified", "source")


def _canon(entities: dict[str, tuple[str, str]], **c) -> dict:
    return {
        **{k: c.get(k) for k in FIELDS},
        "subject": entities[c["subject"]],
        "object": entities[c["object"]],
        **{k: v for k, v in c.items() if k not in FIELDS},
    }


def read_jsonld(text: str, ours: bool) -> tuple[set, dict[str, dict]]:
    graph = json.loads(text)["@graph"]
    label = "label" if ours else "rdfs:label"
    entities = {}
    for n in graph:
        if n["@type"] != "rdf:Statement":
            kind = n["@type"].removeprefix("gs:type/" if ours else "xrad:")
            entities[n["@id"]] = (unquote(kind) if ours else kind, n[label])
    claims = {}
    for n in graph:
        if n["@type"] != "rdf:Statement":
            continue
        cid = unquote(n["@id"].removeprefix("gs:claim/")) if ours else n["@id"][len("xrad:") :]
        source = n["source"] if ours else n["prov:wasDerivedFrom"]
        claims[cid] = _canon(
            entities,
            subject=n["subject"],
            object=n["object"],
            relation=unquote(n["predicate"].removeprefix("gs:relation/"))
            if ours
            else n["predicate"].removeprefix("xrad:"),
            modality=n["modality"],
            asserter=n["asserter"],
            quote=n["quote"],
            verified=n.get("verified"),
            source=unquote(source.removeprefix("gs:document/")) if ours else source,
            hedge_markers=n["hedgeMarkers"],
        )
    return set(entities.values()), claims


GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"


def read_graphml(text: str) -> tuple[set, dict[str, dict]]:
    root = ET.fromstring(text)
    entities = {}
    for node in root.iter(GRAPHML + "node"):
        data = {d.get("key"): d.text or "" for d in node.findall(GRAPHML + "data")}
        entities[node.get("id")] = (data["type"], data["label"])
    claims = {}
    for edge in root.iter(GRAPHML + "edge"):
        data = {d.get("key"): d.text or "" for d in edge.findall(GRAPHML + "data")}
        claims[edge.get("id")] = _canon(
            entities,
            subject=edge.get("source"),
            object=edge.get("target"),
            relation=data["relation"],
            modality=data["modality"],
            asserter=data["asserter"],
            quote=data["quote"],
            verified={"True": True, "False": False}.get(data.get("verified", "")),
        )
    return set(entities.values()), claims


def read_csv(nodes: str, edges: str) -> tuple[set, dict[str, dict]]:
    entities = {r["id"]: (r["type"], r["label"]) for r in csv.DictReader(nodes.splitlines(True))}
    claims = {}
    for r in csv.DictReader(edges.splitlines(True)):
        claims[r["claim_id"]] = _canon(
            entities,
            subject=r["subject"],
            object=r["object"],
            relation=r["relation"],
            modality=r["modality"],
            asserter=r["asserter"],
            quote=r["quote"],
            verified={"True": True, "False": False}.get(r["verified"]),
            source=r["source"],
            polarity=r["polarity"],
        )
    return set(entities.values()), claims


# -- Cypher, tokenized ----------------------------------------------------------------------

_TOKEN = re.compile(r"\s+|//[^\n]*|'|[A-Za-z_][A-Za-z0-9_]*|-?\d+(?:\.\d+)?(?:e-?\d+)?|.", re.S)
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def cypher_tokens(text: str) -> list[tuple[str, object]]:
    """``(kind, value)`` tokens of a Cypher script: str (literal, unescaped), num, word, op."""
    tokens: list[tuple[str, object]] = []
    i = 0
    while i < len(text):
        if text[i] == "'":
            out, i = [], i + 1
            while text[i] != "'":
                if text[i] == "\\":
                    nxt = text[i + 1]
                    if nxt == "u":
                        out.append(chr(int(text[i + 2 : i + 6], 16)))
                        i += 6
                        continue
                    out.append(_ESCAPES[nxt])
                    i += 2
                    continue
                out.append(text[i])
                i += 1
            tokens.append(("str", "".join(out)))
            i += 1
            continue
        m = _TOKEN.match(text, i)
        tok = m.group()
        i = m.end()
        if tok.isspace() or tok.startswith("//"):
            continue
        if tok[0].isdigit() or (tok[0] == "-" and len(tok) > 1):
            tokens.append(("num", float(tok)))
        elif tok[0].isalpha() or tok[0] == "_":
            tokens.append(("word", tok))
        else:
            tokens.append(("op", tok))
    return tokens


def _value(tokens, i):
    kind, value = tokens[i]
    if kind in ("str", "num"):
        return value, i + 1
    if kind == "word" and value in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[value], i + 1
    if tokens[i] == ("op", "["):
        items, i = [], i + 1
        while tokens[i] != ("op", "]"):
            item, i = _value(tokens, i)
            items.append(item)
            if tokens[i] == ("op", ","):
                i += 1
        return items, i + 1
    raise ValueError(f"not a value at token {i}: {tokens[i]}")


def cypher_statements(text: str) -> list[dict]:
    """Each statement as ``{"maps": [literal maps in order], "sets": {var.prop: value}}``."""
    tokens = cypher_tokens(text)
    statements, current = [], {"maps": [], "sets": {}, "words": []}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == ("op", ";"):
            statements.append(current)
            current = {"maps": [], "sets": {}, "words": []}
            i += 1
        elif tok == ("op", "{"):
            mapping, i = {}, i + 1
            while tokens[i] != ("op", "}"):
                key = tokens[i][1]
                value, i = _value(tokens, i + 2)
                mapping[key] = value
                if tokens[i] == ("op", ","):
                    i += 1
            current["maps"].append(mapping)
            i += 1
        elif (
            tok[0] == "word"
            and i + 4 < len(tokens)
            and tokens[i + 1] == ("op", ".")
            and tokens[i + 3] == ("op", "=")
        ):
            key = f"{tok[1]}.{tokens[i + 2][1]}"
            value, i = _value(tokens, i + 4)
            current["sets"][key] = value
        else:
            if tok[0] == "word":
                current["words"].append(tok[1])
            i += 1
    return statements


def read_cypher(text: str) -> tuple[set, dict[str, dict], list[str]]:
    """Entities and claims of a Cypher script, and the keyword creating each claim."""
    entities, raw_claims, verbs = {}, [], []
    for st in cypher_statements(text):
        if "CONSTRAINT" in st["words"]:
            continue
        if "Claim" in st["words"]:
            raw_claims.append(st)
            verbs.append("MERGE" if st["words"].count("MERGE") >= 3 else "CREATE")
        elif "Entity" in st["words"] and "MATCH" not in st["words"]:
            label = st["sets"]
            entities[st["maps"][0]["id"]] = (label["e.type"], label["e.label"])
    claims = {}
    for st in raw_claims:
        s, o, props = st["maps"][0]["id"], st["maps"][1]["id"], dict(st["maps"][2])
        for extra in st["maps"][3:]:
            props.update(extra)
        claims[props["id"]] = _canon(
            entities,
            subject=s,
            object=o,
            relation=props["relation"],
            modality=props["modality"],
            asserter=props["asserter"],
            quote=props["quote"],
            verified=props.get("verified"),
        )
    return set(entities.values()), claims, verbs
