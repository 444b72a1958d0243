"""The claims ledger at scale (issue 16 item 5): bulk load rate and query latency on PostgreSQL,
against xrad 0.4.0's SQLite on the same claims.

    .venv/bin/python bench/ledger.py                                   # 30k (xrad too), 1M, 10M
    .venv/bin/python bench/ledger.py --sizes 100000 --xrad-sizes 100000  # a quick look

**What it generates** (deterministic: ``--seed``, default 16; a size is a prefix of one claim
stream, so the 1M claims are the first 1M of the 10M):

- ``--entities`` entities (default 1,000,000): entity ``k`` has the label ``entity `` and ``k`` in base 26
  written with the letters a-z (``entity aaabq`` is 42; letters because xrad folds digits away),
  a type among ``Person``, ``Organization``, ``Place``, ``Product`` (``k % 4``) and the id
  the ledger derives from type and label;
- each claim's subject and object are drawn independently from a power law over entity
  ranks: rank ``floor(N * U ** 3)`` for ``U`` uniform in [0, 1), i.e. P(rank) ~ rank^(-2/3),
  which gives a degree distribution P(k) ~ k^-2.5 (heavy-tailed: at 10M claims the top entity
  is in about 1% of the 20M endpoints, ~200k claims, while the median entity has a handful);
  ranks are mapped to entities through a seeded permutation, so hubs are scattered, and an
  object equal to its subject moves to the next entity. Mean degree: 2 claims per entity at
  1M claims, 20 (10 as subject, 10 as object) at 10M;
- relation: one of 16 (``OWNS``, ``ACQUIRED``, ``EMPLOYS``, ``LOCATED_IN``, ``PARTNER_OF``,
  ``SUPPLIES``, ``INVESTED_IN``, ``SUED``, ``FOUNDED``, ``DIRECTS``, ``COMPETES_WITH``,
  ``LICENSES``, ``AUDITS``, ``LENDS_TO``, ``REGULATES``, ``SUBSIDIARY_OF``) with weight
  1/(i+1) (``OWNS`` about 30%, ``SUBSIDIARY_OF`` about 2%);
- modality: assertion 70%, reported 15%, conjecture 5% (hedge marker ``may``), rejected 4%,
  declined 3%, question 3%; polarity denied 5%, else affirmed; asserter one of 10,000
  sources (uniform); document one of size/10 documents (uniform); confidence 1.0, not
  verified, no vocabulary, ``extra`` empty, one evidence span (tier exact) whose quote is
  ``"<subject label> <relation> <object label>"`` at a random offset.

**What it measures**, per size, each in a fresh schema of a private PostgreSQL server that the
bench starts from the installed binaries and stops (``shared/ledger/pgserver.py``, as the
tests do; fsync off, shared_buffers 1GB):

- load: ``Ledger.bulk_load`` of the stream in batches of ``--batch`` claims; claims/s over the
  store's time (generating the claims excluded) and over the wall clock (included), with the
  seconds of its two steps (the data; the builds, each printed) and of the ``validate_keys``
  that ``ledger migrate`` runs after it, then the time of a ``VACUUM ANALYZE``;
- the ledger's own functions, warm, ``--queries`` of each, p50 and p95 in milliseconds:
  ``queries.disagreements`` of one (subject, relation) (its first page of contradictions, for
  the subject and relation of a uniformly drawn claim, so popular subjects are drawn as often
  as they are claimed about); ``path.path`` between two entities drawn uniformly among those
  with claims, at most 8 hops, walking affirming claims (the default), then every claim (as
  xrad's ``path`` walks them); and a first page of 20 contradictions of any subject.

For xrad (``--xrad-sizes``, default 30k): the same claims through
``xrad.store.add_entities``/``add_claims`` into its SQLite file (claims/s of ``add_claims``),
the same question of one (subject, relation) as SQL on its ``claim`` table (xrad has no such
query), its own ``xrad.store.disagreements`` (a first page) and its own ``xrad.store.path``
between the same entities (by label), which reads the whole claim table each time, so only
``--xrad-path-queries`` of them.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundswell.shared.ledger.pgserver import PostgresServer  # noqa: E402
from groundswell.shared.ledger.store import ClaimIn, Ledger  # noqa: E402

TYPES = ("Person", "Organization", "Place", "Product")
RELATIONS = (
    "OWNS", "ACQUIRED", "EMPLOYS", "LOCATED_IN", "PARTNER_OF", "SUPPLIES", "INVESTED_IN",
    "SUED", "FOUNDED", "DIRECTS", "COMPETES_WITH", "LICENSES", "AUDITS", "LENDS_TO",
    "REGULATES", "SUBSIDIARY_OF",
)  # fmt: skip
MODALITIES = (
    ("assertion", 0.70), ("reported", 0.15), ("conjecture", 0.05), ("rejected", 0.04),
    ("declined", 0.03), ("question", 0.03),
)  # fmt: skip
DENIED = 0.05
ASSERTERS = 10_000
RECORDED = datetime(2026, 12, 1, tzinfo=UTC)


class ClaimGraph:
    """The generated claim stream (see the module's docstring)."""

    def __init__(self, entities: int, seed: int) -> None:
        self.n = entities
        self.seed = seed
        order = list(range(entities))
        random.Random(seed).shuffle(order)
        self.at_rank = order  # rank -> entity number
        self.labels = [f"entity {_letters(k)}" for k in range(entities)]
        self.ids = [
            "e" + hashlib.sha256(f"{TYPES[k % 4]}\x00{self.labels[k]}".encode()).hexdigest()[:31]
            for k in range(entities)
        ]

    def entity(self, k: int) -> tuple[str, str, str]:
        return self.ids[k], TYPES[k % 4], self.labels[k]

    def stream(self, size: int, batch: int) -> Iterator[list[ClaimIn]]:
        rng = random.Random(self.seed + 1)
        rnd = rng.random
        n, at_rank = self.n, self.at_rank
        rel_weights = [1 / (i + 1) for i in range(len(RELATIONS))]
        rel_cum = _cumulative(rel_weights)
        mod_cum = _cumulative([w for _, w in MODALITIES])
        documents = max(size // 10, 1)
        out: list[ClaimIn] = []
        for i in range(size):
            s = at_rank[int(n * rnd() ** 3)]
            o = at_rank[int(n * rnd() ** 3)]
            if o == s:
                o = (o + 1) % n
            relation = RELATIONS[_pick(rel_cum, rnd())]
            modality = MODALITIES[_pick(mod_cum, rnd())][0]
            polarity = "denied" if rnd() < DENIED else "affirmed"
            asserter = f"source {int(rnd() * ASSERTERS):05d}"
            doc = f"doc-{int(rnd() * documents):07d}"
            start = int(rnd() * 50_000)
            quote = f"{self.labels[s]} {relation} {self.labels[o]}"
            cid = f"g:{i}"
            sid, oid = self.ids[s], self.ids[o]
            out.append(
                ClaimIn(
                    claim={
                        "id": cid, "document_id": doc, "relation": relation,
                        "subject_entity_id": sid, "object_entity_id": oid,
                        "modality": modality, "polarity": polarity, "asserter": asserter,
                        "hedge_markers": ["may"] if modality == "conjecture" else [],
                        "qualifier": None, "confidence": 1.0, "verified": None,
                        "verifier_note": None, "vocabulary": None,
                        "origin": f"relations/{doc}.jsonl:{i}", "extra": {},
                        "recorded_at": RECORDED,
                    },
                    evidence=[{
                        "claim_id": cid, "seq": 0, "document_id": doc, "start": start,
                        "end": start + len(quote), "quote": quote, "text": quote,
                        "tier": "exact",
                    }],
                    entities=[self.entity(s), self.entity(o)],
                )
            )  # fmt: skip
            if len(out) == batch:
                yield out
                out = []
        if out:
            yield out


def _letters(k: int) -> str:
    """``k`` in base 26 with the letters a-z, five letters at least (``aaaab`` is 1): labels
    of letters, because xrad's entity keys fold digits away."""
    out = ""
    while True:
        k, d = divmod(k, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[d] + out
        if not k:
            break
    return out.rjust(5, "a")


def _cumulative(weights: list[float]) -> list[float]:
    total, acc, out = sum(weights), 0.0, []
    for w in weights:
        acc += w / total
        out.append(acc)
    out[-1] = 1.0
    return out


def _pick(cumulative: list[float], u: float) -> int:
    for i, c in enumerate(cumulative):
        if u < c:
            return i
    return len(cumulative) - 1


class Timed:
    """An iterator that counts the time spent producing its items."""

    def __init__(self, items: Iterator) -> None:
        self.items = items
        self.seconds = 0.0

    def __iter__(self):
        while True:
            started = time.perf_counter()
            try:
                item = next(self.items)
            except StopIteration:
                self.seconds += time.perf_counter() - started
                return
            self.seconds += time.perf_counter() - started
            yield item


# -- the queries ---------------------------------------------------------------------------

# xrad has no disagreements of one subject: the same question as SQL on its claim table.
XRAD_DISAGREEMENTS = """
SELECT a.claim_id, b.claim_id, a.object_entity_id
FROM claim a
JOIN claim b ON b.subject_entity_id = a.subject_entity_id AND b.relation = a.relation
             AND b.object_entity_id = a.object_entity_id AND a.claim_id < b.claim_id
WHERE a.subject_entity_id = ? AND a.relation = ?
  AND (a.polarity <> b.polarity OR (a.modality = 'rejected') <> (b.modality = 'rejected'))
ORDER BY a.claim_id, b.claim_id
LIMIT 20"""


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in seconds)
    p50 = statistics.median(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return p50, p95


def cpu_ticks() -> tuple[int, int]:
    """(ticks stolen by the hypervisor, all ticks) of the machine so far, from /proc/stat; a
    virtual machine whose host is busy runs slower, and its timings say so only through this.
    (0, 0) where there is no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def stolen_since(start: tuple[int, int]) -> float:
    """The share of the machine's time stolen by the hypervisor since ``start`` (cpu_ticks)."""
    steal, total = cpu_ticks()
    return (steal - start[0]) / max(total - start[1], 1)


def timed_each(fn, args: list) -> tuple[list[float], list]:
    times, results = [], []
    for a in args:
        started = time.perf_counter()
        results.append(fn(*a))
        times.append(time.perf_counter() - started)
    return times, results


# -- PostgreSQL ----------------------------------------------------------------------------


def bench_postgres(server: str, graph: ClaimGraph, size: int, args) -> dict:
    import psycopg

    from groundswell.shared.ledger import queries
    from groundswell.shared.ledger.models import MODALITIES
    from groundswell.shared.ledger.path import path

    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{server}?options=-csearch_path%3D{schema}"
    ledger = Ledger.open(url)
    batches = Timed(graph.stream(size, args.batch))
    started = time.perf_counter()
    assert ledger.bulk_load(batches) == size
    wall = time.perf_counter() - started
    store = wall - batches.seconds
    steps = dict(ledger.timings)
    builds = sorted(((v, k) for k, v in steps.items() if k not in ("data", "builds")), reverse=True)
    print(
        f"  {size:,}: data {steps['data'] - batches.seconds:.0f} s (and {batches.seconds:.0f} s "
        f"generating), builds {steps['builds']:.0f} s: "
        + ", ".join(f"{name} {seconds:.0f}" for seconds, name in builds),
        flush=True,
    )
    started = time.perf_counter()
    validated = ledger.validate_keys()  # what ledger migrate does after a bulk load
    print(
        f"  {size:,}: {len(validated)} keys validated in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    with psycopg.connect(url, autocommit=True) as conn:
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE claims")
        vacuum = time.perf_counter() - started
    rng = random.Random(args.seed + size)
    with ledger.engine.connect() as conn:
        picks = [f"g:{rng.randrange(size)}" for _ in range(args.queries + 10)]
        targets = [
            tuple(conn.exec_driver_sql(
                "SELECT subject_entity_id, relation FROM claims WHERE id = %(id)s", {"id": p}
            ).one())
            for p in picks
        ]  # fmt: skip
        pairs = sample_pairs(conn, graph, rng, args.queries + 10)

    def disagree(s, r):
        return queries.disagreements(ledger, subject=s, relation=r, limit=20).items

    def walk(a, b):
        return path(ledger, a, b)

    def walk_all(a, b):  # every claim, as xrad's path walks them
        return path(ledger, a, b, modality=MODALITIES)

    timed_each(disagree, targets[:10])  # warm
    dis_times, dis_found = timed_each(disagree, targets[10:])
    timed_each(walk, pairs[:10])
    path_times, chains = timed_each(walk, pairs[10:])
    all_times, all_chains = timed_each(walk_all, pairs[10:])
    first_page, _ = timed_each(lambda: queries.disagreements(ledger, limit=20), [()] * 5)
    ledger.close()
    with psycopg.connect(server, autocommit=True) as conn:
        size_mb = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) / 1e6 FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()[0]
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    common = {"size": size, "mb": float(size_mb or 0), "pairs": pairs[10:], "targets": targets[10:]}
    return {
        **common,
        "backend": "groundswell, PostgreSQL",
        "store_rate": size / store,
        "wall_rate": size / wall,
        "vacuum": vacuum,
        "disagreements": percentiles(dis_times),
        "with_disagreement": sum(1 for f in dis_found if f) / len(dis_found),
        **_paths(path_times, [c.hops if c.found else None for c in chains]),
        "first_page": statistics.median(first_page) * 1000,
        "every_claim": {
            **common,
            "backend": "  path, every claim",
            **_paths(all_times, [c.hops if c.found else None for c in all_chains]),
        },
    }


def _paths(times: list[float], chains: list) -> dict:
    lengths = [len(c) for c in chains if c is not None]
    return {
        "path": percentiles(times),
        "path_found": len(lengths) / len(chains) if chains else 0.0,
        "mean_hops": statistics.mean(lengths) if lengths else 0.0,
        "path_queries": len(times),
    }


def sample_pairs(conn, graph: ClaimGraph, rng: random.Random, count: int) -> list[tuple]:
    """Pairs of entities drawn uniformly among those with at least one claim."""
    found: list[str] = []
    while len(found) < 2 * count:
        k = rng.randrange(graph.n)
        eid = graph.ids[k]
        has = conn.exec_driver_sql(
            "SELECT EXISTS (SELECT 1 FROM claims WHERE subject_entity_id = %(e)s) "
            "OR EXISTS (SELECT 1 FROM claims WHERE object_entity_id = %(e)s)",
            {"e": eid},
        ).scalar_one()
        if has:
            found.append(eid)
    return [(found[2 * i], found[2 * i + 1]) for i in range(count)]


# -- xrad ----------------------------------------------------------------------------------


def bench_xrad(graph: ClaimGraph, size: int, args, pg: dict | None) -> dict:
    from xrad import store as xstore
    from xrad.models import Claim, Entity, Evidence

    folder = Path(tempfile.mkdtemp(prefix="gs-bench-xrad-"))
    try:
        conn = xstore.connect(folder / "xrad.db")
        by_id = {graph.ids[k]: k for k in range(graph.n)}
        used: set[str] = set()
        load = 0.0
        for batch in graph.stream(size, args.batch):
            claims = []
            for c in batch:
                row, ev = c.claim, c.evidence[0]
                used.add(row["subject_entity_id"])
                used.add(row["object_entity_id"])
                claims.append(
                    Claim(
                        claim_id=row["id"], source_id=row["document_id"],
                        relation=row["relation"], subject_id=row["subject_entity_id"],
                        object_id=row["object_entity_id"],
                        subject_entity_id=row["subject_entity_id"],
                        object_entity_id=row["object_entity_id"], modality=row["modality"],
                        polarity=row["polarity"], asserter=row["asserter"],
                        hedge_markers=row["hedge_markers"], confidence=row["confidence"],
                        evidence=[Evidence(source_id=ev["document_id"], quote=ev["quote"],
                                           start=ev["start"], end=ev["end"])],
                    )
                )  # fmt: skip
            started = time.perf_counter()
            xstore.add_claims(conn, claims)
            load += time.perf_counter() - started
        entities = [Entity(entity_id=e, type=TYPES[by_id[e] % 4], label=graph.labels[by_id[e]])
                    for e in used]  # fmt: skip
        started = time.perf_counter()
        xstore.add_entities(conn, entities)
        load += time.perf_counter() - started
        rng = random.Random(args.seed + size)
        if pg is not None:
            targets, pairs = pg["targets"], pg["pairs"]
        else:
            picks = [f"g:{rng.randrange(size)}" for _ in range(args.queries)]
            targets = [
                tuple(conn.execute(
                    "SELECT subject_entity_id, relation FROM claim WHERE claim_id = ?", (p,)
                ).fetchone())
                for p in picks
            ]  # fmt: skip
            ids = list(used)
            pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(args.queries)]
        conn.row_factory = None

        def disagree(s, r):
            return conn.execute(XRAD_DISAGREEMENTS, (s, r)).fetchall()

        def path(a, b):
            return xstore.path(conn, graph.labels[by_id[a]], graph.labels[by_id[b]])

        timed_each(disagree, targets[:5])
        dis_times, _ = timed_each(disagree, targets)
        conn.row_factory = sqlite3.Row
        first_page, _ = timed_each(lambda: xstore.disagreements(conn, limit=20), [()] * 5)
        path_times, chains = timed_each(path, pairs[: args.xrad_path_queries])
        conn.close()
        mb = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "backend": "xrad 0.4.0, SQLite",
        "size": size,
        "store_rate": size / load,
        "wall_rate": None,
        "vacuum": None,
        "disagreements": percentiles(dis_times),
        "with_disagreement": None,
        **_paths(path_times, chains),
        "first_page": statistics.median(first_page) * 1000,
        "mb": mb,
    }


# -- the table -----------------------------------------------------------------------------


def row(r: dict) -> str:
    def ms(pair: tuple[float, float] | None) -> tuple[str, str]:
        return ("-", "-") if pair is None else (f"{pair[0]:.1f}", f"{pair[1]:.1f}")

    rate = f"{r['store_rate']:,.0f}" if r.get("store_rate") else "-"
    wall = f"{r['wall_rate']:,.0f}" if r.get("wall_rate") else "-"
    vacuum = f"{r['vacuum']:.1f}" if r.get("vacuum") is not None else "-"
    d50, d95 = ms(r.get("disagreements"))
    p50, p95 = ms(r["path"])
    found = f"{r['path_found']:.0%}, {r['mean_hops']:.1f} (n={r['path_queries']})"
    page = f"{r['first_page']:.1f}" if r.get("first_page") is not None else "-"
    mb = f"{r['mb']:,.0f}" if "store_rate" in r else "-"
    return (
        f"| {r['size']:>10,} | {r['backend']:<23} | {rate:>9} | {wall:>9} | {vacuum:>6} | "
        f"{d50:>7} | {d95:>7} | {p50:>8} | {p95:>8} | {found:<17} | {page:>7} | {mb:>7} |"
    )


HEADER = (
    "|     claims | backend                 |  claims/s | wall c/s  | vacuum | dis p50 | dis p95 "
    "| path p50 | path p95 | found, hops       | page ms |      MB |\n"
    "|-----------:|:------------------------|----------:|----------:|-------:|--------:|--------:"
    "|---------:|---------:|:------------------|--------:|--------:|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="30000,1000000,10000000", help="claims per run, comma-separated"
    )
    parser.add_argument("--xrad-sizes", default="30000", help="sizes also run on xrad")
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--batch", type=int, default=50_000, help="claims per bulk batch")
    parser.add_argument("--queries", type=int, default=200, help="timed queries of each kind")
    parser.add_argument("--xrad-path-queries", type=int, default=5)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the server on the way out
    sizes = [int(s) for s in args.sizes.split(",") if s]
    xrad_sizes = {int(s) for s in args.xrad_sizes.split(",") if s}
    started = time.perf_counter()
    ticks = cpu_ticks()
    graph = ClaimGraph(args.entities, args.seed)
    print(
        f"graph: {args.entities:,} entities, endpoints P(rank) ~ rank^(-2/3), 16 relations, "
        f"seed {args.seed} ({time.perf_counter() - started:.1f} s to set up)",
        flush=True,
    )
    results = []
    with PostgresServer(settings={"shared_buffers": "1GB", "max_wal_size": "8GB"}) as server:
        for size in sorted(set(sizes) | xrad_sizes):
            pg = None
            size_ticks = cpu_ticks()
            if size in sizes:
                pg = bench_postgres(server, graph, size, args)
                results += [pg, pg["every_claim"]]
                print(row(pg), flush=True)
                print(row(pg["every_claim"]), flush=True)
            if size in xrad_sizes:
                xr = bench_xrad(graph, size, args, pg)
                results.append(xr)
                print(row(xr), flush=True)
            print(f"  {size:,}: {stolen_since(size_ticks):.0%} of the cpu time stolen", flush=True)
    print()
    print(HEADER)
    for r in results:
        print(row(r))
    print(
        "\nclaims/s: the store's time (generation excluded); wall c/s: generation included; "
        "vacuum: VACUUM ANALYZE after the load, seconds; dis: the first page of "
        "contradictions of one (subject, relation), ms; path: a shortest chain between two "
        "entities walking affirming claims (every claim in the second row, as xrad's path), ms; "
        "found: share of pairs joined within 8 hops, their mean length and the queries timed; "
        "page: a first page of 20 contradictions of any subject (xrad: store.disagreements), "
        "ms; MB: tables and indexes on disk."
    )
    print(
        f"cpu time stolen by the hypervisor over the run: {stolen_since(ticks):.0%} "
        f"({time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
