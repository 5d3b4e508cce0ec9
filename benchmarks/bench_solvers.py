"""Speed of the blocked LU on a unit: ``python benchmarks/bench_solvers.py [--sizes 1024 4096]``.

Targets (issue 18, 2 cores): n = 1024 in under 5 s, n = 4096 in under 2 minutes on a
tensor-core preset; (issue 53) LU within 1.2x of its own GEMM work - the same unit products
alone, timed in the same run ("GEMMs alone").  Prints min / median / max wall time of ``--repeat`` runs of
:func:`algorithms.lu` (after one warm-up call at n = 256, which loads the engine's
cached kernels) for each size and update mode, the simulated multiply-adds of the
trailing updates (sum over panels of (n - e)^2 * block) and their rate.  Also the time
of one LU-IR and one GMRES-IR solve at the first size.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import algorithms
import workbench
from workbench.numbers import inputs


def update_macs(n: int, block: int) -> int:
    """Multiply-adds the unit simulates: one (n-e) x block x (n-e) GEMM per panel."""
    return sum((n - e) ** 2 * (e - k) for k in range(0, n, block) for e in [min(k + block, n)] if e < n)


def update_gemms(n: int, block: int, model, seed: int = 0) -> Callable[[], None]:
    """The factorisation's own GEMM work alone: one unit product of the shape of each
    panel's trailing update ((n - e) x block x (n - e)), on operands already in the
    unit's input format, as :func:`algorithms.lu` hands them to the unit."""
    rng = np.random.default_rng(seed)
    shapes = [(n - e, e - k) for k in range(0, n, block) for e in [min(k + block, n)] if e < n]
    ops = [(workbench.round(rng.standard_normal((m, b)), model.in_format),
            workbench.round(rng.standard_normal((b, m)), model.in_format)) for m, b in shapes]

    def run() -> None:
        for L21, U12 in ops:
            workbench.gemm(L21, U12, model=model)
    return run


def timed(f, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--preset", default="H100")
    ap.add_argument("--in-format", default="fp16")
    args = ap.parse_args()
    model = workbench.preset(args.preset, args.in_format, "fp32")
    algorithms.lu(inputs.randsvd(256, 1e3, seed=0), model=model, block=64)
    print(f"LU on {model.name}, block {args.block}")
    print(f"{'n':>6} {'update_c':12} {'min/s':>8} {'median/s':>9} {'max/s':>8} {'unit MAC':>10} {'MAC/s':>9}")
    for n in args.sizes:
        A = inputs.randsvd(n, 1e2, seed=1)
        reps = args.repeat if n <= 2048 else max(1, args.repeat - 2)
        macs = update_macs(n, args.block)
        gemms = timed(update_gemms(n, args.block, model), reps)
        print(f"{n:>6} {'GEMMs alone':12} {min(gemms):8.2f} {statistics.median(gemms):9.2f} {max(gemms):8.2f} "
              f"{macs:10.3g} {macs / min(gemms):9.3g}", flush=True)
        for update_c in ("epilogue", "accumulator"):
            ts = timed(lambda: algorithms.lu(A, model=model, block=args.block, update_c=update_c), reps)
            print(f"{n:>6} {update_c:12} {min(ts):8.2f} {statistics.median(ts):9.2f} {max(ts):8.2f} "
                  f"{macs:10.3g} {macs / min(ts):9.3g}   LU / its GEMMs alone, same run: "
                  f"{min(ts) / min(gemms):.2f} (fastest), {statistics.median(ts) / statistics.median(gemms):.2f} "
                  "(medians)", flush=True)
    n = args.sizes[0]
    A = inputs.randsvd(n, 1e2, seed=1)
    b = np.random.default_rng(1).standard_normal(n)
    for solver in (algorithms.lu_ir, algorithms.gmres_ir):
        ts = timed(lambda: solver(A, b, model=model, block=args.block), args.repeat)
        print(f"{solver.__name__} n={n} kappa=1e2: min {min(ts):.2f} s, median {statistics.median(ts):.2f} s, "
              f"max {max(ts):.2f} s", flush=True)


if __name__ == "__main__":
    main()
