"""A pool of spawned worker processes that outlives the death of a worker and dies with its parent.

:class:`concurrent.futures.ProcessPoolExecutor` turns the death of one worker into a
broken pool: every job in flight, on every worker, fails with ``BrokenProcessPool`` and
nothing tells which job was on the dead worker.  Here each worker has its own pipe and
runs one job at a time, so when a worker dies (killed, crashed, out of memory) exactly
its job fails, with :class:`WorkerDied`; a new worker takes its place and the others go
on.  The caller decides whether to run that job again (:mod:`workbench.sweep.runner`
does, a bounded number of times).

A worker ends when its parent process ends, however it ends (SIGKILL included), so a
killed sweep leaves no processes behind: on Linux the kernel kills the worker
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``); everywhere a watchdog thread also polls the
parent's pid (:func:`exit_with_parent`).  Workers ignore SIGINT: Ctrl-C in a terminal
reaches the whole process group, and the parent, which gets it too, stops them.

The pool has no thread of its own: jobs move only inside :meth:`WorkerPool.wait_any`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from multiprocessing.connection import wait as _wait_ready
from typing import Any

#: prctl option: the signal this process receives when the thread that created it exits (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: How often the watchdog thread of a worker looks whether its parent is still there (seconds).
_PARENT_POLL_S = 0.5
#: How long :meth:`WorkerPool.shutdown` lets an idle worker exit by itself before killing it (seconds).
_EXIT_GRACE_S = 2.0


#: Environment variables that set a process's compute threads (numba's, and BLAS libraries').
THREAD_ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: glibc malloc settings of the workers: arrays up to 1 GiB come from the heap, and freed
#: memory stays there for the next task (up to 64 GiB: a worker keeps the memory of its
#: largest task until the sweep ends).  By default every array above 32 MiB (a 10 x 10^6
#: float64 matrix is 80 MB) is a fresh mmap, and a heap whose free top passes 128 KiB is
#: trimmed, so each task's pages fault in and are zeroed again: the Figure 7 sweep spent as
#: much system time as user time that way (benchmarks/bench_sweep.py prints both).
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=68719476736"


def cores() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def worker_environment(workers: int, threads: int | None = None) -> dict[str, str]:
    """The environment of each of ``workers`` local workers: ``threads`` compute threads
    (default ``cores() // workers``, at least 1; workers times threads must not exceed
    :func:`cores`, or the threads fight over the CPUs) and :data:`MALLOC_TUNABLES`
    (after any ``GLIBC_TUNABLES`` of this process, which keep the last word)."""
    n = cores()
    if threads is None:
        threads = max(1, n // workers)
    elif not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads_per_worker={threads!r}: expected a positive integer")
    elif workers * threads > n:
        raise ValueError(f"threads_per_worker={threads} with {workers} workers needs {workers * threads} CPUs, "
                         f"but this process may use {n}: give at most {max(1, n // workers)} threads per worker")
    env = dict.fromkeys(THREAD_ENV, str(threads))
    own = os.environ.get("GLIBC_TUNABLES")
    env["GLIBC_TUNABLES"] = f"{MALLOC_TUNABLES}:{own}" if own else MALLOC_TUNABLES
    return env


class WorkerDied(RuntimeError):
    """The worker process running a job ended before it answered."""

    def __init__(self, pid: int | None, exitcode: int | None) -> None:
        self.pid, self.exitcode = pid, exitcode
        super().__init__(f"worker process {pid} died ({describe_exit(exitcode)})")


def describe_exit(exitcode: int | None) -> str:
    """``"killed by SIGKILL"``, ``"exit code 3"``: how a process ended, from its exit code."""
    if exitcode is None:
        return "exit code unknown"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(_PARENT_POLL_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def exit_with_parent(parent_pid: int) -> None:
    """Make this process end as soon as the process ``parent_pid`` (its parent) ends.

    On Linux the kernel sends SIGKILL when the parent goes (``PR_SET_PDEATHSIG``),
    even while this process runs a long compiled kernel that holds the GIL; on every
    system a daemon thread checks ``os.getppid()`` every half second and exits the
    process when it changed (the orphan was handed to another process)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watchdog thread alone
            pass
    if os.getppid() != parent_pid:  # the parent died before the line above
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="exit-with-parent", daemon=True).start()


