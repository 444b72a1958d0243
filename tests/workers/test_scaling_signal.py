"""The autoscaler's signal is the run's outstanding work, not a queue's length (issue 25).

Admit workers reserve up to GROUNDSWELL_ADMIT_PREFETCH (16) messages a process with late
acks: what they hold sits in kombu's ``unacked`` hash, not in the ``admit`` list, so the list
reads 0 while the work waits. ``groundswell_pending_batches{queue}`` (the API's /metrics,
what deploy/k8s's ScaledObjects scale on) counts the batches the active runs have sent and
not yet recorded, whoever holds them. Here two real admit workers with the manifests'
command line (``--queues admit --concurrency 2``) are held (their pool processes stopped)
while their parents keep reserving, and the gauge scraped from a real API, and KEDA's query
of it through a real Prometheus, are compared with the run state's pending batches and the
broker's own count of each queue's messages, waiting plus reserved.
"""

from __future__ import annotations

import json
import os
import signal
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundswell.shared.runs import kinds
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import hash_api_key
from groundswell.workers.app import QUEUE_OF
from tests.conftest import API_KEY, Pipeline, running_api, wait_until
from tests.deploy.test_k8s import of_kind, render
from tests.integration.corpus_gen import pick_documents, write_corpus
from tests.workers.test_metrics import prometheus_scraping

pytestmark = pytest.mark.integration

# The queues of the batch kinds (control carries no batches).
BATCH_KINDS = tuple(QUEUE_OF[kind] for kind in kinds.names())
DOCUMENTS = 160  # with 8 units a batch: 20 admit batches and 20 verify batches


