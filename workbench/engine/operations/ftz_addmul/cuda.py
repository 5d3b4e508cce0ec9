"""FTZ-AddMul's CUDA kernel (loaded by :meth:`FTZAddMul.run_cuda
<workbench.engine.operations.ftz_addmul.FTZAddMul.run_cuda>` once a GPU or the simulator
is there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_chain`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both)."""
from __future__ import annotations

from numba import cuda

from ...cuda_kernels import _arr, _output
from .kernels import ftz_chain


@cuda.jit(cache=True)
def ftz_kernel(A, BT, acc, P, in_min_normal):  # type: ignore[no-untyped-def]
    """One FTZ-AddMul chain per thread (:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_chain`), from
    C in ``acc``: ``A`` (M, Kp) and ``BT`` (N, Kp) float64, Kp a multiple of P (``BT``
    stored column-major, so that a warp's threads read adjacent elements)."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        acc[i, j] = ftz_chain(_arr(A), _arr(BT), i, j, acc[i, j], P, in_min_normal)


__all__ = ["ftz_kernel"]
