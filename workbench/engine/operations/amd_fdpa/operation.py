"""The operation base that E-FDPA and TR-/GTR-FDPA share (Xie et al. 2025 Algorithms 6, 10
and 11): one compiled driver selected by a kernel code, so their row kernel, the probes'
screen and the CUDA launch are one method each, here.  It registers nothing; the
operations in :mod:`workbench.engine.operations.efdpa` and
:mod:`workbench.engine.operations.trfdpa` derive from it and set :attr:`AMDFused.code`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from ...model import Model, Operation
from ...layout import P_K
from ...operands import Operands, raise_unrepresentable, small_check_args
from . import gpu as amd_gpu
from . import kernels as _amd

if TYPE_CHECKING:
    from ...operands import RowBattery


class AMDFused(Operation):
    """An AMD fused dot-product-add computed by :mod:`.kernels`' driver."""

    kernel_family = "amd"
    has_cuda_kernel = True
    has_row_kernel = True
    #: Kernel code of :mod:`workbench.engine.operations.amd_fdpa.kernels` (``KIND_E``,
    #: ``KIND_TR``, ``KIND_GTR``).
    code: ClassVar[int]

    def dots(self, model: Model, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Batched dot products on the row kernels
        (:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_dots`)."""
        return _amd.amd_dots(model, self.code, a, b, acc)

    def run_small(self, model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """A small product in one compiled call
        (:func:`~workbench.engine.operations.amd_fdpa.kernels.amd_small`: the one-output
        chain :func:`~workbench.engine.operations.amd_fdpa.kernels.amd_chain`); input formats
        without signed subnormals take the general path."""
        args = model.derived(_small_args)
        if args is None:
            return None
        self.check_run(accumulation, promote_every, None, None)
        q = model.derived(_small_params).copy()
        q[P_K] = A.shape[1]
        acc = C.copy()
        bad = _amd.amd_small(A, B.T, A.view(np.int64), B.view(np.int64), C.view(np.int64), acc, q, *args)
        if bad[0] >= 0 or bad[1] >= 0 or bad[2] >= 0:
            raise_unrepresentable(bad, A, B, C, model.in_fmt, model.out_fmt)
        return acc

    def screen_rows(self, params: dict[str, Any], battery: RowBattery, acc: np.ndarray) -> np.ndarray:
        """The probes' search's row kernel on a battery decomposed once per block size
        (:func:`~workbench.engine.operations.amd_fdpa.kernels.screen_amd`)."""
        return _amd.screen_amd(Model(**params), self.code, battery, acc)

    def run_cuda(self, model: Model, ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        return amd_gpu.run_cuda(model, ops, acc, self.code)


def _small_args(model: Model) -> tuple[Any, ...] | None:
    return small_check_args(model.in_fmt, model.out_fmt, model.flush_subnormals)


def _small_params(model: Model) -> np.ndarray:
    return _amd.amd_params(model, cast(AMDFused, model.operation).code)


__all__ = ["AMDFused"]
