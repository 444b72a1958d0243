"""The packet of SPEC §2: validation, defaults and the objects the digests read.

A packet that breaks §2 raises :class:`PacketError` naming the member; nothing else in the
engine raises for bad input (a malformed candidate is a CANDIDATE_INVALID decision).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from groundswell.shared.admit.errors import PacketError
from groundswell.shared.admit.fields import check_field, nonblank
from groundswell.shared.admit.packs import (
    BASE_ID,
    BUILT_IN,
    FIELD_NAME,
    PACK_ID,
    VERSION,
    Pack,
    Vocabulary,
    build_vocabulary,
    built_in_pack,
    check_pack,
    pack_digest,
)
from groundswell.shared.admit.text import to_decimal

MAX_SAFE = 2**53 - 1


@dataclass
class FieldSpec:
    name: str
    type: str
    unit: str | None
    comparator: str
    minimum: Decimal | None
    maximum: Decimal | None
    required: bool
    multiple: bool
    keys: list[str] | None
    aliases: list[str] | None
    template_pack: str | None


@dataclass
class Relation:
    id: str
    total: str
    parts: list[tuple[str, Decimal]]
    tolerance: Decimal
    keyed: bool


@dataclass
class Schema:
    fields: dict[str, FieldSpec]
    # The unit table: built-in (base and packs) with the schema's units over it.
    units: dict[str, tuple[list[str], list[str]]]
    relations: list[Relation]
    packs: list[Pack]
    vocabulary: Vocabulary
    digest_object: dict[str, Any]


@dataclass
class Policy:
    min_confidence: float | int | None
    unit_window: int
    reanchor: bool
    judge: dict[str, Any] | None
    allow: list[str]
    other: str
    knowledge: str
    digest_object: dict[str, Any] = field(default_factory=dict)


# --- small checks ------------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_probability(value: object) -> bool:
    return _is_number(value) and math.isfinite(value) and 0 <= value <= 1  # type: ignore[operator]


def check_json_numbers(where: str, value: Any) -> None:
    """Integers outside the safe range and non-finite numbers make the packet invalid (§6)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE:
            raise PacketError(f"{where}: integer {value} is outside ±(2^53-1)")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise PacketError(f"{where}: {value} is not a finite number")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_json_numbers(where, v)
            if not isinstance(k, str):
                raise PacketError(f"{where}: object key {k!r} is not a string")
    elif isinstance(value, list | tuple):
        for v in value:
            check_json_numbers(where, v)


# --- packs of a packet ---------------------------------------------------------------------


