"""``workbench notebooks [--copy DIR [--force]]``: the notebooks the package carries.

Without options it lists them; ``--copy DIR`` puts a copy in ``DIR``, where JupyterLab and
papermill open them (``jupyter lab DIR/explore.ipynb``), also from a wheel installed
without a checkout of the repository.
"""
from __future__ import annotations

import argparse
import sys

HELP = "list the notebooks the package carries, or copy them into a folder (--copy DIR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench notebooks``."""
    parser.add_argument("--copy", metavar="DIR", default=None,
                        help="copy every notebook into DIR (created); existing files of the same names stop it")
    parser.add_argument("--force", action="store_true", help="with --copy: overwrite files of the same names")


def run_command(args: argparse.Namespace) -> int:
    """List the notebooks (name, what it does, file), or copy them and print the copies;
    0, or 2 when ``--copy`` would overwrite a file without ``--force``."""
    from ..studies.reproduce import NOTEBOOKS
    from ..sweep.resources import copy_notebooks, notebook_files
    from .table import render_table

    if args.force and args.copy is None:
        raise ValueError("--force goes with --copy DIR")
    if args.copy is not None:
        try:
            copies = copy_notebooks(args.copy, force=args.force)
        except FileExistsError as exc:
            print(f"workbench notebooks: error: {exc} (--force overwrites them)", file=sys.stderr)
            return 2
        for path in copies:
            print(path)
        return 0
    files = notebook_files()
    print("Notebooks the package carries (workbench notebooks --copy DIR copies them; workbench reproduce "
          f"runs them; files in {next(iter(files.values())).parent})")
    rows: list[dict[str, object]] = [{"name": name, "what it does": NOTEBOOKS.get(name, "")} for name in files]
    print(render_table(rows, ["name", "what it does"]))
    return 0
