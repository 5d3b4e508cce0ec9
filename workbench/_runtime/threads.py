"""How many threads a compiled pass runs on: the one place that chooses.

Numba's parallel loops wake a pool of worker threads on every call; for small work that
wake-up (tens of microseconds on an idle machine, milliseconds on a busy one) costs far
more than the work, so work below :data:`PARALLEL_MIN_WORK` elements or multiply-adds runs
on one thread.  The choice depends on the work alone, never on the machine's load, and
results never depend on it.  One call decides once: inside :func:`threads_for` of work at
or above the threshold (a whole product: :func:`workbench.gemm`, ``engine.core.run``), its
smaller stages (checking C, decomposing, converting the output) keep every thread, because
changing numba's thread count between the stages of one call costs more than the stages
(the OpenMP pool re-forms its team: a 64 x 1024 x 64 fp32 FMA-chain ``gemm`` took 0.24-0.45
ms switching to one thread for its stages, 0.15-0.17 ms holding two).  The number of
threads for larger work is the user's to set: ``NUMBA_NUM_THREADS=N`` in the environment
before numba starts (default: the CPU count), or ``numba.set_num_threads(N)`` at run time
(at most the former); a sweep's workers get ``cores // workers`` each
(:func:`workbench.sweep.run`'s ``threads_per_worker``).  Used by :mod:`workbench.numbers.formats`,
:mod:`workbench.numbers.exact` and the engine (:mod:`workbench.engine.operands` re-exports it).
"""
from __future__ import annotations

import threading

import numba

#: Work (elements or multiply-adds) from which compiled passes use all of numba's threads.
PARALLEL_MIN_WORK = 1 << 18

#: Per Python thread (numba's thread count is per thread too): ``depth``, how many contexts
#: of large work are open, inside which smaller work keeps the threads it has; ``single``,
#: whether a context of small work has put this thread's passes on one thread.
_held = threading.local()


def threads_used(work: int) -> int:
    """Threads the compiled passes of ``work`` run on: 1 below :data:`PARALLEL_MIN_WORK`,
    numba's current number of threads otherwise."""
    return 1 if work < PARALLEL_MIN_WORK else numba.get_num_threads()


class threads_for:  # noqa: N801 - a context manager used as a function: ``with threads_for(work):``
    """Run the compiled passes inside on :func:`threads_used` ``(work)`` threads.  Large
    work leaves numba's count as it is and holds it for the stages inside (see the
    module notes); small work leaves it too where it is 1 already (a nested call) or
    where an enclosing context of large work holds it, and otherwise runs on one thread
    (each ``numba.set_num_threads`` costs microseconds, a tenth of a small product's call).

    A class rather than a generator: a small product opens several of these, and inside
    one that already runs on one thread the others cost an attribute lookup (no call
    into numba), which is most of a small ``gemm``'s budget otherwise."""

    __slots__ = ("work", "restore")

    def __init__(self, work: int) -> None:
        self.work = work
        self.restore = 0

    def __enter__(self) -> None:
        if self.work >= PARALLEL_MIN_WORK:
            _held.depth = getattr(_held, "depth", 0) + 1
            return
        if getattr(_held, "depth", 0) or getattr(_held, "single", 0):
            return                      # held by a large context, or already on one thread
        n = numba.get_num_threads()
        if n != 1:
            numba.set_num_threads(1)
            self.restore = n
            _held.single = 1

    def __exit__(self, *exc: object) -> None:
        if self.work >= PARALLEL_MIN_WORK:
            _held.depth -= 1
        elif self.restore:
            _held.single = 0
            numba.set_num_threads(self.restore)


__all__ = ["PARALLEL_MIN_WORK", "threads_used", "threads_for"]
