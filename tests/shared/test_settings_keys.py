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
        (f"alice:reviews:{hash_api_key('x')}", "scopes are runs, review, record and admin"),
        (f"alice:review+review:{hash_api_key('x')}", "each once"),
        (f"alice::{hash_api_key('x')}", "scopes are runs, review, record and admin"),
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


# -- corpus scopes: the corpora a team's key may submit and read (issue 25 item 8) ----------


def test_an_entry_may_end_with_the_corpora_its_key_sees(tmp_path):
    team_a, team_b = tmp_path / "a", tmp_path / "b"
    settings = Settings(
        allowed_corpora=f"{tmp_path},s3://shared",
        api_key_hashes=f"ana:runs+review:{hash_api_key('ka')}:{team_a}|s3://shared/a,"
        f"all:runs:{hash_api_key('kb')}",
    )
    ana, everyone = settings.api_keys
    assert ana.corpora == (str(team_a), "s3://shared/a") and ana.limited
    assert ana.scopes == {"runs", "review"}
    assert ana.sees(str(team_a / "docs")) and ana.sees(str(team_a))
    assert ana.sees("s3://shared/a/2026") and ana.sees("s3://shared/a")
    assert not ana.sees(str(team_b)) and not ana.sees(str(tmp_path / "ab"))
    assert not ana.sees("s3://shared/ab") and not ana.sees("s3://shared")
    assert not everyone.limited and everyone.corpora == ()
    assert everyone.sees(str(team_b)) and everyone.sees("s3://elsewhere/x")


def test_a_key_does_not_see_another_prefix_through_dot_segments():
    # S3-compatible stores (MinIO, SeaweedFS) normalize "..": s3://shared/a/../b is team b's.
    key = parse_api_key(f"ana:runs:{hash_api_key('k')}:s3://shared/a")
    assert not key.sees("s3://shared/a/../b") and not key.sees("s3://shared/a/./../b/x")
    assert key.sees("s3://shared/a/x..y")


def test_a_key_does_not_see_through_a_link_out_of_its_corpora(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "to-b").symlink_to(tmp_path / "b")
    key = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'a'}")
    assert key.sees(str(tmp_path / "a")) and not key.sees(str(tmp_path / "a" / "to-b"))


@pytest.mark.parametrize(
    ("corpora", "said"),
    [
        ("", "a corpus after the digest"),
        ("/data/a||/data/b", "a corpus after the digest"),
        ("/elsewhere/a", "/elsewhere/a is not under GROUNDSWELL_ALLOWED_CORPORA"),
        ("s3://other/a", "s3://other/a is not under GROUNDSWELL_ALLOWED_CORPORA"),
    ],
)
def test_a_key_s_corpora_lie_under_the_allowed_corpora(corpora, said):
    entry = f"ana:runs:{hash_api_key('k')}:{corpora}"
    with pytest.raises(ValidationError) as caught:
        Settings(allowed_corpora="/data,s3://shared", api_key_hashes=entry)
    message = str(caught.value)
    assert "api_key_hashes" in message and "ana" in message and said in message


def test_a_digest_alone_has_no_corpora_to_give():
    with pytest.raises(ValidationError) as caught:
        Settings(allowed_corpora="/data", api_key_hashes=f"{hash_api_key('k')}:/data")
    assert "NAME:SCOPE" in str(caught.value)


def _api_key_new(*args: str, env: dict[str, str] | None = None):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    return CliRunner().invoke(main, ["api-key", "new", *args], env=env)


def test_api_key_new_prints_an_entry_with_the_team_s_corpora(tmp_path):
    env = {"GROUNDSWELL_ALLOWED_CORPORA": f"{tmp_path},s3://shared"}
    made = _api_key_new(
        "--name",
        "ana",
        "--scopes",
        "runs+review",
        "--corpora",
        str(tmp_path / "a"),
        "--corpora",
        "s3://shared/a",
        env=env,
    )
    assert made.exit_code == 0, made.output
    entry = next(line for line in made.output.splitlines() if line.startswith("entry:"))
    settings = Settings(api_key_hashes=entry.split()[1], allowed_corpora=f"{tmp_path},s3://shared")
    (key,) = settings.api_keys
    assert key.name == "ana" and key.scopes == {"runs", "review"}
    assert key.corpora == (str(tmp_path / "a"), "s3://shared/a")


def test_api_key_new_refuses_corpora_outside_the_allowed_ones_and_without_a_name(tmp_path):
    env = {"GROUNDSWELL_ALLOWED_CORPORA": str(tmp_path)}
    outside = _api_key_new("--name", "ana", "--corpora", "/elsewhere", env=env)
    assert outside.exit_code == 2 and "not under GROUNDSWELL_ALLOWED_CORPORA" in outside.output
    nameless = _api_key_new("--corpora", str(tmp_path), env=env)
    assert nameless.exit_code == 2 and "--corpora needs --name" in nameless.output


RATES = ["10/second", "5 per minute", "100/hour", "3 per 2 minutes", " 7 / day ", "1/Seconds",
         "2/month", "9/years", "10/2hours", "", "ten/second", "10/fortnight", "10 second",
         "10/second; 5/minute", "/second", "10/-1 minute", "10//minute", "10 per per hour"]  # fmt: skip


@pytest.mark.parametrize("rate", RATES)
def test_a_rate_is_accepted_exactly_when_the_api_limiter_parses_it(rate):
    """The settings check rates by pattern (no `limits` import in every process); the API's
    limiter must parse every rate the settings let through, and none is refused that it
    would parse as one rate."""
    from limits import parse

    try:
        parse(rate)
        parsed = ";" not in rate  # several rates: the settings take one
    except ValueError:
        parsed = False
    try:
        Settings(api_rate_per_key=rate)
        accepted = True
    except ValueError as exc:
        assert "a rate is 'N/second'" in str(exc)
        accepted = False
    assert accepted == parsed, rate
