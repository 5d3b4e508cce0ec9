"""The compiled kernel of ST-FDPA's own (Xie et al. 2025 Algorithm 8): the scale
exponents added to the decomposed operands, which then run on T-FDPA's kernels
(:mod:`workbench.engine.operations.tfdpa`)."""
from __future__ import annotations

import numba
import numpy as np

from ...ops import SIG_NAN, SPECIAL


@numba.njit(cache=True, parallel=True)
def add_scale_exponents(s, e, log2_scale, kb, k_first, rows, cols):
    """Decomposed operands of ST-FDPA (Xie et al. 2025 Algorithm 8): copies of ``s, e``
    (2-D, indexed ``[k, j]`` when ``k_first``, else ``[i, k]``) whose elements
    ``[:rows, :cols]`` carry the exponent ``log2_scale`` of their block of ``kb``
    elements (an E8M0 scale: a power of two, laid out as ``s`` with k // kb for k);
    a NaN scale makes its elements NaN (significand SIG_NAN, exponent SPECIAL), and
    Inf/NaN elements keep their exponent.  One compiled pass, layout kept."""
    s2 = s.copy()
    e2 = e.copy()
    for x in numba.prange(rows):
        for y in range(cols):
            v = log2_scale[x // kb, y] if k_first else log2_scale[x, y // kb]
            if v != v:
                s2[x, y] = SIG_NAN
                e2[x, y] = SPECIAL
            elif e2[x, y] < SPECIAL:
                e2[x, y] += np.int32(v)
    return s2, e2


__all__ = ["add_scale_exponents"]
