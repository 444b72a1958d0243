"""Opening a ledger, migrating it, writing claims in bulk and counting what it holds.

The same code runs on PostgreSQL (psycopg 3; bulk loads with COPY) and on an embedded SQLite
file (the default, under the per-user data folder, so nothing needs a server). A ledger is
migrated to the newest schema when it is opened; ``groundswell ledger migrate`` does the same
on its own.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from threading import Thread
from typing import Any

from sqlalchemy import (
    JSON,
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection

from groundswell.shared.ledger.models import (
    COLUMNS,
    ClaimRow,
    EntityRow,
    EvidenceRow,
    LedgerBuildRow,
    RelationRow,
    VocabularyRow,
)
from groundswell.shared.ledger.vocab import Vocabulary

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
CHUNK = 500  # ids per DELETE ... IN (...) (SQLite's bound-parameter limit is far above)
_MIGRATION_LOCK = 0x6C656467  # the advisory lock that serializes migrations on PostgreSQL
_BULK_LOCK = 0x6C656468  # and the one that serializes bulk loads
KEYS_LANE = "keys"  # the build lane of every index but the search shards', in order
BUILD_MEMORY = "512MB"  # maintenance_work_mem of each build lane
SENT_LIMIT = 2_000_000  # entity ids a bulk load remembers having sent (about 200 MB)


class BuildError(RuntimeError):
    """Statements a bulk load left to run failed; they stay in the journal."""

    def __init__(self, failed: list[tuple[str, BaseException]]) -> None:
        self.failed = failed
        names = ", ".join(f"{name} ({exc})" for name, exc in failed)
        super().__init__(f"{len(failed)} of the load's builds failed and are kept: {names}")


def database_url(url: str | None = None) -> str:
    """A SQLAlchemy URL from a ledger URL or path: ``postgresql://`` gets the psycopg 3
    driver; a bare path is a SQLite file; nothing is the settings' ``ledger_url``."""
    if url is None:
        from groundswell.shared.settings import get_settings

        url = get_settings().ledger_database_url
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if "://" not in url:
        return "sqlite:///" + str(Path(url).expanduser())
    return url


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # Several processes importing into one file: WAL and a busy timeout (as xrad 0.4.0 learnt).
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _alembic_config(connection: Connection):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    config = _alembic_config(None)  # type: ignore[arg-type]
    return ScriptDirectory.from_config(config).get_current_head() or ""


def current_revision(connection: Connection) -> str | None:
    from alembic.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


@dataclass(frozen=True)
class ClaimIn:
    """One claim to write: its row, its evidence rows and the entities it names."""

    claim: dict[str, Any]
    evidence: list[dict[str, Any]]
    entities: list[tuple[str, str, str]]  # (id, type, label)


