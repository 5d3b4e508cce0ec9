"""The compiled kernels of FTZ-AddMul (dispatched by :mod:`workbench.engine.operations.ftz_addmul`).

* FTZ-AddMul (Xie et al. 2025 Algorithms 1-2, AMD CDNA2): products and sums in fp32
  with round-to-nearest-even, subnormal inputs flushed to +0, subnormal results
  flushed to zero with their sign; P consecutive products summed pairwise, then added
  to the running c.  NaN payloads follow MMA-Sim 2.1.1 (:mod:`workbench.engine.nans`).

Two kernels compute it.  :func:`ftz_addmul_gemm` walks one output at a time in
float64, rounding every operation to fp32 (the reference, and the path of every NaN
result).  :func:`ftz_addmul_lanes` computes the outputs of a row side by side in
float32 arithmetic, one loop over the lanes per step that LLVM turns into vector
instructions: an IEEE binary32 multiply or add *is* RNE-FP32 of the exact result, so
for operands exactly in fp32 it gives the same bits as the reference, except for the
payload of a NaN; outputs that end in NaN (NaN propagates through every later step)
are recomputed by the reference.
"""
from __future__ import annotations

import numba
import numpy as np

from ...kernels import lane_tile
from ...nans import nan_add, nan_mul, narrow_nan32

_MIN_NORMAL32 = 2.0 ** -126
_MIN_NORMAL32_F = np.float32(_MIN_NORMAL32)
_ZERO_F = np.float32(0.0)


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
        return narrow_nan32(nan_mul(x, y, True))
    return _ftz(float(np.float32(p)), True)


@numba.njit(cache=True, inline="always")
def ftz_add(x, y):
    """FTZ-Add: RNE-FP32(x + y) of two fp32 values (float64 sum rounded once more is
    correctly rounded: 53 >= 2*24 + 2), subnormal result flushed keeping the sign;
    a NaN sum is :func:`~workbench.engine.nans.nan_add`'s (y's NaN wins)."""
    s = x + y
    if s != s:
        return narrow_nan32(nan_add(x, y, True))
    return _ftz(float(np.float32(s)), True)


@numba.njit(cache=True, inline="always")
def _flush_input(x, min_normal):
    """A subnormal input becomes +0 (Xie Algorithm 2 lines 1-3); a signed zero stays."""
    return 0.0 if (x != 0.0 and abs(x) < min_normal) else x


@numba.njit(cache=True)
def ftz_chain(A, BT, i, j, d, P, in_min_normal):
    """Output (i, j) of FTZ-AddMul (Xie Algorithm 2 lines 5-13) from c = ``d``: row i
    of ``A`` and row j of ``BT`` (float64, K a multiple of P), one output at a time."""
    K = A.shape[1]
    d = _flush_input(d, _MIN_NORMAL32)
    for k0 in range(0, K, P):
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        p3 = 0.0
        for u in range(P):
            p = ftz_mul(_flush_input(A[i, k0 + u], in_min_normal), _flush_input(BT[j, k0 + u], in_min_normal))
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
    return d


@numba.njit(cache=True, parallel=True)
def ftz_addmul_gemm(A, BT, acc, P, in_min_normal):
    """FTZ-AddMul chains (Xie Algorithms 1-2) for every output: :func:`ftz_chain`."""
    M = A.shape[0]
    N = BT.shape[0]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        acc[i, j] = ftz_chain(A, BT, i, j, acc[i, j], P, in_min_normal)


@numba.njit(cache=True)
def ftz_small(A, B, acc, P, in_min_normal):
    """A small product on the calling thread (:meth:`~workbench.engine.model.Operation.run_small`,
    inputs already checked): A (M, K) and B (K, N) copied with K zero-padded to whole
    blocks of P, then :func:`ftz_chain` for every output on ``acc`` (C on entry), as
    :func:`ftz_addmul_gemm` computes it."""
    M, K = A.shape
    N = B.shape[1]
    Kp = (K + P - 1) // P * P
    A2 = np.zeros((M, Kp))
    BT2 = np.zeros((N, Kp))
    A2[:, :K] = A
    BT2[:, :K] = B.T
    for i in range(M):
        for j in range(N):
            acc[i, j] = ftz_chain(A2, BT2, i, j, acc[i, j], P, in_min_normal)


