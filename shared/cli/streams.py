"""``groundswell follow``: a followed corpus, its notifications taken from SQS as they come,
its windows run on the workers; one status line; Ctrl-C stops it between two steps."""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.cli.runs import _fail, _service, _settings, _workers_answer


def status_line(corpus: str, policy: str, state: dict[str, Any]) -> str:
    window = (
        f"window {state['window']} running ({state['inflight']} documents, run {state['run_id']})"
        if state["run_id"]
        else "no window running"
    )
    return (
        f"{corpus} under {policy}: {state['events']} events | {state['pending']} waiting for "
        f"inputs, {state['ready']} ready | {window} | {state['windows']} windows done | "
        f"lag {state['lag_seconds']:.1f} s"
    )


@main.command()
@click.argument("corpus")
@click.option(
    "--policy",
    default=None,
    help="NAME, NAME@VERSION or NAME@latest (default: the default policy).",
)
@click.option(
    "--sqs",
    "queue_url",
    default=None,
    help="The SQS queue the corpus's bucket sends its S3 event notifications to (without "
    "it, only windows and reconciliation: notifications come by POST /v1/events/s3).",
)
def follow(corpus: str, policy: str | None, queue_url: str | None) -> None:
    """Follow CORPUS (s3://bucket/prefix): check each new or changed document as its
    notification comes, in windows that are runs (GROUNDSWELL_STREAM_WINDOW_DOCUMENTS,
    _WINDOW_SECONDS, _GRACE_SECONDS); list the corpus every GROUNDSWELL_STREAM_RECONCILE_SECONDS
    for notifications that were lost. Runs until Ctrl-C."""
    from pydantic import ValidationError

    from groundswell.shared.streams.models import StreamSpec
    from groundswell.shared.streams.service import StreamService, TooManyStreams
    from groundswell.shared.streams.sqs import SqsSource, busy, sqs_client

    settings = _settings()
    try:
        spec = StreamSpec(corpus=corpus, policy=policy or settings.default_policy)
    except ValidationError as exc:
        _fail(exc.errors()[0]["msg"].removeprefix("Value error, "), 2)
        return
    if not settings.broker_url:
        _fail("follow needs a broker and workers (GROUNDSWELL_BROKER_URL)", 2)
    service, app = _service(settings)
    if not _workers_answer(app):
        click.echo(f"groundswell: no workers answer on {settings.broker_url} yet", err=True)
    streams = StreamService(service)
    try:
        record, created = streams.follow(spec)
    except TooManyStreams as exc:
        _fail(str(exc), 2)
        return
    click.echo(f"{'following' if created else 'following again'}: stream {record.id}", err=True)
    source = SqsSource(sqs_client(settings), queue_url) if queue_url else None

    stopping: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        if stopping:  # a second Ctrl-C: now
            raise KeyboardInterrupt
        stopping.append(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    tty = sys.stderr.isatty()
    shown, errors_shown = "", 0
    state: dict[str, Any] = {}
    while not stopping:
        try:
            if source is not None:
                got = source.poll(streams, record, busy(state))
                for error in got.errors[: max(0, 20 - errors_shown)]:
                    click.echo(
                        f"\ngroundswell: {error}" if tty else f"groundswell: {error}", err=True
                    )
                errors_shown += len(got.errors)
            else:
                time.sleep(1)
            state = streams.periodic(only=record.id).get(record.id) or streams.status(record.id)
        except Exception as exc:  # Redis, S3 or SQS away: say so, try again
            click.echo(f"groundswell: {type(exc).__name__}: {exc}; trying again", err=True)
            time.sleep(2)
            continue
        line = status_line(record.corpus, record.policy, state)
        if tty:
            click.echo("\r\033[K" + line, nl=False, err=True)
        elif line != shown:
            click.echo(line, err=True)
        shown = line
    click.echo(("\n" if tty else "") + "stopped: " + shown, err=True)
