"""Run commands: run, demo, submit, status, summary, worker, beat, api, api-key.

Imports of Celery, prometheus_client and the service happen inside the commands: the
worker must set ``PROMETHEUS_MULTIPROC_DIR`` before prometheus_client is first imported.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shlex
import shutil
import signal
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.words import counted

SAMPLE_CORPUS = Path(__file__).resolve().parent.parent / "sample" / "corpus"


def _settings():
    from groundswell.shared.settings import get_settings

    get_settings.cache_clear()
    return get_settings()


def describe(exc: Exception) -> str:
    """A validation error as a sentence a user can act on (no pydantic help links)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error.get("loc", ()))
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def _require_broker(settings, command: str) -> None:
    """Services run against a configured broker and Redis, never a guessed one."""
    from groundswell.shared.settings import NotConfigured

    if not settings.broker_url:
        _fail(
            f"`groundswell {command}` needs GROUNDSWELL_BROKER_URL (redis://host:6379/0 or "
            "amqp://user:password@host:5672/vhost)",
            2,
        )
    try:
        _ = settings.state_redis_url
    except NotConfigured as exc:
        _fail(str(exc), 2)


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"groundswell: {message}", err=True)
    sys.exit(code)


# -- services ---------------------------------------------------------------------------


LOG_LEVELS = click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False)
# prefork is the default and the only pool that enforces the hard time limit and recycles
# processes; threads and solo run tasks in the worker's own process (gevent and eventlet are
# not installed: the tasks block on S3 and CPU).
POOLS = ("prefork", "threads", "solo")


