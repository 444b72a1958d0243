"""The repair cascade's numeric and polarity guards (gtrex 1.1.0 parity).

A substitution stores verbatim source text, so two edits that barely move a similarity score
would produce a record that quotes the document and still does not say what the model said:
a changed figure (or sign, or scale word) and a dropped or added negation or modal. The guards
refuse those spans. They are partial checks, not proofs of faithfulness.

One :class:`Guards` serves every claim of one source document. The only whole-document work,
the guard projection used to read a sign just before a span, is done once and only when a
claim with a figure first needs it; everything else per claim reads the claim, the span and a
bounded stretch of source before it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

from groundswell.shared.repair.numbers import (
    SCALE_WORDS,
    guard_projection,
    numeric_sequence,
    signed_sequence,
)
from groundswell.shared.text.offsets import IdentityMap, OffsetMap, build_edit_map
from groundswell.shared.text.projections import Projections
from groundswell.shared.text.transforms import NFKC, MapTypography, Transform, UnescapeEntities

__all__ = [
    "DEFAULT_POLARITY_TOKENS",
    "DIRECTION_TOKENS",
    "NEGATION_TOKENS",
    "Guards",
    "polarity_sequence",
    "polarity_token_supported",
]

_NEGATIONS = (
    "not no never cannot nor none neither without unable fail fails failed except unless "
    "nothing cease ceased decline declined absent lack lacks"
)
_MODALS = (
    "may might could would should will shall must likely unlikely possible expects expect "
    "believes believe anticipates anticipate guarantees guarantee"
)
_DIRECTIONS = (
    "less more minimum maximum insufficient sufficient inability ability increase increased "
    "decrease decreased higher lower"
)

#: gtrex 1.1.0's English vocabulary (55 words): a dropped or added one reverses or hardens a
#: statement while sharing almost every token with it.
DEFAULT_POLARITY_TOKENS: frozenset[str] = frozenset(f"{_NEGATIONS} {_MODALS} {_DIRECTIONS}".split())
#: Direction and scale words: the source may carry more of them than the claim (in order).
DIRECTION_TOKENS: frozenset[str] = frozenset(_DIRECTIONS.split())
_CLAUSE_NEGATIONS = (
    "not no never cannot nor none neither without unable unlikely fail fails failed unless "
    "nothing absent lack lacks"
)
#: The negative words looked for in the clause before a span that starts mid-clause.
NEGATION_TOKENS: frozenset[str] = frozenset(_CLAUSE_NEGATIONS.split())

# Words are maximal runs of letters (digits and "_" excluded), as gtrex reads them.
_WORD = re.compile(r"[^\W\d_]+")
# Rewrites before words are read, each applied only when its trigger character is present: a
# word hyphenated across a line end is one word ("un-\nlikely"), and "n't" reads as " not"
# ("don't" is "do not"; as in gtrex, "can't" is "ca not").
_REWRITES = (
    ("-", re.compile(r"(?<=[^\W\d_])-\r?\n[ \t]*(?=[^\W\d_])"), ""),
    ("'", re.compile(r"\b([a-z]+)n['\u2019]t\b", re.IGNORECASE), r"\1 not"),
)
# A wrapped fixed-width table row: a run of three or more spaces before a cell.
_TABLE_GAP = re.compile(r" {3,}\S")
# Clause edges that are not one: an entity's ";", an initialism's or a title's ".".
_ENTITY_TAIL = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});$")
_INITIALISM_TAIL = re.compile(r"(?:\b[A-Za-z]\.){2,}$")
_TITLE_TAIL = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|Sr|Jr|St|vs|etc)\.$", re.IGNORECASE)
# After a ",", a contrast or "and" with a new subject starts a new clause; a bare ", and" may
# open a parenthetical ("do not, and frankly, expect").
_NEW_CLAUSE_AFTER_COMMA = re.compile(
    r"\s*(?:(?:but|yet|whereas)\b|and\s+(?:i|you|he|she|it|we|they|there|the|a|an|this|that|"
    r"these|those|our|their|its|his|her)\b)",
    re.IGNORECASE,
)
_CLAUSE_PUNCTUATION = ".!?;:,"
# At most this many words of the clause before a span can decide the negation check.
_CONTEXT_WORDS = 12
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_GUARD_STEPS: tuple[Transform, ...] = (UnescapeEntities(), MapTypography(), NFKC())


def _words(text: str) -> list[str]:
    """Every word of ``text`` as the polarity guard reads it, lowercased, in order."""
    projected = guard_projection(text)
    for trigger, pattern, replacement in _REWRITES:
        if trigger in projected:
            projected = pattern.sub(replacement, projected)
    return _WORD.findall(projected.lower())


def polarity_sequence(
    text: str, words: frozenset[str] = DEFAULT_POLARITY_TOKENS
) -> tuple[str, ...]:
    """The watched ``words`` of ``text``, in order, after the guard projection, line-end
    hyphenation and ``n't`` contractions are undone."""
    return tuple(w for w in _words(text) if w in words)


