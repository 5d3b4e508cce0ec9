"""Session set-up for the default test run: compile the engine's kernels on both cores
first (see ``tests/warm_kernels.py``).  Only a run of the whole suite warms up (a run of
chosen files compiles just what it calls); ``WORKBENCH_TEST_WARMUP=0`` turns it off.

Tests that need an optional extra carry its marker (:data:`EXTRAS`), so that CI selects
them once the extras are installed (``.ci/run``: ``-m "needs_torch or needs_oracle or
needs_smt"``) after the default run of README (b), where they skip.  A test is marked when
``pytest.importorskip`` names one of the extra's modules in its module's top level, in
the test, in a fixture it uses or in a function of its module that these call (found in
the source); a test whose skip takes another form (a ``skipif``) carries the marker
itself."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from compile_log import install_from_env

_HERE = Path(__file__).resolve().parent

#: marker -> the top-level modules of its extra that tests ask for with pytest.importorskip
#: (the markers and the commands that install the extras: [tool.pytest.ini_options] markers)
EXTRAS: dict[str, tuple[str, ...]] = {
    "needs_torch": ("torch", "torchao", "sklearn"),
    "needs_oracle": ("mmasim",),
    "needs_smt": ("z3",),
}
_MARKER_OF = {module: marker for marker, modules in EXTRAS.items() for module in modules}


def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", {}).get("workerid")
    install_from_env("tests" if worker is None else f"tests {worker}")


def _whole_suite(config: pytest.Config) -> bool:
    return all(Path(arg).is_dir() for arg in config.args)


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):   # a pytest-xdist worker: the controller warmed up
        return
    if os.environ.get("WORKBENCH_TEST_WARMUP", "1") == "0" or not _whole_suite(session.config):
        return
    if session.config.option.collectonly:        # nothing runs: nothing to compile (it cost a cold compile)
        return
    procs = [subprocess.Popen([sys.executable, str(_HERE / "warm_kernels.py"), group], cwd=_HERE.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for group in ("1", "2")]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            warnings.warn(f"kernel warm-up {proc.args[-1]!r} failed (the tests compile on first use): "
                          f"{err.strip().splitlines()[-1] if err.strip() else proc.returncode}", stacklevel=1)


def _skipped_extras(node: ast.AST) -> set[str]:
    """The markers of the extras whose modules ``pytest.importorskip`` calls under ``node`` name."""
    found = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name != "importorskip":
            continue
        args = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "modname")]
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                marker = _MARKER_OF.get(arg.value.split(".")[0])
                if marker:
                    found.add(marker)
    return found


@functools.cache
def _source_index(path: str) -> tuple[frozenset[str], dict[str, ast.AST]]:
    """A test module's (or conftest's) extras asked for at its top level, and its functions
    and methods by qualified name."""
    tree = ast.parse(Path(path).read_text(), filename=path)
    defs: dict[str, ast.AST] = {}
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            defs.update({f"{node.name}.{m.name}": m for m in node.body
                         if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))})
        else:
            top |= _skipped_extras(node)
    return frozenset(top), defs


@functools.cache
def _function_extras(path: str, qualname: str) -> frozenset[str]:
    """The extras function ``qualname`` of the file ``path`` asks for, with those of the
    functions of the same file it calls (by name, transitively)."""
    _, defs = _source_index(path)
    found: set[str] = set()
    todo, seen = [qualname], set()
    while todo:
        name = todo.pop()
        node = defs.get(name)
        if node is None or name in seen:
            continue
        seen.add(name)
        found |= _skipped_extras(node)
        todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs]
    return frozenset(found)


def extras_needed(item: pytest.Item) -> set[str]:
    """The markers of :data:`EXTRAS` that test ``item`` needs: given explicitly, or found by
    its ``pytest.importorskip`` calls (see the module docstring)."""
    found = {m.name for m in item.iter_markers() if m.name in EXTRAS}
    if not isinstance(item, pytest.Function):
        return found
    path = str(item.path)
    found |= _source_index(path)[0]
    name = item.originalname if item.cls is None else f"{item.cls.__name__}.{item.originalname}"
    found |= _function_extras(path, name)
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for fixturedef in defs:
            func = inspect.unwrap(fixturedef.func)
            where = inspect.getsourcefile(func)
            if where and Path(where).resolve().parent == _HERE:     # the tests' own fixtures, not pytest's
                found |= _function_extras(where, func.__qualname__)
    return found


@pytest.hookimpl(tryfirst=True)     # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        given = {m.name for m in item.iter_markers()}
        for marker in sorted(extras_needed(item) - given):
            item.add_marker(marker)


@pytest.fixture(autouse=True)
def _terminal_of_100_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI wraps its tables to the terminal (``COLUMNS``, else the terminal's size):
    the tests read them at the documented 100 columns, whatever terminal - or xdist
    worker - runs them; a test of another width sets its own."""
    monkeypatch.setenv("COLUMNS", "100")
