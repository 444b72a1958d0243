"""The review page's task view without services: the source is shown in bounded windows around
the cited spans with their neighbours marked, and nothing from a document, a task or an answer
is rendered as HTML; every admission code has words."""

from __future__ import annotations

from groundswell.api.routes.review_page import CONTEXT_CHARS, MAX_WINDOWS, _windows
from groundswell.shared.admit.engine import FLAG_ORDER, INFO_ORDER
from groundswell.shared.admit.guard_codes import GUARD_CODES
from groundswell.shared.report.render import template
from groundswell.shared.review.explain import ADMISSION_CODES, explain_code

EVIL = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def _text(window: list[dict]) -> str:
    return "".join(piece["text"] for piece in window)


def test_windows_are_bounded_and_mark_the_spans():
    text = "a" * 5000 + "VALUE" + "b" * 30 + "NEAR" + "c" * 5000 + "FAR" + "d" * 100
    at = text.index("VALUE")
    near, far = text.index("NEAR"), text.index("FAR")
    windows = _windows(
        text, [(at, at + 5, "cited"), (near, near + 4, "near"), (far, far + 3, "near")]
    )
    assert len(windows) == 2  # VALUE and NEAR share one window; FAR has its own
    first = windows[0]
    assert [p["text"] for p in first if p["css"]] == ["VALUE", "NEAR"]
    assert [p["css"] for p in first if p["css"]] == ["cited", "near"]
    assert first[0]["text"] == "…" and _text(first).endswith("…")
    assert len(_text(first)) <= 2 * CONTEXT_CHARS + 5 + 30 + 4 + 2
    assert _text(windows[1]).endswith("d" * 100)  # the end of the text: no ellipsis
    many = [(i * 2000, i * 2000 + 1, "near") for i in range(20)]
    assert len(_windows("x" * 40_000, many)) == MAX_WINDOWS
    assert _windows("short", [(0, 99, "cited")]) == []  # out of range: not shown


def test_nothing_from_a_document_is_html():
    task = {
        "slot": {"field": "net_sales_usd", "key": EVIL, "decisions": [0]},
        "mode": "review",
        "item": "number",
        "template": "number@1",
        "question": EVIL,
        "choices": [{"decision": 0, "value": EVIL, "unit": EVIL, "shown": EVIL}],
        "codes": ["QUALIFIED_VALUE"],
    }
    answer = {
        "reviewer": "rita",
        "verdict": "correct",
        "decision": None,
        "candidate": {"value": EVIL},
        "time": "2026-12-01T00:00:00Z",
    }
    page = _task_page(task, answer)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'id="disputed"' in page and "page 3" in page
    assert page.count("<script") == 1  # the page's own script, nothing else


def _task_page(task: dict, answer: dict, **changes) -> str:
    """The task page rendered from ``task`` and one ``answer`` (``changes`` replace parts)."""
    given = dict(
        reviewer="rita",
        csrf="token",
        key="sha256:" + "0" * 64,
        task=task,
        origin={"run": "r1", "doc_id": EVIL, "receipt": "receipts/admit/x.json"},
        run="r1",
        answers=[answer],
        latest={"rita": answer},
        state="disputed",
        codes=[("QUALIFIED_VALUE", explain_code("QUALIFIED_VALUE"))],
        source={
            "windows": [[{"text": EVIL, "css": None}, {"text": EVIL, "css": "cited"}]],
            "pages": [{"decision": 0, "pages": [3], "regions": []}],
            "problem": None,
            "template": {"id": "c1", "value": EVIL, "unit": "USD"},
        },
        queue_url="/review?run=r1",
        step_url="/review/step?run=r1",
        state_filter="",
        receipt_url="/v1/runs/r1/documents/d/receipts",
    )
    given.update(changes)
    return template("review_task.html").render(**given)


def test_the_task_page_says_what_the_field_means():
    """The schema's description, type, unit, bounds, comparator and keys are on the page."""
    from groundswell.shared.admit.packet import parse_schema
    from groundswell.shared.review.explain import field_meaning

    schema = parse_schema(
        {
            "fields": {
                "report_year": {
                    "type": "integer",
                    "minimum": "1990",
                    "maximum": "2100",
                    "description": "The year the document reports on.",
                },
                "dose_mg": {"unit": "mg", "comparator": "range", "keys": ["adult", "child"]},
            }
        }
    )
    fields = schema.digest_object["fields"]
    year = field_meaning(fields, "report_year")
    assert year["bounds"] == "from 1990 to 2100" and year["type"] == "integer"
    dose = field_meaning(fields, "dose_mg")
    assert dose["description"] is None and dose["keys"] == ["adult", "child"]
    assert field_meaning(fields, "absent") is None
    task = {
        "slot": {"field": "dose_mg", "key": "adult", "decisions": [0]},
        "mode": "review",
        "item": "number",
        "template": "number@1",
        "question": "Is dose mg for adult 5?",
        "choices": [{"decision": 0, "value": "5", "unit": "mg", "shown": "5 mg"}],
        "codes": [],
    }
    answer = {
        "reviewer": "rita",
        "verdict": "unsure",
        "decision": None,
        "candidate": None,
        "time": "t",
    }
    page = _task_page(
        task,
        answer,
        source={"windows": [], "pages": [], "problem": None, "template": None, "field": dose},
    )
    assert 'id="field-meaning"' in page and "The schema does not describe this field." in page
    assert "unit <b>mg</b>" in page and "a range (" in page and "<code>child</code>" in page
    page = _task_page(
        task,
        answer,
        source={"windows": [], "pages": [], "problem": None, "template": None, "field": year},
    )
    assert "The year the document reports on." in page and "from 1990 to 2100" in page


