"""Traces: one trace per run across the API and a real worker (the SDK's in-memory exporter),
batch spans with their sizes and cached counts; nothing of OpenTelemetry when it is unset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import hash_api_key
from groundswell.workers.embedded import service_env
from tests.conftest import API_KEY
from tests.otlp_receiver import Receiver

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent.parent


def _python(*args: str, env: dict[str, str]) -> str:
    """Run this Python in the repository; its output (it must succeed)."""
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_run_is_one_trace_from_the_request_to_finalize(service_settings):
    env = service_env(
        **service_settings,
        api_key_hashes=hash_api_key(API_KEY),
        allowed_corpora=str(SAMPLE_CORPUS),
    )
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    first, *lines = _python("-m", "tests.workers.tracing_harness", API_KEY, env=env).splitlines()
    run_id = json.loads(first)["run_id"]
    spans = [json.loads(line) for line in lines]
    names = {s["name"] for s in spans}
    for task in ("plan", "verify", "admit", "finalize"):
        assert f"run/groundswell.{task}" in names, sorted(names)
    request = next(s for s in spans if s["name"] == "POST /v1/runs")
    ours = [s for s in spans if s["attributes"].get("groundswell.run_id") == run_id]
    assert ours and {s["trace"] for s in ours} == {request["trace"]}  # one trace per run
    batches = [s for s in ours if s["name"] in ("run/groundswell.verify", "run/groundswell.admit")]
    assert batches and all(
        {"groundswell.units", "groundswell.cached", "groundswell.batch"} <= set(s["attributes"])
        for s in batches
    )
    units = sum(s["attributes"]["groundswell.units"] for s in batches)
    final = next(
        s
        for s in ours
        if s["name"] == "run/groundswell.finalize" and "groundswell.units" in s["attributes"]
    )
    assert final["attributes"]["groundswell.units"] == units


def test_a_private_stack_exports_one_trace_over_otlp_from_its_prefork_workers(tmp_path):
    """``groundswell run --embedded`` with the endpoint set: the command and real prefork
    workers (each pool child setting up after the fork, on modules its parent loaded) post
    their spans to an OTLP/HTTP receiver; they form one trace, from the submit to finalize."""
    receiver = Receiver()
    env = {k: v for k, v in service_env().items() if not k.startswith(("GROUNDSWELL_", "OTEL_"))}
    env["GROUNDSWELL_STORAGE_URL"] = str(tmp_path / "store")
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
    try:
        _python("-m", "groundswell", "run", str(SAMPLE_CORPUS), "--embedded", env=env)
        spans = receiver.spans()
    finally:
        receiver.close()
    submit = [s for service, s in spans if s.name == "groundswell.submit"]
    assert len(submit) == 1
    assert {service for service, s in spans if s.name == "groundswell.submit"} == {
        "groundswell-cli"
    }
    trace_id = submit[0].trace_id
    ours = [(service, s) for service, s in spans if s.trace_id == trace_id]
    by_name = {s.name for _, s in ours}
    for task in ("plan", "verify", "admit", "finalize"):
        assert f"run/groundswell.{task}" in by_name, sorted(by_name)
    assert {service for service, s in ours if s.name.startswith("run/")} == {"groundswell-worker"}
    assert len(ours) == len(spans)  # nothing outside the run's trace
    ids = {s.span_id for _, s in ours}
    assert all(s.parent_span_id in ids for _, s in ours if s is not submit[0])  # no orphan
    batches = [s for _, s in ours if s.name in ("run/groundswell.verify", "run/groundswell.admit")]
    attributes = [{a.key for a in s.attributes} for s in batches]
    assert batches and all({"groundswell.units", "groundswell.cached"} <= a for a in attributes)


def test_nothing_of_opentelemetry_is_imported_when_it_is_unset():
    code = (
        "import sys, groundswell.workers.tasks, groundswell.shared.cli.runs; "
        "from groundswell.api.main import create_app; create_app(); "
        "from groundswell.shared import tracing; tracing.annotate(x=1); "
        "print(sorted(m for m in sys.modules if m.startswith(OURS)))"
    )
    # What tracing would load: the SDK's tracing, the exporter, the instrumentations (redis-py
    # itself imports OpenTelemetry's API and metrics SDK whenever they are installed).
    ours = ("opentelemetry.sdk.trace", "opentelemetry.exporter", "opentelemetry.instrumentation")
    code = f"OURS = {ours!r}; " + code
    env = {k: v for k, v in service_env().items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_an_endpoint_without_the_tracing_extra_warns_and_the_api_still_starts():
    """A runtime install has no OpenTelemetry: with the endpoint set, the API is made with a
    warning, not an ImportError from the FastAPI instrumentation."""
    code = (
        "import sys\n"
        "for name in ('opentelemetry.sdk.trace', 'opentelemetry.instrumentation.fastapi'):\n    sys.modules[name] = None\n"  # as if not installed
        "from groundswell.api.main import create_app\n"
        "from groundswell.shared import tracing\n"
        "from groundswell.shared.settings import Settings\n"
        "create_app(Settings())\n"
        "print('active', tracing.active())\n"
    )
    env = {**service_env(), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/v1/traces"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "active False"
    assert "OpenTelemetry is not installed" in done.stderr
