"""Relation vocabularies: closed sets of relations, with the entity types each side may take.

The file format is xrad's (0.4.0) YAML::

    name: contracts
    entity_types: [Party, Instrument]
    relations:
      ACQUIRED: {subject: [Party], object: [Party], description: one party acquired another}
      PARTY_TO: {subject: [Party], object: [Instrument], symmetric: false}

A relation with no spec (``NAME:``) or empty type lists takes any type on that side; a list of
relation names is read as relations of any type. Unlike xrad, a key this format does not have
(``subjects:``) is refused rather than ignored, and the object's type is checked against
``entity_types`` as the subject's is. The problems of a claim are worded as xrad words them,
as instructions an extractor can act on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_FILE_KEYS = {"name", "entity_types", "relations"}
_RELATION_KEYS = {"subject", "object", "symmetric", "description"}


class VocabularyError(ValueError):
    """A vocabulary file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class RelationSpec:
    subject: tuple[str, ...] = ()
    object: tuple[str, ...] = ()
    symmetric: bool = False
    description: str = ""


@dataclass(frozen=True)
class Vocabulary:
    name: str
    entity_types: tuple[str, ...] = ()
    relations: dict[str, RelationSpec] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """sha256 over the vocabulary's content (canonical JSON), so a stored vocabulary
        says which version of a file the claims were checked against."""
        body = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entity_types": list(self.entity_types),
            "relations": {
                name: {
                    "subject": list(spec.subject),
                    "object": list(spec.object),
                    "symmetric": spec.symmetric,
                    "description": spec.description,
                }
                for name, spec in sorted(self.relations.items())
            },
        }

    def check_claim(
        self, relation: str, subject_type: str | None = None, object_type: str | None = None
    ) -> list[tuple[str, str]]:
        """Everything wrong with a claim, as ``(field, problem)``; empty when it fits."""
        spec = self.relations.get(relation)
        if spec is None:
            near = [
                r
                for r in self.relations
                if relation.lower() in r.lower() or r.lower() in relation.lower()
            ]
            hint = (
                f"did you mean {', '.join(near[:3])}?"
                if near
                else f"use one of: {', '.join(sorted(self.relations)[:12])}"
            )
            return [("relation", f"unknown relation {relation!r} — {hint}")]
        problems = []
        for role, got, allowed in (
            ("subject", subject_type, spec.subject),
            ("object", object_type, spec.object),
        ):
            if got and allowed and got not in allowed:
                problems.append(
                    (
                        f"{role}_type",
                        f"{relation} takes {role} of type {', '.join(allowed)}, not {got!r}",
                    )
                )
        for role, got in (("subject", subject_type), ("object", object_type)):
            if got and self.entity_types and got not in self.entity_types:
                problems.append(
                    (
                        f"{role}_type",
                        f"unknown entity type {got!r} — use one of: "
                        f"{', '.join(self.entity_types[:12])}",
                    )
                )
        return problems

    def prompt_fragment(self) -> str:
        """The vocabulary as prompt text, line for line as ``xrad vocab`` prints it."""
        lines = [f"Entity types: {', '.join(self.entity_types)}", "", "Relations:"]
        for name, spec in sorted(self.relations.items()):
            sig = ""
            if spec.subject or spec.object:
                sig = f"  ({'|'.join(spec.subject) or 'any'} -> {'|'.join(spec.object) or 'any'})"
            lines.append(f"  {name}{sig}" + (f" — {spec.description}" if spec.description else ""))
        lines.append(
            "\nUse ONLY these. If a statement does not fit one, omit the claim: a wrong "
            "relation is worse than a missing one."
        )
        return "\n".join(lines)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise VocabularyError(f"{where}: a type name or a list of type names")


def _check_keys(value: Any, keys: set[str], where: str, what: str, sep: str = ".") -> None:
    """``value`` is a mapping whose keys are all among ``keys`` (a {what} mapping)."""
    if not isinstance(value, dict):
        raise VocabularyError(f"{where}: a {what} is a mapping with {sorted(keys)}")
    unknown = sorted(set(value) - keys, key=str)
    if unknown:
        raise VocabularyError(f"{where}{sep}{unknown[0]}: not a {what} key ({sorted(keys)})")


def parse_vocabulary(raw: Any, source: str, default_name: str) -> Vocabulary:
    """A vocabulary from parsed YAML; ``source`` names the file in every error."""
    if raw is None:
        raw = {}
    _check_keys(raw, _FILE_KEYS, source, "vocabulary", ": ")
    name = raw.get("name") or default_name
    if not isinstance(name, str):
        raise VocabularyError(f"{source}: name: a string")
    entity_types = _names(raw.get("entity_types"), f"{source}: entity_types")
    relations_raw = raw.get("relations") or {}
    if isinstance(relations_raw, list):
        relations_raw = dict.fromkeys(_names(relations_raw, f"{source}: relations"))
    if not isinstance(relations_raw, dict):
        raise VocabularyError(f"{source}: relations: a mapping of relation names to specs")
    relations: dict[str, RelationSpec] = {}
    for rel, spec in relations_raw.items():
        where = f"{source}: relations.{rel}"
        if not isinstance(rel, str) or not rel:
            raise VocabularyError(f"{where}: a relation name is a non-empty string")
        if spec is None:
            relations[rel] = RelationSpec()
            continue
        _check_keys(spec, _RELATION_KEYS, where, "relation")
        symmetric = spec.get("symmetric", False)
        description = spec.get("description") or ""
        if not isinstance(symmetric, bool):
            raise VocabularyError(f"{where}.symmetric: true or false")
        if not isinstance(description, str):
            raise VocabularyError(f"{where}.description: a string")
        relations[rel] = RelationSpec(
            subject=_names(spec.get("subject"), f"{where}.subject"),
            object=_names(spec.get("object"), f"{where}.object"),
            symmetric=symmetric,
            description=description,
        )
    return Vocabulary(name=name, entity_types=entity_types, relations=relations)


def load_vocabulary(data: bytes | str, source: str) -> Vocabulary:
    """A vocabulary from the bytes of a YAML file named ``source`` (its stem names it when
    the file has no ``name``)."""
    import yaml

    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise VocabularyError(f"{source}: not YAML: {exc}") from None
    return parse_vocabulary(raw, source, Path(source).stem)


def read_vocabulary(path: str | Path) -> Vocabulary:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(f"{path}: {exc.strerror or exc}") from None
    return load_vocabulary(data, str(path))
