"""Compiled kernels of the CPU bf16 pair units (:mod:`..pair_dot`): one instruction
(:func:`pair_block`), the GEMM over instructions (:func:`pair_dot_gemm`) and the batch of
dot products (:func:`pair_dot_rows`).

Values are float64 throughout: bf16 operands and their products are exact in binary64
(8-bit significands, exponents within -266 ... 256).  Rounding to nearest even is the
engine's IEEE adder (:func:`~workbench.engine.kernels.exact_add`, as the FMA chains'
binary32 FMA); Arm's round to odd (FPCR.EBF = 0) is done here from the exact sum
``s + e`` (TwoSum): ``s`` made round-to-odd at 53 bits by the sticky bit of ``e``, then
truncated to 24 bits with the last bit set.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ....numbers.formats import RNE
from ...kernels import exact_add
from ...nans import _bits_from_f64, _f64_from_bits, default_nan, quiet

#: The rules of :class:`~workbench.engine.operations.pair_dot.operation.PairDotParams`, by code.
X86_FMA, X86_EVEN_ODD, ARM_ODD, ARM_FUSED = 0, 1, 2, 3
RULE_CODES = {"x86-fma": X86_FMA, "x86-even-odd": X86_EVEN_ODD, "arm-odd": ARM_ODD, "arm-fused": ARM_FUSED}

_MIN_NORMAL32 = 2.0 ** -126
_OVERFLOW32 = 2.0 ** 128
_LOW29 = np.int64((1 << 29) - 1)          # float64 fraction bits below binary32's 23
_ARM_DEFAULT_NAN = np.int64(0x7FF8 << 48)  # 0x7FC00000 once narrowed to fp32: Arm's default NaN


@numba.njit(cache=True, inline="always")
def _odd32(s, e):
    """The binary32 value (as a float64) of the exact sum ``s + e`` (``s = fl(s + e)``,
    ``|e| <= ulp(s) / 2``) rounded to odd with overflow to Inf (Arm's BFRound, FPCR.EBF
    = 0), an exact value below 2^-126 flushed to zero of its sign first (Arm: tininess
    before rounding).  Zero, Inf and NaN pass through."""
    if s == 0.0 or not math.isfinite(s):
        return s
    a = abs(s)
    if a < _MIN_NORMAL32 or (a == _MIN_NORMAL32 and e != 0.0 and (e > 0.0) != (s > 0.0)):
        return math.copysign(0.0, s)
    bits = _bits_from_f64(s)
    if e != 0.0 and bits & 1 == 0:          # the sticky bit of e: round to odd at 53 bits first
        bits += 1 if (e > 0.0) == (s > 0.0) else -1
    if abs(_f64_from_bits(bits)) >= _OVERFLOW32:
        return math.copysign(math.inf, s)
    if bits & _LOW29:
        bits = (bits & ~_LOW29) | (_LOW29 + 1)
    return _f64_from_bits(bits)


@numba.njit(cache=True, inline="always")
def _add_odd32(x, y):
    """:func:`_odd32` of x + y (x, y exact in binary64; IEEE zero signs and Inf rules)."""
    s = x + y
    if not math.isfinite(s):
        return s
    bp = s - x
    return _odd32(s, (x - (s - bp)) + (y - bp))


@numba.njit(cache=True, inline="always")
def _add32(x, y, ftz):
    """x + y (exact in binary64) rounded to binary32 to nearest even by the engine's
    IEEE adder (:func:`~workbench.engine.kernels.exact_add`: zero signs, Inf and NaN as
    IEEE 754 says); with ``ftz`` a result subnormal after rounding becomes zero of its
    sign (x86 FTZ)."""
    r = exact_add(x, y, 24, -126, 127, RNE, False)
    if ftz and r != 0.0 and abs(r) < _MIN_NORMAL32:
        return math.copysign(0.0, r)
    return r


@numba.njit(cache=True, inline="always")
def _flush(x):
    """x with a subnormal (below 2^-126) made zero of its sign: DAZ / Arm's input flush."""
    if x != 0.0 and abs(x) < _MIN_NORMAL32:
        return math.copysign(0.0, x)
    return x


@numba.njit(cache=True, inline="always")
def _at(x, k):
    """Element k of row x, +0 past its end (K zero-padded to whole instructions)."""
    return x[k] if k < x.shape[0] else 0.0


