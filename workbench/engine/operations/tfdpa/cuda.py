"""T-FDPA's CUDA kernel and its launch (loaded by :meth:`TFDPA.run_cuda
<workbench.engine.operations.tfdpa.TFDPA.run_cuda>` and ST-FDPA's once a GPU or the
simulator is there: this module imports ``numba.cuda``): one output per thread around
the CPU's own :func:`~workbench.engine.operations.tfdpa.kernels._accumulate`
(:mod:`workbench.engine.cuda_kernels` says why that is one implementation for both)."""
from __future__ import annotations

from typing import cast

import numpy as np
from numba import cuda

from ... import gpu as _gpu
from ...cuda_kernels import _arr, _output
from ...layout import P_L
from ...operands import Operands
from .kernels import _accumulate, fast_eligible


@cuda.jit(cache=True)
def tfdpa_kernel(sa, ea, sb, eb, acc, prm, fast):  # type: ignore[no-untyped-def]
    """One T-FDPA output per thread: :func:`~workbench.engine.operations.tfdpa.kernels._accumulate`
    over all blocks of K (chain, outside or promote as ``prm`` says), from C in ``acc``.
    ``sa, ea`` (M, Kp) and ``sb, eb`` (Kp, N) are the decomposed operands (int32)."""
    inside, i, j = _output(cuda.grid(1), acc.shape[0], acc.shape[1])
    if inside:
        a_s = _arr(sa)
        nblocks = a_s.shape[1] // prm[P_L]
        acc[i, j] = _accumulate(a_s, _arr(ea), _arr(sb), _arr(eb), i, j, np.int64(0), nblocks, acc[i, j], 0.0,
                                _arr(prm), fast)[0]


def launch_tfdpa(ops: Operands, acc: np.ndarray, prm: np.ndarray) -> np.ndarray:
    """The T-FDPA kernel on decomposed operands (``sa, ea`` (M, Kp), ``sb, eb`` (Kp, N')
    indexed ``[k, j]``, any layout) from C in ``acc``; D."""
    ck = _gpu.kernels_module()
    sa, ea = cast(np.ndarray, ops.sa), cast(np.ndarray, ops.ea)
    sb, eb = cast(np.ndarray, ops.sb), cast(np.ndarray, ops.eb)
    fast = bool(fast_eligible(prm))
    d_acc = _gpu.to_device(acc)
    dev = _gpu.to_device
    tfdpa_kernel[ck.blocks(acc.size), ck.THREADS](dev(sa), dev(ea), dev(sb[:, :ops.N]), dev(eb[:, :ops.N]), d_acc,
                                                  dev(prm), fast)
    return np.asarray(d_acc.copy_to_host())


__all__ = ["tfdpa_kernel", "launch_tfdpa"]
