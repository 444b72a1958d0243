"""Near-miss claim families for the repair cascade's differential tests.

Claims are made at run time from real documents of the shared corpus (never copied into the
repository). Each family is aimed at one behaviour of gtrex 1.1.0's ``repair``: the verify
stage (exact, normalized, degenerate), fragment salvage, alignment and its threshold, the four
guards (numeric, polarity, span, boundary) and the re-verification of a substituted span. A
family's aim is a tendency, not a promise: the test records which (action, stage) pairs each
family actually produced.

The generator extends the verify-family generator (``tests.shared.verify.families``): the same
random-span helper, the same typography and negation tables, the same ``Claim`` record.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from pathlib import Path

from tests.shared.verify.families import _NEGATION, Claim, ClaimFactory

# family -> the behaviour it is aimed at
AIMS = {
    "exact": "accepted at verify",
    "typography": "normalized at verify (substitute)",
    "case": "normalized at verify (substitute)",
    "dropped_word": "substituted or annotated at alignment",
    "swapped_words": "substituted or annotated at alignment",
    "inserted_word": "substituted or annotated at alignment",
    "stripped_punctuation": "skeleton tier or alignment",
    "number_changed": "numeric_guard",
    "scale_added": "numeric_guard (claimed scale word absent from the span)",
    "scale_removed": "passes the numeric guard (scale words are one-directional)",
    "sign_parens_dropped": "numeric_guard (a negative (x) written as x)",
    "sign_parens_added": "numeric_guard (a positive x written as (x))",
    "negation_dropped": "polarity_guard",
    "negation_added": "polarity_guard",
    "negation_before_span": "polarity_guard (negation in the clause just before the span)",
    "modal_changed": "polarity_guard",
    "direction_flipped": "polarity_guard",
    "ellipsis_clause": "stitched: alignment over the hidden clause, or salvage",
    "stitched_salvage": "fragment_salvage (one fragment long enough to verify)",
    "stitched_short": "no salvage (every fragment too short): alignment",
    "long_claim_short_span": "span_guard (coverage)",
    "short_claim_long_span": "span_guard (source expansion)",
    "mid_word": "boundary_guard",
    "punctuation_run": "post_verify (the located span has no letter or digit)",
    "fabricated": "rejected at alignment",
    "degenerate": "rejected at verify",
    "one_token": "very short claims",
    "two_tokens": "very short claims",
    "skeleton_only": "grounded_loose only: through the threshold and guards",
}
FAMILIES = tuple(AIMS)

_INSERTS = ("also", "the", "certain", "generally", "such", "other", "overall", "related")
_MODALS = ("may", "might", "could", "would", "should", "will", "shall", "must")
_MODAL = re.compile(r"\b(?:" + "|".join(_MODALS) + r")\b")
_FLIPS = {
    "increase": "decrease",
    "increased": "decreased",
    "increases": "decreases",
    "decrease": "increase",
    "decreased": "increased",
    "decreases": "increases",
    "higher": "lower",
    "lower": "higher",
    "more": "less",
    "less": "more",
    "maximum": "minimum",
    "minimum": "maximum",
}
_DIRECTION = re.compile(r"\b(?:" + "|".join(_FLIPS) + r")\b", re.IGNORECASE)
_AUX = re.compile(r"\b(?:is|are|was|were|will|may|can|could|would|should|must|has|have|does)\b")
_FIGURE = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})*(?:\.\d+)?(?![\w.,]?\d)")
_PARENS = re.compile(r"\(\$?\s?\d[\d,.]*\)")
_SCALE = re.compile(r" (?:million|billion|thousand|trillion)\b", re.IGNORECASE)
_JOINED = re.compile(r"\b[A-Za-z]{2,}[-/][A-Za-z]{2,}\b")
_PUNCT_RUN = re.compile(r"[-*=#~+]{4,}")
_PUNCT = re.compile(r"[^\w\s]")
_DEGENERATE = ("", " ", "...", "\u2026", "--", "()", "?!", " . , ; ", "\u2014", "\n\t")
_INVENTED = (
    "The Company plans to open twelve new distribution centres in fiscal 2031",
    "Our zeppelin fleet grew by forty airships across the northern provinces",
    "Management expects quantum bakery revenue to triple next quarter",
    "The board approved a special dividend payable in tulip bulbs",
)


class _Absent(LookupError):
    """The document has no match for a family's pattern."""


# --- the corpus, read in place -------------------------------------------------------------


def corpus_root() -> Path:
    from groundswell.shared.settings import get_settings

    return get_settings().shared_corpus


