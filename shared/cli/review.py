"""`groundswell review`: review tasks, resolutions and measures in groundgate 0.11's formats.

Packets are files like ``admit --packet`` takes (document, schema, candidates, and optionally
policy, document_id, document_source, references, judgments, packs). Tasks are written one
``task@1`` a line in canonical JSON, the bytes groundgate stores, so a line's store key is the
task's key in either tool. Answers are ``answer@1`` records one a line, from any number of
reviewers and files: records with ``sequence``/``previous``/``entry_sha256`` are an answer
log as groundgate keeps it (``logs/answers/<packet>/<reviewer>.jsonl``) and are checked;
records without them are chained per reviewer in file order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from groundswell.shared.admit import PacketError
from groundswell.shared.canonical import canonical_text
from groundswell.shared.cli.admit import InputError, parse_json, read_json, read_text
from groundswell.shared.cli.app import main
from groundswell.shared.review.formats import (
    CHAIN,
    DEFAULT_REVIEW_POLICY,
    ReviewError,
    chain,
    check_chain,
    check_review_policy,
    json_key,
)
from groundswell.shared.review.measures import Measures, lines
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.resolve import AnswerError, Resolver

Logs = dict[str, list[dict[str, Any]]]


@main.group("review")
def review() -> None:
    """Review tasks, answers and resolutions (groundgate 0.11's formats).

    \b
    groundswell review tasks PACKET... | RUN_ID [-o tasks.jsonl] [--review-policy FILE]
    groundswell review resolve PACKET... --answers ANSWERS.jsonl... [-o resolutions.jsonl]
        [--review-policy FILE]
    groundswell review resolve RUN_ID [ANSWERS.jsonl...] [-o resolutions.jsonl]
    groundswell review measures PACKET... --answers ANSWERS.jsonl... [--review-policy FILE]
        [--json]
    groundswell review measures RUN_ID [--json]
    """


policy_option = click.option(
    "--review-policy",
    "--policy",
    "policy_path",
    type=click.Path(exists=True, dir_okay=False),
    help="A review-policy@1 JSON file; without it, no audit, agree 1, no lead and no task "
    "for a rejected slot.",
)


def _policy(path: str | None) -> dict[str, Any]:
    if path is None:
        return DEFAULT_REVIEW_POLICY
    try:
        return check_review_policy(read_json(path))
    except ReviewError as exc:
        raise InputError(f"{path}: {exc}") from exc


# A run's id as the first argument, in place of --run: ``review tasks RUN``.
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{3,}")
# answer@1's time as a run stores it (whole seconds, or a fraction of one).
UTC_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z")
packets_argument = click.argument("packets", nargs=-1, type=click.Path(dir_okay=False))


def _inputs(args: tuple[str, ...], run_id: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The run (``--run RUN_ID``, or a first argument that has a run id's form and is no
    file) and the files after it; a file that does not exist is named."""
    if run_id is None and args and not Path(args[0]).exists() and RUN_ID.fullmatch(args[0]):
        run_id, args = args[0], args[1:]
    for path in args:
        if not Path(path).is_file():
            raise InputError(f"{path}: no such file")
    return run_id, args


def _packet(path: str) -> ReviewPacket:
    try:
        return ReviewPacket.admitted(parse_json(read_text(path), path))
    except PacketError as exc:
        raise InputError(f"{path}: invalid packet: {exc}") from exc


def _resolvers(paths: Sequence[str]) -> dict[str, tuple[str, Resolver]]:
    """Each packet file's resolver by packet key (a packet given twice counts once)."""
    out: dict[str, tuple[str, Resolver]] = {}
    for path in paths:
        packet = _packet(path)
        if packet.key not in out:
            try:
                out[packet.key] = (path, Resolver(packet))
            except PacketError as exc:
                raise InputError(f"{path}: {exc}") from exc
    return out


def _write_lines(output: str | None, text: str) -> None:
    if output is None:
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")


@review.command("tasks")
@packets_argument
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write tasks.jsonl here.")
@policy_option
@click.option(
    "--run",
    "run_id",
    help="A finished run's tasks instead of PACKETs (made once from its stored receipts, "
    "under the configured GROUNDSWELL_REVIEW_POLICY; read from storage, no Redis needed).",
)
def tasks_command(
    packets: tuple[str, ...], output: str | None, policy_path: str | None, run_id: str | None
) -> None:
    """The review tasks of each PACKET, as `groundgate review tasks` makes them, or of a
    run (RUN_ID, or --run RUN_ID).

    One task@1 a line in canonical JSON, in packet then slot order; with -o, each task's
    key is printed (as groundgate prints them)."""
    run_id, packets = _inputs(packets, run_id)
    if bool(packets) == bool(run_id):
        raise InputError("give PACKET files or --run RUN_ID (one of the two)")
    found = _run_tasks(run_id) if run_id else _packet_tasks(packets, _policy(policy_path))
    _write_lines(output, "".join(canonical_text(t) + "\n" for t in found))
    if output is not None:
        for task in found:
            click.echo(json_key("task@1", task))


def _packet_tasks(packets: Sequence[str], policy: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for path, resolver in _resolvers(packets).values():
        try:
            found += resolver.maker.tasks(policy)
        except PacketError as exc:
            raise InputError(f"{path}: {exc}") from exc
    return found


def _run_tasks(run_id: str) -> list[dict[str, Any]]:
    from groundswell.shared.review.store import InputsChanged, ReviewUnavailable

    try:
        return [task for _, task in _run_review(run_id).tasks()]
    except (ReviewUnavailable, InputsChanged) as exc:
        raise InputError(str(exc)) from None


def read_answers(
    paths: Sequence[str], resolvers: dict[str, tuple[str, Resolver]]
) -> tuple[dict[str, Logs], dict[tuple[str, str, int], str]]:
    """The answer logs of each packet (by key) from answer files, and where each record was
    read (packet, reviewer, sequence -> file:line). A record must answer a task of one of the
    packets."""
    packet_of = {k: pk for pk, (_, r) in resolvers.items() for k in r.by_key}
    logs: dict[str, Logs] = {}
    where: dict[tuple[str, str, int], str] = {}
    places: dict[tuple[str, str], list[str]] = {}
    for path in paths:
        for n, line in enumerate(read_text(path).splitlines(), 1):
            if not line.strip():
                continue
            at = f"{path}:{n}"
            record = parse_json(line, at)
            if not isinstance(record, dict):
                raise InputError(f"{at}: an answer@1 record is a JSON object")
            for member in ("reviewer", "task"):
                if not isinstance(record.get(member), str) or not record[member].strip():
                    raise InputError(f"{at}: {member}: missing or not a name")
            pk = packet_of.get(record["task"])
            if pk is None:
                raise InputError(f"{at}: task: not a task of a slot of the packets given")
            logs.setdefault(pk, {}).setdefault(record["reviewer"], []).append(record)
            places.setdefault((pk, record["reviewer"]), []).append(at)
    for pk, by_reviewer in logs.items():
        for name, records in by_reviewer.items():
            ats = places[pk, name]
            chained = [all(m in r for m in CHAIN) for r in records]
            try:
                if all(chained):
                    check_chain(records)
                elif any(chained) or any(m in r for r in records for m in CHAIN):
                    raise ReviewError("records with and without their log's chain members")
                else:
                    by_reviewer[name] = chain(records)
            except ReviewError as exc:
                raise InputError(f"{ats[0]}: reviewer {name}: {exc}") from exc
            for seq, at in enumerate(ats, 1):
                where[pk, name, seq] = at
    return logs, where


def _answer_error(exc: AnswerError, pk: str, where: dict[tuple[str, str, int], str]) -> InputError:
    at = (
        where.get((pk, exc.reviewer, exc.sequence), f"reviewer {exc.reviewer}")
        if isinstance(exc.sequence, int)
        else f"reviewer {exc.reviewer}"
    )
    return InputError(f"{at}: {exc.member}: {exc.reason}")


def answers_option(note: str):
    return click.option(
        "--answers",
        "answers",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help=f"An answers JSONL file: answer@1 records, or a groundgate answer log "
        f"(repeatable; {note}).",
    )


@review.command("resolve")
@packets_argument
@answers_option("required with PACKETs, added to the run's answers with --run")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the resolutions here: one resolution@1 a line, in canonical JSON.",
)
@policy_option
@click.option(
    "--run",
    "run_id",
    help="Resolve a finished run from its stored answers (and the --answers files, stored "
    "with them first), instead of PACKETs.",
)
def resolve_command(
    packets: tuple[str, ...],
    answers: tuple[str, ...],
    output: str | None,
    policy_path: str | None,
    run_id: str | None,
) -> None:
    """The resolution@1 of each PACKET from the answers to its tasks, as `groundgate review
    resolve` makes it, or of each packet of a run (--run RUN_ID).

    For each packet, prints the resolution's key, then one line a slot: its value, or why it
    has none. An answer to a task of no PACKET (or of no stored task), or one that breaks its
    task, exits 2 naming its file, line and member; with a run nothing is stored then.
    `review resolve RUN_ID ANSWERS.jsonl...` is `--run RUN_ID --answers ANSWERS.jsonl`."""
    run_id, packets = _inputs(packets, run_id)
    if run_id:
        found = _run_resolutions(run_id, (*packets, *answers))
        if output is not None:
            Path(output).write_text("".join(canonical_text(r) + "\n" for r in found), "utf-8")
        return
    if not packets:
        raise InputError("give PACKET files or a run (RUN_ID or --run RUN_ID)")
    if not answers:
        raise InputError("--answers: give the answers to the PACKETs' tasks")
    policy = _policy(policy_path)
    resolvers = _resolvers(packets)
    logs, where = read_answers(answers, resolvers)
    found = []
    for pk, (_, resolver) in resolvers.items():
        try:
            resolved = resolver.resolve(policy, logs.get(pk, {}))
        except AnswerError as exc:
            raise _answer_error(exc, pk, where) from exc
        found.append(resolved.resolution)
        click.echo(json_key("resolution@1", resolved.resolution))
        for line in _slot_lines(resolved.resolution):
            click.echo(line)
    if output is not None:
        Path(output).write_text("".join(canonical_text(r) + "\n" for r in found), "utf-8")


def _run_review(run_id: str):
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.review.store import RunReview
    from groundswell.shared.runs.models import RunNotFound

    service, _ = _registry_service()
    try:
        return RunReview(service, service.get(run_id))
    except RunNotFound:
        raise InputError(f"no run {run_id}") from None


def _run_resolutions(run_id: str, answers: Sequence[str]) -> list[dict[str, Any]]:
    """Store the answers of the files (each checked against its stored task first, as the
    API checks an answer; one stored before is not stored again), then resolve the run."""
    from groundswell.shared.review.store import (
        InputsChanged,
        ReviewUnavailable,
        TooManyAnswers,
        UnknownTask,
        resolution_object,
    )

    review = _run_review(run_id)
    try:
        policy = review.manifest()["policy"]
        resolvers: dict[str, tuple[str, Resolver]] = {}
        for key in dict.fromkeys(_answered_tasks(answers)):
            try:
                origin = review.store.task(key)["origin"]
            except (UnknownTask, ValueError):
                continue  # read_answers names the file and line of its answer
            packet = review.packet(origin["doc_id"], origin["receipt"])
            if packet is not None and packet.key not in resolvers:
                resolvers[packet.key] = (origin["doc_id"], Resolver(packet))
        logs, where = read_answers(answers, resolvers)
        for pk, by_reviewer in logs.items():
            try:
                resolvers[pk][1].resolve(policy, by_reviewer)
            except AnswerError as exc:
                raise _answer_error(exc, pk, where) from exc
            # A stored answer is named by its time: a UTC time as answers are given, never
            # any string (a '/' or '..' in it would name another object).
            for name, records in by_reviewer.items():
                for seq, r in enumerate(records, 1):
                    if not UTC_TIME.fullmatch(r["time"]):
                        raise InputError(
                            f"{where[pk, name, seq]}: time: not a UTC time like "
                            "2026-12-01T09:30:00Z"
                        )
        added = 0
        for pk, by_reviewer in logs.items():
            for name, records in by_reviewer.items():
                for seq, r in enumerate(records, 1):
                    try:
                        added += review.store.import_answer(
                            {k: v for k, v in r.items() if k not in CHAIN}
                        )
                    except TooManyAnswers as exc:  # the answers before it are stored
                        raise InputError(f"{where[pk, name, seq]}: {exc}") from None
        total = sum(len(rs) for by_reviewer in logs.values() for rs in by_reviewer.values())
        body = review.resolve()
    except (ReviewUnavailable, InputsChanged) as exc:
        raise InputError(str(exc)) from None
    if answers:
        click.echo(f"answers: {added} stored, {total - added} stored before", err=True)
    found = []
    for entry in body["packets"]:
        resolution = json.loads(review.output.get(resolution_object(entry["resolution"])))
        found.append(resolution)
        click.echo(f"{entry['resolution']} {entry['doc_id']}")
        for line in _slot_lines(resolution):
            click.echo(line)
    for line in body["skipped"]:
        click.echo(f"skipped: {line}", err=True)
    return found


def _answered_tasks(paths: Sequence[str]) -> list[str]:
    """The task named by each record of the answer files (lines that are not records are
    named by read_answers)."""
    keys = []
    for path in paths:
        for line in read_text(path).splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("task"), str):
                keys.append(record["task"])
    return keys