@numba.njit(cache=True, parallel=True)
def ftz_addmul_rows(A, B, acc, P, in_min_normal):
    """Batched dot products: ``acc[r]`` <- :func:`ftz_chain` over row r of ``A`` and
    row r of ``B`` (both (n, K), K a multiple of P), parallel over rows."""
    for r in numba.prange(A.shape[0]):
        acc[r] = ftz_chain(A, B, r, r, acc[r], P, in_min_normal)


@numba.njit(cache=True, parallel=True)
def ftz_addmul_outputs(A, BT, acc, C, rows, cols, P, in_min_normal):
    """``acc[rows[t], cols[t]]`` <- :func:`ftz_chain` from ``C`` at that output, for
    every t (the outputs the lane kernel leaves to the reference)."""
    for t in numba.prange(rows.size):
        i = rows[t]
        j = cols[t]
        acc[i, j] = ftz_chain(A, BT, i, j, C[i, j], P, in_min_normal)


@numba.njit(cache=True, parallel=True)
def ftz_operand32(X, out, in_min_normal):
    """``out`` (float32, rows x cols at least X's, zero elsewhere) <- X (float64)
    with subnormal inputs flushed to +0: the lane kernel's operands, in one compiled
    pass (X's values must be exact in fp32)."""
    R, Cn = X.shape
    Ro, Co = out.shape
    for r in numba.prange(Ro):
        if r < R:
            for c in range(Cn):
                out[r, c] = np.float32(_flush_input(X[r, c], in_min_normal))
            for c in range(Cn, Co):
                out[r, c] = _ZERO_F
        else:
            for c in range(Co):
                out[r, c] = _ZERO_F


@numba.njit(cache=True, inline="always")
def _ftz32(x):
    """FTZ of an fp32 result (Xie Algorithm 1 line 5), branch-free: x * 0 keeps the sign."""
    return x * _ZERO_F if abs(x) < _MIN_NORMAL32_F else x


@numba.njit(cache=True, inline="always")
def _lane_blocks2(A, B, i, j0, nv, b0, b1, d):
    """Blocks b0 .. b1-1 of P = 2 (Xie Algorithm 2, lines 6-9 and 13) for the lanes
    ``d`` of outputs (i, j0 ..)."""
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    for blk in range(b0, b1):
        k = np.uint64(2 * blk)
        a0 = A[i, k]
        a1 = A[i, k + 1]
        for u in range(ul):
            s = _ftz32(_ftz32(a0 * B[k, uj0 + u]) + _ftz32(a1 * B[k + 1, uj0 + u]))
            d[u] = _ftz32(d[u] + s)


@numba.njit(cache=True, inline="always")
def _lane_blocks4(A, B, i, j0, nv, b0, b1, d):
    """Blocks b0 .. b1-1 of P = 4 (Xie Algorithm 2, lines 6-13) for the lanes ``d``
    of outputs (i, j0 ..)."""
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    for blk in range(b0, b1):
        k = np.uint64(4 * blk)
        a0 = A[i, k]
        a1 = A[i, k + 1]
        a2 = A[i, k + 2]
        a3 = A[i, k + 3]
        for u in range(ul):
            s = _ftz32(_ftz32(a0 * B[k, uj0 + u]) + _ftz32(a1 * B[k + 1, uj0 + u]))
            s2 = _ftz32(_ftz32(a2 * B[k + 2, uj0 + u]) + _ftz32(a3 * B[k + 3, uj0 + u]))
            d[u] = _ftz32(d[u] + _ftz32(s + s2))