def _worker_main(conn: Any, parent_pid: int) -> None:
    """Body of a worker: answer each ``(fn, args)`` job with ``(True, fn(*args))`` or
    ``(False, exception)`` until it receives None or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent_pid)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            reply: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed back to the parent
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - the answer does not pickle
            conn.send((False, RuntimeError(f"the answer of {getattr(fn, '__name__', fn)!r} could not be sent "
                                           f"back: {type(exc).__name__}: {exc}")))


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` in ``os.environ`` (processes started meanwhile inherit it), then restore it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _Worker:
    def __init__(self, ctx: Any, env: Mapping[str, str]) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_worker_main, args=(child, os.getpid()),
                                   name="workbench-sweep-worker")
        with environment(env):
            self.process.start()
        child.close()
        self.job: tuple[cf.Future, Callable[..., Any], tuple[Any, ...]] | None = None


class WorkerPool:
    """Up to ``workers`` spawned processes running submitted jobs, one job per process at a time.

    :meth:`submit` queues a job and returns its :class:`concurrent.futures.Future`;
    :meth:`wait_any` runs the pool until one of the given futures is done.  A job whose
    worker dies fails with :class:`WorkerDied`; the worker is replaced.  Workers start
    when there is work for them, with this process's environment updated by ``env``
    (e.g. their compute threads), which is set only while a worker starts.
    """

    def __init__(self, workers: int, env: Mapping[str, str] | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers={workers!r} must be at least 1")
        self.size = workers
        self._env = dict(env or {})
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        # (-priority, submission number, job): the highest priority first, then the earliest
        self._queue: list[tuple[float, int, tuple[cf.Future, Callable[..., Any], tuple[Any, ...]]]] = []
        self._order = itertools.count()

    def submit(self, fn: Callable[..., Any], *args: Any, priority: float = 0.0) -> cf.Future:
        """Queue ``fn(*args)`` (``fn`` and ``args`` must pickle); returns its future.  Queued
        jobs start highest ``priority`` first, in submission order among equals."""
        fut: cf.Future = cf.Future()
        heapq.heappush(self._queue, (-priority, next(self._order), (fut, fn, args)))
        self._dispatch()
        return fut

    def _dispatch(self) -> None:
        for w in [w for w in self._workers if w.job is None and not w.process.is_alive()]:
            self._retire(w)  # died while idle: nothing to report
        idle = [w for w in self._workers if w.job is None]
        while self._queue:
            if not idle:
                if len(self._workers) >= self.size:
                    return
                self._workers.append(_Worker(self._ctx, self._env))
                idle.append(self._workers[-1])
            w = idle.pop()
            w.job = heapq.heappop(self._queue)[2]
            fut, fn, args = w.job
            fut.set_running_or_notify_cancel()
            try:
                w.conn.send((fn, args))
            except OSError:  # it died just now: its sentinel tells wait_any
                pass

    def _retire(self, w: _Worker) -> None:
        self._workers.remove(w)
        w.conn.close()
        w.process.join(timeout=_EXIT_GRACE_S)

    def _answer(self, w: _Worker) -> None:
        fut = w.job[0]  # type: ignore[index]  # a worker answers only while it holds a job
        try:
            ok, value = w.conn.recv()
        except (EOFError, OSError):
            w.process.join(timeout=_EXIT_GRACE_S)
            fut.set_exception(WorkerDied(w.process.pid, w.process.exitcode))
            self._retire(w)
            return
        w.job = None
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def wait_any(self, futures: Iterable[cf.Future]) -> set[cf.Future]:
        """Run jobs until at least one of ``futures`` is done; returns those done."""
        futures = set(futures)
        while True:
            done = {f for f in futures if f.done()}
            if done:
                return done
            busy = {w.conn: w for w in self._workers if w.job is not None}
            if not busy:
                raise RuntimeError("waiting for jobs that were never submitted to this pool")
            sentinels = {w.process.sentinel: w for w in busy.values()}
            for ready in _wait_ready([*busy, *sentinels]):
                w = busy.get(ready) or sentinels[ready]
                if w.job is not None and w in self._workers:
                    self._answer(w)  # an answer, or EOF when the worker died
            self._dispatch()

    def shutdown(self) -> None:
        """Stop every worker: idle ones are asked to exit, busy ones are killed; queued jobs are cancelled."""
        for _, _, (fut, _, _) in self._queue:
            fut.cancel()
        self._queue.clear()
        for w in self._workers:
            if w.job is None:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            else:
                w.process.kill()
        for w in list(self._workers):
            w.process.join(timeout=_EXIT_GRACE_S)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
        self._workers.clear()
