"""Running an experiment: pending tasks -> executor -> rows on disk -> DataFrame.

Scheduling: first the cheapest task of each kernel group runs in the submitting
process, so that numba compiles each kernel once (:mod:`workbench.sweep.warmup`);
the workers load the compiled kernels from the cache.  Then the tasks are grouped by input (``input_hash``: generator, sizes,
seed, rounding, reference kind, alpha, beta).  One reference job per input with
pending tasks is submitted first (largest first); when it finishes, that input's
tasks are submitted with the reference as an argument, so an exact reference is
computed once per input and shared by every preset and algorithm; queued jobs
start references first, then the costliest task.  Workers
regenerate the (deterministic) inputs themselves and cache the last four (tasks
of neighbouring costs come from a few inputs).  Each
finished task's row is written to disk before the next result is looked at.

Faults: a job whose worker dies is run again (:data:`WORKER_RETRIES` times at most;
:mod:`workbench.sweep.pool` tells exactly which job was on the dead worker), and the
workers exit when this process dies, so a killed sweep leaves nothing running and
resumes from its stored rows.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from . import pool as _pool
from . import spec as _spec
from . import store as _store
from . import tasks as _tasks
from . import warmup as _warmup

#: Seconds without any worker on a Dask scheduler after which a sweep says so on stderr.
NO_WORKER_NOTICE = 60.0

#: Seconds a sweep waits at least for a scheduler file to hold an address (the scheduler starting).
SCHEDULER_FILE_WAIT = 60.0

#: How many times a job whose worker died (or whose result was lost on the way) is run again;
#: after that its task is stored as an error row that says so.
WORKER_RETRIES = 2


class _SerialExecutor:
    """Runs the jobs in this process (``workers=1``), one each time the runner waits for
    one - the highest priority first, as the pool starts them - so that every result is
    recorded (and its row stored) before the next job starts: a serial sweep that is
    killed keeps every task it finished."""

    def __init__(self) -> None:
        self._queued: dict[cf.Future, tuple[Any, tuple[Any, ...], float]] = {}

    def submit(self, fn: Any, *args: Any, priority: float = 0.0) -> cf.Future:
        fut: cf.Future = cf.Future()
        self._queued[fut] = (fn, args, priority)
        return fut

    def wait_any(self, futures: set) -> set:
        done = {f for f in futures if f.done()}
        queued = [f for f in futures if f in self._queued]
        if done or not queued:
            return done or set(futures)
        fut = max(queued, key=lambda f: self._queued[f][2])
        fn, args, _ = self._queued.pop(fut)
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(exc)
        return {fut}

    def shutdown(self) -> None:
        self._queued.clear()


class _DaskExecutor:
    """``dask.distributed``: a Client for a scheduler address, a scheduler file or a given Client."""

    def __init__(self, scheduler: Any, timeout: float) -> None:
        from dask import distributed

        self._distributed = distributed
        self._no_worker_since: float | None = None
        self._told = False
        if isinstance(scheduler, distributed.Client):
            self.client, self._own = scheduler, False
            self.address = str(scheduler.scheduler.address) if scheduler.scheduler else repr(scheduler)
            return
        if not isinstance(scheduler, (str, Path)):
            raise TypeError(f"scheduler={scheduler!r} must be an address such as 'tcp://host:8786', "
                            "a scheduler file written by 'dask scheduler --scheduler-file FILE', "
                            "or a dask.distributed.Client")
        self.address = _scheduler_address(scheduler, timeout)
        try:
            self.client, self._own = distributed.Client(self.address, timeout=timeout), True
        except ValueError as exc:  # a malformed address
            raise ValueError(f"scheduler={scheduler!r}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - nothing answered, or not a Dask scheduler (any garbage)
            raise ConnectionError(f"no Dask scheduler answered at {self.address!r} within {timeout:g} s "
                                  f"({type(exc).__name__}: {exc})") from None

    def submit(self, fn: Any, *args: Any, priority: float = 0.0) -> Any:
        return self.client.submit(fn, *args, pure=False, priority=priority)

    def wait_any(self, futures: set) -> set:
        """The futures done, once one is; says once on stderr when the cluster has had no
        worker for :data:`NO_WORKER_NOTICE` seconds (the tasks wait for one: workers may
        join late, as from a batch queue)."""
        while True:
            try:
                done, _ = self._distributed.wait(list(futures), timeout=NO_WORKER_NOTICE / 4,
                                                 return_when="FIRST_COMPLETED")
            except TimeoutError:
                self._check_workers()
                continue
            return set(done)

    def _check_workers(self) -> None:
        if self._told:
            return
        if self.client.scheduler_info().get("workers"):
            self._no_worker_since = None
            return
        now = time.monotonic()
        self._no_worker_since = self._no_worker_since or now
        if now - self._no_worker_since >= NO_WORKER_NOTICE:
            print(f"workbench sweep: no Dask worker has been connected to the scheduler at {self.address} for "
                  f"{NO_WORKER_NOTICE:g} s; the tasks wait for one (start it with: dask worker {self.address}); "
                  "Ctrl-C stops the sweep and keeps every finished result", file=sys.stderr, flush=True)
            self._told = True

    def shutdown(self) -> None:
        if self._own:
            self.client.close()


def _scheduler_address(scheduler: str | Path, timeout: float) -> str:
    """The address ``scheduler`` names: the ``address`` of the scheduler file it names (a
    ``.json`` path or an existing file, as ``dask scheduler --scheduler-file FILE`` writes: no
    fixed port that another program on the machine may hold), waited for up to ``timeout``
    seconds while the scheduler starts; anything else is an address (``tcp://host:8786``,
    ``host:8786``) and is returned as it is."""
    text = str(scheduler)
    path = Path(text)
    if "://" in text or (path.suffix != ".json" and not path.is_file()):
        return text
    end = time.monotonic() + max(timeout, SCHEDULER_FILE_WAIT)
    while True:
        try:
            address = json.loads(path.read_text()).get("address")
        except (OSError, ValueError, AttributeError):
            address = None
        if isinstance(address, str) and address:
            return address
        if time.monotonic() > end:
            raise ConnectionError(f"no Dask scheduler wrote an address into the scheduler file {text!r} within "
                                  f"{max(timeout, SCHEDULER_FILE_WAIT):g} s (start one with: dask scheduler "
                                  f"--scheduler-file {text})")
        time.sleep(0.1)


def _progress(total: int, enabled: bool, desc: str) -> Any:
    """A tqdm bar on stderr counting finished tasks (count and percentage agree)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, dynamic_ncols=True, file=sys.stderr,
                smoothing=0.05, unit="task")


