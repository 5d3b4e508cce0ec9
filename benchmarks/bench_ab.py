"""Before/after timing of ``workbench.gemm`` for a few presets, two checkouts interleaved (one command).

    python benchmarks/bench_ab.py [--against DIR] [--shape MxKxN] [--rounds N] [--threads T] [--fp16-bf16] [PRESET ...]

A PRESET is a catalogue name (``cdna3/mfma/fp16->fp32``), ``arch:in_format`` (output fp32) or
``arch:in_format:instruction``; by default the NVIDIA fp16/bf16 T-FDPA presets of issue 21's
10 x 1,000,000 x 10 target, with ``--fp16-bf16`` every preset with fp16 or bf16 inputs.  Each
round runs every preset once untimed and ``--repeat`` times timed in a fresh process of
this checkout and then (with ``--against``, e.g. an unpacked ``git archive`` of the
commit before) of the other one, so that both see the same load.  Each row gives the
min/median/max wall seconds over all rounds, the MAC/s at the minimum and at the median, the process CPU
seconds at the minimum (user + system: what an idle machine would take, summed over
threads) and the one-minute load average at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
DEFAULT = ["volta:fp16", "turing:fp16", "ampere:fp16", "ampere:bf16", "ada:fp16", "ada:bf16", "hopper:fp16",
           "hopper:bf16", "blackwell:fp16", "blackwell:bf16"]


def _child(root: str, shape: str, presets: list[str], repeat: int) -> None:
    """Time the presets in this process with the package at ``root``; one JSON line each."""
    sys.path.insert(0, root)
    import numpy as np
    import workbench as wb
    from workbench.numbers import formats as F

    M, K, N = (int(x) for x in shape.split("x"))
    rng = np.random.default_rng(1)
    from workbench.units import catalogue

    by_name = {r.name: r for r in catalogue.records()}
    for p in presets:
        if p in by_name:
            model = by_name[p]
        else:
            arch, fin, *ins = p.split(":")
            model = wb.preset(arch, fin, "fp32", instruction=ins[0] if ins else None)
        fin = model.in_format
        A, B = (F.round(rng.standard_normal(s), F.format(fin), "rne", saturate=True) for s in ((M, K), (K, N)))
        C = F.round(rng.standard_normal((M, N)), F.format(model.out_format), "rne")
        wb.gemm(A, B, C, model=model)
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            wb.gemm(A, B, C, model=model)
            t1, c1 = time.perf_counter(), time.process_time()
            print(json.dumps({"preset": model.name, "wall": t1 - t0, "cpu": c1 - c0}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=None)
    ap.add_argument("--fp16-bf16", action="store_true",
                    help="every preset with fp16 or bf16 inputs (issue 21's 10 x 1,000,000 x 10 target), by name")
    ap.add_argument("--against", default=None, help="another checkout to time in the same rounds")
    ap.add_argument("--shape", default="10x1000000x10", help="M x K x N (default 10x1000000x10)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per preset and round")
    ap.add_argument("--threads", type=int, default=None, help="NUMBA_NUM_THREADS of the timed processes")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fp16_bf16:
        if args.presets:
            ap.error(f"--fp16-bf16 chooses the presets itself; drop {' '.join(args.presets)}")
        from workbench.units import catalogue

        args.presets = [r.name for r in catalogue.records() if r.in_format in ("fp16", "bf16")]
    elif not args.presets:
        args.presets = DEFAULT
    if args.child:
        _child(args.child, args.shape, args.presets, args.repeat)
        return 0
    roots = {"this": str(HERE.parents[1])}
    if args.against:
        roots["against"] = str(Path(args.against).resolve())
    env = dict(os.environ, **({"NUMBA_NUM_THREADS": str(args.threads)} if args.threads else {}))
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for tag, root in roots.items():
            out = subprocess.run([sys.executable, str(HERE), "--child", root, "--shape", args.shape, "--repeat",
                                  str(args.repeat), *args.presets], env=env, check=True, capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                r = json.loads(line)
                got.setdefault((r["preset"], tag), []).append((r["wall"], r["cpu"]))
    M, K, N = (int(x) for x in args.shape.split("x"))
    print(f"{args.shape}, {args.rounds} rounds x {args.repeat} calls; threads {args.threads or 'numba default'}")
    print(f"{'preset':36s} {'tree':8s} {'min s':>8s} {'median s':>8s} {'max s':>8s} {'MAC/s':>9s} {'at med.':>9s} "
          f"{'cpu s':>7s}")
    for (preset, tag), rs in got.items():
        walls = [w for w, _ in rs]
        best = min(rs)
        print(f"{preset:36s} {tag:8s} {min(walls):8.3g} {statistics.median(walls):8.3g} {max(walls):8.3g} "
              f"{M * K * N / best[0]:9.3g} {M * K * N / statistics.median(walls):9.3g} {best[1]:7.3g}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
