"""Speed of the GEMM algorithms: ``python benchmarks/bench_algorithms.py``.

Prints one row per (algorithm, preset, size): the best of ``--repeat`` wall times
after one warm-up call (which compiles or loads the engine's cached kernels), the
number of unit multiply-adds simulated (products x m x k x n) and their rate.
Sizes: the Khattak & Mikaitis Figure 7 shape 10 x 100,000 x 10 (multi-word fp16
with 3 words = 6 products; bf16 3 words; fp8-e5m2 6 words = 21 products) and a
square 256^3 for every algorithm.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import algorithms
import workbench
import workbench.numbers.inputs


def best_time(f: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=100_000, help="inner dimension of the Figure 7 shape")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    fig_a = workbench.inputs.log_uniform((10, args.k), rng)
    fig_b = workbench.inputs.log_uniform((args.k, 10), rng)
    sq_a = rng.standard_normal((256, 256)).astype(np.float32).astype(np.float64)
    sq_b = rng.standard_normal((256, 256)).astype(np.float32).astype(np.float64)
    p = workbench.preset
    cases = [
        ("multiword p=3", p("B200", "fp16", "fp32"), {"words": 3}, 6, fig_a, fig_b),
        ("multiword p=3", p("V100", "fp16", "fp32"), {"words": 3}, 6, fig_a, fig_b),
        ("multiword p=3", p("B200", "bf16", "fp32", variant="rn"), {"words": 3}, 6, fig_a, fig_b),
        ("multiword p=6", p("B200", "fp8_e5m2", "fp32"), {"words": 6}, 21, fig_a, fig_b),
        ("markidis", p("V100", "fp16", "fp32"), {}, 3, sq_a, sq_b),
        ("ootomo_yokota", p("A100", "fp16", "fp32"), {}, 3, sq_a, sq_b),
        ("ootomo_yokota", p("A100", "tf32", "fp32"), {"variant": "tf32tf32"}, 3, sq_a, sq_b),
        ("cutlass_xtf32", p("A100", "tf32", "fp32"), {}, 3, sq_a, sq_b),
        ("bf16xn", p("H100", "bf16", "fp32"), {"products": 6}, 6, sq_a, sq_b),
        ("ozaki", algorithms.INT8_UNIT, {"slices": 8}, 36, sq_a, sq_b),
        ("ozaki", algorithms.INT8_UNIT, {"scheme": "II", "moduli": 14}, 14, sq_a, sq_b),
    ]
    print(f"{'algorithm':16} {'preset':34} {'params':22} {'m x k x n':>16} {'time/s':>8} {'MAC/s':>9}")
    for label, model, params, products, A, B in cases:
        name = label.split()[0]
        f = algorithms.get(name)
        f(A[:, :64], B[:64], model=model, **params)  # warm-up
        t = best_time(lambda: f(A, B, model=model, **params), args.repeat)
        m, k = A.shape
        n = B.shape[1]
        macs = products * m * k * n
        pname = getattr(model, "name", "?")
        shown = ",".join(f"{k_}={v}" for k_, v in params.items())
        print(f"{label:16} {pname:34} {shown:22} {f'{m}x{k}x{n}':>16} {t:8.3f} {macs / t:9.2e}")


if __name__ == "__main__":
    main()
