"""Benchmark: the GPU back end (``workbench.gemm(..., device="cuda")``, issue 21 item 3).

    python benchmarks/bench_gpu.py [--size 4096] [--repeats 3] [--presets NAME ...] [--skip-grid] [--quick-grid]
                                   [--skip-presets] [--workers N] [--mps]

Needs an NVIDIA GPU, a CUDA driver and numba-cuda (``pip install -e '.[gpu]'``); without
them it says so and exits with status 2.  Prints, for each T-FDPA preset (default: one
per architecture and input format, the catalogue's defaults), the simulated MAC/s of an
``size^3`` product on the GPU - the kernel with its transfers (``engine.gpu.run_prepared``
on operands already decomposed) and the whole ``gemm`` call (input checks and
decomposition on the CPU included) - as min/median/max over ``repeats``, the outputs
checked bit for bit against the first run; then the wall time of the full Figure 7 grid
(``experiments/fig7_multiword.toml``, 660 tasks) with every unit GEMM on the GPU
(exact references on the CPU; ``--workers`` processes of one thread, after the quick grid
has compiled the kernels).  Targets on one H100: >= 1e11 simulated MAC/s at
4096^3 for T-FDPA presets; the grid in under 30 s.

The grid's products are 10 x k x 10: 100 outputs, one thread each, so one product
occupies one of the GPU's 132 SMs, and its chain over k is bound by one thread's
latency.  Kernels of different processes do not run at the same time on a GPU (the
driver time-slices their contexts), so the workers' products queue one after another
unless NVIDIA's Multi-Process Service (MPS) merges their work into one context:
``--mps`` starts a private MPS control daemon (``nvidia-cuda-mps-control -d`` with its
pipe and log folders in a temporary folder, named to the clients by
``CUDA_MPS_PIPE_DIRECTORY``/``CUDA_MPS_LOG_DIRECTORY``; the GPU's settings are not
touched), runs the measurements in a child process under it and stops it at the end;
where the daemon cannot start it says why and the child runs without it.  On one H100
(16 cores, 14 workers) the full grid took 29.7 s and 32.0 s with ``--mps`` and 107.7 s
without (``benchmarks/measured/gpu.txt``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _stats(xs: list[float]) -> str:
    return f"min {min(xs):.3g}  median {statistics.median(xs):.3g}  max {max(xs):.3g}"


def _default_presets() -> list[str]:
    from workbench.units import catalogue

    seen: set[tuple[str, str]] = set()
    names = []
    for r in catalogue.records():
        key = (r.architecture, r.in_format)
        if r.kind == "t-fdpa" and r.default and key not in seen:
            seen.add(key)
            names.append(r.name)
    return names


def bench_presets(names: list[str], size: int, repeats: int) -> None:
    import workbench as wb
    from workbench.units import catalogue
    from workbench.engine import core, gpu

    records = {r.name: r for r in catalogue.records()}
    rng = np.random.default_rng(0)
    X = rng.standard_normal((size, size))
    Y = rng.standard_normal((size, size))
    macs = float(size) ** 3
    print(f"{size}x{size}x{size} on the GPU, {repeats} repeats; simulated MAC/s (kernel with its transfers | "
          f"whole gemm call)")
    for name in names:
        model = records[name]
        A = wb.round(X, model.in_format)
        B = wb.round(Y, model.in_format)
        ops = core.prepare(model, A, B)
        wb.gemm(A[:3, :5], B[:5, :2], model=model, device="cuda")     # compiles this kind's kernel first
        C = np.zeros((size, size))
        kernel, whole, first = [], [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            D = gpu.run_prepared(model, ops, C)
            kernel.append(macs / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            wb.gemm(A, B, model=model, device="cuda")
            whole.append(macs / (time.perf_counter() - t0))
            if first is None:
                first = D
            elif not np.array_equal(first.view(np.uint64), D.view(np.uint64)):
                raise SystemExit(f"{name}: two GPU runs of the same product differ")
        print(f"  {name:40s} kernel {_stats(kernel)} | gemm {_stats(whole)}", flush=True)


def bench_grid(quick: bool, workers: int) -> None:
    import tomllib

    import workbench.sweep as sweep

    raw = tomllib.loads((ROOT / "experiments" / "fig7_multiword.toml").read_text())
    for table in raw["grid"]:                       # every unit GEMM on the GPU
        table["params"] = dict(table.get("params", {}), device="cuda")
    runs = [(True, "warm-up: the quick grid, compiling the kernels")] if not quick else []
    runs.append((quick, "timed"))
    for q, what in runs:
        exp = sweep.parse(raw, quick=q)
        with tempfile.TemporaryDirectory(prefix="bench_gpu_") as out:
            t0 = time.perf_counter()
            df = sweep.run(raw, out=out, workers=workers, threads_per_worker=1, quick=q, progress=False)
            wall = time.perf_counter() - t0
        errors = int(df["error"].notna().sum())
        print(f"Figure 7 grid{' (quick)' if q else ''} on the GPU ({what}): {len(exp)} tasks, wall time {wall:.1f} s, "
              f"{errors} task errors ({workers} worker processes x 1 thread; exact references on the CPU); task "
              f"times: sum {df['elapsed_s'].sum():.1f} s, longest {df['elapsed_s'].max():.1f} s", flush=True)
        if errors:
            print(df.loc[df["error"].notna(), "error"].value_counts().head(5).to_string())


def run_under_mps(argv: list[str]) -> int:
    """This benchmark with ``argv`` (without ``--mps``) in a child process under a private
    MPS control daemon, stopped when the child is done (see the module docstring).  The
    child is the daemon's only client: its ``quit`` waits for every client to go, so this
    process never touches CUDA.  Where the daemon cannot start, the child runs without it
    and says why; where the daemon starts but its server cannot (seen at the child's first
    CUDA call), the child fails with CUDA's error.  SIGTERM (``timeout``) still stops the
    daemon."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))     # so that the finally below runs
    exe = shutil.which("nvidia-cuda-mps-control")
    child = [sys.executable, str(Path(__file__).resolve()), *argv]
    if exe is None:
        why = "MPS not used: nvidia-cuda-mps-control is not on PATH"
        return subprocess.run(child, env={**os.environ, "BENCH_GPU_MPS": why}).returncode
    with tempfile.TemporaryDirectory(prefix="bench_gpu_mps_", ignore_cleanup_errors=True) as tmp:
        env = {"CUDA_MPS_PIPE_DIRECTORY": os.path.join(tmp, "pipe"), "CUDA_MPS_LOG_DIRECTORY": os.path.join(tmp, "log")}
        for d in env.values():
            os.makedirs(d)
        daemon_env = {**os.environ, **env}
        try:
            started = subprocess.run([exe, "-d"], env=daemon_env, capture_output=True, text=True, timeout=30)
            why = (f"MPS not used: {exe} -d exited {started.returncode}: "
                   f"{(started.stderr or started.stdout).strip()}") if started.returncode else ""
        except subprocess.TimeoutExpired:
            why = f"MPS not used: {exe} -d did not return within 30 s"
        if why:
            return subprocess.run(child, env={**os.environ, "BENCH_GPU_MPS": why}).returncode
        try:
            return subprocess.run(child, env={**daemon_env, "BENCH_GPU_MPS": f"under a private MPS control daemon "
                                              f"({exe} -d)"}).returncode
        finally:
            try:
                subprocess.run([exe], input="quit\n", env=daemon_env, capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                print("bench_gpu: the MPS control daemon did not quit within 60 s", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--presets", nargs="*", default=None, help="preset names (workbench presets --help)")
    parser.add_argument("--skip-grid", action="store_true", help="only the T-FDPA products")
    parser.add_argument("--quick-grid", action="store_true", help="the [quick] Figure 7 grid")
    parser.add_argument("--skip-presets", action="store_true", help="only the Figure 7 grid")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="sweep worker processes for the grid (default: the cores but two)")
    parser.add_argument("--mps", action="store_true",
                        help="run under a private MPS daemon, so that the workers' kernels share the GPU")
    args = parser.parse_args(argv)
    if args.mps and "BENCH_GPU_MPS" not in os.environ:     # (the child never starts another daemon)
        return run_under_mps([a for a in argv if a != "--mps"])
    return _measure(args, os.environ.get("BENCH_GPU_MPS", "MPS not asked for (--mps)"))


def _measure(args: argparse.Namespace, mps: str) -> int:
    """The measurements ``args`` ask for; ``mps`` says whether the MPS daemon runs."""
    from workbench.engine import gpu

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        print("bench_gpu: NUMBA_ENABLE_CUDASIM=1 makes numba.cuda the simulator; unset it to measure a GPU",
              file=sys.stderr)
        return 2
    try:
        cuda = gpu.cuda_module()
    except gpu.GPUUnavailableError as exc:
        print(f"bench_gpu: no GPU to measure: {exc}", file=sys.stderr)
        return 2
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    print(f"GPU: {name} (compute capability {dev.compute_capability}); CPU load "
          f"{os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores; {mps}")
    if not args.skip_presets:
        bench_presets(args.presets or _default_presets(), args.size, args.repeats)
    if not args.skip_grid:
        bench_grid(args.quick_grid, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
