"""A synthetic finished run of any size, written through the index writer as finalize writes
it, in a store that counts its reads (the report page tests and bench/report.py)."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

from groundswell.shared.receipts import seal
from groundswell.shared.report.pages import receipt_tally
from groundswell.shared.runs import index as run_index
from groundswell.shared.runs.index import IndexWriter, row_line
from groundswell.shared.runs.layout import summary_key
from groundswell.shared.runs.models import RunRecord


class CountingStore:
    """An in-memory object store that counts reads."""

    def __init__(self, url: str) -> None:
        self.url, self.objects, self.gets = url, {}, Counter()

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        self.gets[key.split("/", 1)[0] if not key.startswith("runs/") else key] += 1
        try:
            return self.objects[key]
        except KeyError:
            raise KeyError(key) from None

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        if create_only and key in self.objects:
            return False
        self.objects[key] = data
        return True

    def exists(self, key: str) -> bool:
        return key in self.objects

    @property
    def reads(self) -> int:
        return sum(self.gets.values())


TEXT = "Revenue was $7,000 in 2024 and 12 units were sold."


def synthetic_run(
    n_docs: int, rare_every: int = 0, tallies: bool = True
) -> tuple[SimpleNamespace, RunRecord]:
    """A finished run of ``n_docs`` documents, its index, receipts and summary written
    through the index writer, as finalize writes them (no pipeline). Without ``tallies``,
    its index rows are as they were before rows carried counts."""
    run_id = f"synthetic-{n_docs}-{rare_every}-{tallies}"
    store = CountingStore(f"mem://{run_id}")
    writer = IndexWriter(store, run_id)
    counts: Counter[str] = Counter()
    verify_body = {
        "kind": "verify",
        "records": [
            {
                "line": n,
                "record": {"id": f"c{n}", "claim": "Revenue was $7,000"},
                "certificate": dict(
                    verdict="grounded", tier="exact", grounded=True, start=0, end=18
                ),
            }
            for n in range(3)
        ],
    }
    for i in range(n_docs):
        doc_id = f"doc-{i:05d}"
        store.put(f"documents/{doc_id}.txt", TEXT.encode())
        rare = bool(rare_every) and i % rare_every == rare_every - 1
        codes = ["RARE_CODE"] if rare else ["E_VALUE_NOT_IN_EVIDENCE"]
        outcome = "rejected" if i % 3 == 0 else "admitted"
        admit_body = {
            "kind": "admit",
            "receipt": {
                "decisions": [
                    {
                        "candidate_id": "k1",
                        "field": "units",
                        "value": "12",
                        "outcome": outcome,
                        "codes": codes if outcome == "rejected" or rare else [],
                        "source": "document",
                        "evidence": {"start": 31, "end": 33},
                    },
                ]
            },
        }
        for kind, body in (("admit", admit_body), ("verify", verify_body)):
            data, digest = seal(body)
            key = f"receipts/{kind}/{i}.json"
            store.put(key, data)
            tally = receipt_tally(kind, json.loads(data))
            counts.update(tally)
            row = {
                "unit": f"{kind}/{doc_id}",
                "doc_id": doc_id,
                "kind": kind,
                "status": "computed",
                "receipt": key,
                "receipt_sha256": digest,
                "bytes": len(TEXT),
                "errors": [],
                **({"tally": tally} if tallies else {}),
            }
            if kind == "admit":
                row["flagged"] = int(outcome != "admitted")
            writer.add(row_line(row))
    manifest = writer.finish()
    summary = {
        "run_id": run_id,
        "state": "succeeded",
        "documents": n_docs,
        "counts": dict(counts),
        "rates": {},
        "failed_units": 0,
        "errors_total": 0,
        "errors": [],
        "index": {"merkle_root": manifest["merkle_root"]},
    }
    store.put(summary_key(run_id), json.dumps(summary).encode())
    service = SimpleNamespace(summary=lambda _: summary, store=lambda _: store)
    record = RunRecord(
        id=run_id,
        corpus="mem://corpus",
        output=store.url,
        engines={},
        policy={"ref": "default@1"},
        state="succeeded",
        created_at="2026-12-01T00:00:00Z",
    )
    store.gets.clear()
    run_index._manifests.clear()
    run_index._pieces.clear()
    return service, record
