"""The one parameter layout of the engine's compiled kernels.

Every kernel (:mod:`workbench.engine.kernels` for T-FDPA and ST-FDPA,
:mod:`workbench.engine.operations.amd_fdpa.kernels` for E-/TR-/GTR-FDPA, :mod:`workbench.engine.operations.gstfdpa.kernels`
for GST-FDPA) reads its model from one int64 vector indexed by the ``P_*`` slots
below; each slot means the same in every kernel.  :func:`fused_params` fills the
slots they share (block, window, rounding rho and formats, Xie et al. 2025 Table 2);
an operation sets the slots of its own kernel on top.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ..numbers.formats import FloatFormat
from .ops import MODE_CODES

(
    # shared: block size, window, product fraction bits, zero exponent, rho and its format, c's format
    P_L, P_F, P_FP, P_EZ, P_USE_EZ, P_MODE, P_PRES, P_EMINRES, P_EMAXRES, P_MC, P_EMINC, P_FLUSHOUT,
    # T-FDPA (kernels): sticky bit, late c, interleaved groups, accumulation, output tiles;
    # P_GENERAL = 1 forces the general per-block path (differential tests)
    P_STICKY, P_CLATE, P_LATEMODE, P_NG, P_GF, P_ACCMODE, P_PROMOTE, P_TI, P_TJ, P_BC, P_GENERAL,
    # E-/TR-/GTR-FDPA (operations/amd_fdpa): which one, F2, overflow exponent, limbs of the exact sum,
    # RZ re-alignment, the unpadded K
    P_KIND, P_F2, P_OVF, P_BASE, P_NLIMBS, P_ARZ, P_K,
    # GST-FDPA (gst): group size, scale block, input emin, fraction bits of the exact group sums
    P_G, P_KB, P_EMININ, P_FX,
) = range(34)
N_PARAMS = 34

#: Accumulation modes of the T-FDPA kernels (``P_ACCMODE``), by ``accumulation`` name.
ACC_MODES = {"chain": 0, "outside": 1, "promote": 2}
ACC_CHAIN, ACC_OUTSIDE, ACC_PROMOTE = (ACC_MODES[a] for a in ("chain", "outside", "promote"))


class FusedModel(Protocol):
    """What :func:`fused_params` reads of a model (:class:`workbench.engine.model.Model`
    has it); a protocol, so that the layout - below the model - imports no model."""

    @property
    def L(self) -> int: ...
    @property
    def zero_exponent(self) -> int | None: ...
    @property
    def rounding(self) -> str: ...
    @property
    def flush_output_subnormals(self) -> bool: ...
    @property
    def in_fmt(self) -> FloatFormat: ...
    @property
    def res_fmt(self) -> FloatFormat: ...
    @property
    def out_fmt(self) -> FloatFormat: ...


def fused_params(model: FusedModel, F: int) -> np.ndarray:
    """A parameter vector with the shared slots of ``model`` filled (``F``: the window
    the kernel aligns to, 0 for the exact sum of E-FDPA); the others zero."""
    fin, res, out = model.in_fmt, model.res_fmt, model.out_fmt
    prm = np.zeros(N_PARAMS, dtype=np.int64)
    prm[P_L] = model.L
    prm[P_F] = F
    prm[P_FP] = 2 * fin.man_bits
    prm[P_EZ] = 0 if model.zero_exponent is None else model.zero_exponent
    prm[P_USE_EZ] = model.zero_exponent is not None
    prm[P_MODE] = MODE_CODES[model.rounding]
    prm[P_PRES] = res.p
    prm[P_EMINRES] = res.emin
    prm[P_EMAXRES] = res.emax
    prm[P_MC] = out.man_bits
    prm[P_EMINC] = out.emin
    prm[P_FLUSHOUT] = model.flush_output_subnormals
    return prm
