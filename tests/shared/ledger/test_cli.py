"""`groundswell ledger import|state|vocab|migrate`, in process (click's runner)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.ledger.store import head_revision
from tests.shared.ledger.corpora import CONTRACT, CONTRACT_CLAIMS, VOCAB, make_corpus


def run(*args: str):
    return CliRunner().invoke(main, ["ledger", *args], catch_exceptions=False)


def test_import_state_and_vocab_on_a_corpus(tmp_path):
    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    db = str(tmp_path / "l.db")
    done = run("import", str(corpus), "--db", db, "--refusals", str(tmp_path / "r.jsonl"))
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == (
        "3 claims stored · 1 discarded, quote not in the source · 1 refused"
    )
    assert "relations/contract.jsonl:4:quote: quote not found in contract" in done.stderr
    assert "relations/contract.jsonl:5:relation: unknown relation" in done.stderr
    refusals = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [(r["line"], r["field"], r["code"]) for r in refusals] == [
        (4, "quote", "quote_not_found"),
        (5, "relation", "vocabulary"),
    ]
    state = run("state", "--db", db)
    assert state.stdout.splitlines()[:4] == [
        "3 claims",
        "  0 supported by their own span",
        "  0 refuted — the span does not establish the claim",
        "  3 not yet judged — which is not the same as fine",
    ]
    assert json.loads(run("state", "--db", db, "--json").stdout)["tier"]["whitespace"] == 1
    listed = run("vocab", "--db", db).stdout
    assert (
        listed.startswith("contracts  2 relations  sha256:")
        and "ACQUIRED  (Party -> Party)" in listed
    )


def test_import_of_one_file_needs_its_document(tmp_path):
    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    loose = tmp_path / "claims.jsonl"
    loose.write_text((corpus / "relations" / "contract.jsonl").read_text())
    db = str(tmp_path / "l.db")
    done = CliRunner().invoke(main, ["ledger", "import", str(loose), "--db", db])
    assert done.exit_code == 2 and "give --source-text" in done.output
    # With the document, and without a vocabulary: the invented relation goes in.
    done = run(
        "import", str(loose), "--db", db, "--source-text", str(corpus / "documents/contract.txt")
    )
    assert done.stdout.startswith("4 claims stored · 1 discarded, quote not in the source\n")
    # A corpus's own file finds its document and vocabulary beside it.
    done = run("import", str(corpus / "relations" / "contract.jsonl"), "--db", db, "--json")
    assert json.loads(done.stdout)["stored"] == 3


def test_vocab_prints_prompt_text_and_checks_a_file(tmp_path):
    good = tmp_path / "v.yaml"
    good.write_text(VOCAB)
    assert (
        "ACQUIRED  (Party -> Party) — one party acquired another" in run("vocab", str(good)).stdout
    )
    assert run("vocab", "--check", str(good)).stdout.endswith(
        "2 relations, 2 entity types — usable\n"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("relations:\n  A: {subjects: [Party]}\n")
    done = CliRunner().invoke(main, ["ledger", "vocab", "--check", str(bad)])
    assert done.exit_code == 1 and "relations.A.subjects: not a relation key" in done.output


def test_migrate_reports_the_revision(tmp_path):
    db = str(tmp_path / "l.db")
    head = head_revision()
    assert run("migrate", "--db", db).stdout == f"ledger migrated from empty to revision {head}\n"
    assert run("migrate", "--db", db).stdout == f"ledger at revision {head} (nothing to do)\n"


def test_a_corpus_url_and_a_relations_file_without_its_document(tmp_path):
    corpus = make_corpus(
        tmp_path / "c",
        {"contract": CONTRACT},
        {"contract": CONTRACT_CLAIMS[:1], "orphan": CONTRACT_CLAIMS[:2]},
    )
    done = run("import", f"file://{corpus}", "--db", str(tmp_path / "l.db"), "--json")
    report = json.loads(done.stdout)
    assert report["stored"] == 1 and report["files"] == 2
    assert [(r["file"], r["line"], r["code"]) for r in report["refusals"]] == [
        ("relations/orphan.jsonl", 1, "no_document"),
        ("relations/orphan.jsonl", 2, "no_document"),
    ]
    assert "no document documents/orphan.txt" in report["refusals"][0]["message"]
