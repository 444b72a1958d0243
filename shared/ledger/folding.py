"""Text as the ledger compares it: the words search indexes and asks for, and the key an
entity's label is looked up by ("any case").

Both backends index the same folded text and are asked the same folded words, so they
return the same hits on the same data (issue 32 items 1 and 3): NFKC (compatibility forms,
``ﬁ`` → ``fi``), a full case fold (``İ`` → ``i̇``, ``ß`` → ``ss``), accents dropped (as
SQLite's ``remove_diacritics`` does; the dot of ``i̇`` with them), and everything that is not
a letter or a digit between words (curly quotes, dashes, dots of a host name, underscores).
``str.lower`` and either database's own lower-casing fold less: SQLite's ``lower`` and
PostgreSQL's under the C locale fold ASCII only, and ``'İ'.lower()`` leaves a combining dot
that splits a word in two.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+")


def _folded(text: str) -> str:
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return "".join(ch for ch in folded if not unicodedata.combining(ch))


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def search_words(text: str) -> list[str]:
    """The words of ``text`` as search indexes them: folded, in order, repeats kept."""
    if text.isascii():  # most quotes: NFKC and the case fold are lower-casing there
        return _ASCII_WORD.findall(text.lower())
    return _WORD.findall(unicodedata.normalize("NFC", _folded(text)))


def search_text(text: str) -> str:
    """``text`` as the search indexes see it: its folded words, one space between."""
    return " ".join(search_words(text))


def label_key(label: str) -> str:
    """An entity label compared "in any case": NFKC, fully case-folded, trimmed (accents
    kept: ``Société`` is not ``Societe``)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", label).casefold()).strip()
