"""The runs of a corpus, newest first: from the run list in Redis (one list per corpus,
rebuilt from storage after a loss) or, for a command with no Redis, from the catalog in
storage. The corpus page (``report/corpus.py``) reads them through the run service."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.service import RunService

CATALOG_SCAN = 5_000  # catalog entries read without Redis, newest first, to find a corpus's


def known_corpus(service: RunService, corpus: str) -> str:
    """The corpus as runs record it: a folder is stored as its absolute path, links
    resolved, so ``./corpus`` and its full path name one corpus."""
    if corpus.startswith("s3://"):
        return corpus
    if service.runs.r is not None and corpus in service.runs.corpora():
        return corpus
    try:
        return os.path.realpath(corpus.removeprefix("file://"))
    except ValueError:  # a NUL in the name: no folder has it
        return corpus


def _run_ids(service: RunService, corpus: str, most: int) -> list[str]:
    """The corpus's latest run ids, newest first: from the run list in Redis (one list per
    corpus, rebuilt from storage after a loss), or, for a command with no Redis, from the
    catalog in storage (its newest CATALOG_SCAN entries)."""
    from groundswell.shared.runs.layout import CATALOG_RUNS, run_id_of_catalog_key
    from groundswell.shared.runs.recover import sync_catalog

    if service.runs.r is not None:
        sync_catalog(service)
        ids, _ = service.runs.list(0, most, lambda c: c == corpus)
        return list(ids)
    store, found, seen = service.store(service.output_url), [], 0
    for page in store.list_pages(CATALOG_RUNS):
        for info in page:
            seen += 1
            if seen > CATALOG_SCAN or len(found) == most:
                return found
            try:
                entry = json.loads(store.get(info.key))
            except (KeyError, ValueError):
                continue  # a bad entry hides no other run
            if isinstance(entry, dict) and entry.get("corpus") == corpus:
                found.append(run_id_of_catalog_key(info.key))
    return found


def corpus_runs(service: RunService, corpus: str, most: int) -> list[RunRecord]:
    """The corpus's latest ``most`` runs, newest first (a run whose record cannot be read is
    left out: one bad record hides no other run)."""
    out = []
    for run_id in _run_ids(service, corpus, most):
        record = service._listed(run_id)
        if record is not None and record.corpus == corpus:
            out.append(record)
    return out
