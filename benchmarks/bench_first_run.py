"""The first ten minutes of a new user: cold-cache times of the first compile and of README (a) and (b).

    python benchmarks/bench_first_run.py [--repeat N] [--workers 2] [--compile-only] [--tests]

Each repetition points ``NUMBA_CACHE_DIR`` at a new empty folder (as on a fresh clone,
where no kernel is compiled yet) and times, in fresh processes:

* first compile: what ``workbench reproduce --quick`` compiles before its first notebook
  (:func:`workbench.sweep.warmup.compile_experiments` on the four experiment files and
  :data:`~workbench.sweep.warmup.KERNEL_TOUR`);
* (a) cold: ``workbench reproduce --quick`` (README command (a) after ``pip install``);
* (a) warm: the same again with the now filled cache but empty results and figure
  folders (every sweep recomputed, nothing compiled).

``--tests`` times README command (b) instead, ``python -m pytest -q`` in a fresh clone of
this checkout's HEAD (``git clone``: no ``__pycache__``, no pytest cache) with an empty
numba cache, and where its time goes:

* (b) warm-up: ``tests/warm_kernels.py 1`` and ``2`` in two processes at once, as
  ``tests/conftest.py`` starts them, on an empty cache (the cold compile of the kernel tour);
* (b) collect: ``pytest --collect-only -n 0`` with the warm-up off, once the cache is warm
  (what each xdist worker spends importing and collecting before its first test);
* (b) cold: the whole command on an empty cache; pytest's own "in N s" (from its session
  start, after the warm-up) is printed beside it, and where its compile time went: every
  numba compilation of the run is logged (``tests/compile_log.py``) and summed by process
  (warm-up halves, xdist workers), by function, and for the signatures that more than one
  process compiled.  ``--cold-only`` times just this step;
* (b) second clone: the whole command again in a second fresh clone at another path, on the
  cache the cold run filled (the compiled code is keyed by the sources' content,
  ``workbench/_runtime/compile_cache.py``: nothing of the package should compile), with its
  compile log.  ``--no-second-clone`` leaves it out.

Results and figures go to temporary folders, so the working tree is not touched.  Prints
min/median/max over the repetitions and the load average before and after: the targets
(first compile < 60 s, (a) < 5 min) are for an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ("preset_discrepancy", "fig7_multiword", "markidis_vs_ootomo", "cdna3_rounding_bias")
COMPILE = ("from workbench.sweep.warmup import KERNEL_TOUR, compile_experiments; "
           f"s, n = compile_experiments([{', '.join(repr(str(ROOT / 'experiments' / (e + '.toml'))) for e in EXPERIMENTS)}, "
           "KERNEL_TOUR], quick=True, progress=False); print(n, 'compilations')")


def _mmm(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in (min(values), statistics.median(values), max(values)))


def _timed(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="repetitions (each takes minutes; default 1)")
    ap.add_argument("--workers", type=int, default=2, help="sweep worker processes of (a) (default 2, as README)")
    ap.add_argument("--compile-only", action="store_true", help="time only the first compile")
    ap.add_argument("--tests", action="store_true", help="time README (b), the test suite, instead of (a)")
    ap.add_argument("--cold-only", action="store_true", help="with --tests: only the whole cold command")
    ap.add_argument("--no-second-clone", action="store_true",
                    help="with --tests: not the second clone on the filled cache")
    args = ap.parse_args()
    if args.tests:
        return tests_cold(args.repeat, parts=not args.cold_only, second=not args.no_second_clone)
    workbench = str(Path(sys.executable).parent / "workbench")
    times: dict[str, list[float]] = {"first compile": []} if args.compile_only else {
        "first compile": [], "(a) cold": [], "(a) warm": []}
    load_before = os.getloadavg()
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-first-run-") as tmp:
            tmp = Path(tmp)
            env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba-cache"))
            times["first compile"].append(_timed([sys.executable, "-c", COMPILE], env))
            if args.compile_only:
                continue
            for label, cache in (("(a) cold", "numba-cache-a"), ("(a) warm", "numba-cache-a")):
                run = tmp / label.replace(" ", "_").strip("()")
                env["NUMBA_CACHE_DIR"] = str(tmp / cache)
                times[label].append(_timed([workbench, "reproduce", "--quick", "--workers", str(args.workers),
                                            "--results-dir", str(run / "results"),
                                            "--figures-dir", str(run / "figures")], env))
    load_after = os.getloadavg()
    print(f"cold-cache first run on {os.cpu_count()} CPUs, {args.repeat} repetition(s); "
          f"load average (1, 5, 15 min) before {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, "
          f"after {load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}")
    print(f"{'step':<16}{'min s':>9}{'median s':>10}{'max s':>9}  target (idle 2-core machine)")
    targets = {"first compile": "< 60 s", "(a) cold": "< 300 s", "(a) warm": ""}
    for label, values in times.items():
        print(f"{label:<16}{min(values):9.1f}{statistics.median(values):10.1f}{max(values):9.1f}  {targets[label]}")


def _pytest(clone: Path, env: dict[str, str], times: dict[str, list[float]], label: str) -> None:
    """README (b) in ``clone``: its wall time under ``label``, pytest's own under ``label + ' pytest says'``."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=clone, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    times[label].append(time.perf_counter() - t0)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    said = re.search(r" in ([0-9.]+)s", summary)
    times[label + " pytest says"].append(float(said[1]) if said else float("nan"))
    print(f"{label}: {summary}", flush=True)
    if done.returncode != 0:
        print(done.stdout[-3000:])


