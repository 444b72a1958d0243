"""The OpenLineage events of a run.

- the **job** is the corpus's groundswell run (namespace ``GROUNDSWELL_OPENLINEAGE_NAMESPACE``,
  name ``groundswell:<corpus>``), with the policy as a job facet (``groundswell_policy``: its
  ref and fingerprints) and a job-type facet (BATCH);
- the **run** id is a UUID made from the groundswell run id (the same for START and its end);
- the **input** is the corpus (``s3://bucket`` + prefix, or ``file`` + folder), with the
  documents and bytes read as data-quality metrics at the end;
- the **outputs** are the receipts and the run's summary; the summary carries the data-quality
  assertions: the run's units and, with a gate configured, each of its checks.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    JobFacet,
    data_quality_assertions_dataset,
    data_quality_metrics_input_dataset,
    documentation_job,
    error_message_run,
    job_type_job,
)

from groundswell.shared import __version__

if TYPE_CHECKING:
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.settings import Settings

PRODUCER = f"https://pypi.org/project/groundswell/{__version__}/"
RUN_UUID_NAMESPACE = uuid.UUID("6f1d4a7c-3b0e-5a8e-9c1d-2e7f0b9a4c11")
STATES = {"START": RunState.START, "COMPLETE": RunState.COMPLETE, "FAIL": RunState.FAIL}


@attr.define
class GroundswellPolicyJobFacet(JobFacet):
    """The policy version a run ran under (docs/lineage.md)."""

    ref: str
    verifyFingerprint: str | None = None
    admitFingerprint: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return "https://groundswell.invalid/spec/lineage/1/GroundswellPolicyJobFacet.json"


def run_uuid(run_id: str) -> str:
    return str(uuid.uuid5(RUN_UUID_NAMESPACE, run_id))


def dataset(url: str, *parts: str) -> tuple[str, str]:
    """OpenLineage's (namespace, name) of a store location: ``s3://bucket`` and the key, or
    ``file`` and the absolute path."""
    import os

    path = "/".join(p.strip("/") for p in parts if p)
    if url.startswith("s3://"):
        bucket, _, prefix = url[5:].partition("/")
        name = "/".join(p for p in (prefix.strip("/"), path) if p)
        return f"s3://{bucket}", name or "/"
    root = os.path.abspath(url.removeprefix("file://"))
    return "file", os.path.join(root, path) if path else root


def _assertions(summary: dict[str, Any] | None, gate: Any) -> list[Any]:
    Assertion = data_quality_assertions_dataset.Assertion
    out = []
    if summary is not None:
        failed = int(summary.get("failed_units") or 0)
        out.append(
            Assertion(
                assertion="failed_units == 0",
                success=failed == 0,
                actual=str(failed),
                expected="0",
                name="no_failed_units",
            )
        )
    for check in (gate or {}).get("checks", ()):
        if check.get("status") == "skipped":
            continue
        out.append(
            Assertion(
                assertion=f"{check['check']}: {check.get('bound') or ''}".strip(),
                success=check["status"] != "fail",
                actual=None if check.get("value") is None else str(check["value"]),
                severity="error"
                if check["status"] == "fail"
                else ("warn" if check["status"] == "warn" else None),
                name=check["check"],
                description=check.get("message"),
            )
        )
    return out


def build_event(
    settings: Settings,
    record: RunRecord,
    state: str,
    summary: dict[str, Any] | None = None,
    gate: dict[str, Any] | None = None,
    when: str | None = None,
) -> RunEvent:
    """The OpenLineage event of ``record`` entering ``state`` (START, COMPLETE, FAIL)."""
    policy = record.policy
    job_facets: dict[str, Any] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="GROUNDSWELL", jobType="RUN"
        ),
        "documentation": documentation_job.DocumentationJobFacet(
            description="groundswell: quotations verified against their sources and "
            "extracted facts admitted, reviewed or rejected"
        ),
        "groundswell_policy": GroundswellPolicyJobFacet(
            ref=str(policy.get("ref")),
            verifyFingerprint=policy.get("verify_fingerprint"),
            admitFingerprint=policy.get("admit_fingerprint"),
        ),
    }
    run_facets: dict[str, Any] = {}
    if state == "FAIL":
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=record.error or f"run {record.id} {record.state}", programmingLanguage="python"
        )
    namespace, name = dataset(record.corpus)
    input_facets: dict[str, Any] = {}
    if summary is not None:
        input_facets["dataQualityMetrics"] = (
            data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet(
                columnMetrics={},
                rowCount=int(summary.get("documents") or 0),
                bytes=int(summary.get("bytes") or 0),
            )
        )
    inputs = [InputDataset(namespace=namespace, name=name, inputFacets=input_facets)]
    out_ns, receipts = dataset(record.output, "receipts")
    _, summary_name = dataset(record.output, "runs", record.id, "summary.json")
    summary_facets: dict[str, Any] = {}
    assertions = _assertions(summary, gate) if state != "START" else []
    if assertions:
        summary_facets["dataQualityAssertions"] = (
            data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(assertions=assertions)
        )
    outputs = [
        OutputDataset(namespace=out_ns, name=receipts),
        OutputDataset(namespace=out_ns, name=summary_name, facets=summary_facets),
    ]
    from groundswell.shared.runs.models import iso, utcnow

    return RunEvent(
        eventType=STATES[state],
        eventTime=when or iso(utcnow()),
        run=Run(runId=run_uuid(record.id), facets=run_facets),
        job=Job(
            namespace=settings.openlineage_namespace,
            name=f"groundswell:{record.corpus}",
            facets=job_facets,
        ),
        inputs=inputs,
        outputs=outputs,
        producer=PRODUCER,
    )


def client(settings: Settings) -> Any:
    """An OpenLineage client on the configured transport (HTTP, or a file)."""
    from openlineage.client import OpenLineageClient

    url = settings.openlineage_url or ""
    if url.startswith("file://"):
        from openlineage.client.transport.file import FileConfig, FileTransport

        transport: Any = FileTransport(FileConfig(log_file_path=url[7:], append=True))
    else:
        from openlineage.client.transport.http import HttpConfig, HttpTransport

        transport = HttpTransport(HttpConfig(url=url, timeout=10.0))
    return OpenLineageClient(transport=transport)


def emit(service: RunService, run_id: str, state: str) -> RunEvent:
    """Build and emit a run's event: START when it was submitted, COMPLETE or FAIL once it
    ended (with its summary, and the gate's checks when a gate is configured)."""
    record = service.get(run_id)
    summary = gate = None
    if state != "START":
        summary = service.summary(run_id)
        if service.settings.gate_file is not None and summary is not None:
            from groundswell.shared.gates.models import GateError, load_gate
            from groundswell.shared.gates.service import gate_of_run
            from groundswell.shared.results.models import RunNotReady

            try:
                gate = gate_of_run(
                    service, run_id, load_gate(service.settings.gate_file)
                ).model_dump()
            except (GateError, RunNotReady):
                gate = None
    event = build_event(service.settings, record, state, summary, gate)
    client(service.settings).emit(event)
    return event
