"""Producer formats: what importing a LangExtract file costs beside the run over it.

    .venv/bin/python bench/formats.py [--documents 320] [--reps 1]

The LangExtract documents are the test fixtures (``tests/shared/formats/lx_fixtures.py``:
LangExtract's own data classes over real documents of ../shared/corpus, written by
``lx.io.save_annotated_documents``). Timed, wall seconds, the median of ``--reps``:

- ``import``: ``groundswell import langextract`` into a fresh folder (conversion, offsets,
  writing the layout), with and without the disagreement check (``--no-check``);
- ``run``: the verify and admit units of every document over the imported corpus, in process
  (``UnitRunner``), i.e. the native layout's cost;
- ``groundgate``: ``groundgate.adapters.langextract.admit_document`` on each line, the
  adapter's own conversion and admission, for scale.

The ratio printed is documents/s of import + run over documents/s of the run alone: what a
LangExtract corpus costs against the same records already in the native layout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from groundswell.shared.cli.app import main  # noqa: E402
from groundswell.shared.policies import PolicyRegistry  # noqa: E402
from groundswell.shared.runs.units import UnitRunner  # noqa: E402
from groundswell.shared.settings import get_settings  # noqa: E402
from groundswell.shared.storage import open_store  # noqa: E402
from tests.shared.formats import lx_fixtures  # noqa: E402


def timed(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=320)
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-formats-"))
    try:
        source, _ = lx_fixtures.write(get_settings().shared_corpus, work / "src", args.documents)
        schema = work / "schema.json"
        schema.write_text(json.dumps(lx_fixtures.SCHEMA))
        lines = source.read_text(encoding="utf-8").splitlines()

        def do_import(check: bool) -> Path:
            corpus = work / "corpus"
            shutil.rmtree(corpus, ignore_errors=True)
            extra = [] if check else ["--no-check"]
            got = CliRunner().invoke(
                main,
                [
                    "import",
                    "langextract",
                    str(source),
                    "--to",
                    str(corpus),
                    "--schema",
                    str(schema),
                    *extra,
                ],
            )
            assert got.exit_code == 0, got.output
            return corpus

        t_check = timed(lambda: do_import(True), args.reps)
        t_plain = timed(lambda: do_import(False), args.reps)
        corpus = do_import(False)

        def run() -> None:
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            output = open_store(str(out))
            registry = PolicyRegistry(output)
            registry.ensure_builtins()
            runner = UnitRunner(open_store(str(corpus)), output, registry.resolve("default@1"))
            for line in lines:
                doc_id = json.loads(line)["document_id"]
                runner.unit("verify", doc_id)
                runner.unit("admit", doc_id)

        t_run = timed(run, args.reps)
        from groundgate.adapters.langextract import admit_document
        from groundgate.model import PacketError

        def oracle() -> None:
            for line in lines:
                doc = json.loads(line)
                with contextlib.suppress(PacketError):  # the adapter refuses a non-NFC text
                    admit_document(doc, lx_fixtures.SCHEMA)

        t_gg = timed(oracle, args.reps)
        n = len(lines)
        size = source.stat().st_size
        print(f"{n} LangExtract documents, {size / 1e6:.1f} MB")
        print(f"{'step':<34} {'seconds':>8} {'docs/s':>9}")
        for name, t in (
            ("import (with disagreement check)", t_check),
            ("import --no-check", t_plain),
            ("run: verify + admit units", t_run),
            ("groundgate admit_document", t_gg),
        ):
            print(f"{name:<34} {t:>8.2f} {n / t:>9.1f}")
        print(f"import + run vs run alone: {t_run / (t_plain + t_run):.2f}x (--no-check), "
              f"{t_run / (t_check + t_run):.2f}x (with the check)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main_()
