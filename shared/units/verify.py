"""The ``verify`` unit kind: verify the quotations of one document against its text.

A document with a claims file (``claims/<id>.jsonl``) has a verify unit. Its receipt holds a
certificate per claim (gtrex's verifier, under the run's policy version; with repair, the
cascade's result beside it), keyed by the fingerprint of the document, the claims and the
policy's verification part: a repeated run finds it and computes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groundswell.shared import metrics
from groundswell.shared.corpus import (
    CLAIMS,
    InputError,
    InputFileError,
    Labels,
    claims_key,
    parse_claims,
)
from groundswell.shared.producers import declared_input, producer_problem
from groundswell.shared.read.regions import recognised, utf8_offsets
from groundswell.shared.receipts import content_sha256, receipt_key, verify_fingerprint
from groundswell.shared.runs import kinds
from groundswell.shared.runs.units import (
    Document,
    UnitResult,
    UnitRunner,
    error_body,
    error_from_body,
)
from groundswell.shared.summary import (
    producer_claim_counts,
    repair_unit_counts,
    verify_unit_counts,
)

VERIFY = "verify"


def verify_unit(runner: UnitRunner, doc_id: str, source: Any = None) -> UnitResult:
    """``source``: the document's file when it is not ``documents/<id>.txt``."""
    return runner.listed_unit(VERIFY, doc_id, source, claims_key(doc_id), _reuse_listed, _verify)


def _reuse_listed(runner: UnitRunner, doc_id: str, keys: tuple[str, str]) -> UnitResult | None:
    """The unit reused unread (a text document whose inputs are listed as before)."""

    def fp(inputs: dict[str, str]) -> str | None:
        if "source" in inputs or not inputs.get("claims"):
            return None
        policy = runner.policy.verify_fingerprint
        return verify_fingerprint(
            inputs.get("document"), inputs["claims"], policy, producer=runner.producer()
        )

    def tally(receipt: dict[str, Any]) -> tuple[Counter[str], list[InputError]]:
        labels, label_errors = runner.labels(doc_id, candidates=False)
        errors = [error_from_body(e, keys[1]) for e in receipt.get("errors", [])]
        return _verify_counts(receipt, labels), errors + label_errors

    return runner.reuse_listed(VERIFY, doc_id, keys, fp, tally, runner.policy.verify_fingerprint)


def _verify(runner: UnitRunner, doc_id: str, source: Any = None) -> UnitResult:
    claims_file = claims_key(doc_id)
    found = runner.unit_inputs(VERIFY, doc_id, source, claims_file, "claims")
    if isinstance(found, UnitResult):
        return found
    claims_data, doc = found
    doc_file = doc.file
    labels, label_errors = runner.labels(doc_id, candidates=False)
    fp, inputs = fingerprint(runner, doc, claims_data)
    return runner.run_unit(
        VERIFY,
        doc_id,
        fp,
        inputs,
        doc.size,
        lambda: _verify_receipt(runner, fp, doc_id, doc, claims_data, inputs),
        lambda receipt: (
            _verify_counts(receipt, labels),
            [error_from_body(e, claims_file) for e in receipt.get("errors", [])] + label_errors,
        ),
        doc_file,
        runner.policy.verify_fingerprint,
    )


