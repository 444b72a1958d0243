"""check-receipt of receipts the guarded policy wrote: they re-derive under the guard settings
they record; a tampered decision, tampered or invalid settings, or another revision is a
reported difference."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from groundswell.shared.admit import admit_packet
from groundswell.shared.admit.digest import digest
from groundswell.shared.guarded import DEFAULT_GUARD, GUARD_REVISION
from groundswell.shared.guarded.rederive import check_receipt
from groundswell.shared.policies import resolve_policy
from tests.shared.admit.guarded_packet import CODE, escaping_packet


@pytest.fixture(scope="module")
def packet() -> dict[str, Any]:
    return escaping_packet()


@pytest.fixture(scope="module")
def guarded(packet) -> dict[str, Any]:
    return admit_packet(packet, resolve_policy("guarded"))


def _check(receipt: dict[str, Any], packet: dict[str, Any]) -> list[str]:
    return check_receipt(receipt, packet["document"], packet["schema"], packet["candidates"])


def _resealed(receipt: dict[str, Any]) -> dict[str, Any]:
    """The receipt with its own digest made anew, so only the re-derivation can tell."""
    body = {k: v for k, v in receipt.items() if k != "receipt_sha256"}
    return {**body, "receipt_sha256": digest("receipt", body)}


def test_a_guarded_receipt_records_its_guard_and_holds(packet, guarded):
    guard = guarded["guard"]
    assert guard["policy"] == "guarded" and guard["revision"] == GUARD_REVISION
    assert guard["settings"] == DEFAULT_GUARD.as_dict()
    members = list(guarded)
    assert members.index("guard") == members.index("policy_sha256") + 1
    decision = guarded["decisions"][0]
    assert decision["outcome"] == "needs_verification" and CODE in decision["codes"]
    assert [f["code"] for f in decision["guard"]] == [CODE]
    assert _check(guarded, packet) == []


def test_a_receipt_without_guard_re_derives_as_groundgate(packet, guarded):
    plain = admit_packet(packet)
    assert "guard" not in plain and plain["decisions"][0]["outcome"] == "admitted"
    assert _check(plain, packet) == []
    # a guarded receipt with its guard member taken off is groundgate's no longer
    stripped = _resealed({k: v for k, v in guarded.items() if k != "guard"})
    problems = _check(stripped, packet)
    assert "guard differs" not in problems  # no guard: re-derived by groundgate's procedure
    assert any(p.startswith("decision 0") and "outcome" in p for p in problems), problems


def test_a_tampered_decision_is_reported(packet, guarded):
    tampered = copy.deepcopy(guarded)
    tampered["decisions"][0]["outcome"] = "admitted"
    assert "receipt_sha256 does not match the receipt's own content" in _check(tampered, packet)
    problems = _check(_resealed(tampered), packet)
    cid = packet["candidates"][0]["id"]
    assert problems == [f"decision 0 (candidate {cid!r}) differs in outcome"]
    findings = copy.deepcopy(guarded)
    findings["decisions"][0]["guard"] = []
    assert _check(_resealed(findings), packet) == [
        f"decision 0 (candidate {cid!r}) differs in guard"
    ]


def test_tampered_guard_settings_are_reported(packet, guarded):
    tampered = copy.deepcopy(guarded)
    tampered["guard"]["settings"]["column"] = "off"  # the settings re-derive, the digest not
    # the column guard was the decision's one flag: with it off, the outcome (and so the
    # summary) moves too
    cid = packet["candidates"][0]["id"]
    moved = [
        "summary differs",
        f"decision 0 (candidate {cid!r}) differs in codes, guard, outcome",
    ]
    assert _check(_resealed(tampered), packet) == ["guard differs", *moved]
    # the guard's digest made anew too: its guard member holds, its decision does not (made
    # with the column guard on, which the settings now say is off)
    settings = tampered["guard"]["settings"]
    tampered["guard"]["sha256"] = digest(
        "guard", {"revision": GUARD_REVISION, "settings": settings}
    )
    assert _check(_resealed(tampered), packet) == moved


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"settings": {"column": "sometimes"}}, "guard settings are invalid: guard.column"),
        ({"settings": {"nosuch": True}}, "guard settings are invalid: unknown guard settings"),
        ({"settings": ["column"]}, "guard settings are invalid: guard must be an object"),
        ({"revision": "groundswell-guard/0"}, "guard is of revision 'groundswell-guard/0'"),
        ({"policy": "other"}, "guard names the policy 'other'"),
    ],
)
def test_guard_settings_that_cannot_be_re_derived_are_a_difference(
    packet, guarded, change, expected
):
    broken = _resealed({**guarded, "guard": {**guarded["guard"], **change}})
    problems = _check(broken, packet)
    assert len(problems) == 1 and problems[0].startswith(expected), problems
    not_an_object = _resealed({**guarded, "guard": "guarded"})
    assert _check(not_an_object, packet) == [
        "guard is not an object of the guarded policy's settings"
    ]


def test_admit_alone_says_a_guarded_receipt_is_guarded_s_to_re_derive(packet, guarded):
    # admit/ knows nothing of the guards built on it: its own check names the one that does
    from groundswell.shared.admit.rederive import check_receipt as check_admitted

    args = (packet["document"], packet["schema"], packet["candidates"])
    assert check_admitted(guarded, *args) == [
        "the receipt is the guarded policy's (it has a guard member): "
        "re-derive it with groundswell.shared.guarded.rederive.check_receipt"
    ]
    assert check_admitted(admit_packet(packet), *args) == []
