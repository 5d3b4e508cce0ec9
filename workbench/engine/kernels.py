"""The compiled GEMM kernels: parallel over output tiles, blocked over K.

One arithmetic serves the whole T-FDPA family (Xie et al. 2025 Algorithm 7 and
Khattak-Mikaitis' generic block FMA: sticky bit, c early/late, interleaved groups);
the other elementary operations have their own small kernels below.  Both T-FDPA
kernels walk tiles of outputs (rows x columns) in parallel; inside a tile they walk K
in chunks of a few hundred elements and, for each chunk, update every output of the
tile, so a chunk of A and B is reused from cache across the tile (docs/architecture.md,
"Facts measured": the untiled kernel fell to 5e7 MAC/s at 10 x 1,000,000 x 10).

* :func:`tfdpa_gemm_lanes` (the models of :func:`lane_eligible` - every NVIDIA
  T-FDPA and ST-FDPA preset, interleaved fp8 ``mma.sync`` and c-late ones included -
  with at least 4 columns): the outputs of one row of a tile are computed side by
  side, every step of a block a loop over up to 64 lanes that LLVM turns into
  vector instructions (B in its own (K, N) layout, so a step's lanes are
  adjacent); outputs meeting Inf/NaN or overflow are recomputed by the scalar path.
  Chained products of the models :func:`workbench.engine.vector_chain.simd_eligible`
  accepts (the NVIDIA fp16/bf16/tf32 presets and Hopper's wgmma fp8 among them) run on the vector
  chain of :mod:`workbench.engine.vector_chain` instead, the same arithmetic written
  as explicit 16-lane LLVM vectors.
* :func:`tfdpa_gemm` (every model): one output at a time, its chain in
  :func:`_chain` - an integer fast path (accumulator kept as sign, significand and
  scale; branch-free block maximum and alignment; ``lzcnt`` rounding) for the
  common models, the general :func:`tfdpa_step` for blocks holding Inf/NaN and for
  interleaved or c-late models.

Parameters travel as one int64 array (``prm``, laid out by :mod:`workbench.engine.layout`,
tiles set by :func:`pack_tfdpa`) so that a single compiled specialisation serves every model.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..formats import RD, RNE, FloatFormat
from .nans import fma_nan
from .ops import (
    NEG_BIG,
    SIG_NAN,
    SPECIAL,
    align_term,
    add_round,
    bit_length,
    round_int,
    shift_lost,
    combine_special,
    decompose_one,
    round_double,
    round_fixed,
    special_product,
    special_result,
    special_value,
)

from .layout import (  # the one parameter layout (see workbench.engine.layout)
    ACC_CHAIN,
    ACC_OUTSIDE,
    ACC_PROMOTE,
    P_BC,
    P_CLATE,
    P_EMAXRES,
    P_EMINC,
    P_EMINRES,
    P_F,
    P_FLUSHOUT,
    P_FP,
    P_GENERAL,
    P_GF,
    P_L,
    P_LATEMODE,
    P_MC,
    P_MODE,
    P_NG,
    P_PRES,
    P_PROMOTE,
    P_STICKY,
    P_TI,
    P_TJ,
    P_USE_EZ,
    P_EZ,
    P_ACCMODE,
)


@numba.njit(cache=True)
def _fused(sa, ea, sb, eb, i, j, k0, L, g, ng, fp, F, ez, use_ez, sticky,
           c_sig, c_exp, c_frac, has_c):
    """Truncated fused sum of the products of one block (or one interleaved group of
    it) and optionally c: returns (S, emax, special?, +inf, -inf, nan).

    The value of the sum is ``S * 2**(emax - F - sticky)``."""
    emax = NEG_BIG
    spec = False
    pos = False
    neg = False
    nan = False
    for jj in range(L):
        if ng > 1 and ((jj >> 1) % ng) != g:
            continue
        k = np.uint64(k0 + jj)
        e1 = ea[i, k]
        e2 = eb[k, j]
        s1 = sa[i, k]
        s2 = sb[k, j]
        if e1 >= SPECIAL or e2 >= SPECIAL:
            spec = True
            pos, neg, nan = combine_special(special_product(s1, e1, s2, e2), pos, neg, nan)
            continue
        if s1 == 0 or s2 == 0:
            if use_ez and ez > emax:
                emax = ez
            continue
        e = e1 + e2
        if e > emax:
            emax = e
    if has_c:
        if c_exp >= SPECIAL:
            spec = True
            pos, neg, nan = combine_special(special_value(c_sig), pos, neg, nan)
        elif c_sig == 0:
            if use_ez and ez > emax:
                emax = ez
        elif c_exp > emax:
            emax = c_exp
    if spec or emax == NEG_BIG:
        return np.int64(0), emax, spec, pos, neg, nan
    S = np.int64(0)
    base = F - fp - emax
    for jj in range(L):
        if ng > 1 and ((jj >> 1) % ng) != g:
            continue
        k = np.uint64(k0 + jj)
        p = np.int64(sa[i, k]) * np.int64(sb[k, j])
        if p == 0:
            continue
        t = align_term(p if p > 0 else -p, base + ea[i, k] + eb[k, j], sticky)
        S += t if p > 0 else -t
    if has_c and c_sig != 0:
        m = np.int64(c_sig)
        t = align_term(m if m > 0 else -m, F - c_frac + c_exp - emax, sticky)
        S += t if m > 0 else -t
    return S, emax, False, False, False, False


@numba.njit(cache=True)
def exact_add(a, b, p, emin, emax, mode, flush):
    """Correctly rounded a + b (float64 operands exactly in a <= 53-bit format) to the
    format (p, emin, emax): the float64 sum and its TwoSum error give a round-to-odd
    value with 2 more bits than needed, which then rounds correctly in any mode.

    An exact zero sum has the sign IEEE 754-2019 Sec. 6.3 gives it: the common sign
    of two zeros of one sign (-0 + -0 = -0), otherwise +0, or -0 when rounding down
    (``mode`` RD) - the adder after the products (c late, the fp32 accumulator of
    promoted chains) is an IEEE adder; :func:`workbench.engine.ops.add_round` is the
    lane kernels' twin with the same rule."""
    if a != a or b != b or math.isinf(a) or math.isinf(b):
        r = a + b
        return r
    s = a + b
    if s == 0.0:
        if a == 0.0 and b == 0.0 and math.copysign(1.0, a) == math.copysign(1.0, b):
            return a
        return -0.0 if mode == RD else 0.0
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    m, e = math.frexp(s)
    S = np.int64(math.ldexp(m, 53)) * 4
    if err != 0.0:
        half = math.ldexp(1.0, e - 54)
        step = 2 if abs(err) == half else 1
        S += step if err > 0 else -step
    return round_fixed(S, e - 55, p, emin, emax, mode, flush)


