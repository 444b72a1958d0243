"""Reading figures out of text for the repair cascade's numeric guard (gtrex 1.1.0 parity).

A repair stores *source* characters in place of the model's wording, so a claim whose figure
differs from the located span must never be repaired into it. These helpers turn text into
comparable figure keys:

* ``numeric_sequence`` reads the raw text: digits of any script, English grouping
  (``1,200`` == ``1200``), trailing fractional zeros dropped (``88.50`` == ``88.5``), a leading
  decimal point kept apart (``.5`` == ``0.5`` but not ``5``); anything malformed, and any figure
  that touches a composite numeric form (``1½``), is compared verbatim. A run of superscripts
  or subscripts is a key of its own, so a footnote marker neither fuses into a year nor vanishes.
* ``signed_sequence`` reads the guard projection and adds the sign written next to a figure:
  ``-5``/``+5`` (a hyphen in ``2023-2024`` is not a sign) and the accounting ``(3.5)``.

Keys are strings, never floats: ``10.0`` and ``100`` must stay different.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from groundswell.shared.text.transforms import NFKC, MapTypography, UnescapeEntities

__all__ = [
    "SCALE_WORDS",
    "canonical_number",
    "guard_projection",
    "numeric_keys",
    "numeric_sequence",
    "signed_sequence",
]

#: Scale words multiply a figure without touching its digits ("$10 million" vs "$10 billion").
#: Callers search lowercased text, as gtrex does.
SCALE_WORDS = re.compile(r"\b(?:million|billion|thousand|trillion)\b", re.IGNORECASE)

# English convention: "," groups thousands in threes, "." marks the decimals.
_ENGLISH = re.compile(r"(?P<whole>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.(?P<frac>[0-9]+))?")
# A figure in ASCII text: digits with single "." or "," separators between digit groups.
_ASCII_FIGURE = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
# The same, optionally led by a decimal point: what the sign check reads as one number.
_ASCII_NUMBER = re.compile(r"\.?[0-9]+(?:[.,][0-9]+)*")

_DIGIT, _MARKER, _FORM = 1, 2, 3


def canonical_number(raw: str, leading_point: bool) -> str:
    """The comparison key of one figure ``raw`` (ASCII digits and separators).

    ``leading_point`` says a "." that begins the number was written just before ``raw``
    (``.5``): such a figure is a fraction, ``0.5``, whose trailing zeros are dropped.
    """
    if leading_point:
        if not raw.isdigit():
            return "." + raw  # ".5,3" is no decimal anyone writes: keep it as written
        fraction = raw.rstrip("0")
        return "0." + fraction if fraction else "0"
    parsed = _ENGLISH.fullmatch(raw)
    if parsed is None:
        return raw  # "1,2" or a European "1.200,50": only ever equal to itself
    whole = parsed["whole"].replace(",", "")
    fraction = (parsed["frac"] or "").rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _leading_point(text: str, at: int) -> bool:
    """Whether the digits at ``at`` follow a "." that starts the number: not "No.5", "...5"."""
    if at == 0 or text[at - 1] != ".":
        return False
    if at == 1:
        return True
    before = text[at - 2]
    return not (before.isalnum() or before == "." or before == "_")


@lru_cache(maxsize=4096)
def _kind(ch: str) -> int:
    """0, or whether ``ch`` is a digit (any script), a super/subscript marker, or a composite
    numeric form (a fraction, a circled number: a numeric character whose NFKC holds a digit)."""
    if ch.isdecimal():
        return _DIGIT
    if not ch.isnumeric():
        return 0
    if unicodedata.decomposition(ch).startswith(("<super>", "<sub>")):
        return _MARKER
    if any(c.isdecimal() for c in unicodedata.normalize("NFKC", ch)):
        return _FORM
    return 0


def _to_ascii_digits(text: str) -> str:
    if text.isascii():
        return text
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)


def _unicode_sequence(text: str) -> tuple[str, ...]:
    """The general reader, for text that is not pure ASCII."""
    keys: list[str] = []
    kind = _kind
    i, n = 0, len(text)
    while i < n:
        k = kind(text[i])
        if not k:
            i += 1
            continue
        j = i + 1
        if k == _MARKER:
            while j < n and kind(text[j]) == _MARKER:
                j += 1
            keys.append(text[i:j])
            i = j
            continue
        plain = k == _DIGIT
        # Extend over digits and forms, crossing one "." or "," only when a figure follows it.
        while j < n:
            k = kind(text[j])
            if k in (_DIGIT, _FORM):
                plain = plain and k == _DIGIT
                j += 1
            elif text[j] in ".," and j + 1 < n and kind(text[j + 1]) in (_DIGIT, _FORM):
                plain = plain and kind(text[j + 1]) == _DIGIT
                j += 2
            else:
                break
        run = _to_ascii_digits(text[i:j])
        keys.append(canonical_number(run, _leading_point(text, i)) if plain else run)
        i = j
    return tuple(keys)


def numeric_sequence(text: str) -> tuple[str, ...]:
    """Every figure of ``text`` as a comparison key, in order, repetitions kept."""
    if text.isascii():
        # Only 0-9 are numeric in ASCII, so one regex finds exactly the same runs.
        return tuple(
            canonical_number(m.group(), _leading_point(text, m.start()))
            for m in _ASCII_FIGURE.finditer(text)
        )
    return _unicode_sequence(text)


def numeric_keys(text: str) -> set[str]:
    """The figure keys of ``text`` as a set."""
    return set(numeric_sequence(text))


_UNESCAPE = UnescapeEntities()
_TYPOGRAPHY = MapTypography()
_NFKC = NFKC()


def _ignorable(ch: str) -> bool:
    """Invisible format characters (and the combining grapheme joiner) say nothing."""
    return ch == "\u034f" or unicodedata.category(ch) == "Cf"


def guard_projection(text: str) -> str:
    """The text the guards read: entities decoded, typography folded, per-character NFKC
    (the verification ladder's own steps) and format characters removed."""
    text = _UNESCAPE.apply(text)
    if text.isascii():
        return text  # nothing left for the other steps to change
    text = _NFKC.project_text(_TYPOGRAPHY.apply(text))[0]
    if text.isascii():
        return text
    return "".join(c for c in text if c < "\x80" or not _ignorable(c))


def _signed_key(projected: str, lo: int, hi: int) -> str:
    """The key of the ASCII number ``projected[lo:hi]`` with the sign written next to it."""
    number = projected[lo:hi]
    if number[0] == ".":
        key = canonical_number(number[1:], True)
    else:
        key = canonical_number(number, False)
    if lo and projected[lo - 1] in "-+":
        # A unary sign, unless it joins two words or figures ("2023-2024", "COVID-19").
        before = projected[lo - 2] if lo > 1 else ""
        if before and (before.isalnum() or before in "._"):
            return key
        return projected[lo - 1] + key
    # Accounting negatives: "(3.5)" and "$(3.5)", with nothing but spaces inside the brackets.
    i = lo - 1
    while i >= 0 and projected[i].isspace():
        i -= 1
    if i < 0 or projected[i] != "(":
        return key
    n = len(projected)
    while hi < n and projected[hi].isspace():
        hi += 1
    return "-" + key if hi < n and projected[hi] == ")" else key


def signed_sequence(text: str) -> tuple[str, ...]:
    """Each number of the guard projection of ``text`` (digits of any script read as ASCII),
    with ``-``/``+`` when a sign is written directly before it, or ``-`` for ``(3.5)``."""
    projected = _to_ascii_digits(guard_projection(text))
    return tuple(_signed_key(projected, *m.span()) for m in _ASCII_NUMBER.finditer(projected))