def polarity_token_supported(token: str) -> bool:
    """Whether ``token`` can ever be read as a watched word: one word that the guard projection
    leaves as it is (``ﬁnd`` would be read as ``find``, so it could never match)."""
    if not isinstance(token, str) or not token:
        return False
    lowered = token.lower()
    return _WORD.fullmatch(lowered) is not None and guard_projection(token).lower() == lowered


def _in_order(wanted: Sequence[str], found: Iterable[str]) -> bool:
    """Whether ``wanted`` is a subsequence of ``found``."""
    rest = iter(found)
    return all(item in rest for item in wanted)


def _is_letter(ch: str) -> bool:
    # What "[^\W\d_]" matches: alphanumeric (in str.isalnum's wide sense) but no decimal digit.
    return ch.isalnum() and not ch.isdecimal()


def _ignorable(ch: str) -> bool:
    return ch == "\u034f" or unicodedata.category(ch) == "Cf"


# Documents above this size read the sign before a span from a projected piece around it.
_WINDOWED_FROM = 65_536
_REACH = 64
# Beyond this, a piece (a run without whitespace) is read from the whole projection instead.
_LONGEST_PIECE = 4096
_SPACES = (" ", "\n", "\t", "\r")


def _drop_ignorable(text: str, omap: OffsetMap) -> tuple[str, OffsetMap]:
    """Remove format characters (and the combining grapheme joiner) from a projection."""
    dropped = [m.start() for m in _NON_ASCII.finditer(text) if _ignorable(m.group())]
    if not dropped:
        return text, omap
    kept = [text[i + 1 : j] for i, j in zip([-1, *dropped], [*dropped, len(text)], strict=True)]
    text = "".join(kept)
    return text, build_edit_map(omap, len(text), [(i, i + 1, 0) for i in dropped])


def _guard_view(source: str) -> tuple[str, OffsetMap]:
    """``source`` through the guard projection, with its offset map."""
    text, omap = source, IdentityMap(len(source))
    for step in _GUARD_STEPS:
        text, omap = step.project(text, omap)
    return _drop_ignorable(text, omap)


