"""The verification engine: is a quotation in its source, and at which tier of the ladder?

A :class:`Verifier` normalizes its document once per tier, lazily, and then serves any number of
claims. For each tier in order, the claim is pushed through the same steps as the source and
looked up in that tier's projection; the first occurrence that (a) does not cut through a
rewritten region, (b) has lexical boundaries at both ends in the original text, and (c) whose
source span normalized on its own equals the normalized claim, wins. The tightest tier with a
winning occurrence decides the verdict.

Speed: after a couple of claims the document gets a sampled k-gram index over its skeleton
projection. Every valid match at any tier of the standard ladder leaves the claim's skeleton
(less at most one character's fold at each end) in the document's skeleton, so one index
lookup either proves a miss outright or names the few windows of each tier worth searching.
Claims too short for the index, custom ladders and ``match_boundaries=False`` use a plain
scan of each tier, which is correct but linear in the document.
"""

from __future__ import annotations

import hashlib
import operator
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from groundswell.shared.text.boundaries import Boundaries
from groundswell.shared.text.index import KGramIndex
from groundswell.shared.text.ladder import standard_chain
from groundswell.shared.text.offsets import SubsetMap
from groundswell.shared.text.projections import Projection, Projections
from groundswell.shared.text.transforms import (
    NFKC,
    CollapseWhitespace,
    UnescapeEntities,
    regex_engine,
)
from groundswell.shared.text.unicode import tables
from groundswell.shared.verify.certificate import Certificate
from groundswell.shared.verify.policy import DEFAULT, VerifyPolicy

ELLIPSIS = re.compile(r"\.{2,}|\u2026")
CONTENT = re.compile(r"[^\W_]")
# Fragment length is counted in tokens: numbers (with a leading decimal point, or internal
# . and , separators), runs of letters and digits, and every punctuation mark on its own.
TOKEN = re.compile(r"(?<![\w.])\.[0-9]+(?:[.,][0-9]+)*|[0-9]+(?:[.,][0-9]+)*|[^\W_]+|[^\s\w]")

# Searches on one document before the index is built: a single claim is cheaper to scan for.
INDEX_AFTER = 2
# Occurrences tried one by one before in-word ones are skipped with a regex.
PREFILTER_AFTER = 16
# Above this many occurrences of the claim's skeleton, windows cost more than a plain scan.
MAX_WINDOWS = 256


@dataclass(frozen=True)
class Hit:
    tier: int
    start: int
    end: int


