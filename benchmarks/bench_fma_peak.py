"""The machine's FMA peak and the share of it the FMA-chain kernel reaches (one command).

    python benchmarks/bench_fma_peak.py [--repeat N]

Peak: a compiled loop of nothing but independent ``llvm.fma`` (128 chains of one
vector width, the same intrinsic as the kernels') on one thread and on every numba
thread.  Kernel: :func:`workbench.engine.operations.fma.kernels.fma_gemm_lanes` alone (no checks, no
copies) at 64 x 1024 x 64 in binary64 and binary32, on one thread and on all of them.
Each row prints min/median/max seconds over ``--repeat`` timed calls (after an untimed
one), the FMA/s at the minimum, its share of the peak and the one-minute load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workbench.engine.operations.fma import kernels as K  # noqa: E402

CHAINS, STEPS = 128, 100_000


@numba.njit(cache=True)
def _fma_loop(x: np.ndarray, steps: int) -> float:
    """``steps`` rounds of CHAINS independent FMAs (a vector loop with no other work)."""
    acc = x.copy()
    a = x.dtype.type(0.999999)
    b = x.dtype.type(1e-9)
    for _ in range(steps):
        for u in range(CHAINS):
            acc[u] = K._fma(acc[u], a, b)
    return float(acc.sum())


@numba.njit(cache=True, parallel=True)
def _fma_loops(x: np.ndarray, steps: int) -> float:
    """:func:`_fma_loop` on every thread at once (one row of ``x`` each)."""
    out = np.zeros(x.shape[0])
    for t in numba.prange(x.shape[0]):
        out[t] = _fma_loop(x[t], steps)
    return float(out.sum())


def _times(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def _row(what: str, work: float, times: list[float], peak: float | None) -> float:
    rate = work / min(times)
    share = f"{rate / peak:6.0%}" if peak else "     -"
    print(f"{what:34s} {min(times):9.2e} {statistics.median(times):9.2e} {max(times):9.2e} {rate:9.3g} {share} "
          f"{os.getloadavg()[0]:5.2f}", flush=True)
    return rate


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per row (default 20)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: expected at least 1")
    nthreads = numba.get_num_threads()
    print(f"numba threads {nthreads}; load average at start {os.getloadavg()[0]:.2f}")
    print(f"{'row':34s} {'min s':>9s} {'median s':>9s} {'max s':>9s} {'FMA/s':>9s} {'peak':>6s} {'load':>5s}")
    rng = np.random.default_rng(0)
    M, Kd, N = 64, 1024, 64
    for dt in (np.float64, np.float32):
        name = np.dtype(dt).name
        peaks = {}
        for threads in sorted({1, nthreads}):
            numba.set_num_threads(threads)
            x = np.ones((threads, CHAINS), dtype=dt)
            peaks[threads] = _row(f"peak {name}, {threads} thread(s)", threads * CHAINS * STEPS,
                                  _times(lambda: _fma_loops(x, STEPS), max(3, args.repeat // 4)), None)
        A = rng.standard_normal((M, Kd)).astype(dt)
        B = rng.standard_normal((Kd, N)).astype(dt)
        C = rng.standard_normal((M, N))
        for threads in sorted({1, nthreads}):
            numba.set_num_threads(threads)
            groups = max(1, -(-threads // K.fma_panels(N, A.itemsize)[0]))
            _row(f"fma_gemm_lanes {name} {M}x{Kd}x{N}, {threads} thr", M * Kd * N,
                 _times(lambda: K.fma_gemm_lanes(A, B, C.copy(), K.FMA_FP64, groups), args.repeat), peaks[threads])
    numba.set_num_threads(nthreads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
