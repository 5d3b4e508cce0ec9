"""The integer matrix units' operation, ``kind="int-mma"``: exact integer dot products
accumulated in int32, as NVIDIA's IMMA (``mma``, ``wgmma``, ``tcgen05.mma`` with ``.s8``/
``.u8`` operands and ``.s32`` accumulators) and AMD's ``V_MFMA_I32_*_I8`` define them.

What the vendors state (and what is assumed where they do not):

* NVIDIA, PTX ISA (9.x), 9.7.14.5.14 "Multiply-and-Accumulate Instruction: mma", Integer
  type ``mma.sync.aligned.shape.row.col{.satfinite}.s32.atype.btype.s32`` with
  ``.shape = {.m8n8k16, .m16n8k16, .m16n8k32}``, ``.atype``, ``.btype`` each ``.u8`` or
  ``.s8`` (mixes allowed: the ISA's own example is ``.satfinite.s32.s8.u8.s32``); under
  "Precision and rounding", Integer operations: "The integer mma operation is performed
  with .s32 accumulators. The .satfinite qualifier indicates that on overflow, the
  accumulated value is limited to the range MIN_INT32..MAX_INT32 ... If .satfinite is not
  specified, the accumulated value is wrapped instead."  ``.m8n8k16`` needs ``sm_75``
  (Turing), ``.m16n8k16``/``.m16n8k32`` ``sm_80``.  ``wgmma.mma_async`` (sm_90a) takes
  ``.s8``/``.u8`` with K = 32 and an optional ``.satfinite``; ``tcgen05.mma .kind::i8``
  (sm_100a) has an s32 D and a "saturate for integer types" bit in its instruction
  descriptor.
* The products of 8-bit integers are exact and one instruction's K <= 32 products sum to
  below 2^21 in magnitude, so the result of an instruction is determined by what happens
  when ``c`` plus that sum leaves the int32 range.  PTX does not say in which order the
  products and ``c`` are added, nor whether a partial sum inside one instruction is
  clamped; this model forms each instruction's exact sum ``c + sum a_k b_k`` and then
  wraps it modulo 2^32 (``overflow="wrap"``) or clamps it once
  (``overflow="saturate"``: the instruction's final result clamped, which is what the
  ISA's "limited to the range" states for the value written to D).  With ``"wrap"`` the
  result is ``C + A B`` modulo 2^32 whatever the order; with ``"saturate"`` it depends on
  the instruction's K (``L``): a GEMM chains instructions, each clamping its D, which
  feeds the next as C.
* AMD: the CDNA1-3 ``V_MFMA_I32_{32X32X8,16X16X16,...}I8`` (CDNA3 ``..._16X16X32_I8``,
  ``_32X32X16_I8``) take signed 8-bit A and B and a signed 32-bit C and D (ROCm's
  amd_matrix_instruction_calculator, ``--detail-instruction``: "Src0: int8, Src1: int8,
  Src2: int32, Vdst: int32").  That tool states nothing about int32 overflow, the CDNA
  ISA guides were not checked for it here, and no saturating form is listed; assumed:
  two's-complement wraparound, as 32-bit integer adds without a clamp bit do (the
  presets' evidence says so).

Parameters (:class:`IntMMAParams`): ``L`` the instruction's K (elements of one
instruction; K is zero-padded to whole instructions, which adds nothing), ``b_format``
B's format where it differs from A's ``in_format`` (``"s8"`` or ``"u8"``), ``overflow``
``"wrap"`` or ``"saturate"``; the accumulator is ``out_format="s32"``.  Inputs are
integers of their formats, given as numbers (float64 or integer arrays); anything else
- a fraction, 128 or -129 for s8, -1 or 256 for u8, NaN, Inf - is refused with a
ValueError naming the value and the range, never rounded.  Results are exact
integers; :func:`workbench.gemm` returns them as int32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ....numbers import formats as _formats
from ...checks import check_block
from ...model import Operation, register
from ...operands import Operands
from ...trace import Block
from . import kernels as _kernels

if TYPE_CHECKING:
    from ...model import Model

#: What an int32 accumulator does with a result outside its range (:class:`IntMMAParams`).
OVERFLOWS = {
    "wrap": "two's complement: the result modulo 2^32 (PTX mma without .satfinite: 'the accumulated value is "
            "wrapped')",
    "saturate": "clamped to [-2^31, 2^31 - 1] at the end of each instruction (PTX mma .satfinite: 'limited to the "
                "range MIN_INT32..MAX_INT32')",
}
#: the widest operand format the kernels take: products below 2^32, sums of L <= 4096 in int64
MAX_OPERAND_BITS = 16


@dataclass(frozen=True, kw_only=True)
class IntMMAParams:
    """Parameters of the integer units (names as :class:`~workbench.engine.model.Model`'s):
    ``L`` elements per instruction, ``b_format`` B's integer format (None: A's),
    ``overflow`` one of :data:`OVERFLOWS` (None: ``"wrap"``, PTX's default)."""

    L: int = 32
    b_format: str | None = None
    overflow: str | None = "wrap"

    def __post_init__(self) -> None:
        check_block("L", self.L)
        if self.overflow is None:
            object.__setattr__(self, "overflow", "wrap")
        if self.overflow not in OVERFLOWS:
            raise ValueError(f"overflow={self.overflow!r}: expected one of {tuple(OVERFLOWS)} (what the int32 "
                             f"accumulator does with a result outside its range)")
        if self.b_format is not None:
            _formats.int_format(self.b_format)     # a ValueError names an unknown one
            object.__setattr__(self, "b_format", _formats.int_format(self.b_format).name)


def _check_values(model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A against A's format, B against B's (and C against the accumulator's): the
    ValueError names the array, the position, the value and the integers expected."""
    fa, fb, fc = model.formats
    A64 = _formats.check_representable(A, fa, "A")
    B64 = _formats.check_representable(B, fb, "B")
    if C is not None:
        _formats.check_representable(C, fc, "C")
    return A64, B64


class IntMMA(Operation):
    """Exact integer dot products, int32 accumulator wrapping or saturating per instruction
    (NVIDIA IMMA, AMD MFMA i8); the module docstring states the sources."""

    kind = "int-mma"
    citation = ("NVIDIA PTX ISA, mma (integer type: .s8/.u8 -> .s32, .satfinite), wgmma.mma_async, tcgen05.mma "
                ".kind::i8; AMD CDNA1-3 ISA, V_MFMA_I32_*_I8")
    params = IntMMAParams
    integer = True
    kernel_family = "amd"    # compiled beside the AMD kinds, apart from T-FDPA's (it shares no kernel with either)
    has_row_kernel = True
    has_cuda_kernel = True
    fixed_rounding = "exact"
    revised_by_search = False

    def check_formats(self, model: "Model") -> None:
        fa, fb, fc = model.formats
        for name, f in (("in_format", fa), ("b_format", fb)):
            if not isinstance(f, _formats.IntFormat) or f.bits > MAX_OPERAND_BITS:
                raise ValueError(f"{name}={f.name!r}: kind='int-mma' takes integer operands of at most "
                                 f"{MAX_OPERAND_BITS} bits (s8, u8)")
        if not isinstance(fc, _formats.IntFormat) or (fc.bits, fc.signed) != (32, True):
            raise ValueError(f"out_format={model.out_format!r}: kind='int-mma' accumulates in a signed 32-bit "
                             "integer (out_format='s32')")

    def _code(self, model: "Model") -> int:
        return _kernels.OVERFLOW_CODES[str(model.overflow)]

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked against their integer formats (A's ``in_format``, B's
        ``b_format``), as float64 ``A`` and a C-ordered ``B^T``."""
        M, K = A.shape
        N = B.shape[1]
        A64, B64 = _check_values(model, A, B)
        return Operands(M, K, N, A64, np.ascontiguousarray(B64.T), None, None, None, None)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert ops.A is not None and ops.BT is not None
        _kernels.int_gemm(ops.A, ops.BT, acc, model.L, self._code(model))
        return acc

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product: the checks of :meth:`prepare` (and C's), then
        :func:`~workbench.engine.operations.int_mma.kernels.int_small` on the calling thread."""
        if accumulation != "chain" or promote_every is not None:
            return None
        _check_values(model, A, B, C)
        acc = C.copy()
        _kernels.int_small(A, B, acc, model.L, self._code(model))
        return acc

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """One chain of instructions per GPU thread (:mod:`.cuda`), bit for bit :meth:`run`."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        _gpu.cuda_module()          # a GPU or the simulator, before the kernel module imports numba.cuda
        from .cuda import int_kernel

        return _gpu.launch_per_output(int_kernel, ops, acc, model.L, self._code(model))

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernel (:func:`workbench.engine.core.dots`;
        inputs already representable, as ``dots`` requires)."""
        _kernels.int_rows(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64),
                          acc, model.L, self._code(model))
        return acc

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        """One instruction: its exact integer products, their exact sum with c (Python
        integers, unbounded), and that sum brought into int32 as ``overflow`` says; the
        result is the kernel's own (:func:`~workbench.engine.operations.int_mma.kernels.int_block`)."""
        ai = [int(x) for x in np.asarray(a, dtype=np.float64)]
        bi = [int(x) for x in np.asarray(b, dtype=np.float64)]
        shown = [f"a[{start + k}]*b[{start + k}] = {x}*{y} = {x * y}" for k, (x, y) in enumerate(zip(ai, bi))
                 if start + k < K]
        exact = int(d) + sum(x * y for x, y in zip(ai, bi))
        r = float(_kernels.int_block(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), 0,
                                     model.L, float(d), self._code(model)))
        over = str(model.overflow)
        if -(1 << 31) <= exact < (1 << 31):
            fate = "within int32: kept"
        elif over == "wrap":
            fate = f"outside int32: wrapped modulo 2^32 ({exact} {'-' if exact > 0 else '+'} " \
                   f"{abs(exact - int(r)) >> 32} x 2^32)"
        else:
            fate = f"outside int32: clamped to {'MAX' if exact > 0 else 'MIN'}_INT32"
        pre = ["the products are exact integers" + (":\n     " + "\n     ".join(shown) if shown
                                                   else " (zero padding only)")]
        return Block(index=index, c_in=d, pre=pre,
                     stages=[f"c + the products, exact: {int(d)} + {exact - int(d)} = {exact}; {fate}"],
                     rounding=f"none (exact integers); into the int32 accumulator, overflow={over} "
                              f"({OVERFLOWS[over]})", result=r)

    def has_twin(self, model: "Model") -> bool:
        return False


INT_MMA_OPERATION = register(IntMMA())

__all__ = ["IntMMA", "IntMMAParams", "OVERFLOWS", "MAX_OPERAND_BITS", "INT_MMA_OPERATION"]
