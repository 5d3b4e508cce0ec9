"""ST-FDPA's operation: the block-scaled T-FDPA of the MX instructions (Xie et al. 2025
Algorithm 8, Table 5): T-FDPA whose product exponents also carry the exponents of the
two E8M0 scale factors of their block of ``k_block`` elements, run as the T-FDPA kernels
(:mod:`workbench.engine.operations.tfdpa`, on which this operation builds) on operands
whose exponents have the scales' added (:func:`.kernels.add_scale_exponents`).  A NaN
scale factor makes every product of its block NaN (Xie Section 4.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np

from ...checks import check_scales
from ...layout import ACC_MODES, P_ACCMODE
from ...model import ErrorTerm, Operation, register
from ...operands import (Operands, raise_unrepresentable, raise_unrepresentable_scales, recycle_arrays,
                         scaled_small_check_args, workspace_array)
from ...trace import Block
from ..tfdpa.kernels import pack_tfdpa
from ..tfdpa import TFDPA_OPERATION, TFDPAParams, accumulation_params, fused_sum_terms, kernel_params, run_tfdpa
from .explain import st_block
from .kernels import add_scale_exponents, stfdpa_small

if TYPE_CHECKING:
    from ...model import Model


def _chain_params(model: "Model") -> np.ndarray:
    return accumulation_params(model, "chain", None)


def _scaled(s: np.ndarray, e: np.ndarray, log2_scale: np.ndarray, kb: int, k_first: bool, rows: int, cols: int,
            nan_scales: bool) -> tuple[np.ndarray, np.ndarray]:
    """C-ordered ``s, e`` with their blocks' scale exponents added
    (:func:`.kernels.add_scale_exponents`), in workspace arrays: ``s`` itself where no
    scale is NaN (no significand changes)."""
    s_out = workspace_array(s.shape, s.dtype) if nan_scales else s
    e_out = workspace_array(e.shape, e.dtype)
    add_scale_exponents(s, e, log2_scale, kb, k_first, rows, cols, nan_scales, s_out, e_out)
    return s_out, e_out


@dataclass(frozen=True, kw_only=True)
class STFDPAParams(TFDPAParams):
    """Parameters of ST-FDPA: T-FDPA's and the scale block (``k_block`` elements share
    one scale of ``scale_format``)."""

    k_block: int | None = None
    scale_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_scales(self.L, self.k_block, self.scale_format)


class STFDPA(Operation):
    """Block-scaled truncated fused dot-product-add (Xie et al. 2025 Algorithm 8)."""

    kind = "st-fdpa"
    citation = "Xie et al. 2025 Algorithm 8"
    params = STFDPAParams
    scaled = True
    has_cuda_kernel = True
    windowed = True
    has_zero_exponent = True
    accumulations = ("chain", "outside")

    def positive_zero(self, model: "Model") -> bool:
        """The fused sum's zeros are +0 (NVIDIA tensor cores; MMA-Sim's ``+ 0.0``); a c
        added late goes through an IEEE adder (Khattak-Mikaitis Table II), whose exact
        zero sums keep their IEEE sign."""
        return model.c_position != "late"

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B decomposed as T-FDPA's (:meth:`TFDPA.prepare
        <workbench.engine.operations.tfdpa.TFDPA.prepare>`: one compiled pass that
        checks them); ``run`` adds the scales' exponents."""
        return TFDPA_OPERATION.prepare(model, A, B)

    def scaled_operands(self, model: "Model", ops: Operands, scale_a: np.ndarray, scale_b: np.ndarray) -> Operands:
        """Copies of the prepared operands whose exponents carry their block's scale
        exponents (a NaN scale makes its block's elements NaN): T-FDPA operands, for
        the T-FDPA kernels of the CPU (:meth:`run`) and of the GPU
        (:mod:`workbench.engine.gpu`)."""
        sa, ea, sb, eb = cast("tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]", (ops.sa, ops.ea, ops.sb, ops.eb))
        K, N = ops.K, ops.N
        kb = cast(int, model.k_block)  # STFDPAParams checked it
        log2_a = np.log2(scale_a)              # powers of two (E8M0): exact; NaN stays NaN
        log2_b = np.log2(scale_b)
        # a NaN scale makes every product of its block NaN (Xie Section 4.2)
        nan_scales = bool(np.isnan(log2_a).any() or np.isnan(log2_b).any())
        # the prepared operands stay as they are: the scaled ones are workspace arrays (in their layout)
        if sb.flags.f_contiguous and not sb.flags.c_contiguous:   # B^T's transposed view
            sbT, ebT = _scaled(sb.T, eb.T, np.ascontiguousarray(log2_b.T), kb, False, N, K, nan_scales)
            sb, eb = sbT.T, ebT.T
        else:
            sb, eb = _scaled(sb, eb, log2_b, kb, True, K, N, nan_scales)
        sa, ea = _scaled(sa, ea, log2_a, kb, False, ops.M, K, nan_scales)
        special = ops.special or nan_scales
        return ops._replace(sa=sa, ea=ea, sb=sb, eb=eb, special=special)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        if accumulation not in self.accumulations:
            raise ValueError(f"accumulation={accumulation!r} is not available for scaled models")
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        sc = self.scaled_operands(model, ops, scale_a, scale_b)
        params = kernel_params(model)
        params[P_ACCMODE] = ACC_MODES[accumulation]
        prm = pack_tfdpa(params, ops.M, ops.N, numba.get_num_threads())
        run_tfdpa(model, cast(np.ndarray, sc.sa), cast(np.ndarray, sc.ea), cast(np.ndarray, sc.sb),
                  cast(np.ndarray, sc.eb), acc, prm, sc.special)
        # the arrays scaled_operands wrote, not the prepared ones it shares (a view of B^T is a new object
        # over the prepared buffer, which the caller may run again)
        made = ((sc.sa, ops.sa), (sc.ea, ops.ea), (sc.sb, ops.sb), (sc.eb, ops.eb))
        recycle_arrays(*(new for new, old in made if not np.may_share_memory(new, old)))
        return acc

    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call (:func:`.kernels.stfdpa_small`: the
        scalar T-FDPA kernel's arithmetic on operands carrying their scales' exponents);
        input formats without signed subnormals take the general path."""
        args = model.derived(scaled_small_check_args)
        if args is None or scale_a is None or scale_b is None or promote_every is not None \
                or accumulation not in self.accumulations:
            return None
        prm = model.derived(_chain_params) if accumulation == "chain" else accumulation_params(model, accumulation, None)
        check, scale_check = args
        acc = C.copy()
        bad = stfdpa_small(A.view(np.int64), B.view(np.int64), C.view(np.int64), scale_a, scale_b,
                           cast(int, model.k_block), acc, prm, check, scale_check)
        raise_unrepresentable(bad[:3], A, B, C, model.in_fmt, model.out_fmt)
        raise_unrepresentable_scales(bad[3:], scale_a, scale_b, cast(str, model.scale_format))
        return acc

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """ST-FDPA (Xie et al. 2025 Algorithm 8: the MX presets; chain and outside
        accumulation): the T-FDPA kernel on the operands whose exponents carry their
        block's scale exponents (:meth:`STFDPA.scaled_operands
        <workbench.engine.operations.stfdpa.STFDPA.scaled_operands>`, on the host), as on the CPU."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        _gpu.kernels_module()
        from ..tfdpa.cuda import launch_tfdpa

        return launch_tfdpa(self.scaled_operands(model, ops, scale_a, scale_b), acc,
                            accumulation_params(model, accumulation, None))

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return st_block(index, start, K, a, b, d, model, scale_a, scale_b)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return fused_sum_terms(self.kind, L, F)


STFDPA_OPERATION = register(STFDPA())

__all__ = ["STFDPA", "STFDPAParams", "STFDPA_OPERATION"]
