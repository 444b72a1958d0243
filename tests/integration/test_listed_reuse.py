"""An unchanged rerun reuses its units by their inputs' listing entries, reading no body.

Runs are driven in this process (real Redis, the pipeline's own operations), so a counting
wrapper over the stores' ``get`` sees every body read: the corpus on moto's S3 server (ETags)
and in a local folder (mtime, inode and size).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path

import pytest
from botocore.client import BaseClient

from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import Settings
from groundswell.shared.storage.local import LocalStore
from groundswell.shared.storage.s3 import S3Store
from tests.conftest import S3_CREDENTIALS, s3_client
from tests.integration.corpus_gen import pick_documents, upload, write_corpus
from tests.shared.runs.driving import drive

pytestmark = pytest.mark.integration

DOCUMENTS = 12
BODIES = ("documents/", "claims/", "candidates/")


@pytest.fixture
def gets(monkeypatch) -> Counter:
    """Corpus keys read (``documents/x.txt``...), counted at both store backends' ``get``."""
    counted: Counter = Counter()
    for cls in (S3Store, LocalStore):
        original = cls.get

        def get(self, key, *, max_bytes=None, _original=original):
            counted[key] += 1
            return _original(self, key, max_bytes=max_bytes)

        monkeypatch.setattr(cls, "get", get)
    return counted


def _bodies(gets: Counter) -> dict[str, int]:
    """The document, claims and candidates bodies read (of any store: receipts never match)."""
    return {k: n for k, n in gets.items() if k.startswith(BODIES)}


def _run(settings: Settings, gets: Counter, corpus: str, **spec) -> tuple[dict, dict[str, int]]:
    gets.clear()
    service, record, _ = drive(settings, RunSpec(corpus=corpus, **spec))
    assert record.state == "succeeded", record
    return service.summary(record.id), _bodies(gets)


def _receipts(gets: Counter) -> int:
    """The receipts read (of the output store)."""
    return sum(n for k, n in gets.items() if k.startswith("receipts/"))


def _done(summary: dict, kind: str) -> tuple[int, int]:
    units = summary["units"][kind]
    assert units["failed"] == 0 and units["done"] == DOCUMENTS
    return units["computed"], units["cached"]


def _same_results(a: dict, b: dict) -> None:
    assert a["counts"] == b["counts"]
    assert a["documents"] == b["documents"]
    assert a["index"]["merkle_root"] == b["index"]["merkle_root"]


@pytest.fixture
def corpus_dir(shared_corpus, corpus_index, tmp_path) -> Path:
    folder = tmp_path / "corpus"
    write_corpus(folder, shared_corpus, pick_documents(shared_corpus, corpus_index, DOCUMENTS))
    return folder


@pytest.fixture
def settings(redis_server, s3_endpoint, tmp_path) -> Settings:
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    return Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        s3_endpoint_url=s3_endpoint,
        **S3_CREDENTIALS,
    )


def _changed_claims(path: Path) -> bytes:
    """The claims file without its last record: new content, so a new ETag and size."""
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) > 1
    return b"".join(lines[:-1])


