"""Engine benchmark: simulated multiply-adds per second (one command, prints a table).

    python benchmarks/bench_engine.py [--quick]

fp16->fp32 and bf16->fp32 on the Volta, Ampere and Hopper presets at 16x16x4096,
64x1024x64, 16x4096x16 and 10x1,000,000x10 (M x K x N).  When the optional
``mmasim`` package (PyPI, CPU torch) is installed, the same GEMM runs through it in
the same process and the ratio is printed; otherwise "mmasim not installed".

The machine is shared, so every figure is the best of ``--repeat`` runs, the load
average is printed next to each row, and ``MAC/cpu-s`` (simulated MACs per second of
process CPU time, all threads) gives a load-independent view: on an idle machine the
wall-clock rate approaches ``threads x`` that figure when the threads scale.
"""
from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import workbench as wb

SHAPES = [(16, 4096, 16), (64, 1024, 64), (10, 1_000_000, 10)]
PRESETS = [("volta", "fp16"), ("ampere", "fp16"), ("ampere", "bf16"), ("hopper", "fp16"), ("hopper", "bf16")]
MMASIM_ARCH = {"volta": ("Volta", "m8n8k4"), "ampere": ("Ampere", "m16n8k16"), "hopper": ("Hopper", "m16n8k16")}


def _mmasim(arch, fin, A, B, C, repeat):
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
    for _ in range(repeat):
        t = time.perf_counter()
        D = op(tA, tB, tC)
        best = min(best, time.perf_counter() - t)
    return best, D.numpy()


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
    print(f"threads: {numba.get_num_threads()}")
    print(f"{'preset':28s} {'M x K x N':>18s} {'seconds':>9s} {'MAC/s':>10s} {'MAC/cpu-s':>10s} {'mmasim MAC/s':>13s} "
          f"{'ratio':>7s} {'same bits':>9s} {'load':>5s}")
    seen = set()
    for (arch, fin) in PRESETS:
        m = wb.preset(arch, fin, "fp32")
        wb.gemm(np.zeros((2, 64)), np.zeros((64, 2)), model=m)  # compile / load cache
        for (M, K, N) in SHAPES:
            if (arch, fin, M, K, N) in seen:
                continue
            seen.add((arch, fin, M, K, N))
            if args.quick and K >= 1_000_000:
                continue
            A = wb.round(rng.standard_normal((M, K)), fin)
            B = wb.round(rng.standard_normal((K, N)), fin)
            C = wb.round(rng.standard_normal((M, N)), "fp32")
            dt = cpu = float("inf")
            for _ in range(args.repeat):
                t, c0 = time.perf_counter(), time.process_time()
                D = wb.gemm(A, B, C, model=m)
                dt = min(dt, time.perf_counter() - t)
                cpu = min(cpu, time.process_time() - c0)
            rate = M * K * N / dt
            ms = ratio = same = "-"
            if have_mmasim and K <= 4096:
                r = _mmasim(arch, fin, A, B, C, max(1, args.repeat - 1))
                if r is not None:
                    mdt, Dm = r
                    ms = f"{M * K * N / mdt:.3g}"
                    ratio = f"{mdt / dt:.1f}x"
                    same = str(bool((Dm.view(np.uint32) == D.view(np.uint32)).all()))
            load = os.getloadavg()[0]
            print(f"{m.name:28s} {f'{M}x{K}x{N}':>18s} {dt:9.3f} {rate:10.3g} {M * K * N / cpu:10.3g} {ms:>13s} "
                  f"{ratio:>7s} {same:>9s} {load:5.1f}", flush=True)


if __name__ == "__main__":
    main()
