"""RFC 8785 canonical JSON and the digests of SPEC §6, against known forms and groundgate."""

from __future__ import annotations

import math

import groundgate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.admit.digest import digest, text_digest
from groundswell.shared.canonical import CanonicalError, canonical_json, canonical_text

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (123456789012345680000.0, "123456789012345680000"),
        ({"b": 1, "a": [True, None, "é"]}, '{"a":[true,null,"é"],"b":1}'),
        ({"\ue000": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\ue000":1}'),  # UTF-16 order
        ("\u2028\x7f\x1f", '"\u2028\x7f\\u001f"'),
    ],
)
def test_known_canonical_forms(value, text):
    assert canonical_text(value) == text


def test_values_without_a_canonical_form_are_refused():
    for bad in (math.nan, math.inf, 2**53, object()):
        with pytest.raises(CanonicalError):
            canonical_json(bad)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_canonical_text_equals_groundgates(value):
    assert canonical_text(value) == groundgate.jcs(value)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["document", "candidate", "schema", "policy", "receipt"]), json_values)
def test_digests_equal_groundgates(kind, value):
    assert digest(kind, value) == groundgate.digest(kind, value)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_the_fast_text_digest_is_the_digest(text):
    assert text_digest("document", text) == digest("document", {"text": text})
    assert text_digest("reference", text) == groundgate.digest("reference", {"text": text})


# The cases that decided against the rfc8785 package (see shared/canonical.py): lone surrogates
# are written escaped, as groundgate and JSON.stringify write them (rfc8785 0.1.4 raises), and
# numbers and keys where a JCS implementation can go wrong.
EDGE_CASES = [
    ("a\ud800b", '"a\\ud800b"'),  # a lone high surrogate
    ("\udfff", '"\\udfff"'),  # a lone low surrogate
    ("\ud83d\ude00", '"\\ud83d\\ude00"'),  # a pair of lone surrogates is not a character
    ({"\uffff": 1, "\ud800": 2, "\U0001f600": 3}, '{"\\ud800":2,"\U0001f600":3,"\uffff":1}'),
    ("😀𝄞", '"😀𝄞"'),  # non-BMP characters are written as they are
    (-0.0, "0"),
    (1e21, "1e+21"),
    (1e-7, "1e-7"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.1 + 0.2, "0.30000000000000004"),
    (4.428281110579094e16, "44282811105790940"),  # an integral double above 2^53
    (2.0**53, "9007199254740992"),
    (-(2**53 - 1), "-9007199254740991"),
]


@pytest.mark.parametrize(("value", "text"), EDGE_CASES, ids=lambda v: ascii(v)[:24])
def test_edge_cases_are_written_as_groundgate_writes_them(value, text):
    assert canonical_text(value) == text == groundgate.jcs(value)
    assert canonical_json(value) == text.encode("utf-8", "surrogatepass")


def test_a_lone_surrogate_in_a_candidate_gets_groundgates_receipt():
    """JSON input can carry a lone surrogate ("\\ud800"); the receipt is groundgate's."""
    from groundswell.shared.admit import admit_packet
    from tests.shared.admit import conformance as conf

    vector = conf.load(conf.conformance_dir() / "vectors" / "01-admitted.json")
    vector["candidates"][0]["id"] = "a\ud800"
    vector["candidates"][1]["note"] = "\udc00 is carried through"
    assert admit_packet(vector) == conf.oracle_receipt(vector)