_NO_VALUE = {
    "not_in_document": "a reviewer says that the document does not give it",
    "rejected": "the gate rejected each candidate, and the review policy makes no task",
    "open": "no answer settles the task yet",
    "disputed": "the reviewers do not agree",
}


def _slot_lines(resolution: dict[str, Any]) -> list[str]:
    """One line a slot (a slot whose field and key repeat also names its decisions)."""
    slots = resolution["slots"]
    names = [s["field"] if s["key"] is None else f"{s['field']} [{s['key']}]" for s in slots]
    out = []
    for s, name in zip(slots, names, strict=True):
        if names.count(name) > 1:
            name += " #" + ",".join(str(i) for i in s["decisions"])
        if s["value"] is None:
            line = f"{name}: no value ({s['status']}: {_NO_VALUE[s['status']]})"
        else:
            unit = "" if s["unit"] is None else f" {s['unit']}"
            line = f"{name}: {s['value']}{unit} ({s['status']})"
        out.append("".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in line))
    return out


@review.command("measures")
@packets_argument
@answers_option("with PACKETs")
@policy_option
@click.option("--json", "as_json", is_flag=True, help="Print the measures as JSON.")
@click.option(
    "--run",
    "run_id",
    help="A finished run's review load and the measures of its stored answers, instead of "
    "PACKETs (with Redis configured, also kept for the gauges).",
)
def measures_command(
    packets: tuple[str, ...],
    answers: tuple[str, ...],
    policy_path: str | None,
    as_json: bool,
    run_id: str | None,
) -> None:
    """The measures of the answers to the tasks of PACKETs, as `groundgate review measures`
    counts them: per item kind and field, answers, median time, one-key answers, agreement
    with blind labels and the escapes the audit finds; or a run's (--run RUN_ID), with its
    review load. Exit 1 when a packet is left out (its answers break their tasks; named on
    stderr)."""
    run_id, packets = _inputs(packets, run_id)
    if bool(packets) == bool(run_id):
        raise InputError("give PACKET files or --run RUN_ID (one of the two)")
    if run_id:
        _run_measures(run_id, as_json)
        return
    if not answers:
        raise InputError("--answers: give the answers to the PACKETs' tasks")
    policy = _policy(policy_path)
    resolvers = _resolvers(packets)
    logs, where = read_answers(answers, resolvers)
    tallies = Measures()
    for pk in sorted(logs):
        path, resolver = resolvers[pk]
        exc = tallies.add(resolver.packet, policy, logs[pk], resolver)
        if isinstance(exc, AnswerError):
            tallies.skipped[-1] = f"{path}: {_answer_error(exc, pk, where).message}"
    measured = tallies.as_dict()
    for line in measured["skipped"]:
        click.echo(f"skipped: {line}", err=True)
    if as_json:
        click.echo(json.dumps(measured, indent=2, sort_keys=True, ensure_ascii=True))
    else:
        for line in lines(measured):
            click.echo(line)
    if measured["skipped"]:
        raise SystemExit(1)


def _run_measures(run_id: str, as_json: bool) -> None:
    from groundswell.shared.review import gauges
    from groundswell.shared.review.store import InputsChanged, ReviewUnavailable

    review = _run_review(run_id)
    try:
        result = review.measures()
    except (ReviewUnavailable, InputsChanged) as exc:
        raise InputError(str(exc)) from None
    gauges.record(review.service, review.record, result)
    for line in result["measures"]["skipped"]:
        click.echo(f"skipped: {line}", err=True)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=True))
    else:
        load = result["load"]
        wait = load["open_median_age_seconds"]
        click.echo(f"run {result['run']} under {result['policy_ref']}")
        click.echo(
            f"tasks: {load['tasks']}, answered {load['answered']}, disputed "
            f"{load['disputed']}, open {load['open']}, reviewers {load['reviewers']}, median "
            "wait " + ("none" if wait is None else f"{wait:.0f} s")
        )
        for line in lines(result["measures"]):
            click.echo(line)
    if result["measures"]["skipped"]:
        raise SystemExit(1)
