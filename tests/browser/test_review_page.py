"""The review page in a real headless Chromium, on a real run: celery workers over a real
Redis write the sample corpus's receipts to moto's S3 server, and a real uvicorn serves the
API and the page. A reviewer signs in with a named key, opens the run report and the queue,
filters it, answers three tasks with the keyboard only; the stored answers (reviewer: the
key's name) and the run's measures follow, and a second reviewer's other answer shows the
task disputed. Screenshots of each page go to ``.artifacts/``."""

from __future__ import annotations

import collections
import time

import httpx
import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import hash_api_key
from tests.conftest import running_api

pytestmark = pytest.mark.integration

RITA, SAM, OPS = "gs_rita_runs_and_reviews", "gs_sam_reviews", "gs_ops_runs_only"


@pytest.fixture
def site(pipeline, tmp_path):
    """(API URL, run id) of a finished run of the sample corpus on real workers."""
    pipeline.start_worker("w1", concurrency=2)
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS), policy="default"))
    pipeline.wait(record.id, timeout=120)
    assert pipeline.service.get(record.id).state == "succeeded"
    keys = [
        f"rita:runs+review:{hash_api_key(RITA)}",
        f"sam:review:{hash_api_key(SAM)}",
        f"ops:runs:{hash_api_key(OPS)}",
    ]
    values = {
        **pipeline.values,
        "api_key_hashes": ",".join(keys),
        "session_secret": "browser-test-secret",
    }
    with running_api(values, tmp_path) as url:
        yield url, record.id


def _api(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60)


def _tasks(api: httpx.Client, run_id: str, **params) -> list[dict]:
    page = api.get("/v1/review/tasks", params={"run": run_id, "limit": 200, **params})
    assert page.status_code == 200, page.text
    return page.json()["items"]


