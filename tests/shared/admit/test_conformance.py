"""groundgate's conformance suite, the test of record for admission (SPEC v0.11).

Each vector must give the expected outcome, codes, missing parts, parts, evidence units,
coverage and relations, re-derive cleanly, and produce a receipt byte-identical to
groundgate 0.11.0's. Each invalid packet must be refused with no receipt. Vectors that do not
pass yet are listed in ``conformance_expected_failures.txt``; the list is strict: a listed
vector that passes fails the test, so the list can only shrink.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared.admit import conformance as conf

_DIR = conf.conformance_dir()
_VECTORS = conf.vector_files() if _DIR.is_dir() else []
_INVALID = conf.invalid_files() if _DIR.is_dir() else []
_EXPECTED_FAILURES = conf.expected_failures()


def test_the_conformance_suite_is_there():
    assert _DIR.is_dir(), (
        f"groundgate's conformance suite is not at {_DIR}: it is read from "
        "../shared/reference/groundgate/conformance (the parent of GROUNDSWELL_SHARED_CORPUS)"
    )
    assert len(_VECTORS) == 150
    assert len(_INVALID) == 127


def test_the_expected_failures_name_real_vectors():
    names = {conf.load(p)["name"] for p in _VECTORS}
    unknown = _EXPECTED_FAILURES - names
    assert not unknown, f"expected failures that are no vectors: {sorted(unknown)}"


def test_no_core_or_intermediate_vector_is_an_expected_failure():
    layers = conf.layers()
    listed = sorted(n for n in _EXPECTED_FAILURES if layers.get(n) in ("core", "intermediate"))
    assert not listed, f"core and intermediate vectors must all pass: {listed}"


@pytest.mark.parametrize("path", _VECTORS, ids=lambda p: p.stem)
def test_vector(path: Path):
    vector = conf.load(path)
    problems = conf.problems(vector)
    if vector["name"] in _EXPECTED_FAILURES:
        assert problems, (
            f"{vector['name']} passes now: remove it from conformance_expected_failures.txt"
        )
    else:
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", _INVALID, ids=lambda p: p.stem)
def test_invalid_packet_is_refused(path: Path):
    vector = conf.load(path)
    assert vector["expected"] == {"error": True}
    assert conf.refused(vector), f"{path.stem} was admitted; SPEC §2 makes it invalid"
