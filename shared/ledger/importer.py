"""Import of xrad-style claims: ``relations/<doc_id>.jsonl`` in a corpus, or one such file.

A line is xrad's import format (``xrad import``): the fields of its ``Claim`` (``claim_id``,
``source_id``, ``relation``, ``subject_id``, ``object_id``, ``modality``, ``polarity``,
``asserter``, ``hedge_markers``, ``qualifier``, ``confidence``, ``verified``,
``verifier_note``) and the ``quote``, with the entity types of MCP's ``record_claim``
(``subject_type``, ``object_type``) when the extractor gives them. Fields not read here are
kept with the claim (``extra``).

Each quote is located in its document (:mod:`.locate`), never taken at the offsets a line
gives. A line is refused, alone, with the file, line and field, when it is not a claim, when
it breaks the vocabulary (an unknown relation, a subject or object of the wrong type), or
when its quote is not in the document, or when its ``claim_id`` is not the import's to
write (an id of the pipeline's, ``fact:`` or ``quote:``, or one another document's claim
holds: imported ids are the document's own, and never replace another's claim); the other
lines go on. Unlike ``xrad import``, there
is no import without a document to verify against, the vocabulary is applied, and a bad
modality refuses its line instead of stopping the whole import.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundswell.shared.corpus import (
    InputFileError,
    _json_error,
    decode_document,
    document_key,
    json_problem,
    load_json,
)
from groundswell.shared.ledger.load import PIPELINE_PREFIXES
from groundswell.shared.ledger.locate import DocumentText
from groundswell.shared.ledger.models import MODALITIES, POLARITIES, entity_id
from groundswell.shared.ledger.store import ClaimIn, Ledger
from groundswell.shared.ledger.vocab import Vocabulary, load_vocabulary

RELATIONS = "relations/"
VOCABULARY_KEY = "vocabulary.yaml"
DEFAULT_ENTITY_TYPE = "Entity"  # what MCP's record_claim calls an untyped entity

# What the ledger reads of a line; every other field is carried in ``extra``.
_READ = {
    "claim_id",
    "source_id",
    "relation",
    "subject_id",
    "object_id",
    "subject_type",
    "object_type",
    "modality",
    "polarity",
    "asserter",
    "hedge_markers",
    "qualifier",
    "confidence",
    "verified",
    "verifier_note",
    "quote",
}
_REQUIRED_TEXT = ("claim_id", "relation", "subject_id", "object_id", "asserter")
_OPTIONAL_TEXT = ("source_id", "subject_type", "object_type", "qualifier", "verifier_note")

QUOTE_NOT_FOUND = "quote_not_found"
VOCABULARY = "vocabulary"
INVALID = "invalid"
NO_DOCUMENT = "no_document"
OWNED = "owned"
ASSERTER_NOT_QUOTED = "asserter_not_quoted"  # a warning: the claim is stored
REPORTED_MARK = " (rep."  # "Reuters (rep. agreement)": the name is what comes before


def asserter_warning(modality: str, asserter: str, quote: str) -> str | None:
    """Why a ``reported`` claim cannot be checked, when its quote does not name the one it
    credits (the asserter up to ``" (rep."``, found as a quote is: exact, any case, any
    spacing); None otherwise. A warning, never a refusal: the words are in the source."""
    if modality != "reported":
        return None
    name = asserter.split(REPORTED_MARK, 1)[0].strip()
    if not name or DocumentText(quote).locate(name) is not None:
        return None
    return (
        f"the quote does not name {name!r}, whom this reported claim credits: it cannot be "
        "checked. Widen the quote to include the attribution (ledger audit --emit --widen "
        "offers the span), or record the source itself as the asserter"
    )


@dataclass(frozen=True, slots=True)
class Refusal:
    """A line that was not stored: where (file, line, field), why (a code and a reason)."""

    file: str
    line: int | None
    field: str | None
    code: str
    message: str

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.field) if p is not None)
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "code": self.code,
            "message": self.message,
        }


@dataclass
class ImportReport:
    stored: int = 0
    files: int = 0
    tiers: Counter = field(default_factory=Counter)
    refusals: list[Refusal] = field(default_factory=list)
    vocabulary: str | None = None
    warnings: list[Refusal] = field(default_factory=list)  # lines stored, with a caution

    def as_dict(self) -> dict[str, Any]:
        return {
            "stored": self.stored,
            "refused": len(self.refusals),
            "files": self.files,
            "tiers": dict(sorted(self.tiers.items())),
            "vocabulary": self.vocabulary,
            "refusals": [r.as_dict() for r in self.refusals],
            "warned": len(self.warnings),
            "warnings": [w.as_dict() for w in self.warnings],
        }


# The columns of at most 200 characters a line fills (models: String(200)).
_SHORT = ("relation", "subject_type", "object_type")
SHORT_LIMIT = 200


def _unstorable(value: Any, where: str = "") -> tuple[str | None, str] | None:
    """The first string of a parsed line (key or value, at any depth) no database column can
    hold: a NUL (PostgreSQL's text and jsonb refuse U+0000) or a lone surrogate (not UTF-8)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                path = f"{at}.{key}" if at else str(key)
                stack.append((key, path))
                stack.append((sub, path))
        elif isinstance(item, list):
            stack.extend((sub, f"{at}[{i}]") for i, sub in enumerate(item))
        elif isinstance(item, str):
            if "\x00" in item:
                return at or None, "holds a NUL character (U+0000), which the ledger cannot store"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    at or None,
                    f"holds a lone surrogate (U+{ord(item[exc.start]):04X}), not text",
                )
    return None


