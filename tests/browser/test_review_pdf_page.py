"""The review page of a task on a PDF, in a real headless Chromium: the cited page is shown as
an image (rendered by PDFium through the API, under the page's session and CSP) with the
value's box drawn over it, and the box sits over the word's ink in the rendered image where
the layout puts the word. A screenshot goes to ``.artifacts/``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from groundswell.shared.read import read_path
from groundswell.shared.settings import Settings, hash_api_key
from tests.conftest import running_api
from tests.shared.read.test_render import ink_box, pixels
from tests.shared.runs.mixed_corpus import write_mixed_corpus
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

RITA = "gs_rita_reviews_pdfs"
AUDIT_ALL = {
    "format": "review-policy@1",
    "audit": {"rate": "1", "seed": "pdf"},
    "agree": 1,
    "leads": [],
    "rejected": False,
}


@pytest.fixture
def pdf_site(service_settings, shared_raw: Path, tmp_path: Path):
    corpus = tmp_path / "mixed"
    texts = write_mixed_corpus(corpus, shared_raw)
    text = texts["protocol"]
    at = len(text[: text.index("recruit 20 subjects") + len("recruit ")].encode())
    value = {"start": at, "end": at + 2, "text": "20"}
    candidates = [{"id": "n1", "field": "figure_1", "value": "20", "evidence": value}]
    (corpus / "candidates" / "protocol.json").write_text(json.dumps(candidates))
    values = {
        **service_settings,
        "review_policy": AUDIT_ALL,
        "api_key_hashes": f"rita:runs+review:{hash_api_key(RITA)}",
        "session_secret": "browser-pdf-secret",
    }
    _, record = drive_run(Settings(**values), corpus=str(corpus))
    layout = read_path(corpus / "documents" / "protocol.pdf").layout
    word = next(w for w in layout["words"] if w[0] <= at < w[1])
    with running_api({**values, "review_policy": json.dumps(AUDIT_ALL)}, tmp_path) as url:
        yield url, record.id, word


def test_the_cited_pdf_page_with_the_values_box(chromium, artifacts, pdf_site):
    url, run_id, word = pdf_site
    api = httpx.Client(base_url=url, headers={"X-API-Key": RITA}, timeout=60)
    page_of_tasks = api.get("/v1/review/tasks", params={"run": run_id, "document": "protocol"})
    assert page_of_tasks.status_code == 200, page_of_tasks.text
    row = next(r for r in page_of_tasks.json()["items"] if r["field"] == "figure_1")

    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on(
        "response",
        lambda r: (
            problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    page.goto(f"{url}/review/sign-in?next=/review/tasks/{row['task']}")
    page.fill("#key", RITA)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    figure = page.locator("figure.pageimg").first
    img = figure.locator("img")
    img.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => { const i = document.querySelector('figure.pageimg img');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    natural = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    shown = img.bounding_box()
    rect = figure.locator("rect.bx-value").first.bounding_box()
    assert shown and rect
    # The drawn box, in the image's own pixels.
    sx, sy = natural[0] / shown["width"], natural[1] / shown["height"]
    box = (
        int((rect["x"] - shown["x"]) * sx),
        int((rect["y"] - shown["y"]) * sy),
        int((rect["x"] + rect["width"] - shown["x"]) * sx) + 1,
        int((rect["y"] + rect["height"] - shown["y"]) * sy) + 1,
    )
    # The same image, as the API serves it under the session: the word's ink is in the box.
    number = int(figure.get_attribute("data-page"))
    png = context.request.get(f"{url}/review/tasks/{row['task']}/pages/{number}.png")
    assert png.status == 200 and png.headers["content-type"] == "image/png"
    rendered = pixels(png.body())
    assert (rendered[0], rendered[1]) == tuple(natural)
    ink = ink_box(rendered, box)
    assert ink is not None, box
    assert ink[2] - ink[0] >= (box[2] - box[0]) / 2, (ink, box)
    # Compared with the layout's word box: the drawn box is the word's, to a few pixels (the
    # drawing pads it by a point on each side).
    assert number == word[2]
    scale = natural[0] / float(figure.locator("svg").get_attribute("viewBox").split()[2])
    expected = [round(v * scale) for v in word[3:]]
    assert all(abs(a - b) <= 4 for a, b in zip(box, expected, strict=True)), (box, expected)
    # Zoom widens the frame.
    before = img.bounding_box()["width"]
    page.locator("body").focus()
    page.keyboard.press("+")
    assert img.bounding_box()["width"] > before
    page.keyboard.press("-")
    figure.screenshot(path=artifacts / "review-pdf-page.png")
    page.screenshot(path=artifacts / "review-pdf-task.png", full_page=True)
    # The run report's document view shows the same page, the value boxed, under its CSP.
    page.goto(f"{url}/v1/runs/{run_id}/report?document=protocol")
    shown = page.locator(f'figure.pageimg[data-page="{number}"]')
    shown.scroll_into_view_if_needed()
    page.wait_for_function(
        f"() => {{ const i = document.querySelector('figure.pageimg[data-page=\"{number}\"] img');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    assert shown.locator("rect.bx-value").count() >= 1
    page.screenshot(path=artifacts / "run-report-pdf-page.png", full_page=True)
    assert not problems, problems
    context.close()


def test_a_range_correction_typed_on_the_page(chromium, artifacts, service_settings, tmp_path):
    """The outlook field takes a range: the reviewer types its ends and the document's words,
    and the answer stored is groundgate's answer@1 with that correction."""
    from tests.api.test_review_qualified import FIELD, ranged_corpus

    values = {
        **service_settings,
        "api_key_hashes": f"rita:runs+review:{hash_api_key(RITA)}",
        "session_secret": "browser-range-secret",
    }
    _, record = drive_run(Settings(**values), corpus=str(ranged_corpus(tmp_path)))
    with running_api(values, tmp_path) as url:
        api = httpx.Client(base_url=url, headers={"X-API-Key": RITA}, timeout=60)
        rows = api.get("/v1/review/tasks", params={"run": record.id, "field": FIELD}).json()
        task = rows["items"][0]["task"]
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{url}/review/sign-in?next=/review/tasks/{task}")
        page.fill("#key", RITA)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.locator("body").focus()
        page.keyboard.press("c")
        page.keyboard.type("6")
        page.select_option("#correct-qualifier", "range")
        page.fill("#correct-to", "7")
        page.fill("#correct-quote", "6%–7%")
        page.screenshot(path=artifacts / "review-range-correction.png", full_page=True)
        with page.expect_navigation(timeout=15_000):
            page.focus("#correct-value")
            page.keyboard.press("Enter")
        context.close()
        stored = api.get(f"/v1/review/tasks/{task}").json()["answers"]
    assert [a["verdict"] for a in stored] == ["correct"]
    candidate = stored[0]["candidate"]
    assert candidate["value"] in (6, "6") and candidate["proposer"] == "person:rita"
    assert candidate["evidence"] == {"source": "document", "role": "value", "text": "6%–7%"}
