"""Offset maps: where each character of a normalized projection came from in the original text.

Every character of a projection has a *region*, the half-open range ``[start, end)`` of the
original text that produced it. A character copied through unchanged (or changed one for one)
keeps its own region; every character emitted by a rewrite of several characters, or by a
rewrite that changes the length, gets the union of the regions it replaced (``¼ -> 1⁄4``: three
characters, one region). Regions never partially overlap, so two characters share a region
exactly when their regions are equal.

Maps are sparse: a step records only its length-changing rewrites (``array('q')`` columns) and
defers to its parent for everything else, so a mostly-unchanged document costs almost nothing
per step. Nothing here holds one Python object per character.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from bisect import bisect_left, bisect_right
from itertools import compress


class OffsetMap(ABC):
    """Maps projection indices to regions of the original text."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length

    @abstractmethod
    def region(self, i: int) -> tuple[int, int]:
        """The region ``[start, end)`` of the original text behind character ``i``."""

    def start(self, i: int) -> int:
        return self.region(i)[0]

    def end(self, i: int) -> int:
        return self.region(i)[1]

    @abstractmethod
    def first_at_or_after(self, offset: int) -> int:
        """The first index whose region starts at or after ``offset`` (``length`` if none)."""

    def span(self, a: int, b: int) -> tuple[int, int]:
        """The original span of projection characters ``[a, b)`` (``b > a``)."""
        return self.region(a)[0], self.region(b - 1)[1]

    def splits(self, a: int, b: int) -> bool:
        """Whether ``[a, b)`` cuts through a region shared with a character outside it."""
        if a > 0 and self.region(a - 1) == self.region(a):
            return True
        return b < self.length and self.region(b) == self.region(b - 1)


class IdentityMap(OffsetMap):
    """The original text itself: character ``i`` is region ``[i, i + 1)``."""

    __slots__ = ()

    def region(self, i: int) -> tuple[int, int]:
        return i, i + 1

    def start(self, i: int) -> int:
        return i

    def end(self, i: int) -> int:
        return i + 1

    def first_at_or_after(self, offset: int) -> int:
        if offset <= 0:
            return 0
        return min(offset, self.length)

    def span(self, a: int, b: int) -> tuple[int, int]:
        return a, b

    def splits(self, a: int, b: int) -> bool:
        return False


class EditMap(OffsetMap):
    """A projection made from its parent by rewrites, of which only the non one-for-one are kept.

    Edit ``k`` replaced parent characters ``[xlo[k], xhi[k])`` (never empty) by projection
    characters ``[ylo[k], yhi[k])`` (empty for a deletion).
    """

    __slots__ = ("parent", "xhi", "xlo", "yhi", "ylo")

    def __init__(
        self, parent: OffsetMap, length: int, xlo: array, xhi: array, ylo: array, yhi: array
    ) -> None:
        super().__init__(length)
        self.parent = parent
        self.xlo = xlo
        self.xhi = xhi
        self.ylo = ylo
        self.yhi = yhi

    def region(self, i: int) -> tuple[int, int]:
        k = bisect_right(self.ylo, i) - 1
        if k >= 0:
            if i < self.yhi[k]:
                parent = self.parent
                return parent.start(self.xlo[k]), parent.end(self.xhi[k] - 1)
            return self.parent.region(i - self.yhi[k] + self.xhi[k])
        return self.parent.region(i)

    def start(self, i: int) -> int:
        k = bisect_right(self.ylo, i) - 1
        if k >= 0:
            if i < self.yhi[k]:
                return self.parent.start(self.xlo[k])
            return self.parent.start(i - self.yhi[k] + self.xhi[k])
        return self.parent.start(i)

    def end(self, i: int) -> int:
        k = bisect_right(self.ylo, i) - 1
        if k >= 0:
            if i < self.yhi[k]:
                return self.parent.end(self.xhi[k] - 1)
            return self.parent.end(i - self.yhi[k] + self.xhi[k])
        return self.parent.end(i)

    def first_at_or_after(self, offset: int) -> int:
        x = self.parent.first_at_or_after(offset)
        # Region starts are monotone in the parent index, so find the first projection index
        # whose parent index is at least x.
        k = bisect_right(self.xlo, x) - 1
        if k < 0:
            return min(x, self.length)
        if self.xlo[k] == x:
            return self.ylo[k]
        if x < self.xhi[k]:
            return self.yhi[k]
        return min(x - self.xhi[k] + self.yhi[k], self.length)


_ASCII_KEEP = bytes(1 if chr(c).isalnum() else 0 for c in range(128)) + bytes(128)


class SubsetMap(OffsetMap):
    """A projection that keeps a subset of its parent's characters: its letters and digits.

    Only the number of kept characters per chunk of the parent is stored up front; the kept
    positions of one chunk are listed (with C-level ``bytes.translate`` and
    ``itertools.compress``) when an offset inside it is first asked for. Building the
    projection therefore never loops over characters in Python.
    """

    __slots__ = ("_positions", "chunk", "counts", "parent", "parent_text")

    def __init__(self, parent: OffsetMap, parent_text: str, chunk: int, counts: array) -> None:
        super().__init__(counts[-1])
        self.parent = parent
        self.parent_text = parent_text
        self.chunk = chunk
        self.counts = counts  # counts[j]: kept characters before parent index j * chunk
        self._positions: dict[int, list[int]] = {}

    def positions(self, j: int) -> list[int]:
        """Parent indices of the kept characters of chunk ``j``, ascending."""
        got = self._positions.get(j)
        if got is None:
            lo = j * self.chunk
            piece = self.parent_text[lo : lo + self.chunk]
            if piece.isascii():
                mask: bytes | list[bool] = piece.encode("ascii").translate(_ASCII_KEEP)
            else:
                mask = [c.isalnum() for c in piece]
            got = list(compress(range(lo, lo + len(piece)), mask))
            self._positions[j] = got
        return got

    def parent_index(self, i: int) -> int:
        # The last chunk starting at or before i; empty chunks repeat a count, and
        # bisect_right skips past them to the chunk that holds i.
        j = bisect_right(self.counts, i) - 1
        return self.positions(j)[i - self.counts[j]]

    def region(self, i: int) -> tuple[int, int]:
        return self.parent.region(self.parent_index(i))

    def start(self, i: int) -> int:
        return self.parent.start(self.parent_index(i))

    def end(self, i: int) -> int:
        return self.parent.end(self.parent_index(i))

    def first_at_or_after(self, offset: int) -> int:
        x = self.parent.first_at_or_after(offset)
        j = x // self.chunk
        if j >= len(self.counts) - 1:
            return self.length
        return self.counts[j] + bisect_left(self.positions(j), x)


def build_edit_map(parent: OffsetMap, length: int, edits: list[tuple[int, int, int]]) -> OffsetMap:
    """An :class:`EditMap` from ``(xlo, xhi, new_length)`` rewrites in order; the parent if none.

    One-for-one rewrites leave regions unchanged, so they are dropped here.
    """
    xlo = array("q")
    xhi = array("q")
    ylo = array("q")
    yhi = array("q")
    shift = 0
    for lo, hi, n in edits:
        if hi - lo == 1 and n == 1:
            continue
        y = lo + shift
        xlo.append(lo)
        xhi.append(hi)
        ylo.append(y)
        yhi.append(y + n)
        shift += n - (hi - lo)
    if not xlo:
        return parent
    return EditMap(parent, length, xlo, xhi, ylo, yhi)
