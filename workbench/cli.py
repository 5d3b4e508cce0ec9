"""Command line: ``workbench <command> ...``.

Thin by design: each command parses its arguments, calls the library and prints.
Commands register themselves in :data:`COMMANDS` as (help, add_arguments, run), or in
:data:`MODULE_COMMANDS` when a subpackage defines them.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from collections.abc import Callable, Sequence

from . import formats as _formats
from .gate import cli_float, cli_float_list, cli_name


def _fmt_number(v: object) -> str:
    """Numbers as the papers print them: powers of two as 2^k, others to 6 digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        mantissa, exponent = math.frexp(v)
        if mantissa == 0.5 and abs(exponent - 1) > 4:
            return f"2^{exponent - 1}"
        return f"{v:.6g}"
    return str(v)


def render_table(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> str:
    """Plain-text table of ``rows`` restricted to ``columns`` (used by several commands)."""
    cells = [[_fmt_number(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _formats_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-columns", action="store_true", help="also print encoding and description")


def _formats_run(args: argparse.Namespace) -> int:
    cols = ["name", "bits", "p", "emin", "emax", "largest", "smallest_normal", "smallest_subnormal",
            "unit_roundoff", "inf_nan"]
    if args.all_columns:
        cols += ["encoding", "description"]
    print("Number formats (cf. Khattak & Mikaitis 2025 Table I; Fasi et al. 2021 Table 3)")
    print(render_table(_formats.format_table(), cols))
    return 0


def _presets_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", type=cli_name, help="device or architecture (H100, hopper, MI300X, cdna3, ...)")
    p.add_argument("--format", dest="fmt", type=cli_name,
                   help="input format (fp16, bf16, fp8_e4m3, ...) or family (fp8, fp6, fp4: every format of it)")


def _presets_run(args: argparse.Namespace) -> int:
    from . import catalogue

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


def _explain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", required=True, type=cli_name, help="device or architecture")
    p.add_argument("--in-format", default=None, type=cli_name,
                   help="input format (default fp16, or the one input format of the --variant/--instruction)")
    p.add_argument("--out-format", default="fp32", type=cli_name)
    p.add_argument("--instruction", default=None, type=cli_name)
    p.add_argument("--variant", default=None, type=cli_name)
    p.add_argument("--a", required=True, type=cli_float_list, help="comma-separated values (decimal or hex floats)")
    p.add_argument("--b", required=True, type=cli_float_list, help="comma-separated values (decimal or hex floats)")
    p.add_argument("--c", default=0.0, type=cli_float, help="accumulator value (one decimal or hex float)")
    p.add_argument("--scale-a", default=None, type=cli_float_list,
                   help="scaled presets (MX, NVFP4): block scales of a, one per k_block elements (comma-separated)")
    p.add_argument("--scale-b", default=None, type=cli_float_list, help="scaled presets: block scales of b (comma-separated)")


def _only_in_format(device: str, out_format: str, instruction: str | None, variant: str | None) -> str:
    """The input format of a device's presets with this variant/instruction when there is
    only one (NVFP4: fp4_e2m1), else fp16."""
    from . import catalogue

    if variant is None and instruction is None:
        return "fp16"
    arch = catalogue.architecture_of(device)
    out = _formats.format(out_format).name
    found = {r.in_format for r in catalogue.records() if r.architecture == arch and r.out_format == out
             and (variant is None or r.variant == variant)
             and (instruction is None or r.instruction.lower().endswith(instruction.lower()))}
    return found.pop() if len(found) == 1 else "fp16"


def _explain_run(args: argparse.Namespace) -> int:
    from . import catalogue
    from .engine import explain

    in_format = args.in_format or _only_in_format(args.device, args.out_format, args.instruction, args.variant)
    m = catalogue.preset(args.device, in_format, args.out_format, instruction=args.instruction,
                         variant=args.variant)
    print(f"preset {m.name} ({m.source})")
    scales = {k: v for k, v in (("scale_a", args.scale_a), ("scale_b", args.scale_b)) if v is not None}
    if len(args.a) != len(args.b):
        raise ValueError(f"--a has {len(args.a)} values and --b {len(args.b)}; a dot product needs equal lengths")
    print(explain(args.a, args.b, args.c, m, **scales))
    return 0


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "formats": ("print the table of number formats", _formats_args, _formats_run),
    "presets": ("print the preset table of the matrix units with sources", _presets_args, _presets_run),
    "explain": ("print one dot product step by step on a device's matrix unit", _explain_args, _explain_run),
}


# Commands defined next to the code they drive: name -> module providing HELP,
# add_arguments(parser) and run_command(args).  Each module keeps its heavy imports
# inside run_command, so building the parser stays cheap.
MODULE_COMMANDS: dict[str, str] = {
    "sweep": "workbench.sweep.cli",
    "probe": "workbench.probes.cli",
    "discriminate": "workbench.discrimination_cli",
    "reproduce": "workbench.reproduce_cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_args, run) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(_run=run)
    for name, module_name in MODULE_COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error, already printed by argparse (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args._run(args)
    except (ValueError, TypeError, FileNotFoundError, ConnectionError) as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
