"""Runs: planning, batches, finalize, recovery and reading, over the core (docs/run-bookkeeping.md)."""