def _field_problems(obj: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for name in _REQUIRED_TEXT:
        value = obj.get(name)
        if value is None:
            problems.append((name, "required"))
        elif not isinstance(value, str) or not value.strip():
            problems.append((name, "a non-empty string"))
    for name in _OPTIONAL_TEXT:
        if obj.get(name) is not None and not isinstance(obj[name], str):
            problems.append((name, "a string"))
    for name in _SHORT:
        value = obj.get(name)
        if isinstance(value, str) and len(value) > SHORT_LIMIT:
            problems.append((name, f"longer than {SHORT_LIMIT} characters ({len(value):,})"))
    quote = obj.get("quote")
    if quote is None:
        problems.append(("quote", "required: the verbatim words the claim rests on"))
    elif not isinstance(quote, str):
        problems.append(("quote", "a string"))
    elif not quote.strip():
        problems.append(("quote", "empty: a claim with no evidence cannot be checked"))
    modality = obj.get("modality", "assertion")
    if modality not in MODALITIES:
        problems.append(("modality", f"{modality!r} is not one of {', '.join(MODALITIES)}"))
    polarity = obj.get("polarity", "affirmed")
    if polarity not in POLARITIES:
        problems.append(("polarity", f"{polarity!r} is not one of {', '.join(POLARITIES)}"))
    markers = obj.get("hedge_markers", [])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        problems.append(("hedge_markers", "a list of strings (the words, verbatim)"))
    confidence = obj.get("confidence", 0.0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        problems.append(("confidence", "a number"))
    elif not math.isfinite(confidence):
        problems.append(("confidence", "a finite number"))
    if obj.get("verified") is not None and not isinstance(obj["verified"], bool):
        problems.append(("verified", "true, false or null (not yet judged)"))
    return problems


def claims_of_file(
    data: bytes,
    file: str,
    text: str | None,
    default_document: str,
    *,
    vocab: Vocabulary | None = None,
    fixed_document: bool = True,
    now: datetime | None = None,
    warnings: list[Refusal] | None = None,
) -> tuple[list[ClaimIn], list[Refusal]]:
    """The claims of one relations file and the lines refused, without touching a store.

    ``text`` is the document every quote is located in (None: the document is missing, and
    every claim is refused). ``fixed_document``: the file belongs to ``default_document``
    (a corpus's ``relations/<id>.jsonl``), so a line naming another ``source_id`` is refused.
    ``warnings`` is given the cautions of lines kept (:func:`asserter_warning`).
    """
    now = now or datetime.now(UTC)
    doc = DocumentText(text) if text is not None else None
    claims: list[ClaimIn] = []
    refusals: list[Refusal] = []

    def refuse(line: int, problems: list[tuple[str | None, str]], code: str) -> None:
        message = "; ".join(msg for _, msg in problems)
        refusals.append(Refusal(file, line, problems[0][0], code, message))

    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = load_json(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            refuse(number, [(None, f"not UTF-8 at byte {exc.start} of the line")], INVALID)
            continue
        except (ValueError, RecursionError) as exc:
            refuse(number, [(None, _json_error(exc))], INVALID)
            continue
        if not isinstance(obj, dict):
            refuse(number, [(None, "a claim is a JSON object")], INVALID)
            continue
        problem = json_problem(obj) or _unstorable(obj)
        if problem is not None:
            refuse(number, [problem], INVALID)
            continue
        problems: list[tuple[str | None, str]] = list(_field_problems(obj))
        if problems:
            refuse(number, problems, INVALID)
            continue
        if obj["claim_id"].startswith(PIPELINE_PREFIXES):
            refuse(number, [("claim_id", _pipelines(obj["claim_id"]))], OWNED)
            continue
        document_id = obj.get("source_id") or default_document
        if fixed_document and document_id != default_document:
            refuse(
                number,
                [("source_id", f"names {document_id!r}, but this file holds {default_document!r}")],
                INVALID,
            )
            continue
        subject_type = obj.get("subject_type")
        object_type = obj.get("object_type")
        if vocab is not None:
            problems = list(vocab.check_claim(obj["relation"], subject_type, object_type))
            if problems:
                refuse(number, problems, VOCABULARY)
                continue
        if doc is None:
            refuse(number, [("source_id", f"no document {document_key(document_id)}")], NO_DOCUMENT)
            continue
        quote = obj["quote"]
        at = doc.locate(quote)
        if at is None:
            refuse(
                number,
                [
                    (
                        "quote",
                        f"quote not found in {document_id}: {quote.strip()[:80]!r} (exact, "
                        "case-insensitive and whitespace-insensitive; never fuzzy)",
                    )
                ],
                QUOTE_NOT_FOUND,
            )
            continue
        caution = asserter_warning(obj.get("modality", "assertion"), obj["asserter"], quote)
        if caution is not None and warnings is not None:
            warnings.append(Refusal(file, number, "asserter", ASSERTER_NOT_QUOTED, caution))
        s_type = subject_type or DEFAULT_ENTITY_TYPE
        o_type = object_type or DEFAULT_ENTITY_TYPE
        subject = (entity_id(s_type, obj["subject_id"]), s_type, obj["subject_id"])
        obj_ent = (entity_id(o_type, obj["object_id"]), o_type, obj["object_id"])
        claim_id = obj["claim_id"]
        claims.append(
            ClaimIn(
                claim={
                    "id": claim_id,
                    "document_id": document_id,
                    "relation": obj["relation"],
                    "subject_entity_id": subject[0],
                    "object_entity_id": obj_ent[0],
                    "modality": obj.get("modality", "assertion"),
                    "polarity": obj.get("polarity", "affirmed"),
                    "asserter": obj["asserter"],
                    "hedge_markers": obj.get("hedge_markers", []),
                    "qualifier": obj.get("qualifier"),
                    "confidence": float(obj.get("confidence", 0.0)),
                    "verified": obj.get("verified"),
                    "verifier_note": obj.get("verifier_note"),
                    "vocabulary": vocab.name if vocab is not None else None,
                    "origin": f"{file}:{number}",
                    "extra": {k: v for k, v in obj.items() if k not in _READ},
                    "recorded_at": now,
                },
                evidence=[
                    {
                        "claim_id": claim_id,
                        "seq": 0,
                        "document_id": document_id,
                        "start": at.start,
                        "end": at.end,
                        "quote": quote,
                        "text": doc.text[at.start : at.end],
                        "tier": at.tier,
                    }
                ],
                entities=[subject, obj_ent],
            )
        )
    return claims, refusals


def _pipelines(claim_id: str) -> str:
    return (
        f"claim id {claim_id!r} is the pipeline's: ids beginning "
        f"{' or '.join(PIPELINE_PREFIXES)} are derived from a run's receipts (give the claim "
        "an id of its own)"
    )


def _owned_by(claim: ClaimIn, owner: str) -> Refusal:
    """The refusal of an imported claim whose id another document's claim holds."""
    file, _, line = claim.claim["origin"].rpartition(":")
    return Refusal(
        file,
        int(line),
        "claim_id",
        OWNED,
        f"claim id {claim.claim['id']!r} is document {owner!r}'s claim: an import replaces "
        f"only the claims of its own document ({claim.claim['document_id']!r}; give the "
        "claim an id of its own)",
    )


@dataclass(frozen=True)
class Source:
    """One relations file to import: its bytes' location and its document's."""

    file: str  # as named in refusals
    read: Any  # () -> bytes
    document: str
    read_text: Any  # () -> str | None
    fixed_document: bool


def _corpus_sources(url: str) -> Iterator[Source]:
    from groundswell.shared.storage import open_store

    store = open_store(url)

    def getter(key: str):
        return lambda: store.get(key)

    def text_of(key: str):
        def read() -> str | None:
            try:
                data = store.get(key)
            except KeyError:
                return None
            return decode_document(data, key)

        return read

    for page in store.list_pages(RELATIONS):
        for info in page:
            name = info.key[len(RELATIONS) :]
            if "/" in name or not name.endswith(".jsonl") or len(name) <= len(".jsonl"):
                continue
            doc_id = name[: -len(".jsonl")]
            yield Source(info.key, getter(info.key), doc_id, text_of(document_key(doc_id)), True)


def corpus_vocabulary(url: str) -> Vocabulary | None:
    """The corpus's own ``vocabulary.yaml``, if it has one."""
    from groundswell.shared.storage import open_store

    try:
        data = open_store(url).get(VOCABULARY_KEY)
    except KeyError:
        return None
    return load_vocabulary(data, VOCABULARY_KEY)


class CannotImport(ValueError):
    """The import cannot start (nothing to read, no document to verify against)."""


def sources_of(target: str, source_text: str | None = None) -> tuple[list[Source], str | None]:
    """The files to import from ``target`` (a corpus or one relations file), and where the
    corpus is (for its vocabulary), if there is one."""
    target = target.removeprefix("file://")
    path = Path(target)
    if target.startswith("s3://") or path.is_dir():
        if source_text is not None:
            raise CannotImport("--source-text is for one file; a corpus has its documents/")
        return list(_corpus_sources(target)), target
    if not path.is_file():
        raise CannotImport(f"{target}: no such corpus or file")
    corpus = path.parent.parent if path.parent.name == RELATIONS.rstrip("/") else None
    if source_text is not None:
        doc_path = Path(source_text)
        if not doc_path.is_file():
            raise CannotImport(f"{source_text}: no such file")
        document, fixed = doc_path.stem, False
    elif corpus is not None:
        document, fixed = path.stem, True
        doc_path = corpus / document_key(document)
    else:
        raise CannotImport(
            f"{target}: every quote is verified against its document: give --source-text, or "
            "import the file from a corpus's relations/ folder"
        )

    def read_text() -> str | None:
        if not doc_path.is_file():
            return None
        return decode_document(doc_path.read_bytes(), str(doc_path))

    return [Source(str(path), path.read_bytes, document, read_text, fixed)], (
        str(corpus) if corpus is not None else None
    )


def import_into(
    ledger: Ledger,
    target: str,
    *,
    source_text: str | None = None,
    vocab: Vocabulary | None = None,
    batch_claims: int = 5000,
    progress: Any = None,
    bulk: bool = False,
) -> ImportReport:
    """Import every relations file of ``target`` into ``ledger``; claims are written in
    transactions of about ``batch_claims`` (``bulk``: through ``Ledger.bulk_load``, which on
    PostgreSQL drops the indexes for the import and makes them again at its end). A corpus's
    ``vocabulary.yaml`` applies unless ``vocab`` is given. ``progress(done, total)`` is called
    after each file."""
    sources, corpus = sources_of(target, source_text)
    if vocab is None and corpus is not None:
        vocab = corpus_vocabulary(corpus)
    report = ImportReport(vocabulary=vocab.name if vocab is not None else None)
    if vocab is not None:
        ledger.write_vocabulary(vocab)

    def refuse(claim: ClaimIn, owner: str) -> None:
        report.refusals.append(_owned_by(claim, owner))
        report.tiers[claim.evidence[0]["tier"]] -= 1  # counted when its batch was drawn

    def reject(claim: ClaimIn, why: str) -> None:  # the database refused it: it alone
        file, _, line = claim.claim["origin"].rpartition(":")
        message = f"the ledger's database refused this claim: {why}"
        report.refusals.append(Refusal(file, int(line), None, INVALID, message))
        report.tiers[claim.evidence[0]["tier"]] -= 1

    def batches():
        pending: list[ClaimIn] = []
        owners: dict[str, str] = {}  # the pending claims' documents, by id
        for done, source in enumerate(sources, start=1):
            report.files += 1
            try:
                text = source.read_text()
            except InputFileError as exc:
                report.refusals.append(
                    Refusal(exc.error.file, exc.error.line, None, INVALID, str(exc))
                )
                text = None
            claims, refusals = claims_of_file(
                source.read(),
                source.file,
                text,
                source.document,
                vocab=vocab,
                fixed_document=source.fixed_document,
                warnings=report.warnings,
            )
            report.refusals.extend(refusals)
            for claim in claims:
                claim.claim["corpus"] = corpus  # whose claims they are (a team's key sees its own)
                # The store sees one claim per id of a batch: another document's line with
                # a pending id is refused here, as the store refuses one with a stored id.
                cid, document = claim.claim["id"], claim.claim["document_id"]
                if owners.setdefault(cid, document) != document:
                    report.refusals.append(_owned_by(claim, owners[cid]))
                    continue
                pending.append(claim)
            if len(pending) >= batch_claims:
                yield _counted(pending, report)
                pending, owners = [], {}
            if progress is not None:
                progress(done, len(sources))
        if pending:
            yield _counted(pending, report)

    if bulk:
        report.stored = ledger.bulk_load(batches(), refuse=refuse, reject=reject)
    else:
        report.stored = sum(
            ledger.write_claims(batch, refuse=refuse, reject=reject) for batch in batches()
        )
    report.tiers = +report.tiers  # without the tiers only refused claims had
    return report


def _counted(pending: list[ClaimIn], report: ImportReport) -> list[ClaimIn]:
    for claim in pending:
        report.tiers[claim.evidence[0]["tier"]] += 1
    return pending
