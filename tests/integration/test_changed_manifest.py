"""``run --changed FILE``: only the documents a list of keys names are read and checked, the
rest reused from the corpus's latest run unread, and the run equals a full run over the
corpus as it is (summary counts and Merkle root).

Runs are driven in this process (real Redis, the pipeline's own operations), as in
test_listed_reuse: a counting wrapper over the stores' ``get`` sees every body read.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from groundswell.shared.corpus import changed_documents
from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.layout import changed_key
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import Settings
from tests.conftest import s3_client
from tests.integration import test_listed_reuse
from tests.integration.corpus_gen import upload
from tests.shared.runs.driving import drive

pytestmark = pytest.mark.integration

DOCUMENTS = test_listed_reuse.DOCUMENTS
BODIES = test_listed_reuse.BODIES
# Its fixtures: body reads counted at both stores' get, the corpus folder, the settings.
gets, corpus_dir, settings = (
    test_listed_reuse.gets,
    test_listed_reuse.corpus_dir,
    test_listed_reuse.settings,
)


def _run(settings: Settings, gets: Counter, spec: RunSpec) -> tuple[dict, set[str]]:
    gets.clear()
    service, record, _ = drive(settings, spec)
    assert record.state in ("succeeded", "partially_failed"), record
    if spec.changed is not None:
        # The named documents are kept beside the run, not on its record (which Redis holds):
        # the record has their count only, whatever the list's length.
        named = json.loads(service.store(record.output).get(changed_key(record.id)))
        assert named == sorted(set(named)) and record.changed == len(named)
        assert not any(doc_id in record.model_dump_json() for doc_id in named)
    read = {k for k in gets if k.startswith(BODIES)}
    return service.summary(record.id), read


def _ids(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / "documents").glob("*.txt"))


def _drop_last_line(path: Path) -> bytes:
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) > 1
    return b"".join(lines[:-1])


def _change(folder: Path) -> tuple[str, str, str]:
    """Claims of one document changed, candidates of another, a third document deleted
    (its document, claims and candidates files)."""
    a, b, c = _ids(folder)[1:4]
    claims = folder / "claims" / f"{a}.jsonl"
    claims.write_bytes(_drop_last_line(claims))
    candidates = folder / "candidates" / f"{b}.json"
    candidates.write_bytes(candidates.read_bytes().rstrip() + b"\n\n")  # same facts, new bytes
    for key in (f"documents/{c}.txt", f"claims/{c}.jsonl", f"candidates/{c}.json"):
        (folder / key).unlink()
    return a, b, c


def _files(folder: Path, *doc_ids: str) -> set[str]:
    return {
        f"{d}/{p.name}"
        for d in ("documents", "claims", "candidates")
        for p in (folder / d).glob("*")
        if p.stem in doc_ids
    }


def _equal_to_full(changed: dict, full: dict, listed_errors: int) -> None:
    """The same answer as a full run, but for the list's own errors."""
    extra = changed["counts"].pop("errors", 0) - full["counts"].pop("errors", 0)
    assert extra == listed_errors
    assert changed["counts"] == full["counts"]
    assert changed["documents"] == full["documents"]
    assert changed["index"]["units"] == full["index"]["units"]
    assert changed["index"]["merkle_root"] == full["index"]["merkle_root"]
    for kind, units in full["units"].items():
        assert changed["units"][kind]["done"] == units["done"]
        assert changed["units"][kind]["failed"] == units["failed"]


