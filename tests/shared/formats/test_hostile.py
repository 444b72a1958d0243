"""Hostile records: any part of a valid record of each format replaced by any JSON value gives
a document or an input error naming the file, never an exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.shared.corpus import InputError
from groundswell.shared.formats import Converted, convert_file
from groundswell.shared.formats.mapped import load_mapping

TEXT = "Total 😀 sales were $1,496.5 million in 2019.\nNet income: 12%."
SEEDS: dict[str, Any] = {
    "langextract": {
        "document_id": "d",
        "text": TEXT,
        "extractions": [
            {
                "extraction_class": "amount",
                "extraction_text": "$1,496.5",
                "char_interval": {"start_pos": 20, "end_pos": 28},
                "alignment_status": "match_exact",
                "attributes": {"value": "1496.5", "field_text": ["sales"], "unit_text": "$"},
            }
        ],
    },
    "anthropic": {
        "documents": [{"type": "document", "source": {"type": "text", "data": TEXT}}],
        "message": {
            "model": "m",
            "content": [
                {
                    "type": "text",
                    "text": "t",
                    "citations": [
                        {
                            "type": "char_location",
                            "cited_text": "sales",
                            "document_index": 0,
                            "start_char_index": 8,
                            "end_char_index": 13,
                        }
                    ],
                }
            ],
        },
    },
    "bedrock": {
        "documents": [{"format": "txt", "source": {"text": TEXT}}],
        "response": {
            "output": {
                "message": {
                    "content": [
                        {
                            "citationsContent": {
                                "content": [{"text": "t"}],
                                "citations": [
                                    {
                                        "sourceContent": [{"text": "sales"}],
                                        "location": {
                                            "documentChar": {
                                                "documentIndex": 0,
                                                "start": 8,
                                                "end": 13,
                                            }
                                        },
                                    }
                                ],
                            }
                        }
                    ]
                }
            }
        },
    },
    "azure-di": {
        "analyzeResult": {
            "stringIndexType": "utf16CodeUnit",
            "content": TEXT,
            "documents": [
                {
                    "fields": {
                        "Total": {
                            "type": "currency",
                            "content": "$1,496.5",
                            "valueCurrency": {"amount": 1496.5, "currencyCode": "USD"},
                            "spans": [{"offset": 21, "length": 8}],
                            "valueObject": {
                                "Inner": {"content": "2019", "spans": [{"offset": 42, "length": 4}]}
                            },
                        }
                    }
                }
            ],
        }
    },
    "documentai": {
        "text": TEXT,
        "entities": [
            {
                "type": "total",
                "mentionText": "$1,496.5",
                "textAnchor": {"textSegments": [{"startIndex": "20", "endIndex": "28"}]},
                "normalizedValue": {
                    "moneyValue": {"currencyCode": "USD", "units": "1496", "nanos": 5}
                },
                "properties": [
                    {
                        "type": "year",
                        "mentionText": "2019",
                        "textAnchor": {"textSegments": [{"startIndex": 41, "endIndex": 45}]},
                    }
                ],
            }
        ],
    },
    "mapped": {
        "id": "d",
        "text": TEXT,
        "facts": [{"q": ["sales"], "s": 8, "e": 13, "v": 5, "f": "amount"}],
    },
}
MAPPING = load_mapping(
    b"""document: {id: $.id, text: $.text}
claims: {each: "$.facts[*]", quote: "$.q[*]", start: $.s, end: $.e, offsets: utf16}
candidates: {each: "$.facts[*]", field: $.f, value: $.v, quote: "$.q[0]", start: $.s, end: $.e}
""",
    "m.yaml",
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return copy


def test_the_seeds_convert():
    for fmt, seed in SEEDS.items():
        got = list(convert_file(fmt, json.dumps(seed).encode(), "f.json", {}, {"mapping": MAPPING}))
        assert all(isinstance(g, Converted) for g in got) and got, (fmt, [str(g) for g in got])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SEEDS)), st.data(), JSON)
def test_any_part_replaced_gives_a_document_or_an_input_error(fmt, data, new):
    seed = SEEDS[fmt]
    path = data.draw(st.sampled_from(_paths(seed)))
    record = _replaced(seed, path, new)
    for got in convert_file(fmt, json.dumps(record).encode(), "f.json", {}, {"mapping": MAPPING}):
        assert isinstance(got, Converted | InputError)
        if isinstance(got, InputError):
            assert got.file == "f.json"
        else:
            for c in got.claims:
                if "start" in c:
                    assert 0 <= c["start"] < c["end"] <= len(got.text or "")
