"""TR-FDPA and GTR-FDPA: AMD CDNA3's truncated-rounded fused dot-product-adds (Xie et
al. 2025 Algorithms 10-11, Table 7).

The L products are summed in a truncated fused sum (RZ_F at the largest exponent;
GTR-FDPA: two sums, of the even and of the odd products, aligned at the larger
exponent and cut to F bits), then that sum T and c are re-aligned at a common
exponent E - T to F2 and c to F fractional bits, cut in the direction
``alignment_rounding`` (``"rd"`` on CDNA3, MMA-Sim Section 6.2.4; ``"rz"`` the
round-toward-zero twin of MMA-Sim Figure 3) - added and rounded with rho.  Kernels:
:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_gemm` and the lane kernels
:func:`~workbench.engine.operations.amd_fdpa.kernels.trfdpa_gemm_lanes` (GEMMs) and
:func:`~workbench.engine.operations.amd_fdpa.kernels.trfdpa_rows_lanes` (``dots``); scalar path
:func:`~workbench.engine.operations.amd_fdpa.kernels.trfdpa_step` (shown by
:func:`~workbench.engine.operations.amd_fdpa.explain.tr_block`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...checks import check_F, check_fused_window
from ...model import BoundShape, ErrorTerm, register
from ...operands import Operands, decompose_checked, threads_for
from ...trace import Block
from ..amd_fdpa import kernels as _amd
from ..amd_fdpa.explain import tr_block
from ..amd_fdpa.operation import AMDFused
from ..tfdpa import fused_sum_terms

if TYPE_CHECKING:
    from ...model import Model

#: Directions of the re-alignment (Xie Algorithms 10-11; "rz": the Figure 3 twin).
ALIGNMENT_ROUNDINGS = ("rd", "rz")


@dataclass(frozen=True, kw_only=True)
class TRFDPAParams:
    """Parameters of TR-FDPA and GTR-FDPA (names as :class:`~workbench.engine.model.Model`'s;
    ``F2`` has no default: Xie et al. Table 7 gives it per instruction)."""

    L: int = 8
    F: int = 24
    F2: int | None = None
    rounding: str = "rz"
    result_format: str | None = None
    zero_exponent: int | None = None
    alignment_rounding: str | None = "rd"
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        check_fused_window(self.L, self.F, self.rounding, self.result_format)
        if self.F2 is None:
            raise ValueError("F2=None: TR-FDPA and GTR-FDPA need F2 (Xie et al. Table 7)")
        check_F("F2", self.F2)
        if self.alignment_rounding is None:  # CDNA3 rounds down (Xie et al. Algorithms 10-11)
            object.__setattr__(self, "alignment_rounding", "rd")
        elif self.alignment_rounding not in ALIGNMENT_ROUNDINGS:
            raise ValueError(f"alignment_rounding={self.alignment_rounding!r}: expected one of "
                             f"{ALIGNMENT_ROUNDINGS} (Xie et al. Algorithms 10-11 round down; 'rz' is the "
                             "round-toward-zero twin of their Figure 3)")


@dataclass(frozen=True, kw_only=True)
class GTRFDPAParams(TRFDPAParams):
    """Parameters of GTR-FDPA: those of TR-FDPA (Xie et al. Algorithm 11)."""


class TRFDPA(AMDFused):
    """Truncated-rounded fused dot-product-add (Xie et al. 2025 Algorithm 10)."""

    kind = "tr-fdpa"
    citation = "Xie et al. 2025 Algorithm 10, Table 7"
    params = TRFDPAParams
    windowed = True
    has_zero_exponent = True
    searched_when_uncertain = True
    code = _amd.KIND_TR

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked and decomposed in one compiled pass (K zero-padded to whole
        blocks of L; B in the lane kernel's layout when it will read it), with float64
        ``A`` and ``B^T`` (views) beside them."""
        M, K = A.shape
        N = B.shape[1]
        Kp = K + (-K) % model.L if K else model.L
        with threads_for(A.size + B.size):
            lanes = _amd.lanes_fit(model, N)
            sa, ea, sb, eb, special = decompose_checked(A, B, model.in_fmt, model.flush_subnormals, Kp, not lanes,
                                                        not lanes or not _amd.tr_simd(model, self.code))
        return Operands(M, K, N, np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64).T,
                        sa, ea, sb, eb, special)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        if ops.sa is None or ops.ea is None or ops.sb is None or ops.eb is None:   # float64 operands only
            return _amd.run_amd(model, self.code, ops.A, ops.BT, acc)
        if _amd.lanes_fit(model, ops.N):
            return _amd.trfdpa_lanes(model, self.code, ops.sa, ops.ea, ops.sb, ops.eb, acc, ops.special)
        q = _amd.amd_params(model, self.code)
        none = np.empty((0, 0))
        _amd.amd_gemm(none, none, ops.sa, ops.ea, ops.sb, ops.eb, acc, q)
        return acc

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return tr_block(index, a, b, d, model, grouped=self.code == _amd.KIND_GTR)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return fused_sum_terms(self.kind, L, F)

    def bound_shape(self, model: "Model") -> BoundShape:
        return BoundShape(model.L, model.F, model.rounding)


class GTRFDPA(TRFDPA):
    """Grouped TR-FDPA: even and odd products in two truncated sums (Xie et al. 2025 Algorithm 11)."""

    kind = "gtr-fdpa"
    citation = "Xie et al. 2025 Algorithm 11, Table 7"
    params = GTRFDPAParams
    min_search_L = 2           # two groups (even and odd products) need two products
    code = _amd.KIND_GTR


TRFDPA_OPERATION = register(TRFDPA())
GTRFDPA_OPERATION = register(GTRFDPA())

__all__ = ["TRFDPA", "GTRFDPA", "TRFDPAParams", "GTRFDPAParams", "ALIGNMENT_ROUNDINGS", "TRFDPA_OPERATION", "GTRFDPA_OPERATION"]
