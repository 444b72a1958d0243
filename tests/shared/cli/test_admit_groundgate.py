"""groundgate's command lines work unchanged: `admit` (one document, stdin, the batch options)
and `check-receipt` (groundgate's `verify`) take groundgate 0.11.0's arguments, and write the
same bytes.

groundgate's CLI runs in process (a dev-only oracle) on the same input files: every
conformance vector, and packets built from real corpus documents.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from tests.shared.admit import conformance, differential
from tests.shared.cli.groundgate_oracle import groundgate_cli, write_inputs


def ours(args: list[str], stdin: bytes | None = None):
    return CliRunner().invoke(main, args, input=stdin)


@pytest.fixture(scope="module")
def corpus_packets(shared_corpus: Path) -> list[dict[str, Any]]:
    return differential.packets(shared_corpus, 4, seed=11)


def test_receipts_are_byte_identical_to_groundgate(tmp_path: Path, corpus_packets) -> None:
    """`admit ... -o FILE` and `admit ... > FILE` give groundgate's bytes, on every
    conformance vector and on real documents."""
    packets = [conformance.load(p) for p in conformance.vector_files()] + corpus_packets
    assert len(packets) == 154
    differ = []
    for n, packet in enumerate(packets):
        args = write_inputs(tmp_path / str(n), packet)
        theirs_file, ours_file = tmp_path / str(n) / "gg.json", tmp_path / str(n) / "gs.json"
        code, _, err = groundgate_cli(["admit", *args, "-o", str(theirs_file)])
        assert code == 0, err
        result = ours(["admit", *args, "-o", str(ours_file)])
        assert result.exit_code == 0, result.output
        assert result.stdout == ""  # as groundgate: -o writes the file only (not a terminal)
        if ours_file.read_bytes() != theirs_file.read_bytes():
            differ.append(f"{n} -o")
        code, theirs_stdout, _ = groundgate_cli(["admit", *args])
        if ours(["admit", *args]).stdout_bytes != theirs_stdout:
            differ.append(f"{n} stdout")
    assert differ == []


def test_document_from_stdin(tmp_path: Path) -> None:
    packet = conformance.load(conformance.vector_files()[0])
    doc, schema, cands, *rest = write_inputs(tmp_path, packet)
    data = Path(doc).read_bytes()
    code, theirs, err = groundgate_cli(["admit", "-", schema, cands, *rest], stdin=data)
    assert code == 0, err
    result = ours(["admit", "-", schema, cands, *rest], stdin=data)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == theirs
    receipt = tmp_path / "r.json"
    receipt.write_bytes(theirs)
    check = ours(["check-receipt", str(receipt), "-", schema, cands, *rest], stdin=data)
    assert (check.exit_code, check.stdout) == (0, "receipt verified\n")
    other = ours(["check-receipt", str(receipt), "-", schema, cands, *rest], stdin=data + b"x")
    assert other.exit_code == 1 and "document differs" in other.stderr


def _batch_folder(root: Path, packets: list[dict[str, Any]]) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "cands").mkdir()
    for p in packets:
        (root / "docs" / f"{p['document_id']}.txt").write_bytes(p["document"].encode("utf-8"))
        (root / "cands" / f"{p['document_id']}.json").write_text(json.dumps(p["candidates"]))
    (root / "docs" / "caf\u00e9.txt").write_text("Net sales were $4.2 million.\n", "utf-8")
    (root / "cands" / "caf\u00e9.json").write_text("[]")
    (root / "schema.json").write_text(json.dumps(packets[0]["schema"]), encoding="utf-8")
    return root


def test_batch_options_write_what_groundgate_writes(tmp_path: Path, corpus_packets) -> None:
    root = _batch_folder(tmp_path, corpus_packets)
    docs, cands, schema = str(root / "docs"), str(root / "cands"), str(root / "schema.json")
    batch = ["--docs", docs, "--candidates", cands, "--schema", schema]
    code, theirs_stdout, err = groundgate_cli(["admit", *batch, "--out", str(root / "gg")])
    assert code == 0, err
    result = ours(["admit", *batch, "--out", str(root / "gs")])
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == theirs_stdout
    assert "5 documents, receipts in" in result.stderr
    names = sorted(p.name for p in (root / "gg").iterdir())
    assert len(names) == 6 and "summary.json" in names
    assert sorted(p.name for p in (root / "gs").iterdir()) == names
    for name in names:
        assert (root / "gs" / name).read_bytes() == (root / "gg" / name).read_bytes(), name
    # Our folder form is the same batch.
    folders = ours(["admit", docs, schema, cands, "-o", str(root / "gs2")])
    assert folders.exit_code == 0, folders.output
    for name in names:
        assert (root / "gs2" / name).read_bytes() == (root / "gg" / name).read_bytes(), name


def test_batch_judgments_and_refusals_as_groundgate(tmp_path: Path, corpus_packets) -> None:
    root = _batch_folder(tmp_path, corpus_packets[:1])
    docs, cands, schema = str(root / "docs"), str(root / "cands"), str(root / "schema.json")
    batch = ["--docs", docs, "--candidates", cands, "--schema", schema]
    judgments = root / "judgments"
    judgments.mkdir()
    (judgments / "caf\u00e9.json").write_text("[]")
    refused = [
        ["--docs", docs, "--out", str(root / "o")],  # not all four
        [*batch, "--out", str(root / "o"), "-o", str(root / "x.json")],
        [*batch, "--out", str(root / "o"), "--document-id", "d"],
        [*batch, "--out", str(root / "o"), "--judgments", str(judgments)],  # one file missing
        [*batch, "--out", cands],  # the candidates folder
    ]
    for args in refused:
        code, _, _ = groundgate_cli(["admit", *args])
        result = ours(["admit", *args])
        assert (code, result.exit_code) == (2, 2), (args, result.output)
        assert not (root / "o").exists()
    shutil.copy(
        judgments / "caf\u00e9.json", judgments / f"{corpus_packets[0]['document_id']}.json"
    )
    args = [*batch, "--judgments", str(judgments)]
    assert groundgate_cli(["admit", *args, "--out", str(root / "gg")])[0] == 0
    assert ours(["admit", *args, "--out", str(root / "gs")]).exit_code == 0
    for path in (root / "gg").iterdir():
        assert (root / "gs" / path.name).read_bytes() == path.read_bytes()


def test_check_receipt_is_groundgate_verify(tmp_path: Path) -> None:
    help_text = ours(["check-receipt", "--help"]).output
    assert "groundgate verify RECEIPT DOC SCHEMA CANDIDATES" in help_text
    for option in ("--policy", "--judgments", "--references", "--document-source", "--pack",
                   "--pack-dir"):  # fmt: skip
        assert option in help_text
    # A vector whose schema names a kind pack that needs a vocabulary pack; the packs are
    # found in a folder by the digests the receipt names.
    vector = next(p for p in conformance.vector_files() if p.stem == "90-kind-needs")
    packet = conformance.load(vector)
    args = write_inputs(tmp_path, packet)
    receipt = tmp_path / "receipt.json"
    assert groundgate_cli(["admit", *args, "-o", str(receipt)])[0] == 0
    base = [str(receipt), *args[:3]]

    def same_status(positional: list[str], extra: list[str], expected: int) -> None:
        code, _, _ = groundgate_cli(["verify", *positional, *extra])
        result = ours(["check-receipt", *positional, *extra])
        assert (code, result.exit_code) == (expected, expected), (extra, result.output)

    pack_dir = tmp_path / "packs"
    pack_dir.mkdir()
    for i, pack in enumerate(packet["packs"]):
        (pack_dir / f"p{i}.json").write_text(json.dumps(pack))
    (pack_dir / "junk.json").write_text("not json")
    same_status(base, ["--pack-dir", str(pack_dir)], 0)
    same_status(base, ["--pack", args[-1], "--pack", args[-3]], 0)
    same_status(base, [], 1)  # the packs the receipt names are not given
    same_status(base, ["--pack-dir", str(tmp_path / "nosuch")], 2)
    (pack_dir / "p1.json").unlink()
    same_status(base, ["--pack-dir", str(pack_dir)], 1)  # one of them is not there
    same_status(base, ["--pack-dir", str(pack_dir), "--pack", args[-1]], 0)
    tampered = json.loads(receipt.read_text())
    tampered["decisions"][0]["outcome"] = "admitted"
    (tmp_path / "tampered.json").write_text(json.dumps(tampered))
    same_status([str(tmp_path / "tampered.json"), *args[:3]], ["--pack-dir", str(pack_dir),
                "--pack", args[-1]], 1)  # fmt: skip
    bad_schema = tmp_path / "bad-schema.json"
    bad_schema.write_text('{"fields": 1}')
    same_status([str(receipt), args[0], str(bad_schema), args[2]], args[3:], 2)
    not_an_object = tmp_path / "list.json"
    not_an_object.write_text("[1]")
    same_status([str(not_an_object), *args[:3]], args[3:], 2)


def _run_receipts(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """Two documents admitted by a run's unit runner (one not NFC), stored as a run stores
    them; the corpus folder and each stored receipt."""
    from groundswell.shared.policies import PolicyRegistry
    from groundswell.shared.runs.units import UnitRunner
    from groundswell.shared.storage import open_store

    corpus, output = open_store(str(tmp_path / "corpus")), open_store(str(tmp_path / "out"))
    schema = {"fields": {"amount": {"type": "number", "unit": "USD", "multiple": True}}}
    corpus.put("schema.json", json.dumps(schema).encode())
    docs = {"plain": "Revenue was $1,200 in 2023.\n", "quad": "Revenue\u2001was $1,200 in 2023.\n"}
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    runner = UnitRunner(corpus, output, registry.resolve("default@1"))
    stored = {}
    for name, text in docs.items():
        at = len(text.encode()[: text.encode().index(b"$")])
        cands = [
            {"id": "a", "field": "amount", "value": "1200", "unit": "USD",
             "evidence": {"text": "$1,200"}},
            {"id": "b", "field": "amount", "value": "12000", "unit": "USD",
             "evidence": {"start": at, "end": at + 6}},
        ]  # fmt: skip
        corpus.put(f"documents/{name}.txt", text.encode())
        corpus.put(f"candidates/{name}.json", json.dumps(cands).encode())
        result = runner.unit("admit", name)
        assert result.status == "computed", result.errors
        stored[name] = tmp_path / "out" / result.receipt_key
    return tmp_path / "corpus", stored


def test_check_receipt_reads_a_receipt_stored_by_a_run(tmp_path: Path) -> None:
    corpus, stored = _run_receipts(tmp_path)

    def check(receipt: Path, name: str, doc: str | None = None, stdin: bytes | None = None):
        doc = doc or str(corpus / "documents" / f"{name}.txt")
        return ours(["check-receipt", str(receipt), doc, str(corpus / "schema.json"),
                     str(corpus / "candidates" / f"{name}.json")], stdin=stdin)  # fmt: skip

    for name, receipt in stored.items():
        result = check(receipt, name)
        assert (result.exit_code, result.stdout) == (0, "receipt verified\n"), result.output
    # The non-NFC document, from stdin: re-derived on its NFC form, as the run admitted it.
    quad = (corpus / "documents" / "quad.txt").read_bytes()
    assert check(stored["quad"], "quad", "-", stdin=quad).exit_code == 0
    wrong = check(stored["quad"], "quad", str(corpus / "documents" / "plain.txt"))
    assert wrong.exit_code == 1 and "is not the one the run admitted" in wrong.stderr
    body = json.loads(stored["plain"].read_text())
    body["receipt"]["summary"]["admitted"] += 1
    (tmp_path / "tampered.json").write_text(json.dumps(body))
    tampered = check(tmp_path / "tampered.json", "plain")
    assert tampered.exit_code == 1 and "does not match its content" in tampered.stderr
    failed = {k: v for k, v in json.loads(stored["plain"].read_text()).items() if k != "receipt"}
    failed["failure"] = {"file": "documents/plain.txt", "message": "not UTF-8"}
    (tmp_path / "failed.json").write_text(json.dumps(failed))
    result = check(tmp_path / "failed.json", "plain")
    assert result.exit_code == 2 and "the run recorded a failure" in result.output
