"""Every notebook of notebooks/ is a jupytext pair: the outputs-free .ipynb and its
percent-format .py hold the same cells; both pass ruff; the parameters cell is typed so
that papermill's --help-notebook shows every parameter with its type."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import papermill as pm
import pytest

from workbench.studies.reproduce import NOTEBOOKS, notebooks_dir

NB_DIR = notebooks_dir()
NOTEBOOK_FILES = sorted(NB_DIR.glob("*.ipynb"))
SCRIPT_FILES = sorted(p for p in NB_DIR.glob("*.py") if "jupytext:" in p.read_text()[:400])


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", []))) for c in nb.cells]


def test_every_notebook_has_its_paired_script_and_no_string_builder():
    assert NOTEBOOK_FILES, f"no notebooks in {NB_DIR}"
    assert {p.stem for p in NOTEBOOK_FILES} == {p.stem for p in SCRIPT_FILES}
    assert set(NOTEBOOKS) <= {p.stem for p in NOTEBOOK_FILES}
    assert not (NB_DIR / "_build.py").exists()


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.stem)
def test_notebook_and_script_agree(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    script = jupytext.read(path.with_suffix(".py"))
    assert _cells(nb) == _cells(script), f"{path.name} and {path.stem}.py differ: run jupytext --sync {path}"
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert nb.metadata["kernelspec"]["language"] == "python"
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None, f"{path.name}: outputs not stripped"


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.stem)
def test_parameters_are_typed_for_papermill(path: Path):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: expected one cell tagged 'parameters'"
    assigned: dict[str, str | None] = {}  # name -> annotation
    for node in ast.parse(tagged[0].source).body:
        if isinstance(node, ast.AnnAssign):
            assigned[node.target.id] = ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign):
            assigned[node.targets[0].id] = None
    assert {"quick", "out_dir", "sweep_dir", "workers"} <= set(assigned), path.name
    untyped = [name for name, ann in assigned.items() if ann is None]
    assert not untyped, f"{path.name}: parameters without a type annotation: {untyped}"
    seen = {name: p["inferred_type_name"] for name, p in pm.inspect_notebook(str(path)).items()}
    assert seen == assigned, f"{path.name}: papermill reads {seen}, the cell declares {assigned}"


def test_ruff_passes_on_scripts_and_notebooks():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    root = NB_DIR.parent
    r = subprocess.run([ruff, "check", "--no-cache", "notebooks", "workbench/studies/notebook_support.py", "workbench/studies/explorer.py"],
                       cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