@numba.njit(cache=True)
def pair_block(a, b, k0, L, d, rule):
    """One instruction: elements ``k0 ... k0 + L - 1`` of rows ``a`` and ``b`` (bf16
    values; +0 past their end) and the accumulator ``d`` (a binary32 value) -> the new
    accumulator, by ``rule`` (the module's codes; the operation's docstring states them)."""
    if rule == X86_FMA or rule == X86_EVEN_ODD:
        acc = _flush(d)
        if rule == X86_FMA:
            # VDPBF16PS: per pair, fma(high) then fma(low), each RNE, DAZ in, FTZ out
            for k in range(k0, k0 + L, 2):
                acc = _add32(_flush(_at(a, k + 1)) * _flush(_at(b, k + 1)), acc, True)
                acc = _add32(_flush(_at(a, k)) * _flush(_at(b, k)), acc, True)
        else:
            # TDPBF16PS: even and odd FMA chains from +0, summed, then added to c
            ev = 0.0
            od = 0.0
            for k in range(k0, k0 + L, 2):
                ev = _add32(_flush(_at(a, k)) * _flush(_at(b, k)), ev, True)
                od = _add32(_flush(_at(a, k + 1)) * _flush(_at(b, k + 1)), od, True)
            acc = _add32(acc, _add32(ev, od, True), True)
        if acc != acc:
            # SDM Table 5-1 over the instruction's operands (VDPBF16PS: low pair, high pair,
            # then c), the first NaN quieted; an invalid operation gives the x86 default NaN
            for k in range(k0, k0 + L, 2):
                for x in (_at(a, k), _at(b, k), _at(a, k + 1), _at(b, k + 1)):
                    if x != x:
                        return quiet(x)
            if d != d:
                return quiet(d)
            return default_nan()
        return acc
    odd = rule == ARM_ODD
    acc = _flush(d) if odd else d
    for k in range(k0, k0 + L, 2):
        a0, b0, a1, b1 = _at(a, k), _at(b, k), _at(a, k + 1), _at(b, k + 1)
        if odd:
            # FPCR.EBF = 0: products, their sum and the addition to c each rounded to odd,
            # inputs and tiny results flushed to zero (BFMul, BFAdd, BFRound)
            p0 = _odd32(_flush(a0) * _flush(b0), 0.0)
            p1 = _odd32(_flush(a1) * _flush(b1), 0.0)
            t = _add_odd32(p0, p1)
            acc = _add_odd32(acc, t)
        else:
            # FPCR.EBF = 1 (RNE, FZ = 0): the pair's sum rounded once (FPDot), then added to c
            t = _add32(a0 * b0, a1 * b1, False)
            acc = _add32(acc, t, False)
    if acc != acc:
        return _f64_from_bits(_ARM_DEFAULT_NAN)
    return acc


@numba.njit(cache=True)
def pair_dot_chain(a, b, d, L, rule):
    """The row of instructions over ``a`` and ``b`` (length K) from accumulator ``d``."""
    K = a.shape[0]
    for k0 in range(0, K, L):
        d = pair_block(a, b, k0, L, d, rule)
    return d


@numba.njit(cache=True, parallel=True)
def pair_dot_gemm(A, BT, acc, L, rule):
    """``acc[i, j] <- chain(A[i, :], BT[j, :], acc[i, j])`` for A (M, K), BT (N, K)."""
    M, N = acc.shape
    for i in numba.prange(M):
        for j in range(N):
            acc[i, j] = pair_dot_chain(A[i], BT[j], acc[i, j], L, rule)


@numba.njit(cache=True)
def pair_dot_small(A, B, acc, L, rule):
    """A small product on the calling thread (:meth:`~workbench.engine.model.Operation.run_small`,
    inputs already checked): :func:`pair_dot_gemm`'s chains for A (M, K) and B (K, N)."""
    BT = np.ascontiguousarray(B.T)
    M, N = acc.shape
    for i in range(M):
        for j in range(N):
            acc[i, j] = pair_dot_chain(A[i], BT[j], acc[i, j], L, rule)


@numba.njit(cache=True, parallel=True)
def pair_dot_rows(a, b, acc, L, rule):
    """``acc[r] <- chain(a[r, :], b[r, :], acc[r])``: a batch of independent dot products."""
    for r in numba.prange(acc.shape[0]):
        acc[r] = pair_dot_chain(a[r], b[r], acc[r], L, rule)


__all__ = ["RULE_CODES", "X86_FMA", "X86_EVEN_ODD", "ARM_ODD", "ARM_FUSED", "pair_block", "pair_dot_chain",
           "pair_dot_gemm", "pair_dot_small", "pair_dot_rows"]
