"""The structure of groundswell.shared, from its own imports (tests/import_graph.py).

A folder of shared/ or a loose module of it is one package; an import inside a function counts
as much as one at the top of a file; only ``if TYPE_CHECKING:`` imports are left out.
"""

from __future__ import annotations

import ast

from tests.import_graph import (
    REPO,
    SHARED,
    _statements,
    cycles,
    describe,
    imports,
    module_files,
    module_graph,
    package_graph,
    package_of,
)

# The knots of package cycles still present (strict: a knot that appears, grows, shrinks or
# goes fails the test). Issue 27 broke the last one; a new knot is a design change to argue.
KNOWN_CYCLES: list[frozenset[str]] = []
SHARED_RUNS = f"{SHARED}.runs"
# Every domain stands on these; they import nothing of shared/ but each other. quick_settings
# reads a setting as settings does without building the class (start-up paths).
FLOOR = frozenset({"settings", "storage", "quick_settings"})


def test_no_package_cycle_beyond_the_known_ones() -> None:
    graph = package_graph(imports())
    found = cycles(graph)
    new = [knot for knot in found if knot not in KNOWN_CYCLES]
    gone = [knot for knot in KNOWN_CYCLES if knot not in found]
    message = []
    if new:
        message.append("package cycles among groundswell.shared's packages:")
        message.extend(describe(knot, graph) for knot in new)
    if gone:
        message.append(
            "no longer a knot, take it out of KNOWN_CYCLES: "
            + "; ".join(", ".join(sorted(knot)) for knot in gone)
        )
    assert not message, "\n".join(message)


# Packages whose modules import each other without a circle, counting even the imports only
# a type checker reads: a circle inside one is broken by moving the shared piece down.
ACYCLIC_INSIDE = frozenset(
    {"admit", "guarded", "ledger", "read", "repair", "settings", "storage", "text", "verify"}
)
# Module circles still inside them (strict, like KNOWN_CYCLES). The one left is of annotations
# only: CheckedPath and Tables are parts the Admitter makes of itself, and name its type (and
# Decision's) under TYPE_CHECKING; nothing imports back at run time.
KNOWN_MODULE_CYCLES: list[frozenset[str]] = [
    frozenset({"admit.checked", "admit.engine", "admit.tables"}),
]


def test_no_module_circle_inside_the_core_packages() -> None:
    graph = module_graph(imports(type_checking=True))
    found = []
    for knot in cycles(graph):
        owners = {package_of(module) for module in knot}
        if len(owners) == 1 and owners <= ACYCLIC_INSIDE:
            found.append(frozenset(m.removeprefix("groundswell.shared.") for m in knot))
    new = [knot for knot in found if knot not in KNOWN_MODULE_CYCLES]
    gone = [knot for knot in KNOWN_MODULE_CYCLES if knot not in found]
    message = [describe(frozenset(f"groundswell.shared.{m}" for m in k), graph) for k in new]
    if gone:
        message.append(
            "no longer a circle, take it out of KNOWN_MODULE_CYCLES: "
            + "; ".join(", ".join(sorted(knot)) for knot in gone)
        )
    assert not message, "\n".join(message)


def test_settings_and_storage_are_the_floor() -> None:
    graph = package_graph(imports())
    above = {
        f"{node} -> {target}: {edges[0].where()} imports {edges[0].imported}"
        for node in FLOOR
        for target, edges in graph.get(node, {}).items()
        if target not in FLOOR
    }
    assert not above, "the floor imports a domain:\n" + "\n".join(sorted(above))


# Readers of runs: what reads a finished or running run (pages, receipts, the report, review,
# exports, gates, hooks, lineage). They stand on what a run wrote (RUN_RECORDS) and import no
# machinery of runs/; runs/ imports none of them (nor the CLI), so each side changes alone.
READERS = frozenset({"results", "report", "review", "gates", "export", "hooks", "lineage"})


def test_readers_of_a_run_stand_on_its_records_only() -> None:
    from groundswell.shared.results.models import RUN_RECORDS

    records = {f"{SHARED_RUNS}.{name}" for name in RUN_RECORDS}
    wrong = []
    for edge in imports():
        source, target = package_of(edge.importer), package_of(edge.imported)
        if source in READERS and target == "runs" and edge.imported not in records:
            wrong.append(f"{edge.where()}: a reader imports {edge.imported}")
        if source == "runs" and target in READERS | {"cli", "upkeep"}:
            wrong.append(f"{edge.where()}: runs/ imports the reader {edge.imported}")
    assert not wrong, "\n".join(wrong)
    assert all((REPO / "shared" / "runs" / f"{name}.py").is_file() for name in RUN_RECORDS)


def test_the_builder_counts_lazy_imports_and_leaves_type_checking_out() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import a\n"
        "if TYPE_CHECKING:\n"
        "    import b\n"
        "else:\n"
        "    import c\n"
        "def f():\n"
        "    from d import e\n"
    )
    names = [
        alias.name if isinstance(s, ast.Import) else s.module
        for s in _statements(ast.parse(source))
        for alias in s.names
    ]
    assert names == ["typing", "a", "c", "d"]
    assert cycles({"x": {"y": []}, "y": {"z": [], "x": []}, "z": {}}) == [frozenset({"x", "y"})]


def test_a_loose_module_and_a_folder_are_one_package_each() -> None:
    graph = package_graph(imports())
    # shared/runs/plan.py needs shared/storage/: one edge runs -> storage; and cli is a node.
    assert "storage" in graph["runs"]
    assert all("." not in node for node in graph)
    assert "cli" in graph


# Modules of runs/ that may spell a kind's name, each with why: ``ledger`` is also the name of
# the run option that turns the ledger kind on (RunSpec.ledger).
NAMES_ALLOWED = {
    "groundswell.shared.runs.models": {"ledger"},
    "groundswell.shared.runs.schedules": {"ledger"},
}
REGISTRY = "groundswell.shared.runs.kinds"
KIND_CONSTANTS = {"READ", "VERIFY", "ADMIT", "LEDGER"}


def test_runs_names_no_kind_outside_the_registry() -> None:
    from groundswell.shared.runs import kinds

    names = set(kinds.names())
    assert {"read", "verify", "admit", "ledger"} <= names
    found = []
    for module, path in module_files().items():
        if package_of(module) != "runs" or module == REGISTRY:
            continue
        allowed = NAMES_ALLOWED.get(module, set())
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names - allowed:
                found.append(f"{path.name}:{node.lineno}: the kind name {node.value!r}")
            elif isinstance(node, ast.ImportFrom):
                constants = {a.name for a in node.names} & KIND_CONSTANTS
                if constants:
                    found.append(f"{path.name}:{node.lineno}: imports {', '.join(constants)}")
    for edge in imports():
        if package_of(edge.importer) == "runs" and package_of(edge.imported) == "units":
            found.append(f"{edge.where()}: imports the kind module {edge.imported}")
    assert not found, "runs/ names a kind outside runs/kinds.py:\n" + "\n".join(found)


def test_the_kind_modules_build_on_the_machinery_and_not_the_other_way() -> None:
    graph = package_graph(imports())
    assert "runs" in graph["units"]  # each kind registers itself and runs on the machinery
    assert "units" not in graph.get("runs", {})  # the registry loads them by name
