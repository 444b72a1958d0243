"""The Unicode tables: derived once, cached per database, checked on every read."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path

import pytest

from groundswell.shared.text import unicode


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUNDSWELL_CACHE_DIR", str(tmp_path))
    unicode.tables.cache_clear()
    yield tmp_path
    unicode.tables.cache_clear()


def scans(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = unicode.build_tables

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(unicode, "build_tables", counted)
    return calls


def test_built_once_then_read_from_the_cache(cache, monkeypatch):
    calls = scans(monkeypatch)
    first = unicode.tables()
    path = unicode.cache_path()
    assert path.parent == cache and unicodedata.unidata_version in path.name
    assert json.loads(path.read_text())["unidata_version"] == unicodedata.unidata_version
    unicode.tables.cache_clear()
    assert unicode.tables() == first == unicode.build_tables()
    assert len(calls) == 2  # the first tables() and the comparison above; not the read


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d["nfkc"].update({"\u00b2": "2"}),  # a superscript: never folded
        lambda d: d["nfkc"].update({"\ufb01": "fl"}),  # a wrong fold
        lambda d: d["casefold_long"].update({"A": "a"}),  # not a long case folding
        lambda d: d.update(unidata_version="9.0.0"),
        lambda d: d.pop("nfkc"),
        lambda d: d["nfkc"].pop("\ufb01"),  # an entry missing: the digest no longer matches
    ],
)
def test_a_wrong_or_foreign_file_is_built_anew(cache, monkeypatch, spoil):
    unicode.tables()
    path = unicode.cache_path()
    data = json.loads(path.read_text())
    spoil(data)
    path.write_text(json.dumps(data))
    unicode.tables.cache_clear()
    calls = scans(monkeypatch)
    assert unicode.tables() == unicode.build_tables()
    assert len(calls) == 2
    assert json.loads(path.read_text())["nfkc"] == unicode.tables().nfkc  # written again


def test_the_key_names_the_derivation(cache):
    # another version of this module (another derivation) reads another file
    digest = hashlib.sha256(Path(unicode.__file__).read_bytes()).hexdigest()[:16]
    assert (
        unicode.cache_path().name == f"unicode-tables-{unicodedata.unidata_version}-{digest}.json"
    )


def test_a_cache_folder_that_cannot_be_written_costs_the_scan(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GROUNDSWELL_CACHE_DIR", str(blocker / "cache"))
    unicode.tables.cache_clear()
    try:
        assert unicode.tables() == unicode.build_tables()
    finally:
        unicode.tables.cache_clear()
    assert list(tmp_path.iterdir()) == [blocker]


def test_the_quick_checks_agree_with_the_per_character_derivation():
    """The reader's checks in bulk (one NFKC of all keys joined by NUL) accept exactly the
    derived tables, and the composite numerals found with a regex are those of the per-character
    rule."""
    made = unicode.build_tables()
    assert unicode._folds_check(made.nfkc)
    for ch, out in made.nfkc.items():
        assert unicode._nfkc_fold(ch) == out
    assert made.composite_numeric == frozenset(
        ch
        for ch, out in made.nfkc.items()
        if not ch.isdecimal() and any(c.isdecimal() for c in out)
    )
    for spoil in ({"\u00b2": "2"}, {"a": "a"}, {"\ufb01": "f\x00i"}, {"ab": "ab"}):
        assert not unicode._folds_check({**made.nfkc, **spoil})
