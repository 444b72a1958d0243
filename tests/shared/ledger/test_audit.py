"""Audit batches on both backends: a deterministic sample, the batch file, strict verdicts,
and `groundswell ledger audit`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.ledger import audit
from tests.shared.ledger.test_export import make_claim


@pytest.fixture
def filled(ledger):
    ledger.write_claims([make_claim(n) for n in range(60)])
    return ledger


def test_a_sample_is_the_same_for_a_seed_and_bounded(filled):
    first = [i.claim_id for i in audit.pending(filled, sample=10, seed=3, page_size=7)]
    again = [i.claim_id for i in audit.pending(filled, sample=10, seed=3, page_size=50)]
    other = [i.claim_id for i in audit.pending(filled, sample=10, seed=4)]
    assert first == again and len(first) == 10 and set(first) != set(other)
    every = sorted(f"doc{n % 3}:c{n:05d}" for n in range(60))
    assert first == sorted(every, key=lambda c: audit.sample_key(3, c))[:10]
    assert [i.claim_id for i in audit.pending(filled, limit=4)] == every[:4]
    assert len(list(audit.pending(filled, sample=500))) == 60


def test_the_batch_file(filled):
    out = StringIO()
    items = audit.pending(filled, sample=25, seed=1)
    emitted = audit.write_batches(items, out, size=10, sample={"size": 25, "seed": 1})
    assert (emitted.claims, emitted.batches) == (25, 3)
    data = json.loads(out.getvalue())
    assert data["schema"]["properties"]["verdicts"]["items"]["required"] == [
        "claim_id",
        "supported",
        "reason",
    ]
    assert [len(b["claims"]) for b in data["batches"]] == [10, 10, 5]
    batch = data["batches"][0]
    assert batch["id"] == audit.batch_id([audit.Item(**c) for c in batch["claims"]])
    for c in batch["claims"]:
        assert f"### CLAIM {c['claim_id']}\n" in batch["prompt"]
        assert f"CITED SPAN: {c['span']}" in batch["prompt"]
    for phrase in ("CITED SPAN", "REFUTE", "ONLY the text span"):
        assert phrase in batch["prompt"]
    again = StringIO()
    audit.write_batches(audit.pending(filled, sample=25, seed=1), again, size=10)
    assert [b["id"] for b in json.loads(again.getvalue())["batches"]] == [
        b["id"] for b in data["batches"]
    ]


def test_verdicts_are_checked_before_anything_is_written(filled):
    bad = [
        {"claim_id": "doc0:c00000", "supported": "false", "reason": "x"},
        {"claim_id": "doc1:c00001", "supported": True, "reason": 3},
        {"claim_id": "doc1:c00001", "supported": False, "reason": "again"},
        {"supported": True},
        "yes",
    ]
    with pytest.raises(audit.VerdictError) as caught:
        audit.read_verdicts({"verdicts": bad})
    assert caught.value.problems == [
        'verdict 1: supported: "false" is not true or false',
        "verdict 2: reason: a string",
        "verdict 4: claim_id: a non-empty string",
        "verdict 5: not an object",
    ]
    with pytest.raises(audit.VerdictError, match="answered twice"):
        audit.read_verdicts(
            [
                {"claim_id": "a", "supported": True, "reason": ""},
                {"claim_id": "a", "supported": False, "reason": ""},
            ]
        )
    with pytest.raises(audit.VerdictError, match="no verdicts"):
        audit.read_verdicts({"verdicts": []})
    assert audit.refutation_rate(filled)["judged"] == 0
    per_batch = [
        {"verdicts": [{"claim_id": "doc0:c00000", "supported": False, "reason": "adjacent"}]},
        {"verdicts": [{"claim_id": "nope", "supported": True, "reason": ""}]},
    ]
    verdicts = audit.read_verdicts(per_batch)
    assert audit.record(filled, verdicts) == {"supported": 0, "refuted": 1, "unmatched": 1}
    assert audit.refutation_rate(filled) == {
        "judged": 1,
        "refuted": 1,
        "rate": 1.0,
        "worst_relations": [{"relation": "ACQUIRED", "n": 1}],
    }
    assert "doc0:c00000" not in {i.claim_id for i in audit.pending(filled)}


def run(*args: str):
    return CliRunner().invoke(main, ["ledger", "audit", *args], catch_exceptions=False)


def test_the_audit_command(tmp_path, ledger_url, filled):
    done = run("--db", ledger_url)
    assert done.stdout.splitlines()[0] == "60 claims await a verdict (2 batches of 40)"
    batches = tmp_path / "batches.json"
    done = run("--db", ledger_url, "--emit", str(batches), "--sample", "12", "--size", "5")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == f"12 unjudged claims · 3 batches -> {batches}"
    data = json.loads(batches.read_text(encoding="utf-8"))
    assert data["sample"] == {"size": 12, "seed": "0"}
    ids = [c["claim_id"] for b in data["batches"] for c in b["claims"]]
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(
        json.dumps(
            {
                "verdicts": [
                    {"claim_id": cid, "supported": i % 4 != 0, "reason": "r"}
                    for i, cid in enumerate(ids)
                ]
            }
        ),
        encoding="utf-8",
    )
    done = run("--db", ledger_url, "--ingest", str(verdicts))
    assert done.stdout.splitlines() == [
        "9 supported · 3 refuted",
        "",
        "  3/12 refuted = 25.0%",
        "  worst relations: ACQUIRED (3)",
    ]
    verdicts.write_text('[{"claim_id": "x", "supported": "true", "reason": ""}]')
    done = run("--db", ledger_url, "--ingest", str(verdicts))
    assert done.exit_code == 1 and "nothing written" in done.stderr
    assert run("--db", ledger_url, "--limit", "3", "--sample", "2").exit_code == 2