def _resolve_packs(schema: dict[str, Any], given: list[object]) -> list[Pack]:
    """The packs the packet reads (§2.3, §4.8, §4.9), checked; sorted by id."""
    entries = schema.get("packs", [])
    if not isinstance(entries, list):
        raise PacketError("schema.packs is not a list")
    checked: list[Pack] = []
    by_id: dict[str, Pack] = {}
    for raw in given:
        data = check_pack(raw)
        pack = Pack(
            data["id"], data["version"], data["type"], pack_digest(data["type"], data), data
        )
        prior = by_id.get(pack.id)
        if prior is not None:
            if prior.version != pack.version:
                raise PacketError(f"L7: pack {pack.id!r} is given in two versions")
            if prior.digest != pack.digest:
                raise PacketError(f"L7: two copies of pack {pack.id!r} have two digests")
            continue
        by_id[pack.id] = pack
        checked.append(pack)
    named: dict[str, tuple[str, str | None]] = {}
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or not {"id", "version"} <= set(entry)
            or set(entry)
            - {
                "id",
                "version",
                "sha256",
            }
        ):
            raise PacketError("schema.packs: an entry holds members other than id, version, sha256")
        pid, version, pin = entry["id"], entry["version"], entry.get("sha256")
        if not isinstance(pid, str) or not isinstance(version, str):
            raise PacketError("schema.packs: id and version are strings")
        if pin is not None and not isinstance(pin, str):
            raise PacketError(f"schema.packs: the sha256 of {pid!r} is not a string")
        if pid == BASE_ID:
            raise PacketError("schema.packs names the base pack, which always applies")
        if pid in named and named[pid] != (version, pin):
            raise PacketError(f"schema.packs names {pid!r} twice, differently")
        named[pid] = (version, pin)
    reading: dict[str, Pack] = {}

    def resolve(pid: str, version: str, pin: str | None, who: str) -> Pack:
        if pid in BUILT_IN:
            if BUILT_IN[pid][0] != version:
                raise PacketError(f"{who}: built-in pack {pid!r} has no version {version!r}")
            pack = built_in_pack(pid)
        elif pid in by_id:
            pack = by_id[pid]
            if pack.version != version:
                raise PacketError(f"L7: {who} names {pid!r} {version}, but {pack.version} is given")
        else:
            raise PacketError(f"{who}: pack {pid!r} {version} is neither given nor built in")
        if pin is not None and pin != pack.digest:
            raise PacketError(f"{who}: the pinned sha256 of {pid!r} differs from its digest")
        return pack

    for pid, (version, pin) in named.items():
        reading[pid] = resolve(pid, version, pin, "schema.packs")
    for pack in list(reading.values()):
        if pack.type != "kind":
            continue
        for need in pack.data["needs"]:
            nid, nver = need["id"], need["version"]
            if nid in named and named[nid][0] != nver:
                raise PacketError(f"L7: {pack.id!r} needs {nid!r} {nver}, the schema names another")
            if nid in reading and reading[nid].version != nver:
                raise PacketError(f"L7: {nid!r} is needed in two versions")
            needed = resolve(nid, nver, None, f"L9: pack {pack.id!r} needs")
            if needed.type != "vocabulary":
                raise PacketError(f"L9: pack {pack.id!r} needs the kind pack {nid!r}")
            reading[nid] = needed
    for pid in by_id:
        if pid not in reading:
            raise PacketError(f"pack {pid!r} is given but neither named nor needed")
    return sorted(reading.values(), key=lambda p: p.id)


# --- the schema ------------------------------------------------------------------------------