class Guards:
    """The numeric and polarity guards for every claim against one ``source`` document.

    ``polarity_tokens`` is the watched vocabulary (lowercased, as a policy hands it over).
    ``projections``, if given, is the document's shared projection cache, so the guard
    projection reuses the entity and typography steps the verifier may already have built.
    """

    def __init__(
        self,
        source: str,
        polarity_tokens: frozenset[str] = DEFAULT_POLARITY_TOKENS,
        projections: Projections | None = None,
    ) -> None:
        self.source = source
        watched = frozenset(token.lower() for token in polarity_tokens)
        self.watched = watched
        self._direction = watched & DIRECTION_TOKENS
        self._core = watched - self._direction
        self._negative = watched & NEGATION_TOKENS
        self._projections = projections
        self._projected: tuple[str, OffsetMap] | None = None

    # --- numbers ------------------------------------------------------------------------

    def numbers_agree(self, claim: str, start: int, end: int, span_text: str) -> bool:
        """Whether every figure, scale word and adjacent sign of ``claim`` is in the span
        ``source[start:end] == span_text``, in order. One-directional: a wider span that
        carries more figures is still a quotation of the claim."""
        claimed_scales = set(SCALE_WORDS.findall(claim.lower()))
        if claimed_scales and not claimed_scales <= set(SCALE_WORDS.findall(span_text.lower())):
            return False
        claim_figures = numeric_sequence(claim)
        span_figures = numeric_sequence(span_text) if claim_figures else ()
        if not set(claim_figures) <= set(span_figures):
            return False
        # A wrapped fixed-width table row may emit a value before the wrapped label that it
        # sits after visually: there only the multiset of figures has to agree.
        table_row = (
            "\n" in span_text and "\n" not in claim and _TABLE_GAP.search(span_text) is not None
        )
        if not _in_order(claim_figures, span_figures) and not (
            table_row and Counter(claim_figures) == Counter(span_figures)
        ):
            return False
        claim_signed = signed_sequence(claim)
        if not claim_signed:
            return True
        # The alignment may begin just after a unary sign: "-5%" must not be stored as "5%".
        span_signed = signed_sequence(self._sign_before(start) + span_text)
        if _in_order(claim_signed, span_signed):
            return True
        return table_row and Counter(claim_signed) == Counter(span_signed)

    def _guard_source(self) -> tuple[str, OffsetMap]:
        """The whole source through the guard projection, with its offset map (built once)."""
        if self._projected is None:
            if self._projections is not None:
                got = self._projections.get(_GUARD_STEPS)
                self._projected = _drop_ignorable(got.text, got.map)
            else:
                self._projected = _guard_view(self.source)
        return self._projected

    def _around(self, start: int) -> tuple[str, OffsetMap, int]:
        """The guard projection near ``start``, with its map and where ``start`` falls in it.

        Every step of the projection reads one character, or one entity, at a time, and an
        entity holds no whitespace. So a piece of the source cut at whitespace projects to
        exactly the whole projection's characters for it, and a large document needs no
        projection of the rest. Without whitespace nearby, the whole source is projected."""
        if self._projected is None and len(self.source) > _WINDOWED_FROM:
            source = self.source
            # The document's own ends are cuts too.
            left = max(0, *(source.rfind(c, 0, max(0, start - _REACH)) for c in _SPACES))
            rights = [p for p in (source.find(c, start + _REACH) for c in _SPACES) if p >= 0]
            right = min(rights) if rights else len(source)
            if right - left <= _LONGEST_PIECE:
                text, omap = _guard_view(source[left:right])
                return text, omap, start - left
        text, omap = self._guard_source()
        return text, omap, start

    def _sign_before(self, start: int) -> str:
        """A "-" or "+" that is the last projected character wholly before ``start`` and is a
        unary sign (not after a letter, digit, "." or "_"); otherwise ""."""
        if start <= 0:
            return ""
        text, omap, start = self._around(start)
        # How many projected characters end at or before ``start`` (region ends are sorted).
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi) // 2
            if omap.end(mid) <= start:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0 or text[lo - 1] not in "-+":
            return ""
        before = text[lo - 2] if lo > 1 else ""
        if before and (before.isalnum() or before in "._"):
            return ""
        return text[lo - 1]

    # --- polarity -----------------------------------------------------------------------

    def polarity_agrees(self, claim: str, start: int, end: int, span_text: str) -> bool:
        """Whether ``claim`` and the span ``source[start:end] == span_text`` carry the same
        negations and modals (in order), the claim's direction words appear in the span in
        order, and the claim's negations equal those of the span read with the last words
        of its clause before it (an alignment can start just after a "do not")."""
        claim_words = _words(claim)
        span_words = _words(span_text)
        core = self._core
        if [w for w in claim_words if w in core] != [w for w in span_words if w in core]:
            return False
        direction = self._direction
        if not _in_order(
            [w for w in claim_words if w in direction], (w for w in span_words if w in direction)
        ):
            return False
        negative = self._negative
        context_start = self._context_start(start) if span_text else start
        if context_start < start:
            span_words = _words(self.source[context_start:start] + span_text)
        return [w for w in claim_words if w in negative] == [w for w in span_words if w in negative]

    def _context_start(self, start: int) -> int:
        """Where the context read before a span begins: the start of the clause holding
        ``start`` (bracketed text skipped), or of its last twelve words if it has more."""
        source = self.source
        left = start
        depth = 0  # brackets closed to the right of ``left`` and not yet opened
        words = 0  # words met so far, counted at their right end
        in_word = False
        while left > 0:
            ch = source[left - 1]
            if _is_letter(ch):
                if not in_word:
                    in_word = True
                    words += 1
            else:
                if in_word and words == _CONTEXT_WORDS:
                    return left  # the twelfth word back starts here
                in_word = False
                if ch in ")]":
                    depth += 1
                elif ch in "([" and depth:
                    depth -= 1
                elif not depth and self._clause_break(left - 1):
                    break
            left -= 1
        return left

    def _clause_break(self, position: int) -> bool:
        """Whether ``source[position]`` ends the clause that a span after it belongs to."""
        source = self.source
        ch = source[position]
        if ch not in _CLAUSE_PUNCTUATION:
            return False
        if ch == ";" and _ENTITY_TAIL.search(source[max(0, position - 40) : position + 1]):
            return False  # the end of "&amp;"
        after = position + 1
        if ch in ".," and after < len(source) and source[after].isdecimal():
            return False  # a decimal point or a thousands separator
        if ch == ".":
            if _INITIALISM_TAIL.search(source[max(0, position - 16) : after]):
                return False  # "U.S."
            if _TITLE_TAIL.search(source[max(0, position - 12) : after]):
                return False  # "Dr."
            while after < len(source) and source[after].isspace():
                after += 1
            # "e.g. under": a lowercase continuation is no sentence edge.
            return not (after < len(source) and source[after].islower())
        if ch == ",":
            return _NEW_CLAUSE_AFTER_COMMA.match(source, position + 1) is not None
        return True
