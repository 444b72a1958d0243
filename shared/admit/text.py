"""Small text primitives of SPEC §4: the letter fold, whitespace normalisation, number values.

Everything here is a pure function over strings; the per-document index (``index.py``) calls
these once per text and keeps the results.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Context, Decimal, InvalidOperation

# Exact decimal arithmetic: values are compared and scaled by powers of ten, never rounded.
DEC = Context(prec=2000, Emax=999999, Emin=-999999)

# --- the fold of §4 (case rule) -------------------------------------------------------------

# Letters whose fold is not their one-code-point lowercase mapping (or that have none).
_FOLD_FIXED = {0x017F: "s", 0x0131: "i", 0x0130: "i", 0x212A: "k"}

# Characters that are not letters but have a lowercase mapping (Roman numerals, circled
# letters): the fold leaves them alone, because the rule folds letters only.
_NON_LETTER_CASED = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in (*range(0x2160, 0x2170), *range(0x24B6, 0x24D0))) + "]"
)


def fold(text: str) -> str:
    """The fold of each letter (SPEC §4). The result has the same length as ``text``."""
    if text.isascii():
        return text.lower()
    if "\u03a3" in text:
        # str.lower() gives a final sigma by context; the fold maps each letter on its own.
        folded = text.translate(_FOLD_FIXED).translate(_SIGMA).lower()
    else:
        folded = (text.replace("\u0130", "i") if "\u0130" in text else text).lower()
        if "\u017f" in folded or "\u0131" in folded:
            folded = folded.translate(_FOLD_FIXED)
    if len(folded) != len(text):  # pragma: no cover - only U+0130 expands, and it is mapped
        folded = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    if _NON_LETTER_CASED.search(text):
        chars = list(folded)
        for m in _NON_LETTER_CASED.finditer(text):
            chars[m.start()] = m.group()
        folded = "".join(chars)
    return folded


_SIGMA = {0x03A3: "\u03c3"}


# --- whitespace ------------------------------------------------------------------------------

_WS = re.compile(r"\s+")
_HYPHEN_BREAK = re.compile(r"-\n\s*")


def normalize_ws(text: str) -> str:
    """Collapse every whitespace run to one space and trim (SPEC §4.4)."""
    return _WS.sub(" ", text).strip()


def normalize_verbatim(text: str) -> str:
    """§4.4 for the verbatim comparison: also join line-break hyphenation."""
    return normalize_ws(_HYPHEN_BREAK.sub("", text))


def is_blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


# --- numbers (§4.1) ------------------------------------------------------------------------

# A maximal match of the token pattern, ASCII digits only. The sign is optional.
TOKEN_RE = re.compile(r"[-\u2212]?[0-9][0-9,]*(?:\.[0-9]+)?")
_UNGROUPED = re.compile(r"[0-9]+")
_THREES = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")
_INDIAN = re.compile(r"[0-9]{1,2}(?:,[0-9]{2})*,[0-9]{3}")


def is_letter_or_number(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


def is_number_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "N"


def digits_value(body: str) -> Decimal | None:
    """The value of a token body without its sign: grouped digits and an optional fraction."""
    whole, _, frac = body.partition(".")
    if not (_UNGROUPED.fullmatch(whole) or _THREES.fullmatch(whole) or _INDIAN.fullmatch(whole)):
        return None
    digits = whole.replace(",", "")
    return Decimal(digits + "." + frac) if frac else Decimal(digits)


def parse_value(raw: str) -> Decimal | None:
    """A candidate value or bound: trimmed, one token with a value (§4.1), else None."""
    s = raw.strip()
    m = TOKEN_RE.fullmatch(s)
    if m is None:
        return None
    negative = s[0] in "-\u2212"
    value = digits_value(s[1:] if negative else s)
    if value is None:
        return None
    return -value if negative else value


def canonical(value: Decimal) -> str:
    """The canonical value: no grouping, exponent or trailing fractional zeros; -0 is 0."""
    if value == 0:
        return "0"
    text = format(value.normalize(DEC), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def decimal_places(body: str) -> int:
    """Digits after the ``.`` of a token's text."""
    _, dot, frac = body.partition(".")
    return len(frac) if dot else 0


def to_decimal(value: object) -> Decimal | None:
    """A bound, factor or tolerance: a decimal string or an integer that reads as a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        return parse_value(value)
    return None


def pow10(power: int) -> Decimal:
    return Decimal(1).scaleb(power, DEC)


def mul(a: Decimal, b: Decimal) -> Decimal:
    return DEC.multiply(a, b)


__all__ = [
    "DEC",
    "TOKEN_RE",
    "InvalidOperation",
    "canonical",
    "decimal_places",
    "digits_value",
    "fold",
    "is_blank",
    "is_letter_or_number",
    "is_number_char",
    "mul",
    "normalize_verbatim",
    "normalize_ws",
    "parse_value",
    "pow10",
    "to_decimal",
]
