"""The ``admit`` unit kind: admit the candidate facts of one document under the corpus schema.

A document with a candidates file (``candidates/<id>.json``) has an admit unit. Its receipt
is groundgate's (or, for a policy version with a guard, the guarded admitter's) over the
document, the candidates and ``schema.json``, keyed by their fingerprint and the policy's
admission part.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from groundswell.shared import metrics
from groundswell.shared.corpus import (
    CANDIDATES,
    SCHEMA_KEY,
    InputError,
    InputFileError,
    candidates_key,
    document_key,
    parse_candidates,
)
from groundswell.shared.producers import declared_input, producer_problem
from groundswell.shared.read.regions import recognised
from groundswell.shared.receipts import admit_fingerprint, content_sha256, receipt_key
from groundswell.shared.runs import kinds
from groundswell.shared.runs.units import (
    Document,
    UnitResult,
    UnitRunner,
    error_body,
    error_from_body,
)
from groundswell.shared.summary import admit_unit_counts, producer_candidate_counts

ADMIT = "admit"


def admit_unit(runner: UnitRunner, doc_id: str, source: Any = None) -> UnitResult:
    """``source``: the document's file when it is not ``documents/<id>.txt``."""
    return runner.listed_unit(ADMIT, doc_id, source, candidates_key(doc_id), _reuse_listed, _admit)


def _reuse_listed(runner: UnitRunner, doc_id: str, keys: tuple[str, str]) -> UnitResult | None:
    """The unit reused unread (a text document whose inputs are listed as before, under the
    same schema: read once per runner, it is compared by its digest)."""

    def fp(inputs: dict[str, str]) -> str | None:
        if "source" in inputs or not inputs.get("candidates"):
            return None
        try:
            schema_sha = runner.schema_sha256()
        except InputFileError:
            return None
        if inputs.get("schema") != schema_sha:
            return None
        policy = runner.policy.admit_fingerprint
        return admit_fingerprint(
            inputs.get("document"),
            inputs["candidates"],
            schema_sha,
            policy,
            producer=runner.producer(),
        )

    def tally(receipt: dict[str, Any]) -> tuple[Counter[str], list[InputError]]:
        labels, label_errors = runner.labels(doc_id, candidates=True)
        errors = [error_from_body(e, keys[1]) for e in receipt.get("errors", [])]
        return _admit_counts(receipt, labels), errors + label_errors

    return runner.reuse_listed(ADMIT, doc_id, keys, fp, tally, runner.policy.admit_fingerprint)


def _admit(runner: UnitRunner, doc_id: str, source: Any = None) -> UnitResult:
    cand_file = candidates_key(doc_id)
    found = runner.unit_inputs(ADMIT, doc_id, source, cand_file, "candidates")
    if isinstance(found, UnitResult):
        return found
    cand_data, doc = found
    try:
        schema = runner.schema_once()[1]
    except InputFileError as exc:
        return runner.failed(ADMIT, doc_id, exc.error, document_bytes=doc.size)
    labels, label_errors = runner.labels(doc_id, candidates=True)
    fp, inputs = fingerprint(runner, doc, cand_data)
    return runner.run_unit(
        ADMIT,
        doc_id,
        fp,
        inputs,
        doc.size,
        lambda: _admit_receipt(runner, fp, doc_id, doc, cand_data, schema, inputs),
        lambda receipt: (
            _admit_counts(receipt, labels),
            [error_from_body(e, cand_file) for e in receipt.get("errors", [])] + label_errors,
        ),
        cand_file,
        runner.policy.admit_fingerprint,
    )


def _admit_receipt(
    runner: UnitRunner,
    fp: str,
    doc_id: str,
    doc: Document,
    cand_data: bytes,
    schema: dict[str, Any],
    inputs: dict[str, str],
) -> dict[str, Any]:
    from groundswell.shared.admit import (
        ENGINE_REVISION,
        SPEC_VERSION,
        PacketError,
        admitter_for,
    )
    from groundswell.shared.admit.normalize import nfc_packet

    body: dict[str, Any] = {
        "kind": ADMIT,
        "fingerprint": fp,
        "document_sha256": inputs["document"],
        "candidates_sha256": inputs["candidates"],
        "schema_sha256": inputs["schema"],
        "policy": {"admit_fingerprint": runner.policy.admit_fingerprint},
        "engine": {"admit": ENGINE_REVISION, "spec": SPEC_VERSION},
    }
    if runner.producer() is not None:
        # The corpus's declared producer (each candidate's own rides in ``records``).
        body["producer"] = runner.producer()
    if doc.source:
        body["source"] = doc.source
    if doc.failure is not None:
        body["failure"] = error_body(doc.failure)
        return body
    try:
        text = doc.text()
        candidates, errors = parse_candidates(cand_data, candidates_key(doc_id))
        errors += _producer_errors(candidates, errors, candidates_key(doc_id))
    except InputFileError as exc:
        body["failure"] = error_body(exc.error)
        return body
    # A document that is not NFC is admitted on its NFC form, the candidates' offsets moved
    # with it; the receipt says so, with both digests.
    packet = nfc_packet(text, candidates)
    if packet.note is not None:
        body["normalized"] = packet.note
    try:
        prepared_schema, prepared_policy = _prepared(runner, schema)
        # The run's policy version decides which admitter: groundgate's, or the guarded
        # one when the version has a guard (its receipts carry the guard's findings).
        admitter = admitter_for(runner.policy, packet.text, prepared_schema, policy=prepared_policy)
        body["receipt"] = admitter.admit(packet.candidates)
    except PacketError as exc:
        body["failure"] = error_body(_packet_error(doc_id, str(exc)))
        return body
    if doc.layout and packet.note is None:
        # Beside groundgate's receipt (never in it): the pages of each decision's document
        # evidence, by the decision's index in the receipt; its offsets are UTF-8 bytes.
        pages = {
            str(n): found
            for n, d in enumerate(body["receipt"].get("decisions") or [])
            if d.get("source") == "document" and isinstance(d.get("evidence"), dict)
            for found in [doc.pages(d["evidence"].get("start"), d["evidence"].get("end"))]
            if found
        }
        if pages:
            body["pages"] = pages
            on = sorted({n for found in pages.values() for n in found})
            if ocr := recognised(doc.layout, on):
                body["recognised"] = ocr  # evidence read from a scan: engine and confidence
    body["records"] = candidates  # as given; the NFC move is a function of them
    body["errors"] = [error_body(e) for e in errors]
    return body


