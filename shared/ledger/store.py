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
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
    union,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from groundswell.shared.ledger.folding import label_key, search_text
from groundswell.shared.ledger.models import (
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
# maintenance_work_mem of a build: measured at 10M claims, less is faster, the working set staying
# in the processor's caches: a search shard 44 s at 8MB, 48 s at 16MB, 56 s at 512MB; the
# (subject, relation, object) index 13 s at 128MB, 16 s at 512MB, 21 s at 2GB.
SEARCH_BUILD_MEMORY = "16MB"
BUILD_MEMORY = "128MB"
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

    def __post_init__(self) -> None:
        self.claim.setdefault("corpus", None)  # a claim of no corpus, unless its maker says
        for e in self.evidence:  # what search indexes, the same on both backends
            if "search_text" not in e:
                e["search_text"] = search_text(e["quote"])


# Told of a claim not written because its id is another document's claim (and that document).
Refuse = Callable[[ClaimIn, str], None]
# Told of a claim the database refused to store (and the database's reason, one line).
Reject = Callable[[ClaimIn, str], None]


def database_reason(exc: BaseException) -> str:
    """The first line of what the database said, without the driver's class name."""
    said = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return said[0] if said else type(exc).__name__


def _refused_by_database() -> tuple[type[BaseException], ...]:
    """What a write the database refused raises: SQLAlchemy's wrapper, or psycopg's own error
    from the raw cursor a COPY runs on."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return (DBAPIError,)
    return (DBAPIError, psycopg.DatabaseError)


def _screen(
    by_id: dict[str, ClaimIn], stored: Mapping[str, str], refuse: Refuse
) -> dict[str, ClaimIn]:
    """The claims of ``by_id`` that may be written: a stored id (``stored``: id -> its
    document) is replaced only by a claim of the same document, so a claim never loses its
    evidence to another document's line; the others go to ``refuse``."""
    kept = {}
    for cid, c in by_id.items():
        owner = stored.get(cid)
        if owner is not None and owner != c.claim["document_id"]:
            refuse(c, owner)
        else:
            kept[cid] = c
    return kept


def _stored_documents(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """id -> document of the claims of ``ids`` stored already (by primary key)."""
    if conn.dialect.name == "postgresql":
        with conn.connection.driver_connection.cursor() as cur:  # type: ignore[union-attr]
            return _owners(cur, ids)
    found: dict[str, str] = {}
    for part in chunks(ids):
        rows = conn.execute(select(ClaimRow.id, ClaimRow.document_id).where(ClaimRow.id.in_(part)))
        found.update((i, d) for i, d in rows)
    return found


def _owners(cur: Any, ids: Sequence[str]) -> dict[str, str]:
    """``_stored_documents`` on a psycopg cursor: one statement for the whole batch."""
    cur.execute("SELECT id, document_id FROM claims WHERE id = ANY(%s)", (list(ids),))
    return dict(cur.fetchall())


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

    def write_claims(
        self,
        claims: Sequence[ClaimIn],
        *,
        refuse: Refuse | None = None,
        reject: Reject | None = None,
    ) -> int:
        """Write claims in one transaction; a claim whose id is stored already replaces it
        (its evidence too). The last of two claims with one id in ``claims`` wins. With
        ``refuse``, a claim whose id another document's claim holds is not written:
        ``refuse(claim, that document)`` is called instead (see ``_screen``). With
        ``reject``, a batch the database refuses (a value a column cannot hold) is written
        again claim by claim, each in a savepoint: ``reject(claim, why)`` is told of each
        claim refused, and the others are stored."""
        by_id = {c.claim["id"]: c for c in claims}
        if not by_id:
            return 0
        try:
            with self.engine.begin() as conn:
                if refuse is not None:
                    by_id = _screen(by_id, _stored_documents(conn, list(by_id)), refuse)
                self._write(conn, list(by_id.values()))
        except _refused_by_database():
            if reject is None:
                raise
            return self._claim_by_claim(by_id, reject)
        return len(by_id)

    def _write(self, conn: Connection, batch: Sequence[ClaimIn]) -> None:
        if not batch:
            return
        entities = {e[0]: e for c in batch for e in c.entities}
        claim_rows = [c.claim for c in batch]
        evidence_rows = [e for c in batch for e in c.evidence]
        if self.dialect == "postgresql":
            _copy_write(conn, list(entities.values()), claim_rows, evidence_rows)
        else:
            _executemany_write(conn, list(entities.values()), claim_rows, evidence_rows)

    def _claim_by_claim(self, by_id: dict[str, ClaimIn], reject: Reject) -> int:
        """A batch the database refused, written again a claim at a time, each in a savepoint
        of one transaction: a claim it refuses goes to ``reject`` and the others are stored."""
        stored = 0
        with self.engine.begin() as conn:
            for claim in by_id.values():
                try:
                    with conn.begin_nested():
                        self._write(conn, [claim])
                except _refused_by_database() as exc:
                    reject(claim, database_reason(exc))
                else:
                    stored += 1
        return stored

    def bulk_load(
        self,
        batches: Iterable[Sequence[ClaimIn]],
        *,
        refuse: Refuse | None = None,
        reject: Reject | None = None,
    ) -> int:
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
        per batch. ``refuse`` is ``write_claims``'s (on PostgreSQL only a batch that meets a
        stored claim looks its owners up: a fresh load pays nothing for it); so is ``reject`` (on
        PostgreSQL each batch then goes in a savepoint, and a batch the database refuses is
        written again claim by claim)."""
        if self.dialect != "postgresql":
            return sum(self.write_claims(batch, refuse=refuse, reject=reject) for batch in batches)
        self.timings = {}
        with self.engine.connect() as holder:
            holder.exec_driver_sql(f"SELECT pg_advisory_lock({_BULK_LOCK})")
            holder.commit()  # the lock is the session's; no transaction stays open
            try:
                started = time.perf_counter()
                stored = self._load_data(batches, refuse, reject)
                self.timings["data"] = time.perf_counter() - started
                self.finish_builds()
            finally:
                holder.exec_driver_sql(f"SELECT pg_advisory_unlock({_BULK_LOCK})")
                holder.commit()
        return stored

    def _load_data(
        self,
        batches: Iterable[Sequence[ClaimIn]],
        refuse: Refuse | None,
        reject: Reject | None = None,
    ) -> int:
        stored = 0
        with self.engine.begin() as conn:
            raw = conn.connection.driver_connection
            with raw.cursor() as cur:
                cur.execute("SET LOCAL synchronous_commit = off")
                dropped = _drop_deferrable(cur, ("entities", "claims", "evidence"))
                keys = [d for d in dropped if d.kind == "foreign"]
                builds = [(d.name, d.lane, d.remake()) for d in dropped if d.kind != "foreign"]
                builds.append(("analyze", KEYS_LANE, "ANALYZE entities, claims, evidence"))
                cur.executemany(
                    "INSERT INTO ledger_builds (name, lane, seq, statement, queued_at) "
                    "VALUES (%s, %s, %s, %s, now()) ON CONFLICT (name) DO NOTHING",
                    [(name, lane, seq, sql) for seq, (name, lane, sql) in enumerate(builds)],
                )
                stored = _BulkLoad(raw, cur, refuse, reject).run(batches)
                # The keys hold for every row loaded (``_BulkLoad`` checked each reference as it
                # was sent), and hold from here on for every writer; their check of the whole
                # table (``validate_keys``) is left for later, as it blocks nobody.
                for key in keys:
                    cur.execute(key.remake(valid=False))
        return stored

    def validate_keys(self) -> list[str]:
        """Check the whole table for each foreign key a bulk load left not validated (``ALTER
        TABLE ... VALIDATE CONSTRAINT``, which blocks no reader or writer); their names."""
        if self.dialect != "postgresql":
            return []
        with self.engine.connect() as conn:
            pending = conn.exec_driver_sql(
                "SELECT conrelid::regclass::text, conname FROM pg_constraint "
                "WHERE contype = 'f' AND NOT convalidated "
                "AND connamespace = current_schema()::regnamespace ORDER BY 1, 2"
            ).all()
        for table, name in pending:
            with self.engine.begin() as conn:
                raw = conn.connection.driver_connection
                with raw.cursor() as cur:
                    cur.execute("SET LOCAL work_mem = '256MB'")  # the check is a hash join
                    cur.execute(f'ALTER TABLE {table} VALIDATE CONSTRAINT "{name}"')
        return [name for _, name in pending]

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

        def run(lane: str) -> None:
            memory = BUILD_MEMORY if lane == KEYS_LANE else SEARCH_BUILD_MEMORY
            for name, statement in lanes[lane]:
                started = time.perf_counter()
                try:
                    with self.engine.begin() as conn:
                        raw = conn.connection.driver_connection
                        with raw.cursor() as cur:
                            cur.execute(f"SET LOCAL maintenance_work_mem = '{memory}'")
                            cur.execute(statement)  # no parameters: its % are its own
                            cur.execute("DELETE FROM ledger_builds WHERE name = %s", (name,))
                except Exception as exc:  # the lane stops; the others go on
                    failed.append((name, exc))
                    return
                done.append(name)
                self.timings[name] = time.perf_counter() - started
                log.info("ledger build %s made in %.1f s", name, self.timings[name])

        started = time.perf_counter()
        threads = [Thread(target=run, args=(lane,), daemon=True) for lane in lanes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.timings["builds"] = time.perf_counter() - started
        if failed:
            raise BuildError(failed)
        return len(done)

    # -- reading -------------------------------------------------------------------------

    def state(self, corpora: Sequence[str] | None = None) -> dict[str, Any]:
        """What the ledger holds: claims by audit state, modality and tier; documents,
        entities, evidence spans and vocabularies. ``corpora`` (a team key's): the counts
        are of those corpora's claims (their evidence, documents, the entities they name)."""
        mine = [] if corpora is None else [ClaimRow.corpus.in_(list(corpora))]

        def claims(*columns):
            return select(*columns).select_from(ClaimRow).where(*mine)

        with self.engine.connect() as conn:
            by_verified = dict(
                conn.execute(
                    claims(ClaimRow.verified, func.count()).group_by(ClaimRow.verified)
                ).all()
            )
            modality = dict(
                conn.execute(
                    claims(ClaimRow.modality, func.count()).group_by(ClaimRow.modality)
                ).all()
            )
            spans = select(EvidenceRow.tier, func.count())
            if mine:
                spans = spans.join(ClaimRow, ClaimRow.id == EvidenceRow.claim_id).where(*mine)
            tiers = dict(conn.execute(spans.group_by(EvidenceRow.tier)).all())
            documents = conn.execute(claims(func.count(func.distinct(ClaimRow.document_id))))
            documents = documents.scalar_one()
            if mine:  # the entities its claims name, either end
                named = union(
                    claims(ClaimRow.subject_entity_id), claims(ClaimRow.object_entity_id)
                ).subquery()
                entities = conn.execute(select(func.count()).select_from(named)).scalar_one()
            else:
                entities = conn.execute(select(func.count()).select_from(EntityRow)).scalar_one()
            evidence = sum(tiers.values())
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
            [
                {"id": i, "type": t, "label": lab, "label_key": label_key(lab)}
                for i, t, lab in entities
            ],
        )
    ids = [c["id"] for c in claims]
    for part in chunks(ids):
        conn.execute(delete(EvidenceRow).where(EvidenceRow.claim_id.in_(part)))
        conn.execute(delete(ClaimRow).where(ClaimRow.id.in_(part)))
    conn.execute(insert(ClaimRow), claims)
    if evidence:
        conn.execute(insert(EvidenceRow), evidence)


@dataclass(frozen=True)
class _Dropped:
    """An index or constraint a bulk load dropped, and how to make it again."""

    name: str
    lane: str  # the build lane: a GIN index (a search shard) has its own
    kind: str  # "index", "unique" or "foreign"
    table: str
    definition: str  # an index's CREATE INDEX statement, a constraint's definition

    def remake(self, *, valid: bool = True) -> str:
        if self.kind == "index":
            return self.definition
        check = "" if valid else " NOT VALID"
        return f'ALTER TABLE {self.table} ADD CONSTRAINT "{self.name}" {self.definition}{check}'


def _drop_deferrable(cur: Any, tables: Sequence[str]) -> list[_Dropped]:
    """Drop the secondary indexes (neither primary nor unique), the unique constraints and the
    foreign keys of ``tables`` (primary keys stay: they find what a load replaces); what was
    dropped, the GIN indexes (the long builds) first, then the other indexes, the unique
    constraints and the foreign keys."""
    names = list(tables)
    cur.execute(
        "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = ANY(%s::regclass[]) AND NOT indisprimary AND NOT indisunique "
        "ORDER BY 1",
        (names,),
    )
    found = cur.fetchall()
    for qualified, _ in found:
        cur.execute(f"DROP INDEX {qualified}")
    indexes = [
        _Dropped(
            qualified.rsplit(".", 1)[-1],
            qualified if " USING gin " in definition else KEYS_LANE,
            "index",
            "",
            definition,
        )
        for qualified, definition in found
    ]
    indexes.sort(key=lambda d: d.lane == KEYS_LANE)
    cur.execute(
        "SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid) "
        "FROM pg_constraint WHERE contype IN ('u', 'f') AND conrelid = ANY(%s::regclass[]) "
        "ORDER BY contype DESC, 1, 2",  # unique constraints before the foreign keys
        (names,),
    )
    kinds = {"u": "unique", "f": "foreign"}
    keys = [_Dropped(n, KEYS_LANE, kinds[k], t, d) for t, n, k, d in cur.fetchall()]
    for key in keys:
        cur.execute(f'ALTER TABLE {key.table} DROP CONSTRAINT "{key.name}"')
    return indexes + keys


def _copy_types(table: Any) -> list[str]:
    """The PostgreSQL types of ``table``'s columns, in ``_copy_columns`` order, for a binary
    COPY (a JSON column as bytea: its values are sent already in jsonb's binary form)."""
    return [
        "bytea" if isinstance(column.type, JSON) else _BINARY[column.type.python_type]
        for column in _copy_columns(table)
    ]


def _jsonb(value: Any) -> bytes:
    """``value`` in jsonb's binary form (a version byte, then the JSON text), encoded here once
    per value, where psycopg's jsonb dumper calls json.dumps for each (a third of the load's
    Python time); the empty ones most rows have are constants (``_row_getter``)."""
    return b"\x01" + json.dumps(value, ensure_ascii=False).encode()


def _copy_columns(table: Any) -> list[Any]:
    """``table``'s columns in the order COPY sends them: the JSON ones last (see
    ``_row_getter``)."""
    columns = list(table.columns)
    return [c for c in columns if not isinstance(c.type, JSON)] + [
        c for c in columns if isinstance(c.type, JSON)
    ]


def _row_getter(table: Any):
    """A function from a row dict to the tuple COPY sends (in ``_copy_columns`` order), JSON
    columns in jsonb's form, added at the end of a tuple rather than set into a copy."""
    columns = _copy_columns(table)
    plain = [c.name for c in columns if not isinstance(c.type, JSON)]
    fetch = itemgetter(*plain)
    json_names = [c.name for c in columns if isinstance(c.type, JSON)]
    if not json_names:
        return fetch
    first, second = json_names  # claims: hedge_markers, extra
    assert first == "hedge_markers" and second == "extra"  # a list, then an object

    def row(d: dict[str, Any]) -> tuple[Any, ...]:
        h, x = d[first], d[second]
        return (*fetch(d), _jsonb(h) if h else _EMPTY_LIST, _jsonb(x) if x else _EMPTY_OBJECT)

    return row


_BINARY = {str: "text", int: "int4", float: "float8", bool: "bool", datetime: "timestamptz"}
_EMPTY_LIST, _EMPTY_OBJECT = b"\x01[]", b"\x01{}"
_CLAIM_ROW = _row_getter(ClaimRow.__table__)
_EVIDENCE_ROW = _row_getter(EvidenceRow.__table__)
_COPY = {
    # Binary COPY: the server reads each value as it is stored (no parsing of timestamps,
    # numbers or escapes), which is most of its cost per row.
    table.name: (
        f"COPY {table.name} "
        f"({', '.join(chr(34) + c.name + chr(34) for c in _copy_columns(table))}) "
        "FROM STDIN (FORMAT BINARY)",
        _copy_types(table),
    )
    for table in (ClaimRow.__table__, EvidenceRow.__table__, EntityRow.__table__)
}


def _copy(cur: Any, table: str, rows: Iterable[Any]) -> None:
    statement, types = _COPY[table]
    with cur.copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


@dataclass(frozen=True)
class _Prepared:
    entities: list[tuple[str, str, str]]  # those not sent before in this load
    by_id: dict[str, ClaimIn]
    ids: list[str]
    claims: list[tuple[Any, ...]]
    evidence: list[tuple[Any, ...]]


class _BulkLoad:
    """The batches of one bulk load, on its connection and cursor, in its transaction.

    Each claim's references are checked as it is sent (its subject and object are among its
    entities, its evidence is its own), which is what lets the load keep its foreign keys
    unvalidated. Entities and claims are COPYed straight into their tables in a savepoint: a
    fresh load meets no stored row; one that does (a conflict on a primary key) is undone to
    the savepoint and written the careful way: entities through the stage, on conflict do
    nothing, from then on; claims replaced after a lookup of the stored ones."""

    def __init__(
        self, raw: Any, cur: Any, refuse: Refuse | None = None, reject: Reject | None = None
    ) -> None:
        self.raw, self.cur = raw, cur
        self.refuse = refuse
        self.reject = reject
        self.sent: set[str] = set()
        self.direct_entities = True

    def prepare(self, batch: Sequence[ClaimIn]) -> _Prepared:
        """A batch's rows as COPY sends them, its references checked (no database work: it
        runs on a thread of its own while the batch before is sent)."""
        by_id = {c.claim["id"]: c for c in batch}
        if len(self.sent) > SENT_LIMIT:  # memory stays bounded; a repeat costs a conflict
            self.sent.clear()
        sent = self.sent
        entities = {}
        for cid, c in by_id.items():  # plain code: this is most of a load's Python time
            claim, ents = c.claim, c.entities
            s_id, o_id = claim["subject_entity_id"], claim["object_entity_id"]
            if len(ents) == 2:  # a subject and an object, as nearly every claim has
                a, b = ents
                a_id, b_id = a[0], b[0]
                named = s_id in (a_id, b_id) and o_id in (a_id, b_id)
                if a_id not in sent:
                    entities[a_id] = a
                if b_id not in sent:
                    entities[b_id] = b
            else:
                ids = [e[0] for e in ents]
                named = s_id in ids and o_id in ids
                for e in ents:
                    if e[0] not in sent:
                        entities[e[0]] = e
            if not named:
                raise ValueError(f"claim {cid}: its subject and object must be among its entities")
            for e in c.evidence:
                if e["claim_id"] != cid:
                    raise ValueError(f"claim {cid}: evidence of another claim")
        sent.update(entities)
        return _Prepared(
            list(entities.values()),
            by_id,
            list(by_id),
            [_CLAIM_ROW(c.claim) for c in by_id.values()],
            [_EVIDENCE_ROW(e) for c in by_id.values() for e in c.evidence],
        )

    def send(self, batch: _Prepared) -> int:
        """COPY a prepared batch in; the claims it stored. With ``reject``, the batch goes in
        a savepoint of its own: one the database refuses (a value a column cannot hold) is
        undone and written again claim by claim (:meth:`_claim_by_claim`)."""
        if not batch.ids:
            return 0
        if self.reject is None:
            return self._send(batch)
        from psycopg import errors

        try:
            with self.raw.transaction():
                return self._send(batch)
        except (errors.DataError, errors.IntegrityError):
            return self._claim_by_claim(batch)

    def _claim_by_claim(self, batch: _Prepared) -> int:
        """A refused batch again, a claim at a time, each in a savepoint; the batch's entities
        first (through the stage, on conflict do nothing: a later batch prepared meanwhile
        counts on them), each claim's again with it."""
        from psycopg import errors

        assert self.reject is not None
        try:
            with self.raw.transaction():
                _stage_entities(self.cur, batch.entities, fresh=True)
        except (errors.DataError, errors.IntegrityError):
            pass  # an entity itself refused: its claims are refused with it below
        stored = 0
        for claim in batch.by_id.values():
            one = _Prepared(
                claim.entities,
                {claim.claim["id"]: claim},
                [claim.claim["id"]],
                [_CLAIM_ROW(claim.claim)],
                [_EVIDENCE_ROW(e) for e in claim.evidence],
            )
            try:
                with self.raw.transaction():
                    _stage_entities(self.cur, claim.entities, fresh=True)
                    stored += self._send(one, entities=False)
            except (errors.DataError, errors.IntegrityError) as exc:
                self.reject(claim, database_reason(exc))
        return stored

    def _send(self, batch: _Prepared, *, entities: bool = True) -> int:
        if entities:
            self._entities(batch.entities)
        if not self._savepoint(lambda: _copy(self.cur, "claims", batch.claims)):
            batch = self._screened(batch)
            _replace_stored(self.cur, batch.ids)
            _copy(self.cur, "claims", batch.claims)
        _copy(self.cur, "evidence", batch.evidence)
        return len(batch.ids)

    def _screened(self, batch: _Prepared) -> _Prepared:
        """``batch`` without the claims ``refuse`` is told of (``_screen``); the entities of
        those were sent already, and stay (an entity names no claim)."""
        if self.refuse is None:
            return batch
        kept = _screen(batch.by_id, _owners(self.cur, batch.ids), self.refuse)
        if len(kept) == len(batch.by_id):
            return batch
        return _Prepared(
            batch.entities,
            kept,
            list(kept),
            [_CLAIM_ROW(c.claim) for c in kept.values()],
            [_EVIDENCE_ROW(e) for c in kept.values() for e in c.evidence],
        )

    def run(self, batches: Iterable[Sequence[ClaimIn]]) -> int:
        """Send every batch; the claims stored. Each batch is prepared on a thread of its own
        while the one before is sent (the server's work and this process's overlap); the
        caller's batches are drawn here, between the two, so that time is the caller's."""
        stored = 0
        with ThreadPoolExecutor(1, thread_name_prefix="ledger-prepare") as prepare:
            batches = iter(batches)
            first = next(batches, None)
            ready = prepare.submit(self.prepare, first) if first is not None else None
            while ready is not None:
                prepared = ready.result()
                batch = next(batches, None)
                ready = prepare.submit(self.prepare, batch) if batch is not None else None
                stored += self.send(prepared)
        return stored

    def _entities(self, entities: list[tuple[str, str, str]]) -> None:
        if not entities:
            return
        if self.direct_entities:
            if self._savepoint(lambda: _copy(self.cur, "entities", _entity_rows(entities))):
                return
            self.direct_entities = False  # a load into a ledger that has its entities
        _stage_entities(self.cur, entities, fresh=True)

    def _savepoint(self, write) -> bool:
        """``write()`` in a savepoint; False (and undone) if it met a stored primary key."""
        from psycopg import errors

        try:
            with self.raw.transaction():
                write()
        except errors.UniqueViolation:
            return False
        return True


def _entity_rows(entities: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
    """Entities as their table's rows: with the label's key ("any case" lookups)."""
    return [(i, t, lab, label_key(lab)) for i, t, lab in entities]


def _stage_entities(cur: Any, entities: list[tuple[str, str, str]], *, fresh: bool) -> None:
    """Entities through a temporary stage, inserted on conflict do nothing; ``fresh``: most
    are new, else those stored already are left out first."""
    cur.execute(
        "CREATE TEMP TABLE IF NOT EXISTS stage_entities "
        "(LIKE entities INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
    )
    cur.execute("TRUNCATE stage_entities")  # a bulk load writes many batches before commit
    with cur.copy(
        "COPY stage_entities (id, type, label, label_key) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "text", "text", "text"])
        for row in _entity_rows(entities):
            copy.write_row(row)
    if fresh:
        cur.execute(
            "INSERT INTO entities (id, type, label, label_key) SELECT id, type, label, label_key "
            "FROM stage_entities ON CONFLICT (id) DO NOTHING"
        )
        return
    # Those stored already are left out before the insert (a conflict costs the insert a
    # speculative insertion and its undoing, a lookup only the lookup), by index lookups: the
    # stage is small, and has no statistics to say so.
    cur.execute("ANALYZE stage_entities")
    cur.execute(
        "INSERT INTO entities (id, type, label, label_key) "
        "SELECT s.id, s.type, s.label, s.label_key "
        "FROM stage_entities s WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = s.id) "
        "ON CONFLICT (id) DO NOTHING"
    )


def _replace_stored(cur: Any, ids: list[str]) -> None:
    """Delete the claims of ``ids`` stored already, with their evidence (looked up by primary
    key, so the cost is the batch's, not the table's)."""
    cur.execute("SELECT id FROM claims WHERE id = ANY(%s)", (ids,))
    stored = [r[0] for r in cur.fetchall()]
    if stored:
        cur.execute("DELETE FROM evidence WHERE claim_id = ANY(%s)", (stored,))
        cur.execute("DELETE FROM claims WHERE id = ANY(%s)", (stored,))


def _copy_write(
    conn: Connection,
    entities: list[tuple[str, str, str]],
    claims: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
) -> None:
    """A batch of ``write_claims``: entities through the stage, claims stored already
    replaced with their evidence, then claims and evidence COPYed in."""
    raw = conn.connection.driver_connection  # the psycopg 3 connection, in this transaction
    with raw.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        _stage_entities(cur, entities, fresh=False)
        _replace_stored(cur, [c["id"] for c in claims])
        _copy(cur, "claims", [_CLAIM_ROW(c) for c in claims])
        _copy(cur, "evidence", [_EVIDENCE_ROW(e) for e in evidence])
