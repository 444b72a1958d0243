"""Where a stream's notifications come from: moto's own S3 notifications to its SQS queue, read
by ``groundswell follow`` (a long-running process, stopped by Ctrl-C), and a signed webhook
on the API, with the corpus on moto and on SeaweedFS. Real Redis, real workers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from groundswell.api.routes.metrics import QueueCollector
from groundswell.shared.hooks.signing import SIGNATURE_HEADER, sign
from groundswell.shared.metrics import corpus_label
from groundswell.shared.settings import hash_api_key
from groundswell.shared.streams.models import stream_id
from groundswell.shared.streams.service import StreamService
from groundswell.workers.embedded import service_env, stop_process
from tests.conftest import API_KEY, Pipeline, running_api, s3_client, wait_until
from tests.integration import test_listed_reuse
from tests.integration.conftest import STORE_LANES
from tests.integration.test_streams import (
    FILES,
    Bucket,
    equal_to_in_process,
    ids,
    notification,
    stream_pipeline,
)

pytestmark = pytest.mark.integration

folder = test_listed_reuse.corpus_dir
SECRET = "whsec-stream-test"


@pytest.fixture
def pipe(service_settings, lane, tmp_path) -> Iterator[Pipeline]:
    """On the lane's object store (moto's server by default, which is SQS's endpoint too)."""
    yield from stream_pipeline(
        service_settings,
        lane.s3_endpoint,
        tmp_path,
        s3_endpoint_url=lane.s3_endpoint,
        sqs_endpoint_url=lane.s3_endpoint,
        stream_window_documents=4,
        stream_grace_seconds=3,
        stream_webhook_secret=SECRET,
    )