def default_out(name: str) -> Path:
    """Default output folder of an experiment: ``results/<name>`` under the working directory."""
    return Path("results") / name


def run(path_or_dict: str | Path | Mapping[str, Any], out: str | Path | None = None, *,
        workers: int | None = None, scheduler: Any = None, quick: bool = False, progress: bool = True,
        retry_errors: bool = False, threads_per_worker: int | None = None, compact: bool = True,
        scheduler_timeout: float = 5.0) -> pd.DataFrame:
    """Run an experiment (file path or dict) and return its result table.

    Parameters
    ----------
    path_or_dict:
        An experiment TOML file or the same content as a dict (``experiments/README.md``).
    out:
        Results folder (default ``results/<name>``).  Tasks already stored there
        (same parameter hash) are skipped.
    workers:
        Local worker processes (default: CPU count); ``1`` runs in this process.
        Ignored when ``scheduler`` is given.
    scheduler:
        A ``dask.distributed`` scheduler address (``"tcp://host:8786"``), a scheduler file
        (the JSON file ``dask scheduler --scheduler-file FILE`` writes, read for the address;
        no fixed port) or a Client; tasks then run on that cluster.  While it has no worker
        the tasks wait (a notice on stderr after :data:`NO_WORKER_NOTICE` seconds).
    scheduler_timeout:
        Seconds to wait for the scheduler to answer (a scheduler file: at least
        :data:`SCHEDULER_FILE_WAIT` for it to be written); past them a ConnectionError
        naming the address is raised (nothing runs).
    quick:
        Apply the file's ``[quick]`` overrides (a small version of the grid).
    progress:
        Show a tqdm progress bar with an ETA on stderr.
    retry_errors:
        Run again the stored tasks whose rows record an error.
    threads_per_worker:
        Compute threads of each local worker (numba, BLAS); default the CPUs this process
        may use divided by the workers, at least 1.  More than fit on those CPUs (workers
        times threads) is a ValueError.
    compact:
        Merge the per-task files into one Parquet file at the end.

    A worker process that dies (killed, crashed, out of memory) takes only its
    current task with it: the task is run again, up to :data:`WORKER_RETRIES` times,
    then stored as an error row saying how often its worker died.  If this process
    is killed, its workers exit too; run it again to resume.

    Returns
    -------
    pandas.DataFrame with one row per task of the experiment, in grid order:
    the parameters, one column per metric (``metric.key`` for dict-valued ones),
    ``error``/``traceback`` (None when the task succeeded) and the timing columns
    of :data:`workbench.sweep.tasks.TIMING_COLUMNS`.
    """
    if not (isinstance(scheduler_timeout, (int, float)) and not isinstance(scheduler_timeout, bool)
            and math.isfinite(scheduler_timeout) and scheduler_timeout > 0):
        raise ValueError(f"scheduler_timeout={scheduler_timeout!r} must be a positive number of seconds")
    exp = _spec.parse(path_or_dict, quick=quick)
    _tasks.validate_experiment(exp.tasks)  # a bad preset, algorithm or params key fails here, before anything runs
    out = Path(out) if out is not None else default_out(exp.name)
    _store.check_version(out, exp.name, exp.digest, _spec.task_hashes(path_or_dict, exp))   # never mix versions
    out.mkdir(parents=True, exist_ok=True)
    _store.clean_temporaries(out)
    _store.save_experiment(out, exp.raw, exp.digest)
    done = _store.done_hashes(out)
    if retry_errors:
        done -= _store.error_hashes(out)
    pending = [t for t in exp.tasks if t.hash not in done]

    if not pending:
        _store.save_progress(out, exp.name, "done", 0, 0)
    else:
        if scheduler is not None:
            executor: Any = _DaskExecutor(scheduler, scheduler_timeout)
        else:
            n = workers if workers is not None else _pool.cores()
            if n < 1:
                raise ValueError(f"workers={workers!r} must be at least 1")
            n = min(n, len(pending))
            if n == 1:
                executor = _SerialExecutor()
            else:  # only the workers start with these: this process, which compiles the warm-up
                # tasks, keeps its own (numba refuses another NUMBA_NUM_THREADS once its threads run)
                executor = _pool.WorkerPool(n, env=_pool.worker_environment(n, threads_per_worker))
        try:
            _execute(exp, pending, executor, out, progress, first_here=scheduler is None)
        finally:
            executor.shutdown()
    if compact:
        _store.compact(out)
    table = _store.load(out)
    return _select(table, exp)


