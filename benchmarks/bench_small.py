"""Per-call cost of a small product: ``python benchmarks/bench_small.py [--record]``.

Issue 41, item 1: the price of every small product in a training step, a multi-word
algorithm, a probe or the explorer is the cost of one ``workbench.gemm`` call beyond its
arithmetic.  This times a 4 x 16 x 4 product (``--shape M K N`` for another) with C, on
one preset of each kind of unit, the input gate and every check included: ``--rounds``
rounds of ``--calls`` calls after a warm-up (which loads the cached kernels); each round's
median is one figure, and min / median / max over the rounds are printed in microseconds,
with the process's CPU time per call (less sensitive to other load on a shared machine).

``--record`` writes the figures to ``benchmarks/measured/small.json`` with the machine and
the load (:mod:`benchmarks._machine`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench  # noqa: E402
from workbench import units  # noqa: E402
from benchmarks import _machine  # noqa: E402

#: (label, unit as workbench.units.resolve reads it): one preset of each kind of unit
UNITS = (
    ("H100 fp16 (T-FDPA)", "H100:fp16:fp32"),
    ("V100 fp16 (T-FDPA)", "V100:fp16:fp32"),
    ("H100 fp8 (T-FDPA)", "H100:fp8_e4m3:fp32"),
    ("B200 MXFP8 (ST-FDPA)", "blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx"),
    ("B200 NVFP4 (GST-FDPA)", "blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4"),
    ("A100 fp64 (FMA)", "A100:fp64:fp64"),
    ("MI100 fp16 (E-FDPA)", "MI100:fp16:fp32"),
    ("MI250X fp16 (FTZ-AddMul)", "MI250X:fp16:fp32"),
    ("MI300X fp16 (TR-FDPA)", "MI300X:fp16:fp32"),
    ("MI300X fp8 (GTR-FDPA)", "MI300X:fp8_e4m3:fp32"),
    ("Zen 4 VDPBF16PS (pair-dot)", "x86-avx512-bf16/vdpbf16ps/bf16->fp32"),
)


def operands(model: workbench.Model, M: int, K: int, N: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A, B, C (and block scale factors for scaled units) representable in the unit's formats."""
    rng = np.random.default_rng(seed)
    fin, fout = model.in_fmt, model.out_fmt
    args = {"A": workbench.round(rng.standard_normal((M, K)), fin), "B": workbench.round(rng.standard_normal((K, N)), fin),
            "C": workbench.round(rng.standard_normal((M, N)), fout)}
    if model.operation.scaled:
        nb = -(-K // model.k_block)
        args["scale_a"] = np.ones((M, nb))
        args["scale_b"] = np.ones((nb, N))
    return args


def time_unit(model: workbench.Model, shape: tuple[int, int, int], calls: int, rounds: int) -> dict[str, list[float]]:
    """Per-round median wall time and mean CPU time per call, in microseconds."""
    args = operands(model, *shape)
    A, B, C = args.pop("A"), args.pop("B"), args.pop("C")
    for _ in range(20):
        workbench.gemm(A, B, C, model=model, **args)
    walls, cpus = [], []
    for _ in range(rounds):
        times = []
        c0 = time.process_time()
        for _ in range(calls):
            t = time.perf_counter()
            workbench.gemm(A, B, C, model=model, **args)
            times.append(time.perf_counter() - t)
        cpus.append((time.process_time() - c0) / calls * 1e6)
        walls.append(statistics.median(times) * 1e6)
    return {"wall_us": walls, "cpu_us": cpus}


def _mmm(v: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in (min(v), statistics.median(v), max(v)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", type=int, nargs=3, default=(4, 16, 4), metavar=("M", "K", "N"))
    parser.add_argument("--calls", type=int, default=2000, help="calls per round (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--record", action="store_true", help="write benchmarks/measured/small.json")
    args = parser.parse_args(argv)
    shape = tuple(args.shape)
    machine = _machine.describe()
    print(f"{'x'.join(map(str, shape))} gemm with C, {args.rounds} rounds of {args.calls} calls; "
          f"{machine['cpu']}, load {machine['load_start']}")
    print(f"{'unit':26} {'wall us, round medians (min/med/max)':>38} {'CPU us per call':>20}")
    rows = {}
    for label, spec in UNITS:
        model = units.resolve(spec)
        rows[label] = time_unit(model, shape, args.calls, args.rounds)
        print(f"{label:26} {_mmm(rows[label]['wall_us']):>38} {_mmm(rows[label]['cpu_us']):>20}")
    if args.record:
        _machine.write(_machine.MEASURED / "small.json", {**machine, "shape": shape, "calls": args.calls,
                                                          "rounds": args.rounds, "units": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
