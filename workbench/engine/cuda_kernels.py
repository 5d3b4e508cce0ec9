"""The CUDA kernels of :mod:`workbench.engine.gpu` (imported by it on first use: this
module imports ``numba.cuda``, which the ``gpu`` extra installs).

Every kernel is one thread per output ``(i, j)`` (:func:`_output`: ``j`` fastest, so that the threads
of a warp read consecutive elements of B's row ``k``) and its body is a call of the
CPU engine's own compiled per-output function: numba-cuda compiles a CPU
``@numba.njit`` function called from a kernel as a CUDA device function from the
same Python source (``CUDATypingContext.resolve_value_type`` wraps its ``py_func``),
and the engine's ``@intrinsic`` helpers emit ``llvm.ctlz.i64`` and ``llvm.fma.f32/64``,
which NVVM implements; ``math.frexp``/``ldexp``/``isinf`` lower to libdevice.  So the
arithmetic of every operation stays in one place (:mod:`workbench.engine.kernels`,
:mod:`workbench.engine.ops`, :mod:`workbench.engine.nans`) for both targets.

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
import numpy as np
from numba import cuda
from numba.cuda import config as cuda_config

from . import kernels as _k
from .fdpa_amd import amd_chain
from .gst import gst_chain
from .layout import P_L, P_NLIMBS

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
def tfdpa_kernel(sa, ea, sb, eb, acc, prm, fast):  # type: ignore[no-untyped-def]
    """One T-FDPA output per thread: :func:`workbench.engine.kernels._accumulate` over
    all blocks of K (chain, outside or promote as ``prm`` says), from C in ``acc``.
    ``sa, ea`` (M, Kp) and ``sb, eb`` (Kp, N) are the decomposed operands (int32)."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        a_s = _arr(sa)
        nblocks = a_s.shape[1] // prm[P_L]
        acc[i, j] = _k._accumulate(a_s, _arr(ea), _arr(sb), _arr(eb), i, j, np.int64(0), nblocks, acc[i, j], 0.0,
                                   _arr(prm), fast)[0]


@cuda.jit(cache=True)
def fma_kernel(A, B, acc, how, p, emin, emax):  # type: ignore[no-untyped-def]
    """One FMA chain per thread (:func:`workbench.engine.kernels.fma_chain`, steps as
    ``how, p, emin, emax`` say: :func:`workbench.engine.kernels.fma_code`), from C in
    ``acc``; A (M, K), B (K, N') with N' >= N."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        acc[i, j] = _k.fma_chain(_arr(A), _arr(B), i, j, acc[i, j], how, p, emin, emax)


#: Groups per block (L/G) that :func:`gst_kernel`'s per-thread group terms hold (a GPU
#: thread cannot allocate; the NVFP4/MXFP4 presets have 64/16 = 4).
MAX_GROUPS = 16


@cuda.jit(cache=True)
def gst_kernel(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r):  # type: ignore[no-untyped-def]
    """One GST-FDPA output per thread: :func:`workbench.engine.gst.gst_chain` over all
    blocks of K, from C in ``acc``, its group terms in the thread's local arrays.
    ``sa, ea`` (M, Kp) and ``sb, eb`` (N, Kp) indexed ``[j, k]``: decomposed A and B
    (int32); ``xsa, xea`` (M, Kp / k_block) and ``xsb, xeb`` (N, Kp / k_block): the
    decomposed scales; ``r`` from :func:`workbench.engine.gst.gst_params`."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        Xs = cuda.local.array(MAX_GROUPS, np.int64)
        Es = cuda.local.array(MAX_GROUPS, np.int64)
        acc[i, j] = gst_chain(_arr(sa), _arr(ea), _arr(sb), _arr(eb), _arr(xsa), _arr(xea), _arr(xsb), _arr(xeb),
                              i, j, acc[i, j], _arr(r), Xs, Es)


#: 30-bit limbs of E-FDPA's exact sum (:func:`workbench.engine.fdpa_amd.efdpa_step`) that
#: :func:`amd_kernel` holds per thread (a GPU thread cannot allocate): 73 for fp32 inputs summed
#: into an fp64 output, the widest E-FDPA unit the kernels accept.
MAX_LIMBS = 80


@cuda.jit(cache=True)
def amd_kernel(A, BT, sa, ea, sb, eb, acc, q):  # type: ignore[no-untyped-def]
    """One E-FDPA, TR-FDPA or GTR-FDPA output per thread (``q[P_KIND]`` says which):
    :func:`workbench.engine.fdpa_amd.amd_chain` over all blocks of K, from C in ``acc``,
    E-FDPA's limbs in the thread's local array.  ``sa, ea`` (M, Kp) and ``sb, eb``
    (Kp, N) are the decomposed operands (int32); ``A`` (M, K) and ``BT`` (N, K) the
    float64 ones, which E-FDPA reads for the payload of a NaN result (a 1 x 1 stand-in
    where no payload is to be chosen: TR-/GTR-FDPA's NaN is canonical)."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        limbs = cuda.local.array(MAX_LIMBS, np.int64)
        p = _arr(q)
        acc[i, j] = amd_chain(_arr(A), _arr(BT), _arr(sa), _arr(ea), _arr(sb), _arr(eb), i, j, acc[i, j], p,
                               limbs[:max(1, p[P_NLIMBS])])


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


__all__ = ["SIMULATED", "THREADS", "MAX_GROUPS", "MAX_LIMBS", "tfdpa_kernel", "gst_kernel", "fma_kernel", "amd_kernel",
           "add_late_kernel", "blocks"]
