"""Imports go one way (docs/architecture.md, "Layers"): the graph of imports between
the modules of ``workbench`` and ``algorithms`` - every ``import`` and ``from ... import``
anywhere in a module: at module level, inside functions and under ``TYPE_CHECKING`` -
has no cycle, the engine imports nothing of the workbench above the formats and the
input gate, and no module imports the ``workbench`` facade itself (it re-exports every
layer, so it sits on top)."""
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


def test_the_engine_imports_only_the_formats_the_gate_and_the_thread_chooser_from_outside():
    graph = import_graph()
    outside = {t for m, ts in graph.items() if m.startswith("workbench.engine") for t in ts
               if not t.startswith("workbench.engine")}
    assert outside <= {"workbench.formats", "workbench.gate", "workbench.threads"}, outside


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


def test_the_thread_chooser_and_the_gate_import_nothing_of_the_workbench():
    graph = import_graph()
    for low in ("workbench.threads", "workbench.gate"):
        assert not {t for t in graph.get(low, ()) if t.startswith("workbench")}, low


def test_algorithms_import_no_higher_layer():
    graph = import_graph()
    higher = ("workbench.sweep", "workbench.probes", "workbench.discrimination", "workbench.cli", "workbench.torch")
    bad = {(m, t) for m, ts in graph.items() if m.startswith("algorithms") for t in ts
           if t == "workbench" or t.startswith(higher)}
    assert not bad, bad
