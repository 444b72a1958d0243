"""The ``ledger`` unit kind: load a document's receipts into the claims ledger.

Planned only for a run with ``ledger`` on (:class:`~groundswell.shared.runs.models.RunSpec`),
one per document, in batches held until the document's admission batch (or, for a document
with quotations only, its verification batch) is recorded, as ``read`` holds the batches that
wait for it: no chords. A ledger unit finds its document's receipts as the unit tasks do (by
content hash, under the run's policy; one the unit task has not stored yet is computed here,
the same receipt by construction) and writes their rows with ids derived from the receipt
digest, the decision's index and the run's policy version (:mod:`groundswell.shared.ledger.
load`): a redelivered or repeated unit replaces what it wrote and adds nothing.

Like a read batch, a ledger batch has no index rows: its counters (``units.ledger.*``,
``ledger.facts``, ``ledger.quotations`` and ``ledger.quotations.tier.<tier>``,
``errors.ledger``) go to the run's summary.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from groundswell.shared.corpus import InputError, InputFileError, candidates_key, claims_key
from groundswell.shared.receipts import ReceiptError, open_receipt
from groundswell.shared.runs.units import UnitRunner

if TYPE_CHECKING:
    from groundswell.shared.ledger.store import Ledger
    from groundswell.shared.runs.execute import RunContext

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


def _receipt(ctx: RunContext, result: Any) -> tuple[str, dict[str, Any]] | None:
    if result.status == "failed" or not result.receipt_key:
        return None
    try:
        return result.receipt_key, open_receipt(
            ctx.output.get(result.receipt_key), result.receipt_key
        )
    except (KeyError, ReceiptError):
        return None


def load_batch(ctx: RunContext, ledger: Ledger, doc_ids: list[str], sources: Any) -> dict[str, int]:
    """Load the documents' receipts into ``ledger``; the batch's counters."""
    from groundswell.shared.ledger.load import load_document
    from groundswell.shared.ledger.queries import write_facts
    from groundswell.shared.runs.segments import sum_counters

    # The unit tasks' receipts, found by content hash (never recomputed under only=all).
    runner = UnitRunner(ctx.corpus, ctx.output, ctx.policy, max_bytes=ctx.runner.max_bytes)
    record = ctx.record
    parts = []
    for doc_id in doc_ids:
        source = sources(doc_id)
        counters: dict[str, int] = {}
        errors: list[InputError] = []
        try:
            admit = verify = None
            if ctx.corpus.exists(candidates_key(doc_id)):
                admit = _receipt(ctx, runner.admit(doc_id, source))
            if ctx.corpus.exists(claims_key(doc_id)):
                verify = _receipt(ctx, runner.verify(doc_id, source))
            text = runner.document(doc_id, source).text() if (admit or verify) else ""
            loaded = load_document(
                doc_id,
                text,
                run_id=record.id,
                policy_version=record.policy["ref"],
                admit=admit,
                verify=verify,
            )
            ledger.write_claims(loaded.claims)
            write_facts(ledger, loaded.facts)
            errors = loaded.errors
            counters["ledger.facts"] = len(loaded.facts)
            counters["ledger.quotations"] = loaded.quotations
            for tier, n in loaded.quotation_tiers.items():
                counters[f"ledger.quotations.tier.{tier}"] = n
            counters["ledger.quotations_skipped_tier"] = loaded.skipped_tier
        except InputFileError as exc:
            errors = [exc.error]
        for error in errors:
            log.warning("ledger unit %s: %s", doc_id, error)
        status = "failed" if errors else "computed"
        if errors:
            counters["errors"] = counters["errors.ledger"] = len(errors)
        counters[f"units.ledger.{status}"] = 1
        parts.append(counters)
    return sum_counters(parts)