@numba.njit(cache=True)
def tfdpa_step(sa, ea, sb, eb, i, j, k0, d, prm):
    """One T-FDPA instruction: ``d <- block(a[k0:k0+L], b[k0:k0+L], c=d)``."""
    L = prm[P_L]
    F = prm[P_F]
    fp = prm[P_FP]
    ez = prm[P_EZ]
    use_ez = prm[P_USE_EZ] != 0
    mode = prm[P_MODE]
    pr = prm[P_PRES]
    eminr = prm[P_EMINRES]
    emaxr = prm[P_EMAXRES]
    mc = prm[P_MC]
    eminc = prm[P_EMINC]
    sticky = prm[P_STICKY] != 0
    c_late = prm[P_CLATE] != 0
    ng = prm[P_NG]
    flush = prm[P_FLUSHOUT] != 0
    if not c_late and ng == 1:
        c_sig, c_exp = decompose_one(d, mc, eminc, False)
        S, emax, spec, pos, neg, nan = _fused(sa, ea, sb, eb, i, j, k0, L, 0, 1, fp, F, ez, use_ez,
                                              sticky, c_sig, c_exp, mc, True)
        if spec:
            return special_result(pos, neg, nan)
        if emax == NEG_BIG:
            return 0.0
        return round_fixed(S, emax - F - (1 if sticky else 0), pr, eminr, emaxr, mode, flush)
    # interleaved groups chained from zero (c enters late) or from c (early)
    gF = prm[P_GF]
    part = 0.0 if c_late else d
    for g in range(ng):
        c_sig, c_exp = decompose_one(part, mc, eminc, False)
        S, emax, spec, pos, neg, nan = _fused(sa, ea, sb, eb, i, j, k0, L, g, ng, fp, gF, ez, use_ez,
                                              sticky, c_sig, c_exp, mc, True)
        if spec:
            part = special_result(pos, neg, nan)
        elif emax == NEG_BIG:
            part = 0.0
        else:
            part = round_fixed(S, emax - gF - (1 if sticky else 0), pr, eminr, emaxr, mode, flush)
    if c_late:
        return exact_add(part, d, pr, eminr, emaxr, prm[P_LATEMODE], flush)
    return part


@numba.njit(cache=True, inline="always")
def lane_eligible(prm):
    """Whether :func:`tfdpa_gemm_lanes` computes this model: the result format no
    wider than the output format (so a block result is exactly the next block's
    c) and aligned sums that cannot overflow int64 (F and the groups' F at most 50,
    L at most 512, products of at most 24-bit significands)."""
    return (prm[P_GENERAL] == 0 and prm[P_PRES] <= prm[P_MC] + 1 and prm[P_EMINRES] >= prm[P_EMINC]
            and prm[P_F] <= 50 and prm[P_GF] <= 50 and prm[P_L] <= 512 and prm[P_FP] <= 2 * 24)


@numba.njit(cache=True, inline="always")
def fast_eligible(prm):
    """Whether :func:`_chain` may take the integer fast path: :func:`lane_eligible`
    with one group and c early."""
    return lane_eligible(prm) and prm[P_NG] == 1 and prm[P_CLATE] == 0


@numba.njit(cache=True, inline="always")
def _sum_params(prm):
    """The fields of ``prm`` that the integer fast path of one fused sum and its
    rounding read: ``(fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush)`` -
    product fraction bits, the zero exponent (NEG_BIG when zeros take no part), the
    sticky bit, the rounding mode and result format, the output format's fraction
    bits and emin (c's decomposition), flushing of subnormal results."""
    return (prm[P_FP], prm[P_EZ] if prm[P_USE_EZ] != 0 else NEG_BIG, prm[P_STICKY] != 0, prm[P_MODE],
            prm[P_PRES], prm[P_EMINRES], prm[P_EMAXRES], prm[P_MC], prm[P_EMINC], prm[P_FLUSHOUT] != 0)


@numba.njit(cache=True, inline="always")
def _block_emax(sa, ea, sb, eb, i, j, k0, L, ezp, W):
    """(largest product exponent, largest raw exponent sum) of the block at k0 of row
    i of A and row j of B^T.

    Zero products count with ``ezp`` (the preset's zero exponent, or NEG_BIG); the raw
    maximum includes them with their operands' exponents, so it reaches SPECIAL/2
    exactly when an operand is Inf/NaN.  ``W`` (a literal 4 or 1, dividing L) fixes
    the inner trip count so that LLVM unrolls the short block."""
    emax = NEG_BIG
    raw = NEG_BIG
    for j4 in range(0, L, W):
        for u in range(W):
            k = np.uint64(k0 + j4 + u)    # unsigned: no wraparound test, so plain vector loads
            e = np.int64(ea[i, k]) + np.int64(eb[k, j])
            p = np.int64(sa[i, k]) * np.int64(sb[k, j])
            raw = max(raw, e)
            emax = max(emax, e if p != 0 else ezp)
    return emax, raw


@numba.njit(cache=True, inline="always")
def _block_sum(sa, ea, sb, eb, i, j, k0, L, ezp, base, G, sticky, W):
    """Exact sum of the block's products aligned to ``base`` (= emax + G - F + 2m):
    each magnitude ``|p| * 2**G`` is shifted right by ``base - e`` (>= 0, capped at
    63), truncating toward zero in sign-magnitude (Xie et al. Algorithm 7's RZ_F);
    with ``sticky`` a bit is appended that is 1 when anything was shifted out."""
    S = np.int64(0)
    for j4 in range(0, L, W):
        for u in range(W):
            k = np.uint64(k0 + j4 + u)
            p = np.int64(sa[i, k]) * np.int64(sb[k, j])
            e = np.int64(ea[i, k]) + np.int64(eb[k, j])
            r = base - (e if p != 0 else ezp)
            r = r if r < 63 else 63
            m = (p if p >= 0 else -p) << G
            t = m >> r
            if sticky:
                t = (t << 1) | (1 if (m & ((np.int64(1) << r) - 1)) != 0 else 0)
            S += t if p >= 0 else -t
    return S


