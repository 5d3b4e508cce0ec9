"""Compile once, in one process, before the workers start.

The engine's kernels are compiled by numba on first use and cached on disk
(``__pycache__`` or ``NUMBA_CACHE_DIR``).  On a fresh installation every worker of a
sweep would compile the same kernels at the same time, each slower for sharing the
CPUs with the others, while the progress bar stood still.  So a sweep first runs, in
the submitting process, the cheapest task of each *kernel group* (tasks that call the
same kernels with the same argument types: same algorithm, parameters, model and
formats; :func:`first_tasks`); the workers then load the compiled kernels from the
cache.  :func:`compile_experiments` does the same for experiment files without storing
anything (``workbench reproduce`` calls it before it starts the notebooks), and
:class:`CompileWatch` tells whether numba compiled anything, so that the user is told
"compiling kernels (first run only)" exactly when that is what takes the time.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import spec as _spec
from . import tasks as _tasks

#: Shown while numba compiles (it happens once per machine: the kernels are cached on disk).
COMPILING = "compiling kernels (first run only)"
#: Task keys that decide which kernels a task calls and with which argument types.
_KERNEL_KEYS = ("algorithm", "params", "preset", "instruction", "variant", "model", "in_format", "out_format")


class CompileWatch:
    """Context manager counting numba compilations (not cache loads) while it is open.

    ``on_compile(count, name)`` (optional) is called as each compilation starts, with the
    number started so far and the compiled function's name (nested ones included).
    """

    def __init__(self, on_compile: Callable[[int, str], None] | None = None) -> None:
        self.compiled = 0
        self._on_compile = on_compile
        self._listener: Any = None

    def __enter__(self) -> CompileWatch:
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                watch.compiled += 1
                if watch._on_compile is not None:
                    name = getattr(getattr(ev.data.get("dispatcher"), "py_func", None), "__name__", "?")
                    watch._on_compile(watch.compiled, name)

            def on_end(self, ev: Any) -> None:
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc: Any) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)


def show_compiling(bar: Any, prefix: str = "") -> Callable[[int, str], None]:
    """An ``on_compile`` callback for :class:`CompileWatch` that describes ``bar`` as
    :data:`COMPILING` and names the kernel being compiled."""
    def on_compile(count: int, name: str) -> None:
        bar.set_description_str(prefix + COMPILING, refresh=False)
        bar.set_postfix_str(f"{count} compiled, now {name}")
    return on_compile


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
            "index": task.index, "reference": exp.reference, "metrics": exp.metrics,
            "input_key": _spec.input_key(task.spec, exp.reference)}


def run_here(exp: _spec.Experiment, task: _spec.Task, references: dict[str, Any]) -> dict[str, Any]:
    """Run one task in this process and return its row; the reference result of its input
    is taken from, or computed into, ``references`` (keyed by input hash)."""
    if exp.reference != "none" and task.input_hash not in references:
        references[task.input_hash] = _tasks.compute_reference(_spec.input_key(task.spec, exp.reference))
    return _tasks.run_task(payload(exp, task), references.get(task.input_hash))


def compile_experiments(experiments: Sequence[str | Path | dict], *, quick: bool = True,
                        progress: bool = True) -> tuple[float, int]:
    """Compile (or load from the cache) every kernel the experiments' tasks call, by running
    the cheapest task of each kernel group in this process; nothing is stored.

    Returns (seconds, number of numba compilations).  With ``progress`` a bar on stderr
    counts the tasks, described as :data:`COMPILING` once numba starts compiling
    (a warm cache only loads, in seconds, and shows nothing)."""
    from tqdm.auto import tqdm

    todo = []
    for e in experiments:
        exp = _spec.parse(e, quick=quick)
        todo += [(exp, t) for t in first_tasks(exp.tasks)]
    t0 = time.perf_counter()
    bar = tqdm(total=len(todo), desc="loading kernels", disable=not progress, file=sys.stderr, delay=2.0,
               unit="task", dynamic_ncols=True)
    references: dict[str, Any] = {}
    with CompileWatch(on_compile=show_compiling(bar)) as watch:
        try:
            for exp, task in todo:
                run_here(exp, task, references)
                bar.update(1)
            bar.set_postfix_str(f"{watch.compiled} compiled" if watch.compiled else "")
        finally:
            bar.close()
    return time.perf_counter() - t0, watch.compiled
