"""Compiled kernels of the integer matrix units (:mod:`..int_mma`): one instruction
(:func:`int_block`), a chain of instructions over K (:func:`int_chain`), the GEMM
(:func:`int_gemm`), a small product on the calling thread (:func:`int_small`) and the batch
of dot products (:func:`int_rows`).

Operands arrive as float64 values already checked to be integers of their formats (at
most 16 bits, so every product is below 2^32 in magnitude).  An instruction's products
are summed in float64, which is exact (L <= 4096 products of magnitude below 2^32 sum to
below 2^44 < 2^53, and every partial sum is an integer of that size), so the kernels are
compiled with ``fastmath`` to let LLVM vectorise that sum in any order: every order gives
the same exact integer.  That sum and ``c`` are then added exactly in int64 and brought
into the int32 accumulator: wrapped modulo 2^32 (two's complement) or clamped to
[-2^31, 2^31 - 1].
"""
from __future__ import annotations

import numba
import numpy as np

#: the overflow codes of :class:`~workbench.engine.operations.int_mma.IntMMAParams`
WRAP, SATURATE = 0, 1
OVERFLOW_CODES = {"wrap": WRAP, "saturate": SATURATE}

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_LOW32 = (1 << 32) - 1
_SIGN32 = 1 << 31


@numba.njit(cache=True, inline="always")
def to_int32(s, overflow):
    """The exact integer ``s`` (int64) in the int32 accumulator: modulo 2^32 as a signed
    value (``WRAP``) or clamped to [-2^31, 2^31 - 1] (``SATURATE``)."""
    if overflow == SATURATE:
        if s > _INT32_MAX:
            return np.int64(_INT32_MAX)
        if s < _INT32_MIN:
            return np.int64(_INT32_MIN)
        return s
    return ((s + _SIGN32) & _LOW32) - _SIGN32


@numba.njit(cache=True, inline="always", fastmath=True)
def int_block(a, b, k0, L, d, overflow):
    """One instruction: ``d + sum a[k] b[k]`` over ``k0 ... k0 + L - 1`` (elements past the
    rows' end are 0: K zero-padded to whole instructions), exact, then into int32."""
    stop = min(k0 + L, a.shape[0])
    p = 0.0
    for k in range(k0, stop):
        p += a[k] * b[k]
    return to_int32(np.int64(d) + np.int64(p), overflow)


@numba.njit(cache=True, fastmath=True)
def int_chain(a, b, c, L, overflow):
    """The row of instructions over ``a`` and ``b`` (length K, float64 integer values)
    from the accumulator ``c`` (an int32 value as float64); the result as float64."""
    K = a.shape[0]
    d = np.int64(c)
    if K == 0:
        return float(to_int32(d, overflow))
    for k0 in range(0, K, L):
        d = int_block(a, b, k0, L, d, overflow)
    return float(d)


@numba.njit(cache=True, parallel=True, fastmath=True)
def int_gemm(A, BT, acc, L, overflow):
    """``acc[i, j] <- chain(A[i, :], BT[j, :], acc[i, j])`` for A (M, K), BT (N, K)."""
    M, N = acc.shape
    for i in numba.prange(M):
        for j in range(N):
            acc[i, j] = int_chain(A[i], BT[j], acc[i, j], L, overflow)


@numba.njit(cache=True, fastmath=True)
def int_small(A, B, acc, L, overflow):
    """A small product on the calling thread (inputs already checked): :func:`int_gemm`'s
    chains for A (M, K) and B (K, N)."""
    BT = np.ascontiguousarray(B.T)
    M, N = acc.shape
    for i in range(M):
        for j in range(N):
            acc[i, j] = int_chain(A[i], BT[j], acc[i, j], L, overflow)


@numba.njit(cache=True, parallel=True, fastmath=True)
def int_rows(a, b, acc, L, overflow):
    """``acc[r] <- chain(a[r, :], b[r, :], acc[r])``: a batch of independent dot products."""
    for r in numba.prange(acc.shape[0]):
        acc[r] = int_chain(a[r], b[r], acc[r], L, overflow)


__all__ = ["WRAP", "SATURATE", "OVERFLOW_CODES", "to_int32", "int_block", "int_chain", "int_gemm", "int_small",
           "int_rows"]
