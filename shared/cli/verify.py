"""`groundswell` commands: verify, explain, sensitivity.

Input is gtrex's JSON Lines contract: each record has a string ``claim`` and exactly one of an
inline ``source`` or a ``source_path`` (read as UTF-8, byte for byte; relative paths resolve
against ``--root``, else the current directory). Every other field is passed through in order;
the inline ``source`` is not repeated in the output. The certificate goes under the key
``groundswell``. Invalid input exits 1 with the file and line; output is all or nothing.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.repair.gtrex_policy import (
    REPAIR_MODES,
    SALVAGE_POLICIES,
    GtrexPolicy,
    unpublished_builtin,
)
from groundswell.shared.text.transforms import TransformError, bound_regex_time
from groundswell.shared.verify import (
    BUILTIN_VERIFY_POLICIES,
    Verifier,
    VerifyPolicy,
)
from groundswell.shared.verify.policy import ELLIPSIS_POLICIES, PolicyError
from groundswell.shared.verify.report import (
    LadderProfile,
    explain,
    manifest,
    sensitivity,
    spread_points,
)

RESULT_KEY = "groundswell"
# Show a progress bar from this many records on, when stderr is a terminal.
PROGRESS_FROM = 200


class InvalidInput(click.ClickException):
    """Input the command cannot use; the message names the file and line."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"groundswell: {self.format_message()}", err=True)


@dataclass
class Record:
    line: int
    data: dict[str, Any]
    source_key: str


def load_policy(ref: str) -> VerifyPolicy:
    """A policy file (groundswell's or gtrex's), or NAME / NAME@N / NAME@latest: from the
    policy registry of the configured store when it holds that name (what `run` uses), else a
    built-in."""
    return _load(ref).verify


def _load(ref: str) -> GtrexPolicy:
    try:
        builtin = unpublished_builtin(ref)  # without loading the registry
        if builtin is not None:
            return builtin
        from groundswell.shared.policies import policy_for_ref

        return policy_for_ref(ref)
    except PolicyError as exc:
        raise InvalidInput(str(exc)) from None


_POLICY_FLAGS = (
    "policy_ref",
    "policy_file",
    "accept_through",
    "marker_pattern",
    "ellipsis",
    "allow_unsound",
)


def policy_from_flags(
    policy_ref: str,
    policy_file: str | None,
    accept_through: str | None,
    marker_pattern: str | None,
    ellipsis: str | None,
    allow_unsound: bool,
) -> GtrexPolicy:
    """The policy gtrex's flags describe: ``--policy-file`` (else ``--policy``), then each
    override applied to it (a new fingerprint). A bad override value is a usage error (exit 2)
    that names the flag; a policy that cannot be read is invalid input (exit 1)."""
    loaded = _load(policy_file) if policy_file else _load(policy_ref)
    for note in loaded.notes:
        click.echo(f"groundswell: {policy_file}: {note}", err=True)
    base = policy = loaded.verify
    flags: list[str] = []
    if marker_pattern is not None:
        try:
            policy = policy.with_changes(marker_pattern=marker_pattern)
        except PolicyError as exc:
            raise click.BadParameter(str(exc), param_hint="'--marker-pattern'") from None
        flags.append(f"--marker-pattern {marker_pattern}")
    changes: dict[str, Any] = {}
    if accept_through is not None:
        tiers = policy.resolved_ladder.names
        if accept_through not in tiers:
            raise click.BadParameter(
                f"{accept_through!r} is not a tier of the {policy.ladder_name} ladder "
                f"(its tiers: {', '.join(tiers)})",
                param_hint="'--accept-through'",
            )
        changes["accept_through"] = accept_through
        flags.append(f"--accept-through {accept_through}")
    if allow_unsound:
        changes["allow_unsound"] = True
        flags.append("--allow-unsound")
    if ellipsis is not None:
        changes["ellipsis_policy"] = ellipsis
        flags.append(f"--ellipsis {ellipsis}")
    if changes:
        tier = policy.resolved_ladder.tiers[
            policy.resolved_ladder.names.index(changes.get("accept_through", policy.accept_tier))
        ]
        if not tier.sound and not changes.get("allow_unsound", policy.allow_unsound):
            raise click.BadParameter(
                f"{tier.name!r} is an unsound tier (different texts can match at it); pass "
                "--allow-unsound to count it as grounded",
                param_hint="'--accept-through'",
            )
        try:
            policy = policy.with_changes(**changes)
        except PolicyError as exc:
            raise click.BadParameter(str(exc), param_hint="'--accept-through'") from None
    if flags:
        policy = policy.with_changes(
            name="custom", description=f"{base.ref} with {' '.join(flags)}"
        )
    return GtrexPolicy(policy, loaded.repair, loaded.fingerprint, loaded.notes)


