"""The registry of unit kinds: the built-in ones in their order, what a kind declares, and
the errors a bad declaration or a bad GROUNDSWELL_KINDS_EXTRA gets."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from groundswell.shared.runs import kinds
from groundswell.shared.runs.finalize import unit_counts
from groundswell.shared.settings import Settings


def test_the_built_in_kinds_in_pipeline_order_with_their_queues() -> None:
    assert kinds.names() == ("read", "verify", "admit", "ledger")
    assert kinds.queues() == ("read", "verify", "admit", "ledger", "control")
    assert kinds.reading_kind() is kinds.get("read")
    rows = {k.name: k.rows for k in kinds.all_kinds()}
    assert rows == {"read": "none", "verify": "every", "admit": "every", "ledger": "failed"}
    assert [k.name for k in kinds.all_kinds() if k.waits_for_reading] == ["verify", "admit"]
    assert [k.name for k in kinds.all_kinds() if k.follow] == ["ledger"]


def test_the_summary_lists_the_kinds_counted_and_those_always_listed() -> None:
    assert list(unit_counts({})) == ["verify", "admit"]
    counted = {"units.ledger.computed": 2, "units.read.cached": 1, "units.verify.cached": 1}
    assert list(unit_counts(counted)) == ["read", "verify", "admit", "ledger"]


def test_a_kind_declared_twice_or_on_the_control_queue_is_refused() -> None:
    def execute(work):  # a module of its own: this test's
        raise AssertionError

    with kinds.restored():
        with pytest.raises(kinds.KindError, match="declared twice"):
            kinds.register(kinds.Kind(name="verify", queue="verify", execute=execute))
        with pytest.raises(kinds.KindError, match="control"):
            kinds.register(kinds.Kind(name="mine", queue="control", execute=execute))
        with pytest.raises(kinds.KindError, match="already a reading kind"):
            kinds.register(kinds.Kind(name="ocr", queue="ocr", execute=execute, reading=True))
        kinds.register(kinds.Kind(name="mine", queue="mine", execute=execute))
        assert kinds.names()[-1] == "mine" and "mine" in kinds.queues()
    assert "mine" not in kinds.names()


def test_an_unknown_kind_and_a_module_that_does_not_import_are_named() -> None:
    with pytest.raises(kinds.KindError, match=r"unknown unit kind 'nope'.*KINDS_EXTRA"):
        kinds.get("nope")
    with (
        kinds.restored(),
        pytest.raises(kinds.KindError, match=r"'no\.such\.module' cannot be imported"),
    ):
        kinds.load(["no.such.module"])


def test_the_setting_takes_module_paths_comma_separated() -> None:
    assert Settings(kinds_extra="a.b, c").kinds_extra == ["a.b", "c"]
    assert Settings().kinds_extra == []
    with pytest.raises(ValidationError, match="not a module name"):
        Settings(kinds_extra="a/b.py")
    assert kinds.extra_modules("a.b, c d") == ["a.b", "c", "d"]


# What the run counts itself, whatever its kinds: planning's counters, and every error.
MACHINERY_COUNTERS = ("documents.format.", "ignored.", "planning.", "errors")


def declared(key: str, names: tuple[str, ...]) -> bool:
    return any(key == n or (n.endswith(".") and key.startswith(n)) for n in names)


def test_every_counter_of_a_run_is_one_its_kinds_declare(tmp_path) -> None:
    from groundswell.shared.cli.runs import SAMPLE_CORPUS
    from groundswell.shared.runs.inprocess import run_in_process

    out = str(tmp_path / "out")
    summary = run_in_process(str(SAMPLE_CORPUS), "default", out, Settings(storage_url=out))
    names = (*MACHINERY_COUNTERS, *(n for k in kinds.all_kinds() for n in k.counters))
    assert summary["counts"]["claims"] and summary["counts"]["candidates"]
    assert [key for key in summary["counts"] if not declared(key, names)] == []
    # The kinds' own declarations do not overlap: a counter is one kind's.
    for kind in kinds.all_kinds():
        others = [n for k in kinds.all_kinds() if k is not kind for n in k.counters]
        assert not [n for n in kind.counters if declared(n, tuple(others))], kind.name
