"""Review on both backends: resolve stores what it holds, `ledger review` lists it, emits it as
a decisions file and applies the answers (every problem at once, nothing written on one), and
the next resolve obeys them: accept merges, reject keeps apart and stops asking, defer stays
listed as deferred until its target moves."""

from __future__ import annotations

import datetime as dt
import json

from click.testing import CliRunner
from sqlalchemy import func, select

from groundswell.shared.cli import main
from groundswell.shared.ledger import review
from groundswell.shared.ledger.models import ReviewDecisionRow
from groundswell.shared.ledger.path import path
from groundswell.shared.ledger.resolve import cluster, resolve
from tests.shared.ledger.graphs import C, record

CLAIMS = [
    C("r1", "Acme Ltd", "OWNS", "Beta"),
    C("r2", "Acme Ltd", "OWNS", "Gamma"),
    C("r3", "ACME", "OWNS", "Gamma"),
    C("r4", "Acme Products", "SUPPLIES", "Zeta"),
    C("r5", "Acme (UK)", "OWNS", "Omega"),
    C("r6", "Fund 1", "OWNS", "Omega"),
    C("r7", "Fund 2", "OWNS", "Omega"),
]
PRODUCTS, UK, FUND = "merge:Entity/acme products", "merge:Entity/acme uk", "merge:Entity/fund 2"


def run(*args: str):
    return CliRunner().invoke(main, ["ledger", *args], catch_exceptions=False)


def decisions_stored(ledger) -> int:
    with ledger.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(ReviewDecisionRow)).scalar_one()


