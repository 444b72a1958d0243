"""Hook signatures, bodies and configuration, without services."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.hooks.models import HookIn, delivery_id
from groundswell.shared.hooks.service import HookError, backoff, global_hooks, slack_text
from groundswell.shared.hooks.signing import sign, verify
from groundswell.shared.settings import Settings


def test_a_signature_checks_body_secret_and_age():
    body = b'{"type": "run.finished"}'
    header = sign("s3cret", body, timestamp=1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert verify("s3cret", header, body, now=1_700_000_100)
    assert not verify("other", header, body, now=1_700_000_100)
    assert not verify("s3cret", header, body + b" ", now=1_700_000_100)
    assert not verify("s3cret", header, body, now=1_700_000_000 + 301)  # a replay
    assert not verify("s3cret", "v1=abc", body)


def test_global_hooks_come_from_settings_and_a_bad_one_is_named():
    settings = Settings(
        hooks=[{"url": "https://example.test/h", "events": ["failed"]}], hook_secret="k"
    )
    (hook,) = global_hooks(settings)
    assert hook.id.startswith("global-") and hook.events == ["failed"]
    assert hook.secret.get_secret_value() == "k" and hook.owner is None
    with pytest.raises(HookError, match=r"GROUNDSWELL_HOOKS\[0\]\.url"):
        global_hooks(Settings(hooks=[{"url": "ftp://x.test/h"}]))
    with pytest.raises(HookError, match=r"GROUNDSWELL_HOOKS\[0\]\.events\.0"):
        global_hooks(Settings(hooks=[{"url": "https://x.test", "events": ["done"]}]))


def test_backoff_doubles_up_to_its_cap():
    settings = Settings(hook_backoff_seconds=2, hook_backoff_max_seconds=10)
    assert [backoff(settings, n) for n in range(1, 6)] == [2, 4, 8, 10, 10]


def test_a_delivery_id_is_stable_and_a_slack_body_has_text():
    assert delivery_id("r", "h", "finished") == delivery_id("r", "h", "finished")
    assert delivery_id("r", "h", "finished") != delivery_id("r", "h", "failed")
    body = {
        "type": "run.gate_failed",
        "run": {"id": "r1", "policy": "default@1", "state": "succeeded"},
        "rates": {"grounding_rate": 0.531, "escape_rate": None, "review_rate": 0.25},
        "gate": {"status": "fail"},
    }
    text = slack_text(body)["text"]
    assert text == (
        "groundswell run r1 (default@1) gate_failed: succeeded; grounding 53.1%; escapes n/a; "
        "review 25.0%; gate fail"
    )
    assert json.loads(json.dumps(slack_text(body)))["groundswell"] == body
    assert HookIn(url="http://127.0.0.1:9/x").events == ["finished", "failed", "gate_failed"]
