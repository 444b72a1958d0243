"""The deliveries of a finished run, and one attempt at one delivery.

``plan_deliveries`` (the ``hooks`` task, sent once a run ends) finds the hooks that want the
run's events, writes one delivery record a (hook, event) create-once, and returns the
pending ones to send. ``attempt`` (the ``deliver`` task) sends one, under a short Redis lock
so two copies of the task never post at once; a delivery that is no longer pending is left
alone, so a redelivered or duplicated task sends nothing again. A failed attempt (a network
error, a 5xx, 408 or 429) is tried again with exponential backoff up to
``hook_max_attempts``; any other answer ends it ``failed``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr, ValidationError

from groundswell.shared import metrics
from groundswell.shared.hooks.destinations import HookRefused, check_destination
from groundswell.shared.hooks.models import Delivery, Hook, HookIn, delivery_id
from groundswell.shared.hooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from groundswell.shared.later import Later
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.settings import Settings

log = logging.getLogger("groundswell.hooks")
HOOKS_PREFIX = "hooks/"
RETRIED_STATUSES = {408, 429}


class HookError(ValueError):
    """A configured hook that cannot be used (GROUNDSWELL_HOOKS): names the entry and field."""


def deliveries_prefix(run_id: str) -> str:
    return f"runs/{run_id}/hooks/"


def delivery_key(run_id: str, delivery: str) -> str:
    return f"{deliveries_prefix(run_id)}{delivery}.json"


def global_hooks(settings: Settings) -> list[Hook]:
    """The hooks of GROUNDSWELL_HOOKS; each without a secret signs with GROUNDSWELL_HOOK_SECRET."""
    out = []
    for n, entry in enumerate(settings.hooks):
        data = dict(entry)
        hook_id = str(
            data.pop("id", "") or hashlib.sha256(str(data.get("url")).encode()).hexdigest()[:16]
        )
        if data.get("secret") is None and settings.hook_secret is not None:
            data["secret"] = settings.hook_secret.get_secret_value()
        try:
            given = HookIn.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ()))
            raise HookError(f"GROUNDSWELL_HOOKS[{n}].{field}: {first.get('msg')}") from None
        out.append(Hook(**given.model_dump(), id=f"global-{hook_id}", owner=None))
    return out


class HookStore:
    """The API keys' hooks, one object each in the output store."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def add(self, hook: Hook) -> None:
        body = hook.model_dump(mode="json")
        body["secret"] = hook.secret.get_secret_value() if hook.secret else None
        self.store.put(f"{HOOKS_PREFIX}{hook.id}.json", json.dumps(body).encode())

    def get(self, hook_id: str) -> Hook | None:
        try:
            return Hook.model_validate_json(self.store.get(f"{HOOKS_PREFIX}{hook_id}.json"))
        except (KeyError, ValueError):
            return None

    def remove(self, hook_id: str) -> None:
        self.store.delete(f"{HOOKS_PREFIX}{hook_id}.json")

    def all(self) -> list[Hook]:

        out = []
        for page in self.store.list_pages(HOOKS_PREFIX):
            for info in page:
                try:
                    out.append(Hook.model_validate_json(self.store.get(info.key)))
                except KeyError:
                    continue
                except ValueError as exc:
                    metrics.bad_record("hooks", info.key, exc)  # one bad hook hides no other
        return out


def all_hooks(service: RunService) -> list[Hook]:
    return global_hooks(service.settings) + HookStore(service.store(service.output_url)).all()


def wants(service: RunService, hook: Hook, corpus: str) -> bool:
    """A global hook hears of every run; a key's hook, of the runs of the corpora it sees
    (nothing once the key is gone from the configuration)."""
    if hook.owner is None:
        return True
    key = next((k for k in service.settings.api_keys if k.name == hook.owner), None)
    return key is not None and key.sees(corpus)