@numba.njit(cache=True)
def _chain(sa, ea, sb, eb, i, j, b0, b1, d, prm, fast):
    """Run T-FDPA blocks ``b0 .. b1-1`` of output (i, j) from the accumulator ``d``
    (float64) and return the new accumulator: ``d <- block(a[k0:k0+L], b[k0:k0+L], d)``
    per block (Xie et al. 2025 Algorithm 7; Khattak-Mikaitis' block FMA with c early).

    With ``fast`` (see :func:`fast_eligible`) the chain is carried in integers as
    ``(-1)**neg * mag * 2**q`` and each block is computed without branches on the
    data: the product exponents ``ea + eb`` (zero products take the preset's zero
    exponent, or none), their maximum with c's exponent (clamped at the output's
    emin, as a decomposed c is), every term aligned to F fractional bits below that
    maximum by one right shift of ``|p| * 2**G`` truncating the magnitude (plus the
    sticky bit), the exact int64 sum, and :func:`round_int`.  A block holding an
    Inf/NaN operand, or an Inf/NaN accumulator, goes through :func:`tfdpa_step`.
    Without ``fast`` every block goes through :func:`tfdpa_step`.
    """
    L = prm[P_L]
    if not fast:
        for blk in range(b0, b1):
            d = tfdpa_step(sa, ea, sb, eb, i, j, blk * L, d, prm)
        return d
    F = prm[P_F]
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    st = 1 if sticky else 0
    G = F - fp if F > fp else 0
    roff = G - F + fp                 # right shift of a term = emax - e + roff >= 0
    special = d != d or math.isinf(d)
    neg = False
    mag = np.int64(0)
    q = np.int64(0)
    if not special:
        c_sig, c_exp = decompose_one(d, mc, eminc, False)
        neg = c_sig < 0
        mag = np.int64(-c_sig if neg else c_sig)
        q = np.int64(c_exp - mc)
    for blk in range(b0, b1):
        k0 = blk * L
        if not special:
            # maximum exponent over the products (zero products: ezp) ...
            if L % 4 == 0:
                emax, raw = _block_emax(sa, ea, sb, eb, i, j, k0, L, ezp, 4)
            else:
                emax, raw = _block_emax(sa, ea, sb, eb, i, j, k0, L, ezp, 1)
            if raw >= (SPECIAL >> 1):  # an Inf/NaN operand (exponent SPECIAL) in this block
                special = True
                d = -math.ldexp(float(mag), q) if neg else math.ldexp(float(mag), q)
        if special:
            d = tfdpa_step(sa, ea, sb, eb, i, j, k0, d, prm)
            special = d != d or math.isinf(d)
            if not special:
                c_sig, c_exp = decompose_one(d, mc, eminc, False)
                neg = c_sig < 0
                mag = np.int64(-c_sig if neg else c_sig)
                q = np.int64(c_exp - mc)
            continue
        # ... and c's (exponent clamped at the output format's emin)
        if mag != 0:
            ce = bit_length(mag) - 1 + q
            ce = ce if ce > eminc else eminc
        else:
            ce = ezp
        emax = max(emax, ce)
        if emax == NEG_BIG:
            neg = False
            mag = np.int64(0)
            continue
        base = emax + roff
        if L % 4 == 0:
            S = _block_sum(sa, ea, sb, eb, i, j, k0, L, ezp, base, G, sticky, 4)
        else:
            S = _block_sum(sa, ea, sb, eb, i, j, k0, L, ezp, base, G, sticky, 1)
        if mag != 0:
            t = align_term(mag, q + F - emax, sticky)
            S += -t if neg else t
        neg, mag, q, inf = round_int(S, emax - F - st, pr, eminr, emaxr, mode, flush)
        if inf:
            special = True
            mag = np.int64(0)
            q = np.int64(0)
            d = -math.inf if neg else math.inf
    if special:
        return d
    return -math.ldexp(float(mag), q) if neg else math.ldexp(float(mag), q)


_FP32_ACC = (24, -126, 127)   # the fp32 accumulator of "outside"/"promote" (RNE, ordinary cores)
#: The lane kernels compute whole groups of this many outputs (B's columns padded).
LANE_PAD = 8
#: Fewest columns of B for which the lane kernels beat the one-output-at-a-time ones.
LANES_MIN_N = 4


