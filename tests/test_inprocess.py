"""The in-process Python API (issue 26): gtrex's and groundgate's call shapes, typed results,
a string refused where a list of claims is expected, and every policy the CLI knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import groundswell
from groundswell.shared.cli.app import main
from groundswell.shared.verify import Certificate

CORPUS = Path(__file__).resolve().parent.parent / "shared" / "sample" / "corpus"
DOC_ID = "brightwater-10q-q3-2025"
DOC = (CORPUS / "documents" / f"{DOC_ID}.txt").read_text(encoding="utf-8")
SCHEMA = json.loads((CORPUS / "schema.json").read_text())
CANDIDATES = json.loads((CORPUS / "candidates" / f"{DOC_ID}.json").read_text())
CLAIM = "Net revenue"


def test_a_string_where_a_list_of_claims_is_expected_is_refused_naming_the_right_call():
    # gtrex's one-shot order, verify(claim, doc), used to verify each character of the
    # document as a claim; verify(doc, "Net") each character of "Net".
    for args in ((CLAIM, DOC), (DOC, "Net")):
        with pytest.raises(TypeError, match=r"claims is a str.*verify_claim\(claim, document\)"):
            groundswell.verify(*args)
    with pytest.raises(TypeError, match="claims is one record"):
        groundswell.verify(DOC, {"claim": CLAIM})
    with pytest.raises(TypeError, match=r"claims\[1\]: a claim is a str or a record"):
        groundswell.verify(DOC, [CLAIM, 7])
    with pytest.raises(TypeError, match="document must be a str"):
        groundswell.verify([CLAIM], [CLAIM])


def test_gtrex_call_shapes_give_typed_certificates():
    one = groundswell.verify_claim(CLAIM, DOC)  # gtrex.verify(claim, doc)
    assert isinstance(one, Certificate) and one.grounded and one.verdict == "grounded"
    assert DOC[one.start : one.end] == one.span_text == CLAIM
    verifier = groundswell.Verifier(DOC)  # normalized once, reused
    again = verifier.verify(CLAIM)
    at = verifier.verify_at(CLAIM, one.start, one.end)
    assert again == one and at.scope == "span" and at.grounded
    assert groundswell.verify_at(CLAIM, DOC, one.start, one.end) == at
    listed = groundswell.verify(DOC, (CLAIM, {"claim": CLAIM, "start": one.start, "end": one.end}))
    assert [c.scope for c in listed] == ["document", "span"]
    assert all(isinstance(c, Certificate) for c in listed)


@pytest.mark.parametrize("policy", ["strict", "default@1", "permissive", "guarded", "guarded@1"])
def test_every_policy_the_cli_knows_verifies(policy):
    cert = groundswell.verify(DOC, [CLAIM], policy=policy)[0]
    shown = CliRunner().invoke(main, ["explain", "--policy", policy, "--json"])
    assert shown.exit_code == 0, shown.output
    assert cert.policy_fingerprint == json.loads(shown.stdout)["fingerprint"]


def test_an_unknown_policy_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="strcit"):
        groundswell.verify(DOC, [CLAIM], policy="strcit")
    with pytest.raises(ValueError, match="nope"):
        groundswell.admit(DOC, SCHEMA, CANDIDATES, policy="nope@1")


def test_admit_gives_a_typed_receipt_as_groundgate_does():
    receipt = groundswell.admit(DOC, SCHEMA, CANDIDATES)
    assert isinstance(receipt, groundswell.Receipt)
    assert len(receipt.decisions) == len(CANDIDATES)
    first = receipt.decisions[0]
    assert isinstance(first, groundswell.Decision) and first.outcome in (
        "admitted",
        "needs_verification",
        "rejected",
    )
    assert isinstance(first.codes, tuple) and first.field
    assert receipt.to_dict()["receipt_sha256"] == receipt.receipt_sha256
    assert groundswell.check_receipt(receipt, DOC, SCHEMA, CANDIDATES) == []


def test_admit_under_guarded_matches_the_cli(tmp_path):
    receipt = groundswell.admit(DOC, SCHEMA, CANDIDATES, policy="guarded")
    assert "guard" in receipt.to_dict()
    paths = [str(CORPUS / "documents" / f"{DOC_ID}.txt"), str(CORPUS / "schema.json")]
    paths.append(str(CORPUS / "candidates" / f"{DOC_ID}.json"))
    out = tmp_path / "guarded.json"
    done = CliRunner().invoke(main, ["admit", *paths, "--policy", "guarded", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert receipt.to_json() == out.read_text(encoding="utf-8")
    assert groundswell.check_receipt(receipt, DOC, SCHEMA, CANDIDATES) == []
