"""The ``groundswell`` command group; each module of this package adds its commands.

Modules load when one of their commands runs, so ``groundswell verify`` does not pay for
importing the admission engine, Celery or the API.
"""

from __future__ import annotations

import importlib

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
    "report": "report",
    "read": "read",
    "repair": "repair",
    "calibrate": "calibrate",
    "review": "review",
    "ledger": "ledger",
}

# Modules that add subcommands to another module's group, imported with it.
SUBCOMMAND_MODULES = {"ledger": ("ledger_export", "ledger_history", "ledger_review")}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMAND_MODULES})

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
