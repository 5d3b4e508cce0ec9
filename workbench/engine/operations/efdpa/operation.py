"""E-FDPA's operation: exact fused dot-product-add, rounded once (Xie et al. 2025
Algorithm 6): parameters, dispatch, bound terms and probing hints.

The L products and c are added exactly (multi-limb fixed point, no alignment loss)
and the sum is rounded once with rho to ``result_format``; K is consumed in blocks of
L.  NaN results carry an operand's payload (MMA-Sim 2.1.1).  Kernels:
:func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_gemm_simd` (fp32-result RNE units: 16 outputs of
up to five rows side by side in binary64, read from the checked float64 operands
without decomposing them when they hold no Inf/NaN),
:func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_gemm_lanes` (outputs of a row side by side,
the exact sum in one int64 where the block's terms fit, the limbs otherwise) for
products of :func:`~workbench.engine.operations.amd_fdpa.kernels.lanes_fit`, the reference
:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_gemm` (one output at a time) otherwise; both
compute a block with :func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_step`, which the scalar
trace :func:`~workbench.engine.operations.amd_fdpa.explain.efdpa_block` calls too, whenever it needs the
limbs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...checks import check_block, check_format, check_rounding
from ...layout import P_K
from ...model import BoundShape, ErrorTerm, register
from ...operands import Operands, checked_inputs, decompose_checked, threads_for
from ...trace import Block
from ..amd_fdpa import kernels as _amd
from ..amd_fdpa.explain import efdpa_block
from ..amd_fdpa.operation import AMDFused

if TYPE_CHECKING:
    from ...model import Model


@dataclass(frozen=True, kw_only=True)
class EFDPAParams:
    """Parameters of E-FDPA (names as :class:`~workbench.engine.model.Model`'s)."""

    L: int = 8
    rounding: str = "rz"
    result_format: str | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        check_block("L", self.L)
        check_rounding("rounding", self.rounding)
        check_format("result_format", self.result_format)


class EFDPA(AMDFused):
    """Exact fused dot-product-add (Xie et al. 2025 Algorithm 6)."""

    kind = "e-fdpa"
    citation = "Xie et al. 2025 Algorithm 6"
    params = EFDPAParams
    propagates_nan = True
    code = _amd.KIND_E

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked and decomposed in one compiled pass (K zero-padded to whole
        blocks of L; B in the lane kernel's layout when it will read it), and kept as
        float64 ``A`` and ``B^T`` (a view of B) for the payloads of NaN results: both
        forms of :class:`~workbench.engine.operands.Operands` at once."""
        M, K = A.shape
        N = B.shape[1]
        fin = model.in_fmt
        if _amd.efdpa_float_fits(model, N) and fin.signed and fin.subnormals:
            with threads_for(A.size + B.size):
                A64, B64, special = checked_inputs(fin, A, B)
            if not special:     # the binary64 lane kernel reads the values themselves
                return Operands(M, K, N, A64, B64.T, None, None, None, None, False)
        Kp = K + (-K) % model.L if K else model.L
        with threads_for(A.size + B.size):
            sa, ea, sb, eb, special = decompose_checked(A, B, model.in_fmt, model.flush_subnormals, Kp,
                                                        not _amd.lanes_fit(model, N))
        return Operands(M, K, N, np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64).T,
                        sa, ea, sb, eb, special)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        if ops.sa is None or ops.ea is None or ops.sb is None or ops.eb is None:   # float64 operands only
            if not ops.special and ops.A is not None and ops.BT is not None and _amd.efdpa_float_fits(model, ops.N):
                return _amd.efdpa_float(model, ops.A, ops.BT.T, acc)
            return _amd.run_amd(model, _amd.KIND_E, ops.A, ops.BT, acc)
        if _amd.lanes_fit(model, ops.N):
            return _amd.efdpa_lanes(model, ops.A, ops.BT, ops.sa, ops.ea, ops.sb, ops.eb, acc, ops.special)
        q = _amd.amd_params(model, _amd.KIND_E)
        q[P_K] = ops.K
        _amd.amd_gemm(ops.A, ops.BT, ops.sa, ops.ea, ops.sb, ops.eb, acc, q)
        return acc

    def has_twin(self, model: "Model") -> bool:
        return model.L == 1    # the exact a * b + c rounded once: an FMA chain's step

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return efdpa_block(index, a, b, d, model)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return ()

    def bound_shape(self, model: "Model") -> BoundShape:
        return BoundShape(model.L, None, model.rounding)


EFDPA_OPERATION = register(EFDPA())

__all__ = ["EFDPA", "EFDPAParams", "EFDPA_OPERATION"]
