"""Compile once, in one process, before the workers start.

The engine's kernels are compiled by numba on first use and cached on disk
(keyed by the sources' content: :mod:`workbench._runtime.compile_cache`).  On a fresh installation every worker of a
sweep would compile the same kernels at the same time, each slower for sharing the
CPUs with the others, while the progress bar stood still.  So a sweep first runs, in
the submitting process, the cheapest task of each *kernel group* (tasks that call the
same kernels with the same argument types: same algorithm, parameters, model and
formats; :func:`first_tasks`); the workers then load the compiled kernels from the
cache.  :func:`compile_experiments` does the same for experiment files without storing
anything (``workbench reproduce`` calls it before it starts the notebooks), and
:class:`CompileWatch` tells whether numba compiled anything, so that the user is told
"compiling kernels (first run only)" exactly when that is what takes the time, and
:class:`CompilingBar` says it on a progress bar.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._runtime.compile_cache import CompileWatch
from . import spec as _spec
from . import tasks as _tasks

#: Shown while numba compiles (it happens once per machine: the kernels are cached on disk).
COMPILING = "compiling kernels (first run only)"
#: A tqdm bar without the time left and the rate, shown while numba compiles: a task then
#: takes from milliseconds (its kernels compiled already) to a minute (it compiles the kernels
#: that the tasks after it share), so the time the done ones took says nothing of the rest.
NO_ETA = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
#: Task keys that decide which kernels a task calls and with which argument types.
_KERNEL_KEYS = ("algorithm", "params", "preset", "instruction", "variant", "model", "in_format", "out_format")


class CompilingBar:
    """The ``on_compile`` callback of :class:`CompileWatch` for a tqdm ``bar`` that counts
    tasks: while numba compiles, the bar is described as ``prefix`` + :data:`COMPILING`,
    names the function being compiled and shows no time left (:data:`NO_ETA`).

    It shows no count of compilations: a task compiles its kernels and every function they
    call, many per task, so such a count beside the bar's tasks (``0/58 ... 59 compiled``)
    would read as more done than there is to do."""

    def __init__(self, bar: Any, prefix: str = "") -> None:
        self.bar = bar
        self.prefix = prefix

    def __call__(self, name: str) -> None:
        """Numba starts compiling the function ``name``."""
        self.bar.bar_format = NO_ETA
        self.bar.set_description_str(self.prefix + COMPILING, refresh=False)
        self.bar.set_postfix_str(f"now {name}")

    def done(self, description: str, postfix: str = "") -> None:
        """Compiling is over: the bar is described as ``description`` with ``postfix``
        and shows the time left again."""
        self.bar.bar_format = None
        self.bar.set_description_str(description, refresh=False)
        self.bar.set_postfix_str(postfix)


def kernel_group(task: _spec.Task) -> str:
    """The key of the tasks that run the same compiled kernels with the same argument types."""
    return json.dumps({k: task.spec.get(k) for k in _KERNEL_KEYS}, sort_keys=True, default=str)


def first_tasks(tasks: Iterable[_spec.Task]) -> list[_spec.Task]:
    """The cheapest task (by m k n) of each kernel group, in the order the groups first appear."""
    best: dict[str, _spec.Task] = {}
    for t in tasks:
        key = kernel_group(t)
        if key not in best or t.cost < best[key].cost:
            best[key] = t
    return list(best.values())


def payload(exp: _spec.Experiment, task: _spec.Task) -> dict[str, Any]:
    """What :func:`workbench.sweep.tasks.run_task` needs of a task (plain data: it pickles)."""
    return {"hash": task.hash, "input_hash": task.input_hash, "spec": task.spec, "experiment": exp.name,
            "digest": exp.digest,
            "index": task.index, "reference": exp.reference, "metrics": exp.metrics,
            "input_key": _spec.input_key(task.spec, exp.reference)}


def run_here(exp: _spec.Experiment, task: _spec.Task, references: dict[str, Any]) -> dict[str, Any]:
    """Run one task in this process and return its row; the reference result of its input
    is taken from, or computed into, ``references`` (keyed by input hash)."""
    if exp.reference != "none" and task.input_hash not in references:
        references[task.input_hash] = _tasks.compute_reference(_spec.input_key(task.spec, exp.reference))
    return _tasks.run_task(payload(exp, task), references.get(task.input_hash))


#: An experiment touring the kernels that single products call (1 x K x 1: the scalar T-FDPA
#: kernel, FMA chains, E-FDPA, FTZ-AddMul, the narrow AMD path), which sweeps of wide products
#: never reach; ``workbench reproduce`` compiles it with the notebooks' experiments.
KERNEL_TOUR: dict[str, Any] = {
    "name": "kernel_tour", "reference": "exact", "metrics": ["exact_match"],
    "defaults": {"algorithm": "gemm", "out_format": "fp32", "m": 1, "k": 64, "n": 1, "seed": 0,
                 "input": {"generator": "normal"}},
    "grid": [{"in_format": "fp16", "preset": ["V100", "MI100", "MI250X", "MI300X"]},
             {"in_format": "fp64", "out_format": "fp64", "preset": "A100"}],
}

def _family(task: _spec.Task) -> int:
    """1 for the operations whose kernels (:mod:`workbench.engine.operations.amd_fdpa.kernels`, FTZ-AddMul) share
    nothing heavy with the T-FDPA ones (``Operation.kernel_family == "amd"``):
    :func:`compile_experiments` compiles the two families in two processes at once."""
    model = _tasks.build_model(task.spec)
    return 1 if model is not None and model.operation.kernel_family == "amd" else 0


def _run_family(todo: list[tuple[_spec.Experiment, _spec.Task]], queue: Any, parent_pid: int) -> None:
    """Body of a compiling process: run ``todo`` here, reporting each compilation and task on
    ``queue``; it ends with its parent (a killed ``workbench reproduce`` leaves it not running)."""
    from .pool import exit_with_parent

    exit_with_parent(parent_pid)
    references: dict[str, Any] = {}
    with CompileWatch(on_compile=lambda name: queue.put(("compile", name))) as watch:
        for exp, task in todo:
            run_here(exp, task, references)
            queue.put(("task", None))
    queue.put(("done", watch.compiled))


def compile_experiments(experiments: Sequence[str | Path | dict], *, quick: bool = True,
                        progress: bool = True, parallel: bool = True) -> tuple[float, int]:
    """Compile (or load from the cache) every kernel the experiments' tasks call, by running
    the cheapest task of each kernel group; nothing is stored.

    The T-FDPA family (NVIDIA units) runs in this process.  With ``parallel`` on a
    machine with two CPUs or more, the moment numba starts compiling here the AMD family
    (E-/TR-/GTR-FDPA, FTZ-AddMul: kernels that share nothing heavy with T-FDPA's) starts
    compiling in a spawned process beside it (numba compiles on one thread); with a warm
    cache nothing is spawned.  Returns (seconds, number of numba compilations).  With
    ``progress`` a bar on stderr counts the tasks (one per kernel group), described as
    :data:`COMPILING` while numba compiles, then with no time left (:class:`CompilingBar`;
    a warm cache only loads, in a second or two, and shows nothing)."""
    import multiprocessing
    import queue as _queue

    import numba
    from tqdm.auto import tqdm

    from . import pool as _pool

    todo = []
    for e in experiments:
        exp = _spec.parse(e, quick=quick)
        todo += [(exp, t) for t in first_tasks(exp.tasks)]
    here = [(exp, t) for exp, t in todo if _family(t) == 0]
    other = [(exp, t) for exp, t in todo if _family(t) == 1]
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="loading kernels", disable=not progress, file=sys.stderr, delay=2.0,
               unit="task", dynamic_ncols=True)
    show = CompilingBar(bar)
    state: dict[str, Any] = {"compiled": 0, "worker": None, "running": 0}
    messages: Any = None

    def drain(block: bool) -> None:
        while state["running"]:
            try:
                event, value = messages.get(timeout=0.5) if block else messages.get_nowait()
            except _queue.Empty:
                if not block:
                    return
                if not state["worker"].is_alive():   # died without reporting: its tasks compile later
                    state["running"] = 0
                continue
            if event == "compile":
                state["compiled"] += 1
                show(value)
            elif event == "task":
                bar.update(1)
            else:
                state["running"] = 0

    def on_compile(name: str) -> None:
        nonlocal messages
        state["compiled"] += 1
        show(name)
        if state["worker"] is None and other and parallel and _pool.cores() >= 2:
            ctx = multiprocessing.get_context("spawn")
            messages = ctx.Queue()
            worker = ctx.Process(target=_run_family, args=(other, messages, os.getpid()), daemon=True)
            with _pool.environment(_pool.worker_environment(2)):   # two processes: half the CPUs each
                worker.start()
            numba.set_num_threads(min(threads, max(1, _pool.cores() // 2)))
            state["worker"] = worker
            state["running"] = 1

    references: dict[str, Any] = {}
    threads = numba.get_num_threads()
    try:
        with CompileWatch(on_compile=on_compile):
            for exp, task in here:
                run_here(exp, task, references)
                bar.update(1)
                if state["running"]:
                    drain(block=False)
            if state["worker"] is None:      # nothing compiled here: the cache is warm (or no T-FDPA tasks)
                for exp, task in other:
                    run_here(exp, task, references)
                    bar.update(1)
        if state["worker"] is not None:
            drain(block=True)
            state["worker"].join()
        bar.set_postfix_str("", refresh=False)     # the caller says how many were compiled
    finally:
        numba.set_num_threads(threads)
        bar.close()
    return time.perf_counter() - t0, state["compiled"]
