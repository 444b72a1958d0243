"""Exports on both backends: provenance on every claim (document, span, asserter, modality,
run), streaming in pages, and `groundswell ledger export`."""

from __future__ import annotations

import csv
import itertools
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from io import StringIO

import pytest
from click.testing import CliRunner
from sqlalchemy import inspect, text

from groundswell.shared.cli import main
from groundswell.shared.ledger.export import (
    LedgerReader,
    write_csv,
    write_cypher,
    write_graphml,
    write_jsonld,
)
from groundswell.shared.ledger.models import entity_id
from groundswell.shared.ledger.store import ClaimIn
from tests.shared.ledger import xrad_twins as tw

WRITERS = {"jsonld": write_jsonld, "graphml": write_graphml, "cypher": write_cypher}


def make_claim(n: int, **extra) -> ClaimIn:
    s, o = ("Party", f"Company {n % 7}"), ("Party", f"Company {(n + 3) % 7}")
    quote = f"Company {n} acquired it"
    return ClaimIn(
        claim={
            "id": f"doc{n % 3}:c{n:05d}",
            "document_id": f"doc{n % 3}",
            "relation": "ACQUIRED",
            "subject_entity_id": entity_id(*s),
            "object_entity_id": entity_id(*o),
            "modality": "assertion",
            "polarity": "affirmed",
            "asserter": "the filing",
            "hedge_markers": [],
            "qualifier": None,
            "confidence": 0.5,
            "verified": None,
            "verifier_note": None,
            "vocabulary": None,
            "origin": f"relations/doc{n % 3}.jsonl:{n}",
            "extra": extra,
            "recorded_at": datetime.now(UTC),
        },
        evidence=[
            {
                "claim_id": f"doc{n % 3}:c{n:05d}",
                "seq": 0,
                "document_id": f"doc{n % 3}",
                "start": 10 * n,
                "end": 10 * n + len(quote),
                "quote": quote,
                "text": quote,
                "tier": "exact",
            }
        ],
        entities=[(entity_id(*s), *s), (entity_id(*o), *o)],
    )


class CountingReader(LedgerReader):
    """Records each page fetched and how much output had been written before it."""

    def __init__(self, ledger, page_size, out: StringIO) -> None:
        super().__init__(ledger, page_size)
        self.out = out
        self.pages: list[tuple[int, int]] = []  # (rows fetched, bytes written before)

    def fetch_claims(self, after, limit):
        page = super().fetch_claims(after, limit)
        self.pages.append((len(page), self.out.tell()))
        return page


@pytest.mark.parametrize("fmt", ["jsonld", "graphml", "cypher", "csv"])
def test_an_export_streams_page_by_page(ledger, fmt):
    """250 claims in pages of 20: 13 queries, none of more than 20 rows, and each page is
    written out before the next is read."""
    ledger.write_claims([make_claim(n) for n in range(250)])
    out = StringIO()
    reader = CountingReader(ledger, 20, out)
    if fmt == "csv":
        written = write_csv(reader, StringIO(), out)
    else:
        written = WRITERS[fmt](reader, out)
    assert written.claims == 250 and written.entities == 7
    sizes = [n for n, _ in reader.pages]
    assert sizes == [20] * 12 + [10]
    before = [b for _, b in reader.pages]
    assert all(b2 > b1 for b1, b2 in itertools.pairwise(before))  # output grew


def test_every_format_carries_the_provenance(ledger):
    ledger.write_claims(
        [
            make_claim(1),
            make_claim(
                2, run_id="run-7", receipt_digest="sha256:" + "a" * 64, policy_version="default@3"
            ),
        ]
    )
    out = {fmt: StringIO() for fmt in WRITERS}
    for fmt, buf in out.items():
        WRITERS[fmt](LedgerReader(ledger), buf)
    nodes, edges = StringIO(), StringIO()
    write_csv(LedgerReader(ledger), nodes, edges)

    graph = json.loads(out["jsonld"].getvalue())["@graph"]
    claims = {n["@id"]: n for n in graph if n["@type"] == "rdf:Statement"}
    run = claims["gs:claim/doc2%3Ac00002"]
    assert run["run"] == "gs:run/run-7" and run["policyVersion"] == "default@3"
    assert run["receiptDigest"].startswith("sha256:")
    assert run["evidence"] == [
        {
            "source": "gs:document/doc2",
            "start": 20,
            "end": 41,
            "quote": "Company 2 acquired it",
            "text": "Company 2 acquired it",
            "tier": "exact",
            "@type": "gs:Span",
        }
    ]
    assert "run" not in claims["gs:claim/doc1%3Ac00001"]

    root = ET.fromstring(out["graphml"].getvalue())
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    edge = {e.get("id"): e for e in root.iter(ns + "edge")}["doc2:c00002"]
    data = {d.get("key"): d.text for d in edge.findall(ns + "data")}
    assert data["start"] == "20" and data["tier"] == "exact" and data["source"] == "doc2"
    assert data["run_id"] == "run-7" and data["policy_version"] == "default@3"

    statements = tw.cypher_statements(out["cypher"].getvalue())
    claims_st = [s for s in statements if "MATCH" in s["words"]]
    (st,) = [s for s in claims_st if s["maps"][2]["id"] == "doc2:c00002"]
    props = st["maps"][3]
    assert props["receipt_digest"].startswith("sha256:") and props["start"] == 20
    assert json.loads(props["evidence"])[0]["tier"] == "exact"

    rows = {r["claim_id"]: r for r in csv.DictReader(edges.getvalue().splitlines(True))}
    row = rows["doc2:c00002"]
    assert (row["source"], row["start"], row["end"], row["tier"]) == ("doc2", "20", "41", "exact")
    assert (row["asserter"], row["modality"], row["run_id"]) == ("the filing", "assertion", "run-7")
    assert rows["doc1:c00001"]["run_id"] == ""