class Ledger:
    """A ledger database. ``Ledger.open(url)`` migrates it to the newest schema first."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Seconds of the last bulk load's steps: "data", "builds" (all lanes) and each build.
        self.timings: dict[str, float] = {}

    @classmethod
    def open(cls, url: str | None = None, *, migrate: bool = True) -> Ledger:
        sa_url = database_url(url)
        if sa_url.startswith("sqlite"):
            path = sa_url.removeprefix("sqlite:///")
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(sa_url)
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(sa_url, pool_pre_ping=True)
        ledger = cls(engine)
        if migrate:
            ledger.migrate()
        return ledger

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def revision(self) -> str | None:
        with self.engine.connect() as conn:
            return current_revision(conn)

    def migrate(self) -> tuple[str | None, str]:
        """Bring the schema to the newest revision; ``(before, after)``. Concurrent openers
        wait for one another (an advisory lock on PostgreSQL, the write lock on SQLite)."""
        from alembic import command

        head = head_revision()
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            elif self.dialect == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock, before reading
            before = current_revision(conn)
            if before != head:
                command.upgrade(_alembic_config(conn), "head")
        return before, head

    # -- writing -------------------------------------------------------------------------

    def write_vocabulary(self, vocab: Vocabulary) -> None:
        """Store a vocabulary (replacing an earlier one of the same name)."""
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            conn.execute(delete(RelationRow).where(RelationRow.vocabulary == vocab.name))
            conn.execute(delete(VocabularyRow).where(VocabularyRow.name == vocab.name))
            conn.execute(
                insert(VocabularyRow),
                [
                    {
                        "name": vocab.name,
                        "digest": vocab.digest,
                        "entity_types": list(vocab.entity_types),
                        "loaded_at": now,
                    }
                ],
            )
            if vocab.relations:
                conn.execute(
                    insert(RelationRow),
                    [
                        {
                            "vocabulary": vocab.name,
                            "name": name,
                            "subject_types": list(spec.subject),
                            "object_types": list(spec.object),
                            "symmetric": spec.symmetric,
                            "description": spec.description,
                        }
                        for name, spec in spec_items(vocab)
                    ],
                )

    def write_claims(self, claims: Sequence[ClaimIn]) -> int:
        """Write claims in one transaction; a claim whose id is stored already replaces it
        (its evidence too). The last of two claims with one id in ``claims`` wins."""
        by_id = {c.claim["id"]: c for c in claims}
        if not by_id:
            return 0
        entities = {e[0]: e for c in by_id.values() for e in c.entities}
        claim_rows = [c.claim for c in by_id.values()]
        evidence_rows = [e for c in by_id.values() for e in c.evidence]
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                _copy_write(conn, list(entities.values()), claim_rows, evidence_rows)
            else:
                _executemany_write(conn, list(entities.values()), claim_rows, evidence_rows)
        return len(claim_rows)

    def bulk_load(self, batches: Iterable[Sequence[ClaimIn]]) -> int:
        """Write many batches of claims, for a large load; what is stored is what
        ``write_claims`` batch by batch would store (a claim stored already is replaced).

        On PostgreSQL, in two steps. The data goes in one transaction: the secondary indexes,
        unique constraints and foreign keys of ``entities``, ``claims`` and ``evidence`` are
        dropped (primary keys stay), each batch is COPYed in, an entity sent once per load,
        and the statements that make the dropped objects again are written to the
        ``ledger_builds`` journal, so they commit with the data. Then ``finish_builds`` runs
        them, the lanes at once (a sort per index and one check of all rows per key, instead
        of an index insert and a trigger per row). Until it ends, queries give the same
        answers, only slower; if it is cut short, the journal keeps what is left and
        ``finish_builds`` (``groundswell ledger migrate``, the next bulk load) finishes it.
        Bulk loads run one at a time (an advisory lock); the load's tables are locked against
        writers and readers until its data commits, and remaking the indexes costs the whole
        table's: for loading much, not for adding a little. On SQLite it is ``write_claims``
        per batch."""
        if self.dialect != "postgresql":
            return sum(self.write_claims(batch) for batch in batches)
        self.timings = {}
        with self.engine.connect() as holder:
            holder.exec_driver_sql(f"SELECT pg_advisory_lock({_BULK_LOCK})")
            holder.commit()  # the lock is the session's; no transaction stays open
            try:
                started = time.perf_counter()
                stored = self._load_data(batches)
                self.timings["data"] = time.perf_counter() - started
                self.finish_builds()
            finally:
                holder.exec_driver_sql(f"SELECT pg_advisory_unlock({_BULK_LOCK})")
                holder.commit()
        return stored

    def _load_data(self, batches: Iterable[Sequence[ClaimIn]]) -> int:
        stored = 0
        with self.engine.begin() as conn:
            raw = conn.connection.driver_connection
            with raw.cursor() as cur:
                cur.execute("SET LOCAL synchronous_commit = off")
                builds = _drop_deferrable(cur, ("entities", "claims", "evidence"))
                builds.append(("analyze", KEYS_LANE, "ANALYZE entities, claims, evidence"))
                cur.executemany(
                    "INSERT INTO ledger_builds (name, lane, seq, statement, queued_at) "
                    "VALUES (%s, %s, %s, %s, now()) ON CONFLICT (name) DO NOTHING",
                    [(name, lane, seq, sql) for seq, (name, lane, sql) in enumerate(builds)],
                )
            sent: set[str] = set()
            for batch in batches:
                by_id = {c.claim["id"]: c for c in batch}
                if not by_id:
                    continue
                if len(sent) > SENT_LIMIT:  # memory stays bounded; a repeat costs a conflict
                    sent.clear()
                entities = {}
                for c in by_id.values():
                    for e in c.entities:
                        if e[0] not in sent:
                            entities[e[0]] = e
                sent.update(entities)
                evidence_rows = [e for c in by_id.values() for e in c.evidence]
                claim_rows = [c.claim for c in by_id.values()]
                _copy_write(conn, list(entities.values()), claim_rows, evidence_rows, fresh=True)
                stored += len(claim_rows)
        return stored

    def pending_builds(self) -> list[str]:
        """What bulk loads have still to make again (see ``bulk_load``), by name."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(LedgerBuildRow.name).order_by(LedgerBuildRow.name))
            return list(rows.scalars())

    def finish_builds(self) -> int:
        """Run the statements bulk loads left in the journal, each lane on a connection of its
        own and all lanes at once, each statement in one transaction with the removal of its
        row; the number run. A statement that fails stops its lane (the rest of the lane
        stays in the journal) and is raised, after the other lanes end, as ``BuildError``."""
        if self.dialect != "postgresql":
            return 0
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(LedgerBuildRow.lane, LedgerBuildRow.name, LedgerBuildRow.statement).order_by(
                    LedgerBuildRow.lane, LedgerBuildRow.seq
                )
            ).all()
        lanes: dict[str, list[tuple[str, str]]] = {}
        for lane, name, statement in rows:
            lanes.setdefault(lane, []).append((name, statement))
        done: list[str] = []
        failed: list[tuple[str, BaseException]] = []

        def run(lane: list[tuple[str, str]]) -> None:
            for name, statement in lane:
                started = time.perf_counter()
                try:
                    with self.engine.begin() as conn:
                        raw = conn.connection.driver_connection
                        with raw.cursor() as cur:
                            cur.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
                            cur.execute(statement)  # no parameters: its % are its own
                            cur.execute("DELETE FROM ledger_builds WHERE name = %s", (name,))
                except Exception as exc:  # the lane stops; the others go on
                    failed.append((name, exc))
                    return
                done.append(name)
                self.timings[name] = time.perf_counter() - started
                log.info("ledger build %s made in %.1f s", name, self.timings[name])

        started = time.perf_counter()
        threads = [Thread(target=run, args=(lane,), daemon=True) for lane in lanes.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.timings["builds"] = time.perf_counter() - started
        if failed:
            raise BuildError(failed)
        return len(done)

    # -- reading -------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the ledger holds: claims by audit state, modality and tier; documents,
        entities, evidence spans and vocabularies."""
        with self.engine.connect() as conn:
            by_verified = dict(
                conn.execute(
                    select(ClaimRow.verified, func.count()).group_by(ClaimRow.verified)
                ).all()
            )
            modality = dict(
                conn.execute(
                    select(ClaimRow.modality, func.count()).group_by(ClaimRow.modality)
                ).all()
            )
            tiers = dict(
                conn.execute(
                    select(EvidenceRow.tier, func.count()).group_by(EvidenceRow.tier)
                ).all()
            )
            documents = conn.execute(select(func.count(func.distinct(ClaimRow.document_id))))
            documents = documents.scalar_one()
            entities = conn.execute(select(func.count()).select_from(EntityRow)).scalar_one()
            evidence = conn.execute(select(func.count()).select_from(EvidenceRow)).scalar_one()
            vocabularies = conn.execute(
                select(VocabularyRow.name, func.count(RelationRow.name))
                .join(RelationRow, RelationRow.vocabulary == VocabularyRow.name, isouter=True)
                .group_by(VocabularyRow.name)
                .order_by(VocabularyRow.name)
            ).all()
            revision = current_revision(conn)
            builds = 0
            if inspect(conn).has_table(LedgerBuildRow.__tablename__):  # not before 0006
                count = select(func.count()).select_from(LedgerBuildRow)
                builds = conn.execute(count).scalar_one()
        return {
            "claims": sum(by_verified.values()),
            "supported": by_verified.get(True, 0),
            "refuted": by_verified.get(False, 0),
            "unaudited": by_verified.get(None, 0),
            "modality": dict(sorted(modality.items())),
            "tier": dict(sorted(tiers.items())),
            "documents": documents,
            "entities": entities,
            "evidence": evidence,
            "vocabularies": {name: n for name, n in vocabularies},
            "revision": revision,
            "backend": self.dialect,
            "builds_pending": builds,
        }

    def vocabularies(self) -> list[dict[str, Any]]:
        """The stored vocabularies with their relations."""
        with self.engine.connect() as conn:
            vocabs = conn.execute(
                select(VocabularyRow.__table__).order_by(VocabularyRow.name)
            ).mappings()
            vocabs = list(vocabs)
            relations = list(
                conn.execute(
                    select(RelationRow.__table__).order_by(RelationRow.vocabulary, RelationRow.name)
                ).mappings()
            )
        return [
            {
                "name": v["name"],
                "digest": v["digest"],
                "entity_types": v["entity_types"],
                "relations": {
                    r["name"]: {
                        "subject": r["subject_types"],
                        "object": r["object_types"],
                        "symmetric": r["symmetric"],
                        "description": r["description"],
                    }
                    for r in relations
                    if r["vocabulary"] == v["name"]
                },
            }
            for v in vocabs
        ]


def spec_items(vocab: Vocabulary):
    return sorted(vocab.relations.items())


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _executemany_write(
    conn: Connection,
    entities: list[tuple[str, str, str]],
    claims: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
) -> None:
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    if entities:
        conn.execute(
            sqlite_insert(EntityRow).on_conflict_do_nothing(),
            [{"id": i, "type": t, "label": lab} for i, t, lab in entities],
        )
    ids = [c["id"] for c in claims]
    for part in chunks(ids):
        conn.execute(delete(EvidenceRow).where(EvidenceRow.claim_id.in_(part)))
        conn.execute(delete(ClaimRow).where(ClaimRow.id.in_(part)))
    conn.execute(insert(ClaimRow), claims)
    if evidence:
        conn.execute(insert(EvidenceRow), evidence)


def _drop_deferrable(cur: Any, tables: Sequence[str]) -> list[tuple[str, str, str]]:
    """Drop the secondary indexes (neither primary nor unique), the unique constraints and the
    foreign keys of ``tables`` (primary keys stay: they find what a load replaces); the
    statements that make them again as (name, lane, statement): a GIN index (a search shard)
    in a lane of its own, the rest in ``KEYS_LANE``, indexes first, then unique constraints,
    then foreign keys."""
    names = list(tables)
    cur.execute(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = ANY(%s::regclass[]) AND NOT indisprimary AND NOT indisunique "
        "ORDER BY 1",
        (names,),
    )
    indexes = cur.fetchall()
    cur.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE contype IN ('u', 'f') AND conrelid = ANY(%s::regclass[]) "
        "ORDER BY contype DESC, 1, 2",  # unique constraints before the foreign keys
        (names,),
    )
    keys = cur.fetchall()
    for table, name, _ in keys:
        cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cur.execute(f"DROP INDEX {name}")
    out = [
        (name.rsplit(".", 1)[-1], name if " USING gin " in definition else KEYS_LANE, definition)
        for name, definition in indexes
    ]
    out.sort(key=lambda build: build[1] == KEYS_LANE)  # the long ones first
    return out + [
        (name, KEYS_LANE, f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        for table, name, definition in keys
    ]


def _copy_types(table: Any) -> list[str]:
    """The PostgreSQL types of ``table``'s columns, in order, for a binary COPY (a JSON column
    as bytea: its values are sent already in jsonb's binary form, see ``_jsonb``)."""
    return [
        "bytea" if isinstance(column.type, JSON) else _BINARY[column.type.python_type]
        for column in table.columns
    ]


def _jsonb(value: Any) -> bytes:
    """``value`` in jsonb's binary form (a version byte, then the JSON text): encoded here once
    per value, by hand for the empty ones most rows have, where psycopg's jsonb dumper calls
    json.dumps for each (a third of the load's Python time)."""
    if not value:
        return _EMPTY_LIST if isinstance(value, list) else _EMPTY_OBJECT
    return b"\x01" + json.dumps(value, ensure_ascii=False).encode()


def _row_getter(columns: list[str]):
    """A function from a row dict to the tuple COPY sends, JSON columns in jsonb's form."""
    fetch = itemgetter(*columns)
    json_at = [i for i, c in enumerate(columns) if c in _JSON_COLUMNS]
    if not json_at:
        return fetch

    def row(d: dict[str, Any]) -> list[Any]:
        values = list(fetch(d))
        for i in json_at:
            values[i] = _jsonb(values[i])
        return values

    return row


_BINARY = {str: "text", int: "int4", float: "float8", bool: "bool", datetime: "timestamptz"}
_JSON_COLUMNS = {
    c.name
    for table in (ClaimRow.__table__, EvidenceRow.__table__)
    for c in table.columns
    if isinstance(c.type, JSON)
}
_EMPTY_LIST, _EMPTY_OBJECT = b"\x01[]", b"\x01{}"
_CLAIM_ROW = _row_getter(COLUMNS["claims"])
_EVIDENCE_ROW = _row_getter(COLUMNS["evidence"])
_COPY = {
    # Binary COPY: the server reads each value as it is stored (no parsing of timestamps,
    # numbers or escapes), which is most of its cost per row.
    name: (
        f"COPY {name} ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in COLUMNS[name])}) "
        "FROM STDIN (FORMAT BINARY)",
        _copy_types(table),
    )
    for name, table in (("claims", ClaimRow.__table__), ("evidence", EvidenceRow.__table__))
}


def _copy(cur: Any, table: str, rows: Iterable[Any]) -> None:
    statement, types = _COPY[table]
    with cur.copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def _copy_write(
    conn: Connection,
    entities: list[tuple[str, str, str]],
    claims: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
    *,
    fresh: bool = False,
) -> None:
    """Entities through a temporary stage (inserted on conflict do nothing); claims stored
    already are deleted with their evidence (looked up by primary key, so the cost is the
    batch's, not the table's); then claims and evidence are COPYed straight in. ``fresh``:
    the claims are most likely new (a bulk load), so they are COPYed first, and looked up
    and replaced only if one is stored already (the COPY fails on its key, and is undone to
    a savepoint)."""
    from psycopg import errors

    raw = conn.connection.driver_connection  # the psycopg 3 connection, in this transaction
    with raw.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS stage_entities "
            "(LIKE entities INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        )
        cur.execute("TRUNCATE stage_entities")  # a bulk load writes many batches before commit
        with cur.copy("COPY stage_entities (id, type, label) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "text"])
            for row in entities:
                copy.write_row(row)
        if fresh:  # a bulk load sends each entity once: most are new
            cur.execute(
                "INSERT INTO entities (id, type, label) SELECT id, type, label "
                "FROM stage_entities ON CONFLICT (id) DO NOTHING"
            )
        else:
            # Those stored already are left out before the insert (a conflict costs the
            # insert a speculative insertion and its undoing, a lookup only the lookup), by
            # index lookups: the stage is small, and has no statistics to say so.
            cur.execute("ANALYZE stage_entities")
            cur.execute(
                "INSERT INTO entities (id, type, label) SELECT s.id, s.type, s.label "
                "FROM stage_entities s "
                "WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = s.id) "
                "ON CONFLICT (id) DO NOTHING"
            )
        claim_rows = [_CLAIM_ROW(c) for c in claims]
        if fresh:
            try:
                with raw.transaction():  # a savepoint
                    _copy(cur, "claims", claim_rows)
            except errors.UniqueViolation:
                fresh = False
        if not fresh:
            ids = [c["id"] for c in claims]
            cur.execute("SELECT id FROM claims WHERE id = ANY(%s)", (ids,))
            stored = [r[0] for r in cur.fetchall()]
            if stored:
                cur.execute("DELETE FROM evidence WHERE claim_id = ANY(%s)", (stored,))
                cur.execute("DELETE FROM claims WHERE id = ANY(%s)", (stored,))
            _copy(cur, "claims", claim_rows)
        _copy(cur, "evidence", map(_EVIDENCE_ROW, evidence))