@numba.njit(cache=True, parallel=True)
def ftz_addmul_lanes(A, B, acc, P, TI, TJ, BC):
    """FTZ-AddMul chains for tiles of TI x TJ outputs, the TJ outputs of a row side by
    side in float32 (module docstring): ``A`` (M, Kp) and ``B`` (Kp, Np) float32 from
    :func:`ftz_operand32` (Kp a multiple of P; Np >= N a multiple of TJ's lanes, zero
    padding computed and never written); ``acc`` (M, N) float64 holds C (exact in
    fp32) on entry and D on exit.  K is walked in chunks of BC blocks so that a chunk
    of B serves every row of the tile from cache.  Results that are NaN are left NaN
    for the caller to recompute (:func:`ftz_addmul_outputs`)."""
    M, Kp = A.shape
    N = acc.shape[1]
    Np = B.shape[1]
    nblocks = Kp // P
    n_it = (M + TI - 1) // TI
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(n_it * n_jt):
        i0, ti, j0, nl, nv = lane_tile(t, n_jt, TI, TJ, M, N, Np)
        d = np.zeros((ti, nv), dtype=np.float32)
        for ii in range(ti):
            for u in range(nl):
                d[ii, u] = np.float32(_flush_input(acc[i0 + ii, j0 + u], _MIN_NORMAL32))
        for b0 in range(0, nblocks, BC):
            b1 = min(nblocks, b0 + BC)
            for ii in range(ti):
                if P == 4:
                    _lane_blocks4(A, B, i0 + ii, j0, nv, b0, b1, d[ii])
                else:
                    _lane_blocks2(A, B, i0 + ii, j0, nv, b0, b1, d[ii])
        for ii in range(ti):
            for u in range(nl):
                acc[i0 + ii, j0 + u] = float(d[ii, u])


#: Rows side by side in :func:`ftz_addmul_row_lanes`, and elements of K it converts at a time (a multiple of P).
ROW_LANES, _ROW_CHUNK = 16, 64


@numba.njit(cache=True, parallel=True)
def ftz_addmul_row_lanes(A, B, acc, P, in_min_normal):
    """Batched FTZ-AddMul dot products, :data:`ROW_LANES` rows side by side in
    float32: ``acc[r]`` <- the chain over row r of ``A`` and of ``B`` (both (n, Kp)
    float64 whose values are exact in fp32, Kp a multiple of P; ``acc`` exact in
    fp32).  Each chunk of K is flushed (Xie Algorithm 2 lines 1-3), converted and
    transposed into a small buffer, then summed as :func:`_lane_blocks2` /
    :func:`_lane_blocks4` do with both operands per lane.  Results that are NaN are
    left NaN for the caller to recompute (:func:`ftz_addmul_rows`)."""
    n, Kp = A.shape
    for t in numba.prange((n + ROW_LANES - 1) // ROW_LANES):
        r0 = t * ROW_LANES
        nl = min(ROW_LANES, n - r0)
        a = np.zeros((_ROW_CHUNK, ROW_LANES), dtype=np.float32)   # rows past n stay zero: computed, never written
        b = np.zeros((_ROW_CHUNK, ROW_LANES), dtype=np.float32)
        d = np.zeros(ROW_LANES, dtype=np.float32)
        for u in range(nl):
            d[u] = np.float32(_flush_input(acc[r0 + u], _MIN_NORMAL32))
        for k0 in range(0, Kp, _ROW_CHUNK):
            kc = min(_ROW_CHUNK, Kp - k0)
            for u in range(nl):
                for kk in range(kc):
                    a[kk, u] = np.float32(_flush_input(A[r0 + u, k0 + kk], in_min_normal))
                    b[kk, u] = np.float32(_flush_input(B[r0 + u, k0 + kk], in_min_normal))
            if P == 4:
                for k in range(0, kc, 4):
                    for u in range(ROW_LANES):
                        s = _ftz32(_ftz32(a[k, u] * b[k, u]) + _ftz32(a[k + 1, u] * b[k + 1, u]))
                        s2 = _ftz32(_ftz32(a[k + 2, u] * b[k + 2, u]) + _ftz32(a[k + 3, u] * b[k + 3, u]))
                        d[u] = _ftz32(d[u] + _ftz32(s + s2))
            else:
                for k in range(0, kc, 2):
                    for u in range(ROW_LANES):
                        s = _ftz32(_ftz32(a[k, u] * b[k, u]) + _ftz32(a[k + 1, u] * b[k + 1, u]))
                        d[u] = _ftz32(d[u] + s)
        for u in range(nl):
            acc[r0 + u] = float(d[u])


__all__ = ["ftz_addmul_gemm", "ftz_small", "ftz_addmul_rows", "ftz_addmul_row_lanes", "ftz_addmul_lanes", "ftz_addmul_outputs", "ftz_operand32", "ftz_chain", "ftz_mul",
           "ftz_add"]
