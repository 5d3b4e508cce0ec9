"""What the CUDA kernels share (imported by :func:`workbench.engine.gpu.kernels_module` on
first use: this module imports ``numba.cuda``, which the ``gpu`` extra installs): the
launch shape, the simulator's array unwrapping, and the IEEE adder of a late c
(:func:`add_late_kernel`).  Each operation's own kernel is in its folder
(``workbench/engine/operations/<name>/cuda.py``), imported by its ``run_cuda``.

Every kernel is one thread per output ``(i, j)`` (:func:`_output`: ``j`` fastest, so that the threads
of a warp read consecutive elements of B's row ``k``) and its body is a call of the
CPU engine's own compiled per-output function: numba-cuda compiles a CPU
``@numba.njit`` function called from a kernel as a CUDA device function from the
same Python source (``CUDATypingContext.resolve_value_type`` wraps its ``py_func``),
and the engine's ``@intrinsic`` helpers emit ``llvm.ctlz.i64`` and ``llvm.fma.f32/64``,
which NVVM implements; ``math.frexp``/``ldexp``/``isinf`` lower to libdevice.  So the
arithmetic of every operation stays in one place (its folder's ``kernels.py`` and the
shared :mod:`workbench.engine.kernels`, :mod:`workbench.engine.ops`,
:mod:`workbench.engine.nans`) for both targets.

The kernels are cached (``cache=True``: numba keeps the compiled code in ``__pycache__``
per compute capability), so a sweep's worker processes do not each compile them again.

Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) the kernels run as Python
and the arrays they receive are the simulator's wrappers; :func:`_arr` hands the
engine's functions the numpy arrays inside, so that the simulator checks the
kernels' logic (indexing, launch shape, parameters) with the same compiled
arithmetic as the CPU path.
"""
from __future__ import annotations

import numba
from numba import cuda
from numba.cuda import config as cuda_config

from . import kernels as _k

#: Whether numba.cuda is the CUDA simulator (NUMBA_ENABLE_CUDASIM=1 when it was first imported).
SIMULATED = bool(getattr(cuda_config, "ENABLE_CUDASIM"))

if SIMULATED:
    def _arr(x):  # type: ignore[no-untyped-def]
        """The numpy array inside the simulator's in-kernel array wrapper."""
        return x._item._ary
else:
    @numba.njit(inline="always")
    def _arr(x):  # type: ignore[no-untyped-def]
        """The array itself (a device array inside a real kernel)."""
        return x


@numba.njit(inline="always")
def _output(t, M, N):  # type: ignore[no-untyped-def]
    """Thread t's output of an (M, N) result: (whether there is one, i, j), ``j``
    fastest (every kernel's mapping: a warp's threads read consecutive elements of B's
    row ``k``)."""
    if t >= M * N:
        return False, 0, 0
    i = t // N
    return True, i, t - i * N


#: Threads per block of every kernel (one output per thread); one warp in the simulator,
#: which runs each thread as a Python thread (so small test shapes span several blocks).
THREADS = 32 if SIMULATED else 128


@cuda.jit(cache=True)
def add_late_kernel(D, C, p, emin, emax, mode, flush):  # type: ignore[no-untyped-def]
    """``D <- rho(D + C)`` per element (:func:`workbench.engine.kernels.exact_add`):
    c added after the products."""
    inside, i, j = _output(cuda.grid(1), D.shape[0], D.shape[1])
    if inside:
        D[i, j] = _k.exact_add(D[i, j], C[i, j], p, emin, emax, mode, flush)


def blocks(outputs: int) -> int:
    """Blocks of :data:`THREADS` threads for one thread per output (at least one)."""
    return max(1, -(-outputs // THREADS))


__all__ = ["SIMULATED", "THREADS", 
           "add_late_kernel", "blocks"]
