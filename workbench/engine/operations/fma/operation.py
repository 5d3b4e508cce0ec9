"""The FMA chain's operation: one IEEE fused multiply-add per product (Xie et al. 2025
Algorithm 4): parameters, dispatch, bound terms and probing hints.

Each step computes RNE(a_k * b_k + d) in the output format, which is also the input
format (fp32 or fp64 on every preset; a narrower custom format rounds each step's
exact a_k * b_k + d to it), so K is consumed one product at a time.  A late c
(``c_position="late"``) starts the chain from 0 and adds c once at the end with
``late_rounding``.  NaN results carry an operand's payload (MMA-Sim 2.1.1,
:mod:`workbench.engine.nans`).  Kernels: :func:`~workbench.engine.operations.fma.kernels.fma_gemm_lanes`
(binary64/binary32 chains: blocks of 4 rows x up to 4 vectors of outputs whose chains
run side by side in vector registers),
:func:`~workbench.engine.operations.fma.kernels.fma_gemm` (one output at a time: the narrower
formats), :func:`~workbench.engine.operations.fma.kernels.fma_rows` (``dots``) and
:func:`~workbench.engine.kernels.add_late`; one step:
:func:`~workbench.engine.operations.fma.kernels.fma_step`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np

from ....numbers import formats as _formats
from ... import kernels as _k
from ... import ops as _ops
from ...checks import check_c_position, check_rounding
from ...model import BoundShape, ErrorTerm, Operation, register
from ...operands import Operands, check_small_values
from ...trace import Block
from . import kernels as _kernels
from .explain import fma_block

if TYPE_CHECKING:
    from ...model import Model


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

    has_row_kernel = True
    fixed_rounding = "RNE/FMA"   # each step an IEEE FMA in round to nearest (Algorithm 4)
    has_cuda_kernel = True
    searched_when_uncertain = True

    def check_formats(self, model: "Model") -> None:
        if model.in_fmt.name != model.out_fmt.name:
            raise ValueError("kind='fma' computes in one format: in_format must equal out_format")
        _kernels.fma_code(model.out_fmt)

    def block_size(self, model: "Model") -> int:
        return 1

    def has_twin(self, model: "Model") -> bool:
        return True            # each step is the exact a * b + c rounded once: an E-FDPA with L = 1

    def late_c(self, model: "Model") -> bool:
        return model.c_position == "late"

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A (M, K) and B (K, N) checked against the input format, C-ordered, float32
        for fp32 chains and float64 otherwise (the layout of
        :func:`~workbench.engine.operations.fma.kernels.fma_gemm_lanes`); ``Operands.BT`` is the
        (N, K) transpose of that B.  fp64 needs no check (binary64 holds every float64)
        and C-ordered float64 operands are used as they are; for fp32 the check is the
        copy itself (:func:`~workbench.engine.operations.fma.kernels.copy_exact`: binary32 holds the
        values its cast keeps); other formats, and values that fail, go through
        :func:`workbench.numbers.formats.check_representable`, whose ValueError names the
        first value that is not representable."""
        fmt = model.in_fmt
        if fmt.name == "fp64":
            return Operands(A.shape[0], A.shape[1], B.shape[1], np.ascontiguousarray(A),
                            np.ascontiguousarray(B).T, None, None, None, None)
        dtype = np.float32 if fmt.name == "fp32" else np.float64
        Al, Bl = np.empty(A.shape, dtype=dtype), np.empty(B.shape, dtype=dtype)
        for x, xl, name in ((A, Al, "A"), (B, Bl, "B")):
            if _kernels.copy_exact(np.ascontiguousarray(x), xl) >= 0 or fmt.name != "fp32":
                xl[...] = _formats.check_representable(x, fmt, name)   # raises for fp32
        return Operands(A.shape[0], A.shape[1], B.shape[1], Al, Bl.T, None, None, None, None)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        if accumulation != "chain":
            raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert ops.A is not None and ops.BT is not None
        out = model.out_fmt
        # c late: the chain starts from 0 and c is added once at the end, rounded on its own
        d = acc if model.c_position == "early" else np.zeros_like(acc)
        _fma_chains(model, ops.A, ops.BT.T, d)
        if model.c_position == "late":
            _k.add_late(d, acc, out.p, out.emin, out.emax, _ops.MODE_CODES[model.late_rounding],
                        model.flush_output_subnormals)
        return d

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call after one check call
        (:func:`~workbench.engine.operations.fma.kernels.fma_small`: the one-output
        chain :func:`~workbench.engine.operations.fma.kernels.fma_chain`)."""
        if accumulation != "chain" or promote_every is not None:
            return None
        if not check_small_values(model.in_fmt, model.out_fmt, A, B, C):
            return None
        acc = C.copy()
        _kernels.fma_small(A, B, acc, *model.derived(_small_args))
        return acc

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernel (:func:`workbench.engine.core.dots`):
        ``acc[r] <- chain(a[r, :], b[r, :], acc[r])``, c early or late as :meth:`run`."""
        how, p, emin, emax = _kernels.fma_code(model.out_fmt)
        d = acc if model.c_position == "early" else np.zeros_like(acc)
        _kernels.fma_rows(a, b, d, how, p, emin, emax)
        if model.c_position == "late":
            out = model.out_fmt
            _k.add_late(d.reshape(-1, 1), acc.reshape(-1, 1), out.p, out.emin, out.emax,
                        _ops.MODE_CODES[model.late_rounding], model.flush_output_subnormals)
        return d

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """FMA chains (fp32 and fp64, c early or late) on float64 A and B."""
        if accumulation != "chain":
            raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        ck = _gpu.kernels_module()
        cuda = _gpu.cuda_module()
        from .cuda import fma_kernel

        out = model.out_fmt
        A = _gpu.to_device(cast(np.ndarray, ops.A))
        B = _gpu.to_device(cast(np.ndarray, ops.BT).T)
        grid = ck.blocks(acc.size)
        how, p, emin, emax = _kernels.fma_code(out)
        if model.c_position == "early":
            d_acc = cuda.to_device(acc)
            fma_kernel[grid, ck.THREADS](A, B, d_acc, how, p, emin, emax)
            return np.asarray(d_acc.copy_to_host())
        # c late: the chain starts from 0 and c is added once at the end, rounded on its own
        d = cuda.to_device(np.zeros_like(acc))
        fma_kernel[grid, ck.THREADS](A, B, d, how, p, emin, emax)
        ck.add_late_kernel[grid, ck.THREADS](d, cuda.to_device(acc), out.p, out.emin, out.emax,
                                             _ops.MODE_CODES[model.late_rounding], model.flush_output_subnormals)
        return np.asarray(d.copy_to_host())

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return fma_block(start, a, b, d, model)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return ()

    def bound_shape(self, model: "Model") -> BoundShape:
        # each step rounds once; its mode is not a model parameter, so take the looser RZ
        return BoundShape(1, None, "rz")


