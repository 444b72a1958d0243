"""A long scan shared out on the read queue by real workers: an image-only PDF read with a
low split threshold by two workers makes the reading one process makes, byte for byte, and
both workers recognised pages of it (its pieces say which process did)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundswell.shared.read.ocr import engine_version
from groundswell.shared.receipts import content_sha256
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.runs.reading import Pieces, read_source, reader, reading_key
from groundswell.shared.settings import Settings, get_settings
from groundswell.shared.storage import open_store
from tests.conftest import wait_until
from tests.shared.read.test_ocr import image_pdf, render

pytestmark = [pytest.mark.integration, pytest.mark.corpus]

# Six text pages of real PDFs, scanned: small renders, recognised at a low resolution, so the
# test OCRs in seconds; shared out above two pages (ranges 1-2, 3-4, 5-6).
SCANNED = (
    ("NCT06159946_Prot_000.pdf", 1),
    ("NCT06159946_Prot_000.pdf", 2),
    ("20071229X02007.pdf", 1),
    ("20071229X02007.pdf", 2),
    ("NCT06153992_ICF_001.pdf", 1),
    ("NCT06153992_ICF_001.pdf", 2),
)
OCR = {"ocr_dpi": 150, "ocr_split_pages": 2}


@pytest.fixture
def ocr_env(monkeypatch):
    """This process reads with the workers' OCR settings (the one-process reading)."""
    for name, value in OCR.items():
        monkeypatch.setenv(f"GROUNDSWELL_{name.upper()}", str(value))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_two_workers_share_a_scan_and_join_the_one_process_reading(
    pipeline, ocr_env, shared_raw: Path, tmp_path: Path
):
    if engine_version(get_settings().ocr_command) is None:
        pytest.fail("Tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng")
    scan = image_pdf([render(shared_raw / name, n, 150) for name, n in SCANNED], 150)
    corpus = tmp_path / "corpus"
    (corpus / "documents").mkdir(parents=True)
    (corpus / "claims").mkdir()
    (corpus / "documents" / "scan.pdf").write_bytes(scan)
    (corpus / "claims" / "scan.jsonl").write_text('{"id": "c1", "claim": "Protocol"}\n')
    sha, name = content_sha256(scan), reader()

    # The one-process reading: every page recognised in turn, nothing shared out.
    alone = open_store(str(tmp_path / "alone"), Settings())
    expected = read_source(alone, scan, "documents/scan.pdf", sha, name)
    assert expected.pages == 6 and not expected.cause and expected.pages_without_text == []
    assert not list(alone.list_pages(Pieces(alone, sha, name).prefix))  # no piece of its own

    pipeline.values.update(OCR)
    workers = [pipeline.start_worker(w, queues="read,verify,control") for w in ("w1", "w2")]
    wait_until(lambda: all(w.children() for w in workers), what="both workers' pool processes")
    wait_until(lambda: pipeline.service.runs.worker_slots() >= 2, what="both workers announced")
    record, _ = pipeline.service.submit(RunSpec(corpus=str(corpus)))
    summary = pipeline.wait(record.id, timeout=180)
    assert summary["units"]["read"]["computed"] == 1, summary["units"]
    assert summary["units"]["verify"]["computed"] == 1
    assert summary["counts"].get("read.pages") == 6

    output = open_store(pipeline.settings.storage_url, pipeline.settings)
    key = reading_key(sha, name)
    assert output.get(key) == alone.get(key)  # byte for byte

    pieces = Pieces(output, sha, name)
    by_page = {}
    for page in output.list_pages(pieces.prefix):
        for info in page:
            body = json.loads(output.get(info.key))
            by_page[body["page"]] = body["by"]["pid"]
    assert sorted(by_page) == [1, 2, 3, 4, 5, 6]
    pools = [set(w.children()) for w in workers]
    per_worker = [sum(1 for pid in by_page.values() if pid in pool) for pool in pools]
    print(f"pages recognised per worker: {per_worker}; by page: {by_page}")
    assert sum(per_worker) == 6 and min(per_worker) >= 1, (per_worker, by_page, pools)
