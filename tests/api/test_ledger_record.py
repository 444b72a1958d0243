"""POST /v1/ledger/claims (issue 32 item 7): an agent's claim recorded against a corpus's
document, on both backends, refused exactly as an import refuses the same line, stored
create-once under an id namespaced by its document; keys with the record scope."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.api.routes.ledger import close_ledgers
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.settings import Settings, hash_api_key

pytestmark = pytest.mark.integration

RECORD, RUNS, TEAM = "gs_record_key", "gs_runs_only", "gs_other_team"
DOC = (
    "1.1  Acme Ltd hereby acquires Beta Inc, effective 1 March 2026.\n"
    "2.3  Reuters reports that Beta Inc owns Gamma Holdings.\n"
)
VOCAB = (
    "name: deals\nentity_types: [Party]\n"
    "relations:\n  ACQUIRED: {subject: [Party], object: [Party]}\n  OWNS:\n"
)


def _line(cid: str, **fields) -> dict:
    base = {"claim_id": cid, "relation": "ACQUIRED", "subject_id": "Acme Ltd",
            "object_id": "Beta Inc", "asserter": "the agreement",
            "quote": "Acme Ltd hereby acquires Beta Inc"}  # fmt: skip
    return base | fields


LINES = [
    _line("good"),
    _line("near", quote="Acme Limited hereby acquires Beta Inc"),
    _line("vocab", relation="SUED"),
    _line("typed", subject_type="Instrument"),
    _line("modality", modality="probably"),
    _line("nul", asserter="the\x00agreement"),
    _line("fact:x"),
    _line("long", subject_type="T" * 250),
    _line("other", source_id="elsewhere"),
    _line("warned", relation="OWNS", subject_id="Beta Inc", object_id="Gamma Holdings",
          modality="reported", asserter="Bloomberg", quote="Beta Inc owns Gamma Holdings"),
]  # fmt: skip


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "documents").mkdir(parents=True)
    (root / "documents" / "contract.txt").write_text(DOC)
    (root / "vocabulary.yaml").write_text(VOCAB)
    return root


@pytest.fixture
def client(redis_server, tmp_path, corpus, ledger_url):
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        ledger_url=ledger_url,
        allowed_corpora=str(tmp_path),
        api_key_hashes=f"agent:runs+record:{hash_api_key(RECORD)},ops:runs:{hash_api_key(RUNS)},"
        f"team:record:{hash_api_key(TEAM)}:{tmp_path / 'elsewhere'}",
    )
    with TestClient(create_app(settings), headers={"X-API-Key": RECORD}) as c:
        yield c
    close_ledgers()


def _post(client, corpus, claim, key=RECORD, document="contract"):
    body = {"corpus": str(corpus), "document_id": document, "claim": claim}
    return client.post("/v1/ledger/claims", json=body, headers={"X-API-Key": key})


def test_the_routes_refusals_are_the_imports_on_the_same_lines(client, corpus, tmp_path):
    answers = [_post(client, corpus, line) for line in LINES]
    ours = {
        line["claim_id"]: (r.json()["error"], r.json()["field"], r.json()["message"])
        for line, r in zip(LINES, answers, strict=True)
        if r.status_code == 422
    }
    (corpus / "relations").mkdir()
    body = "".join(json.dumps(x) + "\n" for x in LINES)
    (corpus / "relations" / "contract.jsonl").write_text(body)
    with Ledger.open(str(tmp_path / "import.sqlite3")) as other:
        report = import_into(other, str(corpus))
    theirs = {LINES[r.line - 1]["claim_id"]: (r.code, r.field, r.message) for r in report.refusals}
    assert ours == theirs and len(ours) == 8
    assert [r.status_code for r in answers if r.status_code != 422] == [201, 201]
    near = answers[1].json()["nearest"]
    assert near["text"] == "Acme Ltd hereby acquires Beta Inc" and DOC[near["start"] :].startswith(
        "Acme Ltd"
    )
    good, warned = answers[0].json(), answers[-1].json()
    assert good == {"ok": True, "claim_id": "contract:good", "created": True,
                    "located_at": [5, 38], "tier": "exact", "warnings": []}  # fmt: skip
    assert warned["ok"] and "'Bloomberg'" in warned["warnings"][0]
    assert [w.message for w in report.warnings] == warned["warnings"]
    listed = client.get("/v1/ledger/claims").json()["items"]
    assert {c["claim_id"] for c in listed} == {"contract:good", "contract:warned"}


def test_recording_is_create_once_with_ids_of_its_source(client, corpus):
    assert _post(client, corpus, _line("a")).status_code == 201
    again = _post(client, corpus, _line("a"))
    assert again.status_code == 200 and again.json()["created"] is False
    other = _post(client, corpus, _line("a", relation="OWNS"))
    assert other.status_code == 422 and other.json()["error"] == "exists"
    unnamed = {k: v for k, v in _line("x").items() if k != "claim_id"}
    first, second = _post(client, corpus, unnamed), _post(client, corpus, unnamed)
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["claim_id"] == second.json()["claim_id"]
    assert first.json()["claim_id"].startswith("contract:c")


def test_recording_needs_the_record_scope_a_corpus_of_the_key_and_a_document(client, corpus):
    refused = _post(client, corpus, _line("a"), key=RUNS)
    assert refused.status_code == 403 and "'record'" in refused.json()["detail"]
    assert _post(client, corpus, _line("a"), key=TEAM).status_code == 403
    assert _post(client, "/etc", _line("a")).status_code == 403
    missing = _post(client, corpus, _line("a"), document="nope")
    assert missing.status_code == 404 and "documents/nope.txt" in missing.json()["detail"]
    assert _post(client, corpus, _line("a"), document="../x").status_code == 404