def events_of(service: RunService, record: RunRecord) -> tuple[list[str], dict[str, Any] | None]:
    """The events a run that ended raises, and its gate's result (when a gate is set)."""
    if record.state == "failed":
        events = ["failed"]
    elif record.state in ("succeeded", "partially_failed"):
        events = ["finished"]
    else:
        return [], None
    gate = None
    if service.settings.gate_file is not None:
        from groundswell.shared.gates.models import GateError, load_gate
        from groundswell.shared.gates.service import gate_of_run
        from groundswell.shared.results.models import RunNotReady

        try:
            gate = gate_of_run(service, record.id, load_gate(service.settings.gate_file))
            if gate.status == "fail":
                events.append("gate_failed")
            gate_out: dict[str, Any] | None = gate.model_dump()
        except (GateError, RunNotReady) as exc:
            gate_out = {"status": "error", "error": str(exc)}
        return events, gate_out
    return events, gate


def payload(record: RunRecord, summary: dict[str, Any] | None, event: str, gate: Any) -> dict:
    """The JSON body of an event: the run, its rates and counts, the gate's result."""
    from groundswell.shared.summary import policy_rates

    summary = summary or {}
    rates = {k: v for k, v in policy_rates(summary).items() if k != "finished_at"}
    rates["rejected_rate"] = ((summary.get("rates") or {}).get("candidates") or {}).get("rejected")
    base = f"/v1/runs/{record.id}"
    return {
        "type": f"run.{event}",
        "run": {
            "id": record.id,
            "corpus": record.corpus,
            "policy": record.policy.get("ref"),
            "state": record.state,
            "created_at": record.created_at,
            "finished_at": record.finished_at,
            "error": record.error,
        },
        "rates": rates,
        "units": (summary.get("index") or {}).get("units"),
        "failed_units": summary.get("failed_units"),
        "gate": gate,
        "links": {"run": base, "summary": f"{base}/summary", "gate": f"{base}/gate"},
    }


def slack_text(body: dict) -> dict:
    """A Slack-compatible body (incoming webhooks read ``text``)."""
    run, rates, gate = body["run"], body["rates"], body.get("gate") or {}

    def pct(value: Any) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    parts = [
        f"groundswell run {run['id']} ({run['policy']}) {body['type'].removeprefix('run.')}: "
        f"{run['state']}",
        f"grounding {pct(rates.get('grounding_rate'))}",
        f"escapes {pct(rates.get('escape_rate'))}",
        f"review {pct(rates.get('review_rate'))}",
    ]
    if gate.get("status"):
        parts.append(f"gate {gate['status']}")
    return {"text": "; ".join(parts), "groundswell": body}


def plan_deliveries(service: RunService, run_id: str) -> list[str]:
    """Write the deliveries of an ended run (create-once); the ids of those still pending."""
    from groundswell.shared.runs.models import iso, utcnow

    record = service.get(run_id)
    events, gate = events_of(service, record)
    hooks = [h for h in all_hooks(service) if wants(service, h, record.corpus)] if events else []
    if not hooks:
        return []
    output = service.store(record.output)
    summary = service.summary(run_id)
    pending = []
    for hook in hooks:
        for event in events:
            if event not in hook.events:
                continue
            did = delivery_id(run_id, hook.id, event)
            body = {"delivery": did, **payload(record, summary, event, gate)}
            if hook.format == "slack":
                body = slack_text(body)
            delivery = Delivery(
                id=did,
                run_id=run_id,
                hook_id=hook.id,
                event=event,  # type: ignore[arg-type]
                url=hook.url,
                format=hook.format,
                created_at=iso(utcnow()),
                body=json.dumps(body, sort_keys=True, ensure_ascii=False),
            )
            key = delivery_key(run_id, did)
            output.put(key, delivery.model_dump_json().encode(), create_only=True)
            stored = Delivery.model_validate_json(output.get(key))
            if stored.status == "pending":
                pending.append(did)
    return pending


