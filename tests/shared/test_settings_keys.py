"""API key entries: the digest alone (every scope, as before names existed), or a name and
scopes; a bad entry is refused naming the setting."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from groundswell.shared.settings import API_SCOPES, Settings, hash_api_key, parse_api_key


def test_a_digest_alone_has_every_scope_and_a_name_from_the_digest():
    digest = hash_api_key("k1")
    key = parse_api_key(digest)
    assert key.digest == digest and key.scopes == frozenset(API_SCOPES)
    assert key.name == "key-" + digest[7:19]
    assert all(key.allows(scope) for scope in API_SCOPES)


def test_a_named_entry_has_its_scopes_and_admin_allows_everything():
    reviewer = parse_api_key(f"alice:review:{hash_api_key('k2')}")
    assert reviewer.name == "alice" and reviewer.scopes == {"review"}
    assert reviewer.allows("review") and not reviewer.allows("runs")
    both = parse_api_key(f"ops.team:runs+review:{hash_api_key('k3')}")
    assert both.scopes == {"runs", "review"} and not both.allows("admin")
    assert parse_api_key(f"root:admin:{hash_api_key('k4')}").allows("runs")


def test_settings_read_both_forms_from_one_comma_separated_value():
    value = f"{hash_api_key('a')}, alice:review:{hash_api_key('b')}"
    keys = Settings(api_key_hashes=value).api_keys
    assert [k.name for k in keys] == ["key-" + hash_api_key("a")[7:19], "alice"]


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("sha256:abc", "NAME:SCOPE"),
        (f"alice:reviews:{hash_api_key('x')}", "scopes are runs, review and admin"),
        (f"alice:review+review:{hash_api_key('x')}", "each once"),
        (f"alice::{hash_api_key('x')}", "scopes are runs, review and admin"),
        (f"a b:review:{hash_api_key('x')}", "the key name 'a b'"),
        (f"alice:review:{hash_api_key('x')},alice:runs:{hash_api_key('y')}", "alice is given"),
        (f"{hash_api_key('x')},bob:runs:{hash_api_key('x')}", "is given twice"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_setting(entry, said):
    with pytest.raises(ValidationError) as caught:
        Settings(api_key_hashes=entry)
    message = str(caught.value)
    assert "api_key_hashes" in message and said in message
