"""Recording against xrad 0.4.0's MCP server (the oracle) on quotes of real documents of
../shared/corpus (issue 32 items 7 to 9): the same claims stored or refused, the same
reported-asserter warnings, and a widened quote never wider than xrad's, naming the same
asserter."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

from xrad.mcp import Server
from xrad.span import widened_quote

from groundswell.shared.ledger.record import Source, record_claim
from groundswell.shared.ledger.widen import suggestion
from tests.shared.ledger.test_differential import quotes_of, sample_documents

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
NAMES = ("Reuters", "Bloomberg", "the Company", "management")


def test_recordings_and_warnings_are_xrads(ledger, tmp_path):
    rng = random.Random(32)
    outcome: Counter = Counter()
    for doc, text in list(sample_documents(CORPUS).items())[:6]:
        theirs = Server(tmp_path / f"{doc}.db", CORPUS / "documents" / f"{doc}.txt", None)
        source = Source(str(CORPUS), doc, text)
        for n, (kind, quote) in enumerate(quotes_of(text, rng, 16)):
            words = re.findall(r"[A-Z][a-z]{3,}", quote)
            at = text.find(quote)  # a name just before the quote: one a widening reaches
            before = [w for w in re.findall(r"[A-Z][a-z]{3,}", text[max(0, at - 300) : at])
                      if w.lower() not in quote.lower()] if at > 0 else []  # fmt: skip
            asserter = rng.choice([*NAMES, *words[:1], *before[-1:] * 2])
            asserter += rng.choice(["", " (rep. filing)"])
            modality = "reported" if n % 3 else "assertion"
            line = {"subject": "Subject Co", "relation": "SAYS", "object": "Object Co",
                    "quote": quote, "modality": modality, "asserter": asserter}  # fmt: skip
            xrad_said = theirs.record_claim(line)
            ours = {"subject_id": "Subject Co", "object_id": "Object Co", "claim_id": f"q{n}"}
            ours |= {k: v for k, v in line.items() if k not in ("subject", "object")}
            said = record_claim(ledger, source, ours, recorder="diff").as_dict()
            assert said["ok"] == xrad_said["ok"], (doc, kind, quote)
            if not said["ok"]:
                outcome["refused by both"] += 1
                continue
            assert bool(said["warnings"]) == bool(xrad_said.get("warnings")), (quote, asserter)
            assert said["located_at"] == xrad_said["located_at"] or kind != "exact"
            outcome["warned by both" if said["warnings"] else "stored by both"] += 1
            if not said["warnings"]:
                continue
            name = asserter.split(" (rep.")[0]
            start, end = said["located_at"]
            wider = suggestion(text, start, end, "", "reported", asserter)
            xrad_wider = widened_quote(text, text[start:end], [name])
            if wider is not None and xrad_wider is not None and len(xrad_wider) > end - start:
                assert len(wider["text"]) <= len(xrad_wider) and name.lower() in (
                    wider["text"].lower()
                )
                outcome["widened, no wider than xrad"] += 1
        theirs.conn.close()
    print(dict(outcome))
    assert outcome["warned by both"] >= 8 and outcome["stored by both"] >= 8
    assert outcome["refused by both"] >= 4 and outcome["widened, no wider than xrad"] >= 2