def tests_cold(repeat: int, parts: bool = True, second: bool = True) -> None:
    """README (b) on a fresh clone with an empty numba cache, and its parts (module docstring)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from compile_log import ENV, summarise

    times: dict[str, list[float]] = {"(b) cold": [], "(b) cold pytest says": []}
    if second:
        times.update({"(b) second clone": [], "(b) second clone pytest says": []})
    if parts:
        times = {"(b) warm-up": [], "(b) collect": [], **times}
    load_before = os.getloadavg()
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-first-run-b-") as tmp:
            clone = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
            env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba-cache-parts"))
            env.pop(ENV, None)
            warm = [sys.executable, "-c", "import subprocess, sys; ps = [subprocess.Popen([sys.executable, "
                    "'tests/warm_kernels.py', g]) for g in ('1', '2')]; sys.exit(max(p.wait() for p in ps))"]
            if parts:
                times["(b) warm-up"].append(_timed(warm, env, cwd=clone))
                times["(b) collect"].append(_timed([sys.executable, "-m", "pytest", "-q", "--collect-only", "-n",
                                                    "0", "-p", "no:cacheprovider"],
                                                   dict(env, WORKBENCH_TEST_WARMUP="0"), cwd=clone))
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-cache-b")
            env[ENV] = str(Path(tmp) / "compile-log")
            _pytest(clone, env, times, "(b) cold")
            print(summarise(Path(env[ENV])), flush=True)
            if second:
                clone2 = Path(tmp) / "elsewhere" / "clone-2"
                subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone2)], check=True)
                env[ENV] = str(Path(tmp) / "compile-log-2")
                _pytest(clone2, env, times, "(b) second clone")
                print(summarise(Path(env[ENV])), flush=True)
    load_after = os.getloadavg()
    print(f"README (b) cold on {os.cpu_count()} CPUs, {repeat} repetition(s); load average (1, 5, 15 min) before "
          f"{load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, after {load_after[0]:.1f} "
          f"{load_after[1]:.1f} {load_after[2]:.1f}")
    print(f"{'step':<30}{'min s':>9}{'median s':>10}{'max s':>9}  target (idle 2-core machine)")
    for label, values in times.items():
        target = "< 360 s" if label == "(b) cold" else ""
        print(f"{label:<30}{min(values):9.1f}{statistics.median(values):10.1f}{max(values):9.1f}  {target}")
    if second:
        ratio = [b / a for a, b in zip(times["(b) cold"], times["(b) second clone"])]
        print(f"second clone / cold, same run: {_mmm(ratio)}")


if __name__ == "__main__":
    main()
