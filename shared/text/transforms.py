"""Normalization steps: registered, versioned transforms with parameters.

A transform does the same thing two ways:

* ``apply(text)`` normalizes a short string on its own (a claim, or a source span being
  re-checked); it is plain string work.
* ``project(text, parent)`` normalizes a whole document once and also returns the offset map
  of the result. It scans with compiled regular expressions and only handles the characters
  that change in Python, so a mostly-plain document costs a few C-speed passes per step.

Both must give the same text (a property test checks it). A policy may only use registered
transforms; their ``(op, version, params)`` specs are part of the policy fingerprint.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from array import array
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from groundswell.shared.text.offsets import OffsetMap, SubsetMap, build_edit_map
from groundswell.shared.text.unicode import FRACTION_SLASH, tables

Edits = list[tuple[int, int, int]]


class TransformError(ValueError):
    """An unknown transform, a bad parameter, or a callable that is not registered."""


class Transform:
    """One normalization step. Subclasses set ``op`` and ``version`` and implement both paths."""

    op: str = ""
    version: int = 0
    # Names of the parameters this step takes; anything else is refused.
    param_names: tuple[str, ...] = ()

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(self.param_names)
        if unknown:
            raise TransformError(
                f"{self.op}/{self.version} takes no parameter {', '.join(sorted(unknown))}"
            )
        self.params: dict[str, Any] = dict(params)
        self._key = (self.op, self.version, tuple(sorted(self.params.items())))

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "version": self.version, "params": dict(self.params)}

    @property
    def key(self) -> tuple[str, int, tuple[tuple[str, Any], ...]]:
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transform) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.params.items()))
        return f"{self.op}/{self.version}({args})"

    def apply(self, text: str) -> str:
        return self.project_text(text)[0]

    def project_text(self, text: str) -> tuple[str, Edits]:
        """The normalized text and its rewrites ``(lo, hi, new_length)`` in order."""
        raise TransformError(f"transform {self.op}/{self.version} has no implementation")

    def project(self, text: str, parent: OffsetMap) -> tuple[str, OffsetMap]:
        out, edits = self.project_text(text)
        return out, build_edit_map(parent, len(out), edits)


def _sub_with_edits(
    pattern: re.Pattern[str], text: str, replace: Callable[[re.Match[str]], str]
) -> tuple[str, Edits]:
    parts: list[str] = []
    edits: Edits = []
    last = 0
    for m in pattern.finditer(text):
        lo, hi = m.span()
        new = replace(m)
        if new == text[lo:hi]:
            continue
        parts.append(text[last:lo])
        parts.append(new)
        edits.append((lo, hi, len(new)))
        last = hi
    if not edits:
        return text, edits
    parts.append(text[last:])
    return "".join(parts), edits


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_CHUNK = 1024


def _non_ascii(text: str) -> list[re.Match[str]]:
    """Every non-ASCII character of ``text``, found chunk by chunk so that the (usual) plain
    ASCII stretches cost one C-level check each."""
    if text.isascii():
        return []
    out: list[re.Match[str]] = []
    finditer = _NON_ASCII.finditer
    for lo in range(0, len(text), _CHUNK):
        if not text[lo : lo + _CHUNK].isascii():
            out.extend(finditer(text, lo, lo + _CHUNK))
    return out


def _rewrite(text: str, hits: list[tuple[int, str]]) -> tuple[str, Edits]:
    """Replace single characters at ``hits`` (position, replacement), in order."""
    parts: list[str] = []
    edits: Edits = []
    last = 0
    for pos, new in hits:
        parts.append(text[last:pos])
        parts.append(new)
        if len(new) != 1:
            edits.append((pos, pos + 1, len(new)))
        last = pos + 1
    parts.append(text[last:])
    return "".join(parts), edits


# --- whitespace -------------------------------------------------------------------------------

_ASCII_OTHER_SPACE = "".join(c for c in map(chr, range(128)) if c.isspace() and c != " ")
_DOUBLE_SPACE = re.compile("  +")
_WS_RUN = re.compile(r"\s+")


def _other_space_positions(text: str) -> list[int]:
    """Positions of whitespace other than the plain space, ascending.

    ASCII ones are found with ``str.find`` (memchr speed), others in the non-ASCII chunks: far
    cheaper than a regex scanning every character of a large document.
    """
    out: list[int] = []
    find = text.find
    for ch in _ASCII_OTHER_SPACE:
        i = find(ch)
        while i != -1:
            out.append(i)
            i = find(ch, i + 1)
    out.extend(m.start() for m in _non_ascii(text) if m.group().isspace())
    out.sort()
    return out


def _double_space_starts(text: str) -> list[int]:
    """The start of every run of two or more plain spaces, ascending: found with ``str.find``
    (a regex would step through every character of the text to find a few runs)."""
    out: list[int] = []
    find = text.find
    match = _DOUBLE_SPACE.match
    i = find("  ")
    while i != -1:
        out.append(i)
        i = find("  ", match(text, i).end())  # type: ignore[union-attr]
    return out


class CollapseWhitespace(Transform):
    """Every whitespace run becomes one space; runs at the very start or end are dropped."""

    op = "collapse_whitespace"
    version = 1

    def apply(self, text: str) -> str:
        return " ".join(text.split())

    def project_text(self, text: str) -> tuple[str, Edits]:
        n = len(text)
        # Every maximal whitespace run that is not exactly one space holds another whitespace
        # character or two spaces in a row: start from those, grow to the whole run.
        anchors = _other_space_positions(text)
        doubles = _double_space_starts(text)
        if doubles:
            anchors = sorted(anchors + doubles)
        if n and text[0] == " ":
            anchors.insert(0, 0)
        if n and text[-1] == " ":
            anchors.append(n - 1)
        if not anchors:
            return text, []
        parts: list[str] = []
        edits: Edits = []
        last = 0
        match = _WS_RUN.match
        for i in anchors:
            if i < last:
                continue
            lo = i
            while lo > last and text[lo - 1] == " ":
                lo -= 1
            hi = match(text, i).end()  # type: ignore[union-attr]
            parts.append(text[last:lo])
            if lo == 0 or hi == n:
                edits.append((lo, hi, 0))
            else:
                parts.append(" ")
                edits.append((lo, hi, 1))
            last = hi
        parts.append(text[last:])
        return "".join(parts), edits


# --- markers ----------------------------------------------------------------------------------


# Which engine runs the patterns a policy brings (parser-marker patterns). Python's ``re``
# by default, as gtrex does, for parity; policies from the registry, which anyone with an
# API key may publish and every worker then runs, use RE2, whose matching time is linear, and
# are refused at publication when RE2 cannot express them (backreferences, lookaround).
_ENGINE: ContextVar[str] = ContextVar("groundswell_regex_engine", default="re")
# With ``re``, a bound on the time one text's markers may take (the CLI sets it): Python's
# matcher checks for signals as it backtracks, so an alarm stops a catastrophic pattern.
_TIME_BOUND: dict[str, float | None] = {"seconds": None}


@contextmanager
def regex_engine(name: str) -> Iterator[None]:
    """Build transforms (and the policies that hold them) with ``re`` or ``re2``."""
    if name not in ("re", "re2"):
        raise TransformError(f"unknown regex engine {name!r}")
    token = _ENGINE.set(name)
    try:
        yield
    finally:
        _ENGINE.reset(token)


def current_regex_engine() -> str:
    return _ENGINE.get()


def bound_regex_time(seconds: float | None) -> None:
    """Stop a marker pattern that runs longer than ``seconds`` on one text (``re`` only)."""
    _TIME_BOUND["seconds"] = seconds


def compile_marker(pattern: str, engine: str | None = None) -> Any:
    engine = engine or _ENGINE.get()
    if engine == "re2":
        import re2

        try:
            compiled = re2.compile(pattern)
        except Exception as exc:  # re2.error: what RE2 cannot express or parse
            detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
            raise TransformError(
                f"marker pattern {pattern!r} is not a linear-time (RE2) expression: {detail}"
            ) from None
    else:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise TransformError(f"invalid marker pattern {pattern!r}: {exc}") from exc
    if compiled.fullmatch(""):
        raise TransformError(f"marker pattern {pattern!r} matches the empty string")
    return compiled


class _SlowPattern(Exception):
    pass


def _matches(compiled: Any, pattern: str, engine: str, text: str) -> list[Any]:
    seconds = _TIME_BOUND["seconds"]
    if (
        engine != "re"
        or seconds is None
        or threading.current_thread() is not threading.main_thread()
    ):
        return list(compiled.finditer(text))

    import signal  # only a policy's marker pattern needs it, not every start-up

    def on_alarm(*_: Any) -> None:
        raise _SlowPattern

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return list(compiled.finditer(text))
    except _SlowPattern:
        raise TransformError(
            f"marker pattern {pattern!r} ran longer than {seconds:g} s on one text "
            "(catastrophic backtracking?)"
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _MarkerTransform(Transform):
    replacement = " "
    param_names = ("pattern",)

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise TransformError("a marker transform needs a non-empty 'pattern'")
        super().__init__(pattern=pattern)
        self._engine = _ENGINE.get()
        self._re = compile_marker(pattern, self._engine)

    def project_text(self, text: str) -> tuple[str, Edits]:
        parts: list[str] = []
        edits: Edits = []
        last = 0
        for m in _matches(self._re, self.params["pattern"], self._engine, text):
            lo, hi = m.span()
            if lo == hi:
                continue
            parts.append(text[last:lo])
            parts.append(self.replacement)
            edits.append((lo, hi, len(self.replacement)))
            last = hi
        if not edits:
            return text, edits
        parts.append(text[last:])
        return "".join(parts), edits


class SeparateMarkers(_MarkerTransform):
    """Each parser marker becomes one space, attributed to the whole marker."""

    op = "separate_markers"
    version = 1


class StripMarkers(_MarkerTransform):
    """Each parser marker is deleted (kept for ladders written that way)."""

    op = "strip_markers"
    version = 1
    replacement = ""


# --- typography -------------------------------------------------------------------------------

_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _decode_entity(m: re.Match[str]) -> str:
    import html  # its entity table costs a start-up that meets no entity

    return html.unescape(m.group())


class UnescapeEntities(Transform):
    """HTML character references (``&amp;``, ``&#36;``, ``&#x2014;``) are decoded; the ``;`` is
    required and unknown names stay as written."""

    op = "unescape_entities"
    version = 1

    def apply(self, text: str) -> str:
        if "&" not in text:
            return text
        return _ENTITY.sub(_decode_entity, text)

    def project_text(self, text: str) -> tuple[str, Edits]:
        if "&" not in text:
            return text, []
        return _sub_with_edits(_ENTITY, text, _decode_entity)


TYPOGRAPHY: dict[str, str] = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u00a0": " ",
    "\u2007": " ",
    "\u2009": " ",
    "\u202f": " ",
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\ufeff": "",
    "\u00ad": "",
    "\u2026": "...",
}
_TYPOGRAPHY_RE = re.compile("[" + "".join(TYPOGRAPHY) + "]")
_TYPOGRAPHY_TABLE = str.maketrans(TYPOGRAPHY)


class MapTypography(Transform):
    """Curly quotes, dashes and the minus sign to ASCII, special spaces to a space, invisible
    characters and soft hyphens deleted, the ellipsis character to three dots."""

    op = "map_typography"
    version = 1

    def apply(self, text: str) -> str:
        if text.isascii() or not _TYPOGRAPHY_RE.search(text):
            return text
        return text.translate(_TYPOGRAPHY_TABLE)

    def project_text(self, text: str) -> tuple[str, Edits]:
        hits = [
            (m.start(), TYPOGRAPHY[c]) for m in _non_ascii(text) if (c := m.group()) in TYPOGRAPHY
        ]
        if not hits:
            return text, []
        return _rewrite(text, hits)


HYPHENS: dict[str, str] = {"\u2010": "-", "\u2011": "-", "\u2012": "-"}
_HYPHEN_RE = re.compile("[\u2010-\u2012]")
_HYPHEN_TABLE = str.maketrans(HYPHENS)


class FoldHyphenVariants(Transform):
    """The Unicode hyphen, non-breaking hyphen and figure dash become ``-``."""

    op = "fold_hyphen_variants"
    version = 1

    def apply(self, text: str) -> str:
        if text.isascii() or not _HYPHEN_RE.search(text):
            return text
        return text.translate(_HYPHEN_TABLE)

    def project_text(self, text: str) -> tuple[str, Edits]:
        hits = [(m.start(), "-") for m in _non_ascii(text) if m.group() in HYPHENS]
        if not hits:
            return text, []
        return _rewrite(text, hits)


def _figure_end(ch: str) -> bool:
    return ch.isnumeric() or ch == FRACTION_SLASH


def _touches_figure(text: str, i: int) -> bool:
    if i > 0:
        left = text[i - 1]
        if _figure_end(left):
            return True
        folded = unicodedata.normalize("NFKC", left)
        if folded and _figure_end(folded[-1]):
            return True
    if i + 1 < len(text):
        right = text[i + 1]
        if _figure_end(right):
            return True
        folded = unicodedata.normalize("NFKC", right)
        if folded and _figure_end(folded[0]):
            return True
    return False


def _nfkc_at(text: str, i: int, ch: str) -> str | None:
    """The fold of ``text[i] == ch``, or None when it stays as written."""
    t = tables()
    folded = t.nfkc.get(ch)
    if folded is None:
        return None
    if ch in t.composite_numeric and _touches_figure(text, i):
        return None
    return folded


class NFKC(Transform):
    """Unicode compatibility folding, one character at a time (so nothing is ever composed).

    Superscripts and subscripts are never folded, and a composite numeric form (a fraction,
    a circled number) is left alone where it touches a figure, so ``1½`` stays one figure
    and never reads as ``11⁄2``.
    """

    op = "nfkc"
    version = 2

    def project_text(self, text: str) -> tuple[str, Edits]:
        hits = []
        for m in _non_ascii(text):
            i = m.start()
            new = _nfkc_at(text, i, m.group())
            if new is not None:
                hits.append((i, new))
        if not hits:
            return text, []
        return _rewrite(text, hits)


class Casefold(Transform):
    """``str.casefold`` (``ß`` -> ``ss``, ``İ`` -> ``i̇``), character by character."""

    op = "casefold"
    version = 1

    def apply(self, text: str) -> str:
        return text.casefold()

    def project_text(self, text: str) -> tuple[str, Edits]:
        out = text.casefold()
        if len(out) == len(text):
            # casefold never shortens a character, so equal lengths mean one for one.
            return out, []
        long = tables().casefold_long
        edits = [
            (m.start(), m.start() + 1, len(long[c]))
            for m in _non_ascii(text)
            if (c := m.group()) in long
        ]
        return out, edits


_NOT_ALNUM = re.compile(r"[\W_]+")
_ASCII_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
# Small chunks: most of them are pure ASCII and take the bytes fast path, and the lazy offset
# lookups of the skeleton map only ever scan one chunk.
SKELETON_CHUNK = 256


class AlphanumericSkeleton(Transform):
    """Only letters and digits (``str.isalnum``) are kept. Unsound: it erases signs, decimal
    points and parentheses, so different figures can collide."""

    op = "alphanumeric_skeleton"
    version = 1

    def apply(self, text: str) -> str:
        if text.isascii():  # the bytes fast path (a twentieth of the regex's time on a claim)
            return text.encode("ascii").translate(None, _ASCII_NOT_ALNUM).decode("ascii")
        return _NOT_ALNUM.sub("", text)

    def project_text(self, text: str) -> tuple[str, Edits]:
        out = self.apply(text)
        edits: Edits = []
        for m in _NOT_ALNUM.finditer(text):
            edits.append((m.start(), m.end(), 0))
        return out, edits

    def project(self, text: str, parent: OffsetMap) -> tuple[str, OffsetMap]:
        size = SKELETON_CHUNK
        parts: list[str] = []
        counts = array("q", [0])
        total = 0
        sub = _NOT_ALNUM.sub
        drop = _ASCII_NOT_ALNUM
        for lo in range(0, len(text), size):
            chunk = text[lo : lo + size]
            if chunk.isascii():
                piece = chunk.encode("ascii").translate(None, drop).decode("ascii")
            else:
                piece = sub("", chunk)
            parts.append(piece)
            total += len(piece)
            counts.append(total)
        if len(counts) == 1:
            counts.append(0)
        return "".join(parts), SubsetMap(parent, text, size, counts)


# --- OCR confusions (unsound) ---------------------------------------------------------------

# What a recogniser commonly mistakes for what, folded to one side, after case folding: 'rn'
# read for 'm', '0' for 'o', '1', 'i' and '|' for 'l', 'vv' for 'w'; a word broken by a line-end
# hyphen ("exam- ple", once whitespace is one space) is joined. Ligatures are folded earlier, by
# the typography tier's NFKC.
_OCR_PAIRS = {"rn": "m", "vv": "w"}
_OCR_SINGLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})
_OCR_RE = re.compile(r"rn|vv|(?<=[^\W\d_])- (?=[^\W\d_])")


class FoldOcrConfusions(Transform):
    """Letters a recogniser confuses compared as one (``rn``/``m``, ``0``/``o``,
    ``1``/``l``/``i``, ``vv``/``w``) and line-end hyphenation joined. UNSOUND: 'burn' and
    'bum', '10' and 'lo' become the same text. For recognised (OCR) text, and a diagnostic."""

    op = "fold_ocr_confusions"
    version = 1

    def apply(self, text: str) -> str:
        return self.project_text(text)[0]

    def project_text(self, text: str) -> tuple[str, Edits]:
        # The pairs and the hyphen first (they change lengths), then the one-for-one letters.
        out, edits = _sub_with_edits(_OCR_RE, text, lambda m: _OCR_PAIRS.get(m.group(), ""))
        return out.translate(_OCR_SINGLE), edits


# --- registry ---------------------------------------------------------------------------------

_REGISTRY: dict[tuple[str, int], Callable[..., Transform]] = {}


def register_transform(op: str, version: int, factory: Callable[..., Transform]) -> None:
    """Make a step loadable by ``(op, version)``; a registered pair can't be given other code."""
    key = (op, version)
    existing = _REGISTRY.get(key)
    if existing is not None and existing is not factory:
        raise TransformError(f"transform {op}/{version} is already registered")
    _REGISTRY[key] = factory


def make_transform(op: str, version: int, params: Mapping[str, Any] | None = None) -> Transform:
    factory = _REGISTRY.get((op, version))
    if factory is None:
        raise TransformError(f"unknown transform {op}/{version}")
    try:
        made = factory(**dict(params or {}))
    except (TypeError, TransformError) as exc:
        raise TransformError(f"bad parameters for {op}/{version}: {exc}") from exc
    if not isinstance(made, Transform) or (made.op, made.version) != (op, version):
        raise TransformError(f"factory for {op}/{version} did not make that transform")
    return made


def transform_from_spec(spec: Mapping[str, Any]) -> Transform:
    if not isinstance(spec, Mapping) or set(spec) - {"op", "version", "params"}:
        raise TransformError(f"a step is {{op, version, params}}, not {spec!r}")
    op, version = spec.get("op"), spec.get("version")
    if not isinstance(op, str) or not isinstance(version, int) or isinstance(version, bool):
        raise TransformError(f"a step needs a string 'op' and an integer 'version': {spec!r}")
    params = spec.get("params") or {}
    if not isinstance(params, Mapping):
        raise TransformError(f"step params must be an object: {spec!r}")
    return make_transform(op, version, params)


def is_registered(step: object) -> bool:
    """Whether ``step`` is the registered code for its ``(op, version)``."""
    if not isinstance(step, Transform):
        return False
    factory = _REGISTRY.get((step.op, step.version))
    if factory is None:
        return False
    if isinstance(factory, type):
        return type(step) is factory
    return type(step) is type(factory(**step.params))


for _cls in (
    CollapseWhitespace,
    SeparateMarkers,
    StripMarkers,
    UnescapeEntities,
    MapTypography,
    FoldHyphenVariants,
    NFKC,
    Casefold,
    FoldOcrConfusions,
    AlphanumericSkeleton,
):
    register_transform(_cls.op, _cls.version, _cls)

# The standard chain the built-in ladders are prefixes of (after any marker step).
WHITESPACE_STEPS: tuple[Transform, ...] = (CollapseWhitespace(),)
TYPOGRAPHY_STEPS: tuple[Transform, ...] = (
    UnescapeEntities(),
    MapTypography(),
    FoldHyphenVariants(),
    NFKC(),
    CollapseWhitespace(),
)
CASE_STEPS: tuple[Transform, ...] = (Casefold(),)
SKELETON_STEPS: tuple[Transform, ...] = (AlphanumericSkeleton(),)
OCR_STEPS: tuple[Transform, ...] = (FoldOcrConfusions(),)
