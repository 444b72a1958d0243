"""groundgate 0.11.0's command line, run in process as a test oracle (a dev-only dependency)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import groundgate.cli


def write_inputs(folder: Path, packet: dict[str, Any]) -> list[str]:
    """The packet as the files groundgate's CLI reads; the arguments that name them."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doc.txt").write_bytes(packet["document"].encode("utf-8"))
    (folder / "schema.json").write_text(json.dumps(packet["schema"]), encoding="utf-8")
    (folder / "cands.json").write_text(json.dumps(packet["candidates"]), encoding="utf-8")
    args = [str(folder / "doc.txt"), str(folder / "schema.json"), str(folder / "cands.json")]
    for name, option in (("policy", "--policy"), ("judgments", "--judgments"),
                         ("references", "--references")):  # fmt: skip
        if packet.get(name) is not None:
            (folder / f"{name}.json").write_text(json.dumps(packet[name]), encoding="utf-8")
            args += [option, str(folder / f"{name}.json")]
    if packet.get("document_source") is not None:
        args += ["--document-source", packet["document_source"]]
    for i, pack in enumerate(packet.get("packs") or []):
        (folder / f"pack{i}.json").write_text(json.dumps(pack), encoding="utf-8")
        args += ["--pack", str(folder / f"pack{i}.json")]
    return args


def groundgate_cli(args: list[str], stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """groundgate's exit status, stdout bytes and stderr for one command line."""
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", newline="")
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            stack.enter_context(_stdin(stdin))
        try:
            code = groundgate.cli.main(args)
        except SystemExit as exc:  # argparse
            code = exc.code
    stdout.flush()
    return code or 0, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _stdin(data: bytes):
    saved, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = saved
