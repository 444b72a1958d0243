"""The unit kinds, each declared once: the one place the run machinery learns what a kind is.

A kind (``verify``, ``admit``, ``read``, ``ledger``, or one from outside the package) is a
module that builds a :class:`Kind` and calls :func:`register`. Planning, execution, recovery,
finalize, the worker's queues and tasks, the metrics and the API ask this registry; none of
them names a kind. The registry imports no kind: it loads the built-in ones, then the modules
of ``GROUNDSWELL_KINDS_EXTRA``, by name (:func:`load`), the first time it is asked, so the
kinds depend on the machinery and never the other way round.

Adding a kind is one module (its planning rule, its executor, its queue) and its registration;
docker-compose.yml and deploy/k8s name each kind's queue too (a test holds them equal).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from groundswell.shared.runs.execute import RunContext
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.segments import Segment
    from groundswell.shared.runs.state import BatchSpec
    from groundswell.shared.runs.units import UnitResult, UnitRunner
    from groundswell.shared.settings import Settings

# The built-in kinds, in the order the run's summary lists them (and the queues run).
BUILTIN = (
    "groundswell.shared.units.read",
    "groundswell.shared.units.verify",
    "groundswell.shared.units.admit",
    "groundswell.shared.units.ledger",
)
# The queue of the run's own steps (planning, finalize, reconcile, what a finished run sends).
CONTROL = "control"

# What a kind's units leave in the run's index: a row each (``every``), a row only for a
# unit that failed (``failed``: the others count in the counters), or none (``none``).
Rows = Literal["every", "failed", "none"]


@dataclass(frozen=True, slots=True)
class Listed:
    """A document as planning found it: the sizes of its files by listing (``documents/``,
    ``claims/``, ...), its source file when it is not ``documents/<id>.txt``, and the units
    the kinds planned before this one asked (a reading kind plans for the others)."""

    doc_id: str
    seen: dict[str, int]
    source: str | list[str] | None
    units: list[Any]

    @property
    def document_bytes(self) -> int:
        from groundswell.shared.corpus import DOCUMENTS

        return self.seen.get(DOCUMENTS, 0)


@dataclass(frozen=True, slots=True)
class Work:
    """One batch as its executor gets it. ``context`` is None in the in-process baseline,
    which has no run record (a kind that needs one, as the ledger, is never planned there)."""

    spec: BatchSpec
    runner: UnitRunner
    settings: Settings
    context: RunContext | None = None


@dataclass(frozen=True)
class Kind:
    """One kind of unit, all of it the run machinery needs.

    - ``queue``: the Celery queue its batches go to (the task is ``groundswell.<name>``).
    - ``execute``: runs one batch (:class:`Work`) and returns its segment.
    - ``inputs``: key functions (doc id to storage key) of the files a unit reads; the first
      is the file a unit given up on is named by.
    - ``listing``: the corpus listing planning pages for it (``claims/``); ``plan``: the
      weight of a document's unit (bytes it reads), None for no unit.
    - ``rows``: what its units leave in the run's index (:data:`Rows`).
    - ``waits_for_reading``: a unit of a document read first (PDF, HTML, XML) is held until
      the reading kind's batch of that document is recorded.
    - ``reading``: this kind reads documents for the others; its batch holds theirs.
    - ``follow``: planned behind other kinds' batches rather than from the listing: given
      batches planned together, the documents of each that a batch of this kind takes (held
      until that batch is recorded; none: no batch), in runs where ``enabled``.
    - ``counters``: the summary counters it tallies besides ``units.<name>.*`` (names, or
      prefixes ending in a dot); ``always_summarized``: listed in a summary's ``units`` even
      when none of its units ran.
    - ``engines``: the engine revisions it runs under, recorded with every run.
    - ``unit`` and ``locate``: one document's unit on a runner, and the key of the receipt it
      has (or will have) from its inputs alone, for kinds whose units make receipts;
      ``row_fields``: what its index rows carry beyond every row's fields, from the unit's
      counts.
    - ``observe``: its own metrics from a batch computed now (policy name, version, the
      batch's fresh counters); the unit, document and input-error counts are every kind's.
    """

    name: str
    queue: str
    execute: Callable[[Work], Segment]
    inputs: tuple[Callable[[str], str], ...] = ()
    listing: str | None = None
    plan: Callable[[Listed], int | None] | None = None
    rows: Rows = "every"
    waits_for_reading: bool = False
    reading: bool = False
    follow: Callable[[list[BatchSpec]], list[list[str]]] | None = None
    enabled: Callable[[RunRecord], bool] | None = None
    counters: tuple[str, ...] = ()
    always_summarized: bool = False
    engines: Callable[[], dict[str, Any]] | None = None
    unit: Callable[[UnitRunner, str, Any], UnitResult] | None = None
    locate: Callable[[UnitRunner, str], str | None] | None = None
    row_fields: Callable[[Counter[str]], dict[str, Any]] | None = None
    observe: Callable[[str, str, dict[str, int]], None] | None = None

    @property
    def task(self) -> str:
        return f"groundswell.{self.name}"

    def on_in(self, record: RunRecord) -> bool:
        return self.enabled is None or self.enabled(record)


def each_document(
    unit: Callable[[UnitRunner, str, Any], UnitResult],
) -> Callable[[Work], Segment]:
    """The executor of a kind whose units are one document each, each leaving a row: the
    batch's units in order, as one segment."""

    def execute(work: Work) -> Segment:
        from groundswell.shared.runs.segments import unit_segment

        spec, runner = work.spec, work.runner
        with runner.listed(spec.listing):
            return unit_segment(spec, [unit(runner, d, spec.source(d)) for d in spec.doc_ids])

    execute.__module__ = unit.__module__  # the kind's, as register checks
    return execute


class KindError(ValueError):
    """A kind that cannot be registered or loaded, with what is wrong."""


_kinds: dict[str, Kind] = {}
_loaded: set[str] = set()
_lock = threading.RLock()
_started = False


def register(kind: Kind) -> Kind:
    """Add ``kind``; a second module declaring the same name is an error (the same module
    imported again replaces its own)."""
    with _lock:
        old = _kinds.get(kind.name)
        if old is not None and _module_of(old) != _module_of(kind):
            raise KindError(
                f"unit kind {kind.name!r} is declared twice: by {_module_of(old)} "
                f"and by {_module_of(kind)}"
            )
        if kind.queue == CONTROL:
            raise KindError(f"unit kind {kind.name!r}: the {CONTROL!r} queue is the run's own")
        if kind.reading and any(k.reading for k in _kinds.values() if k.name != kind.name):
            raise KindError(f"unit kind {kind.name!r}: there is already a reading kind")
        _kinds[kind.name] = kind
    return kind


def extra_modules(value: str | None) -> list[str]:
    """The module names of a ``GROUNDSWELL_KINDS_EXTRA`` value (comma or space separated)."""
    return [name for name in (value or "").replace(",", " ").split() if name]


def load(modules: Iterable[str] = ()) -> None:
    """Import the built-in kinds and ``modules`` (each registers its kinds), once each."""
    global _started
    with _lock:
        if not _started:
            from groundswell.shared.quick_settings import env_setting

            _started = True  # before the imports: a kind's module may ask the registry
            modules = [*BUILTIN, *extra_modules(env_setting("kinds_extra")), *modules]
        for name in modules:
            if name in _loaded:
                continue
            try:
                module = sys.modules.get(name)
                if module is None:
                    importlib.import_module(name)
                elif not any(_module_of(k) == name for k in _kinds.values()):
                    # Imported before the registry was put back (restored): register again.
                    importlib.reload(module)
            except Exception as exc:
                raise KindError(
                    f"GROUNDSWELL_KINDS_EXTRA: unit kind module {name!r} cannot be imported: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            _loaded.add(name)


@contextmanager
def restored() -> Iterator[None]:
    """The registry as it is now, put back after the block (a test that adds a kind)."""
    load()
    with _lock:
        saved = dict(_kinds), set(_loaded)
    try:
        yield
    finally:
        with _lock:
            _kinds.clear()
            _kinds.update(saved[0])
            _loaded.clear()
            _loaded.update(saved[1])


def _module_of(kind: Kind) -> str:
    return kind.execute.__module__


def _rank(kind: Kind) -> int:
    module = _module_of(kind)
    return BUILTIN.index(module) if module in BUILTIN else len(BUILTIN)


def all_kinds() -> list[Kind]:
    """Every registered kind: the built-in ones in their order (whatever imported them first),
    then the others in the order they registered."""
    load()
    return sorted(_kinds.values(), key=_rank)


def get(name: str) -> Kind:
    load()
    try:
        return _kinds[name]
    except KeyError:
        raise KindError(
            f"unknown unit kind {name!r} (known: {', '.join(_kinds)}; a kind from outside "
            "the package is loaded by GROUNDSWELL_KINDS_EXTRA)"
        ) from None


def find(name: str) -> Kind | None:
    """The kind of that name, None when there is none (a row of a kind not loaded here)."""
    load()
    return _kinds.get(name)


def names() -> tuple[str, ...]:
    return tuple(k.name for k in all_kinds())


def queues() -> tuple[str, ...]:
    """The queues workers consume: each kind's, in pipeline order, then ``control``."""
    return (*dict.fromkeys(k.queue for k in all_kinds()), CONTROL)


def reading_kind() -> Kind | None:
    return next((k for k in all_kinds() if k.reading), None)


def engines() -> dict[str, Any]:
    """The engine revisions of every kind, as a run records them."""
    out: dict[str, Any] = {}
    for kind in all_kinds():
        if kind.engines is not None:
            out.update(kind.engines())
    return out
