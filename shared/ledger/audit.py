"""Audit batches for a judge: does each claim's cited span, on its own, establish the claim?

The loop is xrad's (docs/auditing.md): emit the unjudged claims as prompts in batches, hand
them to a model or a fleet, read the verdicts back. The judge sees the cited span and nothing
else, is asked to refute, and answers ``{"verdicts": [{"claim_id", "supported", "reason"}]}``.
A refuted claim is kept, labelled: the refutation is about the citation, not the source.

Built on xrad's protocol, with what its BEHAVIOUR study asks of a reimplementation:

- a deterministic sample: ``sample=N, seed=S`` takes the N unjudged claims whose
  sha256(seed, claim id) is smallest, the same on every backend and every run, in O(N)
  memory; ``limit=N`` takes the first N in claim-id order;
- batch ids derived from the claims in the batch (xrad's are positional), and each batch
  carries its claims as structured items besides the prompt (xrad's ids are only in the text);
- the span shown is the document's own text at the located offsets;
- verdicts are checked before anything is written: ``supported`` must be a JSON boolean
  (xrad stores the string ``"false"`` as supported), each claim answered once, a reason a
  string; one bad verdict writes nothing and every problem is named.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from sqlalchemy import bindparam, func, select, update

from groundswell.shared.ledger.export import Claim, LedgerReader
from groundswell.shared.ledger.models import ClaimRow
from groundswell.shared.ledger.store import Ledger, chunks

BATCH_SIZE = 40
REASON_MAX = 400

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["verdicts"],
    "additionalProperties": False,
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["claim_id", "supported", "reason"],
                "additionalProperties": False,
                "properties": {
                    "claim_id": {"type": "string"},
                    "supported": {"type": "boolean"},
                    "reason": {"type": "string", "maxLength": REASON_MAX},
                },
            },
        }
    },
}

HEADER = """\
You are checking claims extracted from documents. For each claim below you see only the \
CITED SPAN given as its evidence: not the document around it, not the other claims, not how \
it was extracted.

For each claim, decide one thing: does this span, by itself, establish the claim?

Whether the claim is true in the world is not the question. A source may be wrong and still \
have said it plainly; that is recorded as such. The question is whether these words support \
the statement attached to them.

Your task is to REFUTE where you can. When unsure, answer supported: false. Answer \
unsupported when:

* the span does not name both parties (a pronoun such as "it" or "the former" leaves its \
referent outside the evidence);
* the relation is only implied or adjacent, not stated (two names in one sentence are not a \
relation);
* the modality is wrong: an assertion where the span hedges ("appears", "reportedly") or \
attributes ("according to X"), or the reverse;
* the asserter is wrong: the claim credits someone the span does not name, or names another.

Judge ONLY the text span shown. Return a verdict for every claim_id below, each once, with a \
short reason (at most 400 characters).

