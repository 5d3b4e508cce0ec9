"""Imports go one way (docs/architecture.md, "Layers"): the graph of imports between
the modules of ``workbench`` and ``algorithms`` - every ``import`` and ``from ... import``
anywhere in a module: at module level, inside functions and under ``TYPE_CHECKING`` -
has no cycle, goes down the layers of :data:`LAYERS` (the folders of the package), never
into an operation folder from outside ``engine/operations/``, and the engine imports
nothing of the workbench above the formats and the input checks; no module imports the
``workbench`` facade itself (it re-exports every layer, so it sits on top)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "algorithms")


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _known(name: str, mods: dict) -> str:
    while name not in mods and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t.split(".")[0] in PACKAGES:
                    graph[mod].add(_known(t, mods))
        graph[mod].discard(mod)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle():
    assert _cycles(import_graph()) == []


def test_the_graph_sees_imports_in_functions_and_under_type_checking(tmp_path, monkeypatch):
    pkg = tmp_path / "workbench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("import workbench.sub.d\n")
    (pkg / "sub" / "d.py").write_text("from ..a import Y\nfrom .. import formats\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    graph = import_graph()
    assert graph["workbench.a"] == {"workbench.b"}
    assert graph["workbench.b"] == {"workbench.c"}
    assert graph["workbench.c"] == {"workbench.sub.d"}
    assert graph["workbench.sub.d"] == {"workbench.a", "workbench"}
    assert _cycles(graph) == [["workbench.a", "workbench.b", "workbench.c", "workbench.sub.d"]]


def test_no_module_imports_the_facade():
    graph = import_graph()
    assert not {m for m, ts in graph.items() if "workbench" in ts}


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The layers, lowest first (docs/architecture.md, "Layers"): data flows numbers -> engine
#: -> units -> products -> algorithms -> probes/discrimination -> sweep -> torch ->
#: studies -> command line.  A module imports only modules of its own layer or below.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("workbench._version", "workbench._runtime"),
    ("workbench.numbers",),
    ("workbench.engine",),
    ("workbench.units",),
    ("workbench.matmul",),
    ("workbench.conformance",),
    ("algorithms",),
    ("workbench.probes",),
    ("workbench.discrimination",),
    ("workbench.sweep",),
    ("workbench.torch",),
    ("workbench.studies",),
    ("workbench.cli", "workbench.__main__"),
    ("workbench",),   # the facade: re-exports every layer
)


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the folder holding ``module`` (the longest prefix wins)."""
    best = (-1, -1)
    for i, floor in enumerate(LAYERS):
        for prefix in floor:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[1]:
                best = (i, len(prefix))
    if best[0] < 0:
        raise KeyError(f"{module} is in no layer of LAYERS: add its folder there and to docs/architecture.md")
    return best[0]


def layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The imports that go up the layers."""
    return {(m, t) for m, ts in graph.items() for t in ts if layer_of(t) > layer_of(m)}


def operation_folder_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports of an operation folder from outside ``engine/operations/`` (only the engine's
    ``__init__`` may, to register and re-export the operations)."""
    ops = "workbench.engine.operations"
    return {(m, t) for m, ts in graph.items() if not m.startswith(ops) and m != "workbench.engine"
            for t in ts if t.startswith(ops + ".")}


def test_every_module_sits_in_a_layer():
    for module in import_graph():
        layer_of(module)


def test_imports_go_down_the_layers():
    assert layer_violations(import_graph()) == set()


def test_nothing_outside_the_operations_imports_an_operation_folder():
    assert operation_folder_imports(import_graph()) == set()


def test_the_rules_fail_on_planted_violations(tmp_path, monkeypatch):
    """A number format that imports the sweep, and a probe that imports a kernel module,
    written into a copy of the tree's shape, are both reported."""
    pkg = tmp_path / "workbench"
    for folder in ("numbers", "sweep", "probes", "engine/operations/fma"):
        (pkg / folder).mkdir(parents=True)
    for init in ("", "numbers/", "sweep/", "probes/", "engine/", "engine/operations/", "engine/operations/fma/"):
        (pkg / init / "__init__.py").write_text("")
    (pkg / "numbers" / "formats.py").write_text("def f():\n    from ..sweep import runner\n")
    (pkg / "sweep" / "runner.py").write_text("from ..numbers import formats\n")
    (pkg / "probes" / "guess.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from ..engine.operations.fma import kernels\n")
    (pkg / "engine" / "operations" / "fma" / "kernels.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    graph = import_graph()
    assert layer_violations(graph) == {("workbench.numbers.formats", "workbench.sweep.runner")}
    assert operation_folder_imports(graph) == {("workbench.probes.guess", "workbench.engine.operations.fma.kernels")}


def test_the_engine_imports_only_the_formats_the_input_checks_and_the_thread_chooser_from_outside():
    graph = import_graph()
    outside = {t for m, ts in graph.items() if m.startswith("workbench.engine") for t in ts
               if not t.startswith("workbench.engine")}
    assert outside <= {"workbench.numbers.formats", "workbench.numbers.validation", "workbench._runtime.threads"}, outside


def test_the_shared_engine_imports_no_operation():
    """The machinery every operation shares (docs/architecture.md, "One folder per
    operation": ops, operands, layout, kernels, vector_chain, explain's driver, the GPU
    machinery ...) imports no operation folder; only the engine's ``__init__`` does, to
    register and re-export them."""
    graph = import_graph()
    ops = "workbench.engine.operations"
    bad = {(m, t) for m, ts in graph.items() if m.startswith("workbench.engine.") and not m.startswith(ops)
           for t in ts if t.startswith(ops)}
    assert not bad, bad


def test_the_thread_chooser_and_the_input_checks_import_nothing_of_the_workbench():
    graph = import_graph()
    for low in ("workbench._runtime.threads", "workbench.numbers.validation"):
        assert not {t for t in graph.get(low, ()) if t.startswith("workbench")}, low