def test_review_in_the_browser(chromium, artifacts, site):
    started = time.monotonic()
    url, run_id = site
    rita = _api(url, RITA)
    tasks = _tasks(rita, run_id)
    # The code the most open review tasks share: the queue the reviewer filters to.
    counts = collections.Counter(
        c for t in tasks if t["mode"] == "review" and t["task"] for c in t["codes"]
    )
    code, n = counts.most_common(1)[0]
    assert n >= 3, counts
    before = rita.get(f"/v1/runs/{run_id}/review/measures").json()["load"]
    assert before["answered"] == 0 and before["tasks"] == len(tasks)

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))

    # Without a session the page sends the browser to sign in, and back after.
    page.goto(f"{url}/review?run={run_id}")
    assert page.url.startswith(f"{url}/review/sign-in?next=")
    page.screenshot(path=artifacts / "review-sign-in.png", full_page=True)
    page.fill("#key", RITA)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{url}/review?run={run_id}"
    cookie = next(c for c in context.cookies() if c["name"] == "gs_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and RITA not in cookie["value"]

    # The run report, signed in by the same session.
    report = page.goto(f"{url}/v1/runs/{run_id}/report")
    assert report.status == 200 and "halvorsen-10k-2024" in page.content()
    page.screenshot(path=artifacts / "review-run-report.png")
    # Its table of codes links to the review queue of each code.
    with page.expect_navigation():
        page.locator(f'a[href="/review?run={run_id}&code={code}"]').first.click()
    linked = page.locator("#queue tr[data-href]").count()
    assert linked == sum(code in t["codes"] for t in tasks)

    # The queue, filtered by code with the keyboard.
    page.goto(f"{url}/review?run={run_id}")
    assert page.locator("#queue tr[data-href]").count() == min(len(tasks), 50)
    page.screenshot(path=artifacts / "review-queue.png", full_page=True)
    page.fill("input[name=code]", code)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    rows = page.locator("#queue tr[data-href]")
    assert rows.count() == sum(code in t["codes"] for t in tasks)
    # Each row shows its candidate values, and the filter's progress beside the run's.
    assert rows.locator("td.values").count() == rows.count()
    assert page.locator("#progress-filter").inner_text().startswith("this filter: 0 answered")
    page.screenshot(path=artifacts / "review-queue-filtered.png", full_page=True)

    # Open the first task and answer three with keys only: each answer moves to the next
    # open task of the filtered queue.
    page.locator("body").focus()
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.screenshot(path=artifacts / "review-task.png", full_page=True)
    page.keyboard.press("?")
    answered: list[tuple[str, str]] = []
    for verdict in ("confirm", "unsure", "correct"):
        task = page.locator("#task")
        key = task.get_attribute("data-key")
        assert code in page.locator("#codes").inner_text()
        # What the field means, and how far the run and the filter have come.
        assert page.locator("#field-meaning").is_visible()
        done = int(page.locator("#progress-run .answered").inner_text())
        in_filter = int(page.locator("#progress-filter .answered").inner_text())
        assert done == len(answered) and in_filter == len(answered)
        if answered:  # the answer just saved is confirmed, with its undo (unsure undoes it)
            assert page.locator("#saved").is_visible()
            assert page.locator("#undo").is_visible() == (answered[-1][1] != "unsure")
        assert page.locator(".source mark.cited").count() >= 1 or verdict != "confirm"
        press = "u"
        if verdict == "confirm":
            choices = int(task.get_attribute("data-choices"))
            press, verdict = ("a", "confirm") if choices == 1 else ("1", "choose")
        if verdict == "correct":  # c opens the value input; typing it and Enter saves it
            page.keyboard.press("c")
            page.keyboard.type("7")
            press = "Enter"
        moved = lambda u, k=key: "/review/tasks/" in u and k not in u.split("?")[0]  # noqa: E731
        try:
            with page.expect_navigation(url=moved, timeout=15_000):
                page.keyboard.press(press)
        except Exception:
            raise AssertionError(page.locator("#status").inner_text()) from None
        answered.append((key, verdict))
    assert int(page.locator("#progress-run .answered").inner_text()) == 3
    page.screenshot(path=artifacts / "review-after-answers.png", full_page=True)
    assert not problems, problems

    # The stored answers: by the key's name, one per task, in the order given.
    for key, verdict in answered:
        shown = rita.get(f"/v1/review/tasks/{key}").json()
        assert [(a["reviewer"], a["verdict"]) for a in shown["answers"]] == [("rita", verdict)]
        assert shown["answers"][0]["keys"] >= 1
    corrected = rita.get(f"/v1/review/tasks/{answered[2][0]}").json()["answers"][0]["candidate"]
    assert corrected["proposer"] == "person:rita" and str(corrected["value"]) == "7"
    after = rita.get(f"/v1/runs/{run_id}/review/measures").json()["load"]
    assert after["answered"] == before["answered"] + 3
    assert after["unanswered"] == before["unanswered"] - 3 and after["reviewers"] == 1

    # The run report shows each answered decision's review state beside its task's link.
    page.goto(f"{url}/v1/runs/{run_id}/report")
    states = page.locator(".review-state").all_inner_texts()
    assert states.count("answered") >= 1 and "unanswered" in states, states
    page.screenshot(path=artifacts / "review-run-report-states.png", full_page=True)

    # Another reviewer disagrees on the first: the page shows the task disputed.
    first = answered[0][0]
    sam = _api(url, SAM).post(f"/v1/review/tasks/{first}/answers", json={"verdict": "unsure"})
    assert sam.status_code == 201
    other = _api(url, SAM).post(
        f"/v1/review/tasks/{first}/answers", json={"verdict": "not_in_document"}
    )
    assert other.status_code == 201 and other.json()["state"] == "disputed"
    page.goto(f"{url}/review/tasks/{first}")
    assert page.locator("#disputed").is_visible()
    assert page.locator("#state").inner_text() == "disputed"
    page.screenshot(path=artifacts / "review-disputed.png", full_page=True)

    # The session's cookie without its CSRF token is refused.
    forged = context.request.post(
        f"{url}/v1/review/tasks/{first}/answers", data={"verdict": "unsure"}
    )
    assert forged.status == 403 and "CSRF" in forged.json()["detail"]
    context.close()

    # A key that may only run things cannot sign in to review.
    other_context = chromium.new_context()
    page = other_context.new_page()
    page.goto(f"{url}/review/sign-in")
    page.fill("#key", OPS)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "may not review" in page.locator("#error").inner_text()
    assert not [c for c in other_context.cookies() if c["name"] == "gs_session"]
    page.screenshot(path=artifacts / "review-sign-in-refused.png", full_page=True)
    assert page.goto(f"{url}/review").url.startswith(f"{url}/review/sign-in")
    other_context.close()
    print(f"browser part: {time.monotonic() - started:.1f} s")
