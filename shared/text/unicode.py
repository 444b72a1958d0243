"""Character tables the normalization steps need, derived once from Python's Unicode database.

They are computed lazily (about 0.1 s, once per process) rather than shipped, so that the
tables always agree with ``unicodedata.unidata_version``, which the run manifest records.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

UNICODE_VERSION = unicodedata.unidata_version

# Every character whose compatibility decomposition is non-trivial lies below this bound
# (checked in the tests against the whole code space).
_SCAN_LIMIT = 0x30000

FRACTION_SLASH = "\u2044"


@dataclass(frozen=True)
class UnicodeTables:
    # Characters whose per-character NFKC differs, minus superscripts and subscripts
    # (which the typography tier never folds): char -> its NFKC.
    nfkc: dict[str, str]
    # Composite numeric forms: not a decimal digit, but their NFKC holds one (fractions,
    # circled and parenthesized numbers, digits with a full stop).
    composite_numeric: frozenset[str]
    # Characters whose case folding is longer than one character (ß -> ss, İ -> i̇).
    casefold_long: dict[str, str]


@cache
def tables() -> UnicodeTables:
    nfkc: dict[str, str] = {}
    composite: set[str] = set()
    casefold_long: dict[str, str] = {}
    normalize = unicodedata.normalize
    decomposition = unicodedata.decomposition
    for code in range(_SCAN_LIMIT):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        folded = ch.casefold()
        if len(folded) != 1:
            casefold_long[ch] = folded
        dec = decomposition(ch)
        if not dec:
            continue
        if dec.startswith(("<super>", "<sub>")):
            continue
        out = normalize("NFKC", ch)
        if out == ch:
            continue
        nfkc[ch] = out
        if not ch.isdecimal() and any(c.isdecimal() for c in out):
            composite.add(ch)
    return UnicodeTables(
        nfkc=nfkc,
        composite_numeric=frozenset(composite),
        casefold_long=casefold_long,
    )


def is_unsegmented(ch: str) -> bool:
    """Scripts written without spaces between words: a word edge can fall between any two."""
    o = ord(ch)
    return (
        0x3040 <= o <= 0x30FF
        or 0x3400 <= o <= 0x9FFF
        or 0x20000 <= o <= 0x2FA1F
        or 0xAC00 <= o <= 0xD7AF
        or 0x0E00 <= o <= 0x0E7F
    )