@numba.njit(cache=True)
def _accumulate(sa, ea, sb, eb, i, j, b0, b1, d, part, prm, fast):
    """Blocks ``b0 .. b1-1`` of output (i, j) in the accumulation mode prm[P_ACCMODE];
    returns the new ``(d, part)``.

    Mode 0 (chain): ``d`` is the chained accumulator (C on entry), ``part`` unused.
    Modes 1 (outside) and 2 (promote): ``part`` is the partial chain started from 0
    at the last promotion boundary (every block for mode 1, every prm[P_PROMOTE]
    blocks for mode 2, and the end of K); at each boundary it is added to the fp32
    accumulator ``d`` with round-to-nearest (:func:`exact_add`) and restarts from 0."""
    accmode = prm[P_ACCMODE]
    if accmode == ACC_CHAIN:
        return _chain(sa, ea, sb, eb, i, j, b0, b1, d, prm, fast), part
    nprom = 1 if accmode == ACC_OUTSIDE else prm[P_PROMOTE]
    nblocks = sa.shape[1] // prm[P_L]
    blk = b0
    while blk < b1:
        end = min(b1, (blk // nprom + 1) * nprom)
        part = _chain(sa, ea, sb, eb, i, j, blk, end, part, prm, fast)
        if end % nprom == 0 or end == nblocks:
            d = exact_add(d, part, _FP32_ACC[0], _FP32_ACC[1], _FP32_ACC[2], 0, False)
            part = 0.0
        blk = end
    return d, part


@numba.njit(cache=True, parallel=True)
def tfdpa_gemm(sa, ea, sb, eb, acc, prm):
    """D <- T-FDPA blocks over K for every output, in place in ``acc``: the scalar
    kernel (one output at a time, any T-FDPA model).

    ``sa, ea``: (M, Kp) decomposed A; ``sb, eb``: (Kp, N) decomposed B, indexed
    ``[k, j]`` (C-ordered, or the transpose of a C-ordered B^T: numba compiles each
    layout); Kp is a multiple of L.  ``acc`` (M, N) float64 holds C on entry and D on
    exit.  Outputs are walked in tiles of prm[P_TI] x prm[P_TJ], K in chunks of
    prm[P_BC] blocks so that a chunk of A and B serves the whole tile from cache.
    Accumulation modes (prm[P_ACCMODE]) as in :func:`_accumulate`.
    """
    M, Kp = sa.shape
    N = acc.shape[1]
    nblocks = Kp // prm[P_L]
    TI = prm[P_TI]
    TJ = prm[P_TJ]
    BC = prm[P_BC]
    fast = fast_eligible(prm)
    n_it = (M + TI - 1) // TI
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(n_it * n_jt):
        it = t // n_jt
        jt = t - it * n_jt
        i0 = it * TI
        i1 = min(M, i0 + TI)
        j0 = jt * TJ
        j1 = min(N, j0 + TJ)
        part = np.zeros((i1 - i0, j1 - j0))
        for b0 in range(0, nblocks, BC):
            b1 = min(nblocks, b0 + BC)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    acc[i, j], part[i - i0, j - j0] = _accumulate(sa, ea, sb, eb, i, j, b0, b1, acc[i, j],
                                                                  part[i - i0, j - j0], prm, fast)


@numba.njit(cache=True, inline="always")
def lane_tile(t, n_jt, TI, TJ, M, N, Np):
    """Tile ``t`` of a lane kernel: ``(i0, ti, j0, nl, nv)`` - first row and number of
    rows, first column, outputs per row and lanes computed (padding included)."""
    it = t // n_jt
    i0 = it * TI
    j0 = (t - it * n_jt) * TJ
    return i0, min(M, i0 + TI) - i0, j0, min(N, j0 + TJ) - j0, min(Np, j0 + TJ) - j0


@numba.njit(cache=True, inline="always")
def lanes_from_c(acc, i, j0, nl, row_special, col_special, mc, eminc, neg, mag, q, bad):
    """Lane state ``(neg, mag, q)`` of outputs (i, j0 .. j0+nl-1) from their C, as the
    output format (``mc`` fraction bits, ``eminc``) decomposes it; ``bad`` where the
    row of A, the column of B or C holds Inf/NaN (those lanes are left at 0)."""
    for u in range(nl):
        c = acc[i, j0 + u]
        bad[u] = row_special[i] != 0 or col_special[j0 + u] != 0 or c != c or math.isinf(c)
        neg[u] = False
        mag[u] = 0
        q[u] = 0
        if not bad[u]:
            c_sig, c_exp = decompose_one(c, mc, eminc, False)
            neg[u] = c_sig < 0 or math.copysign(1.0, c) < 0     # -0 keeps its sign (c late adds it)
            mag[u] = -c_sig if c_sig < 0 else c_sig
            q[u] = c_exp - mc


@numba.njit(cache=True, inline="always")
def lane_value(neg, mag, q):
    """The float64 ``(-1)**neg * mag * 2**q`` of one lane's state."""
    v = math.ldexp(float(mag), q)
    return -v if neg else v


@numba.njit(cache=True, inline="always")
def _term32(a_s32, b_s, off32, emx_u, b_e, G32, sticky):
    """One product's aligned term in 32-bit steps (the narrow path of
    :func:`_lane_block`): ``|a b| * 2**G`` shifted right by ``emx + off - e_b`` (clamped
    to 0..31), truncating the magnitude, with the sticky bit appended when asked; signed."""
    p32 = mul32(a_s32, b_s)
    r32 = np.int32(emx_u + off32 - b_e)
    r32 = r32 if r32 < np.int32(31) else np.int32(31)
    r32 = r32 if r32 > np.int32(0) else np.int32(0)
    p_neg = p32 < 0
    m32 = shl32(np.int32(-p32) if p_neg else p32, G32)
    t32 = ashr32(m32, r32)
    if sticky:
        t32 = np.int32(shl32(t32, 1) | (1 if shl32(t32, r32) != m32 else 0))
    return np.int32(-t32) if p_neg else t32


@numba.njit(cache=True, inline="always")
def _lane_block(sa, ea, sb, eb, i, j0, nl, k0, L, g, ng, neg, mag, q, emx, S, S32, ezp, F, fp, sticky,
                eminc, pr, eminr, emaxr, mode, flush, bad):
    """One fused T-FDPA sum - a block (k0 .. k0+L-1), or its interleaved group ``g``
    of ``ng`` (elements whose pair index is g modulo ng) - for outputs (i, j0 ..
    j0+nl-1) side by side: the fast path of :func:`_chain` with the loop over
    outputs innermost, so that every step is a vector operation over ``nl`` lanes
    of B's row ``k``.  The lane state ``(neg, mag, q)`` (c on entry, the rounded
    sum on exit, each ``(-1)**neg * mag * 2**q``) is updated in place; ``bad`` is
    set where the sum overflowed to Inf.  ``S`` (int64) and ``S32`` (int32) are
    scratch lanes."""
    G = F - fp if F > fp else 0
    roff = G - F + fp                 # right shift of a term = emax - e + roff >= 0
    st = 1 if sticky else 0
    # terms in int32 (16 lanes a vector): |p| < 2**(fp + 2), shifted left by G, plus the sticky bit
    narrow = fp + 2 + G + st <= 31
    # ... and their sum too: an aligned term is below 2**(F + 2 + st) (its largest shift-free
    # magnitude is |p| 2**G < 2**(F + 2) with F >= fp, or |p| 2**-roff < 2**(F + 2) with F < fp),
    # so L of them stay within int32 when L 2**(F + 2 + st) <= 2**31; c joins in int64
    narrow_sum = narrow and bit_length(L - 1) + F + 2 + st <= 31
    ul = np.uint64(nl)
    uj0 = np.uint64(j0)
    ez32 = np.int32(ezp)
    for u in range(ul):          # c's exponent (clamped at the output format's emin)
        m = mag[u]
        ce = bit_length(m) - 1 + q[u]
        ce = ce if ce > eminc else eminc
        emx[u] = np.int32(ce if m != 0 else ezp)
    for kk in range(L):          # the largest product exponent (zero products: ezp), in int32
        if ng > 1 and ((kk >> 1) % ng) != g:
            continue
        k = np.uint64(k0 + kk)
        a_zero = sa[i, k] == 0
        a_e = ea[i, k]
        for u in range(ul):
            e = np.int32(a_e + eb[k, uj0 + u])
            v = ez32 if (a_zero | (sb[k, uj0 + u] == 0)) else e
            cur = emx[u]
            emx[u] = v if v > cur else cur
    for u in range(ul):          # c aligned to F fractional bits below the maximum
        m = mag[u]
        t, lost = shift_lost(m, q[u] + F - np.int64(emx[u]))
        if sticky:
            t = (t << 1) | (1 if lost else 0)
        S[u] = -t if neg[u] else t
        S32[u] = 0
    for kk in range(L):          # every product, aligned (truncated magnitude) and summed
        if ng > 1 and ((kk >> 1) % ng) != g:
            continue
        k = np.uint64(k0 + kk)
        if narrow:               # a zero product adds 0 whatever its shift, so none is selected
            a_s32 = np.int32(sa[i, k])
            off32 = np.int32(roff - ea[i, k])
            G32 = np.int32(G)
            if narrow_sum:       # (two loops: a store to S32 or S chosen inside one stops its vectorisation)
                for u in range(ul):
                    S32[u] += _term32(a_s32, sb[k, uj0 + u], off32, emx[u], eb[k, uj0 + u], G32, sticky)
            else:
                for u in range(ul):
                    S[u] += np.int64(_term32(a_s32, sb[k, uj0 + u], off32, emx[u], eb[k, uj0 + u], G32, sticky))
            continue
        a_s = np.int64(sa[i, k])
        a_e = np.int64(ea[i, k])
        for u in range(ul):
            p = a_s * np.int64(sb[k, uj0 + u])
            e = a_e + np.int64(eb[k, uj0 + u])
            r = np.int64(emx[u]) + roff - (e if p != 0 else ezp)
            r = r if r < 63 else 63
            m = (p if p >= 0 else -p) << G
            t = m >> r
            if sticky:
                t = (t << 1) | (1 if (m & ((np.int64(1) << r) - 1)) != 0 else 0)
            S[u] += t if p >= 0 else -t
    for u in range(ul):          # rounded to the result format
        neg_r, keep, qq, inf = round_int(S[u] + np.int64(S32[u]), np.int64(emx[u]) - F - st, pr, eminr, emaxr,
                                         mode, flush)
        neg[u] = neg_r
        mag[u] = keep
        q[u] = qq
        bad[u] |= inf


@numba.njit(cache=True, parallel=True)
def tfdpa_gemm_lanes(sa, ea, sb, eb, row_special, col_special, acc, prm):
    """:func:`tfdpa_gemm` for the models of :func:`lane_eligible`, with up to
    prm[P_TJ] outputs of a row computed side by side (:func:`_lane_block`): the same
    bits, several times faster.  Interleaved groups are chained in order within a
    block; with c late the block's groups start from 0 and c is added by
    :func:`add_round` in the late rounding mode.

    ``sb, eb`` must be C-ordered (Kp, Np) (B's own layout), so that the lanes of one
    step are consecutive in memory; Np >= N columns, those beyond N zero padding up
    to a multiple of :data:`LANE_PAD` (computed, never written: whole vectors, no
    scalar remainder loop).  ``row_special[i]`` / ``col_special[j]`` (int8)
    mark rows of A and columns of B holding Inf/NaN; their outputs, outputs whose C
    is Inf/NaN and outputs whose chain overflows are recomputed by the scalar
    :func:`_accumulate`, which handles every special case (Xie et al. Section 4.2).
    """
    M, Kp = sa.shape
    N = acc.shape[1]
    Np = sb.shape[1]
    L = prm[P_L]
    nblocks = Kp // L
    TI = prm[P_TI]
    TJ = (prm[P_TJ] + LANE_PAD - 1) // LANE_PAD * LANE_PAD
    BC = prm[P_BC]
    accmode = prm[P_ACCMODE]
    nprom = 1 if accmode == ACC_OUTSIDE else (prm[P_PROMOTE] if accmode == ACC_PROMOTE else nblocks)
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    ng = prm[P_NG]
    F = prm[P_F] if ng == 1 else prm[P_GF]
    c_late = prm[P_CLATE] != 0
    late_mode = prm[P_LATEMODE]
    fast = fast_eligible(prm)
    n_it = (M + TI - 1) // TI
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(n_it * n_jt):
        i0, ti, j0, nl, nv = lane_tile(t, n_jt, TI, TJ, M, N, Np)
        neg = np.zeros((ti, nv), dtype=np.bool_)
        mag = np.zeros((ti, nv), dtype=np.int64)
        q = np.zeros((ti, nv), dtype=np.int64)
        bad = np.zeros((ti, nv), dtype=np.bool_)
        total = np.zeros((ti, nv))        # the fp32 accumulator (modes 1 and 2)
        emx = np.empty(nv, dtype=np.int32)
        S = np.empty(nv, dtype=np.int64)
        S32 = np.empty(nv, dtype=np.int32)
        pneg = np.zeros(nv, dtype=np.bool_)   # the block's products alone (c late)
        pmag = np.zeros(nv, dtype=np.int64)
        pq = np.zeros(nv, dtype=np.int64)
        for ii in range(ti):
            lanes_from_c(acc, i0 + ii, j0, nl, row_special, col_special, mc, eminc, neg[ii], mag[ii], q[ii],
                         bad[ii])
            if accmode != ACC_CHAIN:                  # partial chains start from 0, C waits in the fp32 total
                for u in range(nl):
                    total[ii, u] = acc[i0 + ii, j0 + u]
                    neg[ii, u] = False
                    mag[ii, u] = 0
        for b0 in range(0, nblocks, BC):
            b1 = min(nblocks, b0 + BC)
            for ii in range(ti):
                if row_special[i0 + ii] != 0:
                    continue
                rneg, rmag, rq, rbad = neg[ii], mag[ii], q[ii], bad[ii]
                tneg, tmag, tq = (pneg, pmag, pq) if c_late else (rneg, rmag, rq)
                for blk in range(b0, b1):
                    if c_late:
                        tneg[:] = False
                        tmag[:] = 0
                    for g in range(ng):     # the groups chained in order (one group: the block)
                        _lane_block(sa, ea, sb, eb, i0 + ii, j0, nv, blk * L, L, g, ng, tneg, tmag, tq, emx, S,
                                    S32, ezp, F, fp, sticky, eminc, pr, eminr, emaxr, mode, flush, rbad)
                    if c_late:              # c added to the block's sum, rounded on its own
                        for u in range(np.uint64(nv)):
                            neg_r, keep, qq, inf = add_round(tneg[u], tmag[u], tq[u], rneg[u], rmag[u], rq[u],
                                                             pr, eminr, emaxr, late_mode, flush)
                            rneg[u] = neg_r
                            rmag[u] = keep
                            rq[u] = qq
                            rbad[u] |= inf
                    if accmode != ACC_CHAIN and ((blk + 1) % nprom == 0 or blk + 1 == nblocks):
                        for u in range(nv):
                            total[ii, u] = exact_add(total[ii, u], lane_value(neg[ii, u], mag[ii, u], q[ii, u]),
                                                     _FP32_ACC[0], _FP32_ACC[1], _FP32_ACC[2], 0, False)
                            neg[ii, u] = False
                            mag[ii, u] = 0
        for ii in range(ti):
            i = i0 + ii
            for u in range(nl):
                j = j0 + u
                if bad[ii, u]:
                    acc[i, j] = _accumulate(sa, ea, sb, eb, i, j, np.int64(0), nblocks, acc[i, j], 0.0, prm, fast)[0]
                elif accmode != ACC_CHAIN:
                    acc[i, j] = total[ii, u]
                else:
                    acc[i, j] = lane_value(neg[ii, u], mag[ii, u], q[ii, u])


@numba.njit(cache=True, parallel=True)
def tfdpa_rows(sa, ea, sb, eb, acc, prm):
    """Batched dot products: acc[r] <- chain of blocks over row r of A (``sa, ea``:
    (n, Kp)) and column r of B (``sb, eb``: (Kp, n), indexed ``[k, r]``)."""
    n, K = sa.shape
    L = prm[P_L]
    fast = fast_eligible(prm)
    for r in numba.prange(n):
        i = np.int64(r)    # prange's index is unsigned: one compiled _chain for every caller
        acc[r] = _chain(sa, ea, sb, eb, i, i, np.int64(0), K // L, acc[r], prm, fast)


def _i32_binary(name: str):  # type: ignore[no-untyped-def]
    """An intrinsic computing one LLVM i32 instruction (``mul``, ``shl``, ``ashr``) on the
    low 32 bits of two integers, typed int32.  numba widens int32 arithmetic to int64;
    LLVM cannot narrow a variable shift back (it may shift out bits an i32 would
    lose), so the lane kernels' narrow path spells its 32-bit steps with these: a
    vector then holds twice the lanes.  Shift counts must lie in 0..31 (LLVM: poison
    otherwise)."""

    @intrinsic
    def op(typingctx, a, b):  # type: ignore[no-untyped-def]
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            return None
        sig = types.int32(a, b)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            i32 = ir.IntType(32)
            x, y = (builder.trunc(v, i32) if v.type.width > 32 else v for v in args)
            return getattr(builder, name)(x, y)

        return sig, codegen

    return op


mul32 = _i32_binary("mul")
shl32 = _i32_binary("shl")
ashr32 = _i32_binary("ashr")


# ------------------------------------------------------------------------ FMA
@intrinsic
def _fma(typingctx, a, b, c):
    """LLVM ``fma`` on three floats of one type: the IEEE fused multiply-add of
    binary32 or binary64, rounded once to nearest even (one ``vfmadd`` per lane when
    LLVM vectorises it; never reassociated)."""
    if not (isinstance(a, types.Float) and a == b and b == c):
        return None
    sig = a(a, b, c)

    def codegen(context, builder, signature, args):
        t = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)

    return sig, codegen


#: How an FMA chain rounds each step (:func:`fma_step`): the hardware FMA of binary64
#: or binary32, or - for the narrower formats, whose products are exact in binary64 -
#: the exact product plus the accumulator correctly rounded to the format (RNE).
FMA_FP64, FMA_FP32, FMA_ROUNDED = 0, 1, 2


def fma_code(fmt: FloatFormat) -> tuple[int, int, int, int]:
    """``(how, p, emin, emax)`` of an FMA chain computing in the format ``fmt``
    (:data:`FMA_FP64`, :data:`FMA_FP32` or :data:`FMA_ROUNDED`)."""
    how = FMA_FP64 if fmt.name == "fp64" else FMA_FP32 if fmt.name == "fp32" else FMA_ROUNDED
    if how == FMA_ROUNDED and 2 * fmt.p > 53:
        raise ValueError(f"an FMA chain in {fmt.name} (p = {fmt.p}) needs products exact in binary64 (2p <= 53)")
    return how, fmt.p, fmt.emin, fmt.emax


@numba.njit(cache=True, inline="always")
def fma_step(a, b, d, how, p, emin, emax):
    """One step of an FMA chain: ``RNE(a * b + d)`` in the chain's format (float64
    operands exactly in it, float64 result).  A NaN result carries the NaN
    :func:`~workbench.engine.nans.fma_nan` picks (MMA-Sim's ``std::fma``)."""
    x = np.float64(a)
    y = np.float64(b)
    z = np.float64(d)
    if how == FMA_FP64:
        r = _fma(x, y, z)
    elif how == FMA_FP32:
        r = np.float64(_fma(np.float32(x), np.float32(y), np.float32(z)))
    else:
        r = exact_add(x * y, z, p, emin, emax, RNE, False)   # x * y exact: 2p <= 53 bits
    if r != r:
        r = fma_nan(x, y, z)
        if how == FMA_FP32:
            r = np.float64(np.float32(r))
    return r


@numba.njit(cache=True, parallel=True)
def copy_exact(x, out):
    """``out <- x`` (float64 (R, C) into float64 or float32 ``out`` of the same shape)
    in one compiled pass; returns the C-order index of the first value of ``x`` the
    cast changes (NaN is kept), or -1.  Each row is cast and checked branch-free (one
    flag per row, vector instructions); only a row that fails is searched."""
    R, C = x.shape
    first = np.full(R, -1, dtype=np.int64)
    for i in numba.prange(R):
        changed = False
        for k in range(C):
            v = x[i, k]
            out[i, k] = v
            w = float(out[i, k])
            changed |= (w != v) & (v == v)
        if changed:
            for k in range(C):
                v = x[i, k]
                if float(out[i, k]) != v and v == v:
                    first[i] = np.int64(i) * C + k
                    break
    for i in range(R):
        if first[i] >= 0:
            return first[i]
    return np.int64(-1)


@numba.njit(cache=True)
def fma_chain(A, B, i, j, d, how, p, emin, emax):
    """The FMA chain of output (i, j) from ``d``: row i of ``A`` (M, K), column j of
    ``B`` (K, N) (any layout), k in order (Xie et al. Algorithm 4)."""
    for k in range(A.shape[1]):
        d = fma_step(A[i, k], B[k, j], d, how, p, emin, emax)
    return d


@numba.njit(cache=True, parallel=True)
def fma_gemm(A, B, acc, how, p, emin, emax):
    """Chain of FMAs over k for every output (Xie et al. Algorithm 4), one output
    at a time: ``A`` (M, K), ``B`` (K, N) in any layout (the transpose of a C-ordered
    B^T walks each chain contiguously), ``acc`` (M, N) float64, C on entry.  NaN
    passes through the rest of a chain unchanged."""
    M = A.shape[0]
    N = acc.shape[1]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        acc[i, j] = fma_chain(A, B, i, j, acc[i, j], how, p, emin, emax)


#: Rows of A in one register block of :func:`fma_gemm_lanes`, and elements of K one
#: pass over a panel of B covers (kept in L1 cache while every row block uses it).
FMA_MR = 4
FMA_KC = 64
#: Bytes ahead of the row of B in use that :func:`_fma_block` asks the cache for (one
#: prefetch per vector and step; the hardware's own prefetcher fell behind on long K:
#: 10 x 1,000,000 x 10 ran at 15 GB/s without, 26-40 GB/s with).
FMA_PREFETCH = 4096


def _splat(builder, x, vt):  # type: ignore[no-untyped-def]
    """The scalar ``x`` in every lane of the vector type ``vt``."""
    x = builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(x, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vt.count), [0] * vt.count))


