"""``workbench emulate``: run an FP64 (or FP32) emulation on a unit model, print its error
against the exact product, what it decided and whether it is safe for these data."""

from __future__ import annotations

import argparse
from typing import Any

from ..numbers.validation import cli_name

HELP = "run an emulated GEMM (FP8/INT8 Ozaki-I/-II, bf16xN) on a unit; error vs the exact product, decisions"

#: --input KIND -> (generator, parameter name or None); the value follows a colon
INPUTS = {
    "normal": ("normal", None),
    "phi": ("gemmul8", "phi"),
    "span": ("log_uniform", "decades"),
    "condition": ("adversarial", "condition"),
    "inner": ("inner_scaling", "decades"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``workbench emulate``."""
    p = parser
    p.add_argument("--method", default="ozaki2_fp8",
                   help="comma-separated: ozaki2_fp8 (default), ozaki1_fp8, ozaki2_int8, ozaki1_int8, bf16x9, "
                        "bf16x6, bf16x3, native (numpy float64)")
    p.add_argument("--unit", default=None,
                   help="comma-separated units, any spelling 'workbench explain --unit' takes ('H100:fp8_e4m3:fp32', "
                        "'hopper/mma.sync/fp8_e4m3->fp32/mma.sync', 'MI300X:fp8_e4m3fnuz:fp32', a unit file), or "
                        "'exact-fp8' (an idealised exact FP8 unit); default: the method's (B200 fp8, the INT8 "
                        "IMMA preset, H100 bf16)")
    p.add_argument("--count", default="auto",
                   help="moduli / slices / products: a number, auto (default: ADP-style automatic count, native "
                        "FP64 where none covers the data), min, max or auto-N")
    p.add_argument("--scaling", default="accurate", type=cli_name,
                   help="FP8 Ozaki-II scaling: accurate (default), fast, fast-improved")
    p.add_argument("--k-chunk", default=None, type=int, help="largest K per unit GEMM (default: the scheme's)")
    p.add_argument("--input", default="phi:0.5",
                   help="the data: phi:PHI (GEMMul8's matrices, default phi:0.5), span:DECADES (entries "
                        "+-10^U(-d/2, d/2)), condition:KAPPA (dot products of that condition number), "
                        "inner:DECADES (inner-dimension scaling), normal")
    p.add_argument("--a", default=None, metavar="A.npy", help="A from a .npy file instead of --input (with --b)")
    p.add_argument("--b", default=None, metavar="B.npy", help="B from a .npy file")
    p.add_argument("--m", type=int, default=16, help="rows of A (default 16)")
    p.add_argument("--k", type=int, default=1024, help="inner dimension (default 1024)")
    p.add_argument("--n", type=int, default=16, help="columns of B (default 16)")
    p.add_argument("--seed", type=int, default=0)


def _data(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import numpy as np

    from ..numbers import inputs

    if (args.a is None) != (args.b is None):
        raise ValueError("give both --a and --b (.npy files), or neither")
    if args.a is not None:
        return np.load(args.a).astype(np.float64), np.load(args.b).astype(np.float64), f"{args.a} x {args.b}"
    kind, _, value = args.input.partition(":")
    if kind not in INPUTS:
        raise ValueError(f"--input {args.input!r}: expected one of {', '.join(k + ':VALUE' for k in INPUTS)}")
    gen, param = INPUTS[kind]
    kw: dict[str, Any] = {}
    if param is not None:
        if not value:
            raise ValueError(f"--input {kind}: give a value, e.g. {kind}:{ {'phi': 0.5, 'condition': 1e8}.get(kind, 8)}")
        v = float(value)
        if gen == "log_uniform":
            kw = {"low": -v / 2, "high": v / 2}
        else:
            kw = {param: v}
    A, B, _ = inputs.matrices(gen, args.m, args.k, args.n, [args.seed, args.m, args.k, args.n], **kw)
    return A, B, f"{args.input} ({gen}), {args.m}x{args.k} @ {args.k}x{args.n}, seed {args.seed}"


def run_command(args: argparse.Namespace) -> int:
    """Run every --method on every --unit it fits; print errors, decisions and the verdict; 0."""
    import warnings

    import numpy as np

    import algorithms
    from algorithms import emulation

    from ..numbers import exact

    A, B, what = _data(args)
    ref = np.asarray(exact.gemm(A, B), dtype=np.float64)
    native = emulation.classify(A @ B, ref, A, B)
    print(f"data: {what}; exponent span {int(algorithms.adp.exponent_span(A, B).max(initial=0))} bits; native "
          f"FP64: forward error {native['forward_error']:.3g}, eta {native['eta']:.3g}")
    print("class: safe = eta <= K u (K 2^-53 for FP64; eta = max|D-C|/(|A||B|)) and every unit GEMM exact; "
          "degraded = eta <= 1e-8; wrong above")
    count: int | str = int(args.count) if args.count.isdigit() else args.count
    units = [None] if args.unit is None else [u.strip() for u in args.unit.split(",") if u.strip()]
    for method in [m.strip() for m in args.method.split(",") if m.strip()]:
        for unit in units:
            model = algorithms.fp8_exact_unit() if unit == "exact-fp8" else unit
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    e = emulation.emulate(A, B, model=model, method=method, count=count, scaling=args.scaling,
                                          k_chunk=args.k_chunk, warn=False)
            except ValueError as exc:
                print(f"{method} on {unit or 'default unit'}: skipped: {exc}")
                continue
            c = emulation.classify(e.D, ref, A, B, target=e.target, unit_inexact_gemms=e.unit_inexact_gemms)
            label = "exact FP8 unit" if unit == "exact-fp8" else e.unit
            count_text = ("fallback to native FP64" if e.fallback else f"{e.count} {e.count_kind}") + \
                (f" (automatic: {e.count_auto if e.count_auto is not None else 'none fits'})"
                 if e.method != "native" else "")
            print(f"{e.method} on {label}: {c['class'].upper()}  forward error {c['forward_error']:.3g}, eta "
                  f"{c['eta']:.3g} (safe <= {c['safe_threshold']:.3g}); {count_text}; unit GEMMs {e.unit_gemms}, "
                  f"not exact {e.unit_inexact_gemms}")
            for w in e.warnings:
                print(f"  warning: {w}")
    return 0
