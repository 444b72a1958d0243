"""Claim families for differential tests: claims made from a real document, each family aimed
at one behaviour (tiers, boundaries, ellipses, verify_at)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

FAMILIES = (
    "exact",
    "cut_in_word",
    "cut_in_number",
    "whitespace",
    "typography",
    "case",
    "punctuation",
    "number_change",
    "negation_dropped",
    "stitched",
    "stitched_reordered",
    "leading_ellipsis",
    "trailing_ellipsis",
    "fabricated",
    "one_token",
    "two_tokens",
    "at_right",
    "at_wrong",
)

_CURLY = str.maketrans({"'": "\u2019", '"': "\u201d", "-": "\u2014"})
_FLAT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
        "\u2212": "-",
    }
)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)+")
_NEGATION = re.compile(r"\b(?:not|no|never|cannot|without)\b ?", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    family: str
    claim: str
    at: tuple[int, int] | None = None


class ClaimFactory:
    def __init__(self, text: str, seed: int) -> None:
        self.text = text
        self.rng = random.Random(seed)
        self.words = [m.span() for m in re.finditer(r"\S+", text)]

    def _span(self, lo: int = 3, hi: int = 30, want: re.Pattern[str] | None = None) -> tuple:
        rng = self.rng
        best = None
        for _ in range(400):
            n = rng.randint(lo, hi)
            i = rng.randrange(max(1, len(self.words) - n))
            j = min(i + n, len(self.words)) - 1
            a, b = self.words[i][0], self.words[j][1]
            best = (a, b)
            if want is None or want.search(self.text, a, b):
                return best
        return best

    def make(self, family: str) -> Claim:
        rng = self.rng
        text = self.text
        if family in ("exact", "at_right", "at_wrong"):
            a, b = self._span()
            if family == "exact":
                return Claim(family, text[a:b])
            if family == "at_right":
                return Claim(family, text[a:b], (a, b))
            shift = rng.choice((-2, -1, 1, 2))
            return Claim(family, text[a:b], (max(0, a + shift), max(a + shift + 1, b + shift)))
        if family == "cut_in_word":
            a, b = self._span(2, 12)
            a += rng.randint(0, 3)
            b -= rng.randint(0, 3)
            return Claim(family, text[a : max(a + 1, b)])
        if family == "cut_in_number":
            matches = list(_NUMBER.finditer(text))
            if not matches:
                return self.make("cut_in_word")
            m = rng.choice(matches)
            a = rng.randint(m.start(), m.end() - 1)
            b = min(len(text), m.end() + rng.randint(0, 30))
            if rng.random() < 0.5:
                a, b = max(0, m.start() - rng.randint(0, 30)), rng.randint(m.start() + 1, m.end())
            return Claim(family, text[a:b])
        if family == "whitespace":
            a, b = self._span(want=re.compile(r"\n|\t|  |\u00a0"))
            s = text[a:b]
            return Claim(
                family, " ".join(s.split()) if rng.random() < 0.7 else s.replace(" ", "  ")
            )
        if family == "typography":
            a, b = self._span(want=re.compile("[\u2018\u2019\u201c\u201d\u2013\u2014\u00a0-]"))
            s = text[a:b]
            flat = s.translate(_FLAT)
            return Claim(family, flat if flat != s or rng.random() < 0.5 else s.translate(_CURLY))
        if family == "case":
            s = text.__getitem__(slice(*self._span()))
            return Claim(family, rng.choice((s.lower(), s.upper(), s.title(), s.swapcase())))
        if family == "punctuation":
            s = text.__getitem__(slice(*self._span(want=re.compile(r"[,.;:()$%]"))))
            return Claim(family, re.sub(r"[,.;:()$%]", rng.choice(("", " ")), s))
        if family == "number_change":
            a, b = self._span(want=re.compile(r"\d"))
            s = text[a:b]
            digits = [m.start() for m in re.finditer(r"\d", s)] or [0]
            i = rng.choice(digits)
            new = str((int(s[i]) + 1) % 10) if s[i].isdigit() else "7"
            return Claim(family, s[:i] + new + s[i + 1 :])
        if family == "negation_dropped":
            a, b = self._span(5, 30, want=_NEGATION)
            s = text[a:b]
            out = _NEGATION.sub("", s, count=1)
            return Claim(family, out if out != s else "We do not " + s)
        if family in ("stitched", "stitched_reordered"):
            a, b = self._span(6, 15)
            c, d = self._span(6, 15)
            first, second = text[a:b], text[c:d]
            if family == "stitched_reordered":
                first, second = second, first
            joint = rng.choice((" ... ", "...", " \u2026 ", " .. "))
            return Claim(family, first + joint + second)
        if family == "leading_ellipsis":
            return Claim(family, rng.choice(("... ", "\u2026", ".. ")) + text.__getitem__(
                slice(*self._span())))  # fmt: skip
        if family == "trailing_ellipsis":
            return Claim(family, text.__getitem__(slice(*self._span())) + rng.choice(
                (" ...", "...", "\u2026")))  # fmt: skip
        if family == "fabricated":
            picks = [self.words[rng.randrange(len(self.words))] for _ in range(rng.randint(5, 15))]
            return Claim(family, " ".join(text[a:b] for a, b in picks))
        if family in ("one_token", "two_tokens"):
            n = 1 if family == "one_token" else 2
            if rng.random() < 0.7:
                a, b = self._span(n, n)
                return Claim(family, text[a:b])
            picks = [self.words[rng.randrange(len(self.words))] for _ in range(n)]
            return Claim(family, " ".join(text[a:b] for a, b in picks))
        raise ValueError(family)

    def claims(self, per_family: int) -> Iterator[Claim]:
        for family in FAMILIES:
            for _ in range(per_family):
                yield self.make(family)


def with_entities(text: str, seed: int) -> str:
    """A copy of ``text`` with some characters written as HTML entities, as scraped HTML has."""
    rng = random.Random(seed)
    replacements = {"&": "&amp;", "$": "&#36;", "\u2014": "&mdash;", "'": "&#39;", "%": "&#x25;"}
    out = []
    for ch in text:
        if ch in replacements and rng.random() < 0.7:
            out.append(replacements[ch])
        elif ch == " " and rng.random() < 0.02:
            out.append("&nbsp;")
        else:
            out.append(ch)
    return "".join(out)
