"""``/docs`` in a real headless Chromium on a real uvicorn (issue 25, low): Swagger UI's
assets are served by the API itself under a policy of ``/docs``'s own, so the page renders
the API's operations with nothing fetched from elsewhere and nothing refused by the CSP."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import running_api

pytestmark = pytest.mark.integration


def test_docs_render_the_operations(chromium, artifacts, service_settings, tmp_path):
    with running_api(service_settings, tmp_path) as url:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on(
            "console",
            lambda message: problems.append(message.text) if message.type == "error" else None,
        )
        elsewhere: list[str] = []
        page.on(
            "request",
            lambda request: None if request.url.startswith(url) else elsewhere.append(request.url),
        )
        page.goto(f"{url}/docs")
        page.wait_for_selector(".opblock", timeout=30_000)
        operations = page.locator(".opblock-summary-path").all_inner_texts()
        page.screenshot(path=artifacts / "api-docs.png", full_page=False)
        context.close()
        # Only the named assets are served; the page's policy runs this site's scripts only.
        assert httpx.get(f"{url}/docs/static/index.html").status_code == 404
        policy = httpx.get(f"{url}/docs").headers["content-security-policy"]
        assert "script-src 'self';" in policy and "unsafe-eval" not in policy
    assert "/v1/runs" in operations and len(operations) >= 20, operations
    assert not problems, problems
    assert not elsewhere, elsewhere