def _autoscale(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    high, sep, low = value.partition(",")
    try:
        most, least = int(high), int(low) if sep else 0
    except ValueError:
        most = least = -1
    if most < 1 or least < 0 or least > most:
        raise click.BadParameter(f"{value!r}: give MAX,MIN pool processes, e.g. 8,2")
    return f"{most},{least}"


def worker_argv(
    queues: list[str],
    hostname: str,
    prefetch: int,
    loglevel: str,
    pool: str | None = None,
    concurrency: int | None = None,
    autoscale: str | None = None,
    max_tasks_per_child: int | None = None,
    max_memory_per_child: int | None = None,
) -> list[str]:
    """The ``celery worker`` arguments of ``groundswell worker``."""
    argv = [
        "worker",
        "-Q",
        ",".join(queues),
        "-n",
        hostname,
        "--prefetch-multiplier",
        str(prefetch),
        "--loglevel",
        loglevel.upper(),
        "--without-gossip",
        "--without-mingle",
    ]
    for option, value in (
        ("--pool", pool),
        ("--concurrency", concurrency),
        ("--autoscale", autoscale),
        ("--max-tasks-per-child", max_tasks_per_child),
        ("--max-memory-per-child", max_memory_per_child),
    ):
        if value:
            argv += [option, str(value)]
    return argv


@main.command()
@click.option(
    "--queues",
    "-Q",
    default=None,
    help="Queues to consume, comma separated. [default: every queue: each unit kind's "
    "(read, verify, admit, ledger and GROUNDSWELL_KINDS_EXTRA's) and control]",
)
@click.option("--concurrency", "-c", type=int, default=None, help="Pool processes (default: CPUs).")
@click.option(
    "--hostname",
    "-n",
    default=None,
    help="Node name, as Celery takes it (%h host, %n name, %d domain). [default: worker@%h]",
)
@click.option("--name", default=None, hidden=True, help="NAME@%h (the older spelling of -n).")
@click.option(
    "--pool", "-P", type=click.Choice(POOLS), default=None, help="Pool (default: prefork)."
)
@click.option(
    "--autoscale",
    metavar="MAX,MIN",
    callback=_autoscale,
    default=None,
    help="Grow the pool to MAX processes under load, shrink it to MIN when idle (prefork).",
)
@click.option("--metrics-port", type=int, default=None, help="Serve /metrics here (0: off).")
@click.option(
    "--max-tasks-per-child",
    type=click.IntRange(min=1),
    default=None,
    help="Replace a pool process after this many tasks (returns its memory).",
)
@click.option(
    "--max-memory-per-child",
    type=click.IntRange(min=1),
    default=None,
    help="Replace a pool process after a task leaves it above this resident memory (KiB).",
)
@click.option("--loglevel", "-l", type=LOG_LEVELS, default="INFO", show_default=True)
def worker(
    queues: str | None,
    concurrency: int | None,
    hostname: str | None,
    name: str | None,
    pool: str | None,
    autoscale: str | None,
    metrics_port: int | None,
    max_tasks_per_child: int | None,
    max_memory_per_child: int | None,
    loglevel: str,
) -> None:
    """A Celery worker on the given queues, with multiprocess metrics and task events.

    Takes Celery's usual worker options (-Q, -c, -n, -P, -l, --autoscale,
    --max-tasks-per-child, --max-memory-per-child); the prefetch follows the queues."""
    settings = _settings()
    _require_broker(settings, "worker")
    if autoscale and pool not in (None, "prefork"):
        _fail(f"--autoscale needs the prefork pool, not {pool}", 2)
    directory = settings.metrics_dir or tempfile.mkdtemp(prefix="groundswell-metrics-")
    os.makedirs(directory, exist_ok=True)
    for path in glob.glob(os.path.join(directory, "*.db")):
        os.unlink(path)  # a fresh start: files of a previous worker would be summed forever
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    port = settings.worker_metrics_port if metrics_port is None else metrics_port
    os.environ["GROUNDSWELL_WORKER_METRICS_PORT"] = str(port)
    # The kinds name the queues; loading them imports the metrics, so only once the
    # multiprocess directory is set (prometheus_client reads it when it is imported).
    from groundswell.shared.runs import kinds

    try:
        kinds.load(settings.kinds_extra)
    except kinds.KindError as exc:
        _fail(str(exc), 2)
    known = kinds.queues()
    wanted = [q.strip() for q in (queues or ",".join(known)).split(",") if q.strip()]
    unknown = set(wanted) - set(known)
    if unknown or not wanted:
        _fail(f"unknown queue(s) {', '.join(sorted(unknown)) or '(none)'}: use {', '.join(known)}")

    from groundswell.workers.app import app
    from groundswell.workers.broker import check_broker

    # Verification tasks are long: one reserved message per process. Admission is short.
    prefetch = settings.admit_prefetch if wanted == ["admit"] else 1
    errors, warnings = check_broker(settings, prefetch)
    for warning in warnings:
        click.echo(f"groundswell worker: warning: {warning}", err=True)
    if errors:
        _fail("; ".join(errors), 2)
    argv = worker_argv(
        wanted,
        hostname or f"{name or 'worker'}@%h",
        prefetch,
        loglevel,
        pool=pool,
        concurrency=concurrency,
        autoscale=autoscale,
        max_tasks_per_child=max_tasks_per_child,
        max_memory_per_child=max_memory_per_child,
    )
    app.worker_main(argv)


@main.command()
@click.option("--loglevel", "-l", type=LOG_LEVELS, default="INFO", show_default=True)
def beat(loglevel: str) -> None:
    """Celery beat with the Redis-backed schedule (reconcile, and the run schedules)."""
    _require_broker(_settings(), "beat")
    from groundswell.workers.app import app

    app.start(["beat", "--loglevel", loglevel.upper(), "--pidfile="])


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
def api(host: str, port: int) -> None:
    """The HTTP API (FastAPI on uvicorn)."""
    _require_broker(_settings(), "api")
    import uvicorn

    # Forwarded headers are applied by the app itself, from GROUNDSWELL_FORWARDED_ALLOW_IPS
    # only (uvicorn's own default would believe any process on 127.0.0.1).
    uvicorn.run(
        "groundswell.api.main:create_app",
        factory=True,
        host=host,
        port=port,
        log_level="info",
        proxy_headers=False,
    )


@main.group("api-key")
def api_key() -> None:
    """API keys: only their sha256 digests are stored (GROUNDSWELL_API_KEY_HASHES)."""


@api_key.command("new")
@click.option("--env", is_flag=True, help="Print shell exports of the key and its digest instead.")
@click.option("--name", help="The key's name: the reviewer's identity in review answers.")
@click.option(
    "--scopes",
    default="runs+review+admin",
    show_default=True,
    help="What the key may do, joined by '+': runs, review, record (claims into the ledger), "
    "admin (admin may do everything).",
)
@click.option(
    "--corpora",
    multiple=True,
    metavar="PREFIX",
    help="A folder or s3://bucket/prefix the key may submit and read (repeat for more; "
    "within GROUNDSWELL_ALLOWED_CORPORA). None: every corpus.",
)
def api_key_new(env: bool, name: str | None, scopes: str, corpora: tuple[str, ...]) -> None:
    """Make a new random key; print it once, with the entry to configure."""
    from groundswell.shared.settings import Settings, hash_api_key

    if name is None and (scopes != "runs+review+admin" or corpora):
        option = "--corpora" if corpora else "--scopes"
        raise click.UsageError(f"{option} needs --name: a key without a name has every scope")
    key = "gs_" + secrets.token_urlsafe(32)
    entry = hash_api_key(key) if name is None else f"{name}:{scopes}:{hash_api_key(key)}"
    if corpora:
        entry += ":" + "|".join(corpora)
    try:  # the settings' own checks, corpora against this environment's allowed corpora
        Settings(api_key_hashes=entry)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if env:  # eval "$(groundswell api-key new --env)": this shell is client and server
        # appended to the entries already exported (the shell expands it), not replacing them;
        # quoted: a corpora list holds "|"
        click.echo(f"export GROUNDSWELL_API_KEY={key}")
        click.echo(
            "export GROUNDSWELL_API_KEY_HASHES="
            '"${GROUNDSWELL_API_KEY_HASHES:+$GROUNDSWELL_API_KEY_HASHES,}"' + shlex.quote(entry)
        )
        return
    click.echo(f"key:    {key}")
    click.echo(f"entry:  {entry}")
    click.echo(
        "Add the entry to GROUNDSWELL_API_KEY_HASHES (comma separated); keep the key secret."
    )


@api_key.command("revoke-sessions")
@click.argument("name")
def api_key_revoke_sessions(name: str) -> None:
    """End every review-page session of the key NAME (its cookies, copies included, sign in
    nobody after this); the key itself keeps working."""
    from groundswell.shared.runs.state import redis_client
    from groundswell.shared.sessions import SessionStore

    settings = _settings()
    _require_broker(settings, "api-key revoke-sessions")
    key = next((k for k in settings.api_keys if k.name == name), None)
    if key is None:
        known = ", ".join(k.name for k in settings.api_keys) or "none"
        _fail(f"no key named {name!r} in GROUNDSWELL_API_KEY_HASHES (known: {known})", 2)
    assert key is not None
    ended = SessionStore(redis_client(settings.state_redis_url)).revoke_key(key.digest[7:])
    click.echo(f"{counted(ended, 'session')} of the key {name!r} revoked")


# -- runs on a private stack ------------------------------------------------------------


def _workers_answer(app, timeout: float = 1.0) -> bool:
    try:
        return bool(app.control.ping(timeout=timeout))
    except Exception:
        return False


def progress_line(state_name: str, progress) -> str:
    """What a waiting user sees; while planning (a large listing takes a while, and no unit
    has started), how far the listing got."""
    if progress.planning_done:
        return state_name
    listed = progress.counters.get("planning.listed", 0)
    return f"planning: {listed:,} objects listed, {progress.planned:,} units planned"


class WaitTimeout(Exception):
    """A run still going when ``--timeout`` ran out."""


def _wait(
    service, run_id: str, show_progress: bool, poll: float = 0.2, timeout: float | None = None
) -> None:
    """Poll a run until it ends; reconcile stalled work meanwhile (no beat needed).

    A Redis that stops answering is waited for ("reconnecting"), not fatal: the run goes
    on in the workers. Raises WaitTimeout after ``timeout`` seconds.
    """
    import redis
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress_bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
        disable=not show_progress,
        console=_stderr_console(),
    )
    from groundswell.shared.runs.waiting import describe

    deadline = None if timeout is None else time.monotonic() + timeout
    with progress_bar:
        task = progress_bar.add_task("planning", total=None)
        last_reconcile = time.monotonic()
        last_look, waiting_on = float("-inf"), None
        warned = False
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise WaitTimeout(run_id)
            try:
                record = service.get(run_id)
                state = service.progress(run_id)
                if record.terminal:
                    return
                if time.monotonic() - last_reconcile > service.settings.stall_seconds / 2:
                    service.reconcile()
                    last_reconcile = time.monotonic()
                if time.monotonic() - last_look >= 1:  # a queue nobody consumes: say so, once
                    last_look = time.monotonic()
                    waiting = service.waiting_for(run_id)
                    queue = waiting["queue"] if waiting else None
                    if waiting and queue != waiting_on:
                        click.echo(describe(waiting), err=True)
                    elif waiting_on and not waiting:
                        click.echo(f"a worker consumes queue {waiting_on!r} now", err=True)
                    waiting_on = queue
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                if not warned:
                    click.echo(f"Redis does not answer ({exc}): reconnecting...", err=True)
                    warned = True
                progress_bar.update(task, description="reconnecting to Redis")
                time.sleep(1)
                continue
            if warned:
                click.echo("Redis answers again", err=True)
                warned = False
            description = record.state
            if not state.planning_done:
                # Before units start, a large listing takes a while: say how far it got.
                listed = state.counters.get("planning.listed", 0)
                description = (
                    f"planning: {listed:,} objects listed, {state.planned:,} units planned"
                )
            progress_bar.update(
                task,
                description=description,
                completed=state.done,
                total=state.planned if state.planning_done else None,
            )
            time.sleep(poll)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def run_embedded(
    spec,
    workers: int,
    concurrency: int,
    show_progress: bool,
    log_dir: Path | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Start a private Redis and real workers, run the corpus, stop everything started.

    The workers' logs go to ``log_dir`` (a new temporary folder by default), which is named
    when the run does not succeed."""
    from groundswell.workers.embedded import (
        RedisServer,
        WorkerProcess,
        service_env,
        stop_workers,
    )

    settings = _settings()
    made_here = log_dir is None
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="groundswell-logs-"))
    with ExitStack() as stack:
        # registered first, so it runs last (after the workers stop): a log folder made here
        # is removed when the run succeeded, kept (and named) otherwise
        outcome: dict[str, Any] = {}
        if made_here:
            stack.callback(
                lambda: (
                    outcome.get("state") == "succeeded"
                    and shutil.rmtree(log_dir, ignore_errors=True)
                )
            )
        redis_server = RedisServer().start()
        stack.callback(redis_server.stop)
        os.environ["GROUNDSWELL_BROKER_URL"] = redis_server.url
        os.environ.pop("GROUNDSWELL_REDIS_URL", None)
        settings = _settings()
        env = service_env(
            broker_url=redis_server.url,
            storage_url=os.path.abspath(settings.storage_url)
            if "://" not in settings.storage_url
            else settings.storage_url,
        )
        env.pop("GROUNDSWELL_REDIS_URL", None)
        started: list[WorkerProcess] = []
        stack.callback(stop_workers, started)  # together: their shutdowns overlap
        for i in range(workers):
            started.append(
                WorkerProcess(
                    env,
                    concurrency=concurrency,
                    name=f"demo{i + 1}",
                    log_path=log_dir / f"worker-{i + 1}.log",
                ).start()
            )
        try:
            summary = _submit_and_wait(settings, spec, show_progress, timeout, private=True)
        except BaseException as exc:
            click.echo(f"worker logs: {log_dir}", err=True)
            if not isinstance(exc, Interrupted):
                raise
            # A second Ctrl-C must not leave workers or the private Redis behind.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            click.echo("interrupted: stopping the private stack (workers and Redis)...", err=True)
            interrupted = exc.run_id
        else:
            outcome["state"] = summary.get("state")
            if summary.get("state") != "succeeded":
                click.echo(f"worker logs: {log_dir}", err=True)
            return summary
    _fail(_left_in_store(settings, interrupted), EXIT_INTERRUPTED)
    return {}  # not reached: _fail exits


def _left_in_store(settings, run_id: str) -> str:
    """After Ctrl-C on a private stack, once it stopped: the run's state as the store has it
    (workers finish their current batch as they stop: the run may even have ended)."""
    from groundswell.shared.runs.layout import run_json
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.storage import open_store

    where = settings.storage_url
    record = RunRecord.model_validate_json(open_store(where, settings).get(run_json(run_id)))
    if record.terminal:
        return (
            f"interrupted: run {run_id} ended {record.state} as the private stack stopped; "
            f"`groundswell report {run_id}` shows it"
        )
    return (
        f"interrupted: run {run_id} is left {record.state} in the store {where}; the private "
        "stack (workers and Redis) is stopped. Run the corpus again to finish the work "
        f"(what it computed is reused); cancel it with `groundswell cancel {run_id}`"
    )


def _service(settings):
    from groundswell.shared import tracing
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import RunStore, redis_client
    from groundswell.workers.app import enqueue_with, make_app

    if tracing.enabled():  # a run submitted here is the root of its trace
        tracing.setup("groundswell-cli")
    app = make_app(settings)
    return RunService(
        settings, RunStore(redis_client(settings.state_redis_url)), enqueue_with(app)
    ), app


def _await_workers(service, timeout: float = 60) -> None:
    """Until the private workers announce every queue (else the run's first look would find
    no worker on its queues while they start)."""
    from groundswell.shared.runs.service import queues

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not set(queues()) <= (
        service.runs.consumed_queues() or set()
    ):
        time.sleep(0.1)


EXIT_INTERRUPTED = 130  # as a shell reports a command ended by SIGINT


class Interrupted(Exception):
    """Ctrl-C while a private-stack run was waited for (said once the stack stopped)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def _interrupted(service, run_id: str, private: bool) -> None:
    """Ctrl-C while waiting: say what becomes of the run, then exit 130 (on a private stack,
    once it stopped)."""
    if private:
        raise Interrupted(run_id)
    _fail(
        f"interrupted: run {run_id} stays {service.get(run_id).state} and goes on in the "
        f"workers of {service.settings.broker_url}; follow it with `groundswell status "
        f"{run_id}`, cancel it with `groundswell cancel {run_id}`",
        EXIT_INTERRUPTED,
    )


def _submit_and_wait(
    settings, spec, show_progress: bool, timeout: float | None = None, private: bool = False
) -> dict[str, Any]:
    service, _ = _service(settings)
    if private:
        try:
            _await_workers(service)
        except KeyboardInterrupt:
            _fail(
                "interrupted while the private workers started: no run was made", EXIT_INTERRUPTED
            )
    record, _ = service.submit(spec)
    what = (
        f" (only {spec.only}{', dry run' if spec.dry_run else ''})"
        if spec.only != "missing" or spec.dry_run
        else ""
    )
    click.echo(f"run {record.id}: {spec.corpus} under {record.policy['ref']}{what}", err=True)
    try:
        _wait(service, record.id, show_progress, timeout=timeout)
    except KeyboardInterrupt:
        _interrupted(service, record.id, private)
    except WaitTimeout:
        progress = service.progress(record.id)
        _fail(
            f"run {record.id} is still {service.get(record.id).state} after {timeout:g} s "
            f"({progress.done} of {progress.planned} units done); see `groundswell status "
            f"{record.id}`",
            EXIT_TIMEOUT,
        )
    summary = service.summary(record.id)
    if summary is None:
        _fail(f"run {record.id} ended {service.get(record.id).state} without a summary")
    ended = service.get(record.id)
    if ended.error:
        click.echo(f"run {record.id} {ended.state}: {ended.error}", err=True)
    return summary


# The exit codes of a run waited for (`run --wait`, a private-stack run, `reprocess`), for CI
# to gate on; 2 stays what it is everywhere: bad usage or input, nothing run.
EXIT_OF_STATE = {"succeeded": 0, "failed": 1, "cancelled": 1, "partially_failed": 3}
EXIT_TIMEOUT = 4


def _exit_for(summary: dict[str, Any], gate=None) -> None:
    """Exit with the code of the run's state, after its summary is printed; with ``gate``,
    with the gate's verdict (0 pass, 1 warn, 2 fail)."""
    state = str(summary.get("state"))
    if gate is not None:
        from groundswell.shared.cli.gates import gate_after_run

        verdict = gate_after_run(summary, gate, _settings())
        if state in ("failed", "cancelled") and verdict < 2:
            click.echo(f"groundswell: run {summary.get('run_id', '')} {state}: gate fail", err=True)
            verdict = 2
        sys.exit(verdict)
    code = EXIT_OF_STATE.get(state, 1)
    if code:
        click.echo(f"groundswell: run {summary.get('run_id', '')} {state}: exit {code}", err=True)
        sys.exit(code)


def _emit(summary: dict[str, Any], as_json: bool, where: str | None, quiet: bool = False) -> None:
    if quiet:
        click.echo(summary.get("run_id", ""))
    elif as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        from groundswell.shared.cli.render import print_summary

        print_summary(summary, where)


def _check_corpus(corpus: str) -> str:
    from groundswell.shared.runs.models import RunSpec

    try:
        spec = RunSpec(corpus=corpus)
    except ValueError as exc:
        _fail(describe(exc), 2)
    if "://" not in spec.corpus:
        path = Path(spec.corpus)
        if not path.is_dir():
            _fail(f"corpus folder {corpus} does not exist", 2)
        return str(path.resolve())
    return spec.corpus


def check_policy(settings, ref: str) -> None:
    """Refuse (exit 2, one line naming what exists) a policy the run's registry does not
    hold, before any stack starts: the service would refuse it only once it runs."""
    from groundswell.shared.policies import PolicyError, PolicyRegistry
    from groundswell.shared.storage import open_store

    try:
        registry = PolicyRegistry(open_store(settings.storage_url, settings))
        registry.ensure_builtins()
        registry.resolve(ref)
    except PolicyError as exc:
        _fail(str(exc), 2)


ledger_option = click.option(
    "--ledger",
    is_flag=True,
    help="Also load the admitted facts and grounded quotations into the claims ledger "
    "(GROUNDSWELL_LEDGER_URL; see docs/ledger.md).",
)
changed_option = click.option(
    "--changed",
    "changed_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Check only the documents the keys in FILE name (one a line: documents/, claims/, "
    "candidates/ or labels/ files, e.g. from S3 Inventory); the rest are reused from the "
    "corpus's latest run unread, and the run still covers the whole corpus.",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["langextract", "anthropic", "bedrock", "azure-di", "documentai", "mapped"]),
    default=None,
    help="Read the corpus's producer files in place in this format (default: what its "
    "corpus.yaml declares, else the native layout).",
)
verify_inputs_option = click.option(
    "--verify-inputs",
    is_flag=True,
    help="Read and hash every input, even those listed (size, ETag or mtime) as in the "
    "previous run, whose units are otherwise reused unread.",
)


