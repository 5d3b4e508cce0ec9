"""The operation base that E-FDPA and TR-/GTR-FDPA share (Xie et al. 2025 Algorithms 6, 10
and 11): one compiled driver selected by a kernel code, so their row kernel, the probes'
screen and the CUDA launch are one method each, here.  It registers nothing; the
operations in :mod:`workbench.engine.operations.efdpa` and
:mod:`workbench.engine.operations.trfdpa` derive from it and set :attr:`AMDFused.code`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...model import Model, Operation
from ...operands import Operands
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

    def screen_rows(self, params: dict[str, Any], battery: RowBattery, acc: np.ndarray) -> np.ndarray:
        """The probes' search's row kernel on a battery decomposed once per block size
        (:func:`~workbench.engine.operations.amd_fdpa.kernels.screen_amd`)."""
        return _amd.screen_amd(Model(**params), self.code, battery, acc)

    def run_cuda(self, model: Model, ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        return amd_gpu.run_cuda(model, ops, acc, self.code)


__all__ = ["AMDFused"]
