"""Widening a citation that stopped too early (issue 32 item 9): the smallest span that names
the claim's subject (and a reported claim's asserter), within a budget; offered by
``ledger audit --emit --widen`` and by a recording, kept as a suggestion, never applied."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sqlalchemy import text as sql

from groundswell.shared.cli import main
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.queries import claims
from groundswell.shared.ledger.record import open_source, record_claim
from groundswell.shared.ledger.widen import BUDGET, suggestion, widen

DOC = (
    "Markets were calm. Shares rose; analysts, citing Reuters, said that "
    "Beta Inc owns Gamma Holdings. Acme Ltd acquired Delta.\n"
)
CITED = "Beta Inc owns Gamma Holdings"


def test_the_smallest_span_that_names_what_the_quote_does_not():
    start = DOC.index(CITED)
    end = start + len(CITED)
    # xrad snaps to the sentence boundary ". " anywhere in its window; the name is nearer.
    assert widen(DOC, start, end, ["Reuters"]) == (DOC.index("Reuters"), end)
    assert widen(DOC, start, end, ["beta inc"]) == (start, end)  # inside: nothing to add
    assert widen(DOC, start, end, ["Acme Ltd"]) == (start, DOC.index("Acme Ltd") + 8)
    assert widen(DOC, start, end, ["Bloomberg"]) is None
    far = "Reuters said so." + " filler" * (BUDGET // 7 + 5) + " " + CITED
    at = far.index(CITED)
    assert widen(far, at, at + len(CITED), ["Reuters"]) is None  # beyond the budget
    assert widen(DOC, start, end, ["Reut"]) is None  # whole words only
    offered = suggestion(DOC, start, end, "Beta Inc", "reported", "Reuters (rep. analysts)")
    assert offered == {"start": DOC.index("Reuters"), "end": end,
                       "text": DOC[DOC.index("Reuters") : end], "names": ["Reuters"]}  # fmt: skip
    assert suggestion(DOC, start, end, "Beta Inc", "assertion", "Reuters") is None


def _corpus(tmp_path):
    (tmp_path / "documents").mkdir()
    (tmp_path / "relations").mkdir()
    (tmp_path / "documents" / "d.txt").write_text(DOC)
    line = {"claim_id": "r1", "relation": "OWNS", "subject_id": "Beta Inc",
            "object_id": "Gamma Holdings", "asserter": "Reuters (rep. analysts)",
            "modality": "reported", "quote": CITED}  # fmt: skip
    ok = {**line, "claim_id": "a1", "modality": "assertion", "asserter": "the filing"}
    (tmp_path / "relations" / "d.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(ok))
    return str(tmp_path)


def test_audit_emit_offers_the_widened_quote_and_keeps_it_as_a_suggestion(
    ledger, ledger_url, tmp_path
):
    corpus = _corpus(tmp_path)
    assert import_into(ledger, corpus).stored == 2
    out = tmp_path / "batches.json"
    done = CliRunner().invoke(
        main,
        ["ledger", "audit", "--emit", str(out), "--widen", corpus, "--db", ledger_url],
    )
    assert done.exit_code == 0, done.output
    assert "1 widened quotes offered" in done.output
    (batch,) = json.loads(out.read_text())["batches"]
    claims = {c["claim_id"]: c for c in batch["claims"]}
    wider = DOC[DOC.index("Reuters") : DOC.index(CITED) + len(CITED)]
    assert claims["r1"]["widened"]["text"] == wider and "widened" not in claims["a1"]
    assert wider not in batch["prompt"]  # the judge still sees the cited span only
    with ledger.engine.connect() as conn:
        rows = dict(conn.execute(sql("SELECT claim_id, quote FROM evidence")).all())
        extra = conn.execute(sql("SELECT extra FROM claims WHERE id = 'r1'")).scalar_one()
    assert rows == {"r1": CITED, "a1": CITED}  # never applied
    extra = json.loads(extra) if isinstance(extra, str) else extra
    assert extra["suggested_quote"]["text"] == wider


def test_a_recording_is_answered_with_the_widened_quote(ledger, tmp_path):
    corpus = _corpus(tmp_path)
    line = {"relation": "OWNS", "subject_id": "Beta Inc", "object_id": "Gamma Holdings",
            "asserter": "Reuters", "modality": "reported", "quote": CITED}  # fmt: skip
    done = record_claim(ledger, open_source(corpus, "d"), line, recorder="agent").as_dict()
    assert done["ok"] and done["warnings"]
    assert done["widened"]["text"] == DOC[DOC.index("Reuters") : DOC.index(CITED) + len(CITED)]
    (listed,) = claims(ledger).items  # the claims' listing shows it to whoever reviews them
    assert listed["suggested_quote"] == done["widened"] and listed["quote"] == CITED