def test_run_provenance_comes_from_the_facts_table_when_the_ledger_has_one(ledger):
    """A claim admitted in a run has a row in ``facts``: its run, policy and receipt."""
    ledger.write_claims([make_claim(4)])
    names = set()
    if inspect(ledger.engine).has_table("facts"):
        names = {c["name"] for c in inspect(ledger.engine).get_columns("facts")}
    with ledger.engine.begin() as conn:
        if not names:
            conn.execute(
                text(
                    "CREATE TABLE facts (claim_id TEXT PRIMARY KEY, run_id TEXT, "
                    "policy_version TEXT, receipt_digest TEXT)"
                )
            )
            names = {"claim_id", "run_id", "policy_version", "receipt_digest"}
        row = {
            "claim_id": "doc1:c00004",
            "run_id": "r1",
            "policy_version": "strict@2",
            "receipt_digest": "sha256:" + "b" * 64,
            "field": "acquirer",
            "key": "",
            "value": '"Company 4"',
        }
        row = {k: v for k, v in row.items() if k in names}
        conn.execute(
            text(
                f"INSERT INTO facts ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
            ),
            row,
        )
    (claim,) = LedgerReader(ledger).claims()
    assert claim.run == {
        "run_id": "r1",
        "receipt_digest": "sha256:" + "b" * 64,
        "policy_version": "strict@2",
    }


def run(*args: str):
    return CliRunner().invoke(main, ["ledger", *args], catch_exceptions=False)


def test_the_export_command(tmp_path, ledger_url, ledger):
    ledger.write_claims([make_claim(n) for n in range(5)])
    done = run("export", "jsonld", "--db", ledger_url)
    assert done.exit_code == 0, done.output
    assert len([n for n in json.loads(done.stdout)["@graph"] if "subject" in n]) == 5
    out = tmp_path / "g.graphml"
    done = run("export", "--format", "graphml", "--db", ledger_url, "-o", str(out))
    assert done.exit_code == 0 and "wrote" in done.stderr and "5 claims" in done.stderr
    ET.parse(out)
    done = run("export", "csv", "--db", ledger_url, "--out", str(tmp_path / "graph"))
    assert done.exit_code == 0, done.output
    edges = (tmp_path / "graph.edges.csv").read_text(encoding="utf-8").splitlines()
    assert len(edges) == 6 and (tmp_path / "graph.nodes.csv").is_file()
    assert not list(tmp_path.glob("*.partial"))
    done = run("export", "yaml", "--db", ledger_url)
    assert done.exit_code == 1 and "unknown format yaml" in done.output
    assert run("export", "--db", ledger_url).exit_code == 2


def test_entities_carry_their_resolution_group(ledger):
    """After `resolve`, an entity's group (its group's label entity) is on its node in every
    format; claims keep pointing at their own entities."""
    from groundswell.shared.ledger.resolve import resolve

    claim = make_claim(1)
    acme, acme_caps = ("Party", "Acme Ltd"), ("Party", "ACME")
    claim.claim["subject_entity_id"], claim.claim["object_entity_id"] = (
        entity_id(*acme),
        entity_id(*acme_caps),
    )
    claim.entities[:] = [(entity_id(*acme), *acme), (entity_id(*acme_caps), *acme_caps)]
    ledger.write_claims([claim])
    resolve(ledger)
    buf = StringIO()
    write_jsonld(LedgerReader(ledger), buf)
    nodes = [n for n in json.loads(buf.getvalue())["@graph"] if "label" in n]
    groups = {n["label"]: n.get("group") for n in nodes}
    assert len(nodes) == 2 and groups["ACME"] == groups["Acme Ltd"] is not None
    nodes_csv = StringIO()
    write_csv(LedgerReader(ledger), nodes_csv, StringIO())
    rows = list(csv.DictReader(nodes_csv.getvalue().splitlines(True)))
    assert len({r["group"] for r in rows}) == 1 and rows[0]["group"]
    graphml, cypher = StringIO(), StringIO()
    write_graphml(LedgerReader(ledger), graphml)
    write_cypher(LedgerReader(ledger), cypher)
    assert graphml.getvalue().count('<data key="group">') == 2
    assert cypher.getvalue().count(f"e.group = '{rows[0]['group']}'") == 2