"""


@dataclass(frozen=True, slots=True)
class Item:
    """What the judge is given about one claim."""

    claim_id: str
    subject: str
    relation: str
    object: str
    modality: str
    asserter: str
    span: str
    source: str
    start: int | None
    end: int | None
    # A wider span that names the subject (and a reported claim's asserter), offered beside
    # the cited one: never in the prompt, which shows the cited span only (``--widen``).
    widened: dict[str, Any] | None = None

    @classmethod
    def of(cls, c: Claim) -> Item:
        first = c.spans[0] if c.spans else None
        return cls(
            claim_id=c.id,
            subject=c.subject.label,
            relation=c.relation,
            object=c.object.label,
            modality=c.modality,
            asserter=c.asserter,
            span=first.text if first else "",
            source=c.document_id,
            start=first.start if first else None,
            end=first.end if first else None,
        )

    def block(self) -> str:
        return (
            f"### CLAIM {self.claim_id}\n"
            f"CLAIM: ({self.subject}) --[{self.relation}]--> ({self.object})\n"
            f"MODALITY: {self.modality}   ASSERTER: {self.asserter}\n"
            f"CITED SPAN: {self.span}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "subject": self.subject,
            "relation": self.relation,
            "object": self.object,
            "modality": self.modality,
            "asserter": self.asserter,
            "span": self.span,
            "source": self.source,
            "start": self.start,
            "end": self.end,
            **({"widened": self.widened} if self.widened is not None else {}),
        }


def sample_key(seed: int | str, claim_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{claim_id}".encode()).hexdigest()


def pending(
    ledger: Ledger,
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int | str = 0,
    page_size: int = 1000,
) -> Iterator[Item]:
    """The unjudged claims to audit: all, the first ``limit`` in claim-id order, or a
    deterministic ``sample`` (ordered by its key). Streams; a sample holds ``sample`` items."""
    reader = LedgerReader(ledger, page_size, unjudged_only=True)
    claims = (c for c in reader.claims() if c.spans)
    if sample is not None:
        if sample < 1:
            return iter(())
        chosen = heapq.nsmallest(sample, ((sample_key(seed, c.id), Item.of(c)) for c in claims))
        return (item for _, item in chosen)
    items = (Item.of(c) for c in claims)
    if limit is not None:
        return (item for _, item in zip(range(max(limit, 0)), items, strict=False))
    return items


def widened(items: Iterable[Item], corpus: str) -> Iterator[Item]:
    """``items``, each whose cited span does not name its subject (or a reported claim's
    asserter) with a wider span of its document in ``corpus`` that does (:mod:`.widen`);
    a document is read once for its claims in a row (claims come in id order)."""
    from dataclasses import replace

    from groundswell.shared.corpus import decode_document, document_key
    from groundswell.shared.ledger.widen import suggestion
    from groundswell.shared.storage import open_store

    store = open_store(corpus)
    shown: tuple[str, str | None] = ("", None)
    for item in items:
        if shown[0] != item.source:
            try:
                key = document_key(item.source)
                shown = (item.source, decode_document(store.get(key), key))
            except KeyError:
                shown = (item.source, None)
        text = shown[1]
        if text is None or item.start is None or item.end is None:
            yield item
            continue
        offered = suggestion(text, item.start, item.end, item.subject, item.modality, item.asserter)
        yield replace(item, widened=offered) if offered is not None else item


def keep_suggestions(ledger: Ledger, suggestions: dict[str, dict[str, Any]]) -> int:
    """Keep each claim's widened quote with it (``extra.suggested_quote``): a suggestion, its
    evidence unchanged; the claims that were given one."""
    from groundswell.shared.ledger.widen import SUGGESTION

    kept = 0
    with ledger.engine.begin() as conn:
        for part in chunks(sorted(suggestions)):
            rows = conn.execute(
                select(ClaimRow.id, ClaimRow.extra).where(ClaimRow.id.in_(part))
            ).all()
            for claim_id, extra in rows:
                conn.execute(
                    update(ClaimRow)
                    .where(ClaimRow.id == claim_id)
                    .values(extra={**(extra or {}), SUGGESTION: suggestions[claim_id]})
                )
                kept += 1
    return kept


def count_pending(ledger: Ledger) -> int:
    with ledger.engine.connect() as conn:
        return conn.execute(
            select(func.count()).select_from(ClaimRow).where(ClaimRow.verified.is_(None))
        ).scalar_one()


def batches(items: Iterable[Item], size: int = BATCH_SIZE) -> Iterator[list[Item]]:
    if size < 1:
        raise ValueError("a batch holds at least one claim")
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def batch_id(batch: list[Item]) -> str:
    """Derived from the claims it holds, so the same claims make the same batch id."""
    digest = hashlib.sha256("\x00".join(i.claim_id for i in batch).encode()).hexdigest()
    return "a" + digest[:16]


def prompt(batch: list[Item]) -> str:
    return HEADER + "\n\n".join(item.block() for item in batch)


@dataclass
class Emitted:
    claims: int = 0
    batches: int = 0


def write_batches(
    items: Iterable[Item],
    out: TextIO,
    *,
    size: int = BATCH_SIZE,
    sample: dict[str, Any] | None = None,
) -> Emitted:
    """The batch file, streamed: ``{"schema", "sample", "batches": [{"id", "prompt",
    "claims"}]}`` (xrad's ``schema`` and ``batches[].id/prompt``, with each batch's claims as
    structured items, and how the claims were chosen)."""
    emitted = Emitted()
    out.write('{"schema": ' + json.dumps(SCHEMA) + ',\n "sample": ' + json.dumps(sample))
    out.write(',\n "batches": [')
    sep = "\n  "
    for batch in batches(items, size):
        record = {
            "id": batch_id(batch),
            "prompt": prompt(batch),
            "claims": [i.as_dict() for i in batch],
        }
        out.write(sep + json.dumps(record, ensure_ascii=False))
        sep = ",\n  "
        emitted.batches += 1
        emitted.claims += len(batch)
    out.write("\n]}\n")
    return emitted


# -- verdicts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    claim_id: str
    supported: bool
    reason: str


class VerdictError(ValueError):
    """The verdicts cannot be recorded; ``problems`` names each one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def read_verdicts(data: Any) -> list[Verdict]:
    """Verdicts from the judge's answer: ``{"verdicts": [...]}``, a bare list of verdicts, or
    a list of such answers (one per batch). Every problem is reported at once."""
    if isinstance(data, dict):
        if "verdicts" not in data:
            raise VerdictError(['no "verdicts" in the answer'])
        raw = data["verdicts"]
    else:
        raw = data
    if not isinstance(raw, list):
        raise VerdictError(['"verdicts" is a list of {claim_id, supported, reason}'])
    if raw and all(isinstance(x, dict) and "verdicts" in x for x in raw):
        raw = [v for answer in raw for v in (answer["verdicts"] or [])]
    problems: list[str] = []
    verdicts: list[Verdict] = []
    seen: dict[str, int] = {}
    for n, v in enumerate(raw, start=1):
        where = f"verdict {n}"
        if not isinstance(v, dict):
            problems.append(f"{where}: not an object")
            continue
        claim_id, supported, reason = v.get("claim_id"), v.get("supported"), v.get("reason", "")
        bad = []
        if not isinstance(claim_id, str) or not claim_id:
            bad.append("claim_id: a non-empty string")
        if not isinstance(supported, bool):
            bad.append(f"supported: {json.dumps(supported)} is not true or false")
        if not isinstance(reason, str):
            bad.append("reason: a string")
        if isinstance(claim_id, str) and claim_id in seen:
            bad.append(f"{claim_id} is answered twice (verdict {seen[claim_id]} too)")
        if bad:
            problems.extend(f"{where}: {b}" for b in bad)
            continue
        seen[claim_id] = n
        verdicts.append(Verdict(claim_id, supported, reason))
    if not verdicts and not problems:
        problems.append("no verdicts in the answer")
    if problems:
        raise VerdictError(problems)
    return verdicts