def _admit_counts(receipt: dict[str, Any], labels: Any) -> Counter[str]:
    counts = admit_unit_counts(receipt["receipt"], labels)
    counts.update(producer_candidate_counts(receipt, labels))
    return counts


def _producer_errors(
    candidates: list[Any], errors: list[InputError], file: str
) -> list[InputError]:
    """A candidate whose ``producer`` member is no producer: an error naming ``[i].producer``
    (``i`` its place in the file: the items left out before it count); it is admitted as
    usual, counted under the corpus's producer, if it declares one."""
    if not any(isinstance(c, dict) and "producer" in c for c in candidates):
        return []
    dropped = {
        int(e.field[1 : e.field.index("]")])
        for e in errors
        if e.field and e.field.startswith("[") and "]" in e.field
    }
    places = (i for i in itertools.count() if i not in dropped)
    out = []
    for place, candidate in zip(places, candidates, strict=False):
        if isinstance(candidate, dict) and "producer" in candidate:
            problem = producer_problem(candidate["producer"])
            if problem is not None:
                out.append(InputError(file, problem, None, f"[{place}].producer"))
    return out


def _packet_error(doc_id: str, message: str) -> InputError:
    """Name the input that made the packet invalid (the document, the schema or a candidate)."""
    head = message.split(":", 1)[0].lower()
    if head.startswith("document"):
        file = document_key(doc_id)
    elif head.startswith("schema"):
        file = SCHEMA_KEY
    else:
        file = candidates_key(doc_id)
    return InputError(file, f"invalid admission packet: {message}")


def _prepared(runner: UnitRunner, schema: dict[str, Any]) -> tuple[Any, Any]:
    """The corpus schema and the admission policy, parsed once per runner for every document.

    Re-raises the same PacketError for each unit when either is invalid."""
    parts = runner.cache.get(ADMIT)
    if parts is None:
        from groundswell.shared.admit.errors import PacketError
        from groundswell.shared.admit.packet import parse_policy, parse_schema

        try:
            parts = (parse_schema(schema), parse_policy(runner.policy.admit))
        except PacketError as exc:
            parts = exc
        runner.cache[ADMIT] = parts
    if isinstance(parts, Exception):
        raise parts
    return parts


def fingerprint(runner: UnitRunner, doc: Document, cand_data: bytes) -> tuple[str, dict[str, str]]:
    """The receipt fingerprint of a unit and the digests of the inputs it covers (for a
    document read first: the text's digest, and the source file's digest and reader)."""
    source = {"source": doc.source["sha256"]} if doc.source else {}
    inputs = {
        "document": doc.sha256,
        **source,
        "candidates": content_sha256(cand_data),
        "schema": runner.schema_sha256(),
        **declared_input(runner.producer()),
    }
    fp = admit_fingerprint(
        doc.sha256,
        inputs["candidates"],
        inputs["schema"],
        runner.policy.admit_fingerprint,
        doc.source,
        runner.producer(),
    )
    return fp, inputs  # type: ignore[return-value]


def locate(runner: UnitRunner, doc_id: str) -> str | None:
    """The key of the receipt the document's unit has (or will have), from its inputs alone."""
    found = runner.located_inputs(doc_id, candidates_key(doc_id))
    if found is None:
        return None
    try:
        return receipt_key(ADMIT, fingerprint(runner, found[1], found[0])[0])
    except InputFileError:
        return None


def flagged(counts: Counter[str]) -> dict[str, Any]:
    """Decisions a person must look at: what the report shows first."""
    return {
        "flagged": counts.get("candidates.outcome.needs_verification", 0)
        + counts.get("candidates.outcome.rejected", 0)
    }


def plan(doc: kinds.Listed) -> int | None:
    """A unit for a document with candidates: it reads the document and its candidates."""
    return doc.document_bytes + doc.seen[CANDIDATES] if CANDIDATES in doc.seen else None


def engines() -> dict[str, Any]:
    from groundswell.shared.admit import ENGINE_REVISION, SPEC_VERSION

    return {ADMIT: ENGINE_REVISION, "admit_spec": SPEC_VERSION}


KIND = kinds.register(
    kinds.Kind(
        name=ADMIT,
        queue="admit",
        execute=kinds.each_document(admit_unit),
        inputs=(candidates_key, lambda _doc_id: SCHEMA_KEY),
        listing=CANDIDATES,
        plan=plan,
        waits_for_reading=True,
        counters=("candidates", "candidates.", "coverage.", "errors.admit"),
        always_summarized=True,
        engines=engines,
        unit=admit_unit,
        locate=locate,
        observe=metrics.observe_candidates,
        row_fields=flagged,
    )
)
