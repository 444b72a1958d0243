"""The ``groundswell`` command group; each module of this package adds its commands.

Modules load when one of their commands runs, so ``groundswell verify`` does not pay for
importing the admission engine, Celery or the API.
"""

from __future__ import annotations

import importlib
import re

import click

from groundswell.shared import __version__

# Which module defines each command (importing it registers its commands on ``main``).
COMMAND_MODULES = {
    "verify": "verify",
    "explain": "verify",
    "sensitivity": "verify",
    "admit": "admit",
    "check-receipt": "admit",
    "schema": "schema",
    "run": "runs",
    "demo": "runs",
    "submit": "runs",
    "status": "runs",
    "cancel": "runs",
    "summary": "runs",
    "worker": "runs",
    "beat": "runs",
    "api": "runs",
    "api-key": "runs",
    "policy": "policies",
    "schedule": "policies",
    "reprocess": "policies",
    "diff": "policies",
    "gate": "gates",
    "export": "export",
    "query": "export",
    "report": "report",
    "read": "read",
    "repair": "repair",
    "calibrate": "calibrate",
    "review": "review",
    "ledger": "ledger",
    "mcp": "mcp",
    "import": "formats",
    "follow": "streams",
}

# Modules that add subcommands to another module's group, imported with it.
SUBCOMMAND_MODULES = {"ledger": ("ledger_export", "ledger_history", "ledger_review")}


# `groundswell --help` lists the commands by what they are for, in this order.
COMMAND_SECTIONS = {
    "Pipeline": (
        "run",
        "follow",
        "import",
        "demo",
        "submit",
        "status",
        "summary",
        "report",
        "diff",
        "gate",
        "export",
        "query",
        "reprocess",
        "policy",
        "schedule",
    ),
    "Services": ("worker", "beat", "api", "api-key"),
    "gtrex tools": ("verify", "explain", "sensitivity", "repair", "calibrate", "read"),
    "groundgate tools": ("admit", "check-receipt", "schema"),
    "Ledger": ("ledger", "mcp"),
    "Review": ("review",),
}


def groundgate_habit(error: click.UsageError) -> str | None:
    """The groundswell way to do what a groundgate command line meant, for the click error it
    gets here (None: not a groundgate habit)."""
    command = error.ctx.command_path if error.ctx is not None else ""
    if isinstance(error, click.NoSuchOption) and error.option_name == "--store":
        return (
            "no --store here: runs keep their inputs, receipts and reviews in the "
            "store at GROUNDSWELL_STORAGE_URL (a folder or s3://bucket/prefix); set that instead"
        )
    message = error.format_message()
    extra = re.search(r"unexpected extra arguments \((.*)\)", message)
    # groundgate's form has four arguments: click saw three beyond CLAIMS
    if command.endswith(" verify") and extra and len(extra.group(1).split()) == 3:
        return (
            "verify RECEIPT DOC SCHEMA CANDIDATES is groundgate's receipt check: here it is "
            "`groundswell check-receipt RECEIPT DOC SCHEMA CANDIDATES` (verify checks quotations)"
        )
    if command.endswith(" review") and "No such command 'serve'" in message:
        return (
            "no `review serve` here: the review page is the API's /review "
            "(`groundswell api`, then sign in there with an API key)"
        )
    if "No such command 'store'" in message:
        return (
            "no `store` commands here: `groundswell check-receipt` re-derives a "
            "receipt (also one a run stored), and the store is GROUNDSWELL_STORAGE_URL"
        )
    return None


class Command(click.Command):
    """A command that reads an exact short option (``-o``) as its long spelling (``--output``).

    click tries every option as a long one first; for a short one that fails with a "no such
    option" error built with close-match suggestions (difflib: about 2 ms of a 55 ms start-up)
    before the short option is tried. Only what click would read as that option is respelled:
    not the value of an option that takes one, nor anything after ``--`` or after a spelling
    it does not know (a cluster such as ``-xo``), nor an option whose value is missing (click's
    error then names it as it was typed).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._long_spelling(ctx, args))

    def _long_spelling(self, ctx: click.Context, args: list[str]) -> list[str]:
        longs: dict[str, str] = {}
        takes: dict[str, int] = {}  # option spelling -> how many values follow it
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):
                continue
            spellings = [*param.opts, *param.secondary_opts]
            long = next((o for o in param.opts if o.startswith("--")), None)
            values = 0 if param.is_flag or param.count else param.nargs
            for o in spellings:
                takes[o] = values
                if long is not None and len(o) == 2 and o in param.opts:
                    longs[o] = long
        if not longs:
            return args
        out = list(args)
        i = 0
        while i < len(out):
            arg = out[i]
            unknown = arg.startswith("-") and arg != "-" and arg not in takes and "=" not in arg
            if arg == "--" or unknown:
                break  # the end of options, or a cluster such as -xo: left to click from here
            values = takes.get(arg, 0)
            if arg in longs and i + values < len(out):  # else click's error names it as typed
                out[i] = longs[arg]
            i += 1 + values  # an option's values are never respelled
        return out


class LazyGroup(click.Group):
    command_class = Command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMAND_MODULES})

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            # groundgate users' command lines: one line naming the equivalent, exit 2
            hint = groundgate_habit(error)
            if hint is None:
                raise
            click.echo(f"groundswell: {hint}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            # Where a command has no word of its own for Ctrl-C: one line, not click's
            # "Aborted!", and the code a shell gives a command ended by SIGINT.
            click.echo("groundswell: interrupted", err=True)
            ctx.exit(130)
        except RuntimeError as error:
            from groundswell.shared.runs.service import RunUnreadable

            if not isinstance(error, RunUnreadable):
                raise
            click.echo(f"groundswell: {error}", err=True)  # logged and counted where raised
            ctx.exit(1)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands in sections, each with its whole first sentence (click cuts it at
        45 characters with "…"); the help wraps it instead."""
        placed = [n for names in COMMAND_SECTIONS.values() for n in names]
        others = tuple(n for n in self.list_commands(ctx) if n not in placed)
        for title, names in (*COMMAND_SECTIONS.items(), ("Other", others)):
            rows = []
            for name in names:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=1000)))
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMAND_MODULES:
            importlib.import_module(f"groundswell.shared.cli.{COMMAND_MODULES[name]}")
        for module in SUBCOMMAND_MODULES.get(name, ()):
            importlib.import_module(f"groundswell.shared.cli.{module}")
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="groundswell")
def main() -> None:
    """groundswell: verify quotations and admit extracted facts, at corpus scale."""


def load_all() -> None:
    """Register every command now (for tools that walk ``main.commands``)."""
    extra = {m for modules in SUBCOMMAND_MODULES.values() for m in modules}
    for module in sorted(set(COMMAND_MODULES.values()) | extra):
        importlib.import_module(f"groundswell.shared.cli.{module}")
