"""The unsound ``ocr`` tier: the letters a recogniser confuses folded as one, offered by the
``ocr`` ladder and ``sensitivity --ocr``, never by a built-in policy's accepted tiers."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.text.ladder import BUILTIN_LADDERS, default_ladder
from groundswell.shared.text.transforms import FoldOcrConfusions, transform_from_spec
from groundswell.shared.verify.engine import Verifier
from groundswell.shared.verify.policy import (
    BUILTIN_VERIFY_POLICIES,
    DEFAULT,
    PolicyError,
    VerifyPolicy,
    ocr_variant,
)

SCAN = "The Cornpany reported net incorne of $1O.5 million for the exam- ple year, vvith growth."


@pytest.mark.parametrize(
    ("text", "folded"),
    [("rn", "m"), ("0", "o"), ("1", "l"), ("i", "l"), ("|", "l"), ("vv", "w"),
     ("exam- ple", "example"), ("co- operate", "cooperate"), ("10 - 12", "lo - l2"),
     ("well- 12", "well- l2"), ("burn", "bum")],
)  # fmt: skip
def test_the_confusions_fold_to_one_side(text, folded):
    assert FoldOcrConfusions().apply(text) == folded


def test_the_step_is_registered_and_round_trips_its_spec():
    step = FoldOcrConfusions()
    assert transform_from_spec(step.spec()) == step


def test_the_built_in_policies_neither_have_nor_accept_the_tier():
    for policy in BUILTIN_VERIFY_POLICIES.values():
        assert "ocr" not in policy.resolved_ladder.names
    ladder = BUILTIN_LADDERS["ocr"]()
    assert ladder.names == ["exact", "whitespace", "typography", "case", "ocr", "skeleton"]
    assert not ladder.tiers[ladder.index_of("ocr")].sound
    # the default ladder is the ocr ladder without its ocr tier: the same steps otherwise
    assert [t for t in ladder.tiers if t.name != "ocr"] == list(default_ladder().tiers)


def test_a_policy_on_the_ocr_ladder_reports_the_tier_with_the_scans_offsets():
    policy = VerifyPolicy(name="scan", ladder_name="ocr")
    assert policy.accept_tier == "case"  # the last sound tier: ocr is reported, not grounded
    verifier = Verifier(SCAN, policy)
    for claim, span in [
        ("net income of $10.5 million", "net incorne of $1O.5 million"),
        ("The Company reported", "The Cornpany reported"),
        ("example year, with growth", "exam- ple year, vvith growth"),
    ]:
        cert = verifier.verify(claim)
        assert (cert.verdict, cert.tier, cert.grounded) == ("grounded_loose", "ocr", False)
        assert SCAN[cert.start : cert.end] == span
    assert Verifier(SCAN, DEFAULT).verify("The Company reported").verdict == "unlocated"
    with pytest.raises(PolicyError, match="accepts the unsound tier 'ocr'"):
        VerifyPolicy(name="scan", ladder_name="ocr", accept_through="ocr")


def confused(text: str, rng: random.Random) -> str:
    """``text`` as a recogniser might misread it: some m as rn, o as 0, l as 1, w as vv."""
    swaps = {"m": "rn", "o": "0", "l": "1", "w": "vv"}
    return "".join(swaps[c] if c in swaps and rng.random() < 0.3 else c for c in text)


def test_real_sentences_misread_are_found_at_the_ocr_tier_only(shared_corpus):
    """Sentences of real documents, their source misread: the default policy finds none of
    them, its ocr variant locates each at the ocr tier, at the misread sentence's offsets."""
    rng = random.Random(35)
    docs = sorted((shared_corpus / "documents").glob("*.txt"))[::97][:12]
    found = 0
    for path in docs:
        text = path.read_text(encoding="utf-8")[:20_000]
        sentences = [s.strip() for s in text.split(". ") if 40 <= len(s.strip()) <= 160]
        for sentence in sentences[:3]:
            if not sentence.isascii() or not any(c in sentence for c in "mwol"):
                continue
            misread = confused(sentence, rng)
            if misread == sentence:
                continue
            source = text.replace(sentence, misread)
            at = source.index(misread)
            cert = Verifier(source, ocr_variant(DEFAULT)).verify(sentence)
            if Verifier(source, DEFAULT).verify(sentence).grounded:
                continue  # the sentence occurs elsewhere as it is
            assert cert.tier == "ocr" and not cert.grounded, (path.name, sentence)
            assert source[cert.start : cert.end] == misread, (path.name, sentence)
            assert cert.start == at
            found += 1
    assert found >= 10


def test_sensitivity_counts_what_only_the_ocr_tier_finds(tmp_path):
    (tmp_path / "scan.txt").write_text(SCAN)
    claims = [
        {"id": "a", "claim": "The Company reported", "source_path": "scan.txt"},
        {"id": "b", "claim": "net income of $10.5 million", "source_path": "scan.txt"},
        {"id": "c", "claim": "The Cornpany reported", "source_path": "scan.txt"},
        {"id": "d", "claim": "a sentence that is not there", "source_path": "scan.txt"},
    ]
    (tmp_path / "claims.jsonl").write_text("".join(json.dumps(c) + "\n" for c in claims))
    done = CliRunner().invoke(main, ["sensitivity", str(tmp_path / "claims.jsonl"), "--ocr",
                                     "--root", str(tmp_path), "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)["policies"]
    for name in ("strict", "default", "permissive"):
        assert result[name]["ocr_explained"] == 2
        assert result[name]["grounded_rate"] == 0.25  # the ocr tier grounds nothing
    plain = CliRunner().invoke(main, ["sensitivity", str(tmp_path / "claims.jsonl"),
                                      "--root", str(tmp_path)])  # fmt: skip
    assert plain.exit_code == 0 and "ocr only" not in plain.output
    shown = CliRunner().invoke(main, ["sensitivity", str(tmp_path / "claims.jsonl"), "--ocr",
                                      "--root", str(tmp_path)])  # fmt: skip
    assert "ocr only" in shown.output and "50.00%" in shown.output


def test_a_policy_with_its_own_ladder_has_no_ocr_variant():
    ladder = default_ladder()
    custom = VerifyPolicy(name="mine", ladder_name="custom", ladder=ladder)
    with pytest.raises(PolicyError, match="its own ladder"):
        ocr_variant(custom)