class Verifier:
    """Verifies claims against one source text under one policy."""

    def __init__(
        self,
        source: str,
        policy: VerifyPolicy | None = None,
        *,
        projections: Projections | None = None,
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, not {type(source).__name__}")
        self.source = source
        self.policy = policy if policy is not None else DEFAULT
        if projections is None:
            projections = Projections(source)
        elif projections.source != source:
            raise ValueError("projections were built for another source text")
        self.projections = projections
        ladder = self.policy.resolved_ladder
        self.ladder = ladder
        self._tiers = ladder.tiers
        self._chains = ladder.chains()
        self._accept = self.policy.accept_index
        self._boundaries_on = self.policy.match_boundaries
        with regex_engine(self.policy.regex_engine):
            self._standard = standard_chain(self.policy.marker_pattern)
        self._indexable = self._boundaries_on and self.policy.uses_standard_chain
        # Steps that take the ladder's last tier to the end of the standard chain (where the
        # index lives); empty for the default ladder.
        self._to_standard = self._standard[len(self._chains[-1]) :] if self._indexable else ()
        self._before_nfkc = self._standard[: self._standard.index(NFKC())]
        self._sha256: str | None = None
        self._tier_projections: list[Projection | None] = [None] * len(self._chains)
        self._bounds: Boundaries | None = None
        # The search index and the projection it is built over, kept here once made (a
        # lookup per claim in the shared projections would build their keys every time).
        self._index_key = ("kgram", tuple(s.key for s in self._standard))
        self._kgram: KGramIndex | None = None
        self._skeleton: Projection | None = None
        # Tiers whose text keeps every letter and digit of the source as it is (exact and
        # whitespace, without markers): there, the characters around an occurrence are the
        # ones the boundary rules see, so a regex can skip most in-word occurrences.
        plain = ((), (CollapseWhitespace(),))
        self._plain_tier = [
            self._boundaries_on and not self.policy.marker_pattern and chain in plain
            for chain in self._chains
        ]

    def __getstate__(self) -> dict[str, object]:
        # What was built from the text is rebuilt on demand in the receiving process.
        state = dict(self.__dict__)
        state["_tier_projections"] = [None] * len(self._chains)
        state["_bounds"] = None
        state["_kgram"] = None
        state["_skeleton"] = None
        return state

    # --- public API -------------------------------------------------------------------------

    @property
    def source_sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.source.encode("utf-8", "surrogatepass")).hexdigest()
        return self._sha256

    @property
    def fingerprint(self) -> str:
        return self.policy.fingerprint

    def verify(self, claim: str) -> Certificate:
        """Search the whole document for ``claim``."""
        if not isinstance(claim, str):
            raise TypeError(f"claim must be a str, not {type(claim).__name__}")
        had_ellipsis = ELLIPSIS.search(claim) is not None
        if CONTENT.search(claim) is None:
            return self._degenerate(claim, had_ellipsis)
        needles = self.ladder.normalize(claim)
        hit = self._locate(claim, needles, len(self._tiers) - 1)
        if hit is not None:
            return self._found(claim, hit, had_ellipsis)
        if had_ellipsis:
            mode = self.policy.ellipsis_policy
            if mode == "fragments":
                return self._fragments(claim)
            if mode == "reject":
                return self._unlocated(
                    claim,
                    True,
                    notes=(
                        "the quotation has an ellipsis and is not contiguous in the source; "
                        "this policy rejects elided quotations (ellipsis_policy='reject')",
                    ),
                )
        return self._unlocated(claim, had_ellipsis)

    def verify_at(self, claim: str, start: int, end: int) -> Certificate:
        """Check ``claim`` at exactly ``source[start:end]``; a match elsewhere does not count."""
        if not isinstance(claim, str):
            raise TypeError(f"claim must be a str, not {type(claim).__name__}")
        for value in (start, end):
            if isinstance(value, bool):
                raise TypeError("start and end must be integers, not booleans")
        start = operator.index(start)
        end = operator.index(end)
        if not 0 <= start < end <= len(self.source):
            raise ValueError(
                f"source span must satisfy 0 <= start < end <= len(source) ({len(self.source)}); "
                f"got [{start}, {end})"
            )
        requested = (start, end)
        had_ellipsis = ELLIPSIS.search(claim) is not None
        if CONTENT.search(claim) is None:
            return self._degenerate(claim, had_ellipsis, scope="span", requested=requested)
        needles = self.ladder.normalize(claim)
        for i, needle in enumerate(needles):
            if not needle:
                continue
            proj = self._projection(i)
            pos = proj.map.first_at_or_after(start)
            if not proj.text.startswith(needle, pos):
                continue
            hit = self._check(i, proj, pos, pos + len(needle), needle)
            if hit is not None and (hit.start, hit.end) == requested:
                return self._found(claim, hit, had_ellipsis, scope="span", requested=requested)
        elsewhere = self.verify(claim)
        span = (elsewhere.start, elsewhere.end)
        found = elsewhere.verdict in ("grounded", "grounded_loose") and span != requested
        return self._unlocated(
            claim,
            had_ellipsis,
            notes=("the quotation is not grounded at the requested span",),
            scope="span",
            requested=requested,
            found_elsewhere=found,
        )

    # --- search -----------------------------------------------------------------------------

    def _projection(self, i: int) -> Projection:
        got = self._tier_projections[i]
        if got is None:
            got = self._tier_projections[i] = self.projections.get(self._chains[i])
        return got

    def _boundaries(self) -> Boundaries:
        got = self._bounds
        if got is None:
            chain = self._chains[0] + (UnescapeEntities(),)
            key = ("boundaries", tuple(s.key for s in chain))
            got = self.projections.memo(key, lambda: Boundaries(self.projections.get(chain)))
            self._bounds = got
        return got

    def _index(self) -> KGramIndex | None:
        index = self._kgram
        if index is not None:
            return index
        key = self._index_key
        index = self.projections.peek(key)
        if index is None and self.projections.searches >= INDEX_AFTER:
            index = self.projections.memo(key, lambda: KGramIndex(self._skeleton_projection().text))
        self._kgram = index
        return index

    def _skeleton_projection(self) -> Projection:
        got = self._skeleton
        if got is None:
            got = self._skeleton = self.projections.get(self._standard)
        return got

    def _normalize(self, text: str, i: int) -> str:
        for step in self._chains[i]:
            text = step.apply(text)
        return text

    def _check(self, i: int, proj: Projection, a: int, b: int, needle: str) -> Hit | None:
        # Cheapest rejections first; an occurrence must pass every check anyway.
        omap = proj.map
        s = omap.start(a)
        if self._boundaries_on:
            bounds = self._boundaries()
            if not bounds.edge_ok(s):
                return None
            e = omap.end(b - 1)
            if not bounds.edge_ok(e):
                return None
        else:
            e = omap.end(b - 1)
        if omap.splits(a, b):
            return None
        if self._chains[i] and self._normalize(self.source[s:e], i) != needle:
            return None
        return Hit(i, s, e)

    def _locate(self, claim: str, needles: list[str], last: int) -> Hit | None:
        self.projections.searches += 1
        occurrences: list[int] | None = None
        lead = 0
        if self._indexable:
            index = self._index()
            if index is not None:
                core, lead = self._core(claim, needles[-1])
                if len(core) >= index.min_pattern:
                    occurrences = index.find_all(core)
                elif core:
                    occurrences = _find_some(index.text, core, MAX_WINDOWS + 1)
                if occurrences is not None:
                    if not occurrences:
                        return None
                    if len(occurrences) > MAX_WINDOWS:
                        occurrences = None
        for i in range(last + 1):
            needle = needles[i]
            if not needle:
                continue
            proj = self._projection(i)
            text = proj.text
            n = len(needle)
            if occurrences is None:
                windows: list[tuple[int, int]] = [(0, len(text))]
            else:
                windows = self._windows(i, proj, occurrences, lead, n)
            for lo, hi in windows:
                pos = text.find(needle, lo, hi)
                tried = 0
                while pos != -1:
                    hit = self._check(i, proj, pos, pos + n, needle)
                    if hit is not None:
                        return hit
                    tried += 1
                    if tried == PREFILTER_AFTER and self._plain_tier[i]:
                        rx = _in_word_filter(needle)
                        if rx is not None:
                            hit = self._scan_filtered(i, proj, rx, pos + 1, hi, needle)
                            if hit is not None:
                                return hit
                            break
                    pos = text.find(needle, pos + 1, hi)
        return None

    def _scan_filtered(
        self, i: int, proj: Projection, rx: re.Pattern[str], lo: int, hi: int, needle: str
    ) -> Hit | None:
        text = proj.text
        n = len(needle)
        end = min(len(text), hi + 1)
        search = rx.search
        m = search(text, lo, end)
        while m is not None:
            pos = m.start()
            if pos + n > hi:
                break
            hit = self._check(i, proj, pos, pos + n, needle)
            if hit is not None:
                return hit
            m = search(text, pos + 1, end)
        return None

    def _core(self, claim: str, last_needle: str) -> tuple[str, int]:
        """The part of the claim's skeleton every valid match leaves in the document's skeleton,
        and how many skeleton characters were dropped at its start.

        Only a composite numeric form at either end of the claim (as the typography tier's
        NFKC step sees it) can fold differently on its own than next to the document's
        characters, so its fold is dropped from the core.
        """
        final = last_needle
        for step in self._to_standard:
            final = step.apply(final)
        x = claim
        for step in self._before_nfkc:
            x = step.apply(x)
        if not x:
            return final, 0
        t = tables()
        lead = trail = 0
        if x[0] in t.composite_numeric:
            lead = len(_skeleton_of(t.nfkc[x[0]]))
        if x[-1] in t.composite_numeric:
            trail = len(_skeleton_of(t.nfkc[x[-1]]))
        if lead or trail:
            final = final[lead : len(final) - trail]
        return final, lead

    def _windows(
        self, i: int, proj: Projection, occurrences: list[int], lead: int, n: int
    ) -> list[tuple[int, int]]:
        """Ranges of tier ``i`` to search with ``find(needle, lo, hi)``, in order."""
        skeleton = self._skeleton_projection()
        out: list[tuple[int, int]] = []
        if self._chains[i] == self._standard:
            for p in occurrences:
                a = p - lead
                if a >= 0:
                    out.append((a, a + n))
            return out
        smap = skeleton.map
        assert isinstance(smap, SubsetMap)
        parent = smap.parent
        size = smap.chunk
        plen = len(smap.parent_text)
        tmap = proj.map
        last_chunk = -1
        counts = smap.counts
        for p in occurrences:
            j = bisect_right(counts, p) - 1
            if j == last_chunk:
                continue
            last_chunk = j
            first = j * size
            final = min(first + size, plen) - 1
            q_lo = tmap.first_at_or_after(parent.start(first))
            q_hi = tmap.first_at_or_after(parent.start(final))
            lo = max(0, q_lo - n + 1)
            hi = q_hi + n
            if out and lo <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], hi))
            else:
                out.append((lo, hi))
        return out

    # --- certificates -----------------------------------------------------------------------

    def _found(
        self,
        claim: str,
        hit: Hit,
        had_ellipsis: bool,
        *,
        scope: str = "document",
        requested: tuple[int, int] | None = None,
    ) -> Certificate:
        tier = self._tiers[hit.tier]
        accepted = hit.tier <= self._accept and (tier.sound or self.policy.allow_unsound)
        notes: tuple[str, ...] = ()
        if not accepted:
            notes = (
                f"found only at tier {tier.name!r}, past this policy's accept_through "
                f"{self.policy.accept_tier!r}",
            )
            if not tier.sound:
                notes += (f"tier {tier.name!r} is unsound. {tier.rationale}".rstrip(),)
        return Certificate(
            claim=claim,
            verdict="grounded" if accepted else "grounded_loose",
            tier=tier.name,
            tier_sound=tier.sound,
            grounded=accepted,
            start=hit.start,
            end=hit.end,
            span_text=self.source[hit.start : hit.end],
            contiguous=True,
            had_ellipsis=had_ellipsis,
            fragments=0,
            fragments_found=0,
            policy_fingerprint=self.policy.fingerprint,
            source_sha256=self.source_sha256,
            notes=notes,
            scope=scope,
            requested_span=requested,
        )

    def _unlocated(
        self,
        claim: str,
        had_ellipsis: bool,
        *,
        notes: tuple[str, ...] = (),
        scope: str = "document",
        requested: tuple[int, int] | None = None,
        found_elsewhere: bool | None = None,
        verdict: str = "unlocated",
        fragments: int = 0,
        fragments_found: int = 0,
        statuses: tuple[str, ...] = (),
        grounded: bool = False,
    ) -> Certificate:
        return Certificate(
            claim=claim,
            verdict=verdict,
            tier=None,
            tier_sound=False,
            grounded=grounded,
            start=None,
            end=None,
            span_text=None,
            contiguous=False,
            had_ellipsis=had_ellipsis,
            fragments=fragments,
            fragments_found=fragments_found,
            policy_fingerprint=self.policy.fingerprint,
            source_sha256=self.source_sha256,
            notes=notes,
            fragment_statuses=statuses,
            scope=scope,
            requested_span=requested,
            found_elsewhere=found_elsewhere,
        )

    def _degenerate(
        self,
        claim: str,
        had_ellipsis: bool,
        *,
        scope: str = "document",
        requested: tuple[int, int] | None = None,
    ) -> Certificate:
        return self._unlocated(
            claim,
            had_ellipsis,
            verdict="degenerate",
            notes=("the claim has no letter or digit, so there is nothing to look for",),
            scope=scope,
            requested=requested,
        )

    def _fragments(self, claim: str) -> Certificate:
        parts = [p.strip() for p in ELLIPSIS.split(claim) if CONTENT.search(p)]
        minimum = self.policy.min_fragment_tokens
        last = self._accept
        statuses: list[str] = []
        for part in parts:
            if len(TOKEN.findall(part)) < minimum:
                statuses.append("too_short")
                continue
            needles = self.ladder.normalize(part)
            hit = self._locate(part, needles, last)
            statuses.append("found" if hit is not None else "not_found")
        found = statuses.count("found")
        if parts and found == len(parts):
            return self._unlocated(
                claim,
                True,
                verdict="stitched",
                grounded=not self.policy.require_contiguous,
                fragments=len(parts),
                fragments_found=found,
                statuses=tuple(statuses),
                notes=(
                    f"each of the {len(parts)} fragments was found on its own, but the "
                    "quotation is not contiguous in the source; that says nothing about "
                    "their order, their distance, or what the ellipsis left out",
                ),
            )
        notes = [f"{found} of {len(parts)} fragments found"]
        short = statuses.count("too_short")
        if short:
            notes.append(
                f"{short} fragment(s) under min_fragment_tokens={minimum} tokens were not "
                "checked, and a quotation with one cannot be stitched"
            )
        return self._unlocated(
            claim,
            True,
            fragments=len(parts),
            fragments_found=found,
            statuses=tuple(statuses),
            notes=tuple(notes),
        )


