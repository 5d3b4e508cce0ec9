"""``workbench vectors export|check``: conformance vectors for other simulators and libraries.

``export DIR [UNIT ...] [--all] [--scales] [--count N] [--seed S]`` writes one set folder per
unit (any spelling :func:`workbench.units.resolve` reads) or per catalogue preset (``--all``),
and with ``--scales`` the scale-rounding suite, plus ``index.json``;
``check DIR [--unit SPEC | --callable MODULE:FUNCTION] [--only NAME ...]`` re-runs them and
reports mismatches with their first examples (exit status 1 when any row differs).  The
layout: docs/guide/vectors.md.
"""
from __future__ import annotations

import argparse
import sys
import time

from ..numbers.validation import cli_name

HELP = "export conformance vectors (bit patterns + JSON manifest) of presets and the MX/NVFP4 scale suite, or check them"


def _count(text: str) -> int:
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--count {text!r}: expected a whole number of dot products") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"--count {v}: expected at least 1 dot product per unit")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench vectors``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    ex = sub.add_parser("export", help="write the vectors of units (or every preset) and/or the scale suite into DIR")
    ex.add_argument("dir", metavar="DIR", help="output folder (created)")
    ex.add_argument("units", nargs="*", metavar="UNIT", type=cli_name,
                    help="presets ('hopper/wgmma/fp16->fp32', 'H100:fp16:fp32') or unit files (.toml)")
    ex.add_argument("--all", action="store_true", help="every catalogue preset")
    ex.add_argument("--scales", action="store_true", help="also the MX/NVFP4 scale-rounding suite (folder scale-suite)")
    ex.add_argument("--count", type=_count, default=None, help="dot products per unit (default 10000)")
    ex.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    ck = sub.add_parser("check", help="re-run vectors from DIR and report mismatches")
    ck.add_argument("dir", metavar="DIR", help="a set folder (manifest.json) or an export (index.json)")
    who = ck.add_mutually_exclusive_group()
    who.add_argument("--unit", type=cli_name, help="check on this unit (preset name or unit file) instead of the "
                     "preset each manifest names")
    who.add_argument("--callable", dest="func", metavar="MODULE:FUNCTION",
                     help="check on a Python function f(a, b, c, scale_a, scale_b) -> d (float64 arrays; imported, "
                          "never evaluated)")
    ck.add_argument("--only", nargs="+", metavar="NAME", help="check only these units of an export")
    ck.add_argument("--examples", type=int, default=5, help="mismatching rows shown per file (default 5)")


def run_command(args: argparse.Namespace) -> int:
    """Export or check; 0 when done (check: every row agrees), 1 when rows differ."""
    from pathlib import Path

    from ..conformance import layout, scales, unitvectors

    if args.action is None:
        print("workbench vectors: say 'export' or 'check' (workbench vectors --help)", file=sys.stderr)
        return 2
    if args.action == "export":
        if not (args.units or args.all or args.scales):
            raise ValueError("nothing to export: name units, or give --all (every preset) and/or --scales")
        if args.all and args.units:
            raise ValueError(f"--all exports every preset; do not also name units ({', '.join(args.units)})")
        count = unitvectors.DEFAULT_COUNT if args.count is None else args.count
        root = Path(args.dir)
        t0 = time.perf_counter()
        sets: list[Path] = []
        if args.units or args.all:
            sets = unitvectors.export_units(args.units if args.units else None, root, count, seed=args.seed)
        if args.scales:
            scales.export_suite(root / "scale-suite", seed=args.seed)
            sets.append(root / "scale-suite")
            layout.write_index(root, sets, {"type": "units", "workbench": _version(), "count": count,
                                            "seed": args.seed})
        print(f"wrote {len(sets)} set(s) into {root} in {time.perf_counter() - t0:.1f} s")
        return 0
    reports = 0
    bad = 0
    against = unitvectors.load_callable(args.func) if args.func else args.unit
    for folder in layout.set_folders(args.dir):
        man = layout.read_manifest(folder)
        if man.get("type") == "scales":
            if against is not None:
                raise ValueError(f"{folder}: the scale-rounding suite is checked on the workbench's quantisers; "
                                 "--unit/--callable apply to unit vectors")
            for r in scales.check_suite(folder, args.examples):
                bad += r["mismatches"]
                reports += 1
                print(f"{folder}: {r['file']} {r['rule']}: {r['rows'] - r['mismatches']:,} of {r['rows']:,} rows "
                      f"agree" + (f"; first differing rows {r['first']}" if r["mismatches"] else ""))
            continue
        if args.only is not None and man["unit"]["name"] not in args.only:
            continue
        rep = unitvectors.check_set(folder, against, examples=args.examples)
        print(rep.text())
        bad += rep.mismatches
        reports += 1
    if reports == 0:
        raise ValueError(f"{args.dir}: none of the units {args.only} is in these vectors")
    return 1 if bad else 0


def _version() -> str:
    from .._version import __version__

    return __version__