def policy_options(f: Any) -> Any:
    """gtrex's policy flags (verify, explain; later repair and calibrate): the command gets
    the policy they describe as ``policy`` (a :class:`GtrexPolicy`)."""
    options = [
        click.option(
            "--policy",
            "policy_ref",
            default="default",
            show_default=True,
            help="A built-in policy (strict, default, permissive, guarded), NAME@VERSION from the policy "
            "registry, or a policy file (groundswell's or gtrex's).",
        ),
        click.option(
            "--policy-file",
            type=click.Path(dir_okay=False),
            help="A JSON policy file, gtrex's or groundswell's; overrides --policy.",
        ),
        click.option(
            "--accept-through", metavar="TIER", help="The loosest tier counted as grounded."
        ),
        click.option(
            "--marker-pattern",
            metavar="REGEX",
            help="A regular expression for parser layout markers (each counts as one space).",
        ),
        click.option(
            "--ellipsis",
            type=click.Choice(ELLIPSIS_POLICIES),
            help="How a quotation with an ellipsis is treated.",
        ),
        click.option(
            "--allow-unsound",
            is_flag=True,
            help="Count tiers that are known to collide (skeleton) as grounded.",
        ),
    ]

    @functools.wraps(f)
    def command(*args: Any, **kwargs: Any) -> Any:
        flags = {name: kwargs.pop(name) for name in _POLICY_FLAGS}
        return f(*args, policy=policy_from_flags(**flags), **kwargs)

    for option in reversed(options):
        command = option(command)
    return command


def _surrogate(value: Any) -> bool:
    if isinstance(value, str):
        # a lone surrogate is the one str that strict UTF-8 cannot encode (a regex over the
        # surrogate range costs more to compile than every record's check)
        if value.isascii():
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_surrogate(k) or _surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_surrogate(v) for v in value)
    return False


def read_lines(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON Lines file ('-': standard input), with their line numbers
    (blank lines skipped)."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not valid UTF-8 ({exc.reason})") from None
    text = text.removeprefix("\ufeff")
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{number}: invalid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise InvalidInput(f"{path}:{number}: a record is a JSON object")
        # a lone surrogate can only come from an escape \uD800 to \uDFFF (the file is strict
        # UTF-8): a line without one needs no walk through its values
        if ("\\ud" in line or "\\uD" in line) and _surrogate(value):
            raise InvalidInput(
                f"{path}:{number}: contains an unpaired surrogate escape (such as \\ud800), "
                "which is not text"
            )
        yield number, value


class Sources:
    """Source texts by key, each file read (and decoded) once."""

    def __init__(self, root: str | None) -> None:
        self.root = Path(root) if root else None
        self.texts: dict[str, str] = {}
        self._inline: dict[str, str] = {}
        self._by_path: dict[str, str] = {}  # source_path as written -> its key

    def key_for(self, path: str, line: int, record: dict[str, Any]) -> str:
        has_inline = "source" in record
        has_path = "source_path" in record
        if has_inline and has_path:
            raise InvalidInput(
                f"{path}:{line}: record has both 'source' and 'source_path'; provide exactly one"
            )
        if not has_inline and not has_path:
            raise InvalidInput(f"{path}:{line}: record has neither 'source' nor 'source_path'")
        if has_inline:
            text = record["source"]
            if not isinstance(text, str):
                raise InvalidInput(
                    f"{path}:{line}: 'source' must be a string, not {type(text).__name__}"
                )
            key = self._inline.get(text)
            if key is None:
                key = self._inline[text] = f"inline:{len(self._inline)}"
                self.texts[key] = text
            return key
        where = record["source_path"]
        known = self._by_path.get(where) if isinstance(where, str) else None
        if known is not None:  # the same file again: no path arithmetic for every record
            return known
        if not isinstance(where, str) or not where:
            raise InvalidInput(f"{path}:{line}: 'source_path' must be a non-empty string")
        file = Path(where)
        if not file.is_absolute() and self.root is not None:
            file = self.root / file
        key = "path:" + str(file)
        if key not in self.texts:
            try:
                data = file.read_bytes()
            except OSError as exc:
                raise InvalidInput(
                    f"{path}:{line}: source_path {where}: cannot read: {exc.strerror or exc}"
                ) from None
            try:
                self.texts[key] = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{path}:{line}: source_path {where}: not valid UTF-8 ({exc.reason}); "
                    "convert the file first"
                ) from None
        self._by_path[where] = key
        return key


