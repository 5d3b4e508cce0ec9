"""Engine benchmark: simulated multiply-adds per second (one command, prints a table).

    python benchmarks/bench_engine.py [--quick] [--repeat N]

fp16->fp32 and bf16->fp32 on the Volta, Ampere and Hopper presets at 16x4096x16,
64x1024x64 and 10x1,000,000x10 (M x K x N) through ``workbench.gemm`` (inputs
checked, decomposed, computed, converted: the whole call).  When the optional
``mmasim`` package (PyPI, CPU torch) is installed, the same GEMM runs through it in
the same process (not for 10x1,000,000x10) and the ratio of the times is printed;
otherwise "mmasim not installed".  The package measured is this checkout's (the
repository root goes first on ``sys.path``); its path is printed.

The machine is shared, so every wall-clock figure is the best of ``--repeat`` runs,
the one-minute load average is printed next to each row (and at the start and end),
and ``MAC/cpu-s`` (simulated MACs per second of process CPU time, all threads, over
all the runs: the CPU time of a thread still running elsewhere is only counted once
it stops, so a per-run minimum would flatter short calls) gives a load-independent
view: on an idle machine the wall-clock rate ``MAC/s`` approaches ``threads x`` that
figure when the threads scale.  ``ratio`` compares the best wall-clock times with
mmasim's, ``cpu ratio`` the mean CPU times.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402

SHAPES = [(16, 4096, 16), (64, 1024, 64), (10, 1_000_000, 10)]
PRESETS = [("volta", "fp16"), ("ampere", "fp16"), ("ampere", "bf16"), ("hopper", "fp16"), ("hopper", "bf16")]
MMASIM_ARCH = {"volta": ("Volta", "m8n8k4"), "ampere": ("Ampere", "m16n8k16"), "hopper": ("Hopper", "m16n8k16")}


def _mmasim(arch: str, fin: str, A: np.ndarray, B: np.ndarray, C: np.ndarray,
            repeat: int) -> tuple[float, float, np.ndarray] | None:
    """(best wall seconds, best CPU seconds, D) of mmasim's MMA on the same GEMM, or
    None when mmasim (or the instruction) is not available."""
    try:
        import torch
        from mmasim.nv_ptx import sim
    except ImportError:
        return None
    name, shape = MMASIM_ARCH[arch]
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[fin]
    if arch == "volta" and fin != "fp16":
        return None
    try:
        op = sim.MMA(name, f"{shape}.f32.{'f16' if fin == 'fp16' else 'bf16'}.{'f16' if fin == 'fp16' else 'bf16'}.f32")
    except Exception:
        return None
    tA = torch.tensor(A).to(tdt)
    tB = torch.tensor(B).to(tdt)
    tC = torch.tensor(C, dtype=torch.float32)
    best = float("inf")
    c0 = time.process_time()
    for _ in range(repeat):
        t = time.perf_counter()
        D = op(tA, tB, tC)
        best = min(best, time.perf_counter() - t)
    return best, (time.process_time() - c0) / repeat, D.numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 10 x 1,000,000 x 10 shape")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    try:
        import mmasim  # noqa: F401
        have_mmasim = True
    except ImportError:
        have_mmasim = False
        print("mmasim not installed")
    print(f"workbench: {wb.__file__}")
    print(f"threads: {numba.get_num_threads()}  cpus: {os.cpu_count()}  "
          f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'preset':28s} {'M x K x N':>14s} {'seconds':>8s} {'MAC/s':>9s} {'MAC/cpu-s':>9s} {'mmasim MAC/s':>12s} "
          f"{'ratio':>7s} {'cpu ratio':>9s} {'same bits':>9s} {'load':>5s}")
    for (arch, fin) in PRESETS:
        m = wb.preset(arch, fin, "fp32")
        wb.gemm(np.zeros((2, 64)), np.zeros((64, 2)), model=m)  # compile / load cache
        for (M, K, N) in SHAPES:
            if args.quick and K >= 1_000_000:
                continue
            A = wb.round(rng.standard_normal((M, K)), fin)
            B = wb.round(rng.standard_normal((K, N)), fin)
            C = wb.round(rng.standard_normal((M, N)), "fp32")
            wb.gemm(A, B, C, model=m)  # untimed: first parallel region, caches warm
            dt = float("inf")
            c0 = time.process_time()
            for _ in range(args.repeat):
                t = time.perf_counter()
                D = wb.gemm(A, B, C, model=m)
                dt = min(dt, time.perf_counter() - t)
            cpu = (time.process_time() - c0) / args.repeat
            macs = M * K * N
            ms = ratio = cratio = same = "-"
            if have_mmasim and K <= 4096:
                r = _mmasim(arch, fin, A, B, C, max(1, args.repeat - 1))
                if r is not None:
                    mdt, mcpu, Dm = r
                    ms = f"{macs / mdt:.3g}"
                    ratio = f"{mdt / dt:.1f}x"
                    cratio = f"{mcpu / cpu:.1f}x"
                    same = str(bool((Dm.view(np.uint32) == D.view(np.uint32)).all()))
            load = os.getloadavg()[0]
            print(f"{m.name:28s} {f'{M}x{K}x{N}':>14s} {dt:8.4f} {macs / dt:9.3g} {macs / cpu:9.3g} {ms:>12s} "
                  f"{ratio:>7s} {cratio:>9s} {same:>9s} {load:5.2f}", flush=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

if __name__ == "__main__":
    main()
