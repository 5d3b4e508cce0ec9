"""The CPU bf16 pair units' operation: dot products of bf16 pairs accumulated into fp32,
as x86 (AVX512-BF16 ``VDPBF16PS``, AMX-BF16 ``TDPBF16PS``) and Arm (``BFDOT``,
``BFMMLA``, with and without FEAT_EBF16) specify them.

K is consumed in instructions of L elements (pairs of consecutive elements; K is
zero-padded to whole instructions, as the libraries that call them pad it), each
instruction's result feeding the next as c.  ``pair_rule`` says what one instruction
does, read from the vendors' pseudo-code:

``"x86-fma"``
    Intel SDM Vol. 2, VDPBF16PS: per pair, ``c = fma(a[2i+1], b[2i+1], c)`` then
    ``c = fma(a[2i], b[2i], c)`` - the high element first - each an fp32 FMA rounded to
    nearest even; input denormals (bf16 operands and c) are treated as zero, results
    subnormal after rounding are flushed to zero of their sign; MXCSR is ignored.  A NaN
    result is the first NaN operand in SDM Table 5-1's order (a low, b low, a high,
    b high, c), quieted, or the x86 default NaN 0xFFC00000.  L = 2 (one lane).
``"x86-even-odd"``
    Intel SDM Vol. 2, TDPBF16PS: two fp32 FMA chains from +0 over the instruction's
    even and odd elements (RNE, DAZ, FTZ), then ``tmp = even + odd`` and ``c = c + tmp``,
    each rounded to nearest even with FTZ.  L = 32 (a 64-byte tile row).  NaN results as
    ``"x86-fma"`` over the instruction's operands (assumed: the SDM's pseudo-code does
    not state it for AMX).
``"arm-odd"``
    Arm ARM, BFDotAdd with FPCR.EBF = 0 (BFMulH, FPAdd_BF16, BFRound): both products
    rounded to fp32, their sum rounded, then ``c + sum`` rounded, each to odd (a value
    that overflows gives Inf); inputs and c denormal are flushed to zero, and an exact
    result below 2^-126 flushes to zero of its sign before rounding; NaN results are
    Arm's default NaN 0x7FC00000.  FPCR is ignored.  L = 2 (BFDOT), 4 (BFMMLA: two
    chained BFDotAdd per output).
``"arm-fused"``
    Arm ARM, BFDotAdd with FEAT_EBF16 and FPCR.EBF = 1 (FPDot, then FPAdd): the pair's
    two products summed exactly and rounded once to fp32, then ``c + sum`` rounded,
    both in FPCR's mode; modelled for FPCR's defaults RMode = RNE and FZ = 0 (subnormals
    kept), and FPCR.DN = 1 (NaN results are the default NaN 0x7FC00000; with DN = 0 the
    hardware propagates an operand's NaN, FPProcessNaNs4, which is not modelled).

Kernels: :func:`~workbench.engine.operations.pair_dot.kernels.pair_dot_gemm` (one output
at a time), :func:`~workbench.engine.operations.pair_dot.kernels.pair_dot_rows` (``dots``),
one instruction :func:`~workbench.engine.operations.pair_dot.kernels.pair_block`; on a GPU
:func:`~workbench.engine.operations.pair_dot.cuda.pair_kernel` around the same chain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ....numbers.validation import unknown_name
from ...checks import check_block
from ...model import Operation, register
from ...operands import Operands, check_small_values, float_operands
from ...trace import Block
from . import kernels as _kernels

if TYPE_CHECKING:
    from ...model import Model

#: The pair rules (:class:`PairDotParams`), each with the instruction it is read from.
PAIR_RULES = {
    "x86-fma": "Intel SDM Vol. 2 VDPBF16PS (two fp32 FMAs per pair, high element first; DAZ, FTZ, RNE)",
    "x86-even-odd": "Intel SDM Vol. 2 TDPBF16PS (even and odd FMA chains from 0, summed, added to c; DAZ, FTZ, RNE)",
    "arm-odd": "Arm ARM BFDotAdd, FPCR.EBF = 0 (products, pair sum and c addition rounded to odd; flushed)",
    "arm-fused": "Arm ARM BFDotAdd, FEAT_EBF16 with FPCR.EBF = 1 (pair sum rounded once, then added to c; RNE)",
}


@dataclass(frozen=True, kw_only=True)
class PairDotParams:
    """Parameters of the bf16 pair units (names as :class:`~workbench.engine.model.Model`'s):
    ``L`` elements per instruction (even), ``pair_rule`` one of :data:`PAIR_RULES`."""

    L: int = 2
    pair_rule: str | None = None

    def __post_init__(self) -> None:
        check_block("L", self.L)
        if self.L % 2:
            raise ValueError(f"L={self.L}: a pair unit consumes whole pairs of elements (expected an even L)")
        if self.pair_rule not in PAIR_RULES:
            raise unknown_name("pair_rule", self.pair_rule, tuple(PAIR_RULES))


class PairDot(Operation):
    """Dot products of bf16 pairs accumulated into fp32 (x86 VDPBF16PS/TDPBF16PS, Arm
    BFDOT/BFMMLA); the module docstring states each rule."""

    kind = "pair-dot"
    citation = "Intel SDM Vol. 2 (VDPBF16PS, TDPBF16PS); Arm ARM (BFDotAdd, FEAT_EBF16)"
    params = PairDotParams
    propagates_nan = True
    kernel_family = "amd"    # compiled beside the AMD kinds, apart from T-FDPA's (it shares no kernel with either)
    has_row_kernel = True
    has_cuda_kernel = True

    def check_formats(self, model: "Model") -> None:
        if model.in_fmt.name != "bf16" or model.out_fmt.name != "fp32":
            raise ValueError(f"kind='pair-dot' takes bf16 inputs and an fp32 accumulator, not "
                             f"in_format={model.in_format!r}, out_format={model.out_format!r}")

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        return float_operands(model, A, B)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert ops.A is not None and ops.BT is not None
        _kernels.pair_dot_gemm(ops.A, ops.BT, acc, model.L, _kernels.RULE_CODES[str(model.pair_rule)])
        return acc

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call after one check call
        (:func:`~workbench.engine.operations.pair_dot.kernels.pair_dot_small`: the
        chains of instructions of :meth:`run`)."""
        if accumulation != "chain" or promote_every is not None:
            return None
        if not check_small_values(model.in_fmt, model.out_fmt, A, B, C):
            return None
        acc = C.copy()
        _kernels.pair_dot_small(A, B, acc, model.L, _kernels.RULE_CODES[str(model.pair_rule)])
        return acc

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """One chain of instructions per GPU thread (:mod:`.cuda`), bit for bit :meth:`run`."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        _gpu.cuda_module()          # a GPU or the simulator, before the kernel module imports numba.cuda
        from .cuda import pair_kernel

        return _gpu.launch_per_output(pair_kernel, ops, acc, model.L, _kernels.RULE_CODES[str(model.pair_rule)])

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernel (:func:`workbench.engine.core.dots`)."""
        _kernels.pair_dot_rows(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64),
                               acc, model.L, _kernels.RULE_CODES[str(model.pair_rule)])
        return acc

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        """One instruction (:func:`~workbench.engine.operations.pair_dot.kernels.pair_block`)
        on the block's L elements, its rule named."""
        rule = str(model.pair_rule)
        r = float(_kernels.pair_block(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), 0,
                                      model.L, float(d), _kernels.RULE_CODES[rule]))
        return Block(index=index, c_in=d, rounding=f"{rule}: {PAIR_RULES[rule]}", result=r)


PAIR_DOT_OPERATION = register(PairDot())

__all__ = ["PairDot", "PairDotParams", "PAIR_RULES", "PAIR_DOT_OPERATION"]
