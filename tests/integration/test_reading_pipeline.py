"""Reading in the pipeline: read units on their own queue and worker, over S3 (moto)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import Settings
from tests.conftest import S3_CREDENTIALS, s3_client
from tests.integration.corpus_gen import upload
from tests.shared.runs.mixed_corpus import READ_DOCUMENTS, write_mixed_corpus

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("lane", ["moto+redis"], indirect=True)
def test_mixed_corpus_pipeline_equals_in_process_and_a_second_run_reads_nothing(
    pipeline, lane, shared_raw: Path, tmp_path: Path
):
    folder = tmp_path / "mixed"
    write_mixed_corpus(folder, shared_raw)
    bucket = lane.new_bucket("mixed")
    upload(folder, s3_client(lane.s3_endpoint), bucket, "corpus")
    corpus = f"s3://{bucket}/corpus"
    settings = Settings(s3_endpoint_url=lane.s3_endpoint, **S3_CREDENTIALS)
    expected = run_in_process(corpus, "default", str(tmp_path / "in-process"), settings)

    pipeline.start_worker("reader", queues="read,control")
    pipeline.start_worker("checker", queues="verify,admit,control")
    started = time.monotonic()
    first, _ = pipeline.service.submit(RunSpec(corpus=corpus, policy="default"))
    summary = pipeline.wait(first.id)
    first_seconds = time.monotonic() - started

    assert summary["counts"] == expected["counts"]
    assert summary["documents"] == expected["documents"]
    assert summary["bytes"] == expected["bytes"]
    assert summary["index"]["merkle_root"] == expected["index"]["merkle_root"]
    assert summary["units"]["read"]["computed"] == READ_DOCUMENTS
    # the scanned PDF was read by OCR on the read queue; the doubled id fails alone
    assert not [k for k in summary["counts"] if k.startswith("read.failed.")]
    assert summary["state"] == "partially_failed"
    assert not any("no text layer" in e["message"] for e in summary["errors"])

    started = time.monotonic()
    second, _ = pipeline.service.submit(RunSpec(corpus=corpus, policy="default"))
    again = pipeline.wait(second.id)
    second_seconds = time.monotonic() - started
    assert again["units"]["read"]["computed"] == 0
    assert again["units"]["read"]["cached"] == READ_DOCUMENTS
    assert again["units"]["verify"]["computed"] == again["units"]["admit"]["computed"] == 0
    assert again["counts"] == expected["counts"]
    assert again["index"]["merkle_root"] == expected["index"]["merkle_root"]
    print(f"mixed corpus: first run {first_seconds:.1f} s, second {second_seconds:.1f} s")
