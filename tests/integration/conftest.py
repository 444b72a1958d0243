"""Fixtures of the integration tests: lanes (an S3 server and a broker), generated corpora,
real workers, run helpers.

A *lane* is where a pipeline test runs: the object store (moto's S3 server, or SeaweedFS, a
production object store) and the Celery broker (Redis, or RabbitMQ with the run state still
in Redis). Tests choose lanes with ``@pytest.mark.parametrize("lane", [...], indirect=True)``;
without one they run on moto and Redis.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.settings import Settings
from groundswell.workers.app import purge_queues
from tests.conftest import S3_CREDENTIALS, Pipeline, s3_client
from tests.integration.corpus_gen import pick_documents, upload, write_corpus

PIPELINE_DOCUMENTS = 80

# (object store, broker) of each lane; the README's matrix lists the same.
LANES = {
    "moto+redis": ("moto", "redis"),
    "seaweedfs+redis": ("seaweedfs", "redis"),
    "moto+rabbitmq": ("moto", "rabbitmq"),
}
STORE_LANES = ["moto+redis", "seaweedfs+redis"]
ALL_LANES = [*STORE_LANES, "moto+rabbitmq"]


@dataclass(frozen=True)
class Lane:
    name: str
    s3_endpoint: str
    broker_url: str | None  # None: the test's Redis is the broker

    def broker_queues(self) -> set[str]:
        """The queues on this lane's RabbitMQ virtual host (proof the messages went there)."""
        assert self.broker_url is not None
        vhost = self.broker_url.rsplit("/", 1)[1]
        ctl = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
        done = subprocess.run(
            [ctl, "-q", "list_queues", "-p", vhost, "name"], capture_output=True, text=True
        )
        return set(done.stdout.split())

    def new_bucket(self, prefix: str = "out") -> str:
        bucket = f"{prefix}-{uuid.uuid4().hex[:8]}"
        s3_client(self.s3_endpoint).create_bucket(Bucket=bucket)
        return bucket


@pytest.fixture(scope="session")
def lane(request) -> Lane:
    name = getattr(request, "param", "moto+redis")
    store, broker = LANES[name]
    endpoint = request.getfixturevalue("s3_endpoint" if store == "moto" else "seaweedfs_endpoint")
    broker_url = request.getfixturevalue("rabbitmq_url") if broker == "rabbitmq" else None
    return Lane(name, endpoint, broker_url)


@pytest.fixture
def pipeline(lane: Lane, service_settings: dict[str, object], tmp_path: Path) -> Iterator[Pipeline]:
    """Real workers on the lane: receipts and run files go to a fresh bucket of its S3 server."""
    values = {
        **service_settings,
        "s3_endpoint_url": lane.s3_endpoint,
        "storage_url": f"s3://{lane.new_bucket()}/out",
    }
    if lane.broker_url:
        values["redis_url"] = service_settings["broker_url"]  # run state stays in Redis
        values["broker_url"] = lane.broker_url
    pipe = Pipeline(values, tmp_path)
    if lane.broker_url:
        purge_queues(pipe.app)  # what an earlier test on this virtual host left queued
    yield pipe
    pipe.stop()


@pytest.fixture(scope="session")
def generated_corpus(shared_corpus: Path, corpus_index: list[dict], tmp_path_factory) -> Path:
    """PIPELINE_DOCUMENTS real documents with generated claims, candidates and labels, in a
    temp folder."""
    folder = tmp_path_factory.mktemp("generated-corpus")
    documents = pick_documents(shared_corpus, corpus_index, PIPELINE_DOCUMENTS)
    assert len(documents) == PIPELINE_DOCUMENTS
    write_corpus(folder, shared_corpus, documents)
    return folder


@pytest.fixture(scope="session")
def s3_corpus(generated_corpus: Path, lane: Lane) -> str:
    """The generated corpus in a bucket of the lane's S3 server: ``s3://bucket/corpus``."""
    bucket = lane.new_bucket("corpus")
    upload(generated_corpus, s3_client(lane.s3_endpoint), bucket, "corpus")
    return f"s3://{bucket}/corpus"


@pytest.fixture(scope="session")
def expected_summary(s3_corpus: str, lane: Lane, tmp_path_factory) -> dict:
    """The generated corpus through the in-process core: what every pipeline run must equal."""
    settings = Settings(s3_endpoint_url=lane.s3_endpoint, **S3_CREDENTIALS)
    output = str(tmp_path_factory.mktemp("in-process-output"))
    return run_in_process(s3_corpus, "default", output, settings)