def _verify_receipt(
    runner: UnitRunner,
    fp: str,
    doc_id: str,
    doc: Document,
    claims_data: bytes,
    inputs: dict[str, str],
) -> dict[str, Any]:
    from groundswell.shared.verify import ENGINE_REVISION, Verifier

    repair = runner.policy.repair
    body: dict[str, Any] = {
        "kind": VERIFY,
        "fingerprint": fp,
        "document_sha256": inputs["document"],
        "claims_sha256": inputs["claims"],
        "policy": {"verify_fingerprint": runner.policy.verify_fingerprint},
        "engine": {"verify": ENGINE_REVISION},
    }
    if runner.producer() is not None:
        # The corpus's declared producer (its records' own ride in them); none: as before.
        body["producer"] = runner.producer()
    if repair is not None:
        # Only a version that repairs says so: without repair the receipt is as before.
        body["policy"]["repair"] = repair.identity
        body["engine"]["repair"] = repair.identity["scorer_revision"]
    if doc.source:
        body["source"] = doc.source
    if doc.failure is not None:
        body["failure"] = error_body(doc.failure)
        return body
    try:
        text = doc.text()
    except InputFileError as exc:
        body["failure"] = error_body(exc.error)
        return body
    records, errors = parse_claims(claims_data, claims_key(doc_id))
    verifier = Verifier(text, runner.policy.verify_policy)
    # The cascade shares the verifier's projections: the document is normalized once.
    repairer = repair.repairer(text, verifier) if repair is not None else None
    out: list[dict[str, Any]] = []
    for line, record in records:
        if "producer" in record and (problem := producer_problem(record["producer"])):
            # Verified as usual; counted under the corpus's producer, if it declares one.
            errors.append(InputError(claims_key(doc_id), problem, line, "producer"))
        start, end = record.get("start"), record.get("end")
        if start is not None and end is not None:
            if not 0 <= start < end <= len(text):
                # Offsets outside the document fail this record alone, like bad JSON.
                errors.append(
                    InputError(
                        claims_key(doc_id),
                        f"need 0 <= start < end <= {len(text)} (the document's length)",
                        line,
                        "end" if end > len(text) else "start",
                    )
                )
                continue
            cert = verifier.verify_at(record["claim"], start, end)
        elif repairer is not None:
            # A claim bound to offsets is verified there and never moved; the others go
            # through the cascade, whose first step is this certificate.
            result = repairer.repair(record["claim"])
            item = {"line": line, "record": record, "certificate": result.before.as_dict()}
            item["repair"] = repair_body(result)
            out.append(item)
            continue
        else:
            cert = verifier.verify(record["claim"])
        # The record is carried through untouched; the certificate sits beside it.
        out.append({"line": line, "record": record, "certificate": cert.as_dict()})
    if doc.layout:
        # Where each located span is in the PDF: its character offsets in UTF-8 bytes,
        # the layout's unit (one pass over the text for all of them).
        certs = [item["certificate"] for item in out]
        to_bytes = utf8_offsets(text, (c.get(k) for c in certs for k in ("start", "end")))
        for item, cert_body in zip(out, certs, strict=True):
            pages = doc.pages(
                to_bytes.get(cert_body.get("start")), to_bytes.get(cert_body.get("end"))
            )
            if pages:
                item["pages"] = pages
                if ocr := recognised(doc.layout, pages):
                    item["recognised"] = ocr  # read from a scan: engine and confidence
    body["records"] = out
    body["errors"] = [error_body(e) for e in errors]
    return body


# -- admission ----------------------------------------------------------------------


def repair_body(result: Any) -> dict[str, Any]:
    """A claim's repair in its receipt: gtrex's fields (``Repair.as_dict``) without
    ``before``, which is the record's ``certificate`` (:func:`repair_result` puts it back)."""
    body = result.as_dict()
    del body["before"]
    return body


def repair_result(item: dict[str, Any]) -> dict[str, Any] | None:
    """The full repair result (gtrex's fields, ``Repair.as_dict``) of a receipt's record, or
    None when the record was not repaired."""
    body = item.get("repair")
    return None if body is None else {**body, "before": item["certificate"]}


def _verify_counts(receipt: dict[str, Any], labels: Labels | None) -> Counter[str]:
    records = receipt.get("records", [])
    counts = verify_unit_counts(
        ((r["record"].get("id"), r["certificate"]) for r in records), labels
    )
    if any("repair" in r for r in records):
        counts.update(
            repair_unit_counts(
                ((r["record"].get("id"), r["repair"]) for r in records if "repair" in r), labels
            )
        )
    counts.update(producer_claim_counts(records, labels, receipt.get("producer")))
    return counts


def fingerprint(
    runner: UnitRunner, doc: Document, claims_data: bytes
) -> tuple[str, dict[str, str]]:
    """The receipt fingerprint of a unit and the digests of the inputs it covers (for a
    document read first: the text's digest, and the source file's digest and reader)."""
    source = {"source": doc.source["sha256"]} if doc.source else {}
    inputs = {"document": doc.sha256, **source, "claims": content_sha256(claims_data)}
    inputs.update(declared_input(runner.producer()))
    fp = verify_fingerprint(
        doc.sha256,
        inputs["claims"],
        runner.policy.verify_fingerprint,
        doc.source,
        runner.producer(),
    )
    return fp, inputs  # type: ignore[return-value]


def locate(runner: UnitRunner, doc_id: str) -> str | None:
    """The key of the receipt the document's unit has (or will have), from its inputs alone."""
    found = runner.located_inputs(doc_id, claims_key(doc_id))
    if found is None:
        return None
    try:
        return receipt_key(VERIFY, fingerprint(runner, found[1], found[0])[0])
    except InputFileError:
        return None  # a bad corpus.yaml: no receipt


def plan(doc: kinds.Listed) -> int | None:
    """A unit for a document with claims: it reads the document and its claims."""
    return doc.document_bytes + doc.seen[CLAIMS] if CLAIMS in doc.seen else None


def engines() -> dict[str, Any]:
    from groundswell.shared.verify import ENGINE_REVISION

    return {VERIFY: ENGINE_REVISION}


KIND = kinds.register(
    kinds.Kind(
        name=VERIFY,
        queue="verify",
        execute=kinds.each_document(verify_unit),
        inputs=(claims_key,),
        listing=CLAIMS,
        plan=plan,
        waits_for_reading=True,
        counters=("claims", "claims.", "repairs", "repairs.", "errors.verify"),
        always_summarized=True,
        engines=engines,
        unit=verify_unit,
        locate=locate,
        observe=metrics.observe_claims,
    )
)
