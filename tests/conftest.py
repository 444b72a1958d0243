"""Fixtures shared by every test package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.settings import Settings, get_settings
from workers.embedded import RedisServer, free_port, stop_process, wait_for_port


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """../shared/corpus (setting GROUNDSWELL_SHARED_CORPUS): real documents, read in place."""
    path = get_settings().shared_corpus
    if not (path / "documents").is_dir():
        pytest.fail(
            f"the shared corpus is not at {path}: set GROUNDSWELL_SHARED_CORPUS to the folder "
            "that holds documents/ and gold_facts.jsonl (CI always has ../shared/corpus)"
        )
    return path


@pytest.fixture(scope="session")
def corpus_index(shared_corpus: Path) -> list[dict]:
    with (shared_corpus / "index.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# -- real services ------------------------------------------------------------------------
# Every integration test talks to real processes started here: a redis-server on a free
# loopback port, moto's S3 server over HTTP, celery workers, uvicorn.


S3_CREDENTIALS = {"s3_access_key_id": "testing", "s3_secret_access_key": "testing"}


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server (``moto_server``) as a real HTTP endpoint."""
    port = free_port()
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen(
        [moto, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for_port(port, proc=proc)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A fresh bucket per test."""
    import boto3

    name = f"gs-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def service_settings(redis_server: RedisServer, s3_endpoint: str, tmp_path) -> dict[str, object]:
    """Settings for services of one test: a fresh Redis database and short time limits."""
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    return {
        "broker_url": redis_server.url,
        "storage_url": str(tmp_path / "output"),
        "s3_endpoint_url": s3_endpoint,
        **S3_CREDENTIALS,
        "task_soft_time_limit": 20,
        "task_time_limit": 30,
        "visibility_timeout": 40,
        "stall_seconds": 4,
        "batch_max_units": 8,
        "batch_bytes": 400_000,
    }


def make_settings(values: dict[str, object]) -> Settings:
    return Settings(**values)
