"""``workbench explain --device D --a ... --b ...``: one dot product step by step."""

from __future__ import annotations

import argparse

from ..numbers.validation import cli_float, cli_float_list, cli_name

HELP = "print one dot product step by step on a device's matrix unit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench explain``."""
    p = parser
    p.add_argument("--device", default=None, type=cli_name,
                   help="device or architecture with the format options, or a whole unit name: "
                        "DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] ('H100:bf16:fp32'), a catalogue name "
                        "('hopper/wgmma/bf16->fp32', as workbench presets prints it) or a unit file (.toml)")
    p.add_argument("--unit", default=None, metavar="UNIT",
                   help="a unit file (workbench.save_unit) or any unit name --device takes, instead of --device "
                        "and the formats")
    p.add_argument("--in-format", default=None, type=cli_name,
                   help="input format (default fp16, or the one input format of the --variant/--instruction)")
    p.add_argument("--out-format", default=None, type=cli_name, help="output format (default fp32)")
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
    from ..units import catalogue
    from ..numbers import formats

    if variant is None and instruction is None:
        return "fp16"
    arch = catalogue.architecture_of(device)
    out = formats.format(out_format).name
    found = {r.in_format for r in catalogue.records() if r.architecture == arch and r.out_format == out
             and (variant is None or r.variant == variant)
             and (instruction is None or r.instruction.lower().endswith(instruction.lower()))}
    return found.pop() if len(found) == 1 else "fp16"


def run_command(args: argparse.Namespace) -> int:
    """Print the preset and the trace of :func:`workbench.engine.explain`; 0."""
    from ..units import catalogue
    from ..engine import explain

    if (args.unit is None) == (args.device is None):
        raise ValueError("give --device (with the formats) or --unit UNIT, one of the two")
    whole = args.unit if args.unit is not None else args.device
    if args.unit is not None or ":" in whole or "->" in whole or whole.lower().endswith(".toml"):
        given = [f"--{k.replace('_', '-')}" for k in ("in_format", "out_format", "instruction", "variant")
                 if getattr(args, k) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: {whole!r} names a whole unit (its formats and instruction); "
                             f"drop them")
        if whole.lower().endswith(".toml"):
            from ..units.unitfile import read_unit

            uf = read_unit(whole)
            m = uf.model
            print(f"unit {uf.path} ({uf.provenance.origin}"
                  f"{': ' + uf.provenance.target if uf.provenance.target else ''}): {m.describe()}")
        else:
            from ..units import resolve

            m = resolve(whole, what="--unit" if args.unit is not None else "--device")
            name = getattr(m, "name", "")
            print(f"preset {name} ({getattr(m, 'source', '')})" if name else f"unit {m.describe()}")
    else:
        out_format = args.out_format or "fp32"
        in_format = args.in_format or _only_in_format(args.device, out_format, args.instruction, args.variant)
        m = catalogue.preset(args.device, in_format, out_format, instruction=args.instruction,
                             variant=args.variant)
        print(f"preset {m.name} ({m.source})")
    scales = {k: v for k, v in (("scale_a", args.scale_a), ("scale_b", args.scale_b)) if v is not None}
    if len(args.a) != len(args.b):
        raise ValueError(f"--a has {len(args.a)} values and --b {len(args.b)}; a dot product needs equal lengths")
    print(explain(args.a, args.b, args.c, m, **scales))
    return 0
