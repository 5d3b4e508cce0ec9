"""Parameter sweeps: experiments as files, run in parallel, resumable, on a laptop or Dask.

>>> import workbench.sweep as sweep
>>> df = sweep.run("experiments/smoke.toml", out="results/smoke", workers=2)  # doctest: +SKIP
>>> sweep.load("results/smoke")                                              # doctest: +SKIP

An experiment file (TOML, see ``experiments/README.md``) declares a grid of
presets, algorithms and their parameters, formats, sizes, input generators and
seeds, the reference and the metrics.  :func:`run` expands it into tasks, skips
those already stored in the output folder (keyed by a hash of their parameters),
runs the rest on a local process pool or a ``dask.distributed`` cluster and writes
each finished task's row atomically to Parquet; :func:`load` reads a folder back.

The public names load on first use, so ``import workbench.cli.sweep`` (the command
line) pulls in neither pandas nor pyarrow until a sweep actually runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .runner import load, run
    from .spec import Experiment, Task, parse
    from .tasks import BUILTIN_ALGORITHMS, TIMING_COLUMNS

_LAZY = {
    "run": "runner", "load": "runner",
    "parse": "spec", "Experiment": "spec", "Task": "spec",
    "BUILTIN_ALGORITHMS": "tasks", "TIMING_COLUMNS": "tasks",
}

__all__ = ["run", "load", "parse", "Experiment", "Task", "BUILTIN_ALGORITHMS", "TIMING_COLUMNS"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench.sweep' has no attribute {name!r}")
    return getattr(importlib.import_module(f"workbench.sweep.{module}"), name)
