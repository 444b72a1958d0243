"""The review page's task view of a document read from a PDF: the source window, and the page
and region of each cited span (a run driven in this process over a real Redis, with the
mixed corpus's PDF from ../shared/raw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundswell.api.routes.review_page import _source, page_png
from groundswell.shared.read.render import render_key
from groundswell.shared.receipts import content_sha256, open_receipt
from groundswell.shared.review.store import RunReview
from groundswell.shared.settings import Settings
from tests.shared.read.test_render import ink_box, pixels
from tests.shared.runs.mixed_corpus import write_mixed_corpus
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration


def test_a_task_of_a_pdf_shows_the_page_and_region_of_its_span(
    redis_server, shared_raw: Path, tmp_path: Path
):
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    corpus = tmp_path / "mixed"
    texts = write_mixed_corpus(corpus, shared_raw)
    text = texts["protocol"]  # "... e will recruit 20 subjects who are living with an SCI ..."
    at = len(text[: text.index("recruit 20 subjects") + len("recruit ")].encode())
    value = {"start": at, "end": at + 2, "text": "20"}
    candidates = [{"id": "n1", "field": "figure_1", "value": "20", "evidence": value}]
    (corpus / "candidates" / "protocol.json").write_text(json.dumps(candidates))
    audit_all = {  # every admitted value is audited: the PDF's admitted values get tasks
        "format": "review-policy@1",
        "audit": {"rate": "1", "seed": "pdf"},
        "agree": 1,
        "leads": [],
        "rejected": False,
    }
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        review_policy=audit_all,
        page_render_wait_seconds=0.2,
    )
    service, record = drive_run(settings, corpus=str(corpus))
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    pdf_rows = [r for r in rows if r["doc_id"] == "protocol"]
    assert pdf_rows, "the PDF's admitted value is audited"
    shown = 0
    for row in pdf_rows:
        stored = review.store.task(row["task"])
        unit = open_receipt(review.output.get(row["receipt"]), row["receipt"])
        source = _source(review, stored, unit)
        assert source["problem"] is None and source["windows"]
        cited = [p["text"] for w in source["windows"] for p in w if p["css"] == "cited"]
        for choice in stored["task"]["choices"]:
            ev = choice.get("evidence")
            if ev:
                assert text.encode()[ev["start"] : ev["end"]].decode() in cited
        for entry in source["pages"]:
            assert entry["pages"] and all(isinstance(p, int) and p >= 1 for p in entry["pages"])
            if entry["decision"] is not None:
                assert entry["regions"], entry  # the union of the span's word boxes
                for region in entry["regions"]:
                    assert int(region["page"]) in entry["pages"] and region["caption"]
                shown += 1
    assert shown >= 1

    # The cited page as an image, the value's box drawn over the word "20" as rendered.
    stored = review.store.task(pdf_rows[0]["task"])
    unit = open_receipt(review.output.get(pdf_rows[0]["receipt"]), pdf_rows[0]["receipt"])
    images = _source(review, stored, unit)["images"]
    boxes = [(im, b) for im in images for b in im["boxes"] if b["css"] == "value"]
    assert (
        boxes and images[0]["url"] == f"/review/tasks/{stored['key']}/pages/{images[0]['page']}.png"
    )
    image, box = boxes[0]
    png = page_png(service, record, "protocol", image["page"])
    assert png.media_type == "image/png"
    rendered = pixels(png.body)
    scale = settings.page_image_dpi / 72
    assert rendered[0] == round(image["width"] * scale)
    x0, y0 = int(box["x"] * scale), int(box["y"] * scale)
    x1, y1 = int((box["x"] + box["w"]) * scale) + 1, int((box["y"] + box["h"]) * scale) + 1
    ink = ink_box(rendered, (x0, y0, x1, y1))
    assert ink is not None  # the digits are drawn inside the box, across most of it
    assert ink[2] - ink[0] >= (x1 - x0) / 2, (ink, (x0, y0, x1, y1))
    # Cached create-once by the source's sha256, page and resolution.
    sha = content_sha256((corpus / "documents" / "protocol.pdf").read_bytes())
    key = render_key(sha, image["page"], settings.page_image_dpi)
    assert review.output.get(key) == png.body

    # Every render slot taken: a page not yet rendered is a 503 with Retry-After (no request
    # waits past the bound, none starts a render of its own); a stored one is still served.
    from fastapi import HTTPException

    from groundswell.shared.read.render import render_limit

    limit = render_limit(settings.page_render_concurrency, settings.page_render_wait_seconds)
    other = 2 if image["page"] == 1 else 1
    taken = [limit._turns.acquire(timeout=5) for _ in range(settings.page_render_concurrency)]
    assert all(taken)
    try:
        with pytest.raises(HTTPException) as busy:
            page_png(service, record, "protocol", other)
        assert busy.value.status_code == 503 and busy.value.headers["retry-after"]
        assert not review.output.exists(render_key(sha, other, settings.page_image_dpi))
        assert page_png(service, record, "protocol", image["page"]).body == png.body
    finally:
        for _ in taken:
            limit._turns.release()
    assert page_png(service, record, "protocol", other).media_type == "image/png"
