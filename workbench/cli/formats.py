"""``workbench formats [--all-columns]``: the table of number formats."""

from __future__ import annotations

import argparse

HELP = "print the table of number formats"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench formats``."""
    parser.add_argument("--all-columns", action="store_true", help="also print encoding and description")


def run_command(args: argparse.Namespace) -> int:
    """Print the table (Khattak & Mikaitis 2025 Table I; Fasi et al. 2021 Table 3); 0."""
    from ..numbers import formats
    from .table import fit_text, render_table

    cols = ["name", "bits", "p", "emin", "emax", "largest", "smallest_normal", "smallest_subnormal",
            "unit_roundoff", "inf_nan"]
    if args.all_columns:
        cols += ["encoding", "description"]
    print(fit_text("Number formats (cf. Khattak & Mikaitis 2025 Table I; Fasi et al. 2021 Table 3)"))
    print(render_table(formats.format_table(), cols))
    return 0