@main.command()
@click.argument("corpus")
@click.option(
    "--policy", "-p", default=None, help="Policy NAME or NAME@VERSION (default: settings)."
)
@click.option(
    "--wait/--no-wait", default=False, help="Wait with a progress bar; print the summary."
)
@click.option("--embedded", is_flag=True, help="Start a private Redis and workers for this run.")
@click.option("--workers", default=2, show_default=True, help="Embedded worker processes.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Stop waiting after this many seconds (exit 4; the run goes on unless embedded).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only the run id (for scripts: RUN=$(...))."
)
@ledger_option
@verify_inputs_option
@changed_option
@format_option
@click.option(
    "--gate",
    "gate_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --wait: check the finished run against this gate file; exit 0 pass, 1 warn, "
    "2 fail (docs/gates.md).",
)
def run(
    corpus: str,
    policy: str | None,
    wait: bool,
    embedded: bool,
    workers: int,
    timeout: float | None,
    as_json: bool,
    quiet: bool,
    ledger: bool,
    verify_inputs: bool,
    changed_file: str | None,
    fmt: str | None,
    gate_file: str | None,
) -> None:
    """Run CORPUS (a folder or s3://bucket/prefix) through the pipeline.

    Uses the configured broker and its workers; with no broker configured (or with
    --embedded) it starts a private Redis and worker processes, waits, and stops them.

    \b
    Exit codes (with --wait, and on a private stack): 0 succeeded, 1 failed or cancelled,
    2 bad usage or input, 3 partially failed, 4 still going at --timeout.
    With --gate FILE, a finished run exits with the gate's verdict instead: 0 pass, 1 warn,
    2 fail (a run that failed or was cancelled fails the gate).
    """
    from groundswell.shared.runs.models import RunSpec

    settings = _settings()
    spec = RunSpec(
        corpus=_check_corpus(corpus),
        policy=policy or settings.default_policy,
        ledger=ledger,
        verify_inputs=verify_inputs,
        changed=_changed_lines(changed_file),
        changed_name=changed_file,
        format=fmt,
    )
    check_policy(settings, spec.policy)
    gate = None
    if gate_file is not None:
        from groundswell.shared.cli.gates import load_gate_or_exit

        if not (wait or embedded or not settings.broker_url):
            _fail("--gate checks the finished run: it needs --wait", 2)
        gate = load_gate_or_exit(gate_file, 2)  # a bad gate file: nothing runs
    run_spec(settings, spec, embedded, workers, wait, timeout, as_json, quiet, gate)


