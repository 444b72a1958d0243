"""What the read side of runs needs, and the errors it raises.

The read side reads what a run wrote: its record, index, segments and receipts (the modules
of :data:`RUN_RECORDS`). Where a running run's receipts will be, and a document's stored
reading, follow from the run's inputs: the :class:`RunSource` (the run service) opens them,
so no reader imports the machinery that makes a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.settings import Settings
    from groundswell.shared.storage import ObjectStore

# The modules of runs/ that hold what a run writes (its record, the layout of its keys, its
# index and its segments): the read side may import these, and nothing else of runs/.
RUN_RECORDS = ("models", "layout", "index", "segments")
# The units whose receipts a reader opens; also the fields of a document's receipts.
VERIFY, ADMIT = "verify", "admit"


class RunsNotComparable(ValueError):
    """Two runs that a diff cannot compare (different corpora)."""


class RunNotReady(RuntimeError):
    """What an exporter (a gate, the Parquet export, a hook) reads of a run is not there:
    the run is unknown, unfinished, or ended without it. The message says which."""


class RunInputs(Protocol):
    """A run's inputs as its units see them: the corpus, the policy version, and the runner
    that finds a document's source, its stored reading and where each receipt is."""

    corpus: ObjectStore
    policy: Any
    runner: Any


class RunSource(Protocol):
    """Where runs are: what the run service offers a reader."""

    settings: Settings

    def get(self, run_id: str) -> RunRecord: ...

    def store(self, url: str) -> ObjectStore: ...

    def summary(self, run_id: str) -> dict[str, Any] | None: ...

    def inputs(self, record: RunRecord) -> RunInputs: ...

    def known_corpus(self, corpus: str) -> str: ...

    def corpus_runs(self, corpus: str, most: int) -> list[RunRecord]: ...