def parse_schema(schema: object, given_packs: list[object] | None = None) -> Schema:
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), dict):
        raise PacketError("schema is not an object with a fields object")
    extra = set(schema) - {"fields", "units", "relations", "packs"}
    if extra:
        raise PacketError(f"schema has unknown members {sorted(extra)}")
    if given_packs is not None and not isinstance(given_packs, list | tuple):
        raise PacketError("packs is not a list")
    packs = _resolve_packs(schema, list(given_packs or []))
    vocabulary = build_vocabulary(packs)
    kinds = {p.id: p for p in packs if p.type == "kind"}
    named_ids = {e["id"] for e in schema.get("packs", [])}

    units_in = schema.get("units", {})
    if not isinstance(units_in, dict):
        raise PacketError("schema.units is not an object")
    units = dict(vocabulary.units)
    units_out: dict[str, Any] = {}
    for code, unit in units_in.items():
        if not isinstance(unit, dict) or set(unit) - {"prefix", "suffix"}:
            raise PacketError(f"schema.units.{code} holds members other than prefix and suffix")
        forms: dict[str, list[str]] = {}
        for name in ("prefix", "suffix"):
            value = unit.get(name, [])
            if not isinstance(value, list) or not all(nonblank(v) for v in value):
                raise PacketError(f"schema.units.{code}.{name} is not a list of non-blank strings")
            forms[name] = list(value)
        units[code] = (forms["prefix"], forms["suffix"])
        units_out[code] = forms

    fields: dict[str, FieldSpec] = {}
    fields_out: dict[str, Any] = {}
    for name, spec in schema["fields"].items():
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise PacketError(f"schema field name {name!r} breaks the field name rule")
        where = f"schema.fields.{name}"
        check_field(where, spec)
        merged = dict(spec)
        template_pack = None
        if "template" in spec:
            template = spec["template"]
            if not isinstance(template, str) or "/" not in template:
                raise PacketError(f"L10: {where}.template is not <pack id>/<field name>")
            tid, _, tname = template.partition("/")
            if tid not in kinds or tid not in named_ids:
                raise PacketError(f"L10: {where}.template names no kind pack of the schema")
            body = kinds[tid].data["fields"].get(tname)
            if body is None:
                raise PacketError(f"L10: kind pack {tid!r} has no template {tname!r}")
            for member in ("type", "unit"):
                if member in spec and member in body and spec[member] != body[member]:
                    raise PacketError(f"L10: {where}.{member} differs from its template's")
            for member, value in body.items():
                merged.setdefault(member, value)
            template_pack = tid
            check_field(where, merged)
        out = {
            "type": merged.get("type", "number"),
            "unit": merged.get("unit"),
            "comparator": merged.get("comparator", "eq"),
            "minimum": merged.get("minimum"),
            "maximum": merged.get("maximum"),
            "required": merged.get("required", False),
            "multiple": merged.get("multiple", False),
            "keys": merged.get("keys"),
            "aliases": merged.get("aliases"),
        }
        if "description" in merged:
            out["description"] = merged["description"]
        if "template" in merged:
            out["template"] = merged["template"]
        fields_out[name] = out
        fields[name] = FieldSpec(
            name=name,
            type=out["type"],
            unit=out["unit"],
            comparator=out["comparator"],
            minimum=None if out["minimum"] is None else to_decimal(out["minimum"]),
            maximum=None if out["maximum"] is None else to_decimal(out["maximum"]),
            required=out["required"],
            multiple=out["multiple"],
            keys=out["keys"],
            aliases=out["aliases"],
            template_pack=template_pack,
        )

    relations, relations_out = _parse_relations(schema.get("relations", []), fields)
    digest_object: dict[str, Any] = {"fields": fields_out, "units": units_out}
    if relations_out:
        digest_object["relations"] = relations_out
    if packs:
        digest_object["packs"] = [
            {"id": p.id, "version": p.version, "sha256": p.digest} for p in packs
        ]
    return Schema(fields, units, relations, packs, vocabulary, digest_object)


def _parse_relations(
    value: object, fields: dict[str, FieldSpec]
) -> tuple[list[Relation], list[dict[str, Any]]]:
    if not isinstance(value, list):
        raise PacketError("schema.relations is not a list")
    out: list[Relation] = []
    out_json: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, rel in enumerate(value):
        where = f"schema.relations[{i}]"
        if not isinstance(rel, dict) or set(rel) - {"id", "total", "parts", "tolerance"}:
            raise PacketError(f"{where} is not an object of id, total, parts, tolerance")
        rid = rel.get("id")
        if not nonblank(rid):
            raise PacketError(f"{where}.id is not a non-blank string")
        if rid in ids:
            raise PacketError(f"{where}: two relations have the id {rid!r}")
        ids.add(rid)
        total = rel.get("total")
        if not isinstance(total, str) or total not in fields:
            raise PacketError(f"{where}.total names no field of the schema")
        parts = rel.get("parts")
        if not isinstance(parts, list) or not parts:
            raise PacketError(f"{where}.parts is not a non-empty list")
        tolerance_raw = rel.get("tolerance", "0")
        tolerance = to_decimal(tolerance_raw)
        if tolerance is None or tolerance < 0:
            raise PacketError(f"{where}.tolerance is not a non-negative decimal")
        names = [total]
        parts_out: list[tuple[str, Decimal]] = []
        parts_json: list[dict[str, Any]] = []
        for part in parts:
            if not isinstance(part, dict) or "field" not in part or set(part) - {"field", "factor"}:
                raise PacketError(f"{where}: a part is not an object of field and factor")
            pname = part["field"]
            if not isinstance(pname, str) or pname not in fields:
                raise PacketError(f"{where}: part {pname!r} names no field of the schema")
            if pname in names:
                raise PacketError(f"{where}: field {pname!r} is in the relation twice")
            names.append(pname)
            factor_raw = part.get("factor", "1")
            factor = to_decimal(factor_raw)
            if factor is None or factor == 0:
                raise PacketError(f"{where}: the factor of {pname!r} is not a non-zero decimal")
            if "factor" not in part and fields[pname].unit != fields[total].unit:
                raise PacketError(f"{where}: part {pname!r} has another unit and no factor")
            parts_out.append((pname, factor))
            parts_json.append({"field": pname, "factor": factor_raw})
        keyed = [fields[n].keys is not None for n in names]
        for n in names:
            if fields[n].type == "string" or fields[n].multiple:
                raise PacketError(f"{where}: field {n!r} is a string or multiple field")
        if any(keyed) and not all(keyed):
            raise PacketError(f"{where}: some fields have keys and others do not")
        out.append(Relation(rid, total, parts_out, tolerance, all(keyed)))
        out_json.append(
            {"id": rid, "total": total, "parts": parts_json, "tolerance": tolerance_raw}
        )
    return out, out_json


