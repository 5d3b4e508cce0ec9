"""``workbench presets [--device D] [--format F]``: the preset table of the matrix units."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from ..numbers.validation import cli_name

HELP = "print the preset table of the matrix units: each kind's own parameters, sources with --wide"

_OUTPUTS = ("text", "csv", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench presets``."""
    from ..units.catalogue import PRESET_LEGEND

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = PRESET_LEGEND
    parser.add_argument("--device", type=cli_name, help="device or architecture (H100, hopper, MI300X, cdna3, ...)")
    parser.add_argument("--format", dest="fmt", type=cli_name,
                        help="csv or json: machine-readable output, every parameter the kind reads as a field; "
                             "text (default) fits the terminal (COLUMNS; 100 when not a terminal); any other "
                             "value filters by input format as --in-format does (kept for old command lines)")
    parser.add_argument("--in-format", dest="in_fmt", type=cli_name,
                        help="input format (fp16, bf16, fp8_e4m3, ...) or family (fp8, fp6, fp4: every format of it)")
    parser.add_argument("--wide", action="store_true",
                        help="one line per preset with its devices and source (wider than a terminal)")
    parser.add_argument("--evidence", action="store_true",
                        help="print what each preset was checked against and how much (GPU vectors, real-GPU "
                             "witness, MMA-Sim, papers) instead of the table")


def run_command(args: argparse.Namespace) -> int:
    """Print the presets, filtered by device and input format; 0."""
    from ..units import catalogue
    from ..engine.model import PARAM_NAMES
    from .table import fit_text, terminal_width

    rows = list(catalogue.presets())
    if args.device is not None:
        arch = catalogue.architecture_of(args.device)
        rows = [r for r in rows if r["architecture"] == arch]
    output = "text"
    in_fmt = args.in_fmt
    if args.fmt is not None and args.fmt.lower() in _OUTPUTS:
        output = args.fmt.lower()
    elif args.fmt is not None:
        if in_fmt is not None:
            raise ValueError(f"--format {args.fmt!r} and --in-format {in_fmt!r}: give the input format once "
                             f"(--format takes {', '.join(_OUTPUTS)} or, as before, an input format)")
        in_fmt = args.fmt
    if in_fmt is not None:
        family = catalogue.format_family(in_fmt)
        rows = [r for r in rows if r["in_format"] in family]
    if args.evidence:
        keep = {r["name"] for r in rows}
        lines = ["Evidence per preset (counts derived from the test data; workbench.Preset.evidence)"]
        for rec in catalogue.records():
            if rec.name in keep:
                lines.append(rec.name)
                lines += [f"  {e.summary()}" for e in rec.evidence]
        print(fit_text("\n".join(lines)))
        return 0
    recs = [rec for rec in (catalogue.by_name(r["name"]) for r in rows) if rec is not None]
    if output == "json":
        print(json.dumps([_record(r) for r in recs], indent=1))
        return 0
    if output == "csv":
        params = [n for n in PARAM_NAMES if n not in ("kind", "in_format", "out_format")]
        head = ["name", "unit_string", "architecture", "devices", "instruction", "variant", "default", "kind",
                "in_format", "out_format", *params, "source"]
        w = csv.DictWriter(sys.stdout, fieldnames=head, lineterminator="\n")
        w.writeheader()
        for rec in recs:
            d = _record(rec)
            w.writerow({**{k: v for k, v in d.items() if k != "parameters"}, "devices": " ".join(rec.devices),
                        **{k: ("" if v is None else v) for k, v in d["parameters"].items()}})
        return 0
    print("Presets of the matrix units")
    if args.wide:
        print(catalogue.render_presets(recs, wide=True))
    else:
        width = terminal_width()
        print(fit_text(catalogue.render_presets(recs, width=width).removesuffix(catalogue.PRESET_LEGEND), width))
        print(fit_text(catalogue.PRESET_LEGEND, width, paragraphs=True))
    return 0


def _record(rec: Any) -> dict[str, Any]:
    """One preset as machine-readable fields: only the parameters its kind reads."""
    from ..units import catalogue

    return {"name": rec.name, "unit_string": rec.unit_string, "architecture": rec.architecture,
            "devices": list(rec.devices), "instruction": rec.instruction, "variant": rec.variant,
            "default": rec.default, "kind": rec.kind, "in_format": rec.in_format, "out_format": rec.out_format,
            "parameters": catalogue.read_parameters(rec), "source": rec.source}