def _changed_lines(path: str | None) -> list[str] | None:
    """The lines of a --changed FILE (its lines naming no corpus file are the run's errors)."""
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        _fail(f"{path}: the list of changed keys cannot be read: {exc.strerror or exc}", 2)
        raise  # _fail exits


def run_spec(
    settings,
    spec,
    embedded: bool,
    workers: int,
    wait: bool,
    timeout,
    as_json: bool,
    quiet: bool = False,
    gate=None,
):
    """Run ``spec`` on the configured broker's workers, or on a private stack when no
    broker is configured (or --embedded); with ``gate``, exit with its verdict on the run."""
    if not embedded and not settings.broker_url:
        click.echo("no broker configured (GROUNDSWELL_BROKER_URL): a private stack", err=True)
        embedded = True
    if embedded:
        summary = run_embedded(spec, workers, 1, sys.stderr.isatty() and not quiet, timeout=timeout)
        _emit(summary, as_json, summary.get("output"), quiet)
        _exit_for(summary, gate)
        return
    service, app = _service(settings)
    if not _workers_answer(app):
        _fail(
            f"no workers answer on {settings.broker_url}: start `groundswell worker` there, "
            "or use --embedded for a private stack",
            2,
        )
    if not wait:
        record, _ = service.submit(spec)
        click.echo(record.id)
        return
    summary = _submit_and_wait(settings, spec, sys.stderr.isatty() and not quiet, timeout)
    _emit(summary, as_json, summary.get("output"), quiet)
    _exit_for(summary, gate)


