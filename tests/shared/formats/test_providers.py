"""Provider citations and document-AI results as corpora, their files built with each
producer's own SDK types where one is on PyPI (anthropic's message types,
azure-ai-documentintelligence's AnalyzeResult, google-cloud-documentai's Document; Bedrock's
Converse shapes are plain JSON in boto3, so those are written from the documented shape), over
real documents of ../shared/corpus. No model or service is called."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from anthropic.types import (
    CitationCharLocation,
    CitationContentBlockLocation,
    CitationPageLocation,
    Message,
    TextBlock,
    Usage,
)
from azure.ai.documentintelligence.models import (
    AnalyzedDocument,
    AnalyzeResult,
    CurrencyValue,
    DocumentField,
    DocumentSpan,
)
from click.testing import CliRunner
from google.cloud import documentai
from google.type import money_pb2

from groundswell.shared.admit import admit
from groundswell.shared.cli.app import main
from groundswell.shared.formats import Converted, convert_file
from groundswell.shared.formats.base import disagreements
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store

NUMBER = re.compile(r"\$\d{1,3}(?:,\d{3})*(?:\.\d+)?")
# A heading with characters outside the BMP (two UTF-16 code units each) before the facts.
HEADING = "𝐓𝐨𝐭𝐚𝐥𝐬 📄 — résumé\n"


@pytest.fixture(scope="module")
def real_text(shared_corpus: Path) -> str:
    """A real 10-K excerpt with dollar amounts in it."""
    for path in sorted((shared_corpus / "documents").glob("tatqa-*.txt")):
        text = path.read_text(encoding="utf-8")
        if len(NUMBER.findall(text)) >= 3 and len(text) < 6000:
            return text
    raise AssertionError("no document with three dollar amounts")


def _convert(fmt: str, value, file: str = "in.json", **options) -> list:
    data = json.dumps(value, ensure_ascii=False).encode()
    return list(convert_file(fmt, data, file, {"format": fmt}, options))


def _ok(got: list) -> list[Converted]:
    errors = [str(g) for g in got if not isinstance(g, Converted)]
    assert not errors, errors
    return got


# --- Anthropic ---------------------------------------------------------------------------


def _message(blocks: list[TextBlock]) -> dict:
    message = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=blocks,
        stop_reason="end_turn",
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=5),
    )
    return message.model_dump(mode="json", exclude_none=True)


def test_anthropic_char_page_and_block_citations_become_claims(real_text):
    amounts = list(NUMBER.finditer(real_text))[:3]
    good, wrong = amounts[0], amounts[1]
    cites = [
        CitationCharLocation(
            type="char_location",
            cited_text=good.group(0),
            document_index=0,
            start_char_index=good.start(),
            end_char_index=good.end(),
        ),
        # The cited text of another place: the producer's span does not hold it.
        CitationCharLocation(
            type="char_location",
            cited_text=wrong.group(0) + " and more",
            document_index=0,
            start_char_index=wrong.start(),
            end_char_index=wrong.end(),
        ),
        CitationPageLocation(
            type="page_location",
            cited_text=amounts[2].group(0),
            document_index=0,
            start_page_number=1,
            end_page_number=2,
        ),
        CitationContentBlockLocation(
            type="content_block_location",
            cited_text="second block",
            document_index=1,
            start_block_index=1,
            end_block_index=2,
        ),
    ]
    record = {
        "id": "call-1",
        "request": {
            "model": "claude-sonnet-4-5",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {
                                "type": "text",
                                "media_type": "text/plain",
                                "data": real_text,
                            },
                            "citations": {"enabled": True},
                        },
                        {
                            "type": "document",
                            "source": {
                                "type": "content",
                                "content": [
                                    {"type": "text", "text": "first block"},
                                    {"type": "text", "text": "second block"},
                                ],
                            },
                        },
                        {"type": "text", "text": "What were the totals?"},
                    ],
                }
            ],
        },
        "response": _message([TextBlock(type="text", text="Sales were high.", citations=cites)]),
    }
    doc, blocks = _ok(_convert("anthropic", record))
    assert (doc.doc_id, blocks.doc_id) == ("call-1-0", "call-1-1")
    assert doc.producer == {"format": "anthropic", "model": "claude-sonnet-4-5"}
    assert doc.text == real_text and blocks.text == "first block\nsecond block"
    first, second, page = doc.claims
    assert (second["start"], second["end"]) == wrong.span()
    assert (first["start"], first["end"]) == good.span() and first[
        "statement"
    ] == "Sales were high."
    assert page["pages"] == [1] and "start" not in page  # no PDF: nothing to read
    assert blocks.claims[0]["start"] == len("first block\n")
    counts = disagreements(doc.text, doc.claims)
    assert counts["exact_not_verified"] == 1  # the second citation, not the first


def test_an_anthropic_citation_past_the_text_names_its_field(real_text):
    cite = CitationCharLocation(
        type="char_location",
        cited_text="x",
        document_index=0,
        start_char_index=0,
        end_char_index=len(real_text) + 5,
    )
    record = {
        "documents": [{"type": "document", "source": {"type": "text", "data": real_text}}],
        "message": _message([TextBlock(type="text", text="t", citations=[cite])]),
    }
    (error,) = _convert("anthropic", [record])
    assert str(error).startswith("in.json: [0].message.content[0].citations[0].start_char_index:")
    assert "outside the text" in str(error)


# --- Bedrock -------------------------------------------------------------------------------


def test_bedrock_document_char_citations_become_claims(real_text, tmp_path):
    amount = next(NUMBER.finditer(real_text))
    record = {
        "id": "conv-1",
        "request": {
            "modelId": "anthropic.claude-3-5-sonnet",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "document": {
                                "format": "txt",
                                "name": "filing",
                                "source": {"text": real_text},
                                "citations": {"enabled": True},
                            }
                        },
                        {"text": "What were sales?"},
                    ],
                }
            ],
        },
        "response": {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "citationsContent": {
                                "content": [{"text": "Sales were reported."}],
                                "citations": [
                                    {
                                        "title": "filing",
                                        "sourceContent": [{"text": amount.group(0)}],
                                        "location": {
                                            "documentChar": {
                                                "documentIndex": 0,
                                                "start": amount.start(),
                                                "end": amount.end(),
                                            }
                                        },
                                    },
                                    {
                                        "sourceContent": [{"text": "Net sales"}],
                                        "location": {
                                            "documentPage": {
                                                "documentIndex": 0,
                                                "start": 1,
                                                "end": 1,
                                            }
                                        },
                                    },
                                ],
                            }
                        }
                    ],
                }
            }
        },
    }
    (doc,) = _ok(_convert("bedrock", record))
    assert doc.producer["model"] == "anthropic.claude-3-5-sonnet"
    char, page = doc.claims
    assert real_text[char["start"] : char["end"]] == char["claim"]
    assert page["pages"] == [1] and page["alignment"] == "page"
    source = tmp_path / "bedrock.jsonl"
    source.write_text(json.dumps(record) + "\n")
    bad = dict(record, id="conv-2", response={"output": {}})
    source.write_text(json.dumps(record) + "\n" + json.dumps(bad) + "\n")
    result = CliRunner().invoke(
        main, ["import", "bedrock", str(source), "--to", str(tmp_path / "c")]
    )
    assert result.exit_code == 1 and "bedrock.jsonl:2: response.output.message:" in result.stderr
    assert (tmp_path / "c" / "claims" / "conv-1.jsonl").is_file()


# --- Azure Document Intelligence -------------------------------------------------------------


def _azure(text: str, unit: str, spans: list[tuple[str, re.Match]]) -> dict:
    def offset(cp: int) -> int:
        if unit == "utf16CodeUnit":
            return len(text[:cp].encode("utf-16-le")) // 2
        return cp  # code points; text elements equal them in this text's fields' prefixes

    fields = {}
    for name, m in spans:
        amount = float(m.group(0).strip("$").replace(",", ""))
        fields[name] = DocumentField(
            type="currency",
            content=m.group(0),
            value_currency=CurrencyValue(amount=amount, currency_code="USD"),
            spans=[
                DocumentSpan(offset=offset(m.start()), length=offset(m.end()) - offset(m.start()))
            ],
            confidence=0.91,
        )
    result = AnalyzeResult(
        api_version="2024-11-30",
        model_id="prebuilt-invoice",
        string_index_type=unit,
        content=text,
        documents=[AnalyzedDocument(doc_type="invoice", fields=fields, confidence=0.9)],
    )
    return {"status": "succeeded", "analyzeResult": result.as_dict()}


@pytest.mark.parametrize("unit", ["utf16CodeUnit", "unicodeCodePoint"])
def test_azure_spans_past_non_bmp_characters_land_on_the_field(real_text, unit):
    text = HEADING + real_text
    amounts = list(NUMBER.finditer(text))[:2]
    (doc,) = _ok(
        _convert(
            "azure-di", _azure(text, unit, [("InvoiceTotal", amounts[0]), ("SubTotal", amounts[1])])
        )
    )
    assert doc.producer == {
        "format": "azure-di",
        "model": "prebuilt-invoice",
        "producer_version": "2024-11-30",
    }
    for c, m in zip(doc.claims, amounts, strict=True):
        assert (c["start"], c["end"]) == m.span()
    cand = doc.candidates[0]
    assert cand["field"] == "invoice_total" and cand["unit"] == "USD" and cand["confidence"] == 0.91
    raw = text.encode()
    ev = cand["evidence"][0]
    assert raw[ev["start"] : ev["end"]].decode() == amounts[0].group(0)
    schema = {
        "fields": {
            "invoice_total": {"type": "number", "unit": "USD"},
            "sub_total": {"type": "number", "unit": "USD"},
        }
    }
    receipt = admit(text, schema, doc.candidates)
    assert receipt["summary"]["admitted"] == 2, receipt["decisions"]


def test_azure_text_elements_count_user_perceived_characters(real_text):
    text = "e\u0301" * 3 + "🇫🇷\n" + real_text  # 3 + 1 + 1 text elements, 9 code points
    m = next(NUMBER.finditer(text))
    value = _azure(text, "textElements", [])
    value["analyzeResult"]["documents"][0]["fields"] = {
        "Total": {
            "type": "string",
            "content": m.group(0),
            "spans": [{"offset": m.start() - 4, "length": len(m.group(0))}],
        }
    }
    (doc,) = _ok(_convert("azure-di", value))
    assert (doc.claims[0]["start"], doc.claims[0]["end"]) == m.span()


def test_an_azure_offset_inside_a_surrogate_pair_is_an_error_naming_the_field(real_text):
    value = _azure(HEADING + real_text, "utf16CodeUnit", [])
    value["analyzeResult"]["documents"][0]["fields"] = {
        "Total": {"type": "string", "content": "x", "spans": [{"offset": 1, "length": 2}]}
    }
    (error,) = _convert("azure-di", value, "invoice.json")
    assert str(error) == (
        "invoice.json: analyzeResult.documents[0].fields.Total.spans: utf16 offset 1 splits a character"
    )


# --- Google Document AI -----------------------------------------------------------------------


def test_documentai_entities_become_claims_and_candidates(real_text, tmp_path):
    D = documentai.Document
    text = HEADING + real_text
    m = next(NUMBER.finditer(text))
    units, _, cents = m.group(0).strip("$").replace(",", "").partition(".")
    entity = D.Entity(
        type_="total_amount",
        mention_text=m.group(0),
        text_anchor=D.TextAnchor(
            text_segments=[D.TextAnchor.TextSegment(start_index=m.start(), end_index=m.end())]
        ),
        normalized_value=D.Entity.NormalizedValue(
            money_value=money_pb2.Money(
                currency_code="USD", units=int(units), nanos=int((cents or "0").ljust(9, "0"))
            )
        ),
        confidence=0.88,
        properties=[
            D.Entity(
                type_="currency",
                mention_text="$",
                text_anchor=D.TextAnchor(
                    text_segments=[
                        D.TextAnchor.TextSegment(start_index=m.start(), end_index=m.start() + 1)
                    ]
                ),
            )
        ],
    )
    path = tmp_path / "docai" / "invoice.json"
    path.parent.mkdir()
    path.write_text(D.to_json(D(text=text, entities=[entity])), encoding="utf-8")
    (doc,) = _ok(
        list(convert_file("documentai", path.read_bytes(), str(path), {"format": "documentai"}))
    )
    assert doc.doc_id == "invoice"
    total, currency = doc.candidates
    assert total["field"] == "total_amount" and total["unit"] == "USD"
    assert total["value"] == m.group(0).strip("$").replace(",", "")
    assert currency["field"] == "total_amount_currency"
    assert text[doc.claims[0]["start"] : doc.claims[0]["end"]] == m.group(0)
    schema = {
        "fields": {
            "total_amount": {"type": "number", "unit": "USD"},
            "total_amount_currency": {"type": "string"},
        }
    }
    result = CliRunner().invoke(
        main,
        [
            "import",
            "documentai",
            str(path.parent),
            "--to",
            str(tmp_path / "c"),
            "--schema",
            _schema(tmp_path, schema),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # "$" alone is no quotation the verifier grounds (no letter or digit): the one disagreement.
    assert report["documents"] == 1 and report["disagreements"]["exact_not_verified"] == 1
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    runner = UnitRunner(open_store(str(tmp_path / "c")), output, registry.resolve("default@1"))
    assert runner.unit("admit", "invoice").counts["candidates.outcome.admitted"] >= 1
    verified = runner.unit("verify", "invoice").counts
    assert verified["claims"] == 2 and verified["claims.accepted"] == 1


def _schema(tmp_path: Path, schema: dict) -> str:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return str(path)


def test_an_anthropic_page_citation_of_a_pdf_is_bound_on_its_page(tmp_path):
    import base64

    from tests.shared.read import minipdf

    pdf = minipdf.build(
        [
            minipdf.text(72, 700, "Revenue was 391,035 in fiscal 2024."),
            minipdf.text(72, 700, "Revenue guidance is withdrawn."),
        ]
    )
    cites = [
        CitationPageLocation(
            type="page_location",
            cited_text=text,
            document_index=0,
            start_page_number=page,
            end_page_number=page + 1,
        )
        for text, page in (("Revenue was 391,035", 1), ("guidance is withdrawn", 1))
    ]
    record = {
        "id": "pdf-call",
        "documents": [
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": base64.b64encode(pdf).decode(),
                },
            }
        ],
        "message": _message([TextBlock(type="text", text="Revenue rose.", citations=cites)]),
    }
    src = tmp_path / "calls.jsonl"
    src.write_text(json.dumps(record) + "\n")
    result = CliRunner().invoke(
        main, ["import", "anthropic", str(src), "--to", str(tmp_path / "c"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # The second quotation is on page 2, not the page cited.
    assert report["pages"] == {"elsewhere": 1, "located": 1}
    assert (tmp_path / "c" / "documents" / "pdf-call.pdf").read_bytes() == pdf
    bound, moved = (json.loads(c) for c in (tmp_path / "c" / "claims" / "pdf-call.jsonl").open())
    assert bound["pages"] == [1] and bound["end"] - bound["start"] == len("Revenue was 391,035")
    assert "start" not in moved
