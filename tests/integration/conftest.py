"""Fixtures of the integration tests: generated corpora on moto S3, real workers, run helpers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from shared.runs.inprocess import run_in_process
from shared.settings import Settings
from tests.conftest import s3_client
from tests.integration.corpus_gen import pick_documents, upload, write_corpus

PIPELINE_DOCUMENTS = 210


@pytest.fixture(scope="session")
def generated_corpus(shared_corpus: Path, corpus_index: list[dict], tmp_path_factory) -> Path:
    """210 real documents with generated claims, candidates and labels, in a temp folder."""
    folder = tmp_path_factory.mktemp("generated-corpus")
    documents = pick_documents(shared_corpus, corpus_index, PIPELINE_DOCUMENTS)
    assert len(documents) == PIPELINE_DOCUMENTS
    write_corpus(folder, shared_corpus, documents)
    return folder


@pytest.fixture(scope="session")
def s3_corpus(generated_corpus: Path, s3_endpoint: str) -> str:
    """The generated corpus in a bucket of moto's S3 server: ``s3://bucket/corpus``."""
    bucket = f"corpus-{uuid.uuid4().hex[:8]}"
    client = s3_client(s3_endpoint)
    client.create_bucket(Bucket=bucket)
    upload(generated_corpus, client, bucket, "corpus")
    return f"s3://{bucket}/corpus"


@pytest.fixture(scope="session")
def expected_summary(s3_corpus: str, s3_endpoint: str, tmp_path_factory) -> dict:
    """The generated corpus through the in-process core: what every pipeline run must equal."""
    settings = Settings(
        s3_endpoint_url=s3_endpoint, s3_access_key_id="testing", s3_secret_access_key="testing"
    )
    output = str(tmp_path_factory.mktemp("in-process-output"))
    return run_in_process(s3_corpus, "default", output, settings)
