"""FTZ-AddMul: pairwise flush-to-zero adds and multiplies (Xie et al. 2025 Algorithms
1-2, AMD CDNA2).

Products and sums in fp32 with round-to-nearest-even, subnormal inputs flushed to +0
(``flush_subnormals``), subnormal results flushed to zero with their sign; P = 2 or 4
consecutive products summed pairwise, then added to the running c.  NaN payloads
follow MMA-Sim 2.1.1.  Kernel: :func:`~workbench.engine.others.ftz_addmul_gemm`;
scalar path :func:`~workbench.engine.others.ftz_mul` /
:func:`~workbench.engine.others.ftz_add` (shown by
:func:`~workbench.engine.explain.ftz_block`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ... import formats as _formats
from .. import others as _others
from ..explain import Block, ftz_block
from ..operands import Operands, pad_k
from ..operation import ErrorTerm, Operation, register

if TYPE_CHECKING:
    from ..model import Model


@dataclass(frozen=True, kw_only=True)
class FTZAddMulParams:
    """Parameters of FTZ-AddMul (names as :class:`~workbench.engine.model.Model`'s)."""

    P: int | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        if self.P not in (2, 4):
            raise ValueError(f"P={self.P!r}: FTZ-AddMul needs P in {{2, 4}} (Xie et al. Algorithm 2)")


class FTZAddMul(Operation):
    """Flush-to-zero adds and multiplies (Xie et al. 2025 Algorithms 1-2)."""

    kind = "ftz-addmul"
    citation = "Xie et al. 2025 Algorithms 1-2"
    params = FTZAddMulParams
    propagates_nan = True
    kernel_family = "amd"

    def block_size(self, model: "Model") -> int:
        return cast(int, model.P)  # FTZAddMulParams checked it is 2 or 4

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        A2, BT2 = pad_k(np.asarray(ops.A, dtype=np.float64), np.asarray(ops.BT, dtype=np.float64), self.block_size(model))
        fin = model.in_fmt
        _others.ftz_addmul_gemm(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), acc, self.block_size(model),
                                fin.min_normal if model.flush_subnormals else 0.0)
        return acc

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return ftz_block(index, a, b, d, model)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        fin = _formats.format(in_format)
        if fin.name not in ("fp16", "bf16"):
            raise ValueError(f"ftz-addmul takes fp16 or bf16 inputs (Xie et al., Sec. 6.1); got {fin.name!r}")
        return (
            ErrorTerm("input FTZ", f"MinNormal({fin.name}) = 2^{fin.emin}", 1.0, "absolute", fin.emin),
            ErrorTerm("add/mul", "0.5 ulp_fp32 = 0.5 x 2^(e_result - 23)", 0.5, "e_result", -23),
            ErrorTerm("output FTZ", "MinNormal(fp32) = 2^-126", 1.0, "absolute", -126),
        )

    def includes_output_rounding(self) -> bool:
        return False


FTZ_ADDMUL_OPERATION = register(FTZAddMul())

__all__ = ["FTZAddMul", "FTZAddMulParams", "FTZ_ADDMUL_OPERATION"]
