"""`groundswell admit --policy NAME[@N]`: every input form decided under a policy version
(guarded's checks over the packet's own admission policy); none is groundgate's, as before;
check-receipt re-derives what it writes; `policy explain guarded` names every guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundswell.shared.admit import admit_packet
from groundswell.shared.cli import main
from groundswell.shared.guarded import DEFAULT_GUARD, GUARD_CODES, GUARD_REVISION
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.settings import get_settings
from groundswell.shared.storage import open_store
from tests.shared.admit.guarded_packet import CODE, escaping_packet

OWN_POLICY = {"unit_window": 8}  # a packet's own admission policy (not groundgate's default)


@pytest.fixture
def registry(tmp_path, monkeypatch) -> PolicyRegistry:
    """A registry of its own for the commands (storage only: no broker)."""
    monkeypatch.delenv("GROUNDSWELL_BROKER_URL", raising=False)
    monkeypatch.delenv("GROUNDSWELL_REDIS_URL", raising=False)
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", str(tmp_path / "store"))
    get_settings.cache_clear()
    registry = PolicyRegistry(open_store(str(tmp_path / "store")))
    yield registry
    get_settings.cache_clear()  # later tests must not see this test's store


@pytest.fixture
def packet() -> dict[str, Any]:
    return escaping_packet()


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def write_inputs(folder: Path, packet: dict[str, Any], stem: str = "doc") -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.txt", folder / "schema.json", folder / f"{stem}.json"]
    paths[0].write_bytes(packet["document"].encode("utf-8"))
    paths[1].write_text(json.dumps(packet["schema"]), encoding="utf-8")
    paths[2].write_text(json.dumps(packet["candidates"]), encoding="utf-8")
    return [str(p) for p in paths]


def only_decision(receipt: dict[str, Any]) -> dict[str, Any]:
    [decision] = receipt["decisions"]
    return decision


def test_a_packet_under_guarded_goes_to_review_and_without_a_policy_is_groundgates(
    registry, packet, tmp_path
):
    path = tmp_path / "packet.json"
    path.write_text(json.dumps(packet), encoding="utf-8")
    plain = run("admit", "--packet", str(path))
    assert plain.exit_code == 0, plain.output
    assert plain.output == json.dumps(admit_packet(packet), ensure_ascii=False, indent=2) + "\n"
    assert "guard" not in json.loads(plain.output)
    assert only_decision(json.loads(plain.output))["outcome"] == "admitted"

    guarded = run("admit", "--packet", "-", "--policy", "guarded", input=json.dumps(packet))
    assert guarded.exit_code == 0, guarded.output
    receipt = json.loads(guarded.output)
    assert receipt["guard"]["settings"] == DEFAULT_GUARD.as_dict()
    decision = only_decision(receipt)
    assert decision["outcome"] == "needs_verification" and CODE in decision["codes"]
    assert run("admit", "--packet", str(path), "--policy", "guarded@1").output == guarded.output
    # a version without guards decides as groundgate does, byte for byte
    assert run("admit", "--packet", str(path), "--policy", "default@1").output == plain.output

    # the packet's own admission policy stays, with the guards on top
    own = tmp_path / "own.json"
    own.write_text(json.dumps({**packet, "policy": OWN_POLICY}), encoding="utf-8")
    own_plain = json.loads(run("admit", "--packet", str(own)).output)
    own_guarded = json.loads(run("admit", "--packet", str(own), "--policy", "guarded").output)
    assert own_plain["policy_sha256"] != receipt["policy_sha256"]
    assert own_guarded["policy_sha256"] == own_plain["policy_sha256"]
    assert CODE in only_decision(own_guarded)["codes"]


def test_one_document_under_guarded_and_its_own_policy_file_re_derives(registry, packet, tmp_path):
    inputs = write_inputs(tmp_path / "in", packet)
    own = tmp_path / "own.json"
    own.write_text(json.dumps(OWN_POLICY), encoding="utf-8")
    out = tmp_path / "receipt.json"
    result = run("admit", *inputs, "--policy", "guarded", "--policy", str(own), "-o", str(out))
    assert result.exit_code == 0, result.output
    receipt = json.loads(out.read_text(encoding="utf-8"))
    plain = tmp_path / "plain.json"
    assert run("admit", *inputs, "--policy", str(own), "-o", str(plain)).exit_code == 0
    assert receipt["policy_sha256"] == json.loads(plain.read_text())["policy_sha256"]
    assert receipt["guard"]["policy"] == "guarded"
    assert only_decision(receipt)["outcome"] == "needs_verification"

    # check-receipt re-derives it with the guard it records, and refuses a tampered one
    checked = run("check-receipt", str(out), *inputs, "--policy", str(own))
    assert checked.exit_code == 0 and "receipt verified" in checked.output
    receipt["guard"]["settings"]["caption_lines"] = 7
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(receipt), encoding="utf-8")
    refused = run("check-receipt", str(tampered), *inputs, "--policy", str(own))
    assert refused.exit_code == 1 and "mismatch: guard differs" in refused.output
    receipt["guard"]["revision"] = "groundswell-guard/0"
    tampered.write_text(json.dumps(receipt), encoding="utf-8")
    refused = run("check-receipt", str(tampered), *inputs, "--policy", str(own))
    assert refused.exit_code == 1 and "guard is of revision 'groundswell-guard/0'" in (
        refused.output
    )


def test_folders_of_documents_under_guarded(registry, packet, tmp_path):
    docs, cands = tmp_path / "docs", tmp_path / "cands"
    for stem in ("a", "b"):
        doc, schema, candidates = write_inputs(tmp_path / "in", packet, stem)
        docs.mkdir(exist_ok=True)
        cands.mkdir(exist_ok=True)
        Path(doc).rename(docs / f"{stem}.txt")
        Path(candidates).rename(cands / f"{stem}.json")
    positional = run(
        "admit", str(docs), schema, str(cands), "-o", str(tmp_path / "r1"), "--policy", "guarded"
    )
    assert positional.exit_code == 0, positional.output
    assert f"| {CODE} | 2 |" in positional.output
    batch = run(
        "admit",
        "--docs",
        str(docs),
        "--candidates",
        str(cands),
        "--schema",
        schema,
        "--out",
        str(tmp_path / "r2"),
        "--policy",
        "guarded",
    )
    assert batch.exit_code == 0, batch.output
    for stem in ("a", "b"):
        first = (tmp_path / "r1" / f"{stem}.json").read_bytes()
        assert first == (tmp_path / "r2" / f"{stem}.json").read_bytes()
        receipt = json.loads(first)
        assert "guard" in receipt and receipt["summary"]["needs_verification"] == 1
    summary = json.loads((tmp_path / "r2" / "summary.json").read_text())
    assert summary["totals"]["codes"][CODE] == 2
    plain = run("admit", str(docs), schema, str(cands), "-o", str(tmp_path / "r3"))
    assert plain.exit_code == 0 and CODE not in plain.output
    assert json.loads((tmp_path / "r3" / "a.json").read_text())["summary"]["admitted"] == 1


def test_a_published_version_decides_with_its_own_guard_settings(registry, packet, tmp_path):
    registry.ensure_builtins()
    published, _ = registry.publish(
        {"name": "columnless", "extends": "guarded@1", "guard": {"column": "off"}}
    )
    path = tmp_path / "packet.json"
    path.write_text(json.dumps(packet), encoding="utf-8")
    for ref in ("columnless", "columnless@1", "columnless@latest"):
        result = run("admit", "--packet", str(path), "--policy", ref)
        assert result.exit_code == 0, result.output
        receipt = json.loads(result.output)
        assert receipt["guard"]["settings"] == {**DEFAULT_GUARD.as_dict(), "column": "off"}
        assert CODE not in only_decision(receipt)["codes"]
    assert published.guard_settings.column == "off"


@pytest.mark.parametrize(
    ("policies", "message"),
    [
        (["nosuch"], "--policy nosuch: unknown policy 'nosuch'"),
        (["guarded@2"], "--policy guarded@2: policy guarded has no version 2"),
        (["guarded", "default"], "at most one policy FILE and one NAME[@N]"),
        (["nosuch.json"], "'nosuch.json' is no policy file"),
    ],
)
def test_an_unknown_policy_is_an_input_error(registry, packet, tmp_path, policies, message):
    inputs = write_inputs(tmp_path / "in", packet)
    args = [a for ref in policies for a in ("--policy", ref)]
    for form in (inputs, ["--packet", "-"]):
        result = run("admit", *form, *args, input=json.dumps(packet))
        assert result.exit_code == 2, result.output
        assert message in result.output


def test_policy_explain_guarded_prints_every_setting_and_code(registry):
    result = run("policy", "explain", "guarded")
    assert result.exit_code == 0, result.output
    text = result.output
    assert f"guard         revision {GUARD_REVISION}" in text
    for setting in DEFAULT_GUARD.as_dict():
        assert f"\n  {setting:<20} " in text
    assert "caption_lines        3" in text and "relieve_scale        true" in text
    for code, meaning in GUARD_CODES.items():
        assert f"    {code:<20} {meaning}" in text
    unguarded = run("policy", "explain", "default@1").output
    assert "guard         off" in unguarded and "VALUE_NOT_IN_COLUMN" not in unguarded


def test_check_receipt_holds_for_a_unit_receipt_a_guarded_run_stored(tmp_path):
    from groundswell.shared.runs.units import UnitRunner
    from tests.shared.runs.guarded_corpus import write_guarded_corpus

    corpus = open_store(str(tmp_path / "corpus"))
    labels = write_guarded_corpus(corpus)
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    doc_id = sorted(labels)[0]
    unit = UnitRunner(corpus, output, registry.resolve("guarded@1")).unit("admit", doc_id)
    stored = tmp_path / "out" / unit.receipt_key
    assert "guard" in json.loads(stored.read_text())["receipt"]
    inputs = [
        str(tmp_path / "corpus" / "documents" / f"{doc_id}.txt"),
        str(tmp_path / "corpus" / "schema.json"),
        str(tmp_path / "corpus" / "candidates" / f"{doc_id}.json"),
    ]
    checked = run("check-receipt", str(stored), *inputs)
    assert checked.exit_code == 0 and "receipt verified" in checked.output
    # the receipt inside, taken out and its guard settings changed, no longer holds
    inner = json.loads(stored.read_text())["receipt"]
    inner["guard"]["settings"]["column"] = "off"
    (tmp_path / "inner.json").write_text(json.dumps(inner))
    refused = run("check-receipt", str(tmp_path / "inner.json"), *inputs)
    assert refused.exit_code == 1 and "mismatch: receipt_sha256 does not match" in refused.output
    assert "mismatch: guard differs" in refused.output
