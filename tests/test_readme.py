"""The README's usage section, tried command by command as a newcomer would type it.

Every ```bash block under "## Usage" runs in bash (``set -euo pipefail``) from a folder that
sees the repository's ``shared/`` as a clone does, with the installed console script on PATH,
a private data folder, and its own Redis and ports in place of the README's 6379, 8000 and
9101. Only lines that need Docker or a Kubernetes cluster are left out, and the test names
them (tests/deploy renders and validates what those apply).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundswell.workers.embedded import RedisServer, free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCKER_ONLY = {"docker compose up --build"}
CLUSTER_ONLY = (
    "kubectl apply -k deploy/k8s/overlays/redis",
    "kubectl apply -k deploy/k8s/overlays/rabbitmq",
)


def usage_blocks() -> tuple[list[str], list[str]]:
    """The bash blocks of the usage section, and its synopsis (text) blocks."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Usage\n", 1)[1].split("\n## ", 1)[0]
    bash = re.findall(r"```bash\n(.*?)```", section, re.S)
    synopsis = re.findall(r"```text\n(.*?)```", section, re.S)
    return bash, synopsis


def test_every_command_of_the_synopsis_is_tried():
    bash, synopsis = usage_blocks()
    named = {m for block in synopsis for m in re.findall(r"^groundswell ([a-z-]+)", block, re.M)}
    tried = {m for block in bash for m in re.findall(r"groundswell ([a-z-]+)", block)}
    assert len(named) >= 15
    assert named <= tried, f"untried commands: {sorted(named - tried)}"


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> dict[str, object]:
    home = tmp_path_factory.mktemp("readme")
    (home / "shared").symlink_to(ROOT / "shared")
    redis = RedisServer().start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSWELL_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        XDG_DATA_HOME=str(home / "data"),
        GROUNDSWELL_API_URL="",  # set below, with the port
    )
    ports = {"127.0.0.1:6379": f"127.0.0.1:{redis.port}", "8000": str(free_port())}
    ports["9101"] = str(free_port())
    env["GROUNDSWELL_API_URL"] = f"http://127.0.0.1:{ports['8000']}"
    yield {"home": home, "env": env, "ports": ports}
    redis.stop()


def _run_block(block: str, session: dict[str, object]) -> subprocess.CompletedProcess:
    lines = []
    for line in block.splitlines():
        if line.strip() in DOCKER_ONLY or line.strip().startswith(CLUSTER_ONLY):
            continue
        for readme_port, ours in session["ports"].items():  # type: ignore[union-attr]
            line = line.replace(readme_port, ours)
        lines.append(line)
    script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n"
    script += "\n".join(lines) + "\n"
    try:
        return subprocess.run(
            ["bash", "-c", script],
            cwd=session["home"],
            env=session["env"],
            capture_output=True,
            text=True,
            # Every command starts Python, and several a private Redis and workers: 7 min
            # was too little once on a loaded 2-core machine, so a generous bound that only
            # stops a hung command.
            timeout=1800,
        )
    except subprocess.TimeoutExpired as exc:
        out, err = (
            (part.decode(errors="replace") if isinstance(part, bytes) else part or "")
            for part in (exc.stdout, exc.stderr)
        )
        raise AssertionError(
            f"README commands still running after {exc.timeout:g} s; the last block begun is "
            f"named last:\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-5000:]}"
        ) from None


def test_the_usage_section_runs_command_by_command(session):
    bash, _ = usage_blocks()
    assert len(bash) >= 3
    home: Path = session["home"]  # type: ignore[assignment]
    # One shell, as a reader types them: later blocks use what earlier ones set.
    script = "\n".join(f"echo '### README block {n}' >&2\n{b}" for n, b in enumerate(bash, 1))
    result = _run_block(script, session)
    assert result.returncode == 0, (
        f"a README command failed ({result.returncode}); the last block begun is named last:\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-5000:]}"
    )
    outputs = [result.stdout, result.stderr]
    everything = "\n".join(outputs)
    # What the commands say they did is there.
    assert (home / "run.html").read_text().startswith("<!doctype html")
    assert (home / "certified.jsonl").read_text().count('"groundswell"') == 7
    assert '"groundgate"' in (home / "receipt.json").read_text()
    ledger = (home / "ledger.jsonld").read_text()  # the run's admitted facts, with provenance
    assert '"rdf:Statement"' in ledger and '"receiptDigest"' in ledger
    assert "right values admitted" in everything  # the summary table, more than once
    assert "would compute" in everything or "would reuse" in everything  # the dry run
    assert "0 2 * * *" in everything  # the schedule listed


def python_blocks() -> list[str]:
    """The python blocks of the README's "Python API" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n### Python API\n", 1)[1]
    section = re.split(r"\n##+ ", section, maxsplit=1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.integration
def test_the_python_api_section_runs(pipeline, tmp_path):
    """Each block as a reader runs it, from the clone, with the settings the CLI reads: the
    second against a real API and a real worker."""
    from groundswell.shared.cli.runs import SAMPLE_CORPUS
    from groundswell.shared.settings import hash_api_key
    from tests.conftest import API_KEY, running_api

    blocks = python_blocks()
    assert len(blocks) == 2
    pipeline.start_worker("readme-python")
    values = {
        **pipeline.values,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": str(SAMPLE_CORPUS),
    }
    with running_api(values, tmp_path) as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSWELL_")}
        env.update(GROUNDSWELL_API_URL=url, GROUNDSWELL_API_KEY=API_KEY)
        outputs = []
        for n, block in enumerate(blocks, 1):
            done = subprocess.run(
                [sys.executable, "-c", block],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=420,
            )
            assert done.returncode == 0, f"block {n}:\n{done.stdout}\n{done.stderr[-4000:]}"
            outputs.append(done.stdout)
    local, remote = outputs
    assert local.startswith("grounded exact") and "QUALIFIED_VALUE" in local
    assert local.rstrip().endswith("[]")  # the receipt re-derives
    assert remote.startswith("succeeded ") and "refused: 404 no run" in remote
    assert " receipts\n" in remote and " review tasks\n" in remote
