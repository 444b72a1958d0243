"""Command line interface. Local commands need no services; run commands drive the pipeline."""

from groundswell.shared.cli.app import load_all, main

__all__ = ["load_all", "main"]