def read_index(root: Path | None = None) -> list[dict]:
    path = (root or corpus_root()) / "index.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def read_document(doc_id: str, root: Path | None = None) -> str:
    path = (root or corpus_root()) / "documents" / f"{doc_id}.txt"
    return path.read_bytes().decode("utf-8")


# --- the generator --------------------------------------------------------------------------


class RepairClaimFactory(ClaimFactory):
    """Near-miss claims from one document; deterministic for a (text, seed)."""

    def __init__(self, text: str, seed: int) -> None:
        super().__init__(text, seed)
        self._starts = [a for a, _ in self.words]

    # helpers over word indices
    def _word_at(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._starts, offset) - 1)

    def _words(self, i: int, j: int) -> tuple[int, int]:
        """Source offsets covering words i..j inclusive (clamped)."""
        i = max(0, min(i, len(self.words) - 1))
        j = max(i, min(j, len(self.words) - 1))
        return self.words[i][0], self.words[j][1]

    def _around(self, pattern: re.Pattern[str], before: int, after: int) -> tuple:
        """A random match of ``pattern`` with up to ``before``/``after`` words either side:
        (span start, span end, match). Raises ``_Absent`` when the document has no match."""
        matches = list(pattern.finditer(self.text))
        if not matches:
            raise _Absent(pattern.pattern)
        m = self.rng.choice(matches)
        i, j = self._word_at(m.start()), self._word_at(max(m.start(), m.end() - 1))
        a, b = self._words(i - self.rng.randint(0, before), j + self.rng.randint(0, after))
        return min(a, m.start()), max(b, m.end()), m

    def _inner_word(self, a: int, b: int) -> tuple[int, int] | None:
        """Index range of the words of [a, b), or None when there are fewer than 3."""
        i, j = self._word_at(a), self._word_at(b - 1)
        return (i, j) if j - i >= 2 else None

    def _drop(self, a: int, b: int, k: int) -> str:
        """text[a:b] without word k (and the whitespace after it)."""
        text = self.text
        return text[a : self.words[k][0]] + text[self.words[k + 1][0] : b]

    def make(self, family: str) -> Claim:
        try:
            return self._make(family)
        except _Absent:  # the document has nothing this family needs: a plain span instead
            return Claim(family, self.text.__getitem__(slice(*self._span())))

    def _make(self, family: str) -> Claim:
        rng, text = self.rng, self.text
        if family in ("exact", "typography", "case", "fabricated", "one_token", "two_tokens"):
            claim = super().make(family)
            if family == "fabricated" and rng.random() < 0.3:
                return Claim(family, rng.choice(_INVENTED))
            return Claim(family, claim.claim)
        if family in ("dropped_word", "swapped_words", "inserted_word"):
            a, b = self._span(8, 25)
            ij = self._inner_word(a, b)
            if ij is None:
                return Claim(family, text[a:b])
            k = rng.randint(ij[0] + 1, ij[1] - 1)
            if family == "dropped_word":
                return Claim(family, self._drop(a, b, k))
            (p, q), (r, s) = self.words[k], self.words[k + 1]
            if family == "swapped_words":
                return Claim(family, text[a:p] + text[r:s] + text[q:r] + text[p:q] + text[s:b])
            return Claim(family, text[a:p] + rng.choice(_INSERTS) + " " + text[p:b])
        if family == "stripped_punctuation":
            a, b = self._span(5, 25, want=_PUNCT)
            return Claim(family, _PUNCT.sub(rng.choice(("", " ")), text[a:b]))
        if family == "skeleton_only":
            # Same letters and digits, different punctuation or spacing: found only once
            # punctuation and spaces are deleted.
            a, b, m = self._around(re.compile(r"\d[.,]\d|[A-Za-z]-[A-Za-z]|\w[.,;:]"), 6, 8)
            s = text[a:b]
            k = m.start() - a + 1
            return Claim(family, s[:k] + s[k + 1 :])
        if family == "number_changed":
            a, b, m = self._around(_FIGURE, 6, 8)
            fig = m.group()
            digits = [i for i, ch in enumerate(fig) if ch.isdigit()]
            i = rng.choice(digits)
            new = fig[:i] + str((int(fig[i]) + rng.randint(1, 8)) % 10) + fig[i + 1 :]
            if rng.random() < 0.3:
                new = fig.replace(".", "", 1) if "." in fig else fig + "0"
            return Claim(family, text[a : m.start()] + new + text[m.end() : b])
        if family == "scale_added":
            a, b, m = self._around(_FIGURE, 5, 6)
            scale = rng.choice((" million", " billion", " thousand"))
            return Claim(family, text[a : m.end()] + scale + text[m.end() : b])
        if family == "scale_removed":
            a, b, m = self._around(_SCALE, 6, 6)
            return Claim(family, text[a : m.start()] + text[m.end() : b])
        if family == "sign_parens_dropped":
            a, b, m = self._around(_PARENS, 6, 4)
            inner = m.group()[1:-1]
            return Claim(family, text[a : m.start()] + inner + text[m.end() : b])
        if family == "sign_parens_added":
            a, b, m = self._around(_FIGURE, 6, 4)
            return Claim(family, text[a : m.start()] + f"({m.group()})" + text[m.end() : b])
        if family == "negation_dropped":
            a, b, m = self._around(_NEGATION, 6, 10)
            return Claim(family, text[a : m.start()] + text[m.end() : b])
        if family == "negation_added":
            a, b, m = self._around(_AUX, 5, 10)
            return Claim(family, text[a : m.end()] + " not" + text[m.end() : b])
        if family == "negation_before_span":
            # The source reads "... not <span>"; the claim is <span> with one word dropped, so
            # it misses verification and aligns just after the negation.
            *_, m = self._around(re.compile(r"\b(?:not|no|never|cannot|without)\s+\w"), 0, 0)
            i = self._word_at(m.end() - 1)
            j = min(i + rng.randint(7, 16), len(self.words) - 1)
            a, b = self._words(i, j)
            if j - i < 4:
                return Claim(family, text[a:b])
            return Claim(family, self._drop(a, b, rng.randint(i + 2, j - 1)))
        if family == "modal_changed":
            a, b, m = self._around(_MODAL, 5, 10)
            other = rng.choice([w for w in _MODALS if w != m.group()])
            return Claim(family, text[a : m.start()] + other + text[m.end() : b])
        if family == "direction_flipped":
            a, b, m = self._around(_DIRECTION, 5, 10)
            word = m.group()
            flipped = _FLIPS[word.lower()]
            flipped = flipped.capitalize() if word[0].isupper() else flipped
            return Claim(family, text[a : m.start()] + flipped + text[m.end() : b])
        if family == "ellipsis_clause":
            a, b = self._span(22, 36)
            i, j = self._word_at(a), self._word_at(b - 1)
            if j - i < 18:
                return Claim(family, text[a:b])
            p = i + rng.randint(8, 10)
            q = p + rng.randint(2, 6)
            joint = rng.choice((" ... ", " \u2026 ", "... "))
            return Claim(
                family, text[a : self.words[p - 1][1]] + joint + text[self.words[q][0] : b]
            )
        if family in ("stitched_salvage", "stitched_short"):
            lo, hi = (10, 20) if family == "stitched_salvage" else (2, 4)
            long_a, long_b = self._span(lo, hi)
            short_a, short_b = self._span(2, 4)
            parts = [text[long_a:long_b], text[short_a:short_b]]
            if rng.random() < 0.5:
                parts.reverse()
            if family == "stitched_salvage" and rng.random() < 0.3:
                parts.append(rng.choice(_INVENTED))
            return Claim(family, rng.choice((" ... ", "...", " \u2026 ")).join(parts))
        if family == "long_claim_short_span":
            a, b = self._span(4, 8)
            noise = [text[p:q] for p, q in rng.sample(self.words, min(len(self.words), 10))]
            return Claim(family, text[a:b] + " " + " ".join(noise))
        if family == "short_claim_long_span":
            a, b = self._span(26, 40)
            i, j = self._word_at(a), self._word_at(b - 1)
            if j - i < 20:
                return Claim(family, text[a:b])
            keep = rng.randint(6, 8)
            return Claim(family, text[a : self.words[i + keep][1]] + " " + text[
                self.words[j - keep][0] : b])  # fmt: skip
        if family == "mid_word":
            *_, m = self._around(_JOINED, 0, 0)
            joint = m.start() + re.search(r"[-/]", m.group()).start()
            i = self._word_at(m.start())
            if rng.random() < 0.6:  # start on the second half of "non-cash"
                _, b = self._words(i, i + rng.randint(5, 12))
                return Claim(family, text[joint + 1 : b])
            a, _ = self._words(i - rng.randint(5, 12), i)  # end on the first half
            return Claim(family, text[a:joint])
        if family == "punctuation_run":
            *_, m = self._around(_PUNCT_RUN, 0, 0)
            return Claim(family, m.group() + " " + rng.choice(("qz", "zzq", "x")))
        if family == "degenerate":
            return Claim(family, rng.choice(_DEGENERATE))
        raise ValueError(family)

    def claims(self, per_family: int) -> Iterator[Claim]:
        for family in FAMILIES:
            for _ in range(per_family):
                yield self.make(family)
