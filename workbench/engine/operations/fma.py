"""FMA chain: one IEEE fused multiply-add per product (Xie et al. 2025 Algorithm 4).

Each step computes RNE(a_k * b_k + d) in the output format, which is also the input
format (fp32 or fp64), so K is consumed one product at a time.  A late c
(``c_position="late"``) starts the chain from 0 and adds c once at the end with
``late_rounding``.  NaN results carry an operand's payload (MMA-Sim 2.1.1,
:mod:`workbench.engine.nans`).  Kernels: :func:`~workbench.engine.kernels.fma_gemm`
and :func:`~workbench.engine.kernels.add_late`; scalar path:
:func:`~workbench.engine.kernels.fma32` / :func:`~workbench.engine.kernels.fma64`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels as _k
from .. import ops as _ops
from ..explain import Block, fma_block
from ..operands import Operands
from ..operation import BoundShape, ErrorTerm, Operation, register
from ..checks import check_c_position, check_rounding

if TYPE_CHECKING:
    from ..model import Model


@dataclass(frozen=True, kw_only=True)
class FMAParams:
    """Parameters of an FMA chain (names as :class:`~workbench.engine.model.Model`'s)."""

    c_position: str = "early"
    late_rounding: str = "rne"
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        check_c_position(self.c_position)
        check_rounding("late_rounding", self.late_rounding)


class FMAChain(Operation):
    """Chain of IEEE FMAs (Xie et al. 2025 Algorithm 4)."""

    kind = "fma"
    citation = "Xie et al. 2025 Algorithm 4"
    params = FMAParams
    propagates_nan = True

    def check_formats(self, model: "Model") -> None:
        if model.in_fmt.name != model.out_fmt.name:
            raise ValueError("kind='fma' computes in one format: in_format must equal out_format")

    def block_size(self, model: "Model") -> int:
        return 1

    def late_c(self, model: "Model") -> bool:
        return model.c_position == "late"

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        if accumulation != "chain":
            raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        out = model.out_fmt
        if model.c_position == "early":
            _k.fma_gemm(np.ascontiguousarray(ops.A), ops.BT, acc, out.name == "fp32")
            return acc
        # c late: the chain starts from 0 and c is added once at the end, rounded on its own
        d = np.zeros_like(acc)
        _k.fma_gemm(np.ascontiguousarray(ops.A), ops.BT, d, out.name == "fp32")
        _k.add_late(d, acc, out.p, out.emin, out.emax, _ops.MODE_CODES[model.late_rounding],
                    model.flush_output_subnormals)
        return d

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return fma_block(start, a, b, d, model)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return ()

    def bound_shape(self, model: "Model") -> BoundShape:
        # each step rounds once; its mode is not a model parameter, so take the looser RZ
        return BoundShape(1, None, "rz")


FMA_OPERATION = register(FMAChain())

__all__ = ["FMAChain", "FMAParams", "FMA_OPERATION"]
