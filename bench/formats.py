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

- ``in place``: the whole in-process run (``run_in_process``: planning, batches, units,
  segments, index) over the LangExtract file read where it lies (``corpus.yaml`` beside it)
  and over the same records imported as the native layout, each into a fresh output (every
  unit computed), alternated ``--reps`` times; units/s of each and their ratio (wall and CPU
  seconds, the median; the goal is >= 0.95x).
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
from groundswell.shared.runs.inprocess import run_in_process  # noqa: E402
from groundswell.shared.runs.units import UnitRunner  # noqa: E402
from groundswell.shared.settings import Settings, get_settings  # noqa: E402
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
        in_place(work, source, schema, corpus, args.reps)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def in_place(work: Path, source: Path, schema: Path, imported: Path, reps: int) -> None:
    """Units/s of a run over the LangExtract file read in place vs over its imported layout."""
    folder = work / "inplace"
    folder.mkdir()
    shutil.copy(source, folder / "lx.jsonl")
    shutil.copy(schema, folder / "schema.json")
    (folder / "corpus.yaml").write_text("format: langextract\nschema: schema.json\n")

    def one(corpus: Path) -> tuple[float, float, int]:
        out = work / "out-run"
        shutil.rmtree(out, ignore_errors=True)
        cpu, wall = time.process_time(), time.perf_counter()
        summary = run_in_process(str(corpus), "default@1", str(out), Settings(storage_url=str(out)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        units = summary["units"]
        assert all(u["computed"] == u["done"] for u in units.values()), units
        return wall, cpu, sum(u["done"] for u in units.values())

    times: dict[str, list[tuple[float, float, int]]] = {"native": [], "inplace": []}
    for _ in range(max(reps, 3)):  # alternated, so that both see the same machine
        times["native"].append(one(imported))
        times["inplace"].append(one(folder))
    print(f"{'whole run, in process':<34} {'wall s':>8} {'cpu s':>8} {'units/s':>9}")
    rate = {}
    for name, runs in times.items():
        wall = statistics.median(t[0] for t in runs)
        cpu = statistics.median(t[1] for t in runs)
        units = runs[0][2]
        rate[name] = (units / wall, units / cpu)
        label = "native layout (imported)" if name == "native" else "LangExtract JSONL in place"
        print(f"{label:<34} {wall:>8.2f} {cpu:>8.2f} {units / wall:>9.1f}")
    print(
        f"in place vs native layout: {rate['inplace'][0] / rate['native'][0]:.2f}x units/s "
        f"(wall), {rate['inplace'][1] / rate['native'][1]:.2f}x (CPU); goal >= 0.95x"
    )


if __name__ == "__main__":
    main_()
