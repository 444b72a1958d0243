"""The ``groundswell`` command group; each module of this package adds its commands."""

from __future__ import annotations

import click

from groundswell.shared import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="groundswell")
def main() -> None:
    """groundswell: verify quotations and admit extracted facts, at corpus scale."""
