"""The sampled k-gram index finds every occurrence that a plain scan finds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.text.index import KGramIndex


def naive(text: str, pattern: str) -> list[int]:
    return [i for i in range(len(text) - len(pattern) + 1) if text.startswith(pattern, i)]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.text(alphabet="ab", min_size=0, max_size=400),
    st.text(alphabet="ab", min_size=6, max_size=40),
    st.integers(2, 5),
    st.integers(1, 8),
)
def test_find_all_equals_a_scan(text: str, pattern: str, k: int, stride: int) -> None:
    index = KGramIndex(text, k=k, stride=stride)
    if len(pattern) < index.min_pattern:
        with pytest.raises(ValueError):
            index.find_all(pattern)
        return
    assert index.find_all(pattern) == naive(text, pattern)


def test_repeated_text() -> None:
    text = "thecompanyreportedrevenue" * 50
    index = KGramIndex(text)
    assert index.find_all("companyreportedrevenuethe") == naive(text, "companyreportedrevenuethe")
    assert index.find_all("nothingofthesortanywhere") == []
