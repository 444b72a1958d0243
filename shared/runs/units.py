"""One unit of work: verify the claims of one document, or admit its candidates.

Both the Celery tasks and the in-process runner call :class:`UnitRunner`, so the pipeline
and the in-process core compute the same receipts and the same counters.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.corpus import (
    DOCUMENTS,
    SCHEMA_KEY,
    InputError,
    InputFileError,
    Labels,
    candidates_key,
    claims_key,
    decode_document,
    doc_id_of,
    document_key,
    labels_key,
    parse_candidates,
    parse_claims,
    parse_labels,
    parse_schema,
    source_format,
)
from groundswell.shared.policies import PolicyVersion
from groundswell.shared.read.regions import span_pages, utf8_offsets
from groundswell.shared.receipts import (
    ReceiptError,
    admit_fingerprint,
    content_sha256,
    open_receipt,
    receipt_key,
    seal,
    verify_fingerprint,
)
from groundswell.shared.runs.index import TALLIED
from groundswell.shared.runs.reading import (
    CONFLICT,
    TIMEOUT,
    StoredReading,
    load_reading,
    read_source,
    reader,
)
from groundswell.shared.storage import ObjectStore, StorageRefused
from groundswell.shared.summary import admit_unit_counts, repair_unit_counts, verify_unit_counts

VERIFY = "verify"
ADMIT = "admit"
READ = "read"  # a document read from PDF, HTML or XML: its units wait for its reading
# Keep the result small: a run's error list is for reading, the counters carry the totals.
MAX_ERRORS_PER_UNIT = 50


def unit_key(kind: str, doc_id: str) -> str:
    return f"{kind}/{doc_id}"


def split_unit_key(key: str) -> tuple[str, str]:
    kind, _, doc_id = key.partition("/")
    return kind, doc_id


@dataclass
class UnitResult:
    kind: str
    doc_id: str
    status: str  # computed | cached | failed; in a dry run: would_compute | would_reuse
    receipt_key: str | None = None
    receipt_sha256: str | None = None
    document_bytes: int | None = None
    counts: Counter[str] = field(default_factory=Counter)
    errors: list[InputError] = field(default_factory=list)
    inputs: dict[str, str] | None = None  # sha256 of each input the receipt depends on
    policy_fingerprint: str | None = None
    reason: str | None = None  # why it was (or would be) computed

    @property
    def unit(self) -> str:
        return unit_key(self.kind, self.doc_id)

    def row(self) -> dict[str, Any]:
        """The unit's row in its batch's segment and in the run index."""
        row = {
            "unit": self.unit,
            "doc_id": self.doc_id,
            "kind": self.kind,
            "status": self.status,
            "receipt": self.receipt_key,
            "receipt_sha256": self.receipt_sha256,
            "bytes": self.document_bytes,
            "errors": [e.as_dict() for e in self.errors[:MAX_ERRORS_PER_UNIT]],
            "errors_total": len(self.errors),
            "inputs": self.inputs,
            "policy_fingerprint": self.policy_fingerprint,
            "reason": self.reason,
        }
        # What the report filters and counts a document by, without reading its receipt.
        row["tally"] = {k: v for k, v in sorted(self.counts.items()) if k.startswith(TALLIED)}
        if self.kind == ADMIT:
            # Decisions a person must look at: what the report shows first.
            row["flagged"] = self.counts.get("candidates.outcome.needs_verification", 0) + (
                self.counts.get("candidates.outcome.rejected", 0)
            )
        return row

    def counters(self) -> dict[str, int]:
        """What this unit adds to the run's counters (exactly once)."""
        out = dict(self.counts)
        out[f"units.{self.kind}.{self.status}"] = 1
        if self.reason:  # set only when the unit was (or would be) computed
            out[f"reasons.{self.kind}.{self.reason}"] = 1
        if self.errors:
            out["errors"] = out.get("errors", 0) + len(self.errors)
            out[f"errors.{self.kind}"] = out.get(f"errors.{self.kind}", 0) + len(self.errors)
        return out


@dataclass
class Document:
    """A unit's document: its file, the digest the receipt covers, and its text.

    For a text file the digest is the file's and the text its decoding; for a file read
    first (PDF, HTML, XML) the digest is the text's, ``source`` names the file's digest, its
    format and the reader, and ``failure`` says why its reading cannot be verified against.
    """

    file: str
    size: int
    sha256: str | None
    text: Callable[[], str]
    source: dict[str, Any] | None = None
    reading: StoredReading | None = None
    failure: InputError | None = None

    @property
    def layout(self) -> dict[str, Any] | None:
        return self.reading.layout if self.reading is not None else None

    def pages(self, start: Any, end: Any) -> list[int] | None:
        """The pages of the span [start, end) of a PDF with a layout, in UTF-8 byte offsets
        of its text (the layout's, and admission evidence's): the receipts' ``pages``."""
        return span_pages(self.layout, start, end) or None if self.layout else None