_LOWER_OR_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGIT = frozenset("0123456789")


@lru_cache(maxsize=256)
def _in_word_filter(needle: str) -> re.Pattern[str] | None:
    """A regex for the occurrences of ``needle`` that the boundary rules might accept.

    Valid only on a tier whose text keeps the source's letters and digits in place (exact,
    whitespace). It drops occurrences whose neighbour is an ASCII letter or digit that the
    rules always refuse next to the needle's first or last character: any letter or digit
    before a lower-case letter or a digit; a digit before a capital (a lower-case letter there
    may be a camel-case join); after a letter, a lower-case letter or digit; after a digit, any
    letter or digit.
    """
    first, last = needle[0], needle[-1]
    if first in _LOWER_OR_DIGIT:
        before = "[A-Za-z0-9]"
    elif first in _UPPER:
        before = "[0-9]"
    else:
        before = ""
    if last in _DIGIT:
        after = "(?![A-Za-z0-9])"
    elif last in _LOWER_OR_DIGIT or last in _UPPER:
        after = "(?![a-z0-9])"
    else:
        after = ""
    if not before and not after:
        return None
    # The needle comes first so the regex engine can skip ahead with a literal search; the
    # check of the character before it is a lookbehind over the needle itself.
    body = re.escape(needle)
    behind = f"(?<!{before}{body})" if before else ""
    return re.compile(f"{body}{behind}{after}")


def _find_some(text: str, pattern: str, limit: int) -> list[int]:
    """Up to ``limit`` starts of ``pattern`` in ``text`` (overlapping ones included)."""
    out: list[int] = []
    find = text.find
    p = find(pattern)
    while p != -1 and len(out) < limit:
        out.append(p)
        p = find(pattern, p + 1)
    return out


def _skeleton_of(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())
