"""The same units, run in this process with no broker: the baseline the pipeline must equal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from shared.policies import PolicyRegistry
from shared.runs.finalize import build_index, build_summary
from shared.runs.plan import CorpusPlanner
from shared.runs.service import engines
from shared.runs.units import VERIFY, UnitRunner
from shared.settings import Settings
from shared.storage import open_store


def run_in_process(
    corpus_url: str,
    policy_ref: str,
    output_url: str,
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    output = open_store(output_url, settings)
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    policy = registry.resolve(policy_ref)
    corpus = open_store(corpus_url, settings)
    runner = UnitRunner(corpus, output, policy)
    units = list(CorpusPlanner(corpus, None, settings.list_page_size))
    counters: Counter[str] = Counter()
    entries = []
    for i, unit in enumerate(units, start=1):
        result = runner.verify(unit.doc_id) if unit.kind == VERIFY else runner.admit(unit.doc_id)
        counters.update(result.counters())
        entries.append((unit.key, result.index_entry()))
        if progress:
            progress(i, len(units))
    _, root, rows = build_index(entries)
    run = {
        "id": None,
        "corpus": corpus_url,
        "output": output_url,
        "policy": policy.identity(),
        "engines": engines(),
    }
    return build_summary(run, dict(counters), rows, root)
