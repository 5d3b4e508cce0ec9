"""Engine benchmark: simulated multiply-adds per second of every kind of unit (one command).

    python benchmarks/bench_engine.py [--quick] [--repeat N] [--record FILE] [--no-mmasim]
        [--case FAMILY ...] [--shape MxKxN ...]

One preset per kind and format family (:data:`CASES`: T-FDPA fp16, bf16, tf32, fp8 and
fp4 on NVIDIA units, the FMA chains in fp64 and fp32, E-FDPA, FTZ-AddMul, TR-FDPA,
GTR-FDPA, ST-FDPA and GST-FDPA with their block scales) at 64x1024x64, 16x4096x16 and
10x1,000,000x10 (M x K x N; ``--quick`` leaves out the last), through ``workbench.gemm``
(inputs checked, decomposed, computed, converted: the whole call).  Each row gives the
min/median/max wall time over ``--repeat`` calls (at most 3 at 10x1,000,000x10) after
an untimed one - more for calls of under :data:`SHORT_S` seconds, up to
:data:`SHORT_BUDGET_S` of calls (at most :data:`SHORT_MAX`), so that a sub-millisecond
call's median is not one scheduler hiccup away from another figure -, the simulated
MAC/s at the median, the threads the product ran on
(:func:`workbench._runtime.threads.threads_used`: numba's thread count, which
``NUMBA_NUM_THREADS`` or ``numba.set_num_threads`` set, for products of 2^18
multiply-adds and more; one below) and the one-minute load average when the row ended.

Every row also times numpy's own ``A @ B + C`` on the same values in the output's dtype
(float32; float64 for fp64 units: OpenBLAS' SGEMM/DGEMM) in the same run: ``/numpy`` is our
median time over numpy's.  ``--case FAMILY`` and ``--shape MxKxN`` (both repeatable) run a
subset, recorded nowhere unless ``--record`` says.

Where the ``mmasim`` package (MMA-Sim 2.1.1, extra ``oracle``) has the same instruction
(``benchmarks/_mmasim.py``), the same 64x1024x64 GEMM runs through it in the same
process on the same bit patterns: ``ratio`` is mmasim's median time over ours, and
``same`` says whether the output bits agree.

The figures, with the machine (CPU model, cores, numpy/numba/mmasim versions, load at
start and end), go to ``benchmarks/measured/engine.json`` (``--record``; a ``--quick`` run records
nothing unless asked); ``python benchmarks/readme_speed.py`` writes the README's speed table from
that file.  The package measured is this checkout's (the repository root goes first on
``sys.path``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import workbench as wb  # noqa: E402
from benchmarks import _machine  # noqa: E402
from benchmarks import _mmasim  # noqa: E402
from workbench.numbers import formats as _formats  # noqa: E402
from workbench.engine.operands import threads_used  # noqa: E402

#: (M, K, N) of the products timed; the mmasim comparison runs on the first.
SHAPES = [(64, 1024, 64), (16, 4096, 16), (10, 1_000_000, 10)]
MMASIM_SHAPE = SHAPES[0]
#: Products of this many multiply-adds or more are timed at most BIG_REPEAT times (the
#: slowest kinds take seconds per call there).
BIG, BIG_REPEAT = 10**8, 3
#: Calls whose first timed call is shorter than SHORT_S seconds are timed SHORT_BUDGET_S /
#: (that time) times, at most SHORT_MAX and at least ``--repeat``.
SHORT_S, SHORT_BUDGET_S, SHORT_MAX = 0.01, 0.25, 200


class Case(NamedTuple):
    """One row group: the family it stands for and the preset's arguments."""
    family: str
    arch: str
    in_format: str
    out_format: str
    instruction: str | None = None
    variant: str | None = None


#: One preset per kind and format family (Xie et al. 2025 Tables 3-7 name their units).
CASES = [
    Case("T-FDPA fp16 (NVIDIA)", "volta", "fp16", "fp32"),
    Case("T-FDPA fp16 (NVIDIA)", "hopper", "fp16", "fp32"),
    Case("T-FDPA bf16 (NVIDIA)", "ampere", "bf16", "fp32"),
    Case("T-FDPA tf32 (NVIDIA)", "ampere", "tf32", "fp32"),
    Case("T-FDPA fp8 (NVIDIA)", "hopper", "fp8_e4m3", "fp32"),
    Case("T-FDPA fp8 mma.sync (NVIDIA)", "hopper", "fp8_e4m3", "fp32", instruction="mma.sync"),
    Case("T-FDPA fp4 (NVIDIA)", "blackwell", "fp4_e2m1", "fp32"),
    Case("FMA chain fp64", "ampere", "fp64", "fp64"),
    Case("FMA chain fp32", "cdna1", "fp32", "fp32"),
    Case("E-FDPA fp16", "cdna1", "fp16", "fp32"),
    Case("FTZ-AddMul fp16", "cdna2", "fp16", "fp32"),
    Case("TR-FDPA fp16", "cdna3", "fp16", "fp32"),
    Case("GTR-FDPA fp8", "cdna3", "fp8_e4m3fnuz", "fp32"),
    Case("ST-FDPA MXFP8 (scaled)", "blackwell", "fp8_e4m3", "fp32", variant="mx"),
    Case("GST-FDPA NVFP4 (scaled)", "blackwell", "fp4_e2m1", "fp32", variant="nvfp4"),
]


