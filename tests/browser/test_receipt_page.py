"""The single-receipt review page (``groundswell report RECEIPT DOC SCHEMA CANDIDATES``) in a
real headless Chromium: candidates as cards beside the whole document, filtered by outcome
and switched to a dark mode without any script (the page's CSP allows none), each code
explained in words. A screenshot goes to ``.artifacts/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundswell.shared.admit import admit_packet
from tests.shared.test_report_review import _report, _vector, _write
from tests.shared.test_report_review_pdf import _value_item, write_pdf_receipt

pytestmark = pytest.mark.integration


def test_the_receipt_page_filters_its_cards_by_outcome(chromium, artifacts, tmp_path: Path):
    vector = _vector("19e-references")
    receipt = admit_packet(vector)
    args = _write(tmp_path, vector, receipt)
    out = tmp_path / "review.html"
    assert _report(*args, "-o", str(out)).exit_code == 0
    outcomes = [d["outcome"] for d in receipt["decisions"]]
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(out.as_uri())
    cards = page.locator("article.card")
    assert cards.count() == len(outcomes)
    # Two panes: the cards and, beside them, the whole document with its highlights.
    assert (
        page.locator(".cardpane").bounding_box()["x"] < page.locator(".docpane").bounding_box()["x"]
    )
    assert page.locator(".docpane mark").count() >= 1
    assert page.locator(".card dl.codes dd").count() >= 1  # codes in words
    for outcome in set(outcomes):
        page.click(f'label[for="show-{outcome}"]')
        shown = [c for c in cards.all() if c.is_visible()]
        assert len(shown) == outcomes.count(outcome)
        assert all(f"out-{outcome}" in c.get_attribute("class") for c in shown)
    page.click('label[for="show-all"]')
    assert len([c for c in cards.all() if c.is_visible()]) == len(outcomes)
    light = page.locator(".view").evaluate("e => getComputedStyle(e).backgroundColor")
    page.click('label[for="dark"]')
    dark = page.locator(".view").evaluate("e => getComputedStyle(e).backgroundColor")
    assert light != dark and dark == "rgb(21, 24, 30)"
    page.screenshot(path=artifacts / "receipt-page-dark.png", full_page=True)
    assert not problems, problems
    context.close()


@pytest.fixture
def pdf_receipt(shared_raw: Path, tmp_path: Path):
    return write_pdf_receipt(shared_raw, tmp_path)


def test_the_receipt_page_of_a_pdf_shows_its_page_with_each_value_boxed(
    chromium, artifacts, pdf_receipt, tmp_path: Path
):
    """With --pdf, the cited page is an image in the page itself (a data: URL the file's own
    CSP allows; nothing is fetched), beside the text, and each value's drawn box sits where
    the layout puts its word, whatever size the image is shown at (zoom included)."""
    args, pdf, layout, candidates = pdf_receipt
    out = tmp_path / "review-pdf.html"
    assert _report(*args, "--pdf", str(pdf), "-o", str(out)).exit_code == 0
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on(
        "request",
        lambda r: None if r.url.startswith(("file:", "data:")) else problems.append(r.url),
    )
    page.goto(out.as_uri())
    figure = page.locator(".docpane figure.pageimg").first
    img = figure.locator("img")
    img.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => { const i = document.querySelector('figure.pageimg img');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    number = int(figure.get_attribute("data-page"))
    size = next(p for p in layout["pages"] if p["page"] == number)

    def placed() -> list[tuple[float, ...]]:
        """Each value box's place on the shown image, in the page's points."""
        shown = img.bounding_box()
        scale = size["width"] / shown["width"]
        out = []
        for rect in figure.locator("rect.bx-value").all():
            r = rect.bounding_box()
            out.append(
                tuple(
                    v * scale
                    for v in (
                        r["x"] - shown["x"],
                        r["y"] - shown["y"],
                        r["x"] + r["width"] - shown["x"],
                        r["y"] + r["height"] - shown["y"],
                    )
                )
            )
        return out

    def words() -> list[tuple[float, ...]]:
        found = []
        for candidate in candidates:
            at = _value_item(candidate)["start"]
            found.append(next(w for w in layout["words"] if w[0] <= at < w[1])[3:])
        return found

    def near(boxes, expected) -> bool:  # the drawn box pads the word by a point
        return all(
            abs(a - b) <= 2.5
            for box, word in zip(boxes, expected, strict=True)
            for a, b in zip(box, word, strict=True)
        )

    assert near(placed(), words()), (placed(), words())
    figure.screenshot(path=artifacts / "receipt-pdf-page.png")
    before = img.bounding_box()["width"]
    page.click('label[for="zoom"]')
    assert img.bounding_box()["width"] > before * 1.5
    assert near(placed(), words())
    # A card's page link goes to the image.
    assert page.locator(f'.card a[href="#page-image-{number}"]').count() == len(candidates)
    page.screenshot(path=artifacts / "receipt-pdf-zoomed.png", full_page=True)
    assert not problems, problems
    context.close()
