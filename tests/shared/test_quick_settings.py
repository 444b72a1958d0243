"""quick_settings reads a setting as Settings does, without building Settings."""

from __future__ import annotations

import pytest

from groundswell.shared import quick_settings
from groundswell.shared.settings import Settings

FIELDS = ("storage_url", "cache_dir")


@pytest.mark.parametrize(
    ("env", "dotenv"),
    [
        ({}, None),
        ({"GROUNDSWELL_STORAGE_URL": "/srv/store", "GROUNDSWELL_CACHE_DIR": "/srv/c"}, None),
        ({"groundswell_storage_url": "s3://bucket/prefix"}, None),
        ({"GROUNDSWELL_STORAGE_URL": ""}, "GROUNDSWELL_STORAGE_URL=/from/dotenv\n"),
        ({"GROUNDSWELL_STORAGE_URL": "/from/env"}, "GROUNDSWELL_STORAGE_URL=/from/dotenv\n"),
        ({}, "groundswell_cache_dir='/quoted dir'\nGROUNDSWELL_STORAGE_URL=\n"),
    ],
)
def test_the_same_value_as_settings(tmp_path, monkeypatch, env, dotenv):
    for name in FIELDS:
        for var in (f"GROUNDSWELL_{name.upper()}", f"groundswell_{name}"):
            monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    monkeypatch.chdir(tmp_path)
    if dotenv is not None:
        (tmp_path / ".env").write_text(dotenv)
    settings = Settings()
    assert quick_settings.storage_url() == settings.storage_url
    assert quick_settings.cache_dir() == settings.cache_dir


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_CACHE_HOME": "/x/cache", "XDG_DATA_HOME": "/x/data"},
        {"XDG_CACHE_HOME": "relative/cache", "XDG_DATA_HOME": ""},
        {"HOME": "/home/someone/"},
        {"HOME": "/"},
        {"HOME": "/home/a", "XDG_CACHE_HOME": "/c/", "XDG_DATA_HOME": "/d//"},
    ],
)
def test_the_per_user_folders_are_platformdirs(monkeypatch, env):
    """The folders computed without platformdirs (on Linux) are the ones it gives."""
    import platformdirs

    for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert quick_settings.default_cache_dir() == str(platformdirs.user_cache_path("groundswell"))
    assert quick_settings.default_storage_url() == str(platformdirs.user_data_path("groundswell"))
