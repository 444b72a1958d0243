"""A setting read as :class:`~groundswell.shared.settings.Settings` reads it, without building
``Settings``: for start-up paths that need one value (``verify`` asks where the store is).

Building ``Settings`` imports pydantic-settings and validates every field, about a quarter of
a second of CPU; reading one variable is a look at the environment. The sources and their
order are the class's: ``GROUNDSWELL_<NAME>`` from the environment (any case, an empty value
ignored), then from ``.env`` in the working directory, then the field's default.
``tests/shared/test_quick_settings.py`` holds the two readings equal.
"""

from __future__ import annotations

import os
import sys

ENV_PREFIX = "GROUNDSWELL_"
ENV_FILE = ".env"


def default_storage_url() -> str:
    """The per-user data folder (``$XDG_DATA_HOME/groundswell`` on Linux), so that every
    working directory shares one store and one policy registry."""
    quick = _linux_user_dir("XDG_DATA_HOME", ".local/share")
    if quick is not None:
        return quick
    import platformdirs

    return str(platformdirs.user_data_path("groundswell"))


def default_cache_dir() -> str:
    """The per-user cache folder (``$XDG_CACHE_HOME/groundswell`` on Linux): files made on this
    machine that can be made again (the Unicode tables)."""
    quick = _linux_user_dir("XDG_CACHE_HOME", ".cache")
    if quick is not None:
        return quick
    import platformdirs

    return str(platformdirs.user_cache_path("groundswell"))


def _linux_user_dir(xdg_var: str, under_home: str) -> str | None:
    """platformdirs' answer on plain Linux, without importing it (a tenth of ``verify``'s
    start-up): ``$XDG_...`` when absolute, else ``$HOME/<under_home>`` when HOME is absolute,
    with ``groundswell`` appended. None anywhere else (another system, Android, a HOME that is
    unset or relative): platformdirs decides. ``tests/shared/test_quick_settings.py`` holds
    the two answers equal."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel"):
        return None
    base = os.environ.get(xdg_var, "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, under_home)
    from pathlib import Path  # loaded already (site imports it): as platformdirs spells it

    return str(Path(base, "groundswell"))


def env_setting(name: str) -> str | None:
    """The raw value of setting ``name`` (a field name, such as ``storage_url``) from the
    environment or ``.env``, as Settings finds it; None when neither sets it."""
    key = (ENV_PREFIX + name).lower()
    found = None
    for var, value in os.environ.items():
        if var.lower() == key and value != "":
            found = value  # the last of several spellings wins, as in pydantic-settings
    if found is not None:
        return found
    if not os.path.isfile(ENV_FILE):
        return None
    from dotenv import dotenv_values

    for var, value in dotenv_values(ENV_FILE, encoding="utf-8").items():
        if var.lower() == key and value:
            found = value
    return found


def storage_url() -> str:
    """``Settings().storage_url``."""
    return env_setting("storage_url") or default_storage_url()


def cache_dir() -> str:
    """``Settings().cache_dir``."""
    return env_setting("cache_dir") or default_cache_dir()
