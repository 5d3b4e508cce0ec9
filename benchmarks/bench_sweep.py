"""Benchmark: the full Khattak-Mikaitis Figure 7 grid through ``workbench.sweep``.

    python benchmarks/bench_sweep.py [--quick] [--workers N] [--out DIR] [--scheduler ADDRESS] [--record FILE]

Runs ``experiments/fig7_multiword.toml`` (660 tasks: 20 sizes up to n = 10^6, fp16 and
bf16 with 1-3 words, fp8 E5M2 with 1/4/6 words, the figure's models) into a fresh
folder, prints the wall time, the user and system CPU time of this process and its
workers, the load average before and after, the simulated multiply-accumulates per
second and, per (format, words, model), the median ratio of our error to the published
one (the inputs differ: MATLAB's rng(1) stream cannot be reproduced, so expect the
same curves, not the same digits).  Target: the full grid in under 3 minutes on an
idle 2-core machine, system time a small fraction of user time.  The full grid's
figures go to ``benchmarks/measured/sweep.json`` (``--record``), which
``benchmarks/readme_speed.py`` quotes in the README.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import _machine  # noqa: E402

FIG7_DATA = ROOT / "paper_data" / "khattak2025_fig7"


def _products(words: int) -> int:
    """Word products of the p-word algorithm: p(p+1)/2."""
    return words * (words + 1) // 2


def _published() -> dict[tuple[str, int, str], dict[int, float]]:
    import pandas as pd

    names = {"binary16": "fp16", "bfloat16": "bf16", "fp8-e5m2": "fp8_e5m2"}
    out = {}
    for f in FIG7_DATA.glob("matmul_test_*_binary32_words_*_model_*.csv"):
        parts = f.stem.split("_")
        d = pd.read_csv(f)
        out[(names[parts[2]], int(parts[5]), parts[7])] = dict(zip(d["n"], d["error"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the [quick] grid (4 sizes up to 14384)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", default=None)
    parser.add_argument("--out", default=None, help="results folder (default: a fresh temporary one)")
    parser.add_argument("--record", default=None,
                        help="results file (default: benchmarks/measured/sweep.json for the full grid, none for --quick)")
    parser.add_argument("--overhead", action="store_true",
                        help="the same grid with numpy float64 products instead of the models: measures the "
                             "runner's own cost (inputs, exact references, storage)")
    args = parser.parse_args(argv)

    import tomllib

    import workbench.sweep as sweep
    from workbench.sweep.pool import worker_environment

    raw = tomllib.loads((ROOT / "experiments" / "fig7_multiword.toml").read_text())
    algo = raw["defaults"]["algorithm"]
    if args.overhead:
        algo = raw["defaults"]["algorithm"] = "numpy"
        for g in raw["grid"]:
            g["params"] = {"dtype": "float64"}
    exp = sweep.parse(raw, quick=args.quick)
    macs = sum(t.spec["m"] * t.spec["k"] * t.spec["n"] * _products(t.spec["params"].get("words", 1))
               for t in exp.tasks)
    tmp = None
    out = args.out
    if out is None:
        tmp = tempfile.mkdtemp(prefix="bench_sweep_")
        out = tmp
    machine = _machine.describe()
    env = worker_environment(args.workers) if args.workers > 1 and not args.scheduler else {}
    threads = int(env.get("NUMBA_NUM_THREADS", 0)) or None
    print(f"Figure 7 grid{' (quick)' if args.quick else ''}: {len(exp)} tasks, "
          f"{len({t.input_hash for t in exp.tasks})} inputs, {macs:.3g} simulated MACs, algorithm {algo!r}, "
          f"{'scheduler ' + args.scheduler if args.scheduler else f'{args.workers} workers'}"
          f"{f' x {threads} threads' if threads else ''} on {machine['cores']} cores ({machine['cpu']})")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in machine['load_start'])}")
    r0 = _rusage()
    t0 = time.perf_counter()
    df = sweep.run(raw, out=out, workers=args.workers, scheduler=args.scheduler, quick=args.quick)
    wall = time.perf_counter() - t0
    user, system = (b - a for a, b in zip(r0, _rusage()))
    n_err = int(df["error"].notna().sum())
    cpu = df["cpu_s"].sum()
    print(f"CPU time of the tasks {cpu:.0f} s ({cpu / 60:.1f} min; {macs / cpu:.3g} simulated MAC per CPU-second): "
          f"on 2 otherwise idle cores about {cpu / 2 / 60:.1f} min")
    print(f"wall time {wall:.1f} s ({wall / 60:.2f} min), user {user:.1f} s, system {system:.1f} s "
          f"(this process and its workers); load average after: {' '.join(f'{x:.2f}' for x in _machine.load())}")
    print(f"{macs / wall:.3g} simulated MAC/s; {n_err} task errors; "
          f"reference time {df['reference_s'].drop_duplicates().sum():.1f} s (summed over inputs)")
    record = args.record or (None if args.quick or args.overhead or args.scheduler else
                             str(ROOT / "benchmarks" / "measured" / "sweep.json"))
    if record:
        _machine.write(Path(record), {
            "benchmark": "bench_sweep", "grid": "fig7_multiword" + (" (quick)" if args.quick else ""),
            "tasks": len(exp), "macs": macs, "workers": args.workers, "threads_per_worker": threads,
            "wall_s": round(wall, 2), "user_s": round(user, 2), "system_s": round(system, 2),
            "task_errors": n_err, "machine": machine})
    if n_err:
        print(df.loc[df["error"].notna(), "error"].value_counts().head(5).to_string())
    if args.overhead:
        print(f"per task: {wall / len(df) * args.workers:.3f} s of a worker on average")
    else:
        _compare(df)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _rusage() -> tuple[float, float]:
    """(user, system) CPU seconds of this process and of its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + children.ru_utime, own.ru_stime + children.ru_stime


def _compare(df) -> None:
    """Per (format, words, model): median ratio of our error to the published one; worst error/bound."""
    published = _published()
    model_name = {("V100", None, None): "v100", ("A100", None, None): "a100", ("H100", None, None): "h100",
                  ("L40S", None, None): "l40s", ("B200", None, None): "b200", ("B200", "mma.sync", None): "b200",
                  ("B200", None, "rn"): "b200rn"}
    ok = df[df["error"].isna()].copy()
    for col in ("instruction", "variant"):  # the results table drops columns no task sets
        if col not in ok:
            ok[col] = None
    print("format    words model   median(ours/published) over n   max ours/bound")
    for key, g in ok.groupby(["in_format", "param.words", "preset", "instruction", "variant"], dropna=False):
        fmt, words, preset, instr, variant = key
        instr = None if isinstance(instr, float) else instr
        variant = None if isinstance(variant, float) else variant
        name = model_name[(preset, instr, variant)]
        pub = published[(fmt, int(words), name)]
        ratios = [e / pub[k] for k, e in zip(g["k"], g["normwise_inf"]) if pub.get(k, 0) > 0 and e > 0]
        print(f"{fmt:9s} {int(words):5d} {name:7s} {np.median(ratios) if ratios else float('nan'):12.3g}"
              f"{(g['normwise_inf'] / g['multiword_bound']).max():28.3g}")


if __name__ == "__main__":
    sys.exit(main())
