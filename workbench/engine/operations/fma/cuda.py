"""The FMA chain's CUDA kernel (loaded by :meth:`FMAChain.run_cuda
<workbench.engine.operations.fma.FMAChain.run_cuda>` once a GPU or the simulator is
there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.fma.kernels.fma_chain`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both); a
late c is added by the shared :func:`~workbench.engine.cuda_kernels.add_late_kernel`."""
from __future__ import annotations

from numba import cuda

from ...cuda_kernels import _arr, _output
from .kernels import fma_chain


@cuda.jit(cache=True)
def fma_kernel(A, B, acc, how, p, emin, emax):  # type: ignore[no-untyped-def]
    """One FMA chain per thread (:func:`~workbench.engine.operations.fma.kernels.fma_chain`, steps as
    ``how, p, emin, emax`` say: :func:`~workbench.engine.operations.fma.kernels.fma_code`), from C in
    ``acc``; A (M, K), B (K, N') with N' >= N."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        acc[i, j] = fma_chain(_arr(A), _arr(B), i, j, acc[i, j], how, p, emin, emax)


__all__ = ["fma_kernel"]
