"""The GPU launch E-, TR- and GTR-FDPA share: their one CUDA kernel
(:func:`workbench.engine.operations.amd_fdpa.cuda.amd_kernel`) runs
:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_chain`, the CPU's per-output function."""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ...layout import P_K, P_NLIMBS
from ...operands import Operands, padded_decomposed
from . import kernels as _amd

if TYPE_CHECKING:
    from ...model import Model


def run_cuda(model: "Model", ops: Operands, acc: np.ndarray, code: int) -> np.ndarray:
    """E-FDPA, TR-FDPA and GTR-FDPA (Xie et al. 2025 Algorithms 6, 10 and 11: the AMD
    CDNA1 and CDNA3 presets, and custom units of those kinds): one
    :func:`~workbench.engine.operations.amd_fdpa.kernels.amd_chain` per thread on the operands the CPU's ``prepare`` decomposed (or
    decomposed here, where E-FDPA's ``prepare`` kept float64 operands only for its binary64
    lane kernel); ``code``: the kernel code of :mod:`workbench.engine.operations.amd_fdpa.kernels`.  The
    operation's ``run_cuda`` checked the arguments."""
    from ... import gpu as _gpu

    ck = _gpu.kernels_module()
    from .cuda import MAX_LIMBS, amd_kernel

    q = _amd.amd_params(model, code)
    q[P_K] = ops.K
    if q[P_NLIMBS] > MAX_LIMBS:
        raise NotImplementedError(f"device='cuda': this E-FDPA unit's exact sum needs {q[P_NLIMBS]} limbs of 30 bits; "
                                  f"the kernel's per-thread accumulator holds {MAX_LIMBS} (use device='cpu')")
    A, BT = cast(np.ndarray, ops.A), cast(np.ndarray, ops.BT)
    if ops.sa is None or ops.ea is None or ops.sb is None or ops.eb is None:
        _, _, sa, ea, sbt, ebt = padded_decomposed(model, A, BT, model.L)
        sb, eb = sbt.T, ebt.T
    else:
        sa, ea, sb, eb = ops.sa, ops.ea, ops.sb, ops.eb
    if code != _amd.KIND_E or ops.K == 0 or not (ops.special or np.isnan(acc).any()):
        # no NaN payload to choose from A and B (TR-/GTR-FDPA's NaN is canonical; no products; or no NaN
        # can arise: finite products never meet an infinity of the other sign), so they stay on the host
        A = BT = np.zeros((1, 1))

    dev = _gpu.to_device
    d_acc = dev(acc)
    amd_kernel[ck.blocks(acc.size), ck.THREADS](dev(A), dev(BT), dev(sa), dev(ea), dev(sb[:, :ops.N]),
                                                   dev(eb[:, :ops.N]), d_acc, dev(q))
    return np.asarray(d_acc.copy_to_host())


__all__ = ["run_cuda"]