def read_records(
    path: str,
    sources: Sources,
    *,
    at_offsets: bool = False,
    replace_existing: bool = True,
) -> list[Record]:
    records = []
    for number, data in read_lines(path):
        claim = data.get("claim")
        if not isinstance(claim, str):
            kind = "missing" if "claim" not in data else f"not {type(claim).__name__}"
            raise InvalidInput(f"{path}:{number}: 'claim' must be a string ({kind})")
        if RESULT_KEY in data and not replace_existing:
            raise InvalidInput(
                f"{path}:{number}: record already has a {RESULT_KEY!r} field; pass "
                "--replace-existing to overwrite it"
            )
        key = sources.key_for(path, number, data)
        if at_offsets and not (data.get("start") is None and data.get("end") is None):
            # As a run does: a record with offsets is checked there, one without them is
            # verified document-wide; half a span or a non-integer one is a mistake.
            for name in ("start", "end"):
                value = data.get(name)
                if not isinstance(value, int) or isinstance(value, bool):
                    raise InvalidInput(
                        f"{path}:{number}: --at-offsets needs integer 'start' and 'end', "
                        f"both or neither ({name!r} is {json.dumps(value)})"
                    )
            if not 0 <= data["start"] < data["end"] <= len(sources.texts[key]):
                raise InvalidInput(
                    f"{path}:{number}: invalid source span [{data['start']}, {data['end']}): "
                    f"it must satisfy 0 <= start < end <= {len(sources.texts[key])} "
                    "(the source's length in characters)"
                )
        records.append(Record(number, data, key))
    return records


def _progress(total: int, label: str):
    """A rich progress bar on stderr when it is a terminal and the work is long, else None."""
    if total < PROGRESS_FROM or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    return Progress(
        f"[bold]{label}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def per_source(
    records: list[Record],
    sources: Sources,
    engines: dict[str, Any],
    label: str,
    make: Callable[[str], Any],
) -> Iterator[tuple[Record, Any]]:
    """Each record with the engine for its source, made once per source by ``make(text)`` and
    kept in ``engines``; a progress bar on a terminal for long inputs."""
    progress = _progress(len(records), label)
    task = progress.add_task(label, total=len(records)) if progress else None
    if progress:
        progress.start()
    try:
        for record in records:
            engine = engines.get(record.source_key)
            if engine is None:
                engine = engines[record.source_key] = make(sources.texts[record.source_key])
            yield record, engine
            if progress:
                progress.advance(task)
    finally:
        if progress:
            progress.stop()


