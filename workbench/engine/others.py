"""The kernel of FTZ-AddMul (dispatched by :mod:`workbench.engine.operations.ftz_addmul`).

* FTZ-AddMul (Xie et al. 2025 Algorithms 1-2, AMD CDNA2): products and sums in fp32
  with round-to-nearest-even, subnormal inputs flushed to +0, subnormal results
  flushed to zero with their sign; P consecutive products summed pairwise, then added
  to the running c.  NaN payloads follow MMA-Sim 2.1.1 (:mod:`workbench.engine.nans`).
"""
from __future__ import annotations

import numba
import numpy as np

from .nans import nan_add, nan_mul

_MIN_NORMAL32 = 2.0 ** -126


@numba.njit(cache=True, inline="always")
def _ftz(x, keep_sign):
    if abs(x) < _MIN_NORMAL32:
        return x * 0.0 if keep_sign else 0.0
    return x


@numba.njit(cache=True, inline="always")
def ftz_mul(x, y):
    """FTZ-Mul: RNE-FP32(x * y), subnormal result flushed to zero keeping the sign;
    a NaN product is :func:`~workbench.engine.nans.nan_mul`'s (y's NaN wins)."""
    p = x * y
    if p != p:
        p = nan_mul(x, y, True)
    return _ftz(float(np.float32(p)), True)


@numba.njit(cache=True, inline="always")
def ftz_add(x, y):
    """FTZ-Add: RNE-FP32(x + y) of two fp32 values (float64 sum rounded once more is
    correctly rounded: 53 >= 2*24 + 2), subnormal result flushed keeping the sign;
    a NaN sum is :func:`~workbench.engine.nans.nan_add`'s (y's NaN wins)."""
    s = x + y
    if s != s:
        s = nan_add(x, y, True)
    return _ftz(float(np.float32(s)), True)


@numba.njit(cache=True, parallel=True)
def ftz_addmul_gemm(A, BT, acc, P, in_min_normal):
    """FTZ-AddMul chains (Xie Algorithms 1-2) for every output."""
    M, K = A.shape
    N = BT.shape[0]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        d = acc[i, j]
        if d != 0.0 and abs(d) < _MIN_NORMAL32:  # subnormal c -> +0 (a signed zero stays)
            d = 0.0
        for k0 in range(0, K, P):
            p0 = 0.0
            p1 = 0.0
            p2 = 0.0
            p3 = 0.0
            for u in range(P):
                a = A[i, k0 + u]
                b = BT[j, k0 + u]
                if a != 0.0 and abs(a) < in_min_normal:  # subnormal inputs -> +0 (Alg. 2 lines 1-2)
                    a = 0.0
                if b != 0.0 and abs(b) < in_min_normal:
                    b = 0.0
                p = ftz_mul(a, b)
                if u == 0:
                    p0 = p
                elif u == 1:
                    p1 = p
                elif u == 2:
                    p2 = p
                else:
                    p3 = p
            s = ftz_add(p0, p1)
            if P == 4:
                s = ftz_add(s, ftz_add(p2, p3))
            d = ftz_add(d, s)
        acc[i, j] = d


__all__ = ["ftz_addmul_gemm", "ftz_mul", "ftz_add"]
