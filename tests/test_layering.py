"""The library's layering, read from the source (every import, function-local ones included):

1. Only ``xferlab.cli`` imports ``xferlab.cli``: the commands parse and print; the work is in the
   library, which the lab, the report and scripts call without the CLI.
2. The module graph has no cycle. An edge A -> B is any import of B in A, at module level or inside
   a function (a lazy import, for start-up time or an optional library, is fine; one that hides a
   cycle is not). ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
   ``pkg``. A package's ``__init__`` importing its own submodules (re-exporting them) is not an edge
   back: a submodule importing its package's ``__init__`` and that ``__init__`` importing the
   submodule is how a package is built, so edges from ``pkg/__init__`` into ``pkg.*`` are left out."""

from __future__ import annotations

import ast
from pathlib import Path

from graphlib import CycleError, TopologicalSorter

ROOT = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "xferlab").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The xferlab modules ``name`` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `import xferlab.x.y` names a module, or a name in one
                target = target.rpartition(".")[0]
            if target.startswith("xferlab") and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        # a package re-exporting its own submodules is left out (module doc)
        graph[name] = {t for t in _imports(name, path) if not (path.name == "__init__.py" and t.startswith(name + "."))}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (its modules in order, the first repeated at the end), or []."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(error.args[1])
    return []


def test_graph_sees_lazy_imports():
    # The reader must count function-local imports, or rule 2 proves nothing: report.plots imports
    # matplotlib lazily, and the report's collect imports report.plots inside functions.
    assert "xferlab.report.plots" in _imports("xferlab.report.collect", MODULES["xferlab.report.collect"])
    assert "xferlab.store.connect" in _imports("xferlab.store", MODULES["xferlab.store"]) or \
        any(t.startswith("xferlab.store.") for t in _imports("xferlab.store", MODULES["xferlab.store"]))


def test_only_cli_imports_cli():
    offenders = sorted(f"{name} imports {target}" for name, path in MODULES.items() if not name.startswith(("xferlab.cli", "xferlab.__main__"))
                       for target in _imports(name, path) if target.startswith("xferlab.cli"))
    assert not offenders, offenders


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert not cycle, " -> ".join(reversed(cycle))


def test_cycle_detector_finds_a_cycle():
    # A made-up cycle through three modules is found (so an empty result above means something).
    assert len(_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})) == 4
