"""Vocabularies: xrad's YAML, read strictly; a claim's problems in xrad's words."""

from __future__ import annotations

import pytest

from groundswell.shared.ledger.vocab import VocabularyError, load_vocabulary, read_vocabulary

YAML = """
name: contracts
entity_types: [Party, Obligation, Instrument, Date]
relations:
  ACQUIRED: {subject: [Party], object: [Party], description: one party acquired another}
  GOVERNED_BY: {subject: [Obligation], object: [Instrument]}
  MENTIONS:
"""


def vocab():
    return load_vocabulary(YAML, "contracts.yaml")


def test_an_unknown_relation_lists_the_options_or_suggests_a_near_one():
    assert vocab().check_claim("SORT_OF_RELATED_TO") == [
        (
            "relation",
            "unknown relation 'SORT_OF_RELATED_TO' — use one of: ACQUIRED, GOVERNED_BY, MENTIONS",
        )
    ]
    assert vocab().check_claim("ACQUIRE") == [
        ("relation", "unknown relation 'ACQUIRE' — did you mean ACQUIRED?")
    ]
    assert vocab().check_claim("acquired")[0][1].endswith("did you mean ACQUIRED?")


def test_types_are_checked_on_both_sides_and_against_the_entity_types():
    v = vocab()
    assert v.check_claim("ACQUIRED", "Party", "Party") == []
    assert v.check_claim("ACQUIRED") == []  # no types given: nothing to check
    assert v.check_claim("ACQUIRED", "Instrument", "Party") == [
        ("subject_type", "ACQUIRED takes subject of type Party, not 'Instrument'")
    ]
    assert v.check_claim("GOVERNED_BY", "Obligation", "Party")[0][0] == "object_type"
    # A relation of any type still holds its types to the vocabulary's (xrad: subject only).
    assert v.check_claim("MENTIONS", "Party", "Martian") == [
        ("object_type", "unknown entity type 'Martian' — use one of: Party, Obligation, "
         "Instrument, Date")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: x\nrelation: {}\n", "relation: not a vocabulary key"),
        ("relations:\n  A: {subjects: [Party]}\n", "relations.A.subjects: not a relation key"),
        ("relations:\n  A: {symmetric: maybe}\n", "relations.A.symmetric: true or false"),
        ("relations:\n  A: {subject: [1]}\n", "relations.A.subject"),
        ("- a\n- b\n", "a vocabulary is a mapping"),
        ("relations: [A, {B: 1}]\n", "relations"),
        ("relations: {A: [", "not YAML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_key(text, said):
    with pytest.raises(VocabularyError) as caught:
        load_vocabulary(text, "v.yaml")
    assert str(caught.value).startswith("v.yaml: ") and said in str(caught.value)


def test_a_list_of_relation_names_is_relations_of_any_type_and_the_stem_names_it(tmp_path):
    path = tmp_path / "draft.yaml"
    path.write_text("relations: [OWNS, ACQUIRED]\n", encoding="utf-8")
    v = read_vocabulary(path)
    assert v.name == "draft" and sorted(v.relations) == ["ACQUIRED", "OWNS"]
    assert v.check_claim("OWNS", "Anything", "Else") == []


def test_the_digest_follows_the_content_not_the_layout():
    a = load_vocabulary(YAML, "a.yaml")
    b = load_vocabulary(YAML.replace("  MENTIONS:\n", "  MENTIONS: {}\n"), "b.yaml")
    assert a.digest == b.digest and a.digest.startswith("sha256:")
    c = load_vocabulary(YAML.replace("[Party], description", "[Party, Date], description"), "c")
    assert c.digest != a.digest
