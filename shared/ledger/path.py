"""The shortest chain of claims between two entities (``groundswell ledger path``).

Breadth-first from both ends at once, walking claims either way; entities that ``resolve``
grouped are one node. Unweighted on purpose, as xrad's: each hop carries its modality,
asserter, document and span, and the reader judges.

**Why it is fast on a heavy-tailed graph.** A ledger's entities are far from alike: at 10M
claims the busiest entity of ``bench/ledger.py``'s graph is in 200,000 claims while most are in
a handful, and nearly every chain runs through such hubs. Reading a hub's claims is what
costs, so the search avoids it wherever the answer does not need it:

- *Balanced by work.* The two sides' next levels are read a chunk of claims at a time (a
  keyset page of the claims index), always on the side that has read fewer claims for its
  level so far, so the side whose level is cheap finishes it first and a hub's level is read
  only as far as the other side's level costs.
- *Probing before reading.* Before a level is read, one indexed query asks whether a claim
  joins the two frontiers directly (a lookup per pair of frontier entities, never a hub's
  whole neighbourhood); if none does, every chain is at least one hop longer, which lets the
  first meeting of the two sides' next levels be taken at once.
- *Index only.* A chunk reads the claims indexes (their keys are the ends and the relation;
  polarity and modality ride along as INCLUDE columns on PostgreSQL, migration 0008) and never
  the claim rows; the claims of the chain found are read at the end, a hop at a time.

A meeting is taken as soon as it is provably shortest: with every node within ``d0`` hops of
the start and ``d1`` of the goal known and no node known to both, no chain is shorter than
``d0 + d1 + 1`` (``+ 2`` once the probe found no claim between the frontiers), and a meeting
of that length is a shortest chain. On SQLite (the embedded default, small ledgers) a chunk
is a whole level.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from groundswell.shared.ledger.models import affirms
from groundswell.shared.ledger.store import Ledger

MAX_HOPS = 8
FIRST_CHUNK = 256  # claims read by a side's first chunk of a level; each next one doubles
LAST_CHUNK = 32_768
PROBE_PAIRS = 4_096  # frontier entity pairs one probe may look up (an index lookup each)
AFFIRMS = affirms()


@dataclass
class PathResult:
    """``hops`` from start to goal (empty: the two names are one entity or group), or
    ``hops`` None with the reason there is no chain."""

    start: str
    goal: str
    hops: list[dict[str, Any]] | None
    reason: str = ""
    unknown: list[str] = field(default_factory=list)
    stopped: bool = False  # the search spent its budget before it could answer
    claims_read: int = 0

    @property
    def found(self) -> bool:
        return self.hops is not None

    def as_dict(self) -> dict[str, Any]:
        hops = self.hops or []
        asserted = sum(h["modality"] == "assertion" for h in hops)
        return {
            "start": self.start,
            "goal": self.goal,
            "found": self.found,
            "hops": hops,
            "length": len(hops) if self.found else None,
            "asserted": asserted,
            "reported_or_hedged": len(hops) - asserted,
            "reason": self.reason,
            "unknown": self.unknown,
            "stopped": self.stopped,
            "claims_read": self.claims_read,
        }


def path(
    ledger: Ledger,
    start: str,
    goal: str,
    *,
    modality: Iterable[str] | None = None,
    relations: Iterable[str] | None = None,
    max_hops: int = MAX_HOPS,
    budget: int | None = None,
    sees: Callable[[str], bool] | None = None,
) -> PathResult:
    """A shortest chain of claims linking ``start`` and ``goal`` (names or entity ids), at
    most ``max_hops`` long, walking claims either way. A denial (polarity ``denied``) links
    nothing, whatever ``modality`` says; without ``modality``, rejections (modality
    ``rejected``) are not walked either: name ``rejected`` in ``modality`` to walk them. ``relations`` walks only those relations. Each hop is
    the first claim (by id) joining its two nodes.

    ``budget``: the claims the search may read (default: the ``ledger_path_budget``
    setting); past it the search stops and says so (``stopped``, with the shortest length
    still possible), so one request between two hubs of a huge ledger cannot read it all.

    ``sees`` (a team key's): only claims of the corpora it accepts are walked, and a name is
    known only when such a claim names it (another team's entity is unknown, as one that
    does not exist)."""
    from groundswell.shared.ledger.queries import entity_ids, seen_corpora

    if budget is None:
        from groundswell.shared.settings import get_settings

        budget = get_settings().ledger_path_budget

    modality = sorted(set(modality or []))
    with ledger.engine.connect() as conn:
        corpora = None if sees is None else seen_corpora(conn, sees) or [""]
        graph = _Graph(conn, modality, sorted(set(relations or [])), budget, corpora)
        src_ids, dst_ids = (graph.named(entity_ids(conn, n)) for n in (start, goal))
        unknown = [n for n, ids in ((start, src_ids), (goal, dst_ids)) if not ids]
        if unknown:
            return PathResult(
                start, goal, None, f"no entity named {' or '.join(map(repr, unknown))}", unknown
            )
        node = graph.nodes_of(src_ids | dst_ids)
        src = {node[e] for e in src_ids}
        dst = {node[e] for e in dst_ids}
        if src & dst:
            return PathResult(start, goal, [])
        search = _Search(graph, src, dst, max_hops)
        try:
            chain = search.run()
        except _Stopped:
            return PathResult(
                start,
                goal,
                None,
                f"search stopped: it read {graph.claims_read:,} claims, past its budget of "
                f"{budget:,} claims (ledger_path_budget), before finding a chain; any chain is "
                f"at least {search.bound()} hops long",
                stopped=True,
                claims_read=graph.claims_read,
            )
        hops = graph.describe(chain) if chain is not None else None
    if hops is None:
        walked = " or ".join(modality) if modality else "affirming"
        return PathResult(
            start,
            goal,
            None,
            f"no chain within {max_hops} hops walking only {walked} claims",
            claims_read=graph.claims_read,
        )
    return PathResult(start, goal, hops, claims_read=graph.claims_read)


class _Stopped(Exception):
    """The search read more claims than its budget."""


# -- SQL for either backend ----------------------------------------------------------------


class _Sql:
    """Runs the search's statements on the raw driver (plain tuples, one bound array per set of
    ids: ``= ANY(array)`` on PostgreSQL, ``IN (SELECT value FROM json_each(?))`` on SQLite)."""

    def __init__(self, conn: Connection) -> None:
        self.postgres = conn.dialect.name == "postgresql"
        self.cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]

    def any(self, column: str, name: str) -> str:
        if self.postgres:
            return f"{column} = ANY(%({name})s)"
        return f"{column} IN (SELECT value FROM json_each(:{name}))"

    def param(self, name: str) -> str:
        return f"%({name})s" if self.postgres else f":{name}"

    def rows(self, sql: str, params: dict[str, Any]) -> list[tuple]:
        if not self.postgres:
            params = {k: json.dumps(v) if isinstance(v, list) else v for k, v in params.items()}
        self.cursor.execute(sql, params)
        return self.cursor.fetchall()


class _Graph:
    """Claims as edges between nodes (an entity's resolution group, itself when ungrouped),
    filtered by modality and relation."""

    def __init__(
        self,
        conn: Connection,
        modality: list[str],
        relations: list[str],
        budget: int,
        corpora: list[str] | None = None,
    ) -> None:
        self.conn = conn
        self.budget = budget
        self.claims_read = 0  # by every chunk, against the budget
        self.sql = _Sql(conn)
        sql = self.sql
        self.filters = ["subject_entity_id <> object_entity_id"]
        self.params: dict[str, Any] = {}
        if modality:
            # A denial links nothing, whatever the modality asked for ("Acme does not own
            # Beta", an assertion, is no chain from Acme to Beta).
            self.filters.append(f"polarity = 'affirmed' AND {sql.any('modality', 'modality')}")
            self.params["modality"] = modality
        else:  # a denial or a rejection connects nothing unless asked for
            self.filters.append(AFFIRMS)
        if relations:
            self.filters.append(sql.any("relation", "relations"))
            self.params["relations"] = relations
        self.corpora = corpora
        if corpora is not None:  # a team key's: its corpora's claims only
            # An expression, so the ends' indexes drive the walk, never the corpus index.
            self.filters.append(sql.any("(corpus || '')", "corpora"))
            self.params["corpora"] = corpora
        where = " AND ".join(self.filters)
        self.grouped = bool(sql.rows("SELECT 1 FROM entity_groups LIMIT 1", {}))
        self._node: dict[str, str] = {}
        self._members: dict[str, list[str]] = {}
        p = sql.param
        # A chunk of the claims touching some entities, in index order from a resume key:
        # by subject through (subject, relation, object), by object through (object, subject).
        self.chunk_sql = {
            True: (
                f"SELECT subject_entity_id, object_entity_id, relation FROM claims "
                f"WHERE {sql.any('subject_entity_id', 'ids')} AND {where} {{after}} "
                f"ORDER BY subject_entity_id, relation, object_entity_id {{limit}}",
                f"AND (subject_entity_id, relation, object_entity_id) > "
                f"({p('k0')}, {p('k1')}, {p('k2')})",
            ),
            False: (
                f"SELECT object_entity_id, subject_entity_id FROM claims "
                f"WHERE {sql.any('object_entity_id', 'ids')} AND {where} {{after}} "
                f"ORDER BY object_entity_id, subject_entity_id {{limit}}",
                f"AND (object_entity_id, subject_entity_id) > ({p('k0')}, {p('k1')})",
            ),
        }
        self.probe_sql = (
            f"SELECT subject_entity_id, object_entity_id FROM claims "
            f"WHERE {sql.any('object_entity_id', 'b')} AND {sql.any('subject_entity_id', 'a')} "
            f"AND {where} LIMIT 1"
        )
        self.limit_sql = f"LIMIT {p('limit')}"

    # -- nodes -------------------------------------------------------------------------

    def named(self, entity_ids: set[str]) -> set[str]:
        """Those of ``entity_ids`` this search may name: all of them, or for a team's key
        those that a claim of its corpora names (either end)."""
        if self.corpora is None or not entity_ids:
            return entity_ids
        sql = self.sql
        found: set[str] = set()
        for column in ("subject_entity_id", "object_entity_id"):
            rows = sql.rows(
                f"SELECT DISTINCT {column} FROM claims WHERE {sql.any(column, 'ids')} "
                f"AND {sql.any('corpus', 'corpora')}",
                {"ids": sorted(entity_ids), "corpora": self.corpora},
            )
            found.update(r[0] for r in rows)
        return found

    def nodes_of(self, entity_ids: Iterable[str]) -> dict[str, str]:
        """entity id -> node, for ``entity_ids`` (and every entity met before)."""
        ids = [e for e in set(entity_ids) if e not in self._node]
        if self.grouped and ids:
            rows = self.sql.rows(
                "SELECT entity_id, group_id FROM entity_groups WHERE "
                + self.sql.any("entity_id", "ids"),
                {"ids": ids},
            )
            self._node.update(rows)
        for e in ids:
            self._node.setdefault(e, e)
        return self._node

    def members(self, nodes: Iterable[str]) -> list[str]:
        """The entities of ``nodes``, sorted (a node's entities are itself and, when it is a
        group, the entities grouped into it)."""
        nodes = list(nodes)
        if not self.grouped:
            return sorted(nodes)
        todo = [n for n in nodes if n not in self._members]
        if todo:
            found: dict[str, list[str]] = {n: [n] for n in todo}
            rows = self.sql.rows(
                "SELECT entity_id, group_id FROM entity_groups WHERE "
                + self.sql.any("group_id", "ids"),
                {"ids": todo},
            )
            for entity, group in rows:
                if entity != group:
                    found[group].append(entity)
                self._node[entity] = group
            self._members.update(found)
            for n in todo:
                self._node.setdefault(n, n)
        return sorted({e for n in nodes for e in self._members[n]})

    # -- claims ------------------------------------------------------------------------

    def chunk(self, stream: _Stream, limit: int | None) -> list[tuple[str, str]]:
        """The next ``limit`` (here entity, there entity) pairs of ``stream`` (all of them
        when ``limit`` is None), advancing it."""
        sql, resume = self.chunk_sql[stream.forward]
        params = {**self.params, "ids": stream.todo}
        after = ""
        if stream.after is not None:
            after = resume
            params.update({f"k{i}": v for i, v in enumerate(stream.after)})
        resumable = limit is not None and self.sql.postgres
        # One claim past the budget at most (how the search knows it is spent), on either
        # backend: a SQLite level is otherwise read whole.
        n = self.budget - self.claims_read + 1
        if resumable and limit < n:
            n = limit
        params["limit"] = n
        rows = self.sql.rows(sql.format(after=after, limit=self.limit_sql), params)
        self.claims_read += len(rows)
        if resumable and len(rows) == n:
            last = rows[-1]
            stream.after = (last[0], last[2], last[1]) if stream.forward else last
            stream.todo = stream.todo[bisect_left(stream.todo, last[0]) :]
        else:
            stream.todo = []
        return [(r[0], r[1]) for r in rows]

    def joining(self, a: list[str], b: list[str]) -> tuple[str, str] | None:
        """A claim joining an entity of ``a`` and one of ``b``, either way, as (the ``a`` end,
        the ``b`` end); None if there is none."""
        for x, y in ((a, b), (b, a)):
            found = self.sql.rows(self.probe_sql, {**self.params, "a": x, "b": y})
            if found:
                s, o = found[0]
                return (s, o) if x is a else (o, s)
        return None

    def describe(self, chain: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """The chain's hops (node pairs in walking order) as the first claim (by id) joining
        each pair, with its subject, object, modality, asserter, document and span, and
        ``from``/``to`` in walking order."""
        from groundswell.shared.ledger.queries import claims_by_id

        sql = self.sql
        joins = " OR ".join(
            f"({sql.any('subject_entity_id', s)} AND {sql.any('object_entity_id', o)})"
            for s, o in (("a", "b"), ("b", "a"))
        )
        # OFFSET 0 keeps the lookup of the two nodes' claims a query of its own: merged into
        # the ORDER BY id LIMIT 1, it may be planned as a walk of every claim in id order.
        fence = "OFFSET 0" if sql.postgres else ""
        first = (
            f"SELECT id, subject_entity_id FROM (SELECT id, subject_entity_id FROM claims "
            f"WHERE ({joins}) AND {' AND '.join(self.filters)} {fence}) j ORDER BY id LIMIT 1"
        )
        walked = []
        for a, b in chain:
            params = {**self.params, "a": self.members([a]), "b": self.members([b])}
            claim_id, subject = sql.rows(first, params)[0]
            walked.append((claim_id, self.nodes_of([subject])[subject] == a))
        found = claims_by_id(self.conn, [c for c, _ in walked])
        hops = []
        for claim_id, forward in walked:
            hop = {**found[claim_id], "direction": "forward" if forward else "backward"}
            ends = (hop["subject"], hop["object"])
            hop["from"], hop["to"] = ends if forward else ends[::-1]
            hops.append(hop)
        return hops


# -- the search ----------------------------------------------------------------------------


@dataclass
class _Stream:
    """Progress through the claims touching a level's entities, one way: by subject
    (``forward``: the entity is the claim's subject) or by object."""

    forward: bool
    todo: list[str]  # the entities not yet read to their end, sorted
    after: tuple | None = None  # the index key of the last claim read

    @property
    def done(self) -> bool:
        return not self.todo


class _Side:
    """One end's breadth-first search: every node reached and its depth (the levels read,
    and the level being read), the frontier (the last level read whole) and its streams."""

    def __init__(self, graph: _Graph, ends: set[str]) -> None:
        self.graph = graph
        self.depth: dict[str, int] = dict.fromkeys(ends, 0)
        self.parent: dict[str, tuple[str, bool] | None] = dict.fromkeys(ends)
        self.level = 0
        self.frontier = sorted(ends)
        self.reached: list[str] = []  # nodes of the next level found so far
        self.work = 0
        self._start_level()

    def _start_level(self) -> None:
        members = self.graph.members(self.frontier)
        self.streams = [_Stream(True, members), _Stream(False, list(members))]
        self.work = 0
        self.size = FIRST_CHUNK

    @property
    def level_done(self) -> bool:
        return all(s.done for s in self.streams)

    def read(self, other: _Side) -> list[tuple[str, int]]:
        """Read the next chunk of this level's claims; the nodes newly reached that the other
        side has reached too, with the chain's length through each."""
        graph = self.graph
        limit = None
        if graph.sql.postgres:
            limit = min(self.size, LAST_CHUNK)
            self.size *= 2
        stream = next(s for s in self.streams if not s.done)
        pairs = graph.chunk(stream, limit)
        self.work += len(pairs)
        node = graph.nodes_of([t for _, t in pairs]) if graph.grouped else None
        depth, parent, there_depth = self.depth, self.parent, other.depth
        nxt = self.level + 1
        meets = []
        for here, there in pairs:
            if node is not None:
                here, there = node[here], node[there]
                if here == there:
                    continue
            if there in depth:
                continue
            depth[there] = nxt
            parent[there] = (here, stream.forward)
            self.reached.append(there)
            if there in there_depth:
                meets.append((there, nxt + there_depth[there]))
        return meets

    def next_level(self) -> None:
        self.level += 1
        self.frontier = sorted(self.reached)
        self.reached = []
        self._start_level()

    def chain_to(self, node: str) -> list[tuple[str, str]]:
        """Hops from this side's end to ``node``, as (from node, to node)."""
        out = []
        while self.parent[node] is not None:
            prev, _ = self.parent[node]  # type: ignore[misc]
            out.append((prev, node))
            node = prev
        return out[::-1]


class _Search:
    def __init__(self, graph: _Graph, src: set[str], dst: set[str], max_hops: int) -> None:
        self.graph = graph
        self.sides = (_Side(graph, src), _Side(graph, dst))
        self.max_hops = max_hops
        self.best: tuple[int, str] | None = None  # (length, meeting node)
        # For the two frontiers of now: None, not probed yet; True, no claim joins them;
        # False, too many pairs to probe.
        self.probed: bool | None = None

    def bound(self) -> int:
        """No chain is shorter (see the module's account)."""
        a, b = self.sides
        return a.level + b.level + 1 + (self.probed is True)

    def chain(self, meet: str) -> list[tuple[str, str]]:
        a, b = self.sides
        back = [(y, x) for x, y in reversed(b.chain_to(meet))]
        return a.chain_to(meet) + back

    def run(self) -> list[tuple[str, str]] | None:
        a, b = self.sides
        while True:
            if self.best is not None and self.best[0] <= self.bound():
                return self.chain(self.best[1]) if self.best[0] <= self.max_hops else None
            if self.bound() > self.max_hops:
                return None
            if self.probed is None:
                joined = self._probe()
                if joined is not None:
                    return joined
                continue  # the bound may have risen
            side, other = (
                (a, b) if (a.work, len(a.frontier)) <= (b.work, len(b.frontier)) else (b, a)
            )
            for meet, length in side.read(other):
                if self.best is None or (length, meet) < self.best:
                    self.best = (length, meet)
            if self.best is not None and self.best[0] <= self.bound():
                continue  # taken above, before the bound rises with a finished level
            if self.graph.claims_read > self.graph.budget:
                raise _Stopped  # the chunk was cut at the budget: its level is not whole
            if side.level_done:
                if not side.reached:
                    return self._exhausted(side)
                side.next_level()
                self.probed = None

    def _exhausted(self, side: _Side) -> list[tuple[str, str]] | None:
        """``side`` reached every node it can, each at its distance: the chain is the one to
        the nearest end of the other side, if it reached one."""
        a, b = self.sides
        other = b if side is a else a
        ends = [n for n, d in other.depth.items() if d == 0 and n in side.depth]
        if not ends:
            return None
        end = min(ends, key=lambda n: (side.depth[n], n))
        if side is a:
            return a.chain_to(end)
        return [(y, x) for x, y in reversed(b.chain_to(end))]

    def _probe(self) -> list[tuple[str, str]] | None:
        """Look for a claim joining the two frontiers (a chain of the bound's length)."""
        a, b = self.sides
        graph = self.graph
        ma, mb = graph.members(a.frontier), graph.members(b.frontier)
        if len(ma) * len(mb) > PROBE_PAIRS:
            self.probed = False
            return None
        joined = graph.joining(ma, mb)
        self.probed = joined is None
        if joined is None:
            return None
        node = graph.nodes_of(joined)
        u, v = node[joined[0]], node[joined[1]]
        return a.chain_to(u) + [(u, v)] + [(y, x) for x, y in reversed(b.chain_to(v))]
