"""Faults: dead workers, killed sweeps, unreachable schedulers, and column types that do not
depend on how a results folder was filled (first run, resumes, retries).

The crash-consistency test kills a running sweep (the parent with SIGKILL at random moments,
and a worker in the middle of a task), resumes it, and compares the final table with an
uninterrupted run of the same experiment; after every kill no process of the run may be left.
"""

import contextlib
import json
import operator
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest
import sweep_helpers
from hypothesis import given, settings

import workbench.sweep as sweep
from workbench.sweep import pool, runner, store, tasks
from workbench.sweep.pool import WorkerDied, WorkerPool

HERE = Path(__file__).resolve().parent
#: metrics of the tests' experiments: float, int (nonfinite) and list (signed_errors) columns
METRICS = ("max_abs_error", "nonfinite", "signed_errors")


def _comparable(df):
    return df.drop(columns=[c for c in sweep.TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


def _assert_same_table(got, expected):
    pd.testing.assert_frame_equal(_comparable(got), _comparable(expected), check_exact=True)


# ------------------------------------------------------------------ dead workers
def test_dead_worker_task_runs_again_and_gives_up_after_the_retries(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SWEEP_TEST_LOG", str(log))
    monkeypatch.setenv("SWEEP_TEST_DIE_DIR", str(tmp_path))
    monkeypatch.setattr(pool, "cores", lambda: 6)   # so that 2 workers x 3 threads fit
    raw = sweep_helpers.experiment(shifts=(0.0, 2.0**-10), ks=(8, 16), seeds=(0,), metrics=METRICS)
    raw["grid"] += [{"params": {"shift": 2.0**-6, "die": "once"}},     # dies once in a worker, then runs
                    {"params": {"shift": 2.0**-4, "die": "always"}}]   # dies in every worker
    # the cheapest task (k = 8) of each parameter set runs in this process first (the
    # warm-up), where nothing dies; the k = 16 tasks run on the workers
    df = sweep.run(raw, out=tmp_path / "pool", workers=2, progress=False, threads_per_worker=3)
    assert len(df) == 8
    failed = df[df["error"].notna()]
    assert list(zip(failed["param.die"], failed["k"])) == [("always", 16)] and failed["worker"].isna().all()
    error = failed["error"].iloc[0]
    assert error.startswith(f"task not run: its worker died {runner.WORKER_RETRIES + 1} times")
    assert "killed by SIGKILL" in error and "\n" not in error
    # 8 tasks started, one of them again after it died once, the hopeless one twice more
    calls = [line.split() for line in log.read_text().splitlines()]
    assert sum(kind == "task" for kind, _, _ in calls) == 8 + 1 + runner.WORKER_RETRIES
    # the workers ran with 3 compute threads; the warm-up here with this process's own setting
    here = str(os.environ.get("NUMBA_NUM_THREADS"))
    assert {threads for _, pid, threads in calls if int(pid) != os.getpid()} == {"3"}
    assert {threads for _, pid, threads in calls if int(pid) == os.getpid()} == {here}
    # the other tasks, the one whose worker died once included, are those of a run where nothing dies
    serial = sweep.run(raw, out=tmp_path / "serial", workers=1, progress=False)
    assert serial["error"].isna().all()
    ok = df["error"].isna()  # (the failed row's missing count makes df's nonfinite column float)
    _assert_same_table(df[ok].drop(columns=["error", "traceback"]).astype({"nonfinite": "int64"}),
                       serial[ok].drop(columns=["error", "traceback"]))
    _no_workers_of(os.getpid())


def test_pool_answers_each_job_and_a_death_fails_only_its_job():
    pool = WorkerPool(2)
    try:
        product = pool.submit(operator.mul, 6, 7)
        raises = pool.submit(operator.truediv, 1, 0)
        dies = pool.submit(signal.raise_signal, signal.SIGKILL)
        later = [pool.submit(operator.add, i, 1) for i in range(4)]
        futures = {product, raises, dies, *later}
        while not all(f.done() for f in futures):
            pool.wait_any({f for f in futures if not f.done()})
        assert product.result() == 42 and [f.result() for f in later] == [1, 2, 3, 4]
        with pytest.raises(ZeroDivisionError):
            raises.result()
        with pytest.raises(WorkerDied, match=r"worker process \d+ died \(killed by SIGKILL\)"):
            dies.result()
    finally:
        pool.shutdown()
    _no_workers_of(os.getpid())


def _no_workers_of(pid):
    workers = [p for p in psutil.Process(pid).children(recursive=True) if _is_worker(p)]
    assert not workers, f"pool workers left running: {workers}"


def _is_worker(p):
    try:
        return "multiprocessing.spawn" in " ".join(p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# ------------------------------------------------------------------ column types
def _flaky_experiment():
    raw = sweep_helpers.experiment(shifts=(0.0, 2.0**-10), ks=(8, 16), seeds=(0, 1), metrics=METRICS)
    raw["grid"].append({"params": {"shift": 2.0**-5, "flaky": True}})
    return raw


def test_retry_errors_and_resume_keep_column_types(tmp_path, monkeypatch):
    raw = _flaky_experiment()
    fresh = sweep.run(raw, out=tmp_path / "fresh", workers=1, progress=False)
    assert fresh["error"].isna().all() and fresh["nonfinite"].dtype == np.int64
    monkeypatch.setenv("SWEEP_TEST_FLAKY", "1")
    failing = sweep.run(raw, out=tmp_path / "retried", workers=1, progress=False)
    assert failing["error"].notna().sum() == 4
    # the same rows fail in a fresh run: the same table, column types included
    _assert_same_table(failing, sweep.run(raw, out=tmp_path / "failing", workers=1, progress=False))
    monkeypatch.delenv("SWEEP_TEST_FLAKY")
    retried = sweep.run(raw, out=tmp_path / "retried", workers=1, progress=False, retry_errors=True)
    _assert_same_table(retried, fresh)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "retried"), sweep.load(tmp_path / "retried"))
    # a grid grown in three steps (a compacted file, then parts) gives the table of one run
    for seeds in [(0,), (0, 1)]:
        grown = sweep_helpers.experiment(shifts=(0.0, 2.0**-10), ks=(8, 16), seeds=seeds, metrics=METRICS)
        sweep.run(grown, out=tmp_path / "grown", workers=1, progress=False)
    grown = sweep.run(raw, out=tmp_path / "grown", workers=1, progress=False)
    # the rows of the smaller grid keep the digest of the version that computed them (issue 39)
    assert grown["experiment_digest"].nunique() >= 2
    _assert_same_table(grown.drop(columns=["experiment_digest"]), fresh.drop(columns=["experiment_digest"]))


_ROW_VALUES = {"max_abs_error": st.none() | st.floats(),
               "nonfinite": st.none() | st.integers(-2**40, 2**40),
               "signed_errors": st.none() | st.lists(st.floats(allow_nan=False), max_size=3),
               "param.flag": st.none() | st.booleans()}


def _row(i, values, error):
    spec = {"algorithm": "a", "m": 1, "k": 1, "n": 1, "seed": i, "alpha": 1.0, "beta": 1.0,
            "input": {"generator": "normal"}}
    return {**tasks.base_row(f"h{i}", "i", spec, "e", i, "none"), **values, "error": error, "traceback": None,
            "elapsed_s": 1.0}


@st.composite
def _history(draw):
    """The final rows of 1..6 tasks, and a history that stores them: earlier versions of some
    rows (later superseded, as by retry_errors), the final rows in any order, compactions
    (as at the end of a run) anywhere in between."""
    n = draw(st.integers(1, 6))
    values = st.fixed_dictionaries(_ROW_VALUES)
    final = [_row(i, draw(values), draw(st.none() | st.just("RuntimeError: x"))) for i in range(n)]
    superseded = [_row(i, draw(values), "RuntimeError: earlier") for i in draw(st.lists(st.integers(0, n - 1)))]
    steps = [("write", r) for r in superseded + draw(st.permutations(final))]
    for _ in range(draw(st.integers(0, 3))):
        steps.insert(draw(st.integers(0, len(steps))), ("compact", None))
    return final, steps


@settings(max_examples=40, deadline=None)
@given(_history())
def test_loaded_types_depend_only_on_the_final_rows(tmp_path_factory, history):
    final, steps = history
    by_history = tmp_path_factory.mktemp("history")
    for kind, row in steps:
        if kind == "write":
            store.write_row(by_history, row)
        else:
            store.compact(by_history)
    at_once = tmp_path_factory.mktemp("once")
    for row in final:
        store.write_row(at_once, row)
    expected = store.load(at_once)
    pd.testing.assert_frame_equal(store.load(by_history), expected, check_exact=True)
    store.compact(by_history)
    pd.testing.assert_frame_equal(store.load(by_history), expected, check_exact=True)
    pd.testing.assert_frame_equal(pd.read_parquet(by_history), expected, check_exact=True)


def test_every_fixed_column_has_its_stored_type(tmp_path):
    from workbench.sweep import warmup

    exp = sweep.parse(sweep_helpers.experiment(fail_shift=1.0, metrics=METRICS))
    for task in (exp.tasks[0], exp.tasks[-1]):  # a row with metrics, a row with an error
        row = warmup.run_here(exp, task, {})
        fixed = {c for c in row if c not in METRICS and not c.startswith(("param.", "input."))}
        assert fixed <= set(store.COLUMN_TYPES)
        schema = pq.read_schema(store.write_row(tmp_path, row))
        assert {c: schema.field(c).type for c in fixed} == {c: store.COLUMN_TYPES[c] for c in fixed}


# ------------------------------------------------------------------ scheduler
def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_a_one_line_error(tmp_path):
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(ConnectionError) as info:
        sweep.run(sweep_helpers.experiment(), out=tmp_path, scheduler=address, scheduler_timeout=1, progress=False)
    assert address in str(info.value) and "within 1 s" in str(info.value) and "\n" not in str(info.value)
    assert not list(tmp_path.glob("parts/*"))
    with pytest.raises(ValueError, match="scheduler='bogus://x'"):
        sweep.run(sweep_helpers.experiment(), out=tmp_path, scheduler="bogus://x", progress=False)
    with pytest.raises(TypeError, match="scheduler=8786 must be an address"):
        sweep.run(sweep_helpers.experiment(), out=tmp_path, scheduler=8786, progress=False)
    for bad in (0, -1.0, float("nan"), "5", True):
        with pytest.raises(ValueError, match=r"scheduler_timeout=.* must be a positive number of seconds"):
            sweep.run(sweep_helpers.experiment(), out=tmp_path, scheduler=address, scheduler_timeout=bad)


# ------------------------------------------------------------------ crash consistency
def _crash_experiment():
    # 4 parameter sets x 3 k x 2 seeds = 24 tasks on 6 inputs, 6 of which record an error
    return sweep_helpers.experiment(shifts=(0.0, 2.0**-10, 2.0**-5), ks=(8, 16, 32), seeds=(0, 1), delay=0.12,
                                    fail_shift=1.0, metrics=METRICS)


def _alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _session(sid):
    """Live processes of session ``sid`` (the killed sweep, its workers, its resource tracker)."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) == sid and _alive(pid):
                found.append(pid)
        except OSError:
            continue
    return found


def _workers_of(pid):
    try:
        return [p.pid for p in psutil.Process(pid).children() if _is_worker(p)]
    except psutil.NoSuchProcess:
        return []


class _Sweep:
    """``sweep.run`` of the crash experiment in a subprocess of its own session."""

    def __init__(self, spec_file, out, log, workers=2):
        script = ("import json, workbench.sweep as s; "
                  f"s.run(json.load(open({str(spec_file)!r})), out={str(out)!r}, workers={workers}, progress=False)")
        env = dict(os.environ, SWEEP_TEST_LOG=str(log),
                   PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
        self.out, self.log, self.err = out, log, log.with_suffix(".err")
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True,
                                         stdout=subprocess.DEVNULL, stderr=err)

    def stored(self):
        parts = self.out / "parts"
        return len(list(parts.glob("*.parquet"))) if parts.is_dir() else 0

    def wait_until(self, condition, limit=120.0):
        """Poll ``condition`` until it holds (True) or the sweep ended (False)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if condition():
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.005)
        raise AssertionError(f"nothing happened within {limit} s")

    def busy_worker(self):
        """A worker pid that has started a task (from the tasks' log), or None."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        started = {int(pid) for kind, pid, _ in (line.split() for line in lines) if kind == "task"}
        busy = started & set(_workers_of(self.proc.pid))
        return min(busy) if busy else None

    def kill_parent(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def check_nothing_is_left(self):
        """Every process of the run ends (a minute is ample: they go at once or never)."""
        deadline = time.monotonic() + 60
        while _session(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = []
        for pid in _session(self.proc.pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                left.append((pid, " ".join(psutil.Process(pid).cmdline())))
                os.kill(pid, signal.SIGKILL)  # do not leave them to the next test
        assert not left, f"processes of the killed sweep still running: {left}"


def _crash_and_resume(tmp_path, parent_kills, seed):
    """Kill the parent ``parent_kills`` times at random moments, then kill a worker in the
    middle of a task and let that run finish; the table equals an uninterrupted run's."""
    rng = random.Random(seed)
    raw = _crash_experiment()
    n_tasks = len(sweep.parse(raw))
    spec_file = tmp_path / "exp.json"
    spec_file.write_text(json.dumps(raw))
    out = tmp_path / "killed"
    moments = []
    for i in range(parent_kills):
        run = _Sweep(spec_file, out, tmp_path / f"run{i}.log")
        before = run.stored()
        if i == 0:   # while it starts: imports, warm-up tasks, workers spawning
            moment = ("after seconds", rng.uniform(0.0, 2.0))
            deadline = time.monotonic() + moment[1]
            reached = run.wait_until(lambda: time.monotonic() >= deadline)
        else:        # after a random number of further rows, plus a fraction of a task
            moment = ("at rows", before + rng.randint(1, max(1, (n_tasks - before) // 3)), rng.uniform(0.0, 0.1))
            reached = run.wait_until(lambda: run.stored() >= moment[1])
            time.sleep(moment[2])
        moments.append(moment)
        assert reached and run.proc.poll() is None, f"the sweep ended before the kill {moments}"
        run.kill_parent()
        run.check_nothing_is_left()
        # what is stored is complete and readable: the rows of finished tasks, nothing else
        # (a kill before the sweep made its folder leaves nothing, which is complete too)
        parts = {p.stem for p in out.glob("parts/*.parquet")}
        assert (set(sweep.load(out).get("task_hash", [])) if out.is_dir() else set()) == parts

    run = _Sweep(spec_file, out, tmp_path / "worker_kill.log")
    assert run.wait_until(lambda: run.busy_worker() is not None), f"no task left for the workers {moments}"
    time.sleep(rng.uniform(0.0, 0.05))
    os.kill(run.busy_worker(), signal.SIGKILL)
    assert run.proc.wait(timeout=300) == 0, run.err.read_text()[-3000:]
    run.check_nothing_is_left()

    resumed = sweep.run(raw, out=out, workers=2, progress=False)   # nothing is left to run
    fresh = sweep.run(raw, out=tmp_path / "fresh", workers=2, progress=False)
    assert len(fresh) == n_tasks and fresh["error"].notna().sum() == 6
    _assert_same_table(resumed, fresh)
    pd.testing.assert_frame_equal(pd.read_parquet(out), sweep.load(out))
    assert not list(out.rglob("*.tmp"))
    _no_workers_of(os.getpid())
    return moments


def test_killed_sweep_resumes_to_the_uninterrupted_table(tmp_path):
    _crash_and_resume(tmp_path, parent_kills=3, seed=15)


def test_a_serial_sweep_stores_each_task_as_it_ends(tmp_path):
    """workers=1 runs the tasks in the sweep's own process: each row is stored when its task
    ends (not when every task has run), so a kill loses only the task under way, and the
    resumed folder equals an uninterrupted run."""
    raw = _crash_experiment()
    n_tasks = len(sweep.parse(raw))
    spec_file = tmp_path / "exp.json"
    spec_file.write_text(json.dumps(raw))
    out = tmp_path / "serial"
    run = _Sweep(spec_file, out, tmp_path / "serial.log", workers=1)
    target = n_tasks // 2
    assert run.wait_until(lambda: run.stored() >= target), "the serial sweep stored nothing until it ended"
    run.kill_parent()
    run.check_nothing_is_left()
    stored = run.stored()
    assert target <= stored < n_tasks
    assert set(sweep.load(out)["task_hash"]) == {p.stem for p in out.glob("parts/*.parquet")}
    resumed = sweep.run(raw, out=out, workers=1, progress=False)
    _assert_same_table(resumed, sweep.run(raw, out=tmp_path / "fresh", workers=1, progress=False))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_killed_sweep_resumes_many_times(tmp_path, seed):
    _crash_and_resume(tmp_path, parent_kills=6, seed=1000 + seed)


def test_workers_times_threads_never_exceed_the_cores(monkeypatch):
    """Each worker gets cores // workers compute threads (at least 1) and the malloc settings
    that keep freed arrays for the next task; asking for more threads than fit is an error."""
    for n_cores, workers, threads in [(2, 2, 1), (8, 2, 4), (8, 3, 2), (2, 3, 1), (16, 1, 16)]:
        monkeypatch.setattr(pool, "cores", lambda n=n_cores: n)
        env = pool.worker_environment(workers)
        assert {env[k] for k in pool.THREAD_ENV} == {str(threads)}
        assert env["GLIBC_TUNABLES"].startswith(pool.MALLOC_TUNABLES)
    monkeypatch.setattr(pool, "cores", lambda: 2)
    with pytest.raises(ValueError, match=r"threads_per_worker=2 with 2 workers needs 4 CPUs, but this process may "
                                         r"use 2: give at most 1 threads per worker"):
        pool.worker_environment(2, 2)
    with pytest.raises(ValueError, match="threads_per_worker=0"):
        pool.worker_environment(1, 0)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    assert pool.worker_environment(2)["GLIBC_TUNABLES"] == f"{pool.MALLOC_TUNABLES}:glibc.malloc.arena_max=2"


def test_pool_starts_queued_jobs_highest_priority_first():
    """One worker: while the first job runs, jobs queued with priorities 1, 5, 3, 5 start
    in the order 5 (the earlier of the two), 5, 3, 1; a sweep gives references and then the
    costliest tasks the highest priority."""
    pool = WorkerPool(1)
    try:
        first = pool.submit(time.sleep, 0.3)
        queued = [pool.submit(time.monotonic_ns, priority=p) for p in (1, 5, 3, 5)]
        futures = {first, *queued}
        while not all(f.done() for f in futures):
            pool.wait_any({f for f in futures if not f.done()})
        started = [f.result() for f in queued]
        assert sorted(range(4), key=lambda i: started[i]) == [1, 3, 2, 0]
    finally:
        pool.shutdown()