def test_changed_run_of_a_folder_equals_a_full_run(settings, gets, corpus_dir, tmp_path):
    corpus = str(corpus_dir)
    first, _ = _run(settings, gets, RunSpec(corpus=corpus))
    assert first["units"]["verify"]["computed"] == DOCUMENTS

    a, b, c = _change(corpus_dir)
    manifest = tmp_path / "changed.txt"
    manifest.write_text(
        f"claims/{a}.jsonl\n{corpus}/candidates/{b}.json\n\ndocuments/{c}.txt\n"
        f"notes/readme.md\ndocuments/{a}.txt\n"
    )
    lines = manifest.read_text().splitlines()
    spec = RunSpec(corpus=corpus, changed=lines, changed_name=str(manifest))
    changed, read = _run(settings, gets, spec)

    # Only the named documents' files were read; the deleted one's units are gone.
    assert read == _files(corpus_dir, a, b)
    assert changed["index"]["units"] == first["index"]["units"] - 2
    assert changed["documents"] == first["documents"] - 1
    for kind in ("verify", "admit"):
        units = changed["units"][kind]
        assert units["computed"] + units["cached"] + units["failed"] == DOCUMENTS - 1
    assert changed["reasons"]["verify"] == {"changed input": 1}
    # The line naming no corpus file is an error naming FILE:line; the run went on.
    assert changed["errors"][0] == {
        "file": str(manifest),
        "line": 5,
        "field": None,
        "message": 'names no corpus file: "notes/readme.md"',
    }

    full = run_in_process(corpus, "default", str(tmp_path / "fresh"), settings)
    _equal_to_full(changed, full, 1)
    assert changed["index"]["merkle_root"] != first["index"]["merkle_root"]

    # A listing-compared rerun after it agrees, and reads nothing: the rows the changed run
    # reused carry their listing entries on.
    again, read_again = _run(settings, gets, RunSpec(corpus=corpus))
    assert read_again == set()
    _equal_to_full(again, full, 0)

    # The list is taken at its word: a document it does not name is not compared, even
    # when its files changed (a full or listing-compared run finds it); one it names is read
    # even when unchanged.
    d, e = _ids(corpus_dir)[5:7]
    claims = corpus_dir / "claims" / f"{d}.jsonl"
    claims.write_bytes(_drop_last_line(claims))
    named, read_named = _run(settings, gets, RunSpec(corpus=corpus, changed=[f"claims/{e}.jsonl"]))
    assert read_named == _files(corpus_dir, e)
    assert named["units"]["verify"]["computed"] == 0
    assert named["index"]["merkle_root"] == again["index"]["merkle_root"]
    listing, read_listing = _run(settings, gets, RunSpec(corpus=corpus))
    assert read_listing == {f"documents/{d}.txt", f"claims/{d}.jsonl"}
    assert listing["reasons"] == {"verify": {"changed input": 1}}


def test_changed_run_on_s3_from_a_stored_list(settings, gets, corpus_dir, s3_endpoint, tmp_path):
    client = s3_client(s3_endpoint)
    bucket = f"corpus-{os.urandom(4).hex()}"
    client.create_bucket(Bucket=bucket)
    upload(corpus_dir, client, bucket, "corpus")
    corpus = f"s3://{bucket}/corpus"
    first, _ = _run(settings, gets, RunSpec(corpus=corpus))

    a, b, c = _change(corpus_dir)
    for key in (f"claims/{a}.jsonl", f"candidates/{b}.json"):
        client.put_object(Bucket=bucket, Key=f"corpus/{key}", Body=(corpus_dir / key).read_bytes())
    for key in (f"documents/{c}.txt", f"claims/{c}.jsonl", f"candidates/{c}.json"):
        client.delete_object(Bucket=bucket, Key=f"corpus/{key}")
    # Keys as S3 Inventory writes them (with the corpus prefix), stored beside the corpus.
    listed = f"corpus/claims/{a}.jsonl\ncorpus/candidates/{b}.json\ncorpus/documents/{c}.txt\n"
    client.put_object(Bucket=bucket, Key="corpus/changes/today.txt", Body=listed.encode())

    changed, read = _run(settings, gets, RunSpec(corpus=corpus, changed="changes/today.txt"))
    assert read == _files(corpus_dir, a, b)
    assert changed["errors_total"] == first["errors_total"]
    full = run_in_process(corpus, "default", str(tmp_path / "fresh"), settings)
    _equal_to_full(changed, full, 0)
    assert changed["index"]["merkle_root"] != first["index"]["merkle_root"]


def test_changed_keys_map_to_documents():
    lines = [
        "documents/a.txt",
        "documents/b.pdf",
        "claims/c.jsonl",
        "s3://bkt/pre/candidates/d.json",
        "pre/labels/e.json",
        "",
        "# a comment",
        "claims/f.json",
        "documents/sub/g.txt",
        "schema.json",
    ]
    doc_ids, errors = changed_documents(lines, "list.txt", "s3://bkt/pre")
    assert doc_ids == ["a", "b", "c", "d", "e"]
    assert [(e.file, e.line) for e in errors] == [
        ("list.txt", 8),
        ("list.txt", 9),
        ("list.txt", 10),
    ]
    assert str(errors[0]) == 'list.txt:8: names no corpus file: "claims/f.json"'
