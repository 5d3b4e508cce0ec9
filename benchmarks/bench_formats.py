"""Rounding throughput: 10^7 float64 values to bf16 and fp8_e4m3 in every mode.

Prints ns per value for ``workbench.round`` and the ratio to ml_dtypes' RNE cast
(float64 -> format -> float64, the same work) measured in the same run.
Target (issue 2): RNE within 3x of ml_dtypes.

    python benchmarks/bench_formats.py [--n 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import workbench
from workbench.numbers.formats import ROUNDING_MODES


def best_time(fn, repeat: int) -> float:
    fn()  # warm-up (compilation, page faults)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - dev extra
        ml_dtypes = None
    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.n) * np.exp2(rng.integers(-6, 6, args.n))
    ml = {"bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn"}
    print(f"n = {args.n:,} float64 values, best of {args.repeat}")
    print(f"{'format':10} {'mode':5} {'ns/value':>9} {'ml_dtypes RNE ns/value':>23} {'ratio':>6}")
    for name in ("bf16", "fp8_e4m3"):
        ref_ns = None
        if ml_dtypes is not None:
            dt = getattr(ml_dtypes, ml[name])
            ref_ns = best_time(lambda: x.astype(dt).astype(np.float64), args.repeat) / args.n * 1e9
        for mode in ROUNDING_MODES:
            kw = {"rng": np.random.default_rng(1)} if mode == "sr" else {}
            ns = best_time(lambda: workbench.round(x, name, mode, saturate=True, **kw), args.repeat) / args.n * 1e9
            ratio = f"{ns / ref_ns:6.2f}" if ref_ns else "     -"
            ref = f"{ref_ns:23.2f}" if ref_ns else f"{'not installed':>23}"
            print(f"{name:10} {mode:5} {ns:9.2f} {ref} {ratio}")


if __name__ == "__main__":
    main()
