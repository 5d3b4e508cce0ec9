"""GST-FDPA's operation: the group-scaled truncated FDPA of the NVFP4/MXFP4 k64
instructions (Xie et al. 2025 Algorithm 9, Table 5): each group of G products is summed
exactly, times the two scales' significands at the scales' exponent, and the L/G group
terms and c form a truncated fused sum
(:func:`~workbench.engine.operations.gstfdpa.kernels.gst_gemm_lanes`, outputs side by
side; one output at a time :func:`~workbench.engine.operations.gstfdpa.kernels.gst_gemm`,
one block :func:`~workbench.engine.operations.gstfdpa.kernels.gst_step`).  A NaN scale
factor makes every product of its block NaN (Xie Section 4.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...checks import check_fused_window, check_scales
from ...model import ErrorTerm, Model, Operation, register
from ...operands import (Operands, decompose_checked, raise_unrepresentable, raise_unrepresentable_scales,
                         scaled_small_check_args, threads_for)
from ...trace import Block
from ..tfdpa import fused_sum_terms
from . import kernels as _kernels
from .explain import gst_block

if TYPE_CHECKING:
    from ...operands import RowBattery


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
        check_scales(self.L, self.k_block, self.scale_format)
        assert self.k_block is not None
        if self.G is None or self.k_block % self.G:
            raise ValueError(f"G={self.G!r} must divide k_block={self.k_block}")


class GSTFDPA(Operation):
    """Group-scaled truncated fused dot-product-add (Xie et al. 2025 Algorithm 9)."""

    kind = "gst-fdpa"
    citation = "Xie et al. 2025 Algorithm 9, Table 5"
    params = GSTFDPAParams
    scaled = True
    has_cuda_kernel = True
    has_zero_exponent = True
    revised_by_search = False   # the probes read G and F from exact-group vectors (features.probe_exact_groups)

    def positive_zero(self, model: "Model") -> bool:
        """The fused sum's zeros are +0 (NVIDIA tensor cores; MMA-Sim's ``+ 0.0``); a c
        added late goes through an IEEE adder (Khattak-Mikaitis Table II), whose exact
        zero sums keep their IEEE sign."""
        return model.c_position != "late"

    def check_kernel(self, model: "Model") -> None:
        _kernels.gst_params(model)     # the fixed point holds the groups, or a ValueError says why

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
        return _kernels.run_gst(model, sa, ea, sb, eb, acc, scale_a, scale_b, ops.special)


    def run_small(self, model: "Model", A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call
        (:func:`~workbench.engine.operations.gstfdpa.kernels.gst_small`: the one-output
        kernel's arithmetic); input formats without signed subnormals take the general
        path."""
        args = model.derived(scaled_small_check_args)
        if args is None or scale_a is None or scale_b is None or accumulation != "chain" or promote_every is not None:
            return None
        check, scale_check = args
        acc = C.copy()
        bad = _kernels.gst_small(A.view(np.int64), B.view(np.int64), C.view(np.int64), scale_a, scale_b, acc,
                                 model.derived(_kernels.gst_params), check, scale_check)
        raise_unrepresentable(bad[:3], A, B, C, model.in_fmt, model.out_fmt)
        raise_unrepresentable_scales(bad[3:], scale_a, scale_b, cast(str, model.scale_format))
        return acc

    def screen_rows(self, params: dict[str, Any], battery: "RowBattery", acc: np.ndarray) -> np.ndarray:
        """The probes' search's row kernel
        (:func:`~workbench.engine.operations.gstfdpa.kernels.gst_rows`) with every scale
        factor 1: the scales are not inputs of f(A, B, C), and the candidates take the
        convention of :func:`~workbench.probes.search` (NVFP4's UE4M3 where the fixed
        point holds it, else E8M0), under which unit scales agree.  The unit scales'
        operands are built once per block shape."""
        model = Model(**params)
        r = _kernels.gst_params(model)
        sa, ea, sbT, ebT = battery.decomposed(model, model.L)[2:]
        cache = battery.cache(self.kind)
        key = (model.L, model.k_block, model.scale_format)
        if key not in cache:
            n, Kp = sa.shape
            xsa, xea, xsb, xeb = _kernels.scale_operands(model, Kp, n, np.ones((n, Kp // model.k_block)),
                                                         np.ones((Kp // model.k_block, n)))
            cache[key] = (xsa, xea, np.ascontiguousarray(xsb.T), np.ascontiguousarray(xeb.T))
        _kernels.gst_rows(sa, ea, sbT.T, ebT.T, *cast("tuple[np.ndarray, ...]", cache[key]), acc, r)  # type: ignore[call-arg]  # numba's Dispatcher takes *args
        return self.finish(model, acc)
    def run_cuda(self, model: "Model", ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """GST-FDPA (Xie et al. 2025 Algorithm 9: the NVFP4/MXFP4 k64 presets; chain
        accumulation): one :func:`~workbench.engine.operations.gstfdpa.kernels.gst_chain` per thread on the
        decomposed operands and scales (:func:`~workbench.engine.operations.gstfdpa.kernels.scale_operands`)."""
        from ... import gpu as _gpu

        self.check_run(accumulation, promote_every, scale_a, scale_b)
        assert scale_a is not None and scale_b is not None
        ck = _gpu.kernels_module()
        cuda = _gpu.cuda_module()
        from .cuda import MAX_GROUPS, gst_kernel

        groups = model.L // cast(int, model.G)
        if groups > MAX_GROUPS:
            raise NotImplementedError(f"device='cuda': GST-FDPA with L/G={groups} groups per block; the kernel's "
                                      f"per-thread group terms hold at most {MAX_GROUPS} (use device='cpu')")
        r = _kernels.gst_params(model)
        sa, ea = cast(np.ndarray, ops.sa), cast(np.ndarray, ops.ea)
        sb, eb = cast(np.ndarray, ops.sb), cast(np.ndarray, ops.eb)      # (Kp, Np)
        xsa, xea, xsb, xeb = _kernels.scale_operands(model, sa.shape[1], sb.shape[1], scale_a, scale_b)
        N = ops.N

        def by_column(x: np.ndarray) -> Any:
            """(N, rows) on the device, stored (rows, N): gst_chain reads ``x[j, k]`` and a
            warp's threads (consecutive j) read adjacent elements."""
            return cuda.to_device(np.ascontiguousarray(x[:, :N]).T)

        d_acc = cuda.to_device(acc)
        gst_kernel[ck.blocks(acc.size), ck.THREADS](
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


GSTFDPA_OPERATION = register(GSTFDPA())

__all__ = ["GSTFDPA", "GSTFDPAParams", "GSTFDPA_OPERATION"]
