"""The top-level API: every name of ``workbench.__all__`` resolves, and the names type
checkers read (the ``TYPE_CHECKING`` imports of ``workbench/__init__.py``) are exactly
the names loaded on first use, from the same modules."""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import workbench as wb

INIT = Path(wb.__file__)


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    names: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names:
            module = f"workbench.{node.module}" if node.module else "workbench"
            # a submodule the top level names is its own module; any other name, the module holding it
            names[alias.name] = f"{module}.{alias.name}" if alias.name in wb._SUBMODULES else module
    return names


def test_type_checkers_see_every_name_loaded_on_first_use():
    seen = _type_checking_imports()
    lazy = {**wb._ON_FIRST_USE, **wb._SUBMODULES}
    assert seen == lazy


def test_all_lists_the_formats_and_every_name_loaded_on_first_use():
    from workbench.numbers import formats

    eager = [n for n in wb.__all__ if n not in wb._ON_FIRST_USE and n not in wb._SUBMODULES]
    assert all(getattr(wb, n) is getattr(formats, n) for n in eager)
    assert sorted(wb.__all__) == sorted([*eager, *wb._ON_FIRST_USE, *wb._SUBMODULES])


def test_every_public_name_resolves_to_what_its_module_defines():
    optional = {"torch"} if importlib.util.find_spec("torch") is None else set()
    for name in set(wb.__all__) - optional:
        obj = getattr(wb, name)
        module = wb._ON_FIRST_USE.get(name)
        if module is not None:
            assert obj is getattr(importlib.import_module(module), name), name
    assert wb.Model is importlib.import_module("workbench.engine.model").Model
    assert isinstance(wb.TFDPAParams(L=4), wb.TFDPAParams)


def test_subpackages_export_what_they_load_on_first_use():
    for name in ("workbench.probes", "workbench.sweep"):
        pkg = importlib.import_module(name)
        assert sorted(pkg.__all__) == sorted(pkg._LAZY), name
