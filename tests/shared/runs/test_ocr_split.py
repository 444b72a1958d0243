"""A long scan shared out on the read queue (runs/reading.py), without an engine: the order of
a read unit and of a helper over pieces in a real store, and the pieces' JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundswell.shared.read.ocr import OcrPage, OcrWord, page_from_json, page_json
from groundswell.shared.runs.reading import (
    Pieces,
    help_order,
    help_read,
    page_list,
    page_ranges,
    reader,
    reading_key,
    split_order,
)
from groundswell.shared.settings import Settings, get_settings
from groundswell.shared.storage import open_store

SHA = "ab" * 32


def fake_page(number: int) -> OcrPage:
    word = OcrWord(f"word{number}", 10.5, 20.25, 40.0, 31.75, 91.5)
    return OcrPage(
        number, 612.0, 792.0, 300, [[[word, OcrWord("two", 41.0, 20.0, 60.0, 31.0, 88.0)]]]
    )


@pytest.fixture
def store(tmp_path: Path):
    return open_store(str(tmp_path / "out"), Settings())


@pytest.fixture
def split_at(monkeypatch):
    def use(pages: int, ranges: int = 32) -> None:
        monkeypatch.setenv("GROUNDSWELL_OCR_SPLIT_PAGES", str(pages))
        monkeypatch.setenv("GROUNDSWELL_OCR_SPLIT_RANGES", str(ranges))
        get_settings.cache_clear()

    yield use
    get_settings.cache_clear()


def test_a_page_is_stored_as_json_and_read_back_equal_with_its_number_types():
    page = fake_page(3)
    body = json.loads(json.dumps(page_json(page)))
    back = page_from_json(body)
    assert back == page
    assert type(back.dpi) is int and type(back.width) is float  # the reading's bytes follow
    assert page_from_json({**body, "paragraphs": [[["not a word"]]]}) is None
    assert page_from_json({"page": 0}) is None


def test_pages_are_cut_into_even_ranges_and_written_as_a_page_list():
    assert page_ranges(list(range(1, 11)), 4, 32) == [[1, 2, 3, 4], [5, 6, 7], [8, 9, 10]]
    assert [len(r) for r in page_ranges(list(range(1, 201)), 16, 32)] == [16] * 5 + [15] * 8
    assert len(page_ranges(list(range(1, 201)), 2, 8)) == 8  # at most ocr_split_ranges
    assert page_ranges([4, 9], 16, 32) == [[4, 9]]
    assert page_list([1, 2, 3, 7, 9, 10]) == "1-3,7,9-10"


def test_a_unit_sends_helpers_then_goes_back_from_the_far_ends_taking_stored_pieces(
    store, split_at
):
    split_at(3)
    pieces = Pieces(store, SHA, "reader-x")
    # A helper already stored pages 4 and 5 of its range (4-6) and 8 of the last (7-9).
    for n in (4, 5, 8):
        pieces.store(fake_page(n), 1.0)
    asked: list[list[int]] = []
    recognised: list[int] = []

    def recognise(n: int) -> OcrPage:
        recognised.append(n)
        return fake_page(n)

    pages = split_order(pieces, asked.append)(list(range(1, 10)), recognise)
    assert asked == [[4, 5, 6], [7, 8, 9]]
    assert [p.page for p in pages] == list(range(1, 10))
    assert pages == [fake_page(n) for n in range(1, 10)]
    # its own range forwards, then 9, (8 stored), 7, then 6, (5 and 4 stored)
    assert recognised == [1, 2, 3, 9, 7, 6]
    assert all(pieces.has(n) for n in range(1, 10))
    stored = json.loads(store.get(pieces.key(6)))
    assert stored["by"]["pid"] > 0 and stored["seconds"] >= 0
    assert pieces.key(6).startswith(reading_key(SHA, "reader-x")[: -len(".json")] + "/pages/")


def test_few_pages_are_recognised_in_turn_with_no_helper_and_no_piece(store, split_at):
    split_at(16)
    pieces = Pieces(store, SHA, "reader-x")
    asked: list[list[int]] = []
    pages = split_order(pieces, asked.append)([1, 2, 3], fake_page)
    assert [p.page for p in pages] == [1, 2, 3] and asked == []
    assert not any(pieces.has(n) for n in (1, 2, 3))
    split_at(0)  # never shared out
    split_order(pieces, asked.append)(list(range(1, 40)), fake_page)
    assert asked == []


def test_a_helper_skips_stored_pages_and_stops_when_the_reading_is_stored(store):
    pieces = Pieces(store, SHA, "reader-x")
    pieces.store(fake_page(2), 1.0)
    recognised: list[int] = []

    def recognise(n: int) -> OcrPage:
        recognised.append(n)
        if n == 3:  # the unit joins the pages while the helper recognises page 3
            store.put(pieces.reading, b"{}")
        return fake_page(n)

    help_order(pieces)([1, 2, 3, 4, 5], recognise)
    assert recognised == [1, 3]
    assert pieces.has(3) and not pieces.has(4)


def test_help_read_does_nothing_when_the_reading_is_stored_or_the_file_changed(store):
    data = b"%PDF-1.4 not really"
    import hashlib

    sha = hashlib.sha256(data).hexdigest()
    assert help_read(store, lambda: b"other bytes", "documents/a.pdf", sha, [1]) == "changed"
    assert help_read(store, lambda: None, "documents/a.pdf", sha, [1]) == "changed"
    store.put(reading_key(sha, reader()), b"{}")
    fetched: list[int] = []
    assert help_read(store, lambda: fetched.append(1) or data, "documents/a.pdf", sha, [1]) == (
        "stored"
    )
    assert fetched == []  # not even the source is read


def test_a_helper_meeting_a_read_error_stops_and_leaves_it_to_the_unit(store):
    import hashlib

    data = b"%PDF-1.4 a damaged file"
    sha = hashlib.sha256(data).hexdigest()
    assert help_read(store, lambda: data, "documents/a.pdf", sha, [1, 2]) == "failed"
    assert help_read(store, lambda: data, "documents/a.html", sha, [1]) == "failed"
    assert not list(store.list_pages(Pieces(store, sha, reader()).prefix))
