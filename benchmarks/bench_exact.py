"""Speed of the exact references: ``python benchmarks/bench_exact.py``.

Prints a table: the exact 10 x 1,000,000 by 1,000,000 x 10 product (the largest
size of the Khattak & Mikaitis Figure 7 experiment, entries s * 10^x with x
uniform on (-10, 10)), an exact dot product of length 10^6, and the fast path
against the mpmath oracle on a size mpmath handles (10 x 2000 x 10), with the
ratio.  Times are the best of ``--repeat`` runs after one warm-up call (which
compiles or loads the cached kernels).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from workbench.numbers import exact


def best_time(f, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def fig7_like(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-10, 10, shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mpmath-k", type=int, default=2000, help="inner dimension of the mpmath comparison")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    exact.gemm(np.ones((3, 600)), np.ones((600, 3)))  # warm-up: compile or load cache
    exact.dot(np.ones(5000), np.ones(5000))

    rows = []
    A, B = fig7_like(rng, (10, 10**6)), fig7_like(rng, (10**6, 10))
    t = best_time(lambda: exact.gemm(A, B), args.repeat)
    rows.append(("fast", "gemm 10x1e6x10, s*10^U(-10,10)", 1e8, t))
    A2, B2 = rng.standard_normal((10, 10**6)), rng.standard_normal((10**6, 10))
    t = best_time(lambda: exact.gemm(A2, B2), args.repeat)
    rows.append(("fast", "gemm 10x1e6x10, N(0,1)", 1e8, t))
    a, b = A[0], B[:, 0].copy()
    t = best_time(lambda: exact.dot(a, b), args.repeat)
    rows.append(("fast", "dot 1e6", 1e6, t))

    K = args.mpmath_k
    As, Bs = A[:, :K].copy(), B[:K].copy()
    t_fast = best_time(lambda: exact.gemm(As, Bs), args.repeat)
    t0 = time.perf_counter()
    D_mp = exact.gemm(As, Bs, method="mpmath")
    t_mp = time.perf_counter() - t0
    assert np.array_equal(D_mp.view(np.int64), exact.gemm(As, Bs).view(np.int64)), "fast and mpmath paths differ"
    rows.append(("fast", f"gemm 10x{K}x10", 100 * K, t_fast))
    rows.append(("mpmath", f"gemm 10x{K}x10", 100 * K, t_mp))

    print(f"exact references, {numba.get_num_threads()} threads")
    print(f"{'path':8} {'case':34} {'MACs':>10} {'time [s]':>10} {'MAC/s':>10}")
    for path, case, macs, t in rows:
        print(f"{path:8} {case:34} {macs:10.3g} {t:10.4f} {macs / t:10.3g}")
    print(f"ratio mpmath / fast at 10x{K}x10: {t_mp / t_fast:.3g}x (bit-identical results)")


if __name__ == "__main__":
    main()
