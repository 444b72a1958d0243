"""The 131 edge cases of reference/gtrex/cases.jsonl, with gtrex 1.1.0's recorded output.

Verification and verify_at cases are checked under all three built-in policies (with the
case's overrides). Repair is not part of the engine, but every repair case records the
certificate of the claim as given (``before``) and of the stored text (``after``), and those
are verification results, so they are checked too.
"""

from __future__ import annotations

import json

import pytest

from groundswell.shared.settings import get_settings
from groundswell.shared.verify import Verifier, VerifyPolicy, get_verify_policy
from tests.shared.verify.oracle import COMPARED, DETAIL, POLICIES, differences

CASES_PATH = get_settings().shared_corpus.parent / "reference" / "gtrex" / "cases.jsonl"

# Overrides that only concern repair, which verification ignores.
REPAIR_ONLY = {"salvage_policy", "repair_mode"}


def _cases() -> list[dict]:
    with CASES_PATH.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


CASES = _cases() if CASES_PATH.exists() else []


def _policy(name: str, overrides: dict) -> VerifyPolicy:
    policy = get_verify_policy(name)
    kept = {k: v for k, v in overrides.items() if k not in REPAIR_ONLY}
    return policy.with_changes(**kept) if kept else policy


def test_all_cases_present() -> None:
    assert len(CASES) == 131
    assert sum(c["mode"] == "repair" for c in CASES) == 22


@pytest.mark.parametrize("case", [c for c in CASES if c["mode"] != "repair"], ids=lambda c: c["id"])
@pytest.mark.parametrize("name", POLICIES)
def test_verification_case(case: dict, name: str) -> None:
    expected = case["gtrex"][name]
    verifier = Verifier(case["source"], _policy(name, case.get("policy_overrides") or {}))
    try:
        if case["mode"] == "verify":
            got = verifier.verify(case["claim"]).as_dict()
        else:
            got = verifier.verify_at(case["claim"], case["start"], case["end"]).as_dict()
    except (TypeError, ValueError) as exc:
        got = {"error": {"type": type(exc).__name__}}
    if "error" in expected:
        assert got.get("error", {}).get("type") == expected["error"]["type"]
        return
    assert "error" not in got, got
    assert differences(got, expected, COMPARED + DETAIL) == {}
    assert got["source_sha256"] == expected["source_sha256"]


@pytest.mark.parametrize("case", [c for c in CASES if c["mode"] == "repair"], ids=lambda c: c["id"])
def test_repair_case_certificates(case: dict) -> None:
    result = case["gtrex"]["default"]
    verifier = Verifier(case["source"], _policy("default", case.get("policy_overrides") or {}))
    before = verifier.verify(case["claim"]).as_dict()
    assert differences(before, result["before"], COMPARED + DETAIL) == {}
    after = result.get("after")
    if after:
        stored = after["span_text"]
        assert differences(verifier.verify(stored).as_dict(), after, COMPARED + DETAIL) == {}
