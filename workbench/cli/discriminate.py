"""``workbench discriminate PRESET_A PRESET_B``: the simplest input on which two
presets (or device:format names) give different bits (Valpey et al. 2025 Section 4).

Registered in :mod:`workbench.cli`; this module only parses and prints.
"""

from __future__ import annotations

import argparse
import json

from ..numbers.validation import cli_count, cli_name, cli_positive_float, cli_positive_int

HELP = "find the simplest input on which two presets give different bits (search or SMT)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_a", metavar="PRESET_A", type=cli_name,
                        help="catalogue name ('hopper/wgmma/fp16->fp32'), DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] ('H100:fp16:fp32') "
                             "or a unit file (unit.toml, workbench.save_unit)")
    parser.add_argument("model_b", metavar="PRESET_B", type=cli_name, help="second preset, same forms")
    parser.add_argument("-K", type=cli_positive_int, default=None, help="dot-product length (default: the larger block size L)")
    parser.add_argument("--budget", type=cli_count, default=200_000, help="candidate inputs to try (default 200000)")
    parser.add_argument("--seed", type=cli_count, default=0, help="random seed of the randomised phase")
    parser.add_argument("--backend", choices=("search", "smt"), default="search",
                        help="'smt': exact z3 back end (pip install z3-solver); proves equivalence for this K")
    parser.add_argument("--smt-timeout", type=cli_positive_float, default=60.0, help="seconds for z3 (default 60)")
    parser.add_argument("--compare", choices=("bits", "value"), default="bits",
                        help="'bits' (default): any output bit, the sign of zero included; 'value': different numbers only")
    parser.add_argument("--no-shrink", action="store_true", help="report the first input found, unsimplified")
    parser.add_argument("--exponent-range", metavar="LO,HI", type=_exponent_range, default=None,
                        help="every nonzero a, b, c has 2^LO <= |x| < 2^(HI+1) (e.g. --exponent-range=-10,10: past the underflow "
                             "corners); search back end")
    parser.add_argument("--no-subnormals", action="store_true",
                        help="no subnormal inputs (a, b in the input format, c in the output format); search back end")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _exponent_range(text: str) -> tuple[int, int]:
    """``LO,HI`` integers with LO <= HI."""
    parts = [t.strip() for t in text.split(",")]
    try:
        lo, hi = (int(t) for t in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LO,HI, two integers such as -10,10") from None
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: LO={lo} is above HI={hi}")
    return lo, hi


def run_command(args: argparse.Namespace) -> int:
    """Exit status 0 when an input was found, 1 when none (the message says whether none
    exists or none was found within the budget)."""
    from ..discrimination import discriminate_outcome, model_label
    from ..discrimination.outcome import exact_text

    out = discriminate_outcome(args.model_a, args.model_b, K=args.K, budget=args.budget, seed=args.seed,
                               shrink=not args.no_shrink, backend=args.backend, smt_timeout=args.smt_timeout,
                               compare=args.compare, exponent_range=args.exponent_range,
                               subnormals=not args.no_subnormals)
    if args.json:
        payload = {"status": out.status, "reason": out.reason, "candidates": out.candidates,
                   "result": out.result.to_dict() if out.result is not None else None}
        print(json.dumps(payload, indent=2))
        return 0 if out.result is not None else 1
    if out.result is None:
        print(f"{out.status}: {out.reason}")
        return 1
    r = out.result
    print(f"{model_label(r.model_a)}  vs  {model_label(r.model_b)}   (K={r.K}, {out.reason})")
    for k, x, y in r.terms():         # exact: powers of two as 2^e, other values as hex floats
        print(f"  a[{k}] = {exact_text(x):<24} b[{k}] = {exact_text(y)}")
    if not r.terms():
        print("  all products zero")
    print(f"  c    = {exact_text(r.c)}")
    print(f"  {model_label(r.model_a)}: {exact_text(r.out_a)}  ({r.out_a!r})")
    print(f"  {model_label(r.model_b)}: {exact_text(r.out_b)}  ({r.out_b!r})")
    return 0
