"""The repair guards against gtrex 1.1.0, differentially: every answer must be gtrex's.

``Guards(source).numbers_agree/polarity_agrees`` are compared with gtrex's
``Repairer(source)._numbers_agree/_polarity_agrees`` for an ``Alignment`` with the same offsets
and text, and the figure and word readers with the gtrex functions of the same role, on
(a) hand-written edge cases and the ``rep-`` reference cases, (b) generated sources and claims
and (c) spans cut from the shared corpus (read in place) with perturbed claims.
"""

from __future__ import annotations

import importlib
import json
import random
import re
import sys
import unicodedata
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.repair.guards import (
    DEFAULT_POLARITY_TOKENS,
    DIRECTION_TOKENS,
    NEGATION_TOKENS,
    Guards,
    polarity_sequence,
    polarity_token_supported,
)
from groundswell.shared.repair.numbers import (
    SCALE_WORDS,
    canonical_number,
    guard_projection,
    numeric_keys,
    numeric_sequence,
    signed_sequence,
)
from groundswell.shared.settings import get_settings
from groundswell.shared.text.projections import Projections

galign = importlib.import_module("gtrex.align")
grepair = importlib.import_module("gtrex.repair")
gpolicy = importlib.import_module("gtrex.policy")

REFERENCE = get_settings().shared_corpus.parent / "reference" / "gtrex"


