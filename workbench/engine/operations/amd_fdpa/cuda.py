"""The CUDA kernel E-FDPA, TR-FDPA and GTR-FDPA share (loaded by
:func:`workbench.engine.operations.amd_fdpa.gpu.run_cuda` once a GPU or the simulator is
there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_chain`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both)."""
from __future__ import annotations

import numpy as np
from numba import cuda

from ...cuda_kernels import _arr, _output
from ...layout import P_NLIMBS
from .kernels import amd_chain


#: 30-bit limbs of E-FDPA's exact sum (:func:`workbench.engine.operations.amd_fdpa.kernels.efdpa_step`) that
#: :func:`amd_kernel` holds per thread (a GPU thread cannot allocate): 73 for fp32 inputs summed
#: into an fp64 output, the widest E-FDPA unit the kernels accept.
MAX_LIMBS = 80


@cuda.jit(cache=True)
def amd_kernel(A, BT, sa, ea, sb, eb, acc, q):  # type: ignore[no-untyped-def]
    """One E-FDPA, TR-FDPA or GTR-FDPA output per thread (``q[P_KIND]`` says which):
    :func:`workbench.engine.operations.amd_fdpa.kernels.amd_chain` over all blocks of K, from C in ``acc``,
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


__all__ = ["MAX_LIMBS", "amd_kernel"]
