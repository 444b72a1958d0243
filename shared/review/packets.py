"""A packet under review: the inputs of one admission, its receipt, and its packet key.

Tasks and resolutions name their packet by the key groundgate's store gives it: the key of a
``packet@1`` object that names each input (text, schema, policy, references, packs,
candidates, judgments) and the receipt by their own keys. The key depends only on the inputs,
so the same packet admitted by groundgate or by groundswell has one key, and its tasks and
answers move between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from groundswell.shared.admit import SPEC_VERSION, PacketError, admit
from groundswell.shared.admit.packet import Schema, parse_schema
from groundswell.shared.review.formats import json_key, object_key


@dataclass(frozen=True)
class ReviewPacket:
    """The inputs of one ``admit`` call and the receipt they give."""

    text: str
    schema: dict[str, Any]
    candidates: list[Any]
    receipt: dict[str, Any]
    policy: dict[str, Any] | None = None
    document_id: str | None = None
    document_source: str | None = None
    references: list[Any] | None = None
    judgments: list[Any] | None = None
    packs: list[Any] | None = None
    # The policy version that admitted the packet in a run: a correction is admitted again
    # by that version's admitter (a guarded version's guards read it too), not groundgate's.
    # Not part of the packet's key, which names only the inputs and the receipt.
    version: Any = field(default=None, compare=False)
    # The layout of the document read from a PDF in a run (None otherwise): where the review
    # page draws the chosen spans on its pages. Not part of the packet's key either.
    layout: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def admitted(cls, packet: dict[str, Any]) -> ReviewPacket:
        """Admit a conformance-vector-shaped packet (``expected`` is ignored)."""
        if not isinstance(packet, dict):
            raise PacketError("a packet is a JSON object")
        for member in ("document", "schema", "candidates"):
            if member not in packet:
                raise PacketError(f"{member}: the packet has none")
        inputs = {
            "text": packet["document"],
            "schema": packet["schema"],
            "candidates": packet["candidates"],
            "policy": packet.get("policy"),
            "document_id": packet.get("document_id"),
            "document_source": packet.get("document_source"),
            "references": packet.get("references"),
            "judgments": packet.get("judgments"),
            "packs": packet.get("packs"),
        }
        return cls(receipt=cls._admit(inputs, inputs["candidates"], inputs["judgments"]), **inputs)

    @staticmethod
    def _admit(
        inputs: dict[str, Any], candidates: list[Any], judgments: Any, version: Any = None
    ) -> dict[str, Any]:
        return admit(
            inputs["text"],
            inputs["schema"],
            candidates,
            inputs["policy"],
            document_id=inputs["document_id"],
            document_source=inputs["document_source"],
            references=inputs["references"],
            judgments=judgments,
            packs=inputs["packs"],
            version=version,
        )

    def admit_again(self, candidates: list[Any], judgments: list[Any] | None) -> dict[str, Any]:
        """The receipt of these inputs with other candidates and judgments (a correction)."""
        inputs = {
            "text": self.text,
            "schema": self.schema,
            "policy": self.policy,
            "document_id": self.document_id,
            "document_source": self.document_source,
            "references": self.references,
            "packs": self.packs,
        }
        return self._admit(inputs, candidates, judgments, self.version)

    @cached_property
    def parsed_schema(self) -> Schema:
        return parse_schema(self.schema, self.packs)

    @cached_property
    def receipt_key(self) -> str:
        return json_key("receipt@1", self.receipt)

    @cached_property
    def key(self) -> str:
        """The key of the packet's ``packet@1`` object, as groundgate's store gives it."""
        packet = {
            "format": "packet@1",
            "spec": SPEC_VERSION,
            "document": {
                "id": self.document_id,
                "source": self.document_source,
                "text": object_key("text@1", self.text.encode("utf-8")),
            },
            "reading": None,
            "schema": json_key("schema@1", self.schema),
            "policy": None if self.policy is None else json_key("policy@1", self.policy),
            "references": [json_key("reference@1", r) for r in self.references or []],
            "packs": [json_key("pack@1", p) for p in self.packs or []],
            "candidates": json_key("candidates@1", self.candidates),
            "judgments": None
            if self.judgments is None
            else json_key("judgments@1", self.judgments),
            "receipt": self.receipt_key,
            "run": None,
        }
        return json_key("packet@1", packet)
