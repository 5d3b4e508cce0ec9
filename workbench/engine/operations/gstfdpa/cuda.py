"""GST-FDPA's CUDA kernel (loaded by :meth:`GSTFDPA.run_cuda
<workbench.engine.operations.gstfdpa.GSTFDPA.run_cuda>` once a GPU or the simulator is
there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.gstfdpa.kernels.gst_chain`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both)."""
from __future__ import annotations

import numpy as np
from numba import cuda

from ...cuda_kernels import _arr, _output
from .kernels import gst_chain


#: Groups per block (L/G) that :func:`gst_kernel`'s per-thread group terms hold (a GPU
#: thread cannot allocate; the NVFP4/MXFP4 presets have 64/16 = 4).
MAX_GROUPS = 16


@cuda.jit(cache=True)
def gst_kernel(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r):  # type: ignore[no-untyped-def]
    """One GST-FDPA output per thread: :func:`~workbench.engine.operations.gstfdpa.kernels.gst_chain` over all
    blocks of K, from C in ``acc``, its group terms in the thread's local arrays.
    ``sa, ea`` (M, Kp) and ``sb, eb`` (N, Kp) indexed ``[j, k]``: decomposed A and B
    (int32); ``xsa, xea`` (M, Kp / k_block) and ``xsb, xeb`` (N, Kp / k_block): the
    decomposed scales; ``r`` from :func:`~workbench.engine.operations.gstfdpa.kernels.gst_params`."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        Xs = cuda.local.array(MAX_GROUPS, np.int64)
        Es = cuda.local.array(MAX_GROUPS, np.int64)
        acc[i, j] = gst_chain(_arr(sa), _arr(ea), _arr(sb), _arr(eb), _arr(xsa), _arr(xea), _arr(xsb), _arr(xeb),
                              i, j, acc[i, j], _arr(r), Xs, Es)


__all__ = ["MAX_GROUPS", "gst_kernel"]