class Unread(Exception):
    """A dry run found no stored reading of the document: its units would be computed."""


def source_conflict(keys: list[str]) -> InputError:
    return InputError(
        keys[0],
        f"the document has {len(keys)} source files ({', '.join(keys)}): one id, one file",
    )


class UnitRunner:
    """Runs units of one corpus under one policy, writing receipts to ``output``."""

    def __init__(
        self,
        corpus: ObjectStore,
        output: ObjectStore,
        policy: PolicyVersion,
        *,
        only: str = "missing",
        dry_run: bool = False,
        previous: Callable[[str, str], dict[str, Any] | None] | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.corpus = corpus
        self.output = output
        self.policy = policy
        self.only = only
        self.dry_run = dry_run
        self._previous = previous  # (kind, doc_id) -> the unit's row in the previous run
        self.max_bytes = max_bytes  # an input larger than this fails its unit, unread
        self._schema: tuple[bytes, dict[str, Any]] | InputFileError | None = None
        self._admit_parts: tuple[Any, Any] | Exception | None = None
        # The last readings loaded: a document's verify and admit units often run together.
        self._readings: OrderedDict[tuple[str, str], StoredReading] = OrderedDict()

    # -- documents and their readings ---------------------------------------------------

    def find_source(self, doc_id: str) -> str | list[str] | None:
        """The source file of a document without a plan (one listing when it is not .txt)."""
        if self.corpus.exists(document_key(doc_id)):
            return None
        keys = [
            info.key
            for page in self.corpus.list_pages(f"{DOCUMENTS}{doc_id}.")
            for info in page
            if doc_id_of(info.key, DOCUMENTS) == doc_id
        ]
        return keys[0] if len(keys) == 1 else (keys or None)

    def _reading(self, sha: str, name: str) -> StoredReading | None:
        stored = self._readings.get((sha, name))
        if stored is None:
            stored = load_reading(self.output, sha, name)
            if stored is not None:
                self._remember(stored)
        return stored

    def _remember(self, stored: StoredReading) -> None:
        self._readings[(stored.source_sha256, stored.reader)] = stored
        while len(self._readings) > 4:
            self._readings.popitem(last=False)

    def document(self, doc_id: str, source: Any = None, read_now: bool = True) -> Document:
        """The unit's document; InputFileError when there is none to verify against (missing,
        two sources, reading timed out); without ``read_now``, Unread when it is not read."""
        if isinstance(source, list):
            raise InputFileError(source_conflict(source))
        file = source or document_key(doc_id)
        data = self._get(file)
        if data is None:
            raise InputFileError(InputError(file, "no such document"))
        sha = content_sha256(data)
        if source_format(file) in (None, "text"):
            return Document(file, len(data), sha, lambda: decode_document(data, file))
        name = reader()
        stored = self._reading(sha, name)
        if stored is None:
            if not read_now:
                raise Unread(file)
            # Its read unit has not stored it (a split or resent batch overtook it): read here.
            stored = read_source(self.output, data, file, sha, name)
            self._remember(stored)
        if stored.error is not None and stored.error["cause"] == TIMEOUT:
            raise InputFileError(InputError(file, stored.error["message"]))
        text = stored.text or ""
        return Document(
            file,
            len(data),
            stored.text_sha256,
            lambda: text,
            {"sha256": sha, "format": stored.format, "reader": name},
            stored,
            stored.failure(file),
        )

    def read(self, doc_id: str, source: Any) -> dict[str, int]:
        """A read unit: read the document's source file unless its reading is stored. Its
        counters: ``units.read.<computed|cached>``, ``read.failed.<cause>``, ``read.pages``."""
        if isinstance(source, list):
            return {"units.read.failed": 1, f"read.failed.{CONFLICT}": 1}
        file = source or document_key(doc_id)
        try:
            data = self._get(file)
        except InputFileError:
            data = None
        if data is None:
            return {"units.read.failed": 1, "read.failed.missing": 1}
        sha, name = content_sha256(data), reader()
        stored = self._reading(sha, name)
        status = "cached"
        if stored is None:
            if self.dry_run:
                return {"units.read.would_compute": 1}
            stored = read_source(self.output, data, file, sha, name)
            self._remember(stored)
            status = "computed"
        out = {f"units.read.{status}": 1}
        if stored.cause:
            out[f"read.failed.{stored.cause}"] = 1
        if stored.pages:
            out["read.pages"] = stored.pages
        return out

    # -- inputs -------------------------------------------------------------------------

    def _get(self, key: str) -> bytes | None:
        """An input's bytes, None when it is missing; one the store refuses (a link, a
        special file, access denied) is an input error naming it, never retried."""
        try:
            return self.corpus.get(key, max_bytes=self.max_bytes)
        except KeyError:
            return None
        except StorageRefused as exc:
            raise InputFileError(InputError(key, f"refused: {exc}")) from None

    def _labels(self, doc_id: str, kind: str) -> tuple[Labels | None, list[InputError]]:
        """The document's labels, and the bad entries this unit reports (each once: those of
        ``candidates`` on admission, the rest on verification). Bad entries are left out."""
        file = labels_key(doc_id)
        data = self._get(file)
        if data is None:
            return None, []
        labels, errors = parse_labels(data, file)
        admits = kind == ADMIT
        return labels, [e for e in errors if (e.field or "").startswith("candidates") == admits]

    def _schema_once(self) -> tuple[bytes, dict[str, Any]]:
        if self._schema is None:
            data = self._get(SCHEMA_KEY)
            if data is None:
                self._schema = InputFileError(
                    InputError(SCHEMA_KEY, "the corpus has no schema.json")
                )
            else:
                try:
                    self._schema = (data, parse_schema(data))
                except InputFileError as exc:
                    self._schema = exc
        if isinstance(self._schema, InputFileError):
            raise self._schema
        return self._schema

    def _prepared(self, schema: dict[str, Any]) -> tuple[Any, Any]:
        """The corpus schema and the admission policy, parsed once for every document.

        Re-raises the same PacketError for each unit when either is invalid."""
        if self._admit_parts is None:
            from groundswell.shared.admit.errors import PacketError
            from groundswell.shared.admit.packet import parse_policy, parse_schema

            try:
                self._admit_parts = (parse_schema(schema), parse_policy(self.policy.admit))
            except PacketError as exc:
                self._admit_parts = exc
        if isinstance(self._admit_parts, Exception):
            raise self._admit_parts
        return self._admit_parts

    def _failed(self, kind: str, doc_id: str, error: InputError, **kw: Any) -> UnitResult:
        return UnitResult(kind, doc_id, "failed", errors=[error], **kw)

    def _reuse(self, key: str) -> dict[str, Any] | None:
        try:
            data = self.output.get(key)
        except KeyError:
            return None
        try:
            return open_receipt(data, key)
        except ReceiptError:
            return None  # a damaged receipt is recomputed and replaced

    def _reason(self, kind: str, doc_id: str, inputs: dict[str, str]) -> str:
        """Why a unit has no usable receipt, against the previous run of this corpus."""
        if self.only == "all":
            return "recompute all"
        previous = self._previous(kind, doc_id) if self._previous else None
        if previous is None:
            return "new input"
        if previous.get("status") == "failed":
            return "previous failure"
        if previous.get("inputs") == inputs:
            return "changed policy part"
        return "changed input"

    def _run(
        self,
        kind: str,
        doc_id: str,
        fp: str,
        inputs: dict[str, str],
        size: int,
        compute: Callable[[], dict[str, Any]],
        tally: Callable[[dict[str, Any]], tuple[Counter[str], list[InputError]]],
        failure_file: str,
    ) -> UnitResult:
        """Reuse the receipt, or (dry run) say why it would be computed, or compute it."""
        key = receipt_key(kind, fp)
        receipt = None if self.only == "all" else self._reuse(key)
        reason = None
        if receipt is not None and self.only == "failed" and "failure" in receipt:
            receipt, reason = None, "previous failure"
        policy_fp = (
            self.policy.verify_fingerprint if kind == VERIFY else self.policy.admit_fingerprint
        )
        if receipt is None:
            reason = reason or self._reason(kind, doc_id, inputs)
        if self.dry_run:
            status = "would_reuse" if receipt is not None else "would_compute"
            return UnitResult(
                kind,
                doc_id,
                status,
                document_bytes=size,
                inputs=inputs,
                policy_fingerprint=policy_fp,
                reason=reason,
            )
        status = "cached"
        if receipt is None:
            status = "computed"
            receipt = compute()
            receipt["receipt_sha256"] = self._store(key, receipt, replace=self.only != "missing")
        digest = receipt["receipt_sha256"]
        if "failure" in receipt:  # a deterministic input failure, receipted like a result
            error = _error_from_body(receipt["failure"], failure_file)
            out = UnitResult(kind, doc_id, "failed", key, digest, size, errors=[error])
        else:
            counts, errors = tally(receipt)
            out = UnitResult(kind, doc_id, status, key, digest, size, counts, errors)
        out.inputs, out.policy_fingerprint, out.reason = inputs, policy_fp, reason
        return out

    def _store(self, key: str, body: dict[str, Any], replace: bool) -> str:
        data, digest = seal(body)
        if not self.output.put(key, data, create_only=not replace):
            # Another delivery of this unit wrote it first; receipts are deterministic.
            stored = self._reuse(key)
            if stored is not None:
                return stored["receipt_sha256"]
            self.output.put(key, data)
        return digest

    def _fingerprint(
        self, kind: str, doc: Document, data: bytes, schema_data: bytes | None = None
    ) -> tuple[str, dict[str, str]]:
        """The receipt fingerprint of a unit and the digests of the inputs it covers (for a
        document read first: the text's digest, and the source file's digest and reader)."""
        source = {"source": doc.source["sha256"]} if doc.source else {}
        if kind == VERIFY:
            inputs = {"document": doc.sha256, **source, "claims": content_sha256(data)}
            fp = verify_fingerprint(
                doc.sha256, inputs["claims"], self.policy.verify_fingerprint, doc.source
            )
            return fp, inputs  # type: ignore[return-value]
        assert schema_data is not None
        inputs = {
            "document": doc.sha256,
            **source,
            "candidates": content_sha256(data),
            "schema": content_sha256(schema_data),
        }
        fp = admit_fingerprint(
            doc.sha256,
            inputs["candidates"],
            inputs["schema"],
            self.policy.admit_fingerprint,
            doc.source,
        )
        return fp, inputs  # type: ignore[return-value]

    def locate(self, kind: str, doc_id: str) -> str | None:
        """The key of the receipt a unit has (or will have) under this policy, from its
        inputs alone; None when an input is missing or unusable (or not read yet)."""
        data = self._get(claims_key(doc_id) if kind == VERIFY else candidates_key(doc_id))
        if data is None:
            return None
        try:
            doc = self.document(doc_id, self.find_source(doc_id), read_now=False)
        except (InputFileError, Unread):
            return None
        schema_data = None
        if kind == ADMIT:
            try:
                schema_data = self._schema_once()[0]
            except InputFileError:
                return None
        return receipt_key(kind, self._fingerprint(kind, doc, data, schema_data)[0])

    def _unread(self, kind: str, doc_id: str) -> UnitResult:
        """A dry run's unit whose document is not read yet: it would be computed."""
        return UnitResult(kind, doc_id, "would_compute", reason="unread")

    def _document_for(self, kind: str, doc_id: str, source: Any) -> Document | UnitResult:
        try:
            return self.document(doc_id, source, read_now=not self.dry_run)
        except Unread:
            return self._unread(kind, doc_id)
        except InputFileError as exc:
            return self._failed(kind, doc_id, exc.error)

    # -- verification -------------------------------------------------------------------

    def verify(self, doc_id: str, source: Any = None) -> UnitResult:
        """``source``: the document's file when it is not ``documents/<id>.txt``."""
        try:
            return self._verify(doc_id, source)
        except InputFileError as exc:
            return self._failed(VERIFY, doc_id, exc.error)

    def _verify(self, doc_id: str, source: Any = None) -> UnitResult:
        claims_file = claims_key(doc_id)
        claims_data = self._get(claims_file)
        if claims_data is None:
            return self._failed(VERIFY, doc_id, InputError(claims_file, "no claims file"))
        doc = self._document_for(VERIFY, doc_id, source)
        if isinstance(doc, UnitResult):
            return doc
        doc_file = doc.file
        labels, label_errors = self._labels(doc_id, VERIFY)
        fp, inputs = self._fingerprint(VERIFY, doc, claims_data)
        return self._run(
            VERIFY,
            doc_id,
            fp,
            inputs,
            doc.size,
            lambda: self._verify_receipt(fp, doc_id, doc, claims_data, inputs),
            lambda receipt: (
                _verify_counts(receipt.get("records", []), labels),
                [_error_from_body(e, claims_file) for e in receipt.get("errors", [])]
                + label_errors,
            ),
            doc_file,
        )

    def _verify_receipt(
        self, fp: str, doc_id: str, doc: Document, claims_data: bytes, inputs: dict[str, str]
    ) -> dict[str, Any]:
        from groundswell.shared.verify import ENGINE_REVISION, Verifier

        repair = self.policy.repair
        body: dict[str, Any] = {
            "kind": VERIFY,
            "fingerprint": fp,
            "document_sha256": inputs["document"],
            "claims_sha256": inputs["claims"],
            "policy": {"verify_fingerprint": self.policy.verify_fingerprint},
            "engine": {"verify": ENGINE_REVISION},
        }
        if repair is not None:
            # Only a version that repairs says so: without repair the receipt is as before.
            body["policy"]["repair"] = repair.identity
            body["engine"]["repair"] = repair.identity["scorer_revision"]
        if doc.source:
            body["source"] = doc.source
        if doc.failure is not None:
            body["failure"] = _error_body(doc.failure)
            return body
        try:
            text = doc.text()
        except InputFileError as exc:
            body["failure"] = _error_body(exc.error)
            return body
        records, errors = parse_claims(claims_data, claims_key(doc_id))
        verifier = Verifier(text, self.policy.verify_policy)
        # The cascade shares the verifier's projections: the document is normalized once.
        repairer = repair.repairer(text, verifier) if repair is not None else None
        out: list[dict[str, Any]] = []
        for line, record in records:
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
        body["records"] = out
        body["errors"] = [_error_body(e) for e in errors]
        return body

    # -- admission ----------------------------------------------------------------------

    def admit(self, doc_id: str, source: Any = None) -> UnitResult:
        """``source``: the document's file when it is not ``documents/<id>.txt``."""
        try:
            return self._admit(doc_id, source)
        except InputFileError as exc:
            return self._failed(ADMIT, doc_id, exc.error)

    def _admit(self, doc_id: str, source: Any = None) -> UnitResult:
        cand_file = candidates_key(doc_id)
        cand_data = self._get(cand_file)
        if cand_data is None:
            return self._failed(ADMIT, doc_id, InputError(cand_file, "no candidates file"))
        doc = self._document_for(ADMIT, doc_id, source)
        if isinstance(doc, UnitResult):
            return doc
        try:
            schema_data, schema = self._schema_once()
        except InputFileError as exc:
            return self._failed(ADMIT, doc_id, exc.error, document_bytes=doc.size)
        labels, label_errors = self._labels(doc_id, ADMIT)
        fp, inputs = self._fingerprint(ADMIT, doc, cand_data, schema_data)
        return self._run(
            ADMIT,
            doc_id,
            fp,
            inputs,
            doc.size,
            lambda: self._admit_receipt(fp, doc_id, doc, cand_data, schema, inputs),
            lambda receipt: (
                admit_unit_counts(receipt["receipt"], labels),
                [_error_from_body(e, cand_file) for e in receipt.get("errors", [])] + label_errors,
            ),
            cand_file,
        )

    def _admit_receipt(
        self,
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
            "policy": {"admit_fingerprint": self.policy.admit_fingerprint},
            "engine": {"admit": ENGINE_REVISION, "spec": SPEC_VERSION},
        }
        if doc.source:
            body["source"] = doc.source
        if doc.failure is not None:
            body["failure"] = _error_body(doc.failure)
            return body
        try:
            text = doc.text()
            candidates, errors = parse_candidates(cand_data, candidates_key(doc_id))
        except InputFileError as exc:
            body["failure"] = _error_body(exc.error)
            return body
        # A document that is not NFC is admitted on its NFC form, the candidates' offsets moved
        # with it; the receipt says so, with both digests.
        packet = nfc_packet(text, candidates)
        if packet.note is not None:
            body["normalized"] = packet.note
        try:
            prepared_schema, prepared_policy = self._prepared(schema)
            # The run's policy version decides which admitter: groundgate's, or the guarded
            # one when the version has a guard (its receipts carry the guard's findings).
            admitter = admitter_for(
                self.policy, packet.text, prepared_schema, policy=prepared_policy
            )
            body["receipt"] = admitter.admit(packet.candidates)
        except PacketError as exc:
            body["failure"] = _error_body(_packet_error(doc_id, str(exc)))
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
        body["records"] = candidates  # as given; the NFC move is a function of them
        body["errors"] = [_error_body(e) for e in errors]
        return body


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


def _verify_counts(records: list[dict[str, Any]], labels: Labels | None) -> Counter[str]:
    counts = verify_unit_counts(
        ((r["record"].get("id"), r["certificate"]) for r in records), labels
    )
    if any("repair" in r for r in records):
        counts.update(
            repair_unit_counts(
                ((r["record"].get("id"), r["repair"]) for r in records if "repair" in r), labels
            )
        )
    return counts


def _error_body(error: InputError) -> dict[str, Any]:
    return error.as_dict()


def _error_from_body(body: dict[str, Any], default_file: str) -> InputError:
    return InputError(
        body.get("file") or default_file,
        body.get("message", ""),
        body.get("line"),
        body.get("field"),
    )


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
