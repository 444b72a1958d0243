"""A document's projections: its text pushed through chains of steps, built once, lazily.

Verifiers for several policies over one document (``sensitivity``) share one ``Projections``,
so a tier that two ladders have in common is normalized once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groundswell.shared.text.offsets import IdentityMap, OffsetMap
from groundswell.shared.text.transforms import Transform


@dataclass(frozen=True)
class Projection:
    """A normalized text and where each of its characters came from in the original."""

    text: str
    map: OffsetMap


class Projections:
    def __init__(self, source: str) -> None:
        self.source = source
        self._cache: dict[tuple[object, ...], Projection] = {
            (): Projection(source, IdentityMap(len(source)))
        }
        self._lock = threading.Lock()
        self._memo: dict[object, Any] = {}
        # How many document-wide searches have been run: structures that only pay off over
        # many claims (the search index) are built once this grows.
        self.searches = 0

    def __getstate__(self) -> dict[str, Any]:
        # Projections are rebuilt on demand; only the text travels (to a worker process).
        return {"source": self.source}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"])  # type: ignore[misc]

    def get(self, chain: tuple[Transform, ...]) -> Projection:
        key = tuple(step.key for step in chain)
        got = self._cache.get(key)
        if got is not None:
            return got
        with self._lock:
            got = self._cache.get(key)
            if got is not None:
                return got
            # Start from the longest chain already built.
            n = len(chain)
            while n > 0 and key[:n] not in self._cache:
                n -= 1
            proj = self._cache[key[:n]]
            text, omap = proj.text, proj.map
            for step in chain[n:]:
                text, omap = step.project(text, omap)
            got = Projection(text, omap)
            self._cache[key] = got
            return got

    def memo(self, key: object, build: Callable[[], Any]) -> Any:
        """A per-document structure (search index, boundary view), built once."""
        got = self._memo.get(key)
        if got is None:
            got = build()
            with self._lock:
                got = self._memo.setdefault(key, got)
        return got

    def peek(self, key: object) -> Any:
        return self._memo.get(key)
