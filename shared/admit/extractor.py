"""A schema seen from the extractor's side: the JSON Schema of its output, and the settings of a
schema that make a check fail every time (groundgate's ``schema`` and ``schema check``).

``extractor_schema`` gives the JSON Schema a model's structured output should follow: one
candidate shape per field (its name, unit and keys as constants; the value as a string; evidence
items that quote), in the subset of JSON Schema that strict structured-output modes accept. A
candidate it accepts is well formed for the admission checks that read its shape.

``schema_findings`` lists what the admission checks will do with a valid schema that its author
probably did not mean: a unit or keys with no aliases, a unit with no forms, a key inside an
alias of its field, an alias shared by two fields or inside a longer alias of another field,
and a minimum above the maximum. Aliases and keys are compared as admission compares them
(letter fold, whitespace runs, dash variants, word edges).

Both read the schema after its templates and defaults, as admission does, so an invalid schema
raises :class:`PacketError`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.keys import DASHES, _word_pattern
from groundswell.shared.admit.packet import Schema, parse_schema
from groundswell.shared.admit.text import fold, normalize_ws

_NUMBER_VALUE = "The number with its sign and scale, without $, commas or a unit."
_TEXT_VALUE = "The value as the text states it."
_ROLES = ("value", "sign", "scale", "unit", "field")
_ROLE_HELP = (
    "What the quote supports. value: the number itself. sign: brackets or a loss word that make "
    "it negative. scale: words such as 'in thousands'. unit: a unit or $ sign that is not next "
    "to the number. field: words that name the field, such as a row label."
)
_KEY_ROLE_HELP = " key: words that name the key, such as a column heading."
_QUOTE = {"type": "string", "description": "Copied verbatim from the text."}
_DASH_TO_HYPHEN = str.maketrans(dict.fromkeys(DASHES, "-"))


def _closed(properties: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """An object with exactly these properties, all required."""
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description is not None:
        out["description"] = description
    return out


def _role(with_key: bool) -> dict[str, Any]:
    roles = [*_ROLES, "key"] if with_key else list(_ROLES)
    return {"enum": roles, "description": _ROLE_HELP + (_KEY_ROLE_HELP if with_key else "")}


def _quote_items(with_key: bool, reference_ids: list[str] | None) -> dict[str, Any]:
    """The item shapes that quote a text given to the engine: the document, and references."""
    out = {
        "document": _closed(
            {"source": {"const": "document"}, "role": _role(with_key), "text": _QUOTE},
            "A quote from the document.",
        )
    }
    if reference_ids is not None:
        out["reference"] = _closed(
            {
                "source": {"const": "reference"},
                "ref": {"enum": list(reference_ids)},
                "role": _role(with_key),
                "text": _QUOTE,
            },
            "A quote from a reference text that the app gave.",
        )
    return out


_OUTSIDE_ITEMS = {
    "external": _closed(
        {
            "source": {"const": "external"},
            "url": {"type": "string"},
            "retrieved": {"type": "string", "description": "The date that you read the page."},
            "text": {"type": "string", "description": "Copied verbatim from the page."},
        },
        "A quote from a web page that states the value.",
    ),
    "knowledge": _closed(
        {
            "source": {"const": "knowledge"},
            "text": {"type": "string", "description": "Your statement of the fact and its basis."},
        },
        "Your own knowledge, when no text states the value.",
    ),
}


def _evidence(names: list[str]) -> dict[str, Any]:
    return {"type": "array", "items": {"anyOf": [{"$ref": f"#/$defs/{n}"} for n in names]}}


def check_reference_ids(references: Any) -> list[str]:
    """The ids of a references list (only the ids matter to the extractor's schema)."""
    if not isinstance(references, list) or not all(isinstance(r, dict) for r in references):
        raise PacketError("references must be a list of objects")
    ids = [r.get("id") for r in references]
    if (
        not ids
        or not all(isinstance(i, str) and i.strip() for i in ids)
        or len(set(ids)) != len(ids)
    ):
        raise PacketError("reference ids must be a non-empty list of unique non-blank strings")
    return ids


def extractor_schema(
    schema: Any, reference_ids: list[str] | None = None, packs: list[Any] | None = None
) -> dict[str, Any]:
    """The JSON Schema for an extractor's output under ``schema`` (groundgate's ``schema``)."""
    fields = parse_schema(schema, packs).digest_object["fields"]
    if not fields:
        raise PacketError("the schema has no fields, so an extractor can send no candidate")
    keyed = [bool(f["keys"]) for f in fields.values()]
    mixed = any(keyed) and not all(keyed)
    shapes = []
    for name, f in fields.items():
        no_key = mixed and not f["keys"]
        shape = _closed(
            {
                "field": {"const": name},
                "value": {
                    "type": "string",
                    "description": _TEXT_VALUE if f["type"] == "string" else _NUMBER_VALUE,
                },
                "unit": {"type": "null"} if f["unit"] is None else {"const": f["unit"]},
                "key": {"enum": list(f["keys"])} if f["keys"] else {"type": "null"},
                "evidence": {"$ref": "#/$defs/evidence_no_key" if no_key else "#/$defs/evidence"},
            }
        )
        about = [f["description"]] if f.get("description") else []
        if f["aliases"]:
            about.append("Names in the document: " + ", ".join(f["aliases"]) + ".")
        if about:
            shape["description"] = "\n".join(about)
        shapes.append(shape)
    quoted = _quote_items(any(keyed), reference_ids)
    defs: dict[str, Any] = dict(quoted)
    if mixed:
        defs.update({f"{k}_no_key": v for k, v in _quote_items(False, reference_ids).items()})
    defs.update(copy.deepcopy(_OUTSIDE_ITEMS))
    defs["evidence"] = _evidence([*quoted, *_OUTSIDE_ITEMS])
    if mixed:
        defs["evidence_no_key"] = _evidence([f"{k}_no_key" for k in quoted] + [*_OUTSIDE_ITEMS])
    return {
        "type": "object",
        "properties": {
            "candidates": {
                "type": "array",
                "items": shapes[0] if len(shapes) == 1 else {"anyOf": shapes},
            }
        },
        "required": ["candidates"],
        "additionalProperties": False,
        "$defs": defs,
    }


# --- schema check ------------------------------------------------------------------------------


def _same_words(word: str) -> str:
    """What two aliases share when admission cannot tell them apart."""
    return fold(normalize_ws(word)).translate(_DASH_TO_HYPHEN)


def _mentions(word: str, text: str) -> bool:
    """Whether ``text`` mentions ``word`` as admission finds a key or alias in a document."""
    folded = fold(text)
    for m in re.finditer(_word_pattern(word), folded):
        if m.start() == 0 or not folded[m.start() - 1].isalnum():
            return True
    return False


def _names(fields: list[str]) -> str:
    quoted = [repr(f) for f in fields]
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def schema_findings(schema: Any, packs: list[Any] | None = None) -> list[str]:
    """Each setting of a valid schema that makes a check fail every time, or pass for the wrong
    key or field (groundgate's ``schema check``), in the order it prints them."""
    parsed: Schema = parse_schema(schema, packs)
    findings: list[str] = []
    for name, f in parsed.fields.items():
        aliases = f.aliases or []
        if f.unit is not None:
            forms = parsed.units.get(f.unit)
            if not forms or not (forms[0] or forms[1]):
                findings.append(
                    f"field {name!r} has a unit with no forms: a value is admitted with no unit "
                    "check, and a unit item never passes"
                )
            elif not aliases:
                findings.append(
                    f"field {name!r} has a unit and no aliases: a unit item passes only for a "
                    "unit next to the number"
                )
        if f.keys and not aliases:
            findings.append(
                f"field {name!r} has keys and no aliases: a key item never puts the key at the "
                "value"
            )
        elif f.keys:
            inside = [k for a in aliases for k in f.keys if _mentions(k, a)]
            for key in dict.fromkeys(inside):
                findings.append(
                    f"field {name!r} has the key {key!r} in an alias: each mention of the field "
                    "puts that key at the value"
                )
        bounds = (f.minimum, f.maximum)
        if f.type != "string" and None not in bounds and bounds[0] > bounds[1]:  # type: ignore[operator]
            findings.append(f"field {name!r} has a minimum above its maximum: no value is in range")
    owners: dict[str, tuple[str, list[str]]] = {}
    for name, f in parsed.fields.items():
        for alias in f.aliases or []:
            owners.setdefault(_same_words(alias), (alias, []))[1].append(name)
    for alias, names in owners.values():
        if len(names) > 1:
            findings.append(
                f"alias {alias!r} is on fields {_names(names)}: a field item does not tell them "
                "apart"
            )
    # An alias inside a longer alias of another field, unless the short alias's field has that
    # longer alias too (then the shared alias is the finding).
    for short_name, short in parsed.fields.items():
        own = {_same_words(a) for a in short.aliases or []}
        for long_name, long in parsed.fields.items():
            if long_name == short_name:
                continue
            for outer in long.aliases or []:
                if _same_words(outer) in own:
                    continue
                for inner in short.aliases or []:
                    if _same_words(inner) != _same_words(outer) and _mentions(inner, outer):
                        findings.append(
                            f"alias {inner!r} of field {short_name!r} is in alias {outer!r} of "
                            f"field {long_name!r}: a field item for {long_name!r} passes for "
                            f"{short_name!r}"
                        )
    return findings