def test_follow_reads_the_bucket_s_notifications_from_sqs_and_stops_on_ctrl_c(
    pipe, folder, s3_endpoint, tmp_path
):
    bucket = Bucket(s3_endpoint, folder)
    queue = s3_client(s3_endpoint, "sqs")
    url = queue.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = queue.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]
    bucket.client.put_bucket_notification_configuration(
        Bucket=bucket.name,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn["QueueArn"], "Events": events}]
        },
    )
    corpus = f"s3://{bucket.name}/corpus"
    log = open(tmp_path / "follow.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groundswell",
            "follow",
            corpus,
            "--policy",
            "default",
            "--sqs",
            url,
        ],
        env=service_env(**pipe.values),
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        streams = StreamService(pipe.service)
        sid = stream_id(corpus, "default@1")
        wait_until(lambda: streams.get(sid), 30, "the stream")
        # The corpus lands: schema, then each document's files (moto sends each PUT's event).
        bucket.put("schema.json")
        for doc_id in ids(folder)[:6]:
            for pattern in FILES:
                bucket.put(pattern.format(doc_id))

        def windows_done(n: int, events: int):
            state = streams.status(sid)
            done = state["windows"] >= n and state["events"] >= events and not state["run_id"]
            return done and state["pending"] + state["ready"] == 0

        wait_until(lambda: windows_done(1, 24), 120, "the stream's windows")
        last = streams.windows(sid)[-1]
        equal_to_in_process(pipe.service.summary(last.run_id), corpus, pipe, tmp_path)
        # An overwrite and a delete, through moto's own notifications again.
        before = len(streams.windows(sid))
        doc_a, doc_b = ids(folder)[:2]
        bucket.put(f"claims/{doc_a}.jsonl", b'{"id": "c1", "claim": "not in it at all"}\n')
        for pattern in FILES:
            bucket.delete(pattern.format(doc_b))
        wait_until(lambda: windows_done(before + 1, 29), 120, "the window of the changes")
        last = streams.windows(sid)[-1]
        assert last.changed and last.documents == 2
        summary = pipe.service.summary(last.run_id)
        equal_to_in_process(summary, corpus, pipe, tmp_path)
        assert summary["documents"] == 5
        # Every message was taken and deleted.
        attributes = queue.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        assert attributes == {
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            code = proc.wait(30)
        finally:
            stop_process(proc)
            log.close()
    said = (tmp_path / "follow.log").read_text()
    assert code == 0, said
    assert "stopped: " in said and "windows done" in said.rsplit("stopped: ", 1)[1]


def signed(body: bytes, secret: str = SECRET, at: int | None = None) -> dict[str, str]:
    return {SIGNATURE_HEADER: sign(secret, body, at), "Content-Type": "application/json"}


@pytest.mark.parametrize("lane", STORE_LANES, indirect=True)
def test_signed_webhook_feeds_a_stream_and_its_lag_is_a_metric(pipe, folder, lane, tmp_path):
    bucket = Bucket(lane.s3_endpoint, folder)
    corpus = f"s3://{bucket.name}/corpus"
    values = {
        **pipe.values,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": f"s3://{bucket.name}",
        "max_streams": 1,
    }
    streams = StreamService(pipe.service)
    with running_api(values, tmp_path) as api:
        client = httpx.Client(base_url=api, headers={"X-API-Key": API_KEY}, timeout=60)
        made = client.post("/v1/streams", json={"corpus": corpus, "policy": "default"})
        assert made.status_code == 201, made.text
        sid = made.json()["id"]
        assert made.headers["Location"] == f"/v1/streams/{sid}"
        again = client.post("/v1/streams", json={"corpus": corpus, "policy": "default@1"})
        assert again.status_code == 200 and again.json()["id"] == sid
        refused = client.post("/v1/streams", json={"corpus": "s3://elsewhere/corpus"})
        assert refused.status_code == 403
        another = client.post("/v1/streams", json={"corpus": corpus, "policy": "strict"})
        assert another.status_code == 409 and "GROUNDSWELL_MAX_STREAMS" in another.text

        bucket.put("schema.json")
        doc_id = ids(folder)[0]
        body = notification(*(bucket.put(p.format(doc_id)) for p in FILES))
        hook = httpx.Client(base_url=api, timeout=60)  # a store that pushes: no API key
        assert hook.post("/v1/events/s3", content=body).status_code == 401
        forged = hook.post("/v1/events/s3", content=body, headers=signed(body, "guess"))
        assert forged.status_code == 401
        stale = hook.post(
            "/v1/events/s3", content=body, headers=signed(body, at=int(time.time()) - 3600)
        )
        assert stale.status_code == 401
        assert streams.status(sid)["events"] == 0  # nothing refused was applied
        taken = hook.post("/v1/events/s3", content=body, headers=signed(body))
        assert taken.status_code == 202, taken.text
        assert taken.json()["applied"] == 4
        bad = json.dumps({"Records": [{"eventName": "ObjectCreated:Put"}]}).encode()
        answer = hook.post("/v1/events/s3", content=bad, headers=signed(bad)).json()
        assert answer["errors"] == [
            {"file": "webhook", "line": 1, "field": "s3", "message": "Field required"}
        ]

        # The event waits unchecked: the lag grows until its window's run is done.
        time.sleep(1.1)
        lag = gauge(pipe, corpus)
        assert lag >= 1.0

        # The beat's streams task, run by the worker, closes the window and finishes it.
        def beat_until_checked() -> bool:
            pipe.app.send_task("groundswell.streams", queue="control")
            time.sleep(1)
            return streams.status(sid)["windows"] == 1

        wait_until(beat_until_checked, 90, "the beat's streams task to run the window")
        assert gauge(pipe, corpus) == 0.0
        shown = client.get(f"/v1/streams/{sid}").json()
        (window,) = shown["windows"]
        assert shown["status"]["windows"] == 1 and window["state"] == "succeeded"
        equal_to_in_process(pipe.service.summary(window["run_id"]), corpus, pipe, tmp_path)


def gauge(pipe: Pipeline, corpus: str) -> float:
    collector = QueueCollector(lambda: pipe.service, lambda: pipe.app)
    families = {f.name: f for f in collector.collect()}
    (sample,) = families["groundswell_stream_lag_seconds"].samples
    assert sample.labels == {"corpus": corpus_label(corpus), "policy": "default", "version": "1"}
    return sample.value
