"""The FMA chain's step of :func:`workbench.engine.explain.explain` (Xie et al. 2025
Algorithm 4): one IEEE FMA per element, computed with the kernel's own
:func:`~workbench.engine.operations.fma.kernels.fma_step`."""
from __future__ import annotations

import numpy as np

from ...model import Model
from ...trace import Block
from .kernels import fma_code, fma_step


def fma_block(start: int, a: np.ndarray, b: np.ndarray, d: float, m: Model) -> Block:
    """One IEEE FMA a_k * b_k + d of a chain (Xie et al. Algorithm 4), RNE in the output format."""
    r = float(fma_step(a[0], b[0], d, *fma_code(m.out_fmt)))
    return Block(index=start, c_in=d, rounding=f"IEEE FMA a{start}*b{start} + d, RNE to {m.out_fmt.name}", result=r)


__all__ = ["fma_block"]
