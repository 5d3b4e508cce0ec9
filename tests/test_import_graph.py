"""Imports go one way (docs/architecture.md, "Layers"): the graph of imports between
the modules of ``workbench`` and ``algorithms`` - module-level and inside functions,
``TYPE_CHECKING`` blocks left out - has no cycle, and the engine imports nothing of
the workbench above the formats and the input gate."""
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
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
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


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_imports_only_the_formats_the_gate_and_the_thread_chooser_from_outside():
    graph = import_graph()
    outside = {t for m, ts in graph.items() if m.startswith("workbench.engine") for t in ts
               if not t.startswith("workbench.engine")}
    assert outside <= {"workbench.formats", "workbench.gate", "workbench.threads"}, outside


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
