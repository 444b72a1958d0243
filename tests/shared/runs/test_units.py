"""One unit through the core: inputs read, receipt written once, records that fail alone."""

from __future__ import annotations

import json

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store


def _runner(tmp_path, claims: list[dict]):
    corpus = open_store(str(tmp_path / "corpus"))
    corpus.put("documents/d.txt", b"Net sales rose 5% to $391.0 billion.")
    corpus.put("claims/d.jsonl", "".join(json.dumps(c) + "\n" for c in claims).encode())
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return UnitRunner(corpus, output, registry.resolve("default@1"))


def test_offsets_outside_the_document_fail_their_record_alone(tmp_path):
    runner = _runner(
        tmp_path,
        [
            {"id": "a", "claim": "Net sales rose 5%", "start": 0, "end": 17},
            {"id": "b", "claim": "rose", "start": 10, "end": 500},
            {"id": "c", "claim": "rose", "start": 9, "end": 9},
            {"id": "d", "claim": "$391.0 billion"},
        ],
    )
    result = runner.unit("verify", "d")
    assert result.status == "computed"
    assert result.counts["claims"] == 2 and result.counts["claims.verdict.grounded"] == 2
    assert {(e.line, e.field) for e in result.errors} == {(2, "end"), (3, "start")}
    assert "document's length" in next(e for e in result.errors if e.line == 2).message


def test_a_receipt_is_written_once_and_reused(tmp_path):
    runner = _runner(tmp_path, [{"id": "a", "claim": "Net sales rose 5%"}])
    first = runner.unit("verify", "d")
    again = runner.unit("verify", "d")
    assert (first.status, again.status) == ("computed", "cached")
    assert first.receipt_key == again.receipt_key and first.receipt_sha256 == again.receipt_sha256
    assert first.counts == again.counts and first.inputs == again.inputs


def _admit_runner(tmp_path, document: str, candidates: list, labels: bytes | None = None):
    corpus = open_store(str(tmp_path / "corpus"))
    corpus.put("documents/d.txt", document.encode())
    corpus.put("candidates/d.json", json.dumps(candidates).encode())
    corpus.put("claims/d.jsonl", b'{"id": "q1", "claim": "Net sales"}\n')
    corpus.put("schema.json", json.dumps({"fields": {"sales": {"type": "number"}}}).encode())
    if labels is not None:
        corpus.put("labels/d.json", labels)
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return UnitRunner(corpus, output, registry.resolve("default@1")), output


def test_a_document_not_in_nfc_is_admitted_on_its_nfc_form(tmp_path):
    from groundswell.shared.receipts import open_receipt

    document = "Caf\u0065\u0301 sales\u2001were\u037e Net sales $391 million."
    start = document.encode().index(b"$391")
    cand = {
        "id": "a",
        "field": "sales",
        "value": "391000000",
        "evidence": {"start": start, "end": start + len(b"$391 million"), "text": "$391 million"},
    }
    runner, output = _admit_runner(tmp_path, document, [cand])
    result = runner.unit("admit", "d")
    assert result.status == "computed" and not result.errors
    body = open_receipt(output.get(result.receipt_key), result.receipt_key)
    note = body["normalized"]
    assert note["form"] == "NFC" and note["original_sha256"] != note["text_sha256"]
    assert note["candidates_changed"] == 1
    decision = body["receipt"]["decisions"][0]
    assert decision["outcome"] == "admitted", decision
    assert body["records"] == [cand]  # the candidates as given


def test_a_bad_label_is_reported_once_and_never_fails_a_unit(tmp_path):
    labels = b'{"claims": {"q1": "yes"}, "candidates": {"a": true, "b": "no"}}'
    cand = {"id": "a", "field": "sales", "value": "391", "evidence": {"text": "391"}}
    runner, _ = _admit_runner(tmp_path, "Net sales were 391.", [cand], labels)
    verified, admitted = runner.unit("verify", "d"), runner.unit("admit", "d")
    assert (verified.status, admitted.status) == ("computed", "computed")
    assert [e.field for e in verified.errors] == ["claims.q1"]
    assert [e.field for e in admitted.errors] == ["candidates.b"]
    # The good label still measures: candidate a is labelled right.
    assert admitted.counts["candidates.labelled"] == 1
    assert admitted.counts["candidates.labelled_right"] == 1


def test_an_invalid_schema_is_blamed_on_the_schema(tmp_path):
    runner, _ = _admit_runner(tmp_path, "Net sales were 391.", [])
    runner.corpus.put("schema.json", b'{"fields": {"sales": {"type": "money"}}}')
    result = runner.unit("admit", "d")
    assert result.status == "failed"
    assert result.errors[0].file == "schema.json", result.errors


