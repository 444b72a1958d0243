"""`groundswell schema` and `schema check`: groundgate's `schema` commands, the same bytes.

groundgate's CLI (in process, a dev-only oracle) and ours run on the schema of every
conformance vector (with its packs and references), on a schema built from every template of
every built-in kind pack, and on schemas made to hit each finding of `schema check`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundswell.shared.admit.packs import BUILT_IN, built_in_pack
from groundswell.shared.cli import main
from tests.shared.admit import conformance
from tests.shared.cli.groundgate_oracle import groundgate_cli

# Each finding schema check prints, and the ways aliases and keys are compared.
FINDING_SCHEMAS = [
    {"fields": {"a": {"unit": "USD", "keys": ["x"], "aliases": ["rev"]},
                "b": {"unit": "ZZZ", "keys": ["y"]}, "c": {"minimum": 5, "maximum": 3},
                "d": {"aliases": ["total rev"]}, "e": {"aliases": ["Rev", "x rev"]}}},
    {"fields": {"a": {"minimum": "5", "maximum": "1,000"},
                "b": {"minimum": "5000", "maximum": "1,000"}, "c": {"minimum": 2, "maximum": 2}}},
    {"fields": {"a": {"aliases": ["out-of-pocket limit"]},
                "b": {"aliases": ["out\u2013of\u2013pocket  Limit"]},
                "c": {"aliases": ["Bob's pay"]}, "d": {"aliases": ["bob\u2019s pay"]},
                "e": {"aliases": ["BOB'S PAY"]}}},
    {"units": {"ZZZ": {"prefix": [], "suffix": []}, "QQQ": {"suffix": ["qq"]}},
     "fields": {"a": {"unit": "ZZZ", "aliases": ["a"]}, "b": {"unit": "QQQ", "aliases": ["b"]},
                "c": {"unit": "mg", "aliases": ["c"]}, "d": {"unit": "XYZ"}}},
    {"fields": {"a": {"keys": ["b1", "a1", "c1", "north"],
                      "aliases": ["x c1", "x a1 b1", "wholesalesc1", "North  Sales"]}}},
    {"fields": {"a": {"aliases": ["rev", "p", "q"]},
                "b": {"aliases": ["revenue", "prev x", "net-rev", "rev.", "(rev)", "rev2",
                                  "rev_x", "r\u00e9vrev", "q x", "p x"]},
                "c": {"aliases": ["stra\u00dfe", "\u0130x"]},
                "d": {"aliases": ["STRASSE", "i\u0307x", "REV"]}}},
    {"fields": {"a": {"aliases": ["zz", "yy"]}, "b": {"aliases": ["yy q", "YY", "zz"]},
                "c": {"aliases": ["q zz"]}, "d": {"aliases": ["zz"]}}},
    {"fields": {"a": {"type": "string", "unit": "USD", "keys": ["k"], "aliases": ["fee k"],
                      "minimum": 9, "maximum": 1, "description": "A fee."}}},
    {"fields": {"a": {"unit": "USD", "aliases": ["a"]}}},
    {"fields": {"a": {"type": "string", "unit": "USD", "keys": ["k"], "minimum": 9,
                      "maximum": 1},
                "b": {"type": "integer", "minimum": 9, "maximum": 1, "aliases": ["x", "big x"]},
                "c": {"aliases": ["big x"]}, "d": {"aliases": ["y"]},
                "e": {"aliases": ["big y", "y"]}}},
    {"fields": {}},
]  # fmt: skip


def _kind_pack_schemas() -> list[dict[str, Any]]:
    """One schema per built-in kind pack that takes every template it has, one of them keyed
    and described, beside a field of its own."""
    out = []
    for pid, (version, kind, _) in sorted(BUILT_IN.items()):
        if kind != "kind":
            continue
        templates = list(built_in_pack(pid).data["fields"])
        fields: dict[str, Any] = {t: {"template": f"{pid}/{t}"} for t in templates}
        fields[templates[0]].update({"keys": ["2024", "2023"], "description": "Two years."})
        fields["note"] = {"type": "string"}
        out.append({"packs": [{"id": pid, "version": version}], "fields": fields})
    return out


def _cases(tmp_path: Path) -> list[tuple[str, list[str], list[str]]]:
    """(name, the schema command's arguments, schema check's arguments) for every schema."""
    cases = []
    for path in conformance.vector_files():
        vector = conformance.load(path)
        folder = tmp_path / path.stem
        folder.mkdir()
        (folder / "schema.json").write_text(json.dumps(vector["schema"]), encoding="utf-8")
        packs = []
        for i, pack in enumerate(vector.get("packs") or []):
            (folder / f"pack{i}.json").write_text(json.dumps(pack), encoding="utf-8")
            packs += ["--pack", str(folder / f"pack{i}.json")]
        refs = []
        if vector.get("references"):
            (folder / "refs.json").write_text(json.dumps(vector["references"]), encoding="utf-8")
            refs = ["--references", str(folder / "refs.json")]
        schema = str(folder / "schema.json")
        cases.append((path.stem, [schema, *packs, *refs], [schema, *packs]))
    for n, schema in enumerate(_kind_pack_schemas() + FINDING_SCHEMAS):
        path = tmp_path / f"own-{n}.json"
        path.write_text(json.dumps(schema, ensure_ascii=False), encoding="utf-8")
        cases.append((path.stem, [str(path)], [str(path)]))
    return cases


def test_schema_and_schema_check_give_groundgate_output(tmp_path: Path) -> None:
    runner = CliRunner()
    cases = _cases(tmp_path)
    assert len(cases) == 150 + 5 + len(FINDING_SCHEMAS)
    differ, findings, written = [], 0, 0
    for name, schema_args, check_args in cases:
        theirs_file, ours_file = tmp_path / f"{name}.gg", tmp_path / f"{name}.gs"
        code, _, _ = groundgate_cli(["schema", *schema_args, "-o", str(theirs_file)])
        result = runner.invoke(main, ["schema", *schema_args, "-o", str(ours_file)])
        if result.exit_code != code:
            differ.append(f"{name}: schema exit {result.exit_code}, groundgate {code}")
        elif code == 0:
            written += 1
            if ours_file.read_bytes() != theirs_file.read_bytes():
                differ.append(f"{name}: schema output")
        code, theirs, _ = groundgate_cli(["schema", "check", *check_args])
        result = runner.invoke(main, ["schema", "check", *check_args])
        if (result.exit_code, result.stdout_bytes) != (code, theirs):
            differ.append(f"{name}: check exit {result.exit_code} (groundgate {code}) or lines")
        findings += theirs.count(b"\n")
    assert differ == []
    assert written == len(cases) - 1  # all but the schema with no fields
    assert findings > 380


def test_schema_to_stdout_and_refusals(tmp_path: Path) -> None:
    vector = conformance.load(conformance.vector_files()[0])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(vector["schema"]), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["schema", str(schema)])
    assert result.exit_code == 0
    assert result.stdout_bytes == groundgate_cli(["schema", str(schema)])[1]
    refs = tmp_path / "refs.json"
    for bad_refs in ("[]", '[{"id": "a"}, {"id": "a"}]', '{"id": "a"}', '[{"id": " "}]'):
        refs.write_text(bad_refs)
        assert (
            runner.invoke(main, ["schema", str(schema), "--references", str(refs)]).exit_code == 2
        )
        assert groundgate_cli(["schema", str(schema), "--references", str(refs)])[0] == 2
    empty = tmp_path / "empty.json"
    empty.write_text('{"fields": {}}')
    result = runner.invoke(main, ["schema", str(empty)])
    assert result.exit_code == 2 and "no fields" in result.output
    not_json = tmp_path / "nope.json"
    not_json.write_text("nope")
    for args in (["schema", str(not_json)], ["schema", "check", str(not_json)],
                 ["schema", "check", str(schema), "--references", str(refs)]):  # fmt: skip
        assert runner.invoke(main, args).exit_code == 2, args
    assert "schema check SCHEMA" in runner.invoke(main, ["schema", "--help"]).output


@pytest.mark.parametrize("command", ["verify", "schema"])
def test_schema_is_listed(command: str) -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert f"  {command} " in result.output