def _select(table: pd.DataFrame, exp: _spec.Experiment) -> pd.DataFrame:
    if table.empty:
        return table
    order = {t.hash: t.index for t in exp.tasks}
    df = table[table["task_hash"].isin(order)].copy()
    df["experiment"] = exp.name
    df["task_index"] = df["task_hash"].map(order).astype("int64")
    df = df.sort_values("task_index", kind="stable").reset_index(drop=True)
    keep = [c for c in df.columns if c in _store.KEEP or df[c].notna().any()]
    return df[keep]


def _execute(exp: _spec.Experiment, pending: list[_spec.Task], executor: Any, out: Path,
             progress: bool, first_here: bool) -> None:
    """Run ``pending`` on ``executor``, writing each row to ``out`` as it comes and the
    progress to ``OUT/_progress.json``.

    ``first_here``: run the cheapest task of each kernel group in this process first
    (:func:`workbench.sweep.warmup.first_tasks`), so that numba compiles each kernel
    once, here, and the workers load it from the cache."""
    total = len(pending)
    bar = _progress(total, progress, exp.name)
    state: dict[str, Any] = {"finished": 0, "errors": 0, "phase": "running"}

    def record(row: dict[str, Any]) -> None:
        _store.write_row(out, row)
        state["errors"] += row.get("error") is not None
        state["finished"] += 1
        _store.save_progress(out, exp.name, state["phase"], state["finished"], total)
        if state["errors"]:
            bar.set_postfix_str(f"{state['errors']} errors", refresh=False)
        bar.update(1)

    show = _warmup.CompilingBar(bar, f"{exp.name}: ")

    def compiling(name: str) -> None:
        show(name)
        if state["phase"] != "compiling":
            state["phase"] = "compiling"
            _store.save_progress(out, exp.name, state["phase"], state["finished"], total)

    _store.save_progress(out, exp.name, state["phase"], 0, total)
    references: dict[str, Any] = {}
    try:
        if first_here:
            first = _warmup.first_tasks(pending)
            with _warmup.CompileWatch(on_compile=compiling):
                for t in first:
                    record(_warmup.run_here(exp, t, references))
            state["phase"] = "running"
            show.done(exp.name, f"{state['errors']} errors" if state["errors"] else "")
            ran = {t.hash for t in first}
            pending = [t for t in pending if t.hash not in ran]
        _submit_all(exp, pending, executor, references, record)
    finally:
        _store.save_progress(out, exp.name, "done", state["finished"], total)
        bar.close()


