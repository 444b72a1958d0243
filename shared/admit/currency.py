"""Currency scales (§4.1), scale forms (§4.6, #423) and currency names (§4.3)."""

from __future__ import annotations

import re
from typing import Any

from groundswell.shared.admit.index import TextIndex
from groundswell.shared.admit.packs import Vocabulary, suffix_cases
from groundswell.shared.admit.text import fold

_WORDISH = r"[^\W_]"


class CurrencyScales:
    """A currency sign directly followed by a scale suffix or ``'000``/``000`` (§4.1)."""

    def __init__(self, vocab: Vocabulary) -> None:
        forms: dict[str, int] = {}
        for w, p in vocab.scale_suffixes.items():
            for case in suffix_cases(w):
                forms.setdefault(case, p)
        for w, p in vocab.currency_scales.items():
            forms.setdefault(w, p)
        self.powers = forms
        signs = "".join(re.escape(s) for s in vocab.currency_signs)
        alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
        if signs and alts:
            self.pattern: re.Pattern[str] | None = re.compile(
                "[" + signs + "](" + alts + r")(?!" + _WORDISH + ")"
            )
        else:
            self.pattern = None
        self.signs = set(vocab.currency_signs)

    def _valid(self, text: str, m: re.Match[str]) -> bool:
        form = m.group(1)
        if form.isdigit():  # a bare 000: ",5" or ".5" after it makes it a number
            e = m.end()
            if e + 1 < len(text) and text[e] in ",." and text[e + 1].isdigit():
                return False
        return True

    def all_in(self, text: str, s: int = 0, e: int | None = None) -> list[tuple[int, int, int]]:
        """(sign start, end, power) of each currency scale wholly in [s, e)."""
        if self.pattern is None:
            return []
        end = len(text) if e is None else e
        out = []
        for m in self.pattern.finditer(text, s):
            if m.end() > end:
                break
            if self._valid(text, m):
                out.append((m.start(), m.end(), self.powers[m.group(1)]))
        return out

    def first(self, text: str, s: int = 0, e: int | None = None) -> tuple[int, int, int] | None:
        found = self.all_in(text, s, e)
        return found[0] if found else None


class CurrencyNames:
    """Currency names and codes of the currency table (§4.3), matched as a statement reads
    them: names whole and case-insensitively, codes in capitals only."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.by_code = {code: names for code, (names, _) in vocab.heading_units.items()}
        self._name_res: dict[str, re.Pattern[str]] = {}

    def name_pattern(self, code: str) -> re.Pattern[str] | None:
        got = self._name_res.get(code)
        if got is None and code in self.by_code:
            names = sorted({fold(n) for n in self.by_code[code]}, key=len, reverse=True)
            alts = "|".join(r"\s+".join(re.escape(w) for w in n.split()) for n in names)
            got = re.compile(r"(?<!" + _WORDISH + r")(?:" + alts + r")(?!" + _WORDISH + ")")
            self._name_res[code] = got
        return got

    def holds(self, index: TextIndex, s: int, e: int, code: str) -> bool:
        """[s, e) holds a currency name of ``code`` or the code in capitals."""
        return bool(self.forms_in(index, s, e, code))

    def forms_in(self, index: TextIndex, s: int, e: int, code: str) -> list[tuple[int, int]]:
        out = []
        pattern = self.name_pattern(code)
        if pattern is not None:
            for m in pattern.finditer(index.folded, s, e):
                if _whole(index.text, m.start(), m.end(), e):
                    out.append((m.start(), m.end()))
        if code in self.by_code:
            i = index.text.find(code, s, e)
            while i != -1:
                if _whole(index.text, i, i + len(code), e):
                    out.append((i, i + len(code)))
                i = index.text.find(code, i + 1, e)
        return out


def _whole(text: str, s: int, e: int, limit: int) -> bool:
    """No letter or digit directly before [s, e), nor directly after it before ``limit``.

    A span read for a name (a unit or scale item) ends at ``limit``: a name at its end is
    whole also when the word goes on past it, as groundgate reads an item ("Swiss franc" of
    "Swiss francs"); the text before the span still counts.
    """
    return (s == 0 or not text[s - 1].isalnum()) and (e >= limit or not text[e].isalnum())


class ScaleForms:
    """Scale forms of a scale item (§4.6, spec 0.11 #423)."""

    def __init__(self, vocab: Vocabulary, names: CurrencyNames, units: dict[str, Any]) -> None:
        self.vocab = vocab
        self.names = names
        self.units = units
        words = sorted({fold(w) for w in vocab.scale_words}, key=len, reverse=True)
        self.powers = {fold(w): p for w, p in vocab.scale_words.items()}
        alts = "|".join(re.escape(w) for w in words) or "(?!x)x"
        self.word_re = re.compile(r"(?<!" + _WORDISH + r")(" + alts + r")s?(?!" + _WORDISH + ")")
        self._in_re = re.compile(r"(?<!" + _WORDISH + r")in\s+\Z")
        self._of_re = re.compile(r"\s+of\s+")
        self._per_re = re.compile(r"(?:(?<!" + _WORDISH + r")per|/)\s*\Z")

    def currency_forms_ending(self, index: TextIndex, end: int, code: str | None) -> list[int]:
        """Starts of currency forms of ``code`` that end at ``end`` (longest first)."""
        if code is None:
            return []
        text = index.text
        starts = []
        prefixes, suffixes = self.units.get(code, ([], []))
        for form in (*prefixes, *suffixes):
            s = end - len(form)
            if s >= 0 and text.startswith(form, s):
                if form[0].isalnum() and s > 0 and text[s - 1].isalnum():
                    continue
                starts.append(s)
        lo = max(0, end - 80)
        for fs, fe in self.names.forms_in(index, lo, end, code):
            if fe == end:
                starts.append(fs)
        return sorted(set(starts))

    def holds(self, ctx: Any, index: TextIndex, s: int, e: int) -> int | None:
        """The power of the first scale form held in [s, e), or None."""
        folded = index.folded
        code = ctx.spec.unit
        for m in self.word_re.finditer(folded, s, e):
            power = self.powers[m.group(1)]
            ws, we = m.start(), m.end()
            # Form 1: in, whitespace, [currency form, optional whitespace,] scale word.
            # "in" is read in the text, not in the item alone: "in thousands" inside
            # "within thousands" has a letter before it and is no scale form.
            head = folded[s:ws]
            if self._in_re.search(folded, s, ws):
                return power
            stripped = head.rstrip()
            end_form = s + len(stripped)
            for fs in self.currency_forms_ending(index, end_form, code):
                if fs >= s and self._in_re.search(folded, s, fs):
                    return power
            # Form 3: currency form, optional whitespace, scale word; the longest form
            # ending there, not after "per" or "/".
            starts = self.currency_forms_ending(index, end_form, code)
            if starts:
                fs = starts[0]
                if not self._per_re.search(folded[max(0, fs - 8) : fs]):
                    return power
            # Form 2: scale word, whitespace, of, whitespace, a currency name or the code.
            m2 = self._of_re.match(folded, we, e)
            if m2 is not None and code is not None:
                rest = m2.end()
                for fs, _ in self.names.forms_in(index, rest, e, code):
                    if fs == rest:
                        return power
        return None
