"""The compiled kernel of ST-FDPA's own (Xie et al. 2025 Algorithm 8): the scale
exponents added to the decomposed operands, which then run on T-FDPA's kernels
(:mod:`workbench.engine.operations.tfdpa`)."""
from __future__ import annotations

import numba
import numpy as np

from ...ops import SIG_NAN, SPECIAL


@numba.njit(cache=True, parallel=True)
def add_scale_exponents(s, e, log2_scale, kb, k_first, rows, cols, nan_scales, s_out, e_out):
    """Decomposed operands of ST-FDPA (Xie et al. 2025 Algorithm 8) written to
    ``s_out, e_out`` (C-ordered, the shape of the C-ordered ``s, e``, indexed ``[k, j]``
    when ``k_first``, else ``[i, k]``): elements ``[:rows, :cols]`` carry the exponent
    ``log2_scale`` of their block of ``kb`` elements (an E8M0 scale: a power of two,
    laid out as ``s`` with k // kb for k), the others (zero padding) are copied.  A NaN
    scale makes its elements NaN (significand SIG_NAN, exponent SPECIAL), Inf/NaN
    elements keep their exponent.  Without NaN scales (``nan_scales`` False) no
    significand changes: ``s_out`` is not written and may be ``s`` itself.  One
    compiled pass into arrays the caller owns (the workspace's: a fresh array's first
    touch costs more than the pass)."""
    R, W = e.shape
    for x in numba.prange(R):
        if k_first:            # one block row per row of s: its scales along the row
            for y in range(W):
                _scale_one(s, e, x, y, log2_scale[x // kb, y] if x < rows and y < cols else 0.0, nan_scales,
                           s_out, e_out)
        else:                  # blocks of kb elements along the row, one scale each
            for y0 in range(0, W, kb):
                v = log2_scale[x, y0 // kb] if x < rows and y0 < cols else 0.0
                for y in range(y0, min(y0 + kb, W)):
                    _scale_one(s, e, x, y, v if y < cols else 0.0, nan_scales, s_out, e_out)


@numba.njit(cache=True, inline="always")
def _scale_one(s, e, x, y, v, nan_scales, s_out, e_out):
    """Element ``[x, y]`` of :func:`add_scale_exponents` with scale exponent ``v`` (0 for padding)."""
    ex = e[x, y]
    if v != v:
        s_out[x, y] = SIG_NAN
        ex = SPECIAL
    else:
        if nan_scales:
            s_out[x, y] = s[x, y]
        if ex < SPECIAL:
            ex += np.int32(v)
    e_out[x, y] = ex

__all__ = ["add_scale_exponents"]
