"""Speed of the emulated GEMMs on the engine: ``python benchmarks/bench_emulation.py``.

Each emulation (algorithms.emulation: FP8 Ozaki-II and Ozaki-I on the B200 fp8 model, integer
Ozaki-II and Ozaki-I on the INT8 unit, bf16x9 on the H100 bf16 model) at n^3 for each ``--sizes``
n: one warm-up call (compiles or loads the engine's kernels), then ``--repeat`` timed calls;
min / median / max wall seconds, the count used and the unit GEMMs issued.  N(0, 1) data,
the published default counts (14 moduli, 14 FP8 slices, 8 INT8 slices, 14 INT8 moduli, 9
products).  ``--out FILE.json`` also writes the rows with the machine (``_machine.describe``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from algorithms.emulation import emulate

CASES = [
    ("ozaki2_fp8", "B200:fp8_e4m3:fp32", 14),
    ("ozaki1_fp8", "B200:fp8_e4m3:fp32", 14),
    ("ozaki2_int8", None, 14),
    ("ozaki1_int8", None, 8),
    ("bf16x9", "H100:bf16:fp32", 9),
]


def run(sizes: list[int], repeat: int, methods: list[str] | None = None, warmup: bool = True) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n in sizes:
        rng = np.random.default_rng(n)
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        for method, unit, count in CASES:
            if methods and method not in methods:
                continue
            times = []
            t_first = time.perf_counter()
            e = emulate(A, B, model=unit, method=method, count=count, warn=False)      # warm-up (or the first run)
            if not warmup:
                times.append(time.perf_counter() - t_first)
            for _ in range(repeat - (0 if warmup else 1)):
                t0 = time.perf_counter()
                emulate(A, B, model=unit, method=method, count=count, warn=False)
                times.append(time.perf_counter() - t0)
            row = {"method": method, "unit": e.unit, "n": n, "count": count, "unit_gemms": e.unit_gemms,
                   "repeat": repeat, "min_s": min(times), "median_s": statistics.median(times), "max_s": max(times)}
            rows.append(row)
            print(f"{method:12} {e.unit:34} {n:5}^3 count {count:2} gemms {e.unit_gemms:4}  min {row['min_s']:8.2f} s"
                  f"  median {row['median_s']:8.2f} s  max {row['max_s']:8.2f} s", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,1024", help="comma-separated n (n^3 products)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    ap.add_argument("--no-warmup", action="store_true", help="time the first call too (kernels already compiled)")
    ap.add_argument("--out", default=None, help="also write the rows and the machine to this JSON file")
    args = ap.parse_args()
    rows = run([int(s) for s in args.sizes.split(",")], args.repeat,
               args.methods.split(",") if args.methods else None, warmup=not args.no_warmup)
    if args.out:
        import _machine

        _machine.write(Path(args.out), {"machine": _machine.describe(), "rows": rows})


if __name__ == "__main__":
    main()