def test_candidates_have_one_numbering_with_their_values():
    """The keys' numbering (1, 2, ...) and the values name a candidate everywhere on the page:
    the list, the answers and the PDF pages, never the receipt's decision index."""
    task = {
        "slot": {"field": "net_sales_usd", "key": None, "decisions": [2, 5]},
        "mode": "review",
        "item": "number",
        "template": "number@1",
        "question": "Which amount is net sales usd?",
        "choices": [
            {"decision": 2, "value": "1200", "unit": "USD", "shown": "1,200 USD"},
            {"decision": 5, "value": "1300", "unit": "USD", "shown": "1,300 USD"},
        ],
        "codes": [],
    }
    answer = {
        "reviewer": "rita",
        "verdict": "choose",
        "decision": 5,
        "candidate": None,
        "time": "t",
    }
    source = {
        "windows": [],
        "pages": [{"decision": 5, "pages": [3], "regions": []}],
        "problem": None,
        "template": None,
    }
    page = _task_page(task, answer, source=source)
    answers = page[page.index('id="answers"') :].split("</table>")[0]
    assert "<kbd>2</kbd> <code>1300</code> USD" in answers and "decision" not in answers
    pages = page[page.index('id="pages"') :].split("</p>")[0]
    assert "<kbd>2</kbd> <code>1300</code> USD" in pages and "decision" not in pages
    listed = page[page.index('id="choices"') :].split("</ol>")[0]
    assert "decision 2" not in listed and "key <kbd>1</kbd>" in listed


def test_every_code_has_words():
    for code in (*FLAG_ORDER, *INFO_ORDER, *GUARD_CODES, "REQUIRED_FIELD_MISSING"):
        assert explain_code(code) != "no description of this code", code
    assert set(ADMISSION_CODES).isdisjoint(GUARD_CODES)


class _Tasks:
    """A run's task list of ``n`` rows, and answers to some of them."""

    def __init__(self, n: int, answered: set[int]) -> None:
        self.list = [
            {"task": f"sha256:{i:064x}", "doc_id": f"d{i:04d}", "field": "f", "codes": []}
            for i in range(n)
        ]
        self.answered_rows = answered
        self.listed_all = 0

    def task(self, key: str) -> dict:
        return {"origin": {"doc_id": self.list[int(key[7:], 16)]["doc_id"]}}

    def row_of(self, manifest, doc_id: str, task: str) -> int:
        return int(task[7:], 16)

    def rows(self, manifest, start: int = 0):
        yield from enumerate(self.list[start:], start)

    def answers(self, key: str) -> list[dict]:
        if int(key[7:], 16) in self.answered_rows:
            return [{"reviewer": "rita", "verdict": "unsure"}]
        return []

    def answered(self) -> set[str]:
        self.listed_all += 1
        return {self.list[i]["task"] for i in self.answered_rows}


def test_a_step_to_the_next_open_task_lists_its_answers_not_every_answer(monkeypatch):
    """After an answer the page steps to the next unanswered task: when it is near, only its
    own answers are listed, not every answer of the deployment (which grows with the runs);
    a far one is still found, and each direction skips answered tasks."""
    from types import SimpleNamespace

    from groundswell.api.routes import review_page

    tasks = _Tasks(200, answered={1, 2, 3} | set(range(10, 150)))
    monkeypatch.setattr(review_page, "run_review", lambda s, r, key: SimpleNamespace(store=tasks))
    monkeypatch.setattr(review_page, "run_manifest", lambda review: {})

    def step(at: int, to: str) -> int | None:
        task = tasks.list[at]["task"]
        found = review_page._neighbour(None, "r", {}, "unanswered", task, to, None)
        return None if found is None else int(found[7:], 16)

    assert step(0, "next") == 4 and tasks.listed_all == 0
    assert step(4, "prev") == 0 and tasks.listed_all == 0
    assert step(9, "next") == 150  # past the lookups one at a time: one listing of all
    assert tasks.listed_all == 1
    assert step(150, "prev") == 9
    assert step(199, "next") is None


def test_page_images_number_each_candidates_box_as_its_key_and_box_its_role_items():
    """On a PDF's page the values of a task of several candidates are numbered as the keys
    that choose them (1, 2), each role item boxed in the other colour, unnumbered; a task
    of one candidate draws its box without a number."""
    from groundswell.api.routes.review_page import page_images

    layout = {
        "groundgate_layout": "0.1",
        "pages": [{"page": 1, "start": 0, "end": 30, "width": 600, "height": 800}],
        "words": [
            [0, 4, 1, 10, 20, 50, 32],
            [5, 9, 1, 60, 20, 100, 32],
            [10, 15, 1, 10, 40, 60, 52],
        ],
    }
    decisions = [
        {"parts": []},
        {"parts": [{"role": "unit", "start": 10, "end": 15}]},
        {"parts": []},
    ]
    task = {
        "choices": [
            {"decision": 2, "value": "1200", "evidence": {"start": 0, "end": 4}},
            {"decision": 1, "value": "1300", "evidence": {"start": 5, "end": 9}},
        ]
    }
    (image,) = page_images(layout, task, decisions, "/review/tasks/t/pages/")
    assert image["url"] == "/review/tasks/t/pages/1.png"
    assert [(b["css"], b["label"], b["x"]) for b in image["boxes"]] == [
        ("value", "1", 9),
        ("value", "2", 59),
        ("role", "", 9),
    ]
    assert "unit of 2: 1300" in image["boxes"][2]["title"]
    one = {"choices": task["choices"][:1]}
    assert [b["label"] for b in page_images(layout, one, decisions, "u/")[0]["boxes"]] == [""]
