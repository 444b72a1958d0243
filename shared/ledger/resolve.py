"""Entity resolution that refuses uncertain merges (xrad's ``resolve``, with its bugs fixed).

Entities of one type whose labels fold to the same key are merged; a known empty suffix
(``Ltd``, ``GmbH``, ``Holdings``, ...) is a documented equivalence and is dropped from the
key. Everything near that is not certain is **held** for a human instead, with its reason:

- a type conflict (the same key under two types);
- a label that extends another with a word that is not a known empty suffix
  (``Acme`` / ``Acme Products``);
- an explicit discriminator on either side (``(UK)``, ``Henry VIII``, ``Fund 2``, ``the
  elder``);
- a near spelling (``Johnson`` / ``Johnston``: an edit or two apart).

Where it deliberately differs from xrad 0.4.0 (BEHAVIOUR §1.3, §1.10):

- digits are kept in the key, so ``Fund 1`` and ``Fund 2`` are never merged silently (they
  are held: a discriminator), nor ``Project X (2019)`` and ``(2020)``;
- the Latin spellings ``j→i``, ``y→i``, ``v→u`` are not folded (``Smith`` and ``Smyth`` are
  two names; they are held as a near spelling);
- a near spelling is held, never merged: xrad's fuzzy pass merges 4,000 distinct random
  names into 1,020 entities and holds none;
- a held question's weight is the number of claims its answer moves (xrad counts mentions);
- group ids are stable: a group is named by its label entity's id, which is derived from
  its type and label, so resolving again after new entities renumbers nothing.

Claims point at their own entities; the answer is the ``entity_groups`` table, rewritten as
a whole on each run, so resolving is safe to repeat. A held question's id is
``merge:<Type>/<key>``, as xrad's review keys it, so an answer survives re-resolution; the
held questions are stored (``review_questions``) for ``review`` to list, and the decisions
given to them are read and obeyed (``review.settle``; xrad's resolve ignores them).
Cost: O(entities × label words) with hash lookups, and a pass-join index of key pieces for
near spellings (:func:`near_pairs`; xrad compares every cluster with every other, quadratic).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from sqlalchemy import delete, insert, text

from groundswell.shared.ledger.models import VERDICTS, EntityGroupRow
from groundswell.shared.ledger.review import (
    Decision,
    Held,
    current_decisions,
    question_id,
    questions,
    settle,
    write_questions,
)
from groundswell.shared.ledger.store import Ledger, chunks

EMPTY_SUFFIXES = frozenset(
    [
        "ltd",
        "limited",
        "inc",
        "incorporated",
        "llc",
        "llp",
        "plc",
        "corp",
        "corporation",
        "co",
        "company",
        "gmbh",
        "ag",
        "sa",
        "sas",
        "bv",
        "nv",
        "spa",
        "srl",
        "pty",
        "holdings",
        "group",
        "the",
    ]
)
_DISCRIMINATOR = re.compile(
    r"\([A-Za-z .]{1,21}\)"
    r"|\b(?:prisc\w*|minor|maior|major|alter|senior|junior|the elder|the younger)\b"
    r"|\b[IVXLC]+\b"
    r"|\b\d+(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)
_SPECIAL = {"ſ": "s", "æ": "ae", "œ": "oe", "ß": "ss"}


def fold(label: str) -> str:
    """A label as a comparison key: accents stripped, lower case, letters and digits only
    (words kept apart by single spaces). Digits are kept (xrad drops them)."""
    decomposed = unicodedata.normalize("NFD", label)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
    stripped = "".join(_SPECIAL.get(ch, ch) for ch in stripped)
    words = [
        "".join(ch for ch in word if ("a" <= ch <= "z") or ch.isdigit())
        for word in stripped.split()
    ]
    return " ".join(w for w in words if w)


ARTICLES = frozenset({"the"})


def core(key: str, suffixes: frozenset[str] = EMPTY_SUFFIXES) -> str:
    """A folded key without its known empty words, never emptied by it: a key of empty words
    only (``the company``) loses its articles alone (``company``, as ``Company``'s key)."""
    words = key.split()
    kept = [w for w in words if w not in suffixes]
    if kept:
        return " ".join(kept)
    named = [w for w in words if w not in ARTICLES]
    return " ".join(named) if named else key


def discriminators(label: str) -> frozenset[str]:
    return frozenset(m.group(0).lower() for m in _DISCRIMINATOR.finditer(label))


@dataclass
class Group:
    """Entities resolved as one: its type, key and members ``(id, label, claims)``."""

    type: str
    key: str
    members: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def claims(self) -> int:
        return sum(m[2] for m in self.members)

    @property
    def head(self) -> tuple[str, str, int]:
        """The label entity: most claims, then the longer label, then the smaller id."""
        return min(self.members, key=lambda m: (-m[2], -len(m[1]), m[0]))

    @property
    def label(self) -> str:
        return self.head[1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.head[0],
            "type": self.type,
            "label": self.label,
            "key": self.key,
            "claims": self.claims,
            "labels": sorted(m[1] for m in self.members),
            "entity_ids": sorted(m[0] for m in self.members),
        }


@dataclass
class Resolution:
    groups: list[Group]
    held: list[Held]
    entities: int
    applied: Counter = field(default_factory=Counter)  # decisions that took effect, by verdict

    def as_dict(self, show: int | None = None) -> dict[str, Any]:
        merged = [g for g in self.groups if len(g.members) > 1]
        asked = questions(self.held)
        return {
            "entities": self.entities,
            "groups": len(self.groups),
            "merged": [g.as_dict() for g in merged[:show]],
            # One entry per question id (the other pairs held for it listed in ``also``).
            "held": [q.as_dict() for q in asked[:show]],
            "held_total": len(asked),
            "decisions_applied": {v: self.applied.get(v, 0) for v in VERDICTS},
        }


def _near(a: str, b: str) -> int | None:
    """Edit distance of a and b when it is 1 (or 2, both longer than 7), else None. Only
    the band of the table within the limit of its diagonal is computed, and it stops as soon
    as a row is all over the limit: O(length × limit), not O(length²)."""
    limit = 2 if min(len(a), len(b)) > 7 else 1
    if abs(len(a) - len(b)) > limit or a == b:
        return None
    over = limit + 1  # any cost above the limit is the same "too far"
    width = len(b) + 1
    prev = [j if j <= limit else over for j in range(width)]
    for i in range(1, len(a) + 1):
        cur = [over] * width
        cur[0] = i if i <= limit else over
        best = cur[0]
        ca = a[i - 1]
        for j in range(max(1, i - limit), min(len(b), i + limit) + 1):
            v = prev[j - 1] + (ca != b[j - 1])
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            cur[j] = v if v < over else over
            if v < best:
                best = v
        if best > limit:
            return None
        prev = cur
    d = prev[-1]
    return d if d <= limit else None


def _pieces(length: int, parts: int) -> list[tuple[int, int]]:
    """(start, length) of ``parts`` pieces of a string of ``length``, the longer ones last."""
    base, longer = divmod(length, parts)
    out, start = [], 0
    for i in range(parts):
        n = base + (i >= parts - longer)
        out.append((start, n))
        start += n
    return out


def near_pairs(keyed: list[tuple[str, str]]) -> Iterator[tuple[int, int, int]]:
    """Pairs ``(i, j, d)`` of entries of ``keyed`` (``(type, key)``, distinct) of the same type
    whose keys are a near spelling: ``d`` edits apart, 1, or 2 when both are longer than 7;
    both at least 5 long and sharing their first two letters. Each pair once.

    Pass-join: a key within k edits of another holds one of the other's k + 1 pieces
    unchanged, shifted by at most k; so each key is indexed k + 1 times and looks up a few
    dozen of its substrings (k = 1 for keys of 5 or more, k = 2 for keys over 7). The deletion
    neighbourhoods this replaces held about L²/2 variants of every key: 10M at 100k
    entities, and more memory than the machine has at 1M."""
    for k, shortest in ((1, 5), (2, 8)):
        index: dict[tuple, list[int]] = defaultdict(list)
        for i, (type_, key) in enumerate(keyed):
            if len(key) >= shortest:
                for n, (start, size) in enumerate(_pieces(len(key), k + 1)):
                    index[(type_, key[:2], len(key), n, key[start : start + size])].append(i)
        for i, (type_, key) in enumerate(keyed):
            length = len(key)
            if length < shortest:
                continue
            found: set[int] = set()
            for other in range(max(shortest, length - k), length + k + 1):
                for n, (start, size) in enumerate(_pieces(other, k + 1)):
                    for at in range(max(0, start - k), min(length - size, start + k) + 1):
                        found.update(index.get((type_, key[:2], other, n, key[at : at + size]), ()))
            for j in sorted(found):
                if keyed[j][1] > key:
                    d = _near(key, keyed[j][1])
                    if d == k:  # a pair one edit apart is the first pass's
                        yield i, j, d


def _asked(a: Group, b: Group) -> tuple[Group, Group]:
    """(the group a held pair asks about, the one it would join): the lighter; on a tie the
    later by key and type, the one xrad's pass (heaviest first, then by key) meets second."""
    if (a.claims, b.key, b.type) < (b.claims, a.key, a.type):
        return a, b
    return b, a


def _joined(groups: dict[tuple[str, str], Group], unions) -> dict[tuple[str, str], tuple]:
    """Each group's root after joining the ``unions`` (pairs of group keys), union-find."""
    parent = {k: k for k in groups}

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, b in unions:
        if a in parent and b in parent:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {k: root(k) for k in groups}


def cluster(
    entities: list[tuple[str, str, str, int]],
    suffixes: frozenset[str] = EMPTY_SUFFIXES,
    decisions: Mapping[str, Decision] | None = None,
    applied: Counter | None = None,
) -> tuple[list[Group], list[Held]]:
    """``entities`` as ``(id, type, label, claims)`` -> groups and held questions. With
    ``decisions`` (id -> newest answer), an accepted group joins its target, a rejected one
    is no longer held, a deferred one is held as deferred (:func:`review.settle`); ``applied``
    counts them by verdict."""
    groups: dict[tuple[str, str], Group] = {}
    for entity_id, type_, label, n in entities:
        key = core(fold(label), suffixes)
        if not key:  # nothing foldable (Greek, Hebrew...): never a match key
            key = "~" + entity_id
        groups.setdefault((type_, key), Group(type_, key)).members.append((entity_id, label, n))
    held: dict[tuple[str, str], Held] = {}

    def hold(a: Group, b: Group, reason: str) -> None:
        small, big = _asked(a, b)
        question = Held(
            question_id(small.type, small.key),
            small.label,
            big.label,
            reason,
            a.claims + b.claims,
            small.type,
            small.key,
            big.type,
            big.key,
            tuple(sorted({m[1] for m in small.members})),
            entities=tuple(m[0] for m in (*small.members, *big.members)),
        )
        slot = (question.id, reason.split(":")[0])
        # The heaviest of a slot, then the first target by type and key: the same whatever
        # order the pairs were found in.
        rank = (-question.weight, question.into_type, question.into_key, question.reason)
        kept = held.get(slot)
        if kept is None or rank < (-kept.weight, kept.into_type, kept.into_key, kept.reason):
            held[slot] = question

    real = [g for g in groups.values() if not g.key.startswith("~")]
    by_key: dict[str, list[Group]] = defaultdict(list)
    for g in real:
        by_key[g.key].append(g)
    for same in by_key.values():  # one key, several types
        for a, b in combinations(sorted(same, key=lambda g: g.type), 2):
            hold(a, b, f"type conflict: {a.type} vs {b.type}")
    by_type_key = {(g.type, g.key): g for g in real}
    for g in real:  # extends: a shorter key of the same type is a prefix or suffix of words
        words = g.key.split()
        for i in range(1, len(words)):
            for part in (" ".join(words[:i]), " ".join(words[i:])):
                other = by_type_key.get((g.type, part))
                if other is None:
                    continue
                extra = words[i:] if part == " ".join(words[:i]) else words[:i]
                if discriminators(g.label) or discriminators(other.label):
                    hold(g, other, "an explicit discriminator says these differ")
                elif all(w in suffixes for w in extra):
                    # Both keys are empty words only (nothing else was left to compare).
                    hold(
                        g,
                        other,
                        f"{g.key!r} extends {other.key!r} with known empty words "
                        f"({' '.join(extra)}), but both are empty words only: nothing of a "
                        "name is left to say they are one",
                    )
                else:
                    hold(
                        g,
                        other,
                        f"{g.key!r} extends {other.key!r} with a word that is not a known "
                        f"empty suffix ({' '.join(extra)})",
                    )
    for i, j, d in near_pairs([(g.type, g.key) for g in real]):
        a, b = real[i], real[j]
        if discriminators(a.label) != discriminators(b.label):
            hold(a, b, "an explicit discriminator says these differ")
        else:
            hold(a, b, f"near spelling: {a.key!r} and {b.key!r} are {d} edit(s) apart")
    settled = settle(held.values(), decisions or {})
    roots = _joined(groups, settled.unions.values())
    if applied is not None:  # each decision once: an accept when both its groups exist
        took = dict(settled.answered)
        for qid, (asked, target) in settled.unions.items():
            if asked in groups and target in groups:
                took[qid] = "accept"
        applied.update(took.values())
    joined: dict[tuple[str, str], list[Group]] = defaultdict(list)
    for k, g in groups.items():
        joined[roots[k]].append(g)
    final = []
    for parts in joined.values():
        if len(parts) == 1:
            final.append(parts[0])
            continue
        # An accepted merge: the heaviest part names the group (its type and key).
        first = min(parts, key=lambda g: (-g.claims, g.key, g.type))
        final.append(Group(first.type, first.key, [m for g in parts for m in g.members]))
    still = [
        h
        for h in settled.held
        if roots[(h.type, h.key)] != roots[(h.into_type, h.into_key)]  # not joined meanwhile
    ]
    ranked = sorted(still, key=lambda h: (-h.weight, h.id, h.reason))
    ordered = sorted(final, key=lambda g: (g.type, g.key))
    return ordered, ranked


def resolve(ledger: Ledger, *, write: bool = True) -> Resolution:
    """Resolve every entity of the ledger; with ``write``, replace ``entity_groups``."""
    with ledger.engine.connect() as conn:
        counts: Counter = Counter()
        corpora: dict[str, set[str]] = defaultdict(set)  # an entity's claims' corpora
        for column in ("subject_entity_id", "object_entity_id"):
            rows = conn.execute(
                text(f"SELECT {column}, corpus, COUNT(*) FROM claims GROUP BY {column}, corpus")
            )
            for entity_id, corpus, n in rows:
                counts[entity_id] += n
                corpora[entity_id].add(corpus or "")
        entities = [
            (i, t, label, counts[i])
            for i, t, label in conn.execute(text("SELECT id, type, label FROM entities"))
        ]
        decisions = current_decisions(conn)
    applied: Counter = Counter()
    groups, held = cluster(entities, decisions=decisions, applied=applied)
    if write:
        rows = [
            {"entity_id": m[0], "group_id": g.head[0]}
            for g in groups
            if len(g.members) > 1
            for m in g.members
        ]
        with ledger.engine.begin() as conn:
            conn.execute(delete(EntityGroupRow))
            for part in chunks(rows, 5000):
                conn.execute(insert(EntityGroupRow), part)
            write_questions(conn, questions(held), corpora)
    return Resolution(groups, held, len(entities), applied)
