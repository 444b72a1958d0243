"""Character tables the normalization steps need, derived from Python's Unicode database.

Deriving them scans every code point below ``_SCAN_LIMIT`` (about 0.05 s of CPU, a third of a
small ``verify``), so the first process that needs them writes them to a cache file in the
per-user cache folder (setting ``cache_dir``), and later processes read that instead. Nothing
is shipped: the file is made on this machine, from this interpreter's database. Its name holds
``unicodedata.unidata_version`` and a digest of this module's source, so another database or
another derivation never reads it; the file holds a digest of its entries (one cut short is
not read), and every entry read is checked against the database (each fold is what
``unicodedata`` gives for that character) before it is used. A missing, unreadable,
foreign or wrong file is built anew; a cache folder that cannot be written costs the scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import cache
from itertools import compress
from pathlib import Path

UNICODE_VERSION = unicodedata.unidata_version

# Every character whose compatibility decomposition is non-trivial lies below this bound
# (checked in the tests against the whole code space).
_SCAN_LIMIT = 0x30000

FRACTION_SLASH = "\u2044"
_DECIMAL = re.compile(r"\d")  # str patterns: Unicode category Nd, which is str.isdecimal


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
    """The tables, from the cache file when it holds this database's, else derived (and
    written there for the next process)."""
    path = cache_path()
    if path is not None:
        cached = _read(path)
        if cached is not None:
            return cached
    made = build_tables()
    if path is not None:
        _write(path, made)
    return made


def cache_path() -> Path | None:
    """The cache file for this Unicode database and this module's derivation (None: this
    module's source cannot be read, so no key can name the derivation)."""
    from groundswell.shared.quick_settings import cache_dir

    try:
        source = Path(__file__).read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256(source).hexdigest()[:16]
    return Path(cache_dir()) / f"unicode-tables-{UNICODE_VERSION}-{digest}.json"


def _from_folds(nfkc: dict[str, str], casefold_long: dict[str, str]) -> UnicodeTables:
    # C-level passes (a regex per fold, str.isdecimal per key): this runs in every process
    holds_digit = compress(nfkc, map(_DECIMAL.search, nfkc.values()))
    composite = frozenset(ch for ch in holds_digit if not ch.isdecimal())
    return UnicodeTables(nfkc=nfkc, composite_numeric=composite, casefold_long=casefold_long)


def _read(path: Path) -> UnicodeTables | None:
    """The tables of ``path`` when it holds this database's and each entry checks out."""
    try:
        data = json.loads(path.read_bytes())
        if data["unidata_version"] != UNICODE_VERSION:
            return None
        nfkc, casefold_long = data["nfkc"], data["casefold_long"]
        if data["sha256"] != _digest(nfkc, casefold_long):
            return None  # cut short or changed: an entry could be missing
        if not _folds_check(nfkc):
            return None
        if not all(
            len(ch) == 1 and ch.casefold() == out and len(out) != 1
            for ch, out in casefold_long.items()
        ):
            return None
        return _from_folds(nfkc, casefold_long)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _folds_check(nfkc: dict[str, str]) -> bool:
    """Whether every entry is what :func:`_nfkc_fold` gives for its key, checked in a few
    C-level passes instead of a call per character: keys are single characters that decompose,
    none a superscript or subscript, each fold differs from its key, and the NFKC of all keys
    joined by NUL is all folds joined by NUL. NUL is a stable boundary of normalization (a
    starter that composes with nothing and stops reordering), so NFKC of the joined keys is the
    joined NFKC of each; a fold holding a NUL would split into too many parts and fail."""
    keys = "".join(nfkc)
    if len(keys) != len(nfkc) or "\x00" in keys:
        return False
    decompositions = list(map(unicodedata.decomposition, keys))
    if not all(decompositions):
        return False  # a key without a decomposition: the table holds none
    tags = " ".join(decompositions)  # a tag such as <super> only ever opens a decomposition
    if "<super>" in tags or "<sub>" in tags:
        return False
    if any(map(str.__eq__, nfkc, nfkc.values())):
        return False
    joined = unicodedata.normalize("NFKC", "\x00".join(keys))
    return joined.split("\x00") == list(nfkc.values())


def _digest(nfkc: dict[str, str], casefold_long: dict[str, str]) -> str:
    """A digest of the tables' entries, so that a file missing one is never read (keys and
    folds joined by separators no entry holds, which the reader checks)."""
    body = "\x01".join(
        "\x00".join(part) for part in (nfkc, nfkc.values(), casefold_long, casefold_long.values())
    )
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def _write(path: Path, made: UnicodeTables) -> None:
    """Write the tables once, atomically: a temporary file of this process and thread, then a
    rename, so a concurrent reader sees a whole file or none, and concurrent builders each put
    a whole file in place (the last rename wins; they hold the same tables)."""
    data = {
        "unidata_version": UNICODE_VERSION,
        "sha256": _digest(made.nfkc, made.casefold_long),
        "nfkc": made.nfkc,
        "casefold_long": made.casefold_long,
    }
    # a name of this process and thread: two builders never write into one temporary file
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # no folder to write in: nothing was written
            tmp.unlink(missing_ok=True)


def build_tables() -> UnicodeTables:
    """The tables, derived from the database: every code point below ``_SCAN_LIMIT``."""
    nfkc: dict[str, str] = {}
    casefold_long: dict[str, str] = {}
    decomposition = unicodedata.decomposition
    for code in range(_SCAN_LIMIT):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        folded = ch.casefold()
        if len(folded) != 1:
            casefold_long[ch] = folded
        if decomposition(ch):  # most characters have none: the scan's fast way past them
            out = _nfkc_fold(ch)
            if out is not None:
                nfkc[ch] = out
    return _from_folds(nfkc, casefold_long)


def _nfkc_fold(ch: str) -> str | None:
    """The fold of ``ch`` in the table (None: not in it): its NFKC, where that differs and
    the character is no superscript or subscript."""
    dec = unicodedata.decomposition(ch)
    if not dec or dec.startswith(("<super>", "<sub>")):
        return None
    out = unicodedata.normalize("NFKC", ch)
    return None if out == ch else out


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