# --- the policy ------------------------------------------------------------------------------


def parse_policy(policy: object) -> Policy:
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise PacketError("policy is not an object")
    extra = set(policy) - {"min_confidence", "unit_window", "reanchor", "judge", "sources"}
    if extra:
        raise PacketError(f"policy has unknown members {sorted(extra)}")
    check_json_numbers("policy", policy)
    min_confidence = policy.get("min_confidence")
    if min_confidence is not None and not _is_probability(min_confidence):
        raise PacketError("policy.min_confidence is not null or a number in [0, 1]")
    unit_window = policy.get("unit_window", 24)
    if not isinstance(unit_window, int) or isinstance(unit_window, bool) or unit_window < 0:
        raise PacketError("policy.unit_window is not a non-negative integer")
    reanchor = policy.get("reanchor", True)
    if not isinstance(reanchor, bool):
        raise PacketError("policy.reanchor is not a boolean")
    judge = policy.get("judge")
    judge_out = None
    if judge is not None:
        if not isinstance(judge, dict) or set(judge) - {"id", "digest", "clear", "doubt"}:
            raise PacketError("policy.judge is not an object of id, digest, clear, doubt")
        if not nonblank(judge.get("id")) or not nonblank(judge.get("digest")):
            raise PacketError("policy.judge id and digest are non-blank strings")
        judge_out = {"id": judge["id"], "digest": judge["digest"]}
        for name, allowed in (("clear", "KEY_NOT_AT_VALUE"), ("doubt", "field_match")):
            table = judge.get(name, {})
            if not isinstance(table, dict) or set(table) - {allowed}:
                raise PacketError(f"policy.judge.{name} can hold only {allowed}")
            for v in table.values():
                if not _is_probability(v):
                    raise PacketError(f"policy.judge.{name} thresholds are numbers in [0, 1]")
            judge_out[name] = dict(table)
    sources = policy.get("sources", {})
    if not isinstance(sources, dict) or set(sources) - {"external", "knowledge"}:
        raise PacketError("policy.sources holds only external and knowledge")
    external = sources.get("external", {})
    if not isinstance(external, dict) or set(external) - {"allow", "other"}:
        raise PacketError("policy.sources.external holds only allow and other")
    allow = external.get("allow", [])
    if not isinstance(allow, list) or not all(nonblank(a) for a in allow):
        raise PacketError("policy.sources.external.allow is not a list of non-blank strings")
    other = external.get("other", "review")
    if other not in ("review", "reject"):
        raise PacketError("policy.sources.external.other is review or reject")
    knowledge = sources.get("knowledge", "review")
    if knowledge not in ("admit", "review", "reject"):
        raise PacketError("policy.sources.knowledge is admit, review or reject")
    digest_object = {
        "min_confidence": min_confidence,
        "unit_window": unit_window,
        "reanchor": reanchor,
        "judge": judge_out,
        "sources": {"external": {"allow": list(allow), "other": other}, "knowledge": knowledge},
    }
    return Policy(
        min_confidence,
        unit_window,
        reanchor,
        judge_out,
        list(allow),
        other,
        knowledge,
        digest_object,
    )


