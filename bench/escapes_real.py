"""Real extractor output with human labels: the evaluation ``guarded`` was not built from.

``bench/real/afr/`` holds a derived subset of the agency-financial-report benchmark that
groundgate publishes (``bench/afr/tabs`` of github.com/mohanraj00/groundgate, Apache-2.0; the
statements are U.S. government works): 10 of its 20 FY2025 statements as groundgate's reader
wrote them (tables as rows with tabs), the replies of the four models that read them (one
candidate per line of ``candidates.jsonl``), and the labels of the values (``labels.json``:
groundgate's blind labels of every value it admitted, keyed by document, field, key and value;
values it never admitted are labelled here, marked ``"by": "groundswell"``). See its README.

The documents are split by ``split.json`` (recorded before any guard change): development,
read while changing guards; hold-out, run only when a change is final; ``holdout_2``, two
statements added once guard revision 3 was final and decided once; and ``holdout_3``, two more
added once guard revision 5 was final and decided once. A value labelled
``not sure`` counts in neither right nor wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.escapes_data import Packet

REAL = Path(__file__).resolve().parent / "real" / "afr"


def fact_id(doc: str, field: str, key: str | None, value: str) -> str:
    """The label id of a fact (the same for every run that proposes it)."""
    raw = json.dumps(["afr", doc, field, key, value])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def real_packets(root: Path = REAL) -> Iterator[Packet]:
    """One packet per document and model: the model's candidates, labelled by fact.

    A candidate whose fact has no label, or the label ``not sure``, is left out of ``labels``
    (the tally skips it)."""
    schema = json.loads((root / "schema.json").read_text(encoding="utf-8"))
    labels = json.loads((root / "labels.json").read_text(encoding="utf-8"))
    split = json.loads((root / "split.json").read_text(encoding="utf-8"))
    split_of = {d: s for s, docs in split.items() if isinstance(docs, list) for d in docs}
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    path = root / "candidates.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            doc, model, cand = row["doc"], row["model"], row["candidate"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a candidate row ({exc})") from exc
        runs.setdefault((doc, model), []).append(cand)
    for (doc, model), cands in sorted(runs.items()):
        text = (root / "docs" / f"{doc}.txt").read_text(encoding="utf-8")
        out, labelled = [], {}
        for i, cand in enumerate(cands):
            cid = f"{model}/{i}"
            out.append({"id": cid, **cand})
            verdict = labels.get(fact_id(doc, cand["field"], cand.get("key"), cand["value"]))
            if verdict is not None and verdict["verdict"] in ("right", "wrong"):
                labelled[cid] = verdict["verdict"] == "right"
        yield Packet(doc, split_of[doc], "real", text, schema, out, labelled, model)
