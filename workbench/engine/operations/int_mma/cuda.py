"""The integer matrix units' CUDA kernel (loaded by :meth:`IntMMA.run_cuda
<workbench.engine.operations.int_mma.IntMMA.run_cuda>` once a GPU or the simulator is
there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.int_mma.kernels.int_chain`, bit for bit the CPU's
result."""
from __future__ import annotations

from numba import cuda

from ...cuda_kernels import _arr, _output
from .kernels import int_chain


@cuda.jit(cache=True)
def int_kernel(A, BT, acc, L, overflow):  # type: ignore[no-untyped-def]
    """One chain of instructions per thread, from C in ``acc``: ``A`` (M, K) and ``BT``
    (N, K) float64 integer values."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        acc[i, j] = int_chain(_arr(A)[i], _arr(BT)[j], acc[i, j], L, overflow)


__all__ = ["int_kernel"]