# --- document, references, judgments ---------------------------------------------------------


def check_document(text: object, source: object) -> None:
    if not isinstance(text, str):
        raise PacketError("document is not a string")
    if not unicodedata.is_normalized("NFC", text):
        raise PacketError("document is not in Unicode Normalization Form C")
    if source is not None and not nonblank(source):
        raise PacketError("document_source is not null or a non-blank string")


def parse_references(references: object) -> dict[str, dict[str, Any]]:
    if references is None:
        return {}
    if not isinstance(references, list | tuple):
        raise PacketError("references is not a list")
    out: dict[str, dict[str, Any]] = {}
    for i, ref in enumerate(references):
        where = f"references[{i}]"
        if not isinstance(ref, dict) or set(ref) - {"id", "text", "source"}:
            raise PacketError(f"{where} is not an object of id, text and source")
        rid = ref.get("id")
        if not nonblank(rid):
            raise PacketError(f"{where}.id is not a non-blank string")
        if rid in out:
            raise PacketError(f"{where}.id {rid!r} is not unique")
        text = ref.get("text")
        if not isinstance(text, str) or not text:
            raise PacketError(f"{where}.text is not a non-empty string")
        if not unicodedata.is_normalized("NFC", text):
            raise PacketError(f"{where}.text is not NFC")
        source = ref.get("source")
        if source is not None and not nonblank(source):
            raise PacketError(f"{where}.source is not null or a non-blank string")
        out[rid] = {"id": rid, "text": text, "source": source}
    return out


def parse_judgments(judgments: object, candidates: list[object]) -> list[dict[str, Any]]:
    if judgments is None:
        return []
    if not isinstance(judgments, list | tuple):
        raise PacketError("judgments is not a list")
    check_json_numbers("judgments", list(judgments))
    ids: dict[str, list[int]] = {}
    for i, cand in enumerate(candidates):
        if isinstance(cand, dict) and isinstance(cand.get("id"), str):
            ids.setdefault(cand["id"], []).append(i)
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for i, j in enumerate(judgments):
        where = f"judgments[{i}]"
        if not isinstance(j, dict):
            raise PacketError(f"{where} is not an object")
        question = j.get("question")
        allowed = {"candidate_id", "question", "judge", "p"} | (
            {"answer"} if question == "key" else set()
        )
        if set(j) - allowed or not {"candidate_id", "question", "judge", "p"} <= set(j):
            raise PacketError(f"{where} has the wrong members")
        if question not in ("key", "field_match"):
            raise PacketError(f"{where}.question is not key or field_match")
        if question == "key" and "answer" not in j:
            raise PacketError(f"{where}: a key judgment has an answer")
        answer = j.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise PacketError(f"{where}.answer is not a string or null")
        judge = j.get("judge")
        if (
            not isinstance(judge, dict)
            or set(judge) != {"id", "digest"}
            or not nonblank(judge["id"])
            or not nonblank(judge["digest"])
        ):
            raise PacketError(f"{where}.judge is not an object of non-blank id and digest")
        if not _is_probability(j.get("p")):
            raise PacketError(f"{where}.p is not a number in [0, 1]")
        cid = j.get("candidate_id")
        if not isinstance(cid, str) or len(ids.get(cid, [])) != 1:
            raise PacketError(f"{where}.candidate_id names no candidate, or more than one")
        if (cid, question) in seen:
            raise PacketError(f"{where}: candidate {cid!r} has two {question} judgments")
        seen.add((cid, question))
        out.append({**j, "_index": ids[cid][0]})
    return out


__all__ = [
    "PACK_ID",
    "VERSION",
    "FieldSpec",
    "Policy",
    "Relation",
    "Schema",
    "check_document",
    "check_field",
    "check_json_numbers",
    "parse_judgments",
    "parse_policy",
    "parse_references",
    "parse_schema",
]
