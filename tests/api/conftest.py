"""A real uvicorn serving the API, over the test's Redis and storage."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from shared.settings import hash_api_key
from workers.embedded import free_port, service_env, stop_process, wait_for_port

API_KEY = "gs_test_key_correct_horse"


@pytest.fixture
def api_url(service_settings: dict[str, object], tmp_path) -> Iterator[str]:
    port = free_port()
    env = service_env(**service_settings, api_key_hashes=hash_api_key(API_KEY))
    log = open(tmp_path / "api.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared.cli", "api", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, timeout=30, proc=proc)
    except (TimeoutError, RuntimeError):
        log.close()
        raise AssertionError((tmp_path / "api.log").read_text()) from None
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)
    log.close()


@pytest.fixture
def client(api_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_url, headers={"X-API-Key": API_KEY}, timeout=30) as c:
        yield c
