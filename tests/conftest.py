"""Fixtures shared by every test package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.settings import get_settings


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """../shared/corpus (setting GROUNDSWELL_SHARED_CORPUS): real documents, read in place."""
    path = get_settings().shared_corpus
    if not (path / "documents").is_dir():
        pytest.fail(
            f"the shared corpus is not at {path}: set GROUNDSWELL_SHARED_CORPUS to the folder "
            "that holds documents/ and gold_facts.jsonl (CI always has ../shared/corpus)"
        )
    return path


@pytest.fixture(scope="session")
def corpus_index(shared_corpus: Path) -> list[dict]:
    with (shared_corpus / "index.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