def _stdout_bytes(data: bytes) -> None:
    """JSON on stdout is always UTF-8, whatever the terminal's encoding."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _write_output(out: str | None, lines: list[str]) -> None:
    payload = "".join(lines)
    if out is None or out == "-":
        _stdout_bytes(payload.encode("utf-8"))
        return
    try:
        Path(out).write_text(payload, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{out}: cannot write: {exc.strerror or exc}") from None


def _write_json(path: str, value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1) + "\n"
    if path == "-":
        _stdout_bytes(text.encode("utf-8"))
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot write: {exc.strerror or exc}") from None


def _profile_text(profile: LadderProfile) -> str:
    rates = profile.rates()
    policy = profile.policy
    head = (
        f"{100 * rates['policy_accepted_rate']:.2f}% of {profile.total} claims grounded under "
        f"policy {policy.ref} ({policy.fingerprint}); contiguous through "
        f"{rates['accept_through']!r}: {100 * rates['contiguous_rate_through_accept_tier']:.2f}%; "
        f"exact floor: {100 * rates['exact_floor']:.2f}%"
    )
    rows = [("tier", "at tier", "cumulative", "share"), *profile.table()]
    body = "\n".join(f"{a:<12}{b:>9}{c:>12}{d:>10}" for a, b, c, d in rows)
    return f"{head}\n\n{body}"


@main.command()
@click.argument("claims", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", "output", default=None, help="Output JSON Lines (default: stdout).")
@policy_options
@click.option("--root", type=click.Path(file_okay=False), help="Resolve relative source_path here.")
@click.option(
    "--at-offsets",
    is_flag=True,
    help="Check each record with start/end only at its [start, end) span (verify_at); "
    "verify the others document-wide, as a run does.",
)
@click.option("--manifest", "manifest_path", default=None, help="Write a run manifest (JSON) here.")
@click.option(
    "--replace-existing", is_flag=True, help=f"Overwrite a {RESULT_KEY!r} field already present."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="JSON on stdout: the certificates (JSON Lines, as without it), or with -o FILE the "
    "run manifest.",
)
@click.option(
    "--marker-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0.001),
    help="Seconds a policy's marker pattern may take on one source before it is stopped.",
)
def verify(
    claims: str,
    output: str | None,
    policy: GtrexPolicy,
    root: str | None,
    at_offsets: bool,
    manifest_path: str | None,
    replace_existing: bool,
    marker_timeout: float,
    as_json: bool,
) -> None:
    """Verify the quotations of CLAIMS (JSON Lines; '-' for stdin) against their sources.

    Each record gets a certificate under the key "groundswell": verdict, tier, offsets into
    the original source, and the policy's fingerprint. A summary goes to stderr. Takes
    gtrex's arguments and policy flags (gtrex verify), and gtrex's policy files.
    """
    # Python's re, as gtrex uses, runs a policy file's marker pattern: bounded in time.
    bound_regex_time(marker_timeout)
    sources = Sources(root)
    records = read_records(
        claims, sources, at_offsets=at_offsets, replace_existing=replace_existing
    )
    verifiers: dict[str, Verifier] = {}
    # one encoder for every line (json.dumps with an option builds one a call)
    encode = json.JSONEncoder(ensure_ascii=False).encode
    profile = LadderProfile(policy.verify)
    lines: list[str] = []
    checked = Counter({"span": 0, "document": 0})
    made = per_source(
        records, sources, verifiers, "verifying", lambda t: Verifier(t, policy.verify)
    )
    for record, verifier in made:
        data = record.data
        try:
            if at_offsets and data.get("start") is not None:
                cert = verifier.verify_at(data["claim"], data["start"], data["end"])
            else:
                cert = verifier.verify(data["claim"])
        except TransformError as exc:
            raise InvalidInput(f"{record.source_key}: {exc}") from None
        result = cert.as_dict()
        profile.add(result)  # the dict made once serves the profile and the output
        checked[cert.scope] += 1  # "span": at its offsets; "document": document-wide
        out = {k: v for k, v in data.items() if k not in ("source", RESULT_KEY)}
        out[RESULT_KEY] = result
        lines.append(encode(out) + "\n")
    _write_output(output, lines)
    inputs = {
        "input": claims,
        "documents": len(verifiers),
        "documents_sha256": sorted({v.source_sha256 for v in verifiers.values()}),
        "claims": len(records),
        "at_offsets": at_offsets,
    }
    if at_offsets:
        inputs["checked"] = dict(checked)
    if manifest_path:
        _write_json(manifest_path, manifest(policy.verify, profile, inputs))
    if as_json and output not in (None, "-"):
        _write_json("-", manifest(policy.verify, profile, inputs))
    click.echo(_profile_text(profile), err=True)
    if at_offsets:
        click.echo(
            f"--at-offsets: {checked['span']} checked at their offsets, "
            f"{checked['document']} without offsets verified document-wide "
            '(each certificate\'s "scope": span or document)',
            err=True,
        )


@main.command("explain")
@policy_options
@click.option(
    "--repair-mode",
    type=click.Choice(REPAIR_MODES),
    help="gtrex's repair mode: off verifies only; substitute stores the source's text; annotate "
    "keeps the model's text and attaches the located span.",
)
@click.option(
    "--salvage",
    type=click.Choice(SALVAGE_POLICIES),
    help="gtrex's fragment salvage: keep the longest verified fragment of a spliced quotation.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the policy as JSON instead.")
def explain_command(
    policy: GtrexPolicy,
    repair_mode: str | None,
    salvage: str | None,
    as_json: bool,
) -> None:
    """Print a verification policy and every assumption its verdicts rest on.

    Takes gtrex's policy and repair flags (gtrex explain). The repair settings are printed
    after the policy; `verify` does not read them.
    """
    if as_json:
        _write_json("-", policy.verify.as_dict())
        return
    repair = policy.repair
    changes = {k: v for k, v in (("repair_mode", repair_mode), ("salvage_policy", salvage)) if v}
    if changes:
        repair = replace(repair, **changes)
    click.echo(explain(policy.verify))
    click.echo("\nrepair settings (gtrex's repair cascade; verify does not read them):")
    click.echo("\n".join(repair.lines()))


@main.command("sensitivity")
@click.argument("claims", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--root", type=click.Path(file_okay=False), help="Resolve relative source_path here.")
@click.option(
    "--policy",
    "policy_refs",
    multiple=True,
    help="A policy to compare (repeatable); default: the three built-ins.",
)
@click.option(
    "-o", "--output", "output", default=None, help="Write the comparison as JSON ('-': stdout)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="The comparison as JSON on stdout (same as -o -)."
)
@click.option(
    "--ocr",
    is_flag=True,
    help="Also count the claims found only once the usual OCR confusions are folded "
    "(rn/m, 0/o, 1/l/i, line-end hyphens): an unsound tier, never grounded.",
)
def sensitivity_command(
    claims: str,
    root: str | None,
    policy_refs: tuple[str, ...],
    output: str | None,
    as_json: bool,
    ocr: bool,
) -> None:
    """Re-verify the same claims of CLAIMS ('-' for stdin) under several policies and show how
    the rate moves."""
    if as_json and output not in (None, "-"):
        raise InvalidInput("--json prints the comparison on stdout: give it or -o FILE, not both")
    output = "-" if as_json else output
    refs = policy_refs or tuple(BUILTIN_VERIFY_POLICIES)
    policies = {ref: load_policy(ref) for ref in refs}
    sources = Sources(root)
    records = read_records(claims, sources)
    grouped: dict[str, list[str]] = {}
    for record in records:
        grouped.setdefault(record.source_key, []).append(record.data["claim"])
    try:
        result = sensitivity(((sources.texts[k], v) for k, v in grouped.items()), policies, ocr=ocr)
    except PolicyError as exc:
        raise InvalidInput(f"--ocr: {exc}") from None
    spread = spread_points(result)
    rows = [
        f"{'policy':<14}{'fingerprint':<18}{'accept_through':<16}{'grounded':>10}{'contiguous':>12}"
        + (f"{'ocr only':>10}" if ocr else "")
    ]
    rows.append("-" * len(rows[0]))
    for name, row in result.items():
        rows.append(
            f"{name:<14}{row['fingerprint']:<18}{row['accept_through']:<16}"
            f"{100 * row['grounded_rate']:>9.2f}%{100 * row['contiguous_rate']:>11.2f}%"
            + (f"{100 * row['ocr_explained_rate']:>9.2f}%" if ocr else "")
        )
    text = "\n".join(rows) + (
        f"\n\nSame {len(records)} claims, same sources. The grounding rate varies by "
        f"{spread:.1f} percentage points across these {len(policies)} policies."
    )
    if ocr:
        text += (
            "\n'ocr only': found only with the usual OCR confusions folded (the unsound ocr "
            "tier): a recogniser's errors would explain them; no policy above grounds them."
        )
    if output:
        _write_json(output, {"policies": result, "spread_points": spread, "claims": len(records)})
    click.echo(text, err=output == "-")
