"""A sampled k-gram index over a document's skeleton projection.

Only the k-grams starting at multiples of ``stride`` are indexed, which is enough to find every
occurrence of a pattern of at least ``stride + k - 1`` characters: whatever the occurrence's
alignment, the pattern then contains one whole indexed k-gram. The rarest k-gram of each
alignment names the candidate positions, which are compared in full.

Building it is two C-level dictionary constructions over ``n / stride`` slices (the first and
last position of each k-gram); the positions of a repeated k-gram are found on demand, once.
A lookup costs about one dictionary probe per pattern character, whatever the document's size.
"""

from __future__ import annotations

K = 8
STRIDE = 12


class KGramIndex:
    __slots__ = ("_repeats", "first", "k", "last", "stride", "text")

    def __init__(self, text: str, k: int = K, stride: int = STRIDE) -> None:
        self.text = text
        self.k = k
        self.stride = stride
        positions = range(0, len(text) - k + 1, stride)
        grams = [text[p : p + k] for p in positions]
        self.last: dict[str, int] = dict(zip(grams, positions, strict=True))
        self.first: dict[str, int] = dict(zip(reversed(grams), reversed(positions), strict=True))
        self._repeats: dict[str, list[int]] = {}

    @property
    def min_pattern(self) -> int:
        return self.stride + self.k - 1

    def postings(self, gram: str) -> list[int]:
        """Indexed positions of ``gram``, ascending."""
        first = self.first.get(gram)
        if first is None:
            return []
        last = self.last[gram]
        if first == last:
            return [first]
        got = self._repeats.get(gram)
        if got is None:
            got = []
            stride = self.stride
            find = self.text.find
            p = first
            while p != -1 and p <= last:
                if p % stride == 0:
                    got.append(p)
                p = find(gram, p + 1, last + self.k)
            self._repeats[gram] = got
        return got

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
        for r in range(stride):
            # Prefer a k-gram that occurs once; otherwise the one whose occurrences span least.
            best_j = -1
            best_spread = -1
            for j in range(r, m - k + 1, stride):
                gram = pattern[j : j + k]
                f = first.get(gram)
                if f is None:
                    best_j = -1
                    break
                spread = last[gram] - f
                if best_j < 0 or spread < best_spread:
                    best_j, best_spread = j, spread
                    if spread == 0:
                        break
            if best_j < 0:
                continue
            for pos in self.postings(pattern[best_j : best_j + k]):
                p = pos - best_j
                if p >= 0 and text.startswith(pattern, p):
                    found.add(p)
        return sorted(found)
