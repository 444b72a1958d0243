"""A sampled k-gram index over a document's skeleton projection.

Only the k-grams starting at multiples of ``stride`` are indexed, which is enough to find every
occurrence of a pattern of at least ``stride + k - 1`` characters: whatever the occurrence's
alignment, the pattern then contains one whole indexed k-gram. The rarest k-gram of each
alignment names the candidate positions, which are compared in full.

Building it is two C-level dictionary constructions over ``n / stride`` slices (the first and
last position of each k-gram). A lookup costs about one dictionary probe per pattern character
and, when a pattern is made only of repeated k-grams (boilerplate), one C-level scan between
their first and last occurrences.
"""

from __future__ import annotations

K = 8
STRIDE = 12


class KGramIndex:
    __slots__ = ("first", "k", "last", "stride", "text")

    def __init__(self, text: str, k: int = K, stride: int = STRIDE) -> None:
        self.text = text
        self.k = k
        self.stride = stride
        positions = range(0, len(text) - k + 1, stride)
        grams = [text[p : p + k] for p in positions]
        self.last: dict[str, int] = dict(zip(grams, positions, strict=True))
        self.first: dict[str, int] = dict(zip(reversed(grams), reversed(positions), strict=True))

    @property
    def min_pattern(self) -> int:
        return self.stride + self.k - 1

    def find_all(self, pattern: str) -> list[int]:
        """Every start of ``pattern`` in the text, overlapping ones included, ascending."""
        k = self.k
        stride = self.stride
        m = len(pattern)
        if m < stride + k - 1:
            raise ValueError(f"patterns shorter than {stride + k - 1} characters need a scan")
        first = self.first
        last = self.last
        text = self.text
        found: set[int] = set()
        # Alignments whose k-grams all repeat: their occurrences lie between the first and the
        # last occurrence of the chosen k-gram, and one scan for the whole pattern over the
        # union of those ranges finds them all.
        scan_lo = scan_hi = -1
        get = first.get
        for r in range(stride):
            # Prefer a k-gram that occurs once; otherwise the one whose occurrences span least.
            best_j = -1
            best_spread = -1
            best_f = 0
            for j in range(r, m - k + 1, stride):
                gram = pattern[j : j + k]
                f = get(gram)
                if f is None:
                    best_j = -1
                    break
                spread = last[gram] - f
                if best_j < 0 or spread < best_spread:
                    best_j, best_spread, best_f = j, spread, f
                    if spread == 0:
                        break
            if best_j < 0:
                continue
            f = best_f
            if best_spread == 0:
                p = f - best_j
                if p >= 0 and text.startswith(pattern, p):
                    found.add(p)
                continue
            lo = max(0, f - best_j)
            hi = f + best_spread - best_j + m
            scan_lo = lo if scan_lo < 0 else min(scan_lo, lo)
            scan_hi = max(scan_hi, hi)
        if scan_lo >= 0:
            find = text.find
            p = find(pattern, scan_lo, scan_hi)
            while p != -1:
                found.add(p)
                p = find(pattern, p + 1, scan_hi)
        return sorted(found)
