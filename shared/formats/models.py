"""The records of each producer format, as pydantic models at the boundary.

Only what the conversion reads is declared; every other member is allowed and carried (the
producers add members between versions). Integers are strict: a ``"12"`` offset is a
producer's bug to report, not to guess at — except Document AI's, whose proto JSON writes an
int64 as a string by definition.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

_OPEN = ConfigDict(extra="allow", strict=True, populate_by_name=True)


class Producer(BaseModel):
    """Who made a record: the format, the producer's version, the model, and the prompt or
    schema version, as the file (or the command line) declares them."""

    model_config = ConfigDict(extra="forbid")

    format: str
    producer_version: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    schema_version: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


# --- LangExtract (lx.io.save_annotated_documents) ------------------------------------------

ALIGNMENT_STATUSES = ("match_exact", "match_greater", "match_lesser", "match_fuzzy")


class LxInterval(BaseModel):
    model_config = _OPEN
    start_pos: StrictInt | None = None
    end_pos: StrictInt | None = None


class LxExtraction(BaseModel):
    model_config = _OPEN
    extraction_class: StrictStr
    extraction_text: StrictStr
    char_interval: LxInterval | None = None
    alignment_status: (
        Literal["match_exact", "match_greater", "match_lesser", "match_fuzzy"] | None
    ) = None
    extraction_index: StrictInt | None = None
    group_index: StrictInt | None = None
    description: StrictStr | None = None
    attributes: dict[str, Any] | None = None


class LxDocument(BaseModel):
    """One line of a LangExtract JSONL file; ``extractions`` are validated one by one."""

    model_config = _OPEN
    document_id: StrictStr | None = None
    text: StrictStr
    extractions: list[Any] | None = None


# --- Anthropic Messages API citations ------------------------------------------------------


class _Citation(BaseModel):
    model_config = _OPEN
    cited_text: StrictStr
    document_index: StrictInt = Field(ge=0)
    document_title: StrictStr | None = None


class CharLocation(_Citation):
    type: Literal["char_location"]
    start_char_index: StrictInt
    end_char_index: StrictInt


class PageLocation(_Citation):
    type: Literal["page_location"]
    start_page_number: StrictInt  # 1-based
    end_page_number: StrictInt  # exclusive


class ContentBlockLocation(_Citation):
    type: Literal["content_block_location"]
    start_block_index: StrictInt
    end_block_index: StrictInt  # exclusive


ANTHROPIC_CITATIONS = {
    "char_location": CharLocation,
    "page_location": PageLocation,
    "content_block_location": ContentBlockLocation,
}


class AnthropicRecord(BaseModel):
    """One request's documents and the response message: ``documents`` (the document blocks
    as sent) or ``request`` (the request body, whose user messages hold them), and
    ``message`` or ``response`` (the Message JSON)."""

    model_config = _OPEN
    id: StrictStr | StrictInt | None = None
    documents: list[dict[str, Any]] | None = None
    request: dict[str, Any] | None = None
    message: dict[str, Any] | None = Field(default=None, alias="response")
    producer: dict[str, Any] | None = None


# --- Amazon Bedrock Converse citations -----------------------------------------------------


class BedrockRecord(BaseModel):
    """One Converse request and its response (``output.message.content`` holds
    ``citationsContent`` blocks), or ``documents`` (document blocks) beside the response."""

    model_config = _OPEN
    id: StrictStr | StrictInt | None = None
    documents: list[dict[str, Any]] | None = None
    request: dict[str, Any] | None = None
    response: dict[str, Any]
    producer: dict[str, Any] | None = None


class BedrockRange(BaseModel):
    model_config = _OPEN
    documentIndex: StrictInt = Field(default=0, ge=0)
    start: StrictInt
    end: StrictInt


# --- Azure AI Document Intelligence analyzeResult ------------------------------------------


class AzureSpan(BaseModel):
    model_config = _OPEN
    offset: StrictInt
    length: StrictInt = Field(ge=0)


class AzureField(BaseModel):
    model_config = _OPEN
    type: StrictStr | None = None
    content: StrictStr | None = None
    spans: list[AzureSpan] | None = None
    confidence: float | None = None
    valueString: StrictStr | None = None
    valueNumber: float | None = None
    valueInteger: StrictInt | None = None
    valueDate: StrictStr | None = None
    valueCurrency: dict[str, Any] | None = None
    valueArray: list[Any] | None = None
    valueObject: dict[str, Any] | None = None


class AzureDocument(BaseModel):
    model_config = _OPEN
    docType: StrictStr | None = None
    fields: dict[str, Any] | None = None


class AzureAnalyzeResult(BaseModel):
    model_config = _OPEN
    apiVersion: StrictStr | None = None
    modelId: StrictStr | None = None
    stringIndexType: Literal["textElements", "unicodeCodePoint", "utf16CodeUnit"] = "textElements"
    content: StrictStr
    documents: list[AzureDocument] | None = None


# --- Google Document AI Document -----------------------------------------------------------


def int64_value(value: Any) -> Any:
    # proto3 JSON writes int64 as a string; a missing index is 0 (proto3 drops defaults)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


class DocaiSegment(BaseModel):
    model_config = _OPEN
    startIndex: StrictInt = 0
    endIndex: StrictInt = 0

    _ints = field_validator("startIndex", "endIndex", mode="before")(int64_value)


class DocaiAnchor(BaseModel):
    model_config = _OPEN
    textSegments: list[DocaiSegment] | None = None
    content: StrictStr | None = None


class DocaiEntity(BaseModel):
    model_config = _OPEN
    type: StrictStr = Field(default="", alias="type")
    mentionText: StrictStr | None = None
    textAnchor: DocaiAnchor | None = None
    normalizedValue: dict[str, Any] | None = None
    confidence: float | None = None
    properties: list[Any] | None = None
    id: StrictStr | None = None


class DocaiDocument(BaseModel):
    model_config = _OPEN
    text: StrictStr = ""
    entities: list[Any] | None = None
    uri: StrictStr | None = None
