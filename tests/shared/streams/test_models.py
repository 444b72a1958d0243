"""Notifications as they arrive: sequencers, decoded keys, a bad record failing only itself."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.streams.models import (
    CREATED,
    REMOVED,
    StreamRecord,
    StreamSpec,
    parse_notification,
    sequencer_newer,
    stream_id,
)
from groundswell.shared.streams.service import input_doc, newer


def test_sequencers_compare_as_hex_of_equal_length():
    assert sequencer_newer("10", "9")  # 0x10 after 0x09, though "10" < "9" as strings
    assert sequencer_newer("0055A3F2B1", "55A3F2B0")
    assert not sequencer_newer("55a3f2b1", "0055A3F2B1")  # the same, padded and cased
    assert not sequencer_newer("9", "10")


def record(name: str, key: str, **obj) -> dict:
    return {"eventName": name, "s3": {"bucket": {"name": "b"}, "object": {"key": key, **obj}}}


def test_a_notification_gives_its_object_events_and_names_a_bad_record():
    body = {
        "Records": [
            record(
                "ObjectCreated:Put",
                "corpus/claims/a+b%2Bc.jsonl",
                size=3,
                eTag='"e1"',
                sequencer="0A",
            ),
            record("s3:ObjectRemoved:Delete", "corpus/documents/x.txt", sequencer="0B"),
            {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "b"}, "object": {}}},
            record("ObjectRestore:Completed", "corpus/documents/y.txt"),
            record("ObjectCreated:Copy", "corpus/documents/z.txt", sequencer="not hex"),
        ]
    }
    events, errors, other = parse_notification(json.dumps(body), "sqs:m1", received=100.0)
    assert [(e.action, e.key, e.etag, e.sequencer) for e in events] == [
        (CREATED, "corpus/claims/a b+c.jsonl", "e1", "0A"),
        (REMOVED, "corpus/documents/x.txt", None, "0B"),
    ]
    assert all(e.time == 100.0 for e in events)  # no eventTime: when it was received
    assert other == 1
    assert [str(e) for e in errors] == [
        "sqs:m1:3: s3.object.key: Field required",
        "sqs:m1:5: s3.object.sequencer: String should match pattern '^[0-9A-Fa-f]*$'",
    ]
    # Through SNS, and the test event S3 sends when notifications are configured.
    wrapped = {"Type": "Notification", "Message": json.dumps(body)}
    assert len(parse_notification(json.dumps(wrapped), "n", 1.0)[0]) == 2
    assert parse_notification(b'{"Event": "s3:TestEvent"}', "n", 1.0) == ([], [], 1)
    assert str(parse_notification(b"{", "n", 1.0)[1][0]).startswith("n: not JSON")


def test_an_event_is_applied_only_when_newer():
    events, _, _ = parse_notification(
        {"Records": [record("ObjectCreated:Put", "k", eTag="e2", sequencer="0C")]}, "n", 1.0
    )
    (event,) = events
    assert newer(event, None)
    assert newer(event, {"sequencer": "0B", "present": False})
    assert not newer(event, {"sequencer": "0C", "present": True, "etag": "e2"})  # a repeat
    assert not newer(event, {"sequencer": "0D", "present": False})  # late and older
    # Without sequencers (found by listing): by the object state it describes.
    assert not newer(event, {"sequencer": None, "present": True, "etag": "e2"})
    assert newer(event, {"sequencer": None, "present": True, "etag": "e1"})


def test_a_stream_is_one_per_corpus_and_policy_version_and_knows_its_keys():
    assert stream_id("s3://b/p", "default@1") != stream_id("s3://b/p", "default@2")
    spec = StreamSpec(corpus="s3://b/p/", policy="default")
    assert spec.corpus == "s3://b/p"
    with pytest.raises(ValueError, match="S3 prefix"):
        StreamSpec(corpus="/a/folder")
    with pytest.raises(ValueError, match="segments"):
        StreamSpec(corpus="s3://b/p/../q")  # as a run refuses it
    stream = StreamRecord(id="st-x", corpus="s3://b/p", policy="default@1", created_at="t")
    assert stream.relative("b", "p/claims/a.jsonl") == "claims/a.jsonl"
    assert stream.relative("b", "pq/claims/a.jsonl") is None
    assert stream.relative("other", "p/claims/a.jsonl") is None
    whole = StreamRecord(id="st-y", corpus="s3://b", policy="default@1", created_at="t")
    assert whole.relative("b", "documents/a.txt") == "documents/a.txt"
    assert [input_doc(k) for k in ("documents/a.pdf", "labels/b.json", "schema.json")] == [
        "a",
        "b",
        None,
    ]


def test_reconciliation_differences_say_whether_the_run_shows_them():
    from groundswell.shared.streams.reconcile import differences

    kept = {"documents/a.txt": [3, "e1"], "claims/a.jsonl": [5, "e2"]}
    same = dict(kept)
    assert list(differences(same, kept, True)) == []
    changed = {"documents/a.txt": [3, "e1"], "claims/a.jsonl": [6, "e3"]}
    assert list(differences(changed, kept, True)) == [
        ("created", "claims/a.jsonl", [6, "e3"], True)
    ]
    assert list(differences(None, kept, True)) == [
        ("removed", "documents/a.txt", None, True),
        ("removed", "claims/a.jsonl", None, True),
    ]
    # A document with no row: new to the run. A row that kept no entries (a failed unit):
    # the stream's own state of each key decides.
    assert {d[3] for d in differences(same, None, False)} == {True}
    assert {d[3] for d in differences(same, None, True)} == {False}
