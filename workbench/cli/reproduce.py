"""``workbench reproduce [--quick | --full] [--only NAME] [--out DIR]``: execute the reproduction notebooks.

Kept light: papermill loads inside :func:`run_command`.
"""
from __future__ import annotations

import argparse

from ..numbers.validation import cli_positive_int

HELP = "regenerate the papers' figures and tables (executes the notebooks with papermill)"
SHOWS_COMPILING = True     # its progress bar says "compiling kernels (first run only)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench reproduce``."""
    from ..studies.reproduce import NOTEBOOKS

    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="quick", action="store_true", default=True,
                      help="small sizes, a few minutes on 2 cores (default)")
    mode.add_argument("--full", dest="quick", action="store_false", help="the papers' full sizes (hours)")
    parser.add_argument("--only", metavar="NAME", action="append", choices=list(NOTEBOOKS),
                        help=f"run only this notebook (repeatable): {', '.join(NOTEBOOKS)}")
    parser.add_argument("--results-dir", default="results", help="executed notebooks and sweep results (default results)")
    parser.add_argument("--figures-dir", default=None,
                        help="figures and tables (default figures/quick for --quick, which git ignores, "
                             "and figures for --full)")
    parser.add_argument("--workers", type=cli_positive_int, default=2, help="worker processes of the sweeps (default 2)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="the folder relative --results-dir and --figures-dir are taken in (default: the "
                             "working directory)")


def run_command(args: argparse.Namespace) -> int:
    """Run the notebooks; print the files written; 0 on success, 1 when a notebook failed."""
    from ..studies.reproduce import reproduce

    try:
        import papermill as pm
        files = reproduce(quick=args.quick, only=args.only, results_dir=args.results_dir,
                          figures_dir=args.figures_dir, workers=args.workers, out=args.out)
    except pm.PapermillExecutionError as exc:
        print(f"workbench reproduce: a notebook failed: {exc.ename}: {exc.evalue}")
        return 1
    for f in files:
        print(f)
    return 0
