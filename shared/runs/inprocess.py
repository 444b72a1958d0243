"""The same units, run in this process with no broker: the baseline the pipeline must equal.

It plans, batches, writes segments and builds the index with the pipeline's own code,
under a private run folder of the output store that it removes afterwards, so its
summary and Merkle root are the pipeline's by construction of the same functions, not
by a second implementation.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs import kinds
from groundswell.shared.runs.finalize import IndexBuild, build_summary, delete_prefixes
from groundswell.shared.runs.layout import run_prefix
from groundswell.shared.runs.plan import corpus_planner, step_batches
from groundswell.shared.runs.segments import write_segment
from groundswell.shared.runs.service import engines
from groundswell.shared.runs.units import UnitRunner, current_listing
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store


def run_in_process(
    corpus_url: str,
    policy_ref: str,
    output_url: str,
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
    fmt: str | None = None,
) -> dict[str, Any]:
    """``fmt``: read the corpus's producer files in place (else its corpus.yaml says)."""
    from groundswell.shared.formats.source import open_corpus

    output = open_store(output_url, settings)
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    policy = registry.resolve(policy_ref)
    corpus = open_corpus(
        open_store(corpus_url, settings),
        fmt,
        listing=current_listing,
        max_bytes=settings.max_document_bytes,
        page_size=settings.list_page_size,
    )
    runner = UnitRunner(corpus, output, policy, max_bytes=settings.max_document_bytes)
    planner = corpus_planner(corpus, None, settings.list_page_size, None)
    units = list(planner)
    run_id = f"in-process-{secrets.token_hex(4)}"
    done = 0
    try:
        # Reading batches come before the batches they hold, as the pipeline runs them.
        for spec in step_batches(units, settings.batch_bytes, settings.batch_max_units):
            segment = kinds.get(spec.kind).execute(kinds.Work(spec, runner, settings))
            write_segment(output, run_id, segment)
            done += len(spec.doc_ids)
            if progress:
                progress(done, len(units))
        build = IndexBuild(output, run_id)
        manifest = build.step(math.inf)
        assert manifest is not None
        run = {
            "id": None,
            "corpus": corpus_url,
            "output": output_url,
            "policy": policy.identity(),
            "engines": engines(),
        }
        return build_summary(run, {**build.counters, **planner.counters()}, manifest)
    finally:
        delete_prefixes(output, [run_prefix(run_id)])
