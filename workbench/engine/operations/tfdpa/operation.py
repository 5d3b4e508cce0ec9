"""T-FDPA's operation: truncated fused dot-product-add (Xie et al. 2025 Algorithm 7;
Khattak & Mikaitis 2025's generic block FMA, Section IV-C): parameters, dispatch, bound
terms and probing hints.

L products are formed exactly, aligned with c at their largest exponent and
truncated to F fractional bits (RZ_F, with an optional sticky bit), added exactly and
rounded once with rho to ``result_format``.  K is consumed in blocks of L, each
result feeding the next as c (Algorithm 5).  Variants read from the parameters: a
late c added with its own rounding (Khattak-Mikaitis Table II), the interleaved
two-group pattern of fp8 through ``mma.sync`` (Section IV-A5, Fig. 5c), and the
exponent zero terms carry into the alignment (MMA-Sim's ``zero_exponent``).

The arithmetic is the compiled kernels of :mod:`workbench.engine.operations.tfdpa.kernels`
(:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_gemm`, the lane kernel
:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_gemm_lanes` and the row kernel
:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_rows`) and the vector chain of
:mod:`workbench.engine.operations.tfdpa.vector_chain`; the scalar reference path is
:func:`~workbench.engine.operations.tfdpa.explain.tfdpa_block`, which the tests hold equal to them bit
for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np

from ... import kernels as _k
from ... import vector_chain as _vc
from ...layout import (
    ACC_MODES,
    P_ACCMODE,
    P_CLATE,
    P_F,
    P_GF,
    P_LATEMODE,
    P_MODE,
    P_NG,
    P_PROMOTE,
    P_STICKY,
    fused_params,
)
from ...checks import check_c_position, check_F, check_fused_window, check_rounding, positive_int
from ...model import BoundShape, ErrorTerm, Model, Operation, register
from ...operands import (Operands, decompose_checked, padded_decomposed, raise_unrepresentable,
                         small_check_args, threads_for)
from ...ops import MODE_CODES
from ...trace import Block
from . import kernels as _kernels
from . import vector_chain as _tvc
from .explain import tfdpa_block

if TYPE_CHECKING:
    from ...operands import RowBattery

#: What :meth:`TFDPA.screen_rows` writes into a copy of one parameter vector per block
#: shape, candidate by candidate, instead of building a Model for each.
_SCREENED = ("F", "rounding", "sticky")

@dataclass(frozen=True, kw_only=True)
class TFDPAParams:
    """Parameters of T-FDPA (names as :class:`~workbench.engine.model.Model`'s)."""

    L: int = 8
    F: int = 24
    rounding: str = "rz"
    result_format: str | None = None
    sticky: bool = False
    c_position: str = "early"
    late_rounding: str = "rne"
    zero_exponent: int | None = None
    interleave: int = 1
    group_F: int | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        check_fused_window(self.L, self.F, self.rounding, self.result_format)
        check_rounding("late_rounding", self.late_rounding)
        check_c_position(self.c_position)
        if self.interleave < 1 or self.L % (2 * self.interleave if self.interleave > 1 else 1):
            raise ValueError(f"interleave={self.interleave!r} must be >= 1 and split L={self.L} into pairs")
        if self.group_F is not None:
            check_F("group_F", self.group_F)


def kernel_params(model: "Model") -> np.ndarray:
    """The T-FDPA kernels' parameter vector (:mod:`workbench.engine.layout`), tiles unset:
    a new copy (callers fill in the accumulation and the tiles) of the one the model
    derives once."""
    return model.derived(_kernel_params).copy()


def _kernel_params(model: "Model") -> np.ndarray:
    prm = fused_params(model, model.F)
    prm[P_STICKY] = model.sticky
    prm[P_CLATE] = model.c_position == "late"
    prm[P_LATEMODE] = MODE_CODES[model.late_rounding]
    prm[P_NG] = model.interleave
    prm[P_GF] = model.F if model.group_F is None else model.group_F
    return prm


def accumulation_params(model: "Model", accumulation: str, promote_every: int | None) -> np.ndarray:
    """:func:`kernel_params` with the accumulation mode set (``promote_every`` checked:
    a positive multiple of L with ``"promote"``); tiles unset."""
    L = model.L
    params = kernel_params(model)
    params[P_ACCMODE] = ACC_MODES[accumulation]
    if accumulation == "promote":
        if promote_every is None or promote_every <= 0 or promote_every % L:
            raise ValueError(f"promote_every={promote_every!r}: expected a positive multiple of the block "
                             f"size L={L}")
        params[P_PROMOTE] = promote_every // L
    return params


def lane_layout(model: "Model", N: int) -> bool:
    """Whether products with this model and N columns run on the lane kernel
    (:func:`workbench.engine.operations.tfdpa.kernels.tfdpa_gemm_lanes`): models of the T-FDPA kernels
    it computes (:func:`~workbench.engine.operations.tfdpa.kernels.lane_eligible`) with at least
    :data:`~workbench.engine.kernels.LANES_MIN_N` columns."""
    return N >= _k.LANES_MIN_N and model.derived(_lane_eligible)


def _lane_eligible(model: "Model") -> bool:
    return bool(_kernels.lane_eligible(_kernels.pack_tfdpa(kernel_params(model), 1, 1, 1)))


def b_padded(model: "Model", N: int) -> bool:
    """Whether :meth:`TFDPA.prepare` pads B's columns for the lane kernel: not for
    the models the vector chain computes in chained accumulation
    (:func:`~workbench.engine.operations.tfdpa.vector_chain.simd_eligible`; its masked loads read B
    as it is, and the unpadded B is decomposed in one flat run); always for the
    scaled kinds, whose kernels read the padded layout.  The same for every N."""
    return model.derived(_b_padded)


def _b_padded(model: "Model") -> bool:
    return model.operation.scaled or not bool(_tvc.simd_eligible(_kernels.pack_tfdpa(accumulation_params(model, "chain", None), 1, 1, 1)))


def _chain_params(model: "Model") -> np.ndarray:
    return accumulation_params(model, "chain", None)


def _small_args(model: "Model") -> tuple[Any, ...] | None:
    return small_check_args(model.in_fmt, model.out_fmt, model.flush_subnormals)


def run_tfdpa(model: "Model", sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, acc: np.ndarray,
              prm: np.ndarray, special: bool = True) -> None:
    """The T-FDPA kernel for decomposed operands (``sa, ea`` (M, Kp); ``sb, eb``
    (Kp, N) indexed ``[k, j]``, any layout) on ``acc`` (C on entry, D on exit): when
    :func:`lane_layout` says so, the vector chain
    (:func:`~workbench.engine.operations.tfdpa.vector_chain.tfdpa_gemm_simd`) for the models and
    accumulation it computes, else the lane kernel (B copied into their layout unless
    it is there already); the scalar kernel otherwise.  ``special=False`` promises
    that no operand is Inf/NaN."""
    M, N = acc.shape
    if not lane_layout(model, N):
        _kernels.tfdpa_gemm(sa, ea, sb, eb, acc, prm)
        return
    simd = bool(_tvc.simd_eligible(prm))
    sb, eb, row_special, col_special = _k.lane_operands(sa, ea, sb, eb, N, model.in_fmt.emin, special, pad=not simd)
    if simd:
        _tvc.tfdpa_gemm_simd(sa, ea, sb, eb, row_special, col_special, acc, prm,
                             _vc.simd_rows(M, N, numba.get_num_threads()))
    else:
        _kernels.tfdpa_gemm_lanes(sa, ea, sb, eb, row_special, col_special, acc, prm)


class TFDPA(Operation):
    """Truncated fused dot-product-add (Xie et al. 2025 Algorithm 7)."""

    kind = "t-fdpa"
    citation = "Xie et al. 2025 Algorithm 7; Khattak & Mikaitis 2025 Section IV-C"
    params = TFDPAParams
    windowed = True
    has_zero_exponent = True
    accumulations = ("chain", "outside", "promote")
    has_row_kernel = True
    has_cuda_kernel = True
    searched_when_uncertain = True
    smt_encodable = True

    def positive_zero(self, model: "Model") -> bool:
        """The fused sum's zeros are +0 (NVIDIA tensor cores; MMA-Sim's ``+ 0.0``); a c
        added late goes through an IEEE adder (Khattak-Mikaitis Table II), whose exact
        zero sums keep their IEEE sign."""
        return model.c_position != "late"

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B decomposed in one compiled pass (K zero-padded to whole blocks of L),
        B in the lane kernel's layout when it will read it (see :class:`Operands`)."""
        M, K = A.shape
        N = B.shape[1]
        Kp = K + (-K) % model.L if K else model.L
        with threads_for(A.size + B.size):
            lanes = lane_layout(model, N)
            sa, ea, sb, eb, special = decompose_checked(A, B, model.in_fmt, model.flush_subnormals, Kp, not lanes,
                                                        not lanes or b_padded(model, N))
        return Operands(M, K, N, None, None, sa, ea, sb, eb, special)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        prm = _kernels.pack_tfdpa(accumulation_params(model, accumulation, promote_every), ops.M, ops.N,
                            numba.get_num_threads())
        sa, ea, sb, eb = cast("tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]", (ops.sa, ops.ea, ops.sb, ops.eb))
        run_tfdpa(model, sa, ea, sb, eb, acc, prm, ops.special)  # decomposed by prepare
        return acc

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call
        (:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_small`: the scalar kernel's
        arithmetic); input formats without signed subnormals take the general path."""
        args = model.derived(_small_args)
        if args is None:
            return None
        if accumulation == "chain" and promote_every is None:
            prm = model.derived(_chain_params)        # read, never written, by the kernel
        else:
            self.check_run(accumulation, promote_every, None, None)
            prm = accumulation_params(model, accumulation, promote_every)
        acc = C.copy()
        bad = _kernels.tfdpa_small(A.view(np.int64), B.view(np.int64), C.view(np.int64), acc, prm, *args)
        if bad[0] >= 0 or bad[1] >= 0 or bad[2] >= 0:
            raise_unrepresentable(bad, A, B, C, model.in_fmt, model.out_fmt)
        return acc

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernel (:func:`workbench.engine.core.dots`)."""
        a, b, sa, ea, sb, eb = padded_decomposed(model, a, b, model.L)
        prm = _kernels.pack_tfdpa(kernel_params(model), a.shape[0], 1, 1)
        _kernels.tfdpa_rows(sa, ea, sb.T, eb.T, acc, prm)
        return acc


    def screen_rows(self, params: dict[str, Any], battery: "RowBattery", acc: np.ndarray) -> np.ndarray:
        """The probes' search's row kernel
        (:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_rows`): the search runs
        tens of thousands of candidates that differ in F, rounding and sticky bit, so one
        Model and one parameter vector are built per block shape (every other
        parameter) and those three are written into a copy per candidate.  A separate
        group window (``group_F``) takes :meth:`dots`'s way."""
        if params.get("group_F") is not None:
            return super().screen_rows(params, battery, acc)
        shape = repr(sorted((k, v) for k, v in params.items() if k not in _SCREENED))
        cache = battery.cache(self.kind)
        if shape not in cache:
            model = Model(**{**params, "F": 0, "rounding": "rz", "sticky": False})
            cache[shape] = (_kernels.pack_tfdpa(kernel_params(model), battery.a.shape[0], 1, 1),
                            battery.decomposed(model, model.L)[2:], model)
        template, (sa, ea, sbT, ebT), shaped = cast("tuple[np.ndarray, tuple[np.ndarray, ...], Model]", cache[shape])
        prm = template.copy()
        prm[P_F] = prm[P_GF] = params["F"]
        prm[P_MODE] = MODE_CODES[params["rounding"]]
        prm[P_STICKY] = params["sticky"]
        _kernels.tfdpa_rows(sa, ea, sbT, ebT, acc, prm)
        return self.finish(shaped, acc)     # the zero rule reads c_position, one of the shape's parameters
    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """T-FDPA (every NVIDIA preset, custom T-FDPA units: sticky bit, c late, interleaved
        groups; chain, outside and promote accumulation) on the operands
        :meth:`TFDPA.prepare <workbench.engine.operations.TFDPA.prepare>` decomposed."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        _gpu.kernels_module()
        from .cuda import launch_tfdpa

        return launch_tfdpa(ops, acc, accumulation_params(model, accumulation, promote_every))

    def table2_features(self, model: "Model") -> dict[str, Any]:
        """Khattak & Mikaitis 2025 Table II: product alignment ``(2, F)``, accumulator output
        precision ``2 + F + ceil(log2(N_FMA + 1))`` (the carry bits of N_FMA + 1 addends),
        ``N_FMA = L / interleave``, final rounding (``Trunc`` for RZ; with c added late, the
        rounding of that addition), c order and interleaving."""
        late = model.c_position == "late"
        interleave = max(1, model.interleave or 1)
        nfma = model.L // interleave
        final = model.late_rounding if late else model.rounding
        return {"prd_align": f"(2,{model.F})", "acc_out_prec": 2 + model.F + math.ceil(math.log2(nfma + 1)),
                "NFMA": nfma, "final_rounding": {"rz": "Trunc", "rne": "RNE"}.get(final, final.upper()),
                "c_order": "late" if late else "early", "interleaving": "yes" if interleave > 1 else "no"}

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return tfdpa_block(index, a, b, d, model)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return fused_sum_terms(self.kind, L, F)

    def bound_shape(self, model: "Model") -> BoundShape:
        return BoundShape(model.L, model.F, model.rounding)


def fused_sum_terms(kind: str, L: int | None, F: int | None) -> tuple[ErrorTerm, ...]:
    """The truncated fused summation's error of Xie et al. Table 9: (L + 1) 2^(e_max - F)."""
    if L is None or F is None:
        raise ValueError(f"model {kind!r} needs L (products per block) and F (fraction bits)")
    L, F = positive_int("L", L), positive_int("F", F)
    return (ErrorTerm("fused summation", f"(L + 1) 2^(e_max - F) = {L + 1} x 2^(e_max - {F})",
                      float(L + 1), "e_max", -F),)


TFDPA_OPERATION = register(TFDPA())

__all__ = ["TFDPA", "TFDPAParams", "TFDPA_OPERATION", "kernel_params", "accumulation_params", "lane_layout", "b_padded", "run_tfdpa",
           "fused_sum_terms"]
