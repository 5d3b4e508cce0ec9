"""The CPU bf16 pair units' CUDA kernel (loaded by :meth:`PairDot.run_cuda
<workbench.engine.operations.pair_dot.PairDot.run_cuda>` once a GPU or the simulator is
there: this module imports ``numba.cuda``): one output per thread around the CPU's own
:func:`~workbench.engine.operations.pair_dot.kernels.pair_dot_chain`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both), so
that a sweep over a CPU unit can run on a GPU."""
from __future__ import annotations

from numba import cuda

from ...cuda_kernels import _arr, _output
from .kernels import pair_dot_chain


@cuda.jit(cache=True)
def pair_kernel(A, BT, acc, L, rule):  # type: ignore[no-untyped-def]
    """One chain of instructions per thread (:func:`~workbench.engine.operations.pair_dot.kernels.pair_dot_chain`),
    from C in ``acc``: ``A`` (M, K) and ``BT`` (N, K) float64."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        acc[i, j] = pair_dot_chain(_arr(A)[i], _arr(BT)[j], acc[i, j], L, rule)


__all__ = ["pair_kernel"]