def _loop(builder, name, lo, hi, init):  # type: ignore[no-untyped-def]
    """Open a counted loop ``for k in range(lo, hi)`` carrying the values ``init``:
    returns (k, their phis, the function that closes the body with the next values
    and leaves the builder after the loop, where the phis hold the final values)."""
    i64 = ir.IntType(64)
    pre = builder.block
    head = builder.append_basic_block(f"{name}_head")
    body = builder.append_basic_block(f"{name}_body")
    done = builder.append_basic_block(f"{name}_done")
    builder.branch(head)
    builder.position_at_end(head)
    k = builder.phi(i64)
    k.add_incoming(lo, pre)
    phis = []
    for x in init:
        phis.append(builder.phi(x.type))
        phis[-1].add_incoming(x, pre)
    builder.cbranch(builder.icmp_signed("<", k, hi), body, done)
    builder.position_at_end(body)

    def close(values):  # type: ignore[no-untyped-def]
        k.add_incoming(builder.add(k, ir.Constant(i64, 1)), builder.block)
        for ph, x in zip(phis, values):
            ph.add_incoming(x, builder.block)
        builder.branch(head)
        builder.position_at_end(done)
        return phis

    return k, phis, close


def _fma_block(nv: int):  # type: ignore[no-untyped-def]
    """The register block of :func:`fma_gemm_lanes` with ``nv`` vectors of B (one vector:
    64 bytes, 8 binary64 or 16 binary32 lanes), as an LLVM-level intrinsic:
    ``fma_block(A, B, T, i0, t0, j0, k0, k1)`` runs, for k = k0 .. k1-1 in order,
    ``T[t0 + r, u] <- fma(A[i0 + r, k], B[k, j0 + u], T[t0 + r, u])`` for the
    :data:`FMA_MR` rows r and the ``nv`` vectors of lanes u, all FMA_MR x nv
    accumulators held in vector registers through the whole pass (one ``vfmadd`` per
    vector and step: ``llvm.fma`` on vectors, one rounding per step, never reassociated).
    ``A`` (M, K), ``B`` (K, N) and ``T`` are C-ordered of one float dtype; rows of A
    beyond M read row M-1 and lanes of B beyond N read 0 (masked loads), so their
    lanes of T are computed but mean nothing."""
    MR = FMA_MR

    @intrinsic
    def fma_block(typingctx, A, B, T, i0, t0, j0, k0, k1):  # type: ignore[no-untyped-def]
        if not all(isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C" and x.dtype == A.dtype
                   for x in (A, B, T)) or not isinstance(A.dtype, types.Float):
            return None
        sig = types.void(A, B, T, types.int64, types.int64, types.int64, types.int64, types.int64)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            A_, B_, T_ = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:3], args[:3]))
            i0v, t0v, j0v, k0v, k1v = args[3:]
            i64 = ir.IntType(64)
            M, K = (builder.extract_value(A_.shape, d) for d in (0, 1))
            N = builder.extract_value(B_.shape, 1)
            NT = builder.extract_value(T_.shape, 1)
            ft = context.get_value_type(signature.args[0].dtype)
            W = 512 // signature.args[0].dtype.bitwidth
            vt = ir.VectorType(ft, W)
            mt = ir.VectorType(ir.IntType(1), W)
            bits = signature.args[0].dtype.bitwidth

            def declare(name, fnty):  # type: ignore[no-untyped-def]
                fn = builder.module.globals.get(name)
                return fn if fn is not None else ir.Function(builder.module, fnty, name)

            fma = declare(f"llvm.fma.v{W}f{bits}", ir.FunctionType(vt, [vt, vt, vt]))
            mload = declare(f"llvm.masked.load.v{W}f{bits}.p0",
                            ir.FunctionType(vt, [vt.as_pointer(), ir.IntType(32), mt, vt]))
            const = lambda v: ir.Constant(i64, v)  # noqa: E731
            last = builder.sub(M, const(1))
            rows = []
            for r in range(MR):
                i = builder.add(i0v, const(r))
                rows.append(builder.gep(A_.data, [builder.mul(builder.select(builder.icmp_signed("<", i, M), i, last),
                                                             K)]))
            vi64 = ir.VectorType(i64, W)

            def splat(x, t):  # type: ignore[no-untyped-def]
                return _splat(builder, x, t)

            lanes = builder.add(splat(j0v, vi64), ir.Constant(vi64, list(range(W))))
            n_vec = splat(N, vi64)
            masks = [builder.icmp_signed("<", builder.add(lanes, ir.Constant(vi64, [v * W] * W)), n_vec)
                     for v in range(nv)]
            tptr = [[builder.bitcast(builder.gep(T_.data, [builder.add(builder.mul(builder.add(t0v, const(r)), NT),
                                                                      const(v * W))]), vt.as_pointer())
                     for v in range(nv)] for r in range(MR)]
            init = [builder.load(tptr[r][v], align=1) for r in range(MR) for v in range(nv)]
            k, accs, close = _loop(builder, "fma_block", k0v, k1v, init)
            brow = builder.gep(B_.data, [builder.add(builder.mul(k, N), j0v)])
            zero = ir.Constant(vt, [0.0] * W)
            i8p = ir.IntType(8).as_pointer()
            i32 = lambda v: ir.Constant(ir.IntType(32), v)  # noqa: E731
            prefetch = declare("llvm.prefetch.p0", ir.FunctionType(ir.VoidType(), [i8p, i32(0).type, i32(0).type,
                                                                                 i32(0).type]))
            for v in range(nv):     # read, keep in all caches, data
                builder.call(prefetch, [builder.gep(builder.bitcast(brow, i8p), [const(FMA_PREFETCH + 64 * v)]),
                                        i32(0), i32(3), i32(1)])
            bv = [builder.call(mload, [builder.bitcast(builder.gep(brow, [const(v * W)]), vt.as_pointer()),
                                       ir.Constant(ir.IntType(32), 1), masks[v], zero]) for v in range(nv)]
            new = []
            for r in range(MR):
                a = splat(builder.load(builder.gep(rows[r], [k])), vt)
                new += [builder.call(fma, [a, bv[v], accs[r * nv + v]]) for v in range(nv)]
            accs = close(new)
            for r in range(MR):
                for v in range(nv):
                    builder.store(accs[r * nv + v], tptr[r][v], align=1)
            return context.get_dummy_value()

        return sig, codegen

    return fma_block


