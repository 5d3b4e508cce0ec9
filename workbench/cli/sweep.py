"""``workbench sweep EXPERIMENT[.toml] [--out DIR] [--workers N] [--threads-per-worker N] [--scheduler ADDRESS] [--quick]
[--retry-errors] [--no-progress] [--dry-run]``."""

from __future__ import annotations

import argparse
import sys

from ..numbers.validation import cli_positive_int

HELP = "run a parameter sweep from an experiment file (parallel, resumable, Dask-ready)"
SHOWS_COMPILING = True     # its progress bar says "compiling kernels (first run only)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``sweep`` command."""
    parser.add_argument("experiment", help="experiment file (TOML), e.g. experiments/fig7_multiword.toml, or the "
                        "name of one the package carries, e.g. fig7_multiword (workbench experiments lists them)")
    parser.add_argument("--out", default=None, help="results folder (default results/<experiment name>)")
    parser.add_argument("--workers", type=cli_positive_int, default=None,
                        help="local worker processes (default: CPU count; 1 = in this process)")
    parser.add_argument("--threads-per-worker", type=cli_positive_int, default=None, metavar="N",
                        help="compute threads of each worker (default: CPUs // workers; workers x N may not "
                             "exceed the CPUs)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="dask.distributed scheduler address, e.g. tcp://host:8786, or the scheduler file that "
                             "'dask scheduler --scheduler-file FILE' writes (runs on that cluster)")
    parser.add_argument("--quick", action="store_true", help="apply the file's [quick] overrides (small grid)")
    parser.add_argument("--retry-errors", action="store_true", help="re-run stored tasks that recorded an error")
    parser.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    parser.add_argument("--dry-run", action="store_true",
                        help="list every 'module:function' the file would import (its code: algorithms, metrics, "
                             "reference) before importing any, then resolve every task (unit, formats, algorithm "
                             "and its params) and list every invalid one, check the results folder's version, print "
                             "the number of tasks and pending tasks; run no task (exit 1 when a task is invalid or "
                             "the folder holds another version)")


def _print_imports(names: list[tuple[str, str]]) -> None:
    """The code an experiment file names (:func:`workbench.sweep.spec.imports`), printed
    (and flushed) before the dry run resolves the algorithms, which imports them."""
    if not names:
        print("imports: none (built-in algorithms, metrics and reference only)", flush=True)
        return
    print("imports (the file runs this code, like a script: trust it as you would these modules):")
    width = max(len(key) for key, _ in names)
    for key, name in names:
        print(f"  {key.ljust(width)}  {name}")
    sys.stdout.flush()


def run_command(args: argparse.Namespace) -> int:
    """Run the sweep described by ``args``; print a summary; 0 if every task succeeded, 1 otherwise."""
    from pathlib import Path

    from ..sweep import runner, spec, store, tasks

    if args.dry_run:
        exp = spec.parse(args.experiment, quick=args.quick)
        out = Path(args.out) if args.out else runner.default_out(exp.name)
        done = store.done_hashes(out) if out.is_dir() else set()
        pending = sum(t.hash not in done for t in exp.tasks)
        inputs = len({t.input_hash for t in exp.tasks})
        left = f", {exp.excluded} left out by exclude" if exp.excluded else ""
        print(f"{exp.name}: {len(exp.tasks)} tasks on {inputs} inputs, {pending} pending (results in {out}; "
              f"version {exp.digest}{left})")
        _print_imports(spec.imports(args.experiment, exp))
        status = 0
        bad = tasks.invalid_tasks(exp.tasks)
        if bad:
            print(f"{len(bad)} invalid tasks (a real run would refuse to start):")
            for _, why in bad:
                print(f"  {why}")
            status = 1
        try:
            store.check_version(out, exp.name, exp.digest, spec.task_hashes(args.experiment, exp))
        except store.StaleResultsError as exc:
            print(f"refused: {exc}")
            status = 1
        return status
    df = runner.run(args.experiment, out=args.out, workers=args.workers, scheduler=args.scheduler,
                    quick=args.quick, progress=not args.no_progress, retry_errors=args.retry_errors,
                    threads_per_worker=args.threads_per_worker)
    n_err = int(df["error"].notna().sum()) if "error" in df.columns else 0
    name = df["experiment"].iloc[0] if len(df) else "experiment"
    folder = args.out or str(runner.default_out(name))
    print(f"{name}: {len(df)} tasks stored in {folder}, {n_err} with errors")
    if n_err:
        first = df.loc[df["error"].notna(), ["task_hash", "error"]].head(5)
        for h, e in first.itertuples(index=False):
            print(f"  {h}: {e}")
    return 1 if n_err else 0