@main.command()
@click.option("--workers", default=2, show_default=True, help="Worker processes to start.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demo(workers: int, as_json: bool) -> None:
    """Run the sample corpus on a private Redis with real workers; print the summary."""
    settings = _settings()
    output = settings.storage_url
    click.echo(
        f"groundswell demo: sample corpus ({SAMPLE_CORPUS}), {workers} workers, "
        f"receipts to {os.path.abspath(output) if '://' not in output else output}",
        err=True,
    )
    from groundswell.shared.runs.models import RunSpec

    spec = RunSpec(corpus=str(SAMPLE_CORPUS), policy=settings.default_policy)
    summary = run_embedded(spec, workers, 1, sys.stderr.isatty())
    _emit(summary, as_json, summary.get("output"))


# -- against the API --------------------------------------------------------------------


def _api_call(call):
    """Run ``call(client)`` with groundswell's own HTTP client; say plainly what failed."""
    import httpx

    from groundswell.client import APIError, Client

    settings = _settings()
    key = settings.api_key.get_secret_value() if settings.api_key else None
    try:
        with Client(settings.api_url, key) as client:
            return call(client)
    except APIError as exc:
        _fail(str(exc))
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the API at {settings.api_url}: {exc}")


def server_corpus(corpus: str) -> tuple[str, str]:
    """What the server is sent for a corpus typed here, and a note on what it will read."""
    if "://" in corpus and not corpus.startswith("file://"):
        return corpus, f"the server reads {corpus}"
    local = Path(corpus.removeprefix("file://")).expanduser()
    if local.is_dir():
        resolved = str(local.resolve())
        return resolved, f"the server reads {resolved} (a folder it must see at that path)"
    return corpus, (f"{corpus} is not a folder here: sent as is, the server reads it on its side")


@main.command()
@click.argument("corpus")
@click.option(
    "--policy",
    "-p",
    default=None,
    help="NAME, NAME@N or NAME@latest from the server's registry (default: default, its latest version).",
)
@click.option("--idempotency-key", default=None, help="The same key returns the same run.")
@ledger_option
@verify_inputs_option
@changed_option
@format_option
def submit(
    corpus: str,
    policy: str | None,
    idempotency_key: str | None,
    ledger: bool,
    verify_inputs: bool,
    changed_file: str | None,
    fmt: str | None,
) -> None:
    """Submit a run to the API; print its id.

    A local folder is sent as its absolute path (the server reads it there); an
    s3://bucket/prefix as it is. The API is GROUNDSWELL_API_URL (default
    http://127.0.0.1:8000), with the key GROUNDSWELL_API_KEY."""
    sent, note = server_corpus(corpus)
    click.echo(note, err=True)
    run = _api_call(
        lambda c: c.submit(
            sent,
            policy,
            idempotency_key=idempotency_key,
            ledger=ledger,
            verify_inputs=verify_inputs,
            changed=_changed_lines(changed_file),
            changed_name=changed_file,
            format=fmt,
        )
    )
    click.echo(run.id)


def api_configured(settings) -> bool:
    """``status`` and ``summary`` ask the API when one is configured (GROUNDSWELL_API_URL or
    GROUNDSWELL_API_KEY set); else they read the local store, as ``report`` and ``diff`` do."""
    return bool({"api_url", "api_key"} & settings.model_fields_set)


def _local_run(run_id: str):
    """The service over the local store (and Redis, when configured) and the run's record."""
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.runs.models import RunNotFound

    service, _ = _registry_service()
    try:
        return service, service.get(run_id)
    except (RunNotFound, ValueError):
        _fail(
            f"no run {run_id} in the store {service.settings.storage_url} (no API is "
            "configured: set GROUNDSWELL_API_URL to ask one)",
            2,
        )
        raise  # unreachable: _fail exits


def _local_status(run_id: str):
    """The run as the API would report it, read from the local store."""
    from groundswell.api.routes.runs import run_out
    from groundswell.client import Run

    service, record = _local_run(run_id)
    return Run.model_validate(run_out(service, record).model_dump(mode="json"))


def _waiting_for(run_id: str, state: str) -> None:
    click.echo(f"waiting for run {run_id} ({state}) to end; Ctrl-C stops waiting", err=True)


def _stopped_waiting(run_id: str) -> None:
    """Ctrl-C while a summary was waited for: the run is not touched by it."""
    _fail(
        f"interrupted: stopped waiting for run {run_id}; the run itself goes on "
        f"(`groundswell status {run_id}`, `groundswell cancel {run_id}`)",
        EXIT_INTERRUPTED,
    )


def _local_summary(run_id: str, wait: bool, timeout: float | None) -> dict[str, Any]:
    service, record = _local_run(run_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    if wait and not record.terminal:
        _waiting_for(run_id, record.state)
    while wait and not record.terminal:
        if deadline is not None and time.monotonic() > deadline:
            _fail(f"run {run_id} is still {record.state} after {timeout:g} s", EXIT_TIMEOUT)
        time.sleep(0.5)
        record = service.get(run_id)
    data = service.summary(run_id)
    if data is None:
        _fail(f"run {run_id} is {record.state}: its summary is written when it finishes", 2)
    assert data is not None
    return data


def units_line(progress: Any) -> str:
    """Done and planned units of every kind the run has, read units included (the run's
    planned/done counters hold only the index's verify and admit units)."""
    kinds = {k: u for k, u in progress.units.items() if u.planned or u.done}
    if not kinds:
        return f"{progress.done}/{progress.planned} units"
    done = sum(u.done for u in kinds.values())
    planned = sum(max(u.planned, u.done) for u in kinds.values())
    each = ", ".join(f"{k} {u.done}/{max(u.planned, u.done)}" for k, u in kinds.items())
    return f"{done}/{planned} units ({each})"


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
def status(run_id: str, as_json: bool) -> None:
    """A run's state and progress (from the API; without one configured, from the local
    store)."""
    if api_configured(_settings()):
        run = _api_call(lambda c: c.status(run_id))
    else:
        run = _local_status(run_id)
    if as_json:
        click.echo(run.model_dump_json(indent=2))
        return
    p = run.progress
    click.echo(
        f"{run.id}  {run.state}  {units_line(p)}"
        f"{'' if p.planning_done else ' (planning)'}  {p.failed} failed  policy {run.policy['ref']}"
        + (f"\n{run.error}" if run.error else "")
    )
    waiting = getattr(run, "waiting_for", None)  # an API of an older release has none
    if waiting:
        from groundswell.shared.runs.waiting import describe

        click.echo(describe(waiting))


@main.command()
@click.argument("run_id")
def cancel(run_id: str) -> None:
    """Cancel a run that has not finished (its done work stays in the store).

    Through the API when GROUNDSWELL_API_KEY is set and no broker is; else in the
    configured Redis, or, with neither, in the local store (a private-stack run left
    unfinished)."""
    settings = _settings()
    if settings.api_key and not settings.broker_url:
        run = _api_call(lambda c: c.cancel(run_id))
        click.echo(f"{run.id}  {run.state}")
        return
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.runs.models import RunNotFound

    service, _ = _registry_service()
    try:
        record = service.cancel(run_id)
    except RunNotFound:
        _fail(f"no run {run_id} in {service.output_url}", 2)
    click.echo(f"{record.id}  {record.state}")


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
@click.option("--wait", is_flag=True, help="Wait for the run to end first.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="With --wait: stop waiting after this many seconds (exit 4).",
)
def summary(run_id: str, as_json: bool, wait: bool, timeout: float | None) -> None:
    """A finished run's summary (from the API; without one configured, from the local
    store)."""
    if not api_configured(_settings()):
        try:
            data = _local_summary(run_id, wait, timeout)
        except KeyboardInterrupt:
            _stopped_waiting(run_id)
        _emit(data, as_json, data.get("output"))
        return
    if wait:
        try:
            _api_call(lambda c: c.wait(run_id, poll=0.5, timeout=timeout, said=_waiting_for))
        except TimeoutError as exc:
            _fail(f"{exc} after {timeout:g} s", EXIT_TIMEOUT)
        except KeyboardInterrupt:
            _stopped_waiting(run_id)
    data = _api_call(lambda c: c.summary(run_id))
    _emit(data, as_json, data.get("output"))
