"""OpenLineage events without workers: the HTTP transport posts them where
GROUNDSWELL_OPENLINEAGE_URL says; the dataset names of S3 and folders; a gate's checks as
data-quality assertions."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from groundswell.shared.lineage.service import build_event, client, dataset
from groundswell.shared.runs.models import RunRecord
from groundswell.shared.settings import Settings
from tests.integration.test_lineage_pipeline import check

RECORD = RunRecord(
    id="20260101T000000Z-abc",
    corpus="s3://corpora/filings",
    output="s3://out/gs",
    policy={"ref": "default@2", "verify_fingerprint": "v", "admit_fingerprint": "a"},
    engines={},
    state="succeeded",
    created_at="2026-01-01T00:00:00+00:00",
)
SUMMARY = {"documents": 3, "bytes": 900, "failed_units": 1}
GATE = {
    "checks": [
        {
            "check": "grounding_rate",
            "status": "fail",
            "value": 0.5,
            "bound": "min 0.9",
            "message": "grounding_rate = 0.5: fail, crosses min 0.9",
        },
        {"check": "escape_rate", "status": "skipped", "value": None, "message": "skipped"},
    ]
}


def test_dataset_names():
    assert dataset("s3://corpora/filings") == ("s3://corpora", "filings")
    assert dataset("s3://out/gs", "runs", "r", "summary.json") == (
        "s3://out",
        "gs/runs/r/summary.json",
    )
    assert dataset("/data/c/", "receipts") == ("file", "/data/c/receipts")


def test_the_http_transport_posts_a_valid_event_with_the_gates_assertions():
    got: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(
                {
                    "path": self.path,
                    "body": json.loads(self.rfile.read(int(self.headers["Content-Length"]))),
                }
            )
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = Settings(openlineage_url=f"http://127.0.0.1:{server.server_address[1]}")
        event = build_event(settings, RECORD, "COMPLETE", SUMMARY, GATE)
        client(settings).emit(event)
    finally:
        server.shutdown()
        server.server_close()
    ((sent),) = got
    assert sent["path"] == "/api/v1/lineage"
    body = sent["body"]
    check(body)
    assert body["eventType"] == "COMPLETE" and body["inputs"][0]["namespace"] == "s3://corpora"
    assertions = body["outputs"][1]["facets"]["dataQualityAssertions"]["assertions"]
    assert [(a["assertion"], a["success"]) for a in assertions] == [
        ("failed_units == 0", False),
        ("grounding_rate: min 0.9", False),
    ]
    assert assertions[1]["severity"] == "error" and assertions[1]["actual"] == "0.5"
