"""The compiled kernel of ST-FDPA's own (Xie et al. 2025 Algorithm 8): the scale
exponents added to the decomposed operands, which then run on T-FDPA's kernels
(:mod:`workbench.engine.operations.tfdpa`)."""
from __future__ import annotations

import numba
import numpy as np

from ...layout import P_L
from ...ops import SIG_NAN, SPECIAL, decompose_small_scaled_product
from ..tfdpa.kernels import _accumulate, fast_eligible


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

@numba.njit(cache=True)
def stfdpa_small(xa, xb, xc, scale_a, scale_b, kb, acc, prm, check, scale_check):
    """A small ST-FDPA product straight from its operands, on the calling thread
    (:meth:`~workbench.engine.model.Operation.run_small`): ``xa`` (M, K), ``xb`` (K, N)
    and ``xc`` (M, N) the int64 patterns of float64 A, B and C, checked and decomposed
    as T-FDPA's small kernel does, and the float64 block scales ``scale_a`` (M, nb) and
    ``scale_b`` (nb, N) checked against the scale format
    (:func:`~workbench.engine.ops.decompose_small_scaled_product`, ``check`` and
    ``scale_check`` its format arguments); the scales' exponents added to their blocks of ``kb`` elements as
    :func:`add_scale_exponents` adds them; then every output's blocks through T-FDPA's
    :func:`~workbench.engine.operations.tfdpa.kernels._accumulate`, the scalar kernel's
    arithmetic, on ``acc`` (C on entry, D on exit).  Returns the C-order indices of the
    first value of A, B, C, scale_a and scale_b that is not representable (-1 each
    where none); ``acc`` is left as it was if any."""
    M, N = acc.shape
    K = xa.shape[1]
    L = prm[P_L]
    sa, ea, sb, eb, bad = decompose_small_scaled_product(xa, xb, xc, scale_a, scale_b, L, check, scale_check)
    if bad[0] >= 0 or bad[1] >= 0 or bad[2] >= 0 or bad[3] >= 0 or bad[4] >= 0:
        return bad
    for i in range(M):
        for k in range(K):
            _scale_one(sa, ea, i, k, np.log2(scale_a[i, k // kb]), True, sa, ea)
    for k in range(K):
        for j in range(N):
            _scale_one(sb, eb, k, j, np.log2(scale_b[k // kb, j]), True, sb, eb)
    fast = fast_eligible(prm)
    nblocks = sa.shape[1] // L
    for i in range(M):
        for j in range(N):
            acc[i, j], _ = _accumulate(sa, ea, sb, eb, i, j, 0, nblocks, acc[i, j], 0.0, prm, fast)
    return bad


__all__ = ["add_scale_exponents", "stfdpa_small"]