def _small_args(model: "Model") -> tuple[Any, ...]:
    """The scalar arguments of :func:`~workbench.engine.operations.fma.kernels.fma_small`
    after the operands: c late, its rounding, the output flush, and :func:`fma_code`."""
    return (model.c_position == "late", _ops.MODE_CODES[model.late_rounding], model.flush_output_subnormals,
            *_kernels.fma_code(model.out_fmt))


def _fma_chains(model: "Model", A: np.ndarray, B: np.ndarray, acc: np.ndarray) -> None:
    """``acc <- chain(A, B, acc)`` for A (M, K) and B (K, N) from :meth:`FMAChain.prepare`:
    the lane kernel for binary64/binary32 chains (enough groups of rows to give every
    thread a task), the one-output kernel otherwise."""
    how, p, emin, emax = _kernels.fma_code(model.out_fmt)
    if how == _kernels.FMA_ROUNDED:
        _kernels.fma_gemm(A, B, acc, how, p, emin, emax)
        return
    M, N = acc.shape
    panels = _kernels.fma_panels(N, A.itemsize)[0]
    blocks = -(-M // _kernels.FMA_MR)
    groups = max(1, min(blocks, -(-numba.get_num_threads() // max(1, panels))))
    _kernels.fma_gemm_lanes(A, B, acc, how, groups)


FMA_OPERATION = register(FMAChain())

__all__ = ["FMAChain", "FMAParams", "FMA_OPERATION"]