def pending_gauge(api_url: str) -> dict[str, float]:
    text = httpx.get(f"{api_url}/metrics", timeout=30).text
    return {
        sample.labels["queue"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "groundswell_pending_batches"
        for sample in family.samples
    }


def broker_counts(pipeline: Pipeline) -> dict[str, tuple[int, int]]:
    """(waiting in the list, reserved by a worker) per queue, as the Redis broker holds them:
    a reserved message is in kombu's ``unacked`` hash with the queue it came from."""
    r = pipeline.service.runs.r
    reserved = dict.fromkeys(BATCH_KINDS, 0)
    for raw in r.hvals("unacked"):
        _message, _exchange, queue = json.loads(raw)
        if queue in reserved:
            reserved[queue] += 1
    return {queue: (int(r.llen(queue)), reserved[queue]) for queue in BATCH_KINDS}


def outstanding_in_state(pipeline: Pipeline, run_id: str) -> dict[str, int]:
    """The run's pending batches that have been sent (not held behind a read batch), by queue,
    read from the run state's pending hash: an independent count of the outstanding work."""
    r = pipeline.service.runs.r
    held = r.smembers(f"gs:run:{run_id}:held")
    out = dict.fromkeys(BATCH_KINDS, 0)
    for batch, spec in r.hgetall(f"gs:run:{run_id}:pending").items():
        if batch not in held:
            out[QUEUE_OF[json.loads(spec)["kind"]]] += 1
    return out


def test_the_pending_batches_gauge_equals_the_outstanding_work_while_workers_hold_it(
    service_settings, shared_corpus, corpus_index, output_bucket, tmp_path
):
    corpus = tmp_path / "corpus"
    write_corpus(corpus, shared_corpus, pick_documents(shared_corpus, corpus_index, DOCUMENTS))
    # Reserved messages go back to their list after the visibility timeout: longer than the
    # test holds them, however slow the machine.
    values = {
        **service_settings,
        "storage_url": f"s3://{output_bucket}/out",
        "visibility_timeout": 600,
    }
    pipeline = Pipeline(values, tmp_path)
    api_values = {**values, "metrics_cache_seconds": 0, "api_key_hashes": hash_api_key(API_KEY)}
    try:
        with running_api(api_values, tmp_path) as api_url:
            assert set(pending_gauge(api_url).values()) == {0}  # no run yet
            # Two replicas of the manifests' admit worker (prefetch GROUNDSWELL_ADMIT_PREFETCH,
            # 16 a process), their pool processes stopped once started: each parent still
            # reserves messages.
            children = []
            for name in ("admit-1", "admit-2"):
                admit = pipeline.start_worker(name, queues="admit", concurrency=2)
                children += wait_until(
                    lambda admit=admit: len(admit.children()) == 2 and admit.children(),
                    what=f"the pool processes of {name}",
                )
            wait_until(lambda: pipeline.service.runs.worker_slots() >= 4, what="admit ready")
            for pid in children:
                os.kill(pid, signal.SIGSTOP)
            # Planning only (control): verify batches wait in their list, with no consumer.
            pipeline.start_worker("control", queues="control")
            record, _ = pipeline.service.submit(RunSpec(corpus=str(corpus)))
            stable = _stability(pipeline)

            def settled() -> bool:
                # Planning has filled the window (it waits for a record that cannot come) or
                # ended, and the admit workers reserved all they were sent.
                key = f"gs:run:{record.id}"
                waiting, done = pipeline.service.runs.r.hmget(key, "plan_waiting", "plan_done")
                counts = broker_counts(pipeline)
                return (
                    "1" in (waiting, done)
                    and counts["admit"][1] > 0
                    and counts["admit"][0] == 0
                    and stable(record.id)
                )

            wait_until(settled, timeout=60, what="admit batches reserved by the held worker")
            samples = []
            for _ in range(5):
                before = outstanding_in_state(pipeline, record.id), broker_counts(pipeline)
                gauge = pending_gauge(api_url)
                after = outstanding_in_state(pipeline, record.id), broker_counts(pipeline)
                if after != before:
                    continue  # something moved during the sample: take another
                samples.append((after[0], gauge, after[1]))
                time.sleep(0.3)
            assert len(samples) >= 3, samples
            for outstanding, gauge, counts in samples:
                # The admit list reads 0 while its batches sit reserved by the held worker:
                # KEDA's Redis trigger would see no work at all.
                assert counts["admit"] == (0, outstanding["admit"]), counts
                assert outstanding["admit"] >= 4, outstanding
                # The gauge is the outstanding work of every queue: waiting plus reserved.
                assert gauge == {q: float(n) for q, n in outstanding.items()}, (gauge, counts)
                assert gauge == {q: float(sum(c)) for q, c in counts.items()}, (gauge, counts)
            # What KEDA would read: the manifests' own query, evaluated by a real Prometheus
            # scraping this API.
            queries = {
                name: obj["spec"]["triggers"][0]["metadata"]["query"]
                for name, obj in of_kind(list(render("overlays/redis")), "ScaledObject").items()
                if obj["spec"]["triggers"][0]["type"] == "prometheus"
            }
            port = int(api_url.rsplit(":", 1)[1])
            with prometheus_scraping(port, tmp_path) as query:
                seen = wait_until(
                    lambda: query(queries["worker-admit"]), timeout=60, what="the admit query"
                )
                keda = {name: float(query(expr)[0]["value"][1]) for name, expr in queries.items()}
            expected = outstanding_in_state(pipeline, record.id)
            assert expected == samples[-1][0]  # still held
            assert float(seen[0]["value"][1]) == expected["admit"]
            assert keda == {f"worker-{q}": float(n) for q, n in expected.items()}, keda
            # Released, with a verify worker: every batch is recorded and the gauge reads 0.
            for pid in children:
                os.kill(pid, signal.SIGCONT)
            pipeline.start_worker("verify", queues="verify")
            pipeline.wait(record.id, timeout=300)
            assert pipeline.service.get(record.id).state == "succeeded"
            assert set(pending_gauge(api_url).values()) == {0}
    finally:
        for worker in pipeline.workers:
            for pid in worker.children():
                os.kill(pid, signal.SIGCONT)
        pipeline.stop()


def _stability(pipeline: Pipeline):
    """A predicate: true when the run's pending hash and the broker's counts are as the last
    call saw them (nothing moved between two polls)."""
    seen: dict[str, object] = {}

    def stable(run_id: str) -> bool:
        now = (outstanding_in_state(pipeline, run_id), broker_counts(pipeline))
        same = seen.get("last") == now
        seen["last"] = now
        return same

    return stable
