"""``workbench experiments``: the experiment files the package carries, by name.

Each runs with ``workbench sweep NAME`` from any folder (``--quick`` for its small grid).
"""
from __future__ import annotations

import argparse

HELP = "list the experiment files the package carries (run one with: workbench sweep NAME --quick)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``workbench experiments`` takes no options."""


def run_command(args: argparse.Namespace) -> int:
    """Print each bundled experiment: name, task counts (full and ``--quick``), description, file."""
    from ..sweep.resources import experiment_files
    from ..sweep import spec
    from .table import fit_text, render_table

    files = experiment_files()
    rows = []
    for name, path in files.items():
        raw = spec.read(path)
        rows.append({"name": name, "tasks": len(spec.parse(path)), "quick": len(spec.parse(path, quick=True)),
                     "description": " ".join(str(raw.get("description", "")).split())})
    print(fit_text("Experiments the package carries (workbench sweep NAME [--quick]; files in "
                   f"{next(iter(files.values())).parent})"))
    print(render_table(rows, ["name", "tasks", "quick", "description"]))
    return 0