def deliveries(service: RunService, run_id: str) -> list[Delivery]:
    record = service.get(run_id)
    output = service.store(record.output)
    out = []
    for page in output.list_pages(deliveries_prefix(run_id)):
        for info in page:
            try:
                out.append(Delivery.model_validate_json(output.get(info.key)))
            except (KeyError, ValueError):
                continue
    return out


def backoff(settings: Settings, attempts: int) -> float:
    return min(
        settings.hook_backoff_seconds * 2 ** (attempts - 1), settings.hook_backoff_max_seconds
    )


def _secret(service: RunService, hook_id: str) -> SecretStr | None:
    if hook_id.startswith("global-"):
        hook = next((h for h in global_hooks(service.settings) if h.id == hook_id), None)
    else:
        hook = HookStore(service.store(service.output_url)).get(hook_id)
    return hook.secret if hook is not None else None


def attempt(service: RunService, run_id: str, did: str) -> Delivery:
    """One attempt at a pending delivery; :class:`Later` when it is to be tried again."""
    import httpx

    from groundswell.shared.runs.models import iso, utcnow

    settings = service.settings
    record = service.get(run_id)
    output = service.store(record.output)
    key = delivery_key(run_id, did)
    delivery = Delivery.model_validate_json(output.get(key))
    if delivery.status != "pending":
        return delivery  # sent (or given up) already: a duplicate task sends nothing
    lock = f"gs:hook:{did}:sending"
    redis = service.runs.r
    if redis is not None and not redis.set(
        lock, "1", nx=True, ex=int(settings.hook_timeout_seconds) + 30
    ):
        # Sent by another worker now, or by one killed while sending: try again when that
        # send is over or its lock has expired, not every backoff until then.
        left = redis.ttl(lock)
        wait = max(settings.hook_backoff_seconds, left if isinstance(left, int) else 0)
        raise Later(wait, f"delivery {did} is being sent")
    try:
        delivery = Delivery.model_validate_json(output.get(key))  # under the lock: the latest
        if delivery.status != "pending":
            return delivery
        body = delivery.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "groundswell-hooks",
            DELIVERY_HEADER: did,
            EVENT_HEADER: f"run.{delivery.event}",
        }
        secret = _secret(service, delivery.hook_id)
        if secret is not None:
            headers[SIGNATURE_HEADER] = sign(secret.get_secret_value(), body)
        status, error, refused = None, None, False
        try:
            if not delivery.hook_id.startswith("global-"):  # a key's hook: not inward
                check_destination(delivery.url, settings.hook_allowed_hosts)
            answer = httpx.post(
                delivery.url, content=body, headers=headers, timeout=settings.hook_timeout_seconds
            )
            status = answer.status_code
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except HookRefused as exc:
            error, refused = f"refused: {exc}"[:500], True
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        now = iso(utcnow())
        attempts = delivery.attempts + 1
        update: dict[str, Any] = {
            "attempts": attempts,
            "last_status": status,
            "last_error": error,
            "last_attempt_at": now,
        }
        retry = (
            error is not None
            and not refused
            and (status is None or status >= 500 or status in RETRIED_STATUSES)
        )
        if error is None:
            update.update(status="delivered", delivered_at=now)
        elif not retry or attempts >= settings.hook_max_attempts:
            update["status"] = "failed"
        delivery = delivery.model_copy(update=update)
        output.put(key, delivery.model_dump_json().encode())
        outcome = {"pending": "retried"}.get(delivery.status, delivery.status)
        metrics.HOOK_DELIVERIES.labels(delivery.event, outcome).inc()
    finally:
        if redis is not None:
            redis.delete(lock)
    if delivery.status == "pending":
        wait = backoff(settings, attempts)
        log.info("delivery %s of run %s: %s; again in %g s", did, run_id, error, wait)
        raise Later(wait, f"delivery {did}: {error}")
    if delivery.status == "failed":
        log.warning(
            "delivery %s of run %s failed after %d attempts: %s", did, run_id, attempts, error
        )
    return delivery