def _submit_all(exp: _spec.Experiment, pending: list[_spec.Task], executor: Any, references: dict[str, Any],
                record: Callable[[dict[str, Any]], None]) -> None:
    """Submit the reference job of each input (largest first; ``references`` holds those
    already computed), then its tasks as soon as it is done; ``record`` each row.  Queued
    jobs start references first, then the costliest task (m k n times the products of
    a multi-word task), so that the longest tasks do not end the sweep with one worker
    busy and the others idle.

    The job functions never raise, so a failed future means the job's worker died or
    its result was lost: the job is submitted again, up to :data:`WORKER_RETRIES` times."""
    by_input: dict[str, list[_spec.Task]] = {}
    for t in sorted(pending, key=lambda t: -t.cost):
        by_input.setdefault(t.input_hash, []).append(t)
    in_flight: dict[Any, tuple[str, Any]] = {}
    lost: dict[tuple[str, str], int] = {}  # (role, hash) -> times its job was lost
    unrecorded = {ih: len(group) for ih, group in by_input.items()}  # references are dropped at 0

    def submit(role: str, what: Any) -> None:
        if role == "ref":
            job = executor.submit(_tasks.compute_reference, _spec.input_key(by_input[what][0].spec, exp.reference),
                                  priority=math.inf)
        else:
            job = executor.submit(_tasks.run_task, _warmup.payload(exp, what), references.get(what.input_hash),
                                  priority=what.cost)
        in_flight[job] = (role, what)

    for ih in by_input:
        if exp.reference == "none" or ih in references:
            for t in by_input[ih]:
                submit("task", t)
        else:
            submit("ref", ih)
    while in_flight:
        for fut in executor.wait_any(set(in_flight)):
            role, what = in_flight.pop(fut)
            try:
                result = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker died or the transport failed
                key = (role, what if role == "ref" else what.hash)
                lost[key] = lost.get(key, 0) + 1
                if lost[key] <= WORKER_RETRIES:
                    submit(role, what)
                    continue
                why = f"its worker died {lost[key]} times (last: {type(exc).__name__}: {exc}); not run again"
                if role == "ref":
                    result = (False, f"reference job failed: {why}", 0.0)
                else:
                    result = _lost_row(exp, what, f"task not run: {why}")
            if role == "ref":
                references[what] = result
                for t in by_input[what]:
                    submit("task", t)
            else:
                record(result)
                unrecorded[what.input_hash] -= 1
                if not unrecorded[what.input_hash]:
                    references.pop(what.input_hash, None)


def _lost_row(exp: _spec.Experiment, task: _spec.Task, error: str) -> dict[str, Any]:
    """The row of a task that produced no row of its own, with ``error`` saying why."""
    row = _tasks.base_row(task.hash, task.input_hash, task.spec, exp.name, task.index, exp.reference)
    row.update(error=error, traceback=None, elapsed_s=None, cpu_s=None, finished_at=time.time(), worker=None)
    return row


def load(out_dir: str | Path) -> pd.DataFrame:
    """The stored result table of a results folder (every experiment run into it)."""
    return _store.load(out_dir)
