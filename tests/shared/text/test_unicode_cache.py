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


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # cut short mid-write by another tool: not JSON
        lambda raw: b"\xff\xfe garbage",  # not UTF-8
        lambda raw: b"",  # empty
        lambda raw: b"[1, 2, 3]",  # JSON, but no tables
    ],
)
def test_a_corrupt_file_is_rebuilt_silently(cache, monkeypatch, damage):
    unicode.tables()
    path = unicode.cache_path()
    path.write_bytes(damage(path.read_bytes()))
    unicode.tables.cache_clear()
    calls = scans(monkeypatch)
    assert unicode.tables() == unicode.build_tables()  # no error reaches the caller
    assert len(calls) == 2  # the rebuild and the comparison
    assert unicode._read(path) == unicode.tables()  # the file is whole again


def test_a_write_is_a_rename_of_a_whole_file(cache, monkeypatch):
    """Nothing is written at the cache's own name: a whole temporary file is renamed there,
    so a reader at any moment finds the old file, the new one, or none."""
    made = unicode.build_tables()
    path = unicode.cache_path()
    renames: list[tuple[Path, Path]] = []
    real_replace = unicode.os.replace

    def replace(src, dst):
        assert not Path(dst).exists()  # nothing half-written at the name before the rename
        assert unicode._read(Path(src)) == made  # the temporary file is already whole
        renames.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(unicode.os, "replace", replace)
    unicode._write(path, made)
    assert [dst for _, dst in renames] == [path]
    assert renames[0][0].parent == path.parent and renames[0][0] != path
    assert sorted(p.name for p in cache.iterdir()) == [path.name]


def test_concurrent_builders_in_threads_leave_one_whole_file(cache):
    import threading

    made = unicode.build_tables()
    path = unicode.cache_path()
    start = threading.Barrier(8)

    def build() -> None:
        start.wait()
        for _ in range(5):
            unicode._write(path, made)

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert unicode._read(path) == made
    assert sorted(p.name for p in cache.iterdir()) == [path.name]  # no temporary file left


def test_concurrent_builder_processes_agree_and_leave_one_whole_file(cache):
    """Four processes find no cache and build it at the same time: each gets the tables the
    database gives, and one whole file is left."""
    import os
    import subprocess
    import sys

    code = (
        "from groundswell.shared.text import unicode\n"
        "from groundswell.shared.canonical import json_sha256\n"
        "t = unicode.tables()\n"
        "print(json_sha256({'nfkc': t.nfkc, 'casefold_long': t.casefold_long}))\n"
    )
    env = {**os.environ, "GROUNDSWELL_CACHE_DIR": str(cache)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4
    made = unicode.build_tables()
    from groundswell.shared.canonical import json_sha256

    assert set(outs) == {json_sha256({"nfkc": made.nfkc, "casefold_long": made.casefold_long})}
    path = unicode.cache_path()
    assert unicode._read(path) == made
    assert sorted(p.name for p in cache.iterdir()) == [path.name]
