"""Command line interface. Local commands need no services; run commands drive the pipeline."""

from groundswell.shared.cli import admit, policies, runs, verify  # noqa: F401  (each registers its commands)
from groundswell.shared.cli.app import main

__all__ = ["main"]
