"""``workbench presets [--device D] [--format F]``: the preset table of the matrix units."""

from __future__ import annotations

import argparse

from ..gate import cli_name

HELP = "print the preset table of the matrix units with sources"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench presets``."""
    parser.add_argument("--device", type=cli_name, help="device or architecture (H100, hopper, MI300X, cdna3, ...)")
    parser.add_argument("--format", dest="fmt", type=cli_name,
                        help="input format (fp16, bf16, fp8_e4m3, ...) or family (fp8, fp6, fp4: every format of it)")


def run_command(args: argparse.Namespace) -> int:
    """Print the presets, filtered by device and input format; 0."""
    from .. import catalogue
    from .table import render_table

    rows = list(catalogue.presets())
    if args.device is not None:
        arch = catalogue.architecture_of(args.device)
        rows = [r for r in rows if r["architecture"] == arch]
    if args.fmt is not None:
        family = catalogue.format_family(args.fmt)
        rows = [r for r in rows if r["in_format"] in family]
    print("Presets of the matrix units (default: returned by workbench.preset without instruction/variant)")
    print(render_table(rows, ["name", "devices", "kind", "L", "F", "rounding", "zero_exponent", "default", "source"]))
    return 0