# -- verification with repair ------------------------------------------------------------------

SAMPLE_DOC = "ntsb-cen24la118"  # near misses substituted (one labelled false), guards, offsets


def _sample_runner(tmp_path, repair: dict | None):
    from importlib.resources import files

    corpus = open_store(str(files("groundswell.shared.sample") / "corpus"))
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    ref = "default@1"
    if repair is not None:
        ref = registry.publish(
            {"name": "fix", "extends": "default@1", "verify": {"repair": repair}}
        )[0].ref
    return UnitRunner(corpus, output, registry.resolve(ref)), corpus, output


def test_without_repair_a_verification_receipt_is_byte_identical_to_before(tmp_path):
    runner, _, _ = _sample_runner(tmp_path, None)
    result = runner.unit("verify", SAMPLE_DOC)
    # Pinned before repair existed: cached receipts stay valid.
    assert result.receipt_key == (
        "receipts/verify/cb/cb5f49bcd85ac6134d018fa1777bd03f58fdd4c23943479092b612a3a810c463.json"
    )
    assert result.receipt_sha256 == (
        "24b2ecd6216f3dfb7fd43c3a4ed7b14ff5394fb5824987e43b818a320359b4d3"
    )
    assert not any(k.startswith("repairs") for k in result.counts)


def test_a_policy_that_repairs_runs_each_claim_through_the_cascade(tmp_path):
    from groundswell.shared.receipts import open_receipt
    from groundswell.shared.repair import Repairer
    from groundswell.shared.units.verify import repair_result
    from groundswell.shared.verify import Verifier

    repair = {"repair_mode": "substitute", "salvage_policy": "longest_grounded"}
    runner, corpus, output = _sample_runner(tmp_path, repair)
    result = runner.unit("verify", SAMPLE_DOC)
    assert result.status == "computed" and not result.errors
    body = open_receipt(output.get(result.receipt_key), result.receipt_key)
    assert body["policy"]["repair"]["threshold_source"] == "default"
    assert body["policy"]["repair"]["threshold"] == 0.65 and body["engine"]["repair"] == 1

    # Each record's repair re-derives: the cascade run on its own gives gtrex's fields.
    text = corpus.get(f"documents/{SAMPLE_DOC}.txt").decode()
    policy = runner.policy.repair.policy
    alone = Repairer(text, policy, verifier=Verifier(text, policy.verify), warn=False)
    alone.threshold_source = "default"  # the policy set none: the default's, recorded as such
    repaired = [item for item in body["records"] if "repair" in item]
    for item in repaired:
        assert "before" not in item["repair"]
        assert repair_result(item) == json.loads(
            json.dumps(alone.repair(item["record"]["claim"]).as_dict())
        )
    # A claim bound to offsets is verified there, never moved.
    bound = [item for item in body["records"] if "start" in item["record"]]
    assert bound and all("repair" not in item for item in bound)
    assert len(repaired) + len(bound) == len(body["records"])

    by_id = {item["record"]["id"]: item["repair"] for item in repaired}
    q07 = by_id["q07"]  # genuine, reformatted by the model
    assert (q07["action"], q07["stage"]) == ("substituted", "alignment")
    assert q07["after"]["grounded"] and q07["alignment"]["text"] == q07["after"]["span_text"]
    counts = result.counts
    assert counts["repairs"] == len(repaired)
    assert counts["repairs.action.substituted"] == 2 == counts["repairs.at.substituted.alignment"]
    assert counts["repairs.at.rejected.numeric_guard"] >= 1
    assert counts["repairs.at.rejected.polarity_guard"] >= 1
    # q14 is labelled false and was substituted: a wrong repair.
    assert counts["repairs.wrong"] == counts["repairs.wrong.substituted"] == 1
    # The certificate counters are the claims as the model wrote them, as without repair.
    plain, _, _ = _sample_runner(tmp_path / "plain", None)
    before = plain.unit("verify", SAMPLE_DOC).counts
    assert {k: v for k, v in counts.items() if not k.startswith("repairs")} == dict(before)

    # Cached on a second run; a threshold change is another receipt.
    assert runner.unit("verify", SAMPLE_DOC).status == "cached"
    stricter, _, _ = _sample_runner(tmp_path / "t", {**repair, "repair_threshold": 0.95})
    other = stricter.unit("verify", SAMPLE_DOC)
    assert other.receipt_key != result.receipt_key
    assert other.counts["repairs.action.substituted"] < counts["repairs.action.substituted"]
