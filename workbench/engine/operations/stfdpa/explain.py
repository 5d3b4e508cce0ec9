"""ST-FDPA's step of :func:`workbench.engine.explain.explain` (MX formats, Xie et al.
2025 Algorithm 8): the E8M0 scale exponents of each block of ``k_block`` elements are
shown added to the products' exponents, then the T-FDPA steps."""
from __future__ import annotations

import math
from typing import cast

import numpy as np

from ...model import Model
from ...trace import Block
from ..tfdpa.explain import tfdpa_block


def st_block(idx: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float, m: Model,
             sa: np.ndarray | None, sb: np.ndarray | None) -> Block:
    """One ST-FDPA (Xie et al. Algorithm 8): the scale exponents of the block's
    elements (``start ...`` of K) added to the products', then the T-FDPA steps."""
    pre = Block(index=idx, c_in=d)
    xs = _st_scales(pre, start, K, len(a), cast(int, m.k_block), sa, sb)  # STFDPAParams checked k_block
    blk = tfdpa_block(idx, a, b, d, m, scale_exp=xs)
    blk.pre = pre.pre + blk.pre
    return blk


def _scale_exp(v: float) -> int | None:
    """Exponent of an E8M0 scale factor (a power of two); None for NaN."""
    if not math.isfinite(v):
        return None
    return math.frexp(v)[1] - 1


def _st_scales(blk: Block, k0: int, K: int, L: int, kb: int, sa, sb):
    """ST-FDPA (Xie et al. Algorithm 8 line 4): the per-element scale exponents of a
    block (elements past K, the zero padding, carry none, as in
    :meth:`STFDPA.scaled_operands
    <workbench.engine.operations.stfdpa.STFDPA.scaled_operands>`) and the text saying so."""
    xa, xb = [], []
    for j in range(L):
        k = k0 + j
        if k < K:
            xa.append(_scale_exp(sa[k // kb]))
            xb.append(_scale_exp(sb[k // kb]))
        else:
            xa.append(0)
            xb.append(0)
    for q in range(k0 // kb, min(-(-K // kb), (k0 + L) // kb)):
        lo, hi = q * kb, min(K, (q + 1) * kb) - 1
        ea, eb = _scale_exp(sa[q]), _scale_exp(sb[q])
        if ea is None or eb is None:
            blk.pre.append(f"scale factors of elements {lo}..{hi}: alpha = {float(sa[q])!r}, "
                           f"beta = {float(sb[q])!r}: "
                           f"a NaN scale makes every product of its block NaN")
        else:
            blk.pre.append(f"scale factors of elements {lo}..{hi}: alpha = 2^{ea}, beta = 2^{eb} (E8M0, "
                           f"significand 1): their exponents {ea} + {eb} = {ea + eb} are added to each "
                           f"product's exponent (Xie Alg. 8 line 4)")
    return xa, xb


__all__ = ["st_block"]
