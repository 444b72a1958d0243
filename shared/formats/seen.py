"""The document ids a producer corpus has listed, so that a second record with one of them
fails as ``groundswell import`` refuses it (a document id names one record).

An id is kept as a 96-bit digest of its lower-case form (import compares ids so: a
case-insensitive file system holds one of ``A`` and ``a``) with its ordinal, its place in
the source's order: 16 bytes an id, in sorted arrays merged as a binary counter merges
(a run of 4,096 recent ids, then runs of twice the size), behind a 1 MB bitmap that answers
most new ids without a search. Digests of two different ids agree with a probability of
about n² / 2^97 (6e-18 for a million ids).

The ordinal makes listing the same documents again harmless: a document found with its own
ordinal is itself, with a later one it is the first of its id (the later one, listed again,
is then the duplicate). So a planner that resumes from a cursor behind what this structure
has seen (the rest of a page a full window refused) lists those documents as before.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left

RUN = 4096
_BITS = 1 << 23  # the bitmap's bits: 1 MB
_LO = (1 << 32) - 1


def _digest(doc_id: str) -> int:
    data = doc_id.lower().encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=12).digest(), "big")


class SeenIds:
    """Document ids with the ordinal of the first document listed with each (see module)."""

    def __init__(self) -> None:
        self.bits = bytearray(_BITS // 8)
        # Sorted runs of (high 64 bits, low 32 bits, ordinal), largest first.
        self.levels: list[tuple[array[int], array[int], array[int]]] = []
        self.recent: dict[int, int] = {}
        self.upto = 0  # every ordinal below this is recorded

    def __len__(self) -> int:
        return len(self.recent) + sum(len(level[0]) for level in self.levels)

    def earlier(self, doc_id: str, ordinal: int) -> bool:
        """Whether a document before ``ordinal`` has this id; records this one."""
        self.upto = max(self.upto, ordinal + 1)
        d = _digest(doc_id)
        bit = d & (_BITS - 1)
        byte, mask = bit >> 3, 1 << (bit & 7)
        if not self.bits[byte] & mask:
            self.bits[byte] |= mask
            self._add(d, ordinal)
            return False
        first = self.recent.get(d)
        if first is not None:
            if ordinal < first:
                self.recent[d] = ordinal
            return first < ordinal
        hi, lo = d >> 32, d & _LO
        for his, los, ordinals in self.levels:
            i = bisect_left(his, hi)
            while i < len(his) and his[i] == hi:
                if los[i] == lo:
                    first = ordinals[i]
                    if ordinal < first:
                        ordinals[i] = ordinal
                    return first < ordinal
                i += 1
        self._add(d, ordinal)
        return False

    def _add(self, d: int, ordinal: int) -> None:
        self.recent[d] = ordinal
        if len(self.recent) < RUN:
            return
        items = sorted(self.recent.items())
        self.recent = {}
        run = (
            array("Q", (d >> 32 for d, _ in items)),
            array("I", (d & _LO for d, _ in items)),
            array("I", (o for _, o in items)),
        )
        self.levels.append(run)
        while len(self.levels) > 1 and len(self.levels[-1][0]) >= len(self.levels[-2][0]):
            b, a = self.levels.pop(), self.levels.pop()
            self.levels.append(_merge(a, b))


def _merge(
    a: tuple[array[int], array[int], array[int]], b: tuple[array[int], array[int], array[int]]
) -> tuple[array[int], array[int], array[int]]:
    """Two sorted runs as one (no digest is in both: each was added once)."""
    ah, al, ao = a
    bh, bl, bo = b
    hi, lo, ordinals = array("Q"), array("I"), array("I")
    i = j = 0
    while i < len(ah) and j < len(bh):
        if (ah[i], al[i]) <= (bh[j], bl[j]):
            hi.append(ah[i]), lo.append(al[i]), ordinals.append(ao[i])
            i += 1
        else:
            hi.append(bh[j]), lo.append(bl[j]), ordinals.append(bo[j])
            j += 1
    hi.extend(ah[i:]), lo.extend(al[i:]), ordinals.extend(ao[i:])
    hi.extend(bh[j:]), lo.extend(bl[j:]), ordinals.extend(bo[j:])
    return hi, lo, ordinals