def test_unchanged_rerun_on_s3_reads_no_body(settings, gets, corpus_dir, s3_endpoint, tmp_path):
    client = s3_client(s3_endpoint)
    bucket = f"corpus-{os.urandom(4).hex()}"
    client.create_bucket(Bucket=bucket)
    upload(corpus_dir, client, bucket, "corpus")
    corpus = f"s3://{bucket}/corpus"

    first, read_first = _run(settings, gets, corpus)
    assert first["units"]["verify"]["computed"] == DOCUMENTS
    # Each document is read once (its admit unit takes the bytes its verify unit read, by
    # the same listing entry), and each claims and candidates file once.
    assert sum(read_first.values()) == 3 * DOCUMENTS
    assert set(read_first.values()) == {1}

    again, read_again = _run(settings, gets, corpus)
    assert read_again == {}
    # Nor any receipt: each unit's previous row names its receipt (same key, so the same
    # fingerprint) with its digest and counts.
    assert _receipts(gets) == 0
    assert _done(again, "verify") == _done(again, "admit") == (0, DOCUMENTS)
    _same_results(first, again)

    # --verify-inputs reads and hashes everything (each unit its own inputs, and opens its
    # receipt, checking its seal), with the same results.
    verified, read_verified = _run(settings, gets, corpus, verify_inputs=True)
    assert read_verified == {k: 2 if k.startswith("documents/") else 1 for k in read_first}
    assert _receipts(gets) == 2 * DOCUMENTS
    assert _done(verified, "verify") == (0, DOCUMENTS)
    _same_results(first, verified)

    # A claims file rewritten under the same key (new content, new ETag) is recomputed:
    # only its unit reads, the document's admission is still reused unread.
    doc_id = sorted(p.stem for p in (corpus_dir / "claims").glob("*.jsonl"))[3]
    claims = corpus_dir / "claims" / f"{doc_id}.jsonl"
    claims.write_bytes(_changed_claims(claims))
    client.put_object(Bucket=bucket, Key=f"corpus/claims/{doc_id}.jsonl", Body=claims.read_bytes())
    changed, read_changed = _run(settings, gets, corpus)
    assert read_changed == {f"documents/{doc_id}.txt": 1, f"claims/{doc_id}.jsonl": 1}
    assert _done(changed, "verify") == (1, DOCUMENTS - 1)
    assert _done(changed, "admit") == (0, DOCUMENTS)
    assert changed["reasons"] == {"verify": {"changed input": 1}}
    # The same answer as a fresh in-process run over the corpus as it is now.
    fresh = run_in_process(corpus, "default", str(tmp_path / "fresh"), settings)
    _same_results(fresh, changed)
    assert changed["counts"] != first["counts"]


def test_unchanged_rerun_of_a_folder_compares_mtime_inode_and_size(settings, gets, corpus_dir):
    corpus = str(corpus_dir)
    first, read_first = _run(settings, gets, corpus)
    assert sum(read_first.values()) == 3 * DOCUMENTS  # each document once (mtime, inode, size)

    again, read_again = _run(settings, gets, corpus)
    assert read_again == {}
    assert _done(again, "verify") == _done(again, "admit") == (0, DOCUMENTS)
    _same_results(first, again)

    # New content of the same size and mtime, put in place by a rename (a new inode): a
    # listing that compared only mtime and size would wrongly reuse the unit.
    doc_id = sorted(p.stem for p in (corpus_dir / "candidates").glob("*.json"))[0]
    path = corpus_dir / "candidates" / f"{doc_id}.json"
    old = path.read_bytes()
    new = b" " + old[:-1] if old.endswith(b"\n") else old.replace(b", ", b",\n", 1)
    assert len(new) == len(old) and new != old
    stat = path.stat()
    replacement = path.with_suffix(".tmp")
    replacement.write_bytes(new)
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, path)
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and path.stat().st_size == stat.st_size
    assert path.stat().st_ino != stat.st_ino

    changed, read_changed = _run(settings, gets, corpus)
    assert read_changed == {f"documents/{doc_id}.txt": 1, f"candidates/{doc_id}.json": 1}
    assert _done(changed, "verify") == (0, DOCUMENTS)
    assert _done(changed, "admit") == (1, DOCUMENTS - 1)


# -- the same, counted as S3 requests ------------------------------------------------------
#
# Every request the stores make goes through botocore's ``_make_api_call``; the counter keeps
# those naming a corpus bucket (operation, key or prefix), so receipts and run state in the
# output store never count: labels too, and each listing page.

PAGE = 5  # keys a listing page: several pages a folder
FOLDERS = ("documents/", "claims/", "candidates/", "labels/")