def fill(path, answers: dict[str, tuple[str, str]]) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["id"] in answers:
            row["verdict"], row["reason"] = answers[row["id"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_review_loop(ledger, ledger_url, tmp_path):
    record(ledger, CLAIMS)
    db = ("--db", ledger_url)
    assert run("review", *db).stdout == "nothing queued\n"  # resolve has not run
    assert "3 merges refused" in run("resolve", *db).stdout
    listed = run("review", *db).stdout.splitlines()
    assert listed[0] == "3 merges refused"
    assert listed[2] == "     4  Acme Products into 'Acme Ltd'  merge:Entity/acme products"
    assert listed[-1].startswith("weight = claims the answer moves. Answer them:")
    assert [q["id"] for q in review.listed(ledger).items] == [PRODUCTS, UK, FUND]

    emitted = tmp_path / "decisions.jsonl"
    done = run("review", *db, "--emit", str(emitted), "--by", "@study")
    assert done.stdout.splitlines()[0] == f"3 questions -> {emitted}"
    rows = [json.loads(line) for line in emitted.read_text().splitlines()]
    assert rows[0] == {
        "id": PRODUCTS,
        "verdict": "",
        "reason": "",
        "by": "@study",
        "date": dt.date.today().isoformat(),
        "_question": "Merge ['Acme Products'] into 'Acme Ltd'?",
        "_held_because": "'acme products' extends 'acme' with a word that is not a known empty "
        "suffix (products)",
        "_weight": 4,
        "_into": "merge:Entity/acme",
    }
    assert not path(ledger, "Zeta", "Beta").found  # Acme Products is not Acme Ltd yet
    fill(
        emitted,
        {
            PRODUCTS: ("accept", "Acme Products is Acme Ltd's trading name"),
            UK: ("reject", "the UK arm is a company of its own"),
            FUND: ("defer", "the prospectus does not say"),
        },
    )
    done = run("review", *db, "--apply", str(emitted))
    assert done.exit_code == 0 and done.stdout.splitlines() == [
        "3 decisions recorded (3 new, 0 changed, 0 unchanged)",
        "run `groundswell ledger resolve` for them to take effect",
    ]
    # Answered, not resolved yet: the queue shows what is still waiting, and the deferral.
    listed = run("review", *db).stdout.splitlines()
    assert listed[0] == "1 merges refused (1 deferred) · 3 already decided"
    assert "deferred: defer by @study on" in listed[4]

    resolved = run("resolve", *db).stdout
    assert "decisions: 1 accepted · 1 rejected · 1 deferred" in resolved
    assert "Fund 2 into 'Fund 1'  (deferred)" in resolved and "Acme (UK)" not in resolved
    result = resolve(ledger)
    merged = [sorted(m[1] for m in g.members) for g in result.groups if len(g.members) > 1]
    assert merged == [["ACME", "Acme Ltd", "Acme Products"]]
    assert [(h.id, h.status) for h in result.held] == [(FUND, "deferred")]
    hops = path(ledger, "Zeta", "Beta").hops  # the accepted merge joins the graph
    assert [h["claim_id"] for h in hops] == ["r4", "r1"]
    assert [(q["id"], q["status"]) for q in review.listed(ledger).items] == [(FUND, "deferred")]

    # Applying the same file again changes nothing, even now its questions are answered.
    again = run("review", *db, "--apply", str(emitted))
    assert again.stdout.startswith("3 decisions recorded (0 new, 0 changed, 3 unchanged)")
    assert decisions_stored(ledger) == 3

    # An answer changed: the history keeps both, the newest is obeyed.
    fill(emitted, {FUND: ("accept", "the 2024 prospectus merges the two funds")})
    changed = run("review", *db, "--apply", str(emitted), "--json")
    assert json.loads(changed.stdout) == {"recorded": 3, "new": 0, "changed": 1, "unchanged": 2}
    assert decisions_stored(ledger) == 4
    result = resolve(ledger)
    assert result.held == [] and result.applied == {"accept": 2, "reject": 1}
    assert run("review", *db).stdout == "nothing queued · 3 already decided\n"
    with ledger.engine.connect() as conn:
        history = conn.execute(
            select(ReviewDecisionRow.verdict, ReviewDecisionRow.origin)
            .where(ReviewDecisionRow.id == FUND)
            .order_by(ReviewDecisionRow.seq)
        ).all()
    assert history == [("defer", f"{emitted}:3"), ("accept", f"{emitted}:3")]


def test_answers_survive_re_resolution_and_a_swap_of_sides(ledger, tmp_path):
    record(ledger, CLAIMS)
    resolve(ledger)
    rows = [
        (1, {"id": UK, "verdict": "reject", "reason": "a company of its own", "by": "@a"}),
        (2, {"id": FUND, "verdict": "defer", "reason": "cannot tell", "by": "@a"}),
    ]
    review.save(ledger, review.load(ledger, rows), "api:test", lines=False)
    # Acme (UK) now has more claims than Acme Ltd and ACME together: the pair is asked the
    # other way round (merge:Entity/acme into Acme (UK)), and the rejection still answers it.
    record(ledger, [C(f"u{i}", "Acme (UK)", "OWNS", "Omega") for i in range(5)])
    result = resolve(ledger)
    assert all("acme" not in h.id or h.id == PRODUCTS for h in result.held)
    assert [h.id for h in result.held] == [PRODUCTS, FUND]
    assert next(h for h in result.held if h.id == FUND).status == "deferred"
    # Fund 2's question moves to another target (Fund 3, heavier than Fund 1): the deferral
    # was about Fund 1, so it is open again, with the deferral shown.
    record(ledger, [C(f"f{i}", "Fund 3", "OWNS", "Omega") for i in range(3)])
    resolve(ledger)
    fund = next(q for q in review.listed(ledger).items if q["id"] == FUND)
    assert (fund["into"], fund["status"], fund["earlier"]["reason"]) == (
        "Fund 3",
        "open",
        "cannot tell",
    )


def test_settle_obeys_each_verdict():
    entities = [
        ("e1", "Party", "Acme Ltd", 3),
        ("e2", "Party", "Acme Products", 1),
        ("e3", "Product", "Acme", 1),
        ("e4", "Party", "Acme (US)", 1),
        ("e5", "Product", "Acme Products", 5),
    ]
    _, held = cluster(entities)
    asked = {q.id: q for q in review.questions(held)}
    assert set(asked) == {"merge:Product/acme", "merge:Party/acme products", "merge:Party/acme us"}
    # Held twice (another type; an extra word): one question, its heaviest pair the target.
    products = asked["merge:Party/acme products"]
    assert (products.into, products.weight, products.reason) == (
        "Acme Products",
        6,
        "type conflict: Party vs Product",
    )
    assert [(a["into"], a["weight"]) for a in products.also] == [("Acme Ltd", 4)]
    today = dt.date(2025, 1, 2)

    def decided(qid, verdict, target=("Party", "acme")):
        return review.Decision(qid, verdict, "why", "@a", today, *target)

    decisions = {
        "merge:Product/acme": decided("merge:Product/acme", "accept"),  # across a type, asked
        "merge:Party/acme products": decided("merge:Party/acme products", "reject"),
        "merge:Party/acme us": decided("merge:Party/acme us", "defer"),
    }
    groups, held = cluster(entities, decisions=decisions)
    assert sorted(sorted(m[1] for m in g.members) for g in groups) == [
        ["Acme", "Acme Ltd"],
        ["Acme (US)"],
        ["Acme Products"],
        ["Acme Products"],
    ]
    assert [(h.id, h.status) for h in held] == [("merge:Party/acme us", "deferred")]
    # An accepted pair no longer held (its reason gone) is still joined; one whose group
    # is gone joins nothing.
    gone = {"merge:Party/acme zz": decided("merge:Party/acme zz", "accept")}
    assert len(cluster(entities, decisions={**decisions, **gone})[0]) == 4


def test_every_problem_of_a_decisions_file_at_once():
    rows, unread = review.read_lines(
        [
            json.dumps({"id": UK, "verdict": "Accept", "reason": "r", "by": "@a"}),  # fine
            json.dumps({"id": UK, "verdict": "", "by": "@a"}),  # answered twice
            json.dumps({"verdict": "accept", "reason": "r", "by": "@a"}),  # no id
            "",
            json.dumps({"id": FUND, "verdict": "maybe", "reason": "r", "by": "@a"}),
            json.dumps({"id": FUND + "x", "verdict": "reject", "by": "@a"}),  # no reason, not open
            json.dumps({"id": PRODUCTS, "verdict": "defer", "reason": "r", "by": "  "}),
            "{not json",
            "[1, 2]",
            json.dumps({"id": 7, "verdict": "accept"}),
            json.dumps({"id": PRODUCTS + "2", "verdict": "accept", "reason": 5, "by": "@a"}),
            json.dumps(
                {
                    "id": PRODUCTS + "3",
                    "verdict": "defer",
                    "reason": "r",
                    "by": "@a",
                    "date": "1 May",
                }
            ),
            json.dumps({"id": PRODUCTS + "4", "verdict": " ", "reason": "", "by": ""}),  # blank
        ]
    )
    askable = {UK, FUND, PRODUCTS, PRODUCTS + "2", PRODUCTS + "3", PRODUCTS + "4"}
    answers, problems = review.check(rows, askable, today=dt.date(2025, 1, 2))
    got = [p.located("d.jsonl") for p in sorted(unread + problems, key=lambda p: p.line)]
    assert got == [
        f"d.jsonl:2:id: {UK} answered twice",
        "d.jsonl:3:id: no id",
        "d.jsonl:5:verdict: verdict 'maybe' — use accept/defer/reject",
        f"d.jsonl:6:reason: {FUND}x has a verdict but no reason",
        f"d.jsonl:6:id: {FUND}x is not an open question",
        f"d.jsonl:7:by: {PRODUCTS} has no `by` — a decision needs an asserter, like every "
        "other claim here",
        "d.jsonl:8:-: not JSON: Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)",
        "d.jsonl:9:-: not an object",
        "d.jsonl:10:id: 7 is not a string",
        "d.jsonl:11:reason: 5 is not a string",
        f"d.jsonl:11:reason: {PRODUCTS}2 has a verdict but no reason",
        'd.jsonl:12:date: "1 May" is not a date (YYYY-MM-DD)',
    ]
    assert [(a.line, a.id, a.verdict, a.date) for a in answers] == [
        (1, UK, "accept", dt.date(2025, 1, 2))  # case folded, today's date when none given
    ]


def test_apply_writes_nothing_on_a_problem_and_usage_errors_exit_2(ledger, ledger_url, tmp_path):
    record(ledger, CLAIMS)
    resolve(ledger)
    db = ("--db", ledger_url)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": UK, "verdict": "reject", "reason": "own company", "by": "@a"})
        + "\n"
        + json.dumps({"id": "merge:Entity/nobody", "verdict": "accept", "reason": "x", "by": "@a"})
        + "\n"
    )
    done = CliRunner().invoke(main, ["ledger", "review", *db, "--apply", str(bad)])
    assert done.exit_code == 1 and done.stderr.splitlines() == [
        "1 problems — nothing written",
        f"  {bad}:2:id: merge:Entity/nobody is not an open question",
    ]
    assert decisions_stored(ledger) == 0
    as_json = CliRunner().invoke(main, ["ledger", "review", *db, "--apply", str(bad), "--json"])
    assert as_json.exit_code == 1 and json.loads(as_json.stdout) == {
        "problems": [
            {"line": 2, "field": "id", "message": "merge:Entity/nobody is not an open question"}
        ]
    }
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"id": UK, "verdict": "", "by": "@a"}) + "\n")
    done = CliRunner().invoke(main, ["ledger", "review", *db, "--apply", str(blank)])
    assert done.exit_code == 1 and "every verdict is blank" in done.stderr
    for args, says in (
        (["--emit", str(tmp_path / "q.jsonl")], "--by is required — a decision needs an asserter"),
        (["--emit", "q", "--by", "@a", "--apply", str(blank)], "--emit or --apply, not both"),
        (["--by", "@a"], "--by goes with --emit"),
        (["--apply", str(tmp_path / "missing.jsonl")], "does not exist"),
        (["--top", "0"], "0 is not in the range x>=1"),
    ):
        done = CliRunner().invoke(main, ["ledger", "review", *db, *args])
        assert done.exit_code == 2 and says in done.output, (args, done.output)
    assert not (tmp_path / "q.jsonl").exists()


def test_the_queue_is_paged_weightiest_first(ledger):
    record(ledger, [C(f"p{i}", f"Fund {i}", "OWNS", "Omega") for i in range(1, 8)])
    resolve(ledger)
    every, cursor = [], None
    while True:
        page = review.listed(ledger, cursor=cursor, limit=4)
        every += page.items
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    stored = review.queue(ledger)
    assert len(every) == stored["open"] > 4 and len({q["id"] for q in every}) == len(every)
    assert [(-q["weight"], q["id"]) for q in every] == sorted(
        (-q["weight"], q["id"]) for q in every
    )
    assert review.listed(ledger, status=["deferred"]).items == []