def _repairer(source: str, tokens: frozenset[str] | None = None) -> object:
    policy = gpolicy.Policy(polarity_tokens=tuple(sorted(tokens)) if tokens else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the uncalibrated-threshold warning
        return grepair.Repairer(source, policy)


class Pair:
    """One source under both implementations; ``check`` asserts they agree on a span."""

    def __init__(self, source: str, tokens: frozenset[str] | None = None) -> None:
        self.source = source
        self.gtrex = _repairer(source, tokens)
        self.ours = Guards(source, tokens or DEFAULT_POLARITY_TOKENS)

    def check(self, claim: str, start: int, end: int) -> tuple[bool, bool]:
        text = self.source[start:end]
        alignment = galign.Alignment(1.0, 1.0, 1.0, start, end, text)
        want = (
            self.gtrex._numbers_agree(claim, alignment),
            self.gtrex._polarity_agrees(claim, alignment),
        )
        got = (
            self.ours.numbers_agree(claim, start, end, text),
            self.ours.polarity_agrees(claim, start, end, text),
        )
        assert got == want, (claim, self.source, start, end, text)
        return want


def _readers_agree(text: str) -> None:
    assert numeric_sequence(text) == galign._numeric_sequence(text), text
    assert numeric_keys(text) == galign.numeric_keys(text), text
    assert signed_sequence(text) == grepair._signed_decimal_sequence(text), text
    assert guard_projection(text) == galign._guard_projection(text), text
    assert polarity_sequence(text) == galign.polarity_sequence(text), text
    assert set(SCALE_WORDS.findall(text.lower())) == set(
        grepair._SCALE_WORD_RE.findall(text.lower())
    )


# --- (a) hand-written edge cases ------------------------------------------------------------

FILING = (
    "Operating loss was ($10.0 million) for the year ended December 31, 2023, compared with "
    "operating income of $4.2 million in the prior year. Gross margin was -5% in the quarter. "
    "Revenue increased 12% to $88.5 million. We do not expect revenue to grow in fiscal 2024. "
    "Costs may rise, but we will manage them."
)

# (source, span to cut (a substring, or (start, end)), claims)
# fmt: off
EDGE_CASES: list[tuple[str, str | tuple[int, int], list[str]]] = [
    (FILING, "Operating loss was ($10.0 million)", [
        "Operating loss was $10.0 million", "Operating loss was $100 million",
        "Operating loss was ($10.0 billion)", "Operating loss was (10) million",
        "operating loss was ($10 million)", "operating loss was ($10.00 MILLION)",
    ]),
    (FILING, "Gross margin was -5% in the quarter", [
        "Gross margin was 5% in the quarter", "Gross margin was -5% in the quarter",
        "Gross margin was −5% in the quarter", "Gross margin was +5%", "margin was (5)%",
    ]),
    (FILING, "5% in the quarter", ["5% in the quarter", "-5% in the quarter", "+5%"]),
    (FILING, "expect revenue to grow in fiscal 2024", [
        "expect revenue to grow in fiscal 2024", "do not expect revenue to grow",
        "we don't expect revenue to grow in fiscal 2024", "will grow in fiscal 2024",
    ]),
    (FILING, "Revenue increased 12% to $88.5 million", [
        "Revenue decreased 12% to $88.5 million", "Revenue increased 12% to $88.50 million",
        "Revenue increased 12,0% to $88.5 million", "Revenue rose 12% to $88.5 thousand",
        "Revenue increased 88.5 to 12", "Revenue increased more than 12%",
    ]),
    (FILING, "we will manage them", [
        "we will manage them", "we may manage them", "Costs may rise, but we will manage them",
    ]),
    ("Shares: 1,200 at .5 each; No.5 and ...5 and 10.0 vs 100.", (0, 60), [
        "1200 at 0.5", "1,200 at 5", "1.200 at .50", "No.5", "0.5 and 5", "10 vs 100",
        "100 vs 10", "05", ".05",
    ]),
    ("Rates were 1½ and ①0 and 10² and 2023¹ in ٣٫٥ and ١٢٣ and ３４.", (0, 64), [
        "1½ and ①0", "1 and 10", "10² and 2023¹", "102 and 20231", "3.5 and 123 and 34",
        "٣.٥", "34", "10 and ²",
    ]),
    ("Net income (3.5) and $(3.5) and ( 3.5 ) and (3.5 million) and +4 and 2023-2024.",
     (0, 80), ["3.5 and 3.5", "-3.5 and -3.5", "(3.5)", "4", "+4", "-2024", "2023 and 2024"]),
    ("Item        Value\nRevenue     12\n     (net)         34", (0, 54), [
        "Revenue (net) 34 12", "Revenue 12 (net) 34", "Revenue 34", "12 12 34",
    ]),
    ("We cannot confirm it. The U.S. Dr. Smith did not, in fact, expect growth.", (47, 73), [
        "expect growth", "did not expect growth", "not expect growth",
    ]),
    ("Profits &amp; losses; they are not &lt; 5 and we do not expect gains", (45, 68), [
        "expect gains", "do not expect gains", "not expect gains",
    ]),
    ("Sales fell, but we expect a rebound, and we will not stop.", (20, 58), [
        "expect a rebound, and we will not stop", "expect a rebound, and we will stop",
        "we expect a rebound", "we may expect a rebound, and we will not stop",
    ]),
    ("It is un-\nlikely that the dosage will in-\n   crease, e.g. under stress.", (0, 70), [
        "It is unlikely that the dosage will increase", "It is likely the dosage will increase",
        "the dosage will decrease", "the dosage can’t increase", "dosage can not increase",
    ]),
    ("Revenue &#8722;5 and &minus;7 and \u2212\u200b9 grew.", (13, 40), [
        "-5 and -7 and -9", "5 and 7 and 9", "−5", "−7 and −9",
    ]),
    ("A loss of -\u00ad5 and \u00ad-6 in 2023.", (12, 28), ["-5 and -6", "5 and 6", "-6 in 2023"]),
    ("", (0, 0), ["", "5", "not"]),
    ("no", (0, 0), ["no", "", "not 5"]),
    ("x", (1, 1), ["not", "1"]),
]
# fmt: on


@pytest.mark.parametrize("index", range(len(EDGE_CASES)))
def test_edge_cases(index: int) -> None:
    source, span, claims = EDGE_CASES[index]
    if isinstance(span, str):
        start = source.index(span)
        end = start + len(span)
    else:
        start, end = span[0], min(span[1], len(source))
    pair = Pair(source)
    for claim in claims:
        pair.check(claim, start, end)
        _readers_agree(claim)
    # Every start and end near the span: a sign or clause just outside it must be read alike.
    for s in range(max(0, start - 4), min(start + 3, len(source)) + 1):
        for e in (s, min(end, len(source)), min(end + 2, len(source))):
            if e >= s:
                for claim in claims:
                    pair.check(claim, s, e)


def _reference_cases() -> list[dict]:
    with (REFERENCE / "cases.jsonl").open(encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh if line.strip()]
    return [case for case in cases if case["id"].startswith("rep-")]


def test_reference_repair_cases() -> None:
    cases = _reference_cases()
    assert len(cases) >= 20
    checked = 0
    for case in cases:
        pair = Pair(case["source"])
        claim = case["claim"]
        spans = set()
        best = pair.gtrex.verifier.index.best_span(claim)
        if best is not None:
            spans.add((best.start, best.end))
        for outcome in case["gtrex"].values():
            alignment = outcome.get("alignment")
            if alignment:
                spans.add((alignment["start"], alignment["end"]))
        for start, end in spans:
            pair.check(claim, start, end)
            checked += 1
        # What the recorded stage says the guards decided is what they decide.
        for outcome in case["gtrex"].values():
            alignment = outcome.get("alignment")
            if alignment and outcome["stage"] in ("numeric_guard", "polarity_guard"):
                numbers, polarity = pair.check(claim, alignment["start"], alignment["end"])
                assert (outcome["stage"] == "numeric_guard") == (not numbers)
                assert outcome["stage"] == "numeric_guard" or not polarity
    assert checked >= 15


def test_vocabularies() -> None:
    assert DEFAULT_POLARITY_TOKENS == galign.DEFAULT_POLARITY_TOKENS
    assert len(DEFAULT_POLARITY_TOKENS) == 55
    assert DIRECTION_TOKENS == grepair._DIRECTION_TOKENS
    assert NEGATION_TOKENS == grepair._PREFIX_NEGATIONS
    # fmt: off
    tokens = [*DEFAULT_POLARITY_TOKENS, "ﬁnd", "Not", "NOT", "don't", "x1", "", "a b", "ß", "İs",
              "ſo", "²", "½", "naïve", "ne\u00adver", "&amp;", "_", "never-"]
    # fmt: on
    for token in tokens:
        assert polarity_token_supported(token) == galign.polarity_token_supported(token), token


def test_canonical_number() -> None:
    # fmt: off
    raws = ["0", "00", "05", "5", "50", "500", "1,200", "1,2", "12,345,678.900", "1.200,50",
            "1234,567", "10.0", "10.00", "0.0", "1.2.3", ".5", "5,3", "²", "", "1,234.5,6"]
    # fmt: on
    for raw in raws:
        for leading in (False, True):
            assert canonical_number(raw, leading) == galign._canonical_number(raw, leading), raw


def test_projection_covers_unicode() -> None:
    """Every character that a projection step or the figure reader treats specially, alone and
    between digits: same projection, same offset regions, same figures and signs."""
    checked = 0
    for code in range(0x80, sys.maxunicode + 1):
        ch = chr(code)
        if 0xD800 <= code < 0xE000 or not (
            unicodedata.decomposition(ch) or ch.isnumeric() or unicodedata.category(ch) == "Cf"
        ):
            continue
        for text in ("1" + ch + "2", "-" + ch + "5"):
            _readers_agree(text)
            checked += 1
    assert checked > 10_000


def _region_ends(source: str) -> tuple[str, list[int]]:
    text, omap = Guards(source)._guard_source()
    return text, [omap.end(i) for i in range(len(text))]


def test_source_projection_offsets() -> None:
    rng = random.Random(7)
    # fmt: off
    pieces = ["&amp;", "&minus;", "&#8722;", "&nbsp;", "&frac12;", "&bogus;", "\u00ad", "\u200b",
              "\u2060", "\u034f", "½", "1", "①", "ﬁ", "\u2212", "\u2026", "²", " ", "a", "-",
              "\ufeff", "٣", "\u202f", "&#x2060;", "&amp"]
    # fmt: on
    for _ in range(300):
        source = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        expected = galign._guard_normalized(source)
        assert _region_ends(source) == (expected.text, list(expected.ends)), source
        # Through a shared projection cache too.
        shared = Guards(source, projections=Projections(source))._guard_source()
        assert shared[0] == expected.text
        assert [shared[1].end(i) for i in range(len(shared[0]))] == list(expected.ends)


# --- (b) generated sources and claims --------------------------------------------------------

# fmt: off
NUMBERS = [
    "1,200", "1200", "88.50", "88.5", ".5", "0.5", "(3.5)", "$(3.5)", "$( 3.5 )", "-5%", "+3",
    "−7", "\u2212 7", "٣٫٥", "١٢٣", "٣.٥", "10²", "2023¹", "½", "1½", "①", "①0", "2023-2024",
    "No.5", "...5", "1,2", "1.200,50", "10.0", "100", "05", "&minus;5", "&#8722;4", "５",
    "𝟓", "12,345,678.90", "(12)", "-(4)", "x-5", "_.5", "3.", "4,", "-\u00ad6", "&#36;(2.0)",
    "_-5", ".-5", "v.-3", "a+2", "(-1)", "( 7 )", "+(8)",
]
SCALES = ["million", "billion", "Thousand", "TRILLION", "millions", "thouſand"]
WATCHED = sorted(DEFAULT_POLARITY_TOKENS)
PLAIN = [
    "revenue", "growth", "the", "we", "do", "costs", "rise", "dosage", "it", "and", "but",
    "don't", "can’t", "can not", "won't", "un-\nlikely", "in-\n  crease", "U.S.", "Dr.",
    "e.g.", "&amp;", "&amp;c;", "NOT", "Never", "ﬁnal", "ne\u00adver", "no\u200bt", "may-be",
]
SEPARATORS = [
    " ", " ", " ", ", ", ". ", "; ", ": ", ", but ", ", and we ", ", and ", " (", ") ", " [",
    "] ", "\n", "\n   ", "   ", "! ", "? ", ".\n", ". the ", "&amp; ", " -",
]
# fmt: on


def _fragment(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(NUMBERS)
    if roll < 0.4:
        return rng.choice(SCALES)
    if roll < 0.7:
        return rng.choice(WATCHED)
    return rng.choice(PLAIN)


def _text(rng: random.Random, size: int) -> str:
    parts = []
    for _ in range(size):
        parts.append(_fragment(rng))
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


_NUMBER_RE = re.compile(r"[0-9٠-٩０-９①½²¹]+(?:[.,][0-9٠-٩]+)*")
_WORD_RE = re.compile(r"[^\W\d_]+")


def _perturb(rng: random.Random, span: str) -> str:
    """A claim made from ``span``: as is, or with one figure, sign, scale or watched word
    changed, removed or inserted, or reflowed onto one line."""
    kind = rng.randrange(9)
    numbers = list(_NUMBER_RE.finditer(span))
    words = list(_WORD_RE.finditer(span))
    if kind == 1 and numbers:
        m = rng.choice(numbers)
        return span[: m.start()] + rng.choice(NUMBERS) + span[m.end() :]
    if kind == 2 and numbers:
        m = rng.choice(numbers)
        return span[: m.start()] + span[m.end() :]
    if kind == 3:
        at = rng.randint(0, len(span))
        return span[:at] + " " + rng.choice(NUMBERS + SCALES) + " " + span[at:]
    if kind == 4 and words:
        m = rng.choice(words)
        return span[: m.start()] + rng.choice([*WATCHED, ""]) + span[m.end() :]
    if kind == 5:
        at = rng.randint(0, len(span))
        return span[:at] + " " + rng.choice(WATCHED) + " " + span[at:]
    if kind == 6:
        return " ".join(span.split())
    if kind == 7 and len(numbers) > 1:
        a, b = rng.sample(numbers, 2)
        if a.start() > b.start():
            a, b = b, a
        if a.end() <= b.start():
            return (
                span[: a.start()]
                + b.group()
                + span[a.end() : b.start()]
                + a.group()
                + span[b.end() :]
            )
    if kind == 8:
        return rng.choice(["-", "+", "(", "−", "not ", "no "]) + span
    return span


def test_generated_sources() -> None:
    rng = random.Random(20261130)
    checked = 0
    disagreements = {"numbers": 0, "polarity": 0}
    for _ in range(500):
        source = _text(rng, rng.randint(1, 25))
        pair = Pair(source)
        for _ in range(6):
            start = rng.randint(0, len(source))
            end = rng.randint(start, min(len(source), start + 120))
            claim = _perturb(rng, source[start:end])
            numbers, polarity = pair.check(claim, start, end)
            disagreements["numbers"] += not numbers
            disagreements["polarity"] += not polarity
            checked += 1
        _readers_agree(source)
    # The generator reaches both answers of both guards often.
    assert checked == 3000
    assert min(disagreements.values()) > 300
    assert max(disagreements.values()) < checked - 300


# fmt: off
CLAUSE_TOKENS = [
    "not", "no", "never", "without", "lack", "unlikely", "cannot", "may", "will", "more",
    "increase", "expect", "growth", "rates", "Sales", "It", "he", "i", "you", "her", "the", "our",
    "a", "there", "this", "those", "its", "his", "they", "we", "under", "e.g.", "U.S.", "A.B.",
    "Dr.", "Prof.", "etc.", "vs.", "Mrs.", "1.5", "2,000", ".5", "x1", "don't", "isn’t",
]
CLAUSE_SEPARATORS = [
    " ", " ", " ", ". ", ".  the ", ". The ", ", ", ", but ", ", yet ", ", whereas ", ", and ",
    ", and her ", ", and there ", ", and they ", ",and we ", "; ", ": ", "! ", "? ", ".\n",
    " (", ") ", " [", "] ", "(", ")", "[", "]", "&amp; ", "&lt; ", "&#8212; ", "&#x2014; ",
    " &averyveryverylongentitynamexyz; ", " &averyveryveryverylongentityname; ", "&amp ",
    ", in fact, ", "\u00a0", " -", "-\n", ".5 ", ",5 ",
]
# fmt: on


def test_generated_clauses() -> None:
    """Spans that start after a clause break, a bracket, an entity, an abbreviation or a long
    run of words: the negations just before a span must be read alike."""
    rng = random.Random(99)
    blocked = 0
    for _ in range(700):
        parts = []
        for _ in range(rng.randint(1, 30)):
            parts.append(rng.choice(CLAUSE_TOKENS))
            parts.append(rng.choice(CLAUSE_SEPARATORS))
        source = "".join(parts)
        pair = Pair(source)
        for _ in range(4):
            start = rng.randint(max(0, len(source) - 60), len(source))
            end = rng.randint(start, len(source))
            span = source[start:end]
            claim = rng.choice(["", "", "not ", "no ", "never ", "may "]) + span
            blocked += not pair.check(claim, start, end)[1]
    assert 500 < blocked < 2300


def _table(rng: random.Random) -> str:
    rows = []
    for _ in range(rng.randint(2, 5)):
        cells = [rng.choice(["Revenue", "Net (loss)", "Cost", "Total"])]
        cells += [rng.choice(NUMBERS[:20]) for _ in range(rng.randint(1, 3))]
        rows.append(rng.choice(["  ", "   ", "    ", "\t"]).join(cells))
    return rng.choice(["\n", "\n  ", "\n     "]).join(rows)


def test_generated_tables() -> None:
    """Wrapped fixed-width rows: figures out of order are allowed only in a one-line claim
    against a span with a newline and a gap of three or more spaces."""
    rng = random.Random(11)
    relaxed = 0
    for _ in range(250):
        source = _table(rng)
        pair = Pair(source)
        figures = [m.group() for m in _NUMBER_RE.finditer(source)]
        for _ in range(3):
            start = rng.choice([0, 0, rng.randint(0, len(source) // 3)])
            end = rng.choice([len(source), len(source), rng.randint(start, len(source))])
            shuffled = figures[:]
            rng.shuffle(shuffled)
            claim = rng.choice(["Revenue ", ""]) + rng.choice([" ", "\n"]).join(shuffled)
            relaxed += pair.check(claim, start, end)[0]
            pair.check(" ".join(source[start:end].split()), start, end)
    assert relaxed > 30


def test_custom_vocabulary() -> None:
    rng = random.Random(5)
    tokens = frozenset({"not", "never", "rise", "fall", "more", "less", "lack", "Kein", "nicht"})
    for _ in range(150):
        source = _text(rng, rng.randint(1, 15)) + " rise nicht fall kein "
        pair = Pair(source, tokens)
        start = rng.randint(0, len(source))
        end = rng.randint(start, len(source))
        pair.check(_perturb(rng, source[start:end]), start, end)


_ALPHABET = st.sampled_from(
    [
        *"0123456789.,-+() $%\n\t;:!?'’−½①²٣５ab",
        *("not", "no", "may", "will", "more", "million", "U.S.", "Dr.", "&amp;", "&minus;"),
        *("\u00ad", "\u200b", "n't", "   "),
    ]
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    source=st.lists(_ALPHABET, max_size=30).map("".join),
    claim=st.lists(_ALPHABET, max_size=15).map("".join),
    cut=st.tuples(st.integers(0, 200), st.integers(0, 200)),
)
def test_property(source: str, claim: str, cut: tuple[int, int]) -> None:
    start, end = sorted(min(c, len(source)) for c in cut)
    Pair(source).check(claim, start, end)
    _readers_agree(source)
    _readers_agree(claim)


# --- (c) spans cut from real documents --------------------------------------------------------


def _corpus_documents(corpus: Path) -> list[Path]:
    documents = sorted((corpus / "documents").glob("*.txt"))
    # A spread of kinds and sizes: every 25th document in name order.
    return documents[::25]


@pytest.mark.corpus
def test_corpus_spans(shared_corpus: Path) -> None:
    rng = random.Random(13)
    checked = 0
    interesting = re.compile(
        r"[0-9]|\b(?:" + "|".join(sorted(DEFAULT_POLARITY_TOKENS)) + r")\b", re.IGNORECASE
    )
    for path in _corpus_documents(shared_corpus):
        source = path.read_text(encoding="utf-8")
        if not source:
            continue
        pair = Pair(source)
        hits = [m.start() for m in interesting.finditer(source)]
        if not hits:
            continue
        for _ in range(30):
            at = rng.choice(hits)
            start = max(0, at - rng.randint(0, 80))
            end = min(len(source), at + rng.randint(1, 160))
            claim = _perturb(rng, source[start:end])
            pair.check(claim, start, end)
            checked += 1
    assert checked > 1200


@pytest.mark.corpus
def test_large_document_projection_is_built_once(shared_corpus: Path) -> None:
    documents = sorted((shared_corpus / "documents").glob("*.txt"), key=lambda p: p.stat().st_size)
    source = documents[-1].read_text(encoding="utf-8")
    guards = Guards(source)
    assert guards._projected is None  # nothing projected until a figure needs a sign
    assert guards.polarity_agrees("we do not expect", 10, 30, source[10:30]) in (True, False)
    assert guards._projected is None
    rng = random.Random(3)
    pair = Pair(source)
    for _ in range(60):
        start = rng.randint(0, len(source) - 200)
        end = start + rng.randint(1, 200)
        claim = _perturb(rng, source[start:end])
        pair.check(claim, start, end)
        guards.numbers_agree(claim, start, end, source[start:end])
    # A large document reads the sign before a span from a piece around it: never projected
    # whole, and the same sign as the whole projection gives.
    assert guards._projected is None
    whole = Guards(source)
    whole._guard_source()
    for start in rng.sample(range(1, len(source)), 2000):
        assert guards._sign_before(start) == whole._sign_before(start), start
    assert guards._projected is None


def test_sign_from_a_piece_equals_the_whole_projection() -> None:
    """Entities, typography, compatibility forms and format characters right before a span,
    and pieces without whitespace nearby, in a document large enough to be read in pieces."""
    rng = random.Random(8)
    parts = ["&minus;", "&#8722;", "\u2212", "-", "+", "(", "$", "\u200b", "\u00ad", "&amp;",
             "\uff0d", " ", "\n", "a", "7", ".", "_", "&#x2D;", "&plus;", "\u2013"]  # fmt: skip
    pieces = []
    while sum(map(len, pieces)) < 80_000:
        pieces.append(rng.choice(parts))
        if rng.random() < 0.02:
            pieces.append("x" * rng.randint(60, 300))  # long runs without whitespace
    source = "".join(pieces)
    windowed, whole = Guards(source), Guards(source)
    whole._guard_source()
    for start in range(1, len(source), 7):
        assert windowed._sign_before(start) == whole._sign_before(start), (
            start,
            source[start - 9 : start],
        )
    assert windowed._projected is None