@pytest.fixture
def requests(monkeypatch) -> list[tuple[str, str]]:
    """(operation, key or prefix) of each request naming a corpus bucket."""
    seen: list[tuple[str, str]] = []
    original = BaseClient._make_api_call

    def call(self, operation, params, _original=original):
        if str(params.get("Bucket", "")).startswith("corpus-"):
            seen.append((operation, params.get("Key") or params.get("Prefix") or ""))
        return _original(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", call)
    return seen


def _pages(corpus_dir: Path) -> int:
    """The listing pages of the corpus's folders (an empty folder is one request too)."""
    return sum(max(1, math.ceil(len(list((corpus_dir / f).glob("*"))) / PAGE)) for f in FOLDERS)


def test_unchanged_rerun_reads_no_body_and_lists_each_page_once(
    settings: Settings, requests, corpus_dir: Path, s3_endpoint, tmp_path
):
    assert list((corpus_dir / "labels").glob("*.json")), "the corpus has labels"
    client = s3_client(s3_endpoint)
    bucket = f"corpus-{os.urandom(4).hex()}"
    client.create_bucket(Bucket=bucket)
    upload(corpus_dir, client, bucket, "corpus")
    spec = RunSpec(corpus=f"s3://{bucket}/corpus")
    # Small pages and a small window: several pages a folder, planned over several steps.
    settings = settings.model_copy(
        update={"list_page_size": PAGE, "max_inflight_batches": 1, "batch_max_units": 2}
    )

    def run() -> tuple[dict, Counter]:
        requests.clear()
        service, record, kinds = drive(settings, spec)
        assert record.state == "succeeded", record
        assert kinds.count("plan") > 2  # planning took several steps
        return service.summary(record.id), Counter(requests)

    first, asked_first = run()
    assert _lists(asked_first) == _pages(corpus_dir)  # each page once, over every step
    assert set(_read(asked_first).values()) == {1}  # a document and its labels read once
    again, asked_again = run()
    assert _read(asked_again) == {}
    assert _lists(asked_again) == _pages(corpus_dir)
    # The rest, whatever the planning steps: corpus.yaml once for planning (its corpus is
    # kept in the process for the next step) and twice for the run's runner (its corpus
    # and its producer), schema.json once for planning and once for the runner.
    assert {k: n for k, n in asked_again.items() if k[0] != "ListObjectsV2"} == {
        ("GetObject", "corpus/corpus.yaml"): 3,
        ("GetObject", "corpus/schema.json"): 2,
    }
    for kind in ("verify", "admit"):
        assert again["units"][kind]["cached"] == DOCUMENTS, again["units"]
    # The labels' counts come from the rows, as they were counted from the labels.
    assert again["counts"] == first["counts"]
    assert again["index"]["merkle_root"] == first["index"]["merkle_root"]

    # A changed labels file (one label flipped) recounts its document's units: read again.
    path = sorted((corpus_dir / "labels").glob("*.json"))[0]
    labels = json.loads(path.read_text())
    part = next(p for p in ("claims", "candidates") if labels.get(p))
    name = next(iter(labels[part]))
    labels[part][name] = not labels[part][name]
    key = f"corpus/labels/{path.name}"
    client.put_object(Bucket=bucket, Key=key, Body=json.dumps(labels).encode())
    changed, asked_changed = run()
    assert asked_changed[("GetObject", key)] == 1  # once, for its verify and its admit unit
    assert {k.split("/")[1] for (_, k) in _read(asked_changed)} == {
        "documents",
        "claims",
        "candidates",
        "labels",
    }
    assert len(_read(asked_changed)) == 4  # that document's files only
    assert changed["counts"] != first["counts"]
    path.write_text(json.dumps(labels))
    fresh = run_in_process(str(corpus_dir), "default", str(tmp_path / "fresh"), settings)
    assert changed["counts"] == fresh["counts"]


def _read(asked: Counter) -> dict[tuple[str, str], int]:
    """The corpus files read (documents, claims, candidates, labels)."""
    return {
        k: n
        for k, n in asked.items()
        if k[0] == "GetObject" and k[1].split("/")[1] + "/" in FOLDERS
    }


def _lists(asked: Counter) -> int:
    return sum(n for (op, _), n in asked.items() if op == "ListObjectsV2")


def test_a_labelled_unit_reused_under_another_policy_takes_that_receipts_counts(
    settings: Settings, gets, corpus_dir: Path, tmp_path
):
    """A row's counts are its receipt's: a rerun under the policy before last reuses that
    policy's receipts (found by fingerprint), and counts them from those receipts and the
    labels, not from the last run's rows (the other policy's)."""
    assert list((corpus_dir / "labels").glob("*.json")), "the corpus has labels"
    corpus = str(corpus_dir)
    default, _ = _run(settings, gets, corpus)
    strict, _ = _run(settings, gets, corpus, policy="strict")
    assert strict["counts"] != default["counts"]
    back, read_back = _run(settings, gets, corpus)
    assert _done(back, "verify") == _done(back, "admit") == (0, DOCUMENTS)
    # The verification receipts are not the last run's (strict's): each opened, counted
    # from it and its labels; admission is the same under both (its rows are reused).
    assert _receipts(gets) == DOCUMENTS
    assert {k.split("/")[0] for k in read_back} <= {"documents", "claims", "candidates"}
    fresh = run_in_process(corpus, "default", str(tmp_path / "fresh"), settings)
    _same_results(fresh, back)
    _same_results(default, back)
