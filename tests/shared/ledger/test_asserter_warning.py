"""The reported-asserter warning (issue 32 item 8): a ``reported`` claim whose quote does not
name the one it credits is stored and warned, at file:line:field, on both backends."""

from __future__ import annotations

import json

from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.ledger.importer import ASSERTER_NOT_QUOTED, import_into

DOC = "Reuters reports that Beta Inc owns Gamma. Acme acquired Delta, sources said.\n"


def _line(cid: str, asserter: str, quote: str, modality: str = "reported") -> dict:
    return {"claim_id": cid, "relation": "OWNS", "subject_id": "Beta Inc", "object_id": "Gamma",
            "asserter": asserter, "quote": quote, "modality": modality}  # fmt: skip


LINES = [
    _line("ok", "Reuters (rep. agreement)", "Reuters reports that Beta Inc owns Gamma"),
    _line("case", "REUTERS (rep. doc)", "Reuters reports that Beta Inc owns"),
    _line("bloomberg", "Bloomberg (rep. filing)", "Beta Inc owns Gamma"),
    _line("whole", "Reuters (reported by doc)", "Reuters reports that Beta Inc owns Gamma"),
    _line("asserted", "Bloomberg", "Acme acquired Delta", modality="assertion"),
]


def test_a_reported_claim_whose_quote_does_not_name_its_asserter_is_stored_and_warned(
    ledger, ledger_url, tmp_path
):
    (tmp_path / "documents").mkdir()
    (tmp_path / "relations").mkdir()
    (tmp_path / "documents" / "d.txt").write_text(DOC)
    (tmp_path / "relations" / "d.jsonl").write_text("".join(json.dumps(x) + "\n" for x in LINES))
    report = import_into(ledger, str(tmp_path))
    assert report.stored == 5 and report.refusals == []
    warned = [(w.line, w.field, w.code) for w in report.warnings]
    assert warned == [(3, "asserter", ASSERTER_NOT_QUOTED), (4, "asserter", ASSERTER_NOT_QUOTED)]
    assert "'Bloomberg'" in report.warnings[0].message
    assert "'Reuters (reported by doc)'" in report.warnings[1].message  # no marker: all of it
    assert report.as_dict()["warned"] == 2
    out = CliRunner().invoke(main, ["ledger", "import", str(tmp_path), "--db", ledger_url])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("5 claims stored\n") and "  warned: 2 (stored;" in out.output
    assert "relations/d.jsonl:3:asserter: the quote does not name 'Bloomberg'" in out.output
