"""Property-based fuzzing of every parser of untrusted input: each input either parses or
raises the documented input error, and whatever parses can be sealed into a receipt."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.shared.admit import PacketError, admit
from groundswell.shared.canonical import canonical_json
from groundswell.shared.corpus import (
    InputError,
    InputFileError,
    parse_candidates,
    parse_claims,
    parse_schema,
)
from groundswell.shared.receipts import seal

FUZZ = settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# JSON-like values, with what JSON text can say but canonical JSON cannot: big integers,
# non-finite numbers, deep nesting, odd strings.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
claim_records = st.dictionaries(
    st.sampled_from(["id", "claim", "start", "end", "meta", "source"]), values, max_size=5
)


def _line(value: object) -> bytes:
    # json.dumps writes NaN/Infinity and big integers, as a careless producer would.
    return json.dumps(value).encode()


def _sealable(record: object) -> None:
    canonical_json(record)
    seal({"records": [record]})


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_claims_parse_or_fail_by_line(data):
    records, errors = parse_claims(data, "claims/f.jsonl")
    for line, record in records:
        assert isinstance(line, int) and "claim" in record
        _sealable(record)
    assert all(isinstance(e, InputError) and e.file == "claims/f.jsonl" for e in errors)


@FUZZ
@given(st.lists(st.one_of(claim_records, values), max_size=6), st.integers(0, 3))
def test_json_lines_as_claims_parse_or_fail_by_line_and_field(objects, depth):
    lines = [_line(o) for o in objects]
    if depth:
        lines.append(
            b'{"claim": "x", "deep": ' + b"[" * (10**depth * 50) + b"]" * (10**depth * 50) + b"}"
        )
    records, errors = parse_claims(b"\n".join(lines), "claims/f.jsonl")
    assert len(records) + len(errors) == sum(1 for line in lines if line.strip())
    for _, record in records:
        _sealable(record)
    for error in errors:
        assert error.line is not None and error.message


@FUZZ
@given(
    st.one_of(st.binary(max_size=300), st.lists(values, max_size=6).map(_line), values.map(_line))
)
def test_candidates_files_parse_or_raise_the_input_error(data):
    try:
        kept, errors = parse_candidates(data, "candidates/f.json")
    except InputFileError as exc:
        assert exc.error.file == "candidates/f.json" and exc.error.message
        return
    for item in kept:
        _sealable(item)
    assert all(e.field and e.field.startswith("[") for e in errors)


@FUZZ
@given(st.one_of(st.binary(max_size=200), values.map(_line)))
def test_schema_files_parse_or_raise_the_input_error(data):
    try:
        schema = parse_schema(data)
    except InputFileError as exc:
        assert exc.error.file == "schema.json"
        return
    _sealable(schema)


candidates = st.lists(
    st.one_of(
        values,
        st.fixed_dictionaries(
            {"id": st.text(max_size=4), "field": st.sampled_from(["rate", "year", "nope"])},
            optional={
                "value": values,
                "unit": st.sampled_from(["%", "USD", "", "x"]),
                "evidence": st.one_of(
                    values,
                    st.fixed_dictionaries(
                        {"text": st.text(max_size=30)},
                        optional={"start": st.integers(-5, 80), "end": st.integers(-5, 80)},
                    ),
                ),
            },
        ),
    ),
    max_size=5,
)
SCHEMA = {"fields": {"rate": {"type": "number", "unit": "%"}, "year": {"type": "integer"}}}
TEXT = "The rate was 4.5% in 2024; revenue rose to $7.0 million."


@FUZZ
@given(candidates)
def test_admission_packets_give_a_receipt_or_the_packet_error(items):
    try:
        kept, _ = parse_candidates(_line(items), "candidates/f.json")
    except InputFileError:
        return  # NaN or Infinity somewhere: the file is not JSON
    try:
        receipt = admit(TEXT, SCHEMA, kept)
    except PacketError:
        return
    assert len(receipt["decisions"]) == len(kept)
    seal({"receipt": receipt, "records": kept})
