"""FTZ-AddMul's operation: parameters, dispatch, bound terms and probing hints
(pairwise flush-to-zero adds and multiplies, Xie et al. 2025 Algorithms 1-2, AMD CDNA2).

Products and sums in fp32 with round-to-nearest-even, subnormal inputs flushed to +0
(``flush_subnormals``), subnormal results flushed to zero with their sign; P = 2 or 4
consecutive products summed pairwise, then added to the running c.  NaN payloads
follow MMA-Sim 2.1.1.  Kernels: :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_lanes`
(outputs of a row side by side in float32) for inputs exact in fp32 and at least
:data:`~workbench.engine.kernels.LANES_MIN_N` columns, its NaN results recomputed by
the reference :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_gemm` (one output at a time:
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_mul` / :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_add`,
shown by :func:`~workbench.engine.operations.ftz_addmul.explain.ftz_block`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

import numba

from ....numbers import formats as _formats
from ... import kernels as _k
from ...model import ErrorTerm, Operation, register
from ...operands import (Operands, check_small_values, checked_inputs, float_operands, pad_k, recycle_arrays,
                         workspace_array)
from ...trace import Block
from . import kernels as _kernels
from .explain import ftz_block

if TYPE_CHECKING:
    from ...model import Model


@dataclass(frozen=True, kw_only=True)
class FTZAddMulParams:
    """Parameters of FTZ-AddMul (names as :class:`~workbench.engine.model.Model`'s)."""

    P: int | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        if self.P not in (2, 4):
            raise ValueError(f"P={self.P!r}: FTZ-AddMul needs P in {{2, 4}} (Xie et al. Algorithm 2)")


#: Elements of B (float32) that the lane kernel walks per chunk of K: 64 KiB, from cache for every row of a tile.
_LANE_CHUNK = 1 << 14


def lanes_exact(fin: _formats.FloatFormat) -> bool:
    """Whether every value of the input format is exactly an fp32 value, so that the
    float32 lane kernel (:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_lanes`) computes
    the products and sums of the fp32 reference bit for bit (fp16, bf16)."""
    return fin.p <= 24 and fin.emax <= 127 and fin.emin - fin.man_bits >= -149


def run_lanes(A: np.ndarray, BT: np.ndarray, acc: np.ndarray, P: int, min_normal: float) -> None:
    """FTZ-AddMul on the lane kernel: ``A`` (M, K), ``BT`` (N, K) float64 in a format
    of :func:`lanes_exact`, ``acc`` C on entry and D on exit.  The operands go to
    float32 (B in its (K, N) layout, K zero-padded to whole blocks of P, N to whole
    lanes; both in the workspace's buffers, handed back after the kernel); outputs
    whose lane result is NaN are recomputed by the reference kernel, which chooses the
    NaN's payload (MMA-Sim 2.1.1)."""
    (M, K), N = A.shape, BT.shape[0]
    Kp = K + (-K) % P if K else P
    TI, TJ = _k.output_tiles(M, N, numba.get_num_threads())
    TJ = -(-TJ // _k.LANE_PAD) * _k.LANE_PAD
    Np = -(-N // _k.LANE_PAD) * _k.LANE_PAD
    A32 = workspace_array((M, Kp), np.float32)
    B32 = workspace_array((Kp, Np), np.float32)
    _kernels.ftz_operand32(np.ascontiguousarray(A), A32, min_normal)
    _kernels.ftz_operand32(np.ascontiguousarray(BT.T), B32, min_normal)
    C = acc.copy()
    _kernels.ftz_addmul_lanes(A32, B32, acc, P, TI, TJ, max(1, _LANE_CHUNK // (P * Np)))
    recycle_arrays(A32, B32)
    rows, cols = np.nonzero(np.isnan(acc))
    if rows.size:
        A2, BT2 = pad_k(A, BT, P)
        _kernels.ftz_addmul_outputs(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), acc, C, rows, cols, P,
                                   min_normal)


class FTZAddMul(Operation):
    """Flush-to-zero adds and multiplies (Xie et al. 2025 Algorithms 1-2)."""

    kind = "ftz-addmul"
    citation = "Xie et al. 2025 Algorithms 1-2"
    params = FTZAddMulParams
    propagates_nan = True
    kernel_family = "amd"
    has_cuda_kernel = True
    has_row_kernel = True
    fixed_rounding = "RNE/op"    # each add and multiply rounded to nearest (Algorithms 1-2)

    def block_size(self, model: "Model") -> int:
        return cast(int, model.P)  # FTZAddMulParams checked it is 2 or 4

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked against the input format by one compiled pass each (signed
        formats with subnormals: fp16, bf16; the generic check otherwise), as float64
        ``A`` and ``B^T``, the latter a view of B (the lane kernel reads B's layout)."""
        fin = model.in_fmt
        if not (fin.signed and fin.subnormals):
            return float_operands(model, A, B)
        A64, B64, _ = checked_inputs(fin, A, B)
        return Operands(A64.shape[0], A64.shape[1], B64.shape[1], A64, B64.T, None, None, None, None)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        A, BT = np.asarray(ops.A, dtype=np.float64), np.asarray(ops.BT, dtype=np.float64)
        P = self.block_size(model)
        fin = model.in_fmt
        min_normal = fin.min_normal if model.flush_subnormals else 0.0
        if ops.N >= _k.LANES_MIN_N and lanes_exact(fin):
            run_lanes(A, BT, acc, P, min_normal)
        else:
            A2, BT2 = pad_k(A, BT, P)
            _kernels.ftz_addmul_gemm(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), acc, P, min_normal)
        return acc

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product after one check call, in one compiled call
        (:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_small`: the one-output
        chain :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_chain`)."""
        self.check_run(accumulation, promote_every, None, None)
        if not check_small_values(model.in_fmt, model.out_fmt, A, B, C):
            return None
        acc = C.copy()
        min_normal = model.in_fmt.min_normal if model.flush_subnormals else 0.0
        _kernels.ftz_small(A, B, acc, self.block_size(model), min_normal)
        return acc

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernels: rows side by side in float32
        (:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_row_lanes`) for inputs of
        :func:`lanes_exact`, their NaN results and every other format one row at a time
        (:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_rows`, which picks NaN payloads)."""
        P = self.block_size(model)
        a2, b2 = (np.ascontiguousarray(x) for x in pad_k(a, b, P))
        min_normal = model.in_fmt.min_normal if model.flush_subnormals else 0.0
        if not lanes_exact(model.in_fmt):
            _kernels.ftz_addmul_rows(a2, b2, acc, P, min_normal)
            return acc
        c = acc.copy()
        _kernels.ftz_addmul_row_lanes(a2, b2, acc, P, min_normal)
        nan_rows = np.flatnonzero(np.isnan(acc))
        if nan_rows.size:
            redo = c[nan_rows]
            _kernels.ftz_addmul_rows(a2[nan_rows], b2[nan_rows], redo, P, min_normal)
            acc[nan_rows] = redo
        return acc

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """FTZ-AddMul (Xie et al. 2025 Algorithms 1-2: the AMD CDNA2 presets): one
        :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_chain` per thread on float64 A and B^T, K
        zero-padded to whole blocks of P."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        ck = _gpu.kernels_module()
        cuda = _gpu.cuda_module()
        from .cuda import ftz_kernel

        P = self.block_size(model)
        A, BT = pad_k(np.asarray(ops.A, dtype=np.float64), np.asarray(ops.BT, dtype=np.float64), P)
        min_normal = model.in_fmt.min_normal if model.flush_subnormals else 0.0
        d_acc = cuda.to_device(acc)
        ftz_kernel[ck.blocks(acc.size), ck.THREADS](_gpu.to_device(A), cuda.to_device(np.asfortranarray(BT)),
                                                    d_acc, P, min_normal)
        return np.asarray(d_acc.copy_to_host())

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

__all__ = ["FTZAddMul", "FTZAddMulParams", "FTZ_ADDMUL_OPERATION", "lanes_exact", "run_lanes"]
