"""The review formats: what groundswell writes validates against groundgate's JSON Schemas,
and store keys and answer-log chains are groundgate's."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from groundswell.shared.review.formats import (
    DEFAULT_REVIEW_POLICY,
    ReviewError,
    chain,
    check_chain,
    object_key,
    reviewer_key,
)
from groundswell.shared.review.tasks import TaskMaker
from tests.shared.review.oracle import POLICIES


def schema_of(name: str) -> dict:
    text = resources.files("groundgate.review").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_of(name))


def test_review_policies_validate() -> None:
    check = validator("review-policy@1")
    for policy in [DEFAULT_REVIEW_POLICY, *POLICIES]:
        check.validate(policy)
    with pytest.raises(jsonschema.ValidationError):
        check.validate({**DEFAULT_REVIEW_POLICY, "agree": 0})


def test_every_task_validates(cases) -> None:
    check = validator("task@1")
    n = 0
    for case in cases:
        for task in TaskMaker(case.ours).tasks(POLICIES[1]):
            check.validate(task)
            n += 1
    assert n > 500
    with pytest.raises(jsonschema.ValidationError):
        check.validate({**task, "mode": "maybe"})


def test_keys_and_chains_are_groundgates(tmp_path) -> None:
    from groundgate.store import FolderStore, key
    from groundgate.store import reviewer_key as their_reviewer_key

    assert object_key("task@1", b'{"a":1}') == key("task@1", b'{"a":1}')
    assert reviewer_key("Ann Lee") == their_reviewer_key("Ann Lee")
    records = [{"format": "answer@1", "n": n, "text": "é\u2028"} for n in range(3)]
    log = ("answers", key("packet@1", b"{}"), their_reviewer_key("ann"))
    with FolderStore(tmp_path) as store:
        for r in records:
            store.append(log, r)
        stored = store.read(log)
    assert chain(records) == stored
    check_chain(stored)
    stored[1] = {**stored[1], "n": 9}
    with pytest.raises(ReviewError, match="answer 2"):
        check_chain(stored)
    with pytest.raises(ReviewError, match="sequence"):
        chain([{"sequence": 1}])