def _values(shape: tuple[int, int], fmt: str, rng: np.random.Generator) -> np.ndarray:
    """Normal random values rounded to ``fmt`` (to nearest, overflow saturated)."""
    f = _formats.format(fmt)
    return _formats.round(rng.standard_normal(shape), f, "rne", saturate=True)


def _operands(model: Any, M: int, K: int, N: int, rng: np.random.Generator) -> dict[str, Any]:
    """A, B, C (and the block scales of a scaled unit) of one product."""
    ops: dict[str, Any] = {"A": _values((M, K), model.in_format, rng), "B": _values((K, N), model.in_format, rng),
                           "C": _values((M, N), model.out_format, rng)}
    if model.kind in ("st-fdpa", "gst-fdpa"):
        blocks = -(-K // model.k_block)
        for name, shape in (("scale_a", (M, blocks)), ("scale_b", (blocks, N))):
            ops[name] = _formats.round(2.0 ** rng.uniform(-3, 3, size=shape), _formats.format(model.scale_format),
                                       "rne", saturate=True)
    return ops


def _times(fn: Any, repeat: int) -> tuple[list[float], Any]:
    """Wall seconds of ``repeat`` calls of ``fn`` after one untimed call (which compiles or
    loads the kernels; more calls for short ones: see :data:`SHORT_S`) and its last result.
    The first timed call decides whether the call is short."""

    def timed() -> Any:
        t = time.perf_counter()
        result = fn()
        times.append(round(time.perf_counter() - t, 7))   # 0.1 us: the record stays small
        return result

    times: list[float] = []
    fn()
    out = timed()
    if times[0] < SHORT_S:
        repeat = max(repeat, min(SHORT_MAX, int(SHORT_BUDGET_S / max(times[0], 1e-6))))
    while len(times) < repeat:
        out = timed()
    return times, out


def _mmasim_times(model: Any, ops: dict[str, Any], D: np.ndarray, repeat: int) -> dict[str, Any] | None:
    """mmasim's times on the same bit patterns and whether its output bits equal ``D``'s;
    None when mmasim (or torch) is missing or has no such instruction."""
    try:
        op = _mmasim.mmasim_op(model)
    except ImportError:
        return None
    if op is None:
        return None
    fin, fout = model.in_format, model.out_format
    tA, tB, tC = (_mmasim.torch_tensor(_mmasim.bits_of(ops[k], f), f) for k, f in (("A", fin), ("B", fin),
                                                                                     ("C", fout)))
    sc = ()
    if "scale_a" in ops:        # block scales: mmasim takes them as E8M0/UE4M3 bit patterns
        sf = str(model.scale_format)
        sc = tuple(_mmasim.scale_tensor(_mmasim.bits_of(ops[k], sf), sf) for k in ("scale_a", "scale_b"))
    times, Dm = _times(lambda: _mmasim.run(model, op, tA, tB, tC, *sc), repeat)
    ut = _formats.format(fout).bits_dtype
    return {"seconds": times, "same_bits": bool((Dm.numpy().view(ut) == D.view(ut)).all())}


def _summary(times: list[float]) -> dict[str, float]:
    return {"min_s": min(times), "median_s": statistics.median(times), "max_s": max(times)}


def run_case(case: Case, shape: tuple[int, int, int], repeat: int, with_mmasim: bool,
             rng: np.random.Generator) -> dict[str, Any]:
    """The record of one (case, shape) row."""
    model = wb.preset(case.arch, case.in_format, case.out_format, instruction=case.instruction,
                      variant=case.variant)
    M, K, N = shape
    ops = _operands(model, M, K, N, rng)
    kwargs = {k: ops[k] for k in ("scale_a", "scale_b") if k in ops}
    times, D = _times(lambda: wb.gemm(ops["A"], ops["B"], ops["C"], model=model, **kwargs), repeat)
    row: dict[str, Any] = {"family": case.family, "preset": model.name, "kind": model.kind, "m": M, "k": K, "n": N,
                           "repeat": len(times), "seconds": times, **_summary(times),
                           "mac_per_s": M * K * N / statistics.median(times), "threads": threads_used(M * K * N)}
    # numpy's own A @ B + C on the same values, in the output's dtype (float32, or float64 for fp64 units)
    dtype = np.float64 if model.out_format == "fp64" else np.float32
    A, B, C = (np.ascontiguousarray(ops[k], dtype=dtype) for k in ("A", "B", "C"))
    np_times, _ = _times(lambda: A @ B + C, repeat)
    row["numpy"] = {"dtype": np.dtype(dtype).name, "seconds": np_times, **_summary(np_times)}
    row["numpy_ratio"] = row["median_s"] / row["numpy"]["median_s"]
    if with_mmasim and shape == MMASIM_SHAPE:
        m = _mmasim_times(model, ops, D, max(1, min(repeat, 3)))
        if m is not None:
            row["mmasim"] = {**m, **_summary(m["seconds"])}
            row["mmasim_ratio"] = row["mmasim"]["median_s"] / row["median_s"]
    row["load"] = _machine.load()[:1]
    return row


def _print_row(r: dict[str, Any]) -> None:
    mm = r.get("mmasim")
    ratio = f"{r['mmasim_ratio']:.0f}x" if mm else "-"
    same = str(mm["same_bits"]) if mm else "-"
    load = f"{r['load'][0]:.2f}" if r["load"] else "-"
    print(f"{r['family']:29s} {r['preset']:46s} {r['m']}x{r['k']}x{r['n']:<4d} {r['min_s']:9.4f} {r['median_s']:9.4f} "
          f"{r['max_s']:9.4f} {r['mac_per_s']:9.3g} {r['threads']:3d} {ratio:>7s} {same:>5s} "
          f"{r['numpy_ratio']:7.1f}x {load:>5s}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the 10 x 1,000,000 x 10 product")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per row (default 5)")
    ap.add_argument("--record", default=None, help="results file (default benchmarks/measured/engine.json; "
                                                     "none with --quick)")
    ap.add_argument("--no-mmasim", action="store_true", help="do not time mmasim")
    ap.add_argument("--case", action="append", default=None, metavar="FAMILY",
                    help="only the cases of this family (repeatable; e.g. 'T-FDPA fp16 (NVIDIA)')")
    ap.add_argument("--shape", action="append", default=None, metavar="MxKxN",
                    help="these shapes instead of the default three (repeatable; e.g. 1024x1024x1024)")
    args = ap.parse_args(argv)
    families = sorted({c.family for c in CASES})
    for f in args.case or ():
        if f not in families:
            ap.error(f"--case {f!r}: expected one of {families}")
    try:
        chosen = [tuple(int(v) for v in s.split("x")) for s in args.shape] if args.shape else None
    except ValueError:
        ap.error(f"--shape {args.shape}: expected M x K x N as three positive integers, e.g. 64x1024x64")
    if chosen is not None and any(len(s) != 3 or min(s) < 1 for s in chosen):
        ap.error(f"--shape {args.shape}: expected M x K x N as three positive integers, e.g. 64x1024x64")
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: expected at least 1")
    try:
        import mmasim  # noqa: F401
        import torch  # noqa: F401
        with_mmasim = not args.no_mmasim
    except ImportError:
        with_mmasim = False
        print("mmasim not installed (pip install -e '.[oracle]'): no ratios")
    machine = _machine.describe()
    import numba

    print(f"workbench: {wb.__file__}")
    print(f"{machine['cpu']}, {machine['cores']} cores; numba threads {numba.get_num_threads()}; "
          f"load average at start: {' '.join(f'{x:.2f}' for x in machine['load_start'])}")
    print(f"{'family':29s} {'preset':46s} {'M x K x N':14s} {'min s':>9s} {'median s':>9s} {'max s':>9s} "
          f"{'MAC/s':>9s} {'thr':>3s} {'mmasim':>7s} {'same':>5s} {'/numpy':>8s} {'load':>5s}")
    shapes = chosen or [s for s in SHAPES if not (args.quick and s[1] >= 1_000_000)]
    rng = np.random.default_rng(1)
    rows = []
    for case in [c for c in CASES if args.case is None or c.family in args.case]:
        for shape in shapes:
            repeat = args.repeat if shape[0] * shape[1] * shape[2] < BIG else min(args.repeat, BIG_REPEAT)
            rows.append(run_case(case, shape, repeat, with_mmasim, rng))
            _print_row(rows[-1])
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in _machine.load())}")
    record = args.record or (None if args.quick or args.case or args.shape else _machine.MEASURED / "engine.json")
    if record:
        _machine.write(Path(record), {"benchmark": "bench_engine", "quick": args.quick, "repeat": args.repeat,
                                      "numba_threads": numba.get_num_threads(), "machine": machine,
                                      "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
