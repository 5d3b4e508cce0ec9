"""Exact references: dot products and matrix products of float64 data, exactly.

Every accuracy figure of the workbench is measured against the exact value of
``alpha * A @ B + beta * C`` for float64 inputs, correctly rounded once to float64
(round to nearest, ties to even; subnormal results and overflow to ``inf``
included).  Two independent paths compute it:

``method="fast"`` (default)
    A compiled integer superaccumulator.  Each float64 is decomposed once into a
    signed 53-bit integer significand ``M`` and exponent ``e`` (``x = M 2^e``), and
    ``M`` is split as ``M = 2^26 h + l`` (``0 <= l < 2^26``).  The exact product of
    two inputs is the sum of the three partial products ``l_a l_b``,
    ``h_a l_b + l_a h_b`` and ``h_a h_b`` (each below ``2^54`` in magnitude) at bit
    positions ``e``, ``e + 26`` and ``e + 52``.  They are added into an int64
    accumulator with one bin per bit position (from ``2^-3500`` to ``2^3400``, so
    that ``alpha`` times a sum of products of subnormals or of numbers near
    ``1e308`` fits), with the carries deferred: every 256 terms the touched bins
    are reduced to 26 bits and their carries moved 26 positions up, which keeps
    every bin far from int64 overflow (``256 * 2^54 < 2^63``).  At the end one carry
    propagation gives the canonical binary expansion, which is rounded to float64
    by inspecting the round and sticky bits.  ``alpha != 1`` multiplies the exact
    sum by ``alpha`` exactly (one integer product per set bit) before ``beta * c``
    is added.  This is the design of Neal's and Demmel-Hida's superaccumulators,
    with integer instead of floating-point bins.

``method="mpmath"``
    The oracle: mpmath ``mpf`` arithmetic at a working precision that provably
    makes every operation exact (see :func:`exact_precision`), followed by a
    correct rounding through Python's correctly rounded integer division.

Both paths can also return the exact value itself (``return_exact="fraction"``
for :class:`fractions.Fraction`, ``"mpf"`` for an ``mpmath.mpf`` carrying exactly
the bits of the value).  NaN and Inf inputs are rejected: the exact value of an
expression containing them does not exist.

References: R. M. Neal, "Fast exact summation using small and large
superaccumulators", arXiv:1505.05571 (2015); J. Demmel and Y. Hida, "Accurate and
efficient floating point summation", SIAM J. Sci. Comput. 25(4), 2003.  The
Figure 7 experiment of Khattak & Mikaitis (2025) measures errors against such an
exact product (the paper uses binary64 ``A*B``; see :mod:`workbench.numbers.metrics`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal, cast

import numba
import numpy as np

from .validation import real_array
from .._runtime.threads import threads_for, threads_used

__all__ = ["dot", "gemm", "exact_precision", "fraction_to_float64"]

ReturnExact = Literal["fraction", "mpf"] | None
Method = Literal["fast", "mpmath"]

# Accumulator geometry: bin ``j`` holds a multiple of ``2^(j + _POS_MIN)``.
_POS_MIN = -3500  # below alpha * (smallest subnormal)^2 = 2^-1126 * 2^-1126 * 2^-1126
_NB = 6900  # up to bit 3400: alpha * (n * max^2) with n < 2^60, plus carry margin
_BLOCK = 256  # terms between carry normalisations: 256 * 2^54 + 2^26 < 2^63
_MASK26 = (1 << 26) - 1
_TOP_MARGIN = 52 + 26 * 4  # bins above the highest partial product kept for carries
_EMPTY_LO = 1 << 40


# --------------------------------------------------------------------------- kernels


@numba.njit(cache=True, inline="always")
def _split_bits(b):  # pragma: no cover - compiled
    """float64 bit pattern -> (h, l, e) with x = (2^26 h + l) 2^e, 0 <= l < 2^26.

    ``M = 2^26 h + l`` is the signed 53-bit significand, ``e`` the exponent of its
    last bit (-1074 for subnormals); zero gives ``h = l = 0, e = -53``.
    """
    E = (b >> 52) & 0x7FF
    M = b & 0xFFFFFFFFFFFFF
    if E == 0:
        ex = -1074
    else:
        M |= 0x10000000000000
        ex = E - 1075
    if b < 0:
        M = -M
    if M == 0:
        ex = -53
    hh = M >> 26
    return hh, M - (hh << 26), ex


@numba.njit(cache=True)
def _decompose(bits, transpose):  # pragma: no cover - compiled
    """Split float64 values (given as their int64 bit patterns, 2-D) exactly.

    Returns flat ``(h, l, e)`` (int32) with ``x = (2^26 h + l) 2^e`` and
    ``0 <= l < 2^26``: the 53-bit signed significand ``M = 2^26 h + l`` and the
    exponent of its last bit.  The flat index is ``r * cols + c`` for entry
    ``[r, c]``, or ``c * rows + r`` with ``transpose`` (B is stored by columns).
    """
    rows, cols = bits.shape
    n = rows * cols
    h = np.empty(n, np.int32)
    lo = np.empty(n, np.int32)
    e = np.empty(n, np.int32)
    for r in range(rows):
        for c in range(cols):
            b = bits[r, c]
            o = c * rows + r if transpose else r * cols + c
            hh, ll, ex = _split_bits(b)
            h[o] = np.int32(hh)
            lo[o] = np.int32(ll)
            e[o] = np.int32(ex)
    return h, lo, e


@numba.njit(cache=True)
def _normalise(acc, lo, top):  # pragma: no cover - compiled
    """Reduce bins [lo, top - 26) to 26 bits, moving carries 26 bins up."""
    for j in range(lo, top - 26):
        v = acc[j]
        acc[j] = v & _MASK26
        acc[j + 26] += v >> 26


@numba.njit(cache=True)
def _add_product(acc, h1, l1, h2, l2, pos):  # pragma: no cover - compiled
    """acc += (2^26 h1 + l1)(2^26 h2 + l2) 2^(pos + _POS_MIN), exactly."""
    acc[pos] += np.int64(l1) * np.int64(l2)
    acc[pos + 26] += np.int64(h1) * np.int64(l2) + np.int64(l1) * np.int64(h2)
    acc[pos + 52] += np.int64(h1) * np.int64(h2)


@numba.njit(cache=True)
def _canonical(acc, lo, top, bits):  # pragma: no cover - compiled
    """Carry-propagate bins [lo, ...) into binary digits; returns (negative, hi).

    On return ``bits[lo:hi+1]`` holds the binary digits of |value| and ``acc`` bins
    [lo, end) are zeroed; ``hi < lo`` means the value is zero.
    """
    if top <= lo:
        return False, lo - 1
    # first pass: sign (two's complement carry out of the top)
    c = np.int64(0)
    j = lo
    while True:
        v = c + acc[j] if j < _NB else c
        c = v >> 1
        j += 1
        if j >= top and (c == 0 or c == -1):
            break
    end = j
    negative = c == -1
    c = np.int64(0)
    hi = lo - 1
    for j in range(lo, end):
        v = acc[j]
        acc[j] = 0
        if negative:
            v = -v
        v += c
        b = v & 1
        bits[j] = np.int8(b)
        if b != 0:
            hi = j
        c = v >> 1
    return negative, hi


@numba.njit(cache=True)
def _round_bits(bits, lo, hi, negative):  # pragma: no cover - compiled
    """Round sum_j bits[j] 2^(j + _POS_MIN), j in [lo, hi], to float64 (RNE)."""
    if hi < lo:
        return 0.0
    r = max(hi - 52, -1074 - _POS_MIN)  # position of the last kept bit
    M = np.int64(0)
    for j in range(hi, r - 1, -1):
        M = (M << 1) | np.int64(bits[j]) if j >= lo else M << 1
    rb = 0
    if r - 1 >= lo and r - 1 <= hi:
        rb = bits[r - 1]
    sticky = 0
    for j in range(lo, min(r - 1, hi + 1)):
        if bits[j] != 0:
            sticky = 1
            break
    if rb != 0 and (sticky != 0 or (M & 1) != 0):
        M += 1
    e = r + _POS_MIN
    if M == 0:
        res = 0.0
    else:
        nb = 0
        t = M
        while t > 0:
            nb += 1
            t >>= 1
        if e + nb - 1 >= 1024:
            res = np.inf
        else:
            res = math.ldexp(float(M), e)
    return -res if negative else res


@numba.njit(cache=True)
def _finish(acc, lo, top, bits, ah, al, ae, c_h1, c_l1, c_h2, c_l2, c_pos, words, nwords):  # pragma: no cover
    """alpha * S + beta * c from the accumulated S; returns the rounded float64.

    ``alpha = (2^26 ah + al) 2^ae`` (``ah == al == 0`` and ``ae == 0`` encode
    ``alpha == 1``); ``beta * c = (2^26 c_h1 + c_l1)(2^26 c_h2 + c_l2) 2^c_pos``.
    When ``nwords > 0`` the exact result is written to ``words``: sign, lowest
    bit position, then 62-bit digit words of the magnitude.
    """
    if ah != 0 or al != 0:
        neg, hi = _canonical(acc, lo, top, bits)
        sgn = -1 if neg else 1
        h2 = np.int64(ah) * sgn
        l2 = np.int64(al) * sgn
        nlo = _EMPTY_LO
        ntop = -_EMPTY_LO
        for j in range(lo, hi + 1):
            if bits[j] != 0:
                p = j + ae
                acc[p] += l2
                acc[p + 26] += h2
                if p < nlo:
                    nlo = p
                if p + 26 > ntop:
                    ntop = p + 26
            bits[j] = 0
        if ntop < nlo:
            lo = _EMPTY_LO
            top = -_EMPTY_LO
        else:
            lo = nlo
            top = ntop + 1 + 26 * 3
    if c_h1 != 0 or c_l1 != 0:
        if (c_h2 != 0 or c_l2 != 0):
            _add_product(acc, c_h1, c_l1, c_h2, c_l2, c_pos)
            lo = min(lo, c_pos)
            top = max(top, c_pos + _TOP_MARGIN)
    if top < lo:
        if nwords > 0:
            words[0] = 0
            words[1] = 0
            for w in range(nwords):
                words[2 + w] = 0
        return 0.0
    neg, hi = _canonical(acc, lo, top, bits)
    res = _round_bits(bits, lo, hi, neg)
    if nwords > 0:
        words[0] = 1 if neg else 0
        words[1] = lo + _POS_MIN
        for w in range(nwords):
            words[2 + w] = 0
        for j in range(lo, hi + 1):
            if bits[j] != 0:
                q = j - lo
                words[2 + q // 62] |= np.int64(1) << (q % 62)
    for j in range(lo, hi + 1):
        bits[j] = 0
    return res


@numba.njit(cache=True)
def _accumulate_tile(acc, ranges, abits, bbits, i0, i1, j0, j1, k0, k1,
                     ah, al, ae, bh, bl, be):  # pragma: no cover - compiled
    """Accumulate sum_k A[i,k] B[k,j] over k in [k0, k1) for a tile of outputs.

    ``abits`` / ``bbits`` are the int64 bit patterns of A (m x K) and B (K x n).
    ``acc[t * _NB:(t + 1) * _NB]`` is the accumulator of output
    ``t = (i - i0) * (j1 - j0) + (j - j0)`` and ``ranges[t] = (lo, top)`` the bins
    it touches.  ``ah .. be`` are scratch arrays of at least ``_BLOCK * (j1 - j0)``
    (B) and ``_BLOCK`` (A) entries: each block of 256 terms is decomposed once
    into them (kept in L1) and reused across the tile.
    """
    nj = j1 - j0
    bmn = np.empty(nj, np.int64)
    bmx = np.empty(nj, np.int64)
    for ks in range(k0, k1, _BLOCK):
        ke = min(ks + _BLOCK, k1)
        nk = ke - ks
        for jj in range(nj):
            bmn[jj] = _EMPTY_LO
            bmx[jj] = -_EMPTY_LO
        for kk in range(nk):
            for jj in range(nj):
                x, y, e = _split_bits(bbits[ks + kk, j0 + jj])
                q = kk * nj + jj
                bh[q] = x
                bl[q] = y
                be[q] = e - _POS_MIN + jj * _NB  # bin offset and accumulator column folded in
                if x != 0 or y != 0:
                    if e < bmn[jj]:
                        bmn[jj] = e
                    if e > bmx[jj]:
                        bmx[jj] = e
        for i in range(i0, i1):
            amn = _EMPTY_LO
            amx = -_EMPTY_LO
            for kk in range(nk):
                x, y, e = _split_bits(abits[i, ks + kk])
                ah[kk] = x
                al[kk] = y
                ae[kk] = e
                if x != 0 or y != 0:
                    if e < amn:
                        amn = e
                    if e > amx:
                        amx = e
            if amx < amn:
                continue
            t0 = (i - i0) * nj
            row_off = t0 * _NB
            # consecutive updates go to different outputs' accumulators, so the
            # read-modify-write chains of one accumulator do not serialise
            for kk in range(nk):
                x1 = ah[kk]
                y1 = al[kk]
                ea = ae[kk] + row_off
                q0 = kk * nj
                for jj in range(nj):
                    q = q0 + jj
                    x2 = bh[q]
                    y2 = bl[q]
                    p = ea + be[q]
                    acc[p] += y1 * y2
                    acc[p + 26] += x1 * y2 + y1 * x2
                    acc[p + 52] += x1 * x2
            for jj in range(nj):
                if bmx[jj] < bmn[jj]:
                    continue
                t = t0 + jj
                lo = amn + bmn[jj] - _POS_MIN
                top = amx + bmx[jj] - _POS_MIN + _TOP_MARGIN
                _normalise(acc[t * _NB:(t + 1) * _NB], lo, top)
                if lo < ranges[t, 0]:
                    ranges[t, 0] = lo
                if top > ranges[t, 1]:
                    ranges[t, 1] = top


def _gemm_kernel_impl(abits, bbits, m, n, K, alpha_h, alpha_l, alpha_e, beta_h, beta_l, beta_e,
                 ch, cl, ce, has_c, ti, tj, ksplit, nwords, nthreads):  # pragma: no cover - compiled
    """Exact alpha * A @ B + beta * C rounded to float64, parallel over tiles or K."""
    out = np.empty(m * n, np.float64)
    words = np.zeros((m * n, 2 + max(nwords, 0)), np.int64)
    if ksplit > 1:
        # few outputs, long K: split K across threads, merge the accumulators exactly
        nout = m * n
        part = np.zeros((ksplit, nout * _NB), np.int64)
        prng = np.empty((ksplit, nout, 2), np.int64)
        nkb = (K + _BLOCK - 1) // _BLOCK
        kb_per = (nkb + ksplit - 1) // ksplit
        for s in numba.prange(ksplit):
            for t in range(nout):
                prng[s, t, 0] = _EMPTY_LO
                prng[s, t, 1] = -_EMPTY_LO
            k0 = min(s * kb_per * _BLOCK, K)
            k1 = min((s + 1) * kb_per * _BLOCK, K)
            sb = np.empty(_BLOCK * n, np.int64)
            sa = np.empty(_BLOCK, np.int64)
            if k1 > k0:
                _accumulate_tile(part[s], prng[s], abits, bbits, 0, m, 0, n, k0, k1,
                                 sa, sa.copy(), sa.copy(), sb, sb.copy(), sb.copy())
        bits = np.zeros(_NB, np.int8)
        for t in range(nout):
            acc = part[0, t * _NB:(t + 1) * _NB]
            lo = prng[0, t, 0]
            top = prng[0, t, 1]
            for s in range(1, ksplit):
                slo = prng[s, t, 0]
                stop = prng[s, t, 1]
                if stop > slo:
                    for j in range(slo, stop):
                        acc[j] += part[s, t * _NB + j]
                    lo = min(lo, slo)
                    top = max(top, stop)
            c_h = ch[t] if has_c else 0
            c_l = cl[t] if has_c else 0
            c_pos = (ce[t] + beta_e - _POS_MIN) if has_c else 0
            out[t] = _finish(acc, lo, top, bits, alpha_h, alpha_l, alpha_e,
                             beta_h, beta_l, c_h, c_l, c_pos, words[t], nwords)
        return out, words
    ni = (m + ti - 1) // ti
    nj = (n + tj - 1) // tj
    ntiles = ni * nj
    nth = min(nthreads, ntiles)
    for th in numba.prange(nth):
        acc = np.zeros(ti * tj * _NB, np.int64)
        rng = np.empty((ti * tj, 2), np.int64)
        bits = np.zeros(_NB, np.int8)
        sb = np.empty(_BLOCK * tj, np.int64)
        sa = np.empty(_BLOCK, np.int64)
        sa2 = sa.copy()
        sa3 = sa.copy()
        sb2 = sb.copy()
        sb3 = sb.copy()
        for tile in range(th, ntiles, nth):
            i0 = (tile // nj) * ti
            j0 = (tile % nj) * tj
            i1 = min(i0 + ti, m)
            j1 = min(j0 + tj, n)
            for t in range(ti * tj):
                rng[t, 0] = _EMPTY_LO
                rng[t, 1] = -_EMPTY_LO
            _accumulate_tile(acc, rng, abits, bbits, i0, i1, j0, j1, 0, K,
                             sa, sa2, sa3, sb, sb2, sb3)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    t = (i - i0) * (j1 - j0) + (j - j0)
                    o = i * n + j
                    c_h = ch[o] if has_c else 0
                    c_l = cl[o] if has_c else 0
                    c_pos = (ce[o] + beta_e - _POS_MIN) if has_c else 0
                    out[o] = _finish(acc[t * _NB:(t + 1) * _NB], rng[t, 0], rng[t, 1], bits,
                                     alpha_h, alpha_l, alpha_e, beta_h, beta_l,
                                     c_h, c_l, c_pos, words[o], nwords)
    return out, words


_gemm_kernel = numba.njit(cache=True, parallel=True)(_gemm_kernel_impl)


# --------------------------------------------------------------------------- validation


def _as_float64(x: Any, name: str) -> np.ndarray:
    """Exact, contiguous float64 copy of real finite data (:func:`workbench.numbers.validation.real_array`):
    values that are not exactly float64 (Fractions, big ints, long doubles), NaN and Inf
    are refused."""
    try:
        return np.ascontiguousarray(real_array(x, name, finite=True))
    except ValueError as exc:
        if "expected finite values" not in str(exc):
            raise
        raise ValueError(f"{exc}: exact results do not exist for NaN or Inf inputs (the workbench's "
                         "exact references are defined for finite float64 data only)") from None


def _as_scalar(x: Any, name: str) -> float:
    arr = _as_float64(x, name)
    if arr.ndim != 0 and arr.size != 1:
        raise ValueError(f"{name} must be a scalar; got shape {arr.shape}")
    return float(arr.reshape(()))


def _check_return_exact(return_exact: Any) -> None:
    if return_exact not in (None, "fraction", "mpf"):
        raise ValueError(f"return_exact={return_exact!r} is not supported; expected None, 'fraction' or 'mpf'")


def _check_method(method: Any) -> None:
    if method not in ("fast", "mpmath"):
        raise ValueError(f"method={method!r} is not supported; expected 'fast' or 'mpmath'")


# --------------------------------------------------------------------------- conversions


_F64_OVERFLOW = Fraction(2**1024 - 2**970)  # midpoint between max float64 and 2^1024


def fraction_to_float64(x: Fraction | int) -> float:
    """Round an exact rational to float64, round to nearest ties to even.

    Uses Python's correctly rounded integer true division (subnormal results
    included); values of magnitude at least ``2^1024 - 2^970`` (the midpoint
    between the largest float64 and ``2^1024``) round to ``inf``, as IEEE 754
    RNE does.  Exact zero gives ``+0.0``.
    """
    x = Fraction(x)
    if abs(x) >= _F64_OVERFLOW:
        return math.inf if x > 0 else -math.inf
    return x.numerator / x.denominator


def _words_to_fraction(w: np.ndarray) -> Fraction:
    neg, low = int(w[0]), int(w[1])
    mag = 0
    for k, word in enumerate(w[2:]):
        if word:
            mag |= int(word) << (62 * k)
    if mag == 0:
        return Fraction(0)
    v = Fraction(mag) * (Fraction(2) ** low)
    return -v if neg else v


def _fraction_to_mpf(x: Fraction) -> Any:
    """An mpmath mpf holding exactly the dyadic rational x."""
    import mpmath

    num, den = x.numerator, x.denominator
    if den & (den - 1):
        raise ValueError(f"{x} is not a dyadic rational; it has no exact mpf")
    shift = den.bit_length() - 1
    with mpmath.workprec(max(53, abs(num).bit_length() + 1)):
        return mpmath.mpf((num, -shift))


def _mpf_to_fraction(v: Any) -> Fraction:
    sign, man, exp, _ = v._mpf_
    if not man:
        return Fraction(0)
    m = -int(man) if sign else int(man)
    return Fraction(m) * Fraction(2) ** int(exp)


# --------------------------------------------------------------------------- mpmath oracle


def _int_exponent_range(x: np.ndarray) -> tuple[int, int] | None:
    """Lowest and highest bit position over the nonzero entries (x = M 2^e, M < 2^53)."""
    nz = x[x != 0]
    if nz.size == 0:
        return None
    _, ex = np.frexp(nz)
    return int(ex.min()) - 53, int(ex.max())


def exact_precision(n_terms: int, low_bit: int, high_bit: int) -> int:
    """Working precision (bits) that makes an mpmath sum of products exact.

    Every term is an integer multiple of ``2^low_bit`` below ``2^high_bit`` in
    magnitude, so every partial sum of ``n_terms`` of them is a multiple of
    ``2^low_bit`` below ``n_terms 2^high_bit``: it has at most
    ``high_bit - low_bit + ceil(log2(n_terms + 1))`` significant bits, and mpmath
    arithmetic at that precision (plus a margin of 8 bits) rounds nothing.
    """
    if n_terms < 0 or high_bit < low_bit:
        raise ValueError(f"need n_terms >= 0 and high_bit >= low_bit; got {n_terms}, {low_bit}, {high_bit}")
    return int(high_bit - low_bit + max(1, (n_terms + 1).bit_length()) + 8)


def _mpmath_gemm(A: np.ndarray, B: np.ndarray, C: np.ndarray | None, alpha: float, beta: float) -> np.ndarray:
    """Exact alpha*A@B + beta*C as an object array of mpf (mpmath oracle)."""
    import mpmath

    m, K = A.shape
    n = B.shape[1]
    ra, rb = _int_exponent_range(A), _int_exponent_range(B)
    rc = _int_exponent_range(C) if C is not None else None
    ral = _int_exponent_range(np.array([alpha]))
    rbe = _int_exponent_range(np.array([beta]))
    lows, highs = [], []
    if ra and rb and ral:
        lows.append(ra[0] + rb[0] + ral[0])
        highs.append(ra[1] + rb[1] + ral[1])
    if rc and rbe:
        lows.append(rc[0] + rbe[0])
        highs.append(rc[1] + rbe[1])
    out = np.empty((m, n), dtype=object)
    if not lows:
        out[...] = mpmath.mpf(0)
        return out
    prec = exact_precision(K + 1, min(lows), max(highs))
    with mpmath.workprec(prec):
        al = mpmath.mpf(alpha)
        be = mpmath.mpf(beta)
        Am = [[mpmath.mpf(float(v)) for v in row] for row in A]
        Bm = [[mpmath.mpf(float(B[k, j])) for k in range(K)] for j in range(n)]
        for i in range(m):
            for j in range(n):
                s = mpmath.mpf(0)
                for x, y in zip(Am[i], Bm[j]):
                    s += x * y  # exact: prec covers every partial sum
                s = al * s
                if C is not None:
                    s += be * mpmath.mpf(float(C[i, j]))
                out[i, j] = s
    return out


# --------------------------------------------------------------------------- public API


def _split_scalar(x: float) -> tuple[int, int, int]:
    """x = (2^26 h + l) 2^e with l in [0, 2^26)."""
    if x == 0.0:
        return 0, 0, 0
    m, e = math.frexp(x)
    M = int(m * 2**53)
    h = M >> 26
    return h, M - (h << 26), e - 53


def _tiles(m: int, n: int) -> tuple[int, int]:
    ni = -(-m // 8)
    nj = -(-n // 8)
    return -(-m // ni), -(-n // nj)


def gemm(
    A: Any,
    B: Any,
    C: Any = None,
    alpha: float = 1.0,
    beta: float = 1.0,
    *,
    return_exact: ReturnExact = None,
    method: Method = "fast",
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Exact ``D = alpha * A @ B + beta * C`` correctly rounded to float64 (RNE).

    Parameters
    ----------
    A, B:
        Real arrays of shape ``(m, K)`` and ``(K, n)`` whose entries are float64
        values (any magnitude, subnormals included; float16/float32 and exactly
        representable integers are converted exactly).  NaN and Inf raise
        ``ValueError``: no exact value exists.
    C:
        ``None`` (no addend) or an array of shape ``(m, n)``.
    alpha, beta:
        float64 scalars applied exactly; the result is rounded once.  With
        ``beta == 0`` the addend contributes nothing (it must still be finite).
    return_exact:
        ``None`` (default): return the rounded float64 array only.
        ``"fraction"``: also return an object array of :class:`fractions.Fraction`
        holding the exact results.  ``"mpf"``: the same as ``mpmath.mpf`` values
        whose precision equals the number of bits of each value (exact).
    method:
        ``"fast"`` (compiled integer superaccumulator, default) or ``"mpmath"``
        (the oracle: mpmath at the precision of :func:`exact_precision`; slow).

    Returns
    -------
    ``D`` (float64, shape ``(m, n)``), or ``(D, exact)`` when ``return_exact`` is set.
    An exact zero rounds to ``+0.0``; magnitudes of at least ``2^1024 - 2^970``
    round to ``inf`` (the IEEE 754 RNE result).
    """
    _check_return_exact(return_exact)
    _check_method(method)
    A = _as_float64(A, "A")
    B = _as_float64(B, "B")
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"A and B must be 2-D; got A.shape={A.shape}, B.shape={B.shape}")
    m, K = A.shape
    K2, n = B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: A.shape={A.shape}, B.shape={B.shape}")
    Cf = None
    if C is not None:
        Cf = _as_float64(C, "C")
        if Cf.shape != (m, n):
            raise ValueError(f"C.shape={Cf.shape} does not match A @ B, which has shape {(m, n)}")
    alpha = _as_scalar(alpha, "alpha")
    beta = _as_scalar(beta, "beta")
    if Cf is not None and beta == 0.0:
        Cf = None

    if method == "mpmath":
        exact_mp = _mpmath_gemm(A, B, Cf, alpha, beta)
        fr: Any = np.empty((m, n), dtype=object)  # Fractions
        D = np.empty((m, n), np.float64)
        for idx in np.ndindex(m, n):
            fr[idx] = _mpf_to_fraction(exact_mp[idx])
            D[idx] = fraction_to_float64(fr[idx])
        if return_exact is None:
            return D
        if return_exact == "fraction":
            return D, fr
        exact_out: Any = np.empty((m, n), dtype=object)
        for idx in np.ndindex(m, n):
            exact_out[idx] = _fraction_to_mpf(fr[idx])
        return D, exact_out

    if m * n == 0:
        D = np.zeros((m, n))
        return D if return_exact is None else (D, np.empty((m, n), dtype=object))
    if alpha == 0.0:
        K = 0  # alpha * A @ B is exactly zero
        A = np.zeros((m, 0))
        B = np.zeros((0, n))
    a_h, a_l, a_e = (0, 0, 0) if alpha in (0.0, 1.0) else _split_scalar(alpha)
    b_h, b_l, b_e = _split_scalar(beta)
    if Cf is not None:
        ch, cl, ce = _decompose(Cf.view(np.int64), False)
        has_c = True
    else:
        ch = cl = ce = np.zeros(1, np.int32)
        has_c = False
    nwords = _NB // 62 + 2 if return_exact is not None else 0
    work = m * n * max(K, 1)
    threads = threads_used(work)
    ti, tj = _tiles(m, n)
    ksplit = threads if (m * n < threads and K >= 4 * _BLOCK * threads) else 1
    with threads_for(work):
        out, words = _gemm_kernel(
            A.view(np.int64), B.view(np.int64), m, n, K,
            a_h, a_l, a_e, b_h, b_l, b_e, ch, cl, ce, has_c, ti, tj, ksplit, nwords, threads,
        )
    D = out.reshape(m, n)
    if return_exact is None:
        return D
    ex = np.empty((m, n), dtype=object)
    for o in range(m * n):
        frac = _words_to_fraction(words[o])
        ex.flat[o] = frac if return_exact == "fraction" else _fraction_to_mpf(frac)
    return D, ex


def dot(
    a: Any,
    b: Any,
    c: float = 0.0,
    *,
    return_exact: ReturnExact = None,
    method: Method = "fast",
) -> float | tuple[float, Any]:
    """Exact ``c + sum_k a[k] b[k]`` correctly rounded to float64 (RNE).

    ``a`` and ``b`` are 1-D real arrays of equal length holding float64 values
    (any magnitude); ``c`` a float64 scalar.  ``return_exact`` and ``method`` are
    as in :func:`gemm`; with ``return_exact`` set the result is
    ``(rounded, exact)`` where ``exact`` is a ``Fraction`` or an exact ``mpf``.
    """
    a = _as_float64(a, "a")
    b = _as_float64(b, "b")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"a and b must be 1-D; got a.shape={a.shape}, b.shape={b.shape}")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length; got {a.shape[0]} and {b.shape[0]}")
    c = _as_scalar(c, "c")
    res = gemm(a[None, :], b[:, None], np.array([[c]]), 1.0, 1.0, return_exact=return_exact, method=method)
    if return_exact is None:
        return float(cast(np.ndarray, res)[0, 0])
    D, ex = cast("tuple[np.ndarray, np.ndarray]", res)
    return float(D[0, 0]), ex[0, 0]
