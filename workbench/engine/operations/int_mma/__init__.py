"""The integer matrix units (NVIDIA IMMA ``mma``/``wgmma``/``tcgen05.mma`` s8/u8 -> s32, AMD
``V_MFMA_I32_*_I8``): one folder, as every operation (:mod:`workbench.engine.operations`)."""
from __future__ import annotations

from .operation import INT_MMA_OPERATION, OVERFLOWS, IntMMA, IntMMAParams

__all__ = ["IntMMA", "IntMMAParams", "OVERFLOWS", "INT_MMA_OPERATION"]
