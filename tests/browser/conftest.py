"""A real headless Chromium for the browser tests: Debian's ``chromium`` driven by Playwright
for Python (no browser download). A machine without it fails these tests, naming the fix;
``.ci/run`` installs it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("GROUNDSWELL_TEST_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts"


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """A launched headless Chromium (Playwright's ``Browser``)."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the browser tests need Debian's chromium "
            "(apt-get install chromium; .ci/run installs it) or GROUNDSWELL_TEST_CHROMIUM",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the browser tests need Playwright for Python: pip install -e '.[dev]'",
            pytrace=False,
        )
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
