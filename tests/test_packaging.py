"""The project's own configuration gives setuptools nothing to warn about.

``pip install -e .`` printed about 450 lines of warnings before the demo's output: the
license as a TOML table (deprecated for an SPDX string) and data folders shipped through
package-data but absent from ``packages``. Checked on the configuration itself (no build).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_license_is_an_spdx_string():
    assert isinstance(CONFIG["project"]["license"], str)
    # setuptools reads an SPDX string from 77 on; older ones reject it
    assert any(r.startswith("setuptools>=77") for r in CONFIG["build-system"]["requires"])


def test_every_folder_that_ships_files_is_a_listed_package():
    tool = CONFIG["tool"]["setuptools"]
    listed = set(tool["packages"])
    missing = []
    for name, folder in tool["package-dir"].items():
        for path in sorted((REPO / folder).rglob("*")):
            if not path.is_dir() or "__pycache__" in path.parts:
                continue
            if not any(f.is_file() for f in path.iterdir()):
                continue
            parts = path.relative_to(REPO / folder).parts
            package = ".".join([name, *parts])
            # setuptools warns only of folders whose names could be modules (not "us-10k")
            if all(p.isidentifier() for p in parts) and package not in listed:
                missing.append(package)
    assert not missing, f"folders absent from [tool.setuptools] packages: {missing}"


def test_make_demo_keeps_the_install_output_in_a_log(tmp_path):
    """The demo's output starts with the demo: every pip install of the set-up writes to
    the venv's install log (printed only when it fails), and make echoes no recipe line."""
    import subprocess

    venv = tmp_path / "v"
    planned = subprocess.run(
        ["make", "-n", "-C", str(REPO), f"VENV={venv}", "demo"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    installs = [line for line in planned if "pip install" in line]
    assert len(installs) == 2, planned  # pip itself, then groundswell
    for line in installs:
        assert f">> {venv}/install.log 2>&1 || {{ cat {venv}/install.log; exit 1; }}" in line
    recipes = [
        line
        for line in (REPO / "Makefile").read_text().splitlines()
        if line.startswith("\t") and line.strip()
    ]
    shown = [r for r in recipes if not r.lstrip().startswith("@")]
    assert all(not r.strip().startswith("$(BIN)/pip") for r in shown), shown