_fma_block1, _fma_block2, _fma_block4 = _fma_block(1), _fma_block(2), _fma_block(4)


@numba.njit(cache=True, inline="always")
def fma_panel(p, nvec):
    """Panel ``p`` of :func:`fma_gemm_lanes` over ``nvec`` vectors of columns:
    ``(first vector, vectors)`` - panels of 4 vectors, then one of 2 and one of 1 for
    the rest, so that no vector is wholly beyond N."""
    n4 = nvec // 4
    if p < n4:
        return 4 * p, 4
    if p == n4 and nvec % 4 >= 2:
        return 4 * n4, 2
    return nvec - 1, 1


@numba.njit(cache=True)
def fma_panels(N, itemsize):
    """Panels of :func:`fma_gemm_lanes` (:func:`fma_panel`) for N columns of
    ``itemsize``-byte floats, and the vectors of 64 bytes they cover."""
    nvec = (N + 64 // itemsize - 1) // (64 // itemsize)
    return nvec // 4 + (nvec % 4) // 2 + nvec % 2, nvec


@numba.njit(cache=True, parallel=True)
def fma_gemm_lanes(A, B, acc, how, groups):
    """:func:`fma_gemm` for binary64 or binary32 chains (``A`` (M, K) and ``B`` (K, N)
    C-ordered, both float64 or both float32), many outputs side by side, each chain
    still one FMA per k in order: the same bits, many times faster.

    The outputs are cut into panels of 1, 2 or 4 vectors of columns (:func:`fma_panel`)
    times ``groups`` groups of rows, one task each (``groups`` * panels >= threads keeps
    every thread busy).  A task walks K in passes of :data:`FMA_KC`; each pass runs
    every register block of :data:`FMA_MR` rows (:func:`_fma_block`) over the same
    slice of B.  Outputs whose chain ends in NaN are recomputed by :func:`fma_chain`,
    which picks MMA-Sim's NaN (the vector FMA's NaN is the processor's)."""
    M, K = A.shape
    N = acc.shape[1]
    W = 64 // A.itemsize
    n_p, nvec = fma_panels(N, A.itemsize)
    nb = (M + FMA_MR - 1) // FMA_MR
    for t in numba.prange(n_p * groups):
        g = t // n_p
        v0, nv = fma_panel(t - g * n_p, nvec)
        j0 = v0 * W
        b0 = g * nb // groups
        i0 = b0 * FMA_MR
        rows = ((g + 1) * nb // groups - b0) * FMA_MR
        ni = min(M, i0 + rows) - i0
        nl = min(N, j0 + nv * W) - j0
        T = np.zeros((rows, nv * W), dtype=A.dtype)
        for r in range(ni):
            for u in range(nl):
                T[r, u] = acc[i0 + r, j0 + u]
        for k0 in range(0, K, FMA_KC):
            k1 = min(K, k0 + FMA_KC)
            for b in range(0, rows, FMA_MR):
                if nv == 4:
                    _fma_block4(A, B, T, i0 + b, b, j0, k0, k1)
                elif nv == 2:
                    _fma_block2(A, B, T, i0 + b, b, j0, k0, k1)
                else:
                    _fma_block1(A, B, T, i0 + b, b, j0, k0, k1)
        for r in range(ni):
            for u in range(nl):
                v = float(T[r, u])
                if v != v:
                    v = fma_chain(A, B, i0 + r, j0 + u, acc[i0 + r, j0 + u], how, 0, 0, 0)
                acc[i0 + r, j0 + u] = v


#: Rows of one task of :func:`fma_rows` (its vector lanes), and elements of K it
#: transposes into a buffer at a time.
_FMA_ROWS = 64
_FMA_ROWS_KC = 64


@numba.njit(cache=True)
def _fma_rows_task(a, b, acc, r0, nr, T):
    """Rows ``r0 .. r0+nr-1`` of :func:`fma_rows` side by side in ``T`` (float64 or
    float32, length :data:`_FMA_ROWS`): chunks of a and b are transposed into
    buffers so that one step of every chain is one vector FMA over the rows."""
    K = a.shape[1]
    R = T.shape[0]
    ta = np.zeros((_FMA_ROWS_KC, R), dtype=T.dtype)
    tb = np.zeros((_FMA_ROWS_KC, R), dtype=T.dtype)
    for u in range(nr):
        T[u] = acc[r0 + u]
    for k0 in range(0, K, _FMA_ROWS_KC):
        kc = min(K, k0 + _FMA_ROWS_KC) - k0
        for u in range(nr):
            for kk in range(kc):
                ta[kk, u] = a[r0 + u, k0 + kk]
                tb[kk, u] = b[r0 + u, k0 + kk]
        for kk in range(kc):
            for u in range(R):
                T[u] = _fma(ta[kk, u], tb[kk, u], T[u])


@numba.njit(cache=True, parallel=True)
def fma_rows(a, b, acc, how, p, emin, emax):
    """Batched FMA chains: ``acc[r] <- chain(a[r, :], b[r, :], acc[r])`` for float64
    ``a``, ``b`` (n, K) exactly in the chain's format (:func:`fma_code`), k in order.
    Binary64/binary32 chains run :data:`_FMA_ROWS` rows side by side
    (:func:`_fma_rows_task`); rows ending in NaN are recomputed by :func:`fma_chain`
    (MMA-Sim's NaN)."""
    n, K = a.shape
    for t in numba.prange((n + _FMA_ROWS - 1) // _FMA_ROWS):
        r0 = t * _FMA_ROWS
        nr = min(n, r0 + _FMA_ROWS) - r0
        if how == FMA_ROUNDED:
            for r in range(r0, r0 + nr):
                acc[r] = fma_chain(a, b.T, r, r, acc[r], how, p, emin, emax)
            continue
        T = np.zeros(_FMA_ROWS)
        if how == FMA_FP64:
            _fma_rows_task(a, b, acc, r0, nr, T)
        else:
            T32 = np.zeros(_FMA_ROWS, dtype=np.float32)
            _fma_rows_task(a, b, acc, r0, nr, T32)
            for u in range(nr):
                T[u] = float(T32[u])
        for u in range(nr):
            v = T[u]
            if v != v:
                v = fma_chain(a, b.T, r0 + u, r0 + u, acc[r0 + u], how, p, emin, emax)
            acc[r0 + u] = v


@numba.njit(cache=True, parallel=True)
def add_late(D, C, p, emin, emax, mode, flush):
    """``D <- rho(D + C)`` element by element, correctly rounded once to the format
    (p, emin, emax) in ``mode``: c added after the products (Khattak-Mikaitis Table II,
    "c late"), e.g. ``A @ B + C`` of a BLAS call with beta = 1."""
    M, N = D.shape
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        D[i, j] = exact_add(D[i, j], C[i, j], p, emin, emax, mode, flush)


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


def output_tiles(M: int, N: int, nthreads: int, cols: int = 64) -> tuple[int, int]:
    """(TI, TJ): tiles of at most 32 rows x ``cols`` columns of outputs, enough of them
    to give every thread one."""
    TJ = max(1, min(N, cols))
    n_jt = max(1, -(-N // TJ))  # an empty product (N = 0) still gets one (empty) tile
    n_it = max(1, min(M, -(-nthreads // n_jt)))
    return max(1, min(-(-M // n_it), 32)), TJ


def pack_tfdpa(params: np.ndarray, M: int, N: int, nthreads: int) -> np.ndarray:
    """The parameter vector of :func:`tfdpa_gemm` (:mod:`workbench.engine.layout`):
    a copy of ``params`` with the output tiles for M x N outputs on ``nthreads``."""
    prm = np.array(params, dtype=np.int64, copy=True)
    prm[P_TI], prm[P_TJ] = output_tiles(M, N, nthreads)
    prm[P_BC] = max(1, 256 // max(1, int(params[P_L])))
    return prm


def lane_operands(sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, N: int, emin: int,
                  special: bool = True, pad: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """B in the layout of the lane kernels, and the rows/columns that leave them.

    ``sb, eb`` (Kp, N) indexed ``[k, j]`` in any layout are returned C-ordered with
    zero columns (decomposed zeros, exponent ``emin``) up to a multiple of
    :data:`LANE_PAD` (with ``pad=False`` only C-ordered, the layout of
    :mod:`workbench.engine.vector_chain`; unchanged when they already are), with ``row_special`` (M,)
    and ``col_special`` (N,), int8 flags of the rows of A and columns of B holding
    Inf/NaN (all zero when ``special`` is False: the caller knows there are none)."""
    if not sb.flags.c_contiguous or (pad and sb.shape[1] % LANE_PAD):
        Np = -(-N // LANE_PAD) * LANE_PAD if pad else N
        sbl = np.zeros((sb.shape[0], Np), dtype=sb.dtype)
        ebl = np.full((sb.shape[0], Np), emin, dtype=eb.dtype)
        sbl[:, :N] = sb[:, :N]
        ebl[:, :N] = eb[:, :N]
        sb, eb = sbl, ebl
    if special:
        row_special = np.asarray((ea >= SPECIAL).any(axis=1), dtype=np.int8)
        col_special = np.asarray((eb[:, :N] >= SPECIAL).any(axis=0), dtype=np.int8)
    else:
        row_special = np.zeros(sa.shape[0], dtype=np.int8)
        col_special = np.zeros(N, dtype=np.int8)
    return sb, eb, row_special, col_special


__all__ = [
    "tfdpa_gemm", "tfdpa_gemm_lanes", "tfdpa_step", "lane_operands", "output_tiles", "lane_tile", "lanes_from_c",
    "lane_value", "fma_gemm", "fma_gemm_lanes", "fma_panels", "fma_chain", "fma_step", "fma_code", "fma_rows", "copy_exact", "exact_add", "pack_tfdpa",
    "bit_length", "round_double", "add_scale_exponents", "mul32", "shl32", "ashr32",
]
