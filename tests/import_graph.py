"""The import graph of groundswell's own source, read from the files (AST), never by importing.

A reusable builder for the structure tests: every ``import`` and ``from ... import`` of a
package's modules, at module level or inside a function (a lazy import is still a dependency),
each with the file and line it stands on. Imports under ``if TYPE_CHECKING:`` are left out:
they never run, they only name types for annotations (``from __future__ import annotations``
keeps those names unevaluated).

At the level of packages, a folder of ``shared/`` (``runs/``, ``review/``) or a loose module
of it (``summary.py``, ``settings.py``) is one node: ``groundswell.shared.runs.execute`` belongs
to ``runs``, ``groundswell.shared.summary`` to ``summary``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Where each installed package's source sits in the repository (pyproject's package-dir).
SOURCES = {
    "groundswell.shared": REPO / "shared",
    "groundswell.api": REPO / "api",
    "groundswell.workers": REPO / "workers",
    "groundswell": REPO / "groundswell",
}
SHARED = "groundswell.shared"


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's dependency: ``importer`` (a module) needs ``imported`` (a module)."""

    importer: str
    imported: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def module_files(package: str = SHARED) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name (a package by its ``__init__.py``)."""
    root = SOURCES[package]
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([package, *parts])] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(
    node: ast.AST, type_checking: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under ``node``, at any depth; those only a type checker runs (under
    ``if TYPE_CHECKING:``) only with ``type_checking``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
            for other in child.orelse:
                yield from _statements(ast.Module(body=[other], type_ignores=[]), type_checking)
        else:
            yield from _statements(child, type_checking)


def imports(
    package: str = SHARED, *, within: str = "groundswell", type_checking: bool = False
) -> list[Import]:
    """The imports of ``package``'s modules that name a module under ``within`` (with
    ``type_checking``, also those under ``if TYPE_CHECKING:``).

    ``from a.b import c`` depends on ``a.b.c`` when that is a module, else on ``a.b``; a
    relative import is resolved against the importing module."""
    known: set[str] = set()
    for source in SOURCES:
        known.update(module_files(source))
    found: list[Import] = []
    for module, path in module_files(package).items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement in _statements(tree, type_checking):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            else:
                base = statement.module or ""
                if statement.level:
                    anchor = module.split(".") if is_package else module.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (statement.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in statement.names
                ]
            for target in dict.fromkeys(targets):
                if target == within or target.startswith(within + "."):
                    found.append(Import(module, target, path, statement.lineno))
    return found


def package_of(module: str, package: str = SHARED) -> str | None:
    """The node ``module`` belongs to: the first name below ``package`` (None for ``package``
    itself or a module outside it)."""
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".")[0]


def package_graph(
    found: Iterable[Import], package: str = SHARED
) -> dict[str, dict[str, list[Import]]]:
    """Node to node, each edge with the imports that make it (a node's own imports left out)."""
    graph: dict[str, dict[str, list[Import]]] = defaultdict(lambda: defaultdict(list))
    for edge in found:
        source, target = package_of(edge.importer, package), package_of(edge.imported, package)
        if source and target and source != target:
            graph[source][target].append(edge)
    return {node: dict(targets) for node, targets in graph.items()}


def module_graph(found: Iterable[Import]) -> dict[str, dict[str, list[Import]]]:
    """Module to module (a package by its ``__init__``), each edge with its imports."""
    graph: dict[str, dict[str, list[Import]]] = defaultdict(lambda: defaultdict(list))
    for edge in found:
        if edge.importer != edge.imported:
            graph[edge.importer][edge.imported].append(edge)
    return {node: dict(targets) for node, targets in graph.items()}


def cycles(graph: dict[str, dict[str, list[Import]]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node: each is one knot of cycles
    (every node of it reaches every other). Sorted by their smallest name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    knots: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            knot = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                knot.add(member)
                if member == node:
                    break
            if len(knot) > 1:
                knots.append(frozenset(knot))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(knots, key=min)


def describe(knot: frozenset[str], graph: dict[str, dict[str, list[Import]]]) -> str:
    """A knot's edges, each with the first file:line that makes it, for a failure message."""
    lines = [", ".join(sorted(knot)) + ":"]
    for source in sorted(knot):
        for target, edges in sorted(graph.get(source, {}).items()):
            if target in knot:
                first = min(edges, key=lambda e: (str(e.path), e.line))
                more = f" (+{len(edges) - 1} more)" if len(edges) > 1 else ""
                lines.append(
                    f"  {source} -> {target}: {first.where()} imports {first.imported}{more}"
                )
    return "\n".join(lines)
