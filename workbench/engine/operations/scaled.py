"""ST-FDPA and GST-FDPA: the block-scaled fused dot-product-adds of the MX and NVFP4
instructions (Xie et al. 2025 Algorithms 8-9, Table 5).

* ST-FDPA (Algorithm 8, MX formats): T-FDPA whose product exponents also carry the
  exponents of the two E8M0 scale factors of their block of ``k_block`` elements;
  run as the T-FDPA kernels on operands whose exponents have the scales' added.
* GST-FDPA (Algorithm 9, NVFP4/MXFP4 k64): each group of G products is summed
  exactly, times the two scales' significands at the scales' exponent, and the L/G
  group terms and c form a truncated fused sum
  (:func:`~workbench.engine.gst.gst_gemm_lanes`, outputs side by side; one output
  at a time :func:`~workbench.engine.gst.gst_gemm`, one block
  :func:`~workbench.engine.gst.gst_step`).

A NaN scale factor makes every product of its block NaN (Xie Section 4.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np

from .. import gst as _gst
from .. import kernels as _k
from ..explain import gst_block, st_block
from ..layout import ACC_MODES, P_ACCMODE
from ..operands import Operands, decompose_checked, threads_for
from ..trace import Block
from ..model import ErrorTerm, Operation, register
from ..checks import check_block, check_format, check_fused_window
from .tfdpa import TFDPA_OPERATION, TFDPAParams, accumulation_params, fused_sum_terms, kernel_params, run_tfdpa

if TYPE_CHECKING:
    from ..model import Model


@dataclass(frozen=True, kw_only=True)
class STFDPAParams(TFDPAParams):
    """Parameters of ST-FDPA: T-FDPA's and the scale block (``k_block`` elements share
    one scale of ``scale_format``)."""

    k_block: int | None = None
    scale_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_scales(self.L, self.k_block, self.scale_format)


@dataclass(frozen=True, kw_only=True)
class GSTFDPAParams:
    """Parameters of GST-FDPA (names as :class:`~workbench.engine.model.Model`'s): blocks
    of L products in groups of G, ``k_block`` elements per scale of ``scale_format``."""

    L: int = 64
    F: int = 35
    G: int | None = None
    k_block: int | None = None
    scale_format: str | None = None
    rounding: str = "rz"
    result_format: str | None = None
    zero_exponent: int | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False

    def __post_init__(self) -> None:
        check_fused_window(self.L, self.F, self.rounding, self.result_format)
        _check_scales(self.L, self.k_block, self.scale_format)
        assert self.k_block is not None
        if self.G is None or self.k_block % self.G:
            raise ValueError(f"G={self.G!r} must divide k_block={self.k_block}")


def _check_scales(L: int, k_block: int | None, scale_format: str | None) -> None:
    if k_block is None or scale_format is None:
        raise ValueError(f"k_block={k_block!r}, scale_format={scale_format!r}: scaled operations need both "
                         "(Xie et al. Table 5)")
    check_block("k_block", k_block)
    check_format("scale_format", scale_format)
    if L % k_block:
        raise ValueError(f"L={L} must be a multiple of k_block={k_block}")


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
        # the prepared operands stay as they are: the scaled ones are copies (in their layout)
        if sb.flags.f_contiguous and not sb.flags.c_contiguous:   # B^T's transposed view
            sbT, ebT = _k.add_scale_exponents(sb.T, eb.T, np.ascontiguousarray(log2_b.T), kb, False, N, K)
            sb, eb = sbT.T, ebT.T
        else:
            sb, eb = _k.add_scale_exponents(sb, eb, log2_b, kb, True, K, N)
        sa, ea = _k.add_scale_exponents(sa, ea, log2_a, kb, False, ops.M, K)
        # a NaN scale makes every product of its block NaN (Xie Section 4.2)
        special = ops.special or bool(np.isnan(log2_a).any() or np.isnan(log2_b).any())
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
        prm = _k.pack_tfdpa(params, ops.M, ops.N, numba.get_num_threads())
        run_tfdpa(model, cast(np.ndarray, sc.sa), cast(np.ndarray, sc.ea), cast(np.ndarray, sc.sb),
                  cast(np.ndarray, sc.eb), acc, prm, sc.special)
        return acc

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """ST-FDPA (Xie et al. 2025 Algorithm 8: the MX presets; chain and outside
        accumulation): the T-FDPA kernel on the operands whose exponents carry their
        block's scale exponents (:meth:`STFDPA.scaled_operands
        <workbench.engine.operations.scaled.STFDPA.scaled_operands>`, on the host), as on the CPU."""
        from .. import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        return _gpu.launch_tfdpa(self.scaled_operands(model, ops, scale_a, scale_b), acc,
                                 accumulation_params(model, accumulation, None))

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        return st_block(index, start, K, a, b, d, model, scale_a, scale_b)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return fused_sum_terms(self.kind, L, F)


class GSTFDPA(Operation):
    """Group-scaled truncated fused dot-product-add (Xie et al. 2025 Algorithm 9)."""

    kind = "gst-fdpa"
    citation = "Xie et al. 2025 Algorithm 9, Table 5"
    params = GSTFDPAParams
    scaled = True
    has_cuda_kernel = True
    has_zero_exponent = True

    def check_kernel(self, model: "Model") -> None:
        _gst.gst_params(model)     # the fixed point holds the groups, or a ValueError says why

    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked and decomposed in one compiled pass, K zero-padded to whole
        blocks of L, B in the lane kernel's (K, N) layout (:class:`Operands`)."""
        M, K = A.shape
        Kp = K + (-K) % model.L if K else model.L
        with threads_for(A.size + B.size):
            sa, ea, sb, eb, special = decompose_checked(A, B, model.in_fmt, model.flush_subnormals, Kp, False)
        return Operands(M, K, B.shape[1], None, None, sa, ea, sb, eb, special)

    def run(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        if accumulation != "chain":
            raise ValueError(f"accumulation={accumulation!r}: GST-FDPA models support accumulation='chain' only")
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        sa, ea, sb, eb = cast("tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]", (ops.sa, ops.ea, ops.sb, ops.eb))
        return _gst.run_gst(model, sa, ea, sb, eb, acc, scale_a, scale_b, ops.special)

    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """GST-FDPA (Xie et al. 2025 Algorithm 9: the NVFP4/MXFP4 k64 presets; chain
        accumulation): one :func:`~workbench.engine.gst.gst_chain` per thread on the
        decomposed operands and scales (:func:`~workbench.engine.gst.scale_operands`)."""
        from .. import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        ck = _gpu.kernels_module()
        cuda = _gpu.cuda_module()
        groups = model.L // cast(int, model.G)
        if groups > ck.MAX_GROUPS:
            raise NotImplementedError(f"device='cuda': GST-FDPA with L/G={groups} groups per block; the kernel's "
                                      f"per-thread group terms hold at most {ck.MAX_GROUPS} (use device='cpu')")
        r = _gst.gst_params(model)
        sa, ea = cast(np.ndarray, ops.sa), cast(np.ndarray, ops.ea)
        sb, eb = cast(np.ndarray, ops.sb), cast(np.ndarray, ops.eb)      # (Kp, Np)
        xsa, xea, xsb, xeb = _gst.scale_operands(model, sa.shape[1], sb.shape[1], scale_a, scale_b)
        N = ops.N

        def by_column(x: np.ndarray) -> Any:
            """(N, rows) on the device, stored (rows, N): gst_chain reads ``x[j, k]`` and a
            warp's threads (consecutive j) read adjacent elements."""
            return cuda.to_device(np.ascontiguousarray(x[:, :N]).T)

        d_acc = cuda.to_device(acc)
        ck.gst_kernel[ck.blocks(acc.size), ck.THREADS](
            _gpu.to_device(sa), _gpu.to_device(ea), by_column(sb),
            by_column(eb), cuda.to_device(xsa), cuda.to_device(xea), by_column(xsb), by_column(xeb), d_acc,
            cuda.to_device(r))
        return np.asarray(d_acc.copy_to_host())

    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        assert scale_a is not None and scale_b is not None
        kb = cast(int, model.k_block)  # GSTFDPAParams checked it
        q0, q1 = start // kb, (start + len(a)) // kb
        sca, scb = np.ones(q1 - q0), np.ones(q1 - q0)   # scales of the padding: 1, as run_gst pads them
        part_a, part_b = scale_a[q0:q1], scale_b[q0:q1]
        sca[:part_a.size] = part_a
        scb[:part_b.size] = part_b
        return gst_block(index, a, b, d, model, sca, scb)

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...]:
        return fused_sum_terms(self.kind, L, F)


STFDPA_OPERATION = register(STFDPA())
GSTFDPA_OPERATION = register(GSTFDPA())

__all__ = ["STFDPA", "GSTFDPA", "STFDPAParams", "GSTFDPAParams", "STFDPA_OPERATION", "GSTFDPA_OPERATION"]
