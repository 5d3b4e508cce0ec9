"""How many threads a compiled pass runs on: the one place that chooses.

Numba's parallel loops wake a pool of worker threads on every call; for small work that
wake-up (tens of microseconds on an idle machine, milliseconds on a busy one) costs far
more than the work, so work below :data:`PARALLEL_MIN_WORK` elements or multiply-adds
runs on one thread.  The choice depends on the work alone, never on the machine's load,
and results never depend on it.  The number of threads for larger work is the user's to
set: ``NUMBA_NUM_THREADS=N`` in the environment before numba starts (default: the CPU
count), or ``numba.set_num_threads(N)`` at run time (at most the former); a sweep's
workers get ``cores // workers`` each (:func:`workbench.sweep.run`'s
``threads_per_worker``).  Used by :mod:`workbench.formats`, :mod:`workbench.exact` and the engine
(:mod:`workbench.engine.operands` re-exports it).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba

#: Work (elements or multiply-adds) from which compiled passes use all of numba's threads.
PARALLEL_MIN_WORK = 1 << 18


def threads_used(work: int) -> int:
    """Threads the compiled passes of ``work`` run on: 1 below :data:`PARALLEL_MIN_WORK`,
    numba's current number of threads otherwise."""
    return 1 if work < PARALLEL_MIN_WORK else numba.get_num_threads()


@contextmanager
def threads_for(work: int) -> Iterator[None]:
    """Run the compiled passes inside on :func:`threads_used` ``(work)`` threads.  Large
    work leaves numba's count as it is, and so does small work where it is 1 already (a
    nested call): a gemm enters this several times, and each ``numba.set_num_threads``
    costs microseconds, a tenth of a small product's call."""
    n = 1 if work >= PARALLEL_MIN_WORK else numba.get_num_threads()
    if n == 1:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(n)


__all__ = ["PARALLEL_MIN_WORK", "threads_used", "threads_for"]
