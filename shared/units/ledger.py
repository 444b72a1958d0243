"""The ``ledger`` unit kind: load a document's receipts into the claims ledger.

Planned only for a run with ``ledger`` on (:class:`~groundswell.shared.runs.models.RunSpec`),
one per document, in batches held until the document's admission batch (or, for a document
with quotations only, its verification batch) is recorded, as ``read`` holds the batches that
wait for it: no chords. A ledger unit finds its document's receipts as the unit tasks do (by
content hash, under the run's policy; one the unit task has not stored yet is computed here,
the same receipt by construction) and writes their rows with ids derived from the receipt
digest, the decision's index and the run's policy version (:mod:`groundswell.shared.ledger.
load`): a redelivered or repeated unit replaces what it wrote and adds nothing.

A ledger unit that loads has no index row (as a read unit): its counters (``units.ledger.*``,
``ledger.facts``, ``ledger.quotations`` and ``ledger.quotations.tier.<tier>``,
``errors.ledger``) go to the run's summary. A ledger unit that fails has one, as a failed unit
of any kind: ``ledger/<doc_id>``, status ``failed``, its errors with file, line and field, so
the run's index, ``failed_units``, its errors, report and status show it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from groundswell.shared.corpus import (
    InputError,
    InputFileError,
    candidates_key,
    claims_key,
    document_key,
)
from groundswell.shared.receipts import ReceiptError, open_receipt
from groundswell.shared.runs import kinds
from groundswell.shared.runs.segments import Segment, sum_counters
from groundswell.shared.runs.units import UnitResult, UnitRunner
from groundswell.shared.storage import StorageError
from groundswell.shared.units.admit import ADMIT, admit_unit
from groundswell.shared.units.verify import VERIFY, verify_unit

if TYPE_CHECKING:
    from groundswell.shared.ledger.store import Ledger
    from groundswell.shared.runs.execute import RunContext
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.state import BatchSpec

LEDGER = "ledger"
log = logging.getLogger(__name__)

_ledgers: dict[str, Ledger] = {}


def open_ledger(url: str) -> Ledger:
    """One migrated ledger per process and URL."""
    from groundswell.shared.ledger.store import Ledger

    ledger = _ledgers.get(url)
    if ledger is None:
        ledger = _ledgers[url] = Ledger.open(url)
    return ledger


def _receipt(
    ctx: RunContext, result: Any, errors: list[InputError]
) -> tuple[str, dict[str, Any]] | None:
    """The unit's receipt, or None: a unit that failed has none to load (its own row says why);
    one that cannot be read fails the ledger unit, named."""
    if result.status == "failed" or not result.receipt_key:
        return None
    key = result.receipt_key
    try:
        return key, open_receipt(ctx.output.get(key), key)
    except KeyError:
        errors.append(InputError(key, "the receipt is not in storage"))
    except ReceiptError as exc:
        errors.append(InputError(key, f"the receipt cannot be read: {exc}"))
    return None


def _refusals() -> tuple[type[Exception], ...]:
    """What a database raises for rows it will not store (COPY raises psycopg's own)."""
    import psycopg
    from sqlalchemy.exc import DataError, IntegrityError

    return DataError, IntegrityError, psycopg.DataError, psycopg.IntegrityError


def _write(ledger: Ledger, loaded: Any) -> tuple[set[str], list[InputError]]:
    """Write one document's rows; the ids of the claims the database refused, and why. A row
    it refuses (a string PostgreSQL cannot hold, say) fails alone: the rows are then written
    a claim at a time, and each refused one is named by the receipt file and line it is from."""
    from groundswell.shared.ledger.queries import write_facts

    refusals = _refusals()
    try:
        ledger.write_claims(loaded.claims)
        write_facts(ledger, loaded.facts)
        return set(), []
    except refusals:
        pass
    facts = {f["claim_id"]: f for f in loaded.facts}
    refused, errors = set(), []
    for claim in loaded.claims:
        cid = claim.claim["id"]
        try:
            ledger.write_claims([claim])
            write_facts(ledger, [facts[cid]] if cid in facts else [])
        except refusals as exc:
            refused.add(cid)
            file, _, line = claim.claim["origin"].rpartition(":")
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            # The receipt's entry it came from: an admission decision, a verification record.
            entry = "decision" if cid.startswith("fact:") else "record"
            errors.append(InputError(file, f"the ledger refused it: {reason}", int(line), entry))
    return refused, errors


def load_batch(
    ctx: RunContext, ledger: Ledger, doc_ids: list[str], sources: Any
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Load the documents' receipts into ``ledger``: the index rows of the units that failed
    (a unit that loads has none, as a read unit) and the batch's counters.

    A failure is deterministic (the receipts and the document are what they are), so it is a
    failed unit with its errors, never an exception the task would retry; the document's other
    rows are still written.
    """
    from groundswell.shared.ledger.load import load_document

    # The unit tasks' receipts, found by content hash (never recomputed under only=all).
    runner = UnitRunner(ctx.corpus, ctx.output, ctx.policy, max_bytes=ctx.runner.max_bytes)
    record = ctx.record
    rows, parts = [], []
    for doc_id in doc_ids:
        source = sources(doc_id)
        counters: dict[str, int] = {}
        errors: list[InputError] = []
        try:
            admit = verify = None
            if ctx.corpus.exists(candidates_key(doc_id)):
                admit = _receipt(ctx, admit_unit(runner, doc_id, source), errors)
            if ctx.corpus.exists(claims_key(doc_id)):
                verify = _receipt(ctx, verify_unit(runner, doc_id, source), errors)
            text = runner.document(doc_id, source).text() if (admit or verify) else ""
            loaded = load_document(
                doc_id,
                text,
                run_id=record.id,
                policy_version=record.policy["ref"],
                admit=admit,
                verify=verify,
                corpus=record.corpus,
            )
            refused, refusals = _write(ledger, loaded)
            errors += loaded.errors + refusals
            counters.update(loaded.counters(refused))
        except InputFileError as exc:
            errors.append(exc.error)
        for error in errors:
            log.warning("ledger unit %s: %s", doc_id, error)
        if errors:
            # In the run's index like a failed unit of any kind: named, with its errors.
            failed = UnitResult(LEDGER, doc_id, "failed", errors=errors)
            rows.append(failed.row())
            counters.update(failed.counters())
        else:
            counters["units.ledger.computed"] = 1
        parts.append(counters)
    return rows, sum_counters(parts)


class LedgerUnavailable(StorageError):
    """The ledger's database away or busy (a lost connection, SQLite's lock): retried as any
    store of the moment is. What it refuses to store is no error of the moment (``_refusals``:
    a failed unit). The task base class retries ``StorageError``, so it need not import the
    database drivers: a worker that never loads a ledger never loads SQLAlchemy or psycopg."""


def _unavailable() -> tuple[type[Exception], ...]:
    import psycopg
    from sqlalchemy.exc import OperationalError

    return OperationalError, psycopg.OperationalError


def execute(work: kinds.Work) -> Segment:
    ctx = work.context
    assert ctx is not None, "a ledger batch runs in a run (the in-process runner plans none)"
    spec = work.spec
    try:
        # The batch's listing entries: a corpus read in place finds each record by them.
        with work.runner.listed(spec.listing):
            failed, loaded = load_batch(
                ctx, open_ledger(work.settings.ledger_database_url), spec.doc_ids, spec.source
            )
    except _unavailable() as exc:
        raise LedgerUnavailable(str(exc).splitlines()[0]) from exc
    # Index rows only for the units that failed: its counters say what it loaded.
    return Segment(spec.batch, LEDGER, failed, loaded)


def follow(group: list[BatchSpec]) -> list[list[str]]:
    """For each batch of ``group`` (the batches planned together: a step's batches of text
    documents, or the batches one read batch holds), the documents its ledger batch loads: of
    an admission batch, all of them; of a verification batch, those without one in the group;
    of a batch of another kind, none (the ledger loads admission and verification receipts)."""
    admitted = {d for spec in group if spec.kind == ADMIT for d in spec.doc_ids}
    return [
        [d for d in spec.doc_ids if spec.kind == ADMIT or d not in admitted]
        if spec.kind in (ADMIT, VERIFY)
        else []
        for spec in group
    ]


def enabled(record: RunRecord) -> bool:
    """A run loads its ledger when it asks to, and not in a dry run."""
    return record.ledger and not record.dry_run


KIND = kinds.register(
    kinds.Kind(
        name=LEDGER,
        queue="ledger",  # writes to the ledger's database: its own workers, sized to it
        execute=execute,
        inputs=(document_key,),
        rows="failed",
        follow=follow,
        enabled=enabled,
        counters=("ledger.", "errors.ledger"),
    )
)
