"""Input records: a bad record fails alone, with file, line and field."""

from __future__ import annotations

import pytest

from groundswell.shared.corpus import (
    InputFileError,
    decode_document,
    doc_id_of,
    parse_candidates,
    parse_claims,
    parse_labels,
)


def test_claims_keep_good_lines_and_name_each_bad_one():
    data = b"\n".join(
        [
            b'{"id": "c1", "claim": "Revenue rose", "model": "m-1", "extra": {"k": [1]}}',
            b'{"id": "c2", "claim": ',  # broken JSON
            b'{"id": "c3"}',  # no claim
            b'{"id": "c4", "claim": 42}',  # wrong type
            b"[1, 2]",  # not an object
            b"",
            b'{"id": "c5", "claim": "x", "start": 3}',  # start without end
            b'{"id": "c6", "claim": "ok", "start": 1, "end": 3}',
        ]
    )
    records, errors = parse_claims(data, "claims/d.jsonl")
    assert [(line, r["id"]) for line, r in records] == [(1, "c1"), (8, "c6")]
    # Unread fields are carried through untouched and in order.
    assert list(records[0][1]) == ["id", "claim", "model", "extra"]
    assert [(e.file, e.line, e.field) for e in errors] == [
        ("claims/d.jsonl", 2, None),
        ("claims/d.jsonl", 3, "claim"),
        ("claims/d.jsonl", 4, "claim"),
        ("claims/d.jsonl", 5, None),
        ("claims/d.jsonl", 7, "end"),
    ]
    assert "invalid JSON" in errors[0].message
    assert str(errors[1]).startswith("claims/d.jsonl:3: claim:")


def test_a_document_that_is_not_utf8_names_the_byte_and_line():
    with pytest.raises(InputFileError) as info:
        decode_document(b"line one\nline \xff two", "documents/bad.txt")
    error = info.value.error
    assert (error.file, error.line) == ("documents/bad.txt", 2)
    assert "offset 14" in error.message


def test_a_candidates_file_must_be_a_list():
    with pytest.raises(InputFileError, match="JSON array, not a dict"):
        parse_candidates(b'{"field": "x"}', "candidates/d.json")
    with pytest.raises(InputFileError, match="invalid JSON") as info:
        parse_candidates(b'[{"field": "x"},\n  oops]', "candidates/d.json")
    assert info.value.error.line == 2
    assert parse_candidates(b'[{"field": "x"}, 3]', "candidates/d.json") == (
        [{"field": "x"}, 3],
        [],
    )


def test_labels_are_booleans_by_id():
    labels, errors = parse_labels(
        b'{"claims": {"c1": true}, "candidates": {"k": false}}', "labels/d.json"
    )
    assert labels.claims == {"c1": True} and labels.candidates == {"k": False} and not errors


def test_a_bad_label_is_reported_and_left_out():
    data = b'{"claims": {"c1": true,\n  "q1": "yes"},\n "candidates": {"k": 1}, "extra": {}}'
    labels, errors = parse_labels(data, "labels/d.json")
    assert labels.claims == {"c1": True} and labels.candidates == {}
    assert [(e.file, e.line, e.field) for e in errors] == [
        ("labels/d.json", 2, "claims.q1"),
        ("labels/d.json", 3, "candidates.k"),
        ("labels/d.json", 3, "extra"),
    ]
    assert "true or false" in errors[0].message
    # A file that is not labels at all is one error, and no labels.
    labels, errors = parse_labels(b"[1, 2]", "labels/d.json")
    assert labels.claims == {} and len(errors) == 1 and "object" in errors[0].message
    labels, errors = parse_labels(b"{oops", "labels/d.json")
    assert labels.claims == {} and errors[0].line == 1


@pytest.mark.parametrize(
    ("key", "prefix", "expected"),
    [
        ("documents/a.b.txt", "documents/", "a.b"),
        ("claims/x.jsonl", "claims/", "x"),
        ("claims/x.json", "claims/", None),
        ("documents/sub/x.txt", "documents/", None),
        ("documents/.txt", "documents/", None),
    ],
)
def test_doc_id_of_listed_keys(key, prefix, expected):
    assert doc_id_of(key, prefix) == expected
