"""OpenLineage from real workers through the file transport: START and COMPLETE of a run,
FAIL of one that cannot start, each checked against the OpenLineage JSON schema (spec 2-0-2)
and its facets' schemas (tests/integration/openlineage_spec/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.lineage.service import run_uuid
from groundswell.shared.runs.models import RunSpec
from tests.conftest import wait_until

pytestmark = pytest.mark.integration
SPEC = Path(__file__).parent / "openlineage_spec"


def validators() -> tuple[Draft202012Validator, dict[str, Draft202012Validator]]:
    """The event's validator, and one a facet file (by its name, whatever its version)."""
    schemas = {p.stem: json.loads(p.read_text()) for p in SPEC.glob("*.json")}
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas.values()
    )
    core = Draft202012Validator(schemas.pop("OpenLineage"), registry=registry)
    facets = {
        name: Draft202012Validator({"$ref": f"{s['$id']}#/$defs/{name}"}, registry=registry)
        for name, s in schemas.items()
    }
    return core, facets


def facets_of(event: dict):
    yield from event["run"].get("facets", {}).values()
    yield from event["job"].get("facets", {}).values()
    for ds in event.get("inputs", []) + event.get("outputs", []):
        for group in ("facets", "inputFacets", "outputFacets"):
            yield from ds.get(group, {}).values()


def check(event: dict) -> None:
    core, facets = validators()
    errors = [e.message for e in core.iter_errors(event)]
    for facet in facets_of(event):
        name = facet["_schemaURL"].rsplit("/", 1)[-1]
        if name in facets:
            errors += [f"{name}: {e.message}" for e in facets[name].iter_errors(facet)]
    assert not errors, errors


def events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_runs_emit_openlineage_events_that_match_the_schema(pipeline, tmp_path):
    log = tmp_path / "lineage" / "events.jsonl"
    log.parent.mkdir()
    url = f"file://{log}"
    pipeline.service.settings = pipeline.settings.model_copy(update={"openlineage_url": url})
    pipeline.start_worker("w1", openlineage_url=url)
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    summary = pipeline.wait(record.id)
    got = wait_until(lambda: len(events(log)) >= 2 and events(log), 60, "START and COMPLETE")
    start, complete = sorted(got, key=lambda e: e["eventType"] != "START")
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    for event in (start, complete):
        check(event)
        assert event["run"]["runId"] == run_uuid(record.id)
        assert event["job"]["name"] == f"groundswell:{record.corpus}"
        assert event["job"]["facets"]["groundswell_policy"]["ref"] == record.policy["ref"]
        assert event["inputs"][0]["namespace"] == "file"
        assert event["inputs"][0]["name"] == str(SAMPLE_CORPUS)
    metrics = complete["inputs"][0]["inputFacets"]["dataQualityMetrics"]
    assert metrics["rowCount"] == summary["documents"] and metrics["bytes"] == summary["bytes"]
    receipts, summary_out = complete["outputs"]
    assert receipts["name"].endswith("/receipts") and summary_out["name"].endswith("summary.json")
    (assertion,) = summary_out["facets"]["dataQualityAssertions"]["assertions"]
    assert assertion == {**assertion, "assertion": "failed_units == 0", "success": True}

    missing = tmp_path / "nowhere"
    failed, _ = pipeline.service.submit(RunSpec(corpus=str(missing)))
    pipeline.wait(failed.id)
    fail = wait_until(
        lambda: [e for e in events(log) if e["eventType"] == "FAIL"], 60, "the FAIL event"
    )[0]
    check(fail)
    assert fail["run"]["runId"] == run_uuid(failed.id)
    assert "does not exist" in fail["run"]["facets"]["errorMessage"]["message"]
