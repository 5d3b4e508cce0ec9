"""The files the package carries beside its code: ``notebooks/``, ``experiments/``, ``paper_data/``.

In a checkout of the repository they stay where they are, at the top of it.  A wheel
carries a copy of them under ``workbench/_data/`` (``setup.py`` copies them into the
build at wheel-build time, so git holds each file once): the reproduction notebooks
(``.ipynb``), the experiment files (``.toml``) and the published data the notebooks
compare with.  :func:`data_dir` finds a folder in either place, the package's copy
first, so ``workbench reproduce`` and ``workbench sweep NAME`` work from a
pip-installed wheel in any folder, and :func:`copy_notebooks` (``workbench notebooks
--copy DIR``) puts the notebooks where JupyterLab and papermill open them.

Imports nothing of the workbench: the sweep (experiment files), the studies and the command
line ask it for a folder.
"""
from __future__ import annotations

import importlib.resources
import shutil
from pathlib import Path

__all__ = ["BUNDLED", "copy_notebooks", "data_dir", "experiment_files", "experiment_path", "notebook_files"]

#: The top-level folders of the repository that the package carries, and what each holds.
BUNDLED: dict[str, str] = {
    "notebooks": "the reproduction notebooks and the explorer (workbench reproduce, workbench notebooks)",
    "experiments": "the experiment files (workbench sweep NAME)",
    "paper_data": "the published data the notebooks compare with",
}


def data_dir(name: str) -> Path:
    """The folder ``name`` (a key of :data:`BUNDLED`): the wheel's ``workbench/_data/<name>``
    when the package carries it, else ``<name>/`` of the checkout this package is imported
    from.  Raises ValueError for another name and FileNotFoundError when neither exists."""
    if name not in BUNDLED:
        raise ValueError(f"unknown data folder {name!r}; expected one of {', '.join(BUNDLED)}")
    package = importlib.resources.files("workbench")
    bundled = package / "_data" / name
    if isinstance(bundled, Path) and bundled.is_dir():
        return bundled
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / name).is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout / name
    raise FileNotFoundError(f"the package's {name}/ folder is missing: neither {bundled} (a wheel's copy) nor "
                            f"{checkout / name} (a checkout) exists; reinstall the package")


def experiment_files() -> dict[str, Path]:
    """Bundled experiment name -> its file (``experiments/<name>.toml``), sorted by name."""
    return {p.stem: p for p in sorted(data_dir("experiments").glob("*.toml"))}


def experiment_path(name_or_path: str | Path) -> Path:
    """An experiment file given by path, or by the name of a bundled experiment
    (``"fig7_multiword"`` or ``"fig7_multiword.toml"``; see :func:`experiment_files`).

    A path that exists wins over a bundled name.  Raises FileNotFoundError naming the
    argument and the bundled names when it is neither; for a path that does not exist but
    whose file is named after a bundled experiment (``experiments/fig7_multiword.toml``
    outside a checkout), the error says that the bundled name runs it."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    text = str(name_or_path)
    bundled = experiment_files()
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    if "/" not in text and "\\" not in text:
        if stem in bundled:
            return bundled[stem]
        raise FileNotFoundError(f"experiment {text!r} is neither a file nor a bundled experiment; "
                                f"expected a path to a TOML file or one of {', '.join(bundled)}")
    if stem in bundled:
        raise FileNotFoundError(f"experiment file {text!r} does not exist here; the bundled experiment of that "
                                f"name runs as {stem!r}")
    raise FileNotFoundError(f"experiment file {text!r} does not exist")


def notebook_files() -> dict[str, Path]:
    """Bundled notebook name -> its file (``notebooks/<name>.ipynb``: the reproduction
    notebooks of ``workbench reproduce`` and the explorer, ``explore``), sorted by name."""
    return {p.stem: p for p in sorted(data_dir("notebooks").glob("*.ipynb"))}


def copy_notebooks(dest: str | Path, *, force: bool = False) -> list[Path]:
    """Copy every notebook of :func:`notebook_files` into the folder ``dest`` (created) and
    return the copies.  Refuses, with FileExistsError naming them and copying nothing, when
    files of those names are there already, unless ``force`` (then they are overwritten)."""
    dest = Path(dest)
    files = notebook_files()
    targets = {dest / src.name: src for src in files.values()}
    present = [t.name for t in targets if t.exists()]
    if present and not force:
        raise FileExistsError(f"{dest} already holds {', '.join(present)}: nothing copied")
    dest.mkdir(parents=True, exist_ok=True)
    for target, src in targets.items():
        shutil.copyfile(src, target)
    return list(targets)