def record(ledger: Ledger, verdicts: list[Verdict]) -> dict[str, int]:
    """Write verdicts onto their claims in one transaction; ``{supported, refuted,
    unmatched}`` (a verdict for a claim the ledger does not hold is counted, not written)."""
    stats = {"supported": 0, "refuted": 0, "unmatched": 0}
    statement = (
        update(ClaimRow)
        .where(ClaimRow.id == bindparam("cid"))
        .values(verified=bindparam("ok"), verifier_note=bindparam("note"))
    )
    with ledger.engine.begin() as conn:
        for part in chunks(verdicts):
            known = set(
                conn.execute(
                    select(ClaimRow.id).where(ClaimRow.id.in_([v.claim_id for v in part]))
                ).scalars()
            )
            rows = [
                {"cid": v.claim_id, "ok": v.supported, "note": v.reason}
                for v in part
                if v.claim_id in known
            ]
            if rows:
                conn.execute(statement, rows)
            for v in part:
                key = "unmatched" if v.claim_id not in known else "supported"
                if key == "supported" and not v.supported:
                    key = "refuted"
                stats[key] += 1
    return stats


def refutation_rate(ledger: Ledger, worst: int = 8) -> dict[str, Any]:
    """``{judged, refuted, rate, worst_relations}``: the rate always with its n;
    the relations with the most refuted claims (ties by name)."""
    with ledger.engine.connect() as conn:
        judged = conn.execute(
            select(func.count()).select_from(ClaimRow).where(ClaimRow.verified.is_not(None))
        ).scalar_one()
        n = func.count().label("n")
        rows = conn.execute(
            select(ClaimRow.relation, n)
            .where(ClaimRow.verified.is_(False))
            .group_by(ClaimRow.relation)
            .order_by(n.desc(), ClaimRow.relation)
        ).all()
    refuted = sum(r[1] for r in rows)
    return {
        "judged": judged,
        "refuted": refuted,
        "rate": refuted / judged if judged else None,
        "worst_relations": [{"relation": r, "n": k} for r, k in rows[:worst]],
    }
