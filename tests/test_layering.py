"""The library's layering, read from the source (every import, function-local ones included):

1. Only ``xferlab.cli`` imports ``xferlab.cli``: the commands parse and print; the work is in the
   library, which the lab, the report and scripts call without the CLI.
2. The module graph has no cycle. An edge A -> B is any import of B in A, at module level or inside
   a function (a lazy import, for start-up time or an optional library, is fine; one that hides a
   cycle is not). ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
   ``pkg``. A package's ``__init__`` importing its own submodules (re-exporting them) is not an edge
   back: a submodule importing its package's ``__init__`` and that ``__init__`` importing the
   submodule is how a package is built, so edges from ``pkg/__init__`` into ``pkg.*`` are left out.
3. The packages (``xferlab.<name>``, a package or a top-level module) come in a declared order,
   :data:`ORDER`, lowest first: every import between two packages goes down that order, so a package
   cycle (measure importing report, report importing measure) fails, and so does a new package that
   is not placed in it."""

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
    # The reader must count function-local imports, or rules 2 and 3 prove nothing: plots imports
    # matplotlib lazily, and the report's collect imports plots inside functions.
    assert "xferlab.plots.measured" in _imports("xferlab.report.collect", MODULES["xferlab.report.collect"])
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


#: xferlab's packages (a package or a top-level module under src/xferlab), lowest first: each may import
#: only those before it. ``xferlab`` is the package's own ``__init__`` (its ``__version__``). The leaves
#: at the bottom serve everything above: ``outputs`` checks output paths and writes files whole (strict
#: JSON included), ``plots`` draws every figure; ``report`` (the HTML report) is near the top, so that
#: nothing measuring or modelling depends on reporting.
ORDER = ["xferlab", "choices", "errors", "units", "files", "outputs", "schemas", "signals", "stats", "links", "plots", "system", "sim",
         "store", "measure", "fit", "advise", "runtime", "scenarios", "studies", "sweep", "campaign", "report",
         "lab", "cli", "__main__"]


def _package(module: str) -> str:
    """``xferlab.measure.run`` -> ``measure``; ``xferlab`` (its ``__init__``) -> ``xferlab``."""
    return module.split(".")[1] if "." in module else module


def _upward(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """Every import in ``graph`` (module -> modules) between two packages that does not go down
    ``order`` (a package not in ``order`` is named too), as 'a.b imports c.d (a above c? no)' lines."""
    rank = {name: i for i, name in enumerate(order)}
    out = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            a, b = _package(module), _package(target)
            if a == b:
                continue
            missing = [p for p in (a, b) if p not in rank]
            if missing:
                out.append(f"{module} imports {target}: package {missing[0]} is not in ORDER")
            elif rank[a] < rank[b]:
                out.append(f"{module} imports {target}: {a} is below {b} in ORDER")
    return out


def test_packages_in_order():
    upward = _upward(_graph(), ORDER)
    assert not upward, "\n".join(upward)
    assert sorted(ORDER) == sorted({_package(m) for m in MODULES}), "ORDER names each package once, and only those"


def test_order_checker_finds_an_upward_import():
    # A made-up graph: measure importing report (upward), a package cycle (a -> b -> a: one of its
    # two edges goes up whatever the order), and a package the order does not name.
    graph = {"xferlab.measure.results": {"xferlab.report.plots", "xferlab.errors"},
             "xferlab.report.html": {"xferlab.measure.results"}, "xferlab.errors": set()}
    assert _upward(graph, ["errors", "measure", "report"]) == [
        "xferlab.measure.results imports xferlab.report.plots: measure is below report in ORDER"]
    assert _upward(graph, ["errors", "report", "measure"]) == [
        "xferlab.report.html imports xferlab.measure.results: report is below measure in ORDER"]
    assert _upward({"xferlab.a.x": {"xferlab.b"}}, ["b"]) == ["xferlab.a.x imports xferlab.b: package a is not in ORDER"]
