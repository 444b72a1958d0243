"""The gate file and the result of checking a run against it.

A gate file (YAML or JSON)::

    gate: 1
    checks:
      - metric: grounding_rate          # rates.claims_accepted
        warn: {min: 0.95}
        fail: {min: 0.90, max_drop: 0.02}
        against: corpus_previous        # the baseline of max_drop (or policy_previous)
      - metric: escape_rate             # labelled wrong values admitted; only where labels exist
        fail: {max: 0.01}
      - metric: review_share
        field: net_revenue              # that field's candidates only
        warn: {max: 0.30}
      - metric: failed_units
        fail: {max: 0}
      - metric: grounding_rate
        producer: "*"                   # each producer the summary names (or one producer key)
        fail: {min: 0.85}

A check passes, warns or fails: fail when any bound of ``fail`` is crossed, else warn when
any of ``warn`` is, else pass. A check whose value does not exist (no labels, no claims,
no baseline) is ``skipped`` and says why; it moves no verdict. A check with ``producer`` reads
that producer's part of the summary (``producers``; its key, as ``GET /v1/runs/{id}/producers``
lists it), ``"*"`` one check for each producer there; its baseline is the same producer's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

GATE_FORMAT = 1
Level = Literal["pass", "warn", "fail"]
Status = Literal["pass", "warn", "fail", "skipped"]
Against = Literal["corpus_previous", "policy_previous"]
# The exit code of each verdict (Soda Core's: 0 pass, 1 warn, 2 fail).
EXIT_OF = {"pass": 0, "warn": 1, "fail": 2}


class GateError(ValueError):
    """A gate file that cannot be used: the message names the file, line and field."""


class Bounds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min: float | None = None
    max: float | None = None
    max_drop: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _some(self) -> Bounds:
        if self.min is None and self.max is None and self.max_drop is None:
            raise ValueError("a level needs min, max or max_drop")
        return self


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    field: str | None = Field(default=None, min_length=1, max_length=200)
    producer: str | None = Field(default=None, min_length=1, max_length=200)
    warn: Bounds | None = None
    fail: Bounds | None = None
    against: Against = "corpus_previous"
    name: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _known(self) -> Check:
        from groundswell.shared.gates.service import FIELD_METRICS, METRICS, PRODUCER_METRICS

        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; known: {', '.join(METRICS)}")
        if self.field is not None and self.metric not in FIELD_METRICS:
            raise ValueError(
                f"metric {self.metric!r} has no per-field value; per field: "
                + ", ".join(FIELD_METRICS)
            )
        if self.producer is not None and self.metric not in PRODUCER_METRICS:
            raise ValueError(
                f"metric {self.metric!r} has no per-producer value; per producer: "
                + ", ".join(PRODUCER_METRICS)
            )
        if self.producer is not None and self.field is not None:
            raise ValueError("a check is per field or per producer, not both")
        if self.warn is None and self.fail is None:
            raise ValueError("a check needs warn or fail bounds")
        return self

    @property
    def label(self) -> str:
        if self.name:
            return self.name + (f"@{self.producer}" if self.producer else "")
        if self.producer:
            return f"{self.metric}@{self.producer}"
        return f"{self.metric}[{self.field}]" if self.field else self.metric


class GateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gate: Literal[1] = GATE_FORMAT
    checks: list[Check] = Field(min_length=1)

    @property
    def needs_baseline(self) -> set[str]:
        return {
            c.against
            for c in self.checks
            for b in (c.warn, c.fail)
            if b is not None and b.max_drop is not None
        }


class CheckResult(BaseModel):
    check: str
    metric: str
    field: str | None = None
    producer: str | None = None
    status: Status
    value: float | None
    bound: str | None = None  # the bound crossed (or the tightest one held)
    baseline: float | None = None
    baseline_run: str | None = None
    message: str


class GateResult(BaseModel):
    run_id: str | None
    status: Level
    exit_code: int
    checks: list[CheckResult]


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """The line of ``checks[i]`` in a YAML text (where its ``- `` item starts), if found."""
    if len(loc) < 2 or loc[0] != "checks" or not isinstance(loc[1], int):
        return None
    items = [
        n
        for n, line in enumerate(text.splitlines(), 1)
        if line.lstrip().startswith("- ") and line[: len(line) - len(line.lstrip())].strip() == ""
    ]
    return items[loc[1]] if loc[1] < len(items) else None


def parse_gate(text: str, where: str = "<gate>") -> GateSpec:
    """The gate in ``text`` (YAML or JSON); :class:`GateError` naming ``where:line: field``."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise GateError(f"{where}{line}: not YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise GateError(f"{where}:1: a gate file is a mapping with `gate: 1` and `checks`")
    try:
        return GateSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first.get("loc", ()))
        line = _line_of(text, loc)
        field = ".".join(str(p) for p in loc) or "gate"
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise GateError(f"{where}{f':{line}' if line else ''}: {field}: {message}") from None


def load_gate(path: str | Path) -> GateSpec:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GateError(f"{path}: cannot read the gate file: {exc}") from None
    return parse_gate(text, str(path))
