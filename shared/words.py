"""Small wording helpers shared by the CLI, the summary and the planner's messages."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless n is 1: "1 document", "3 documents"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
