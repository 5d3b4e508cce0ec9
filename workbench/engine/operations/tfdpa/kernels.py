"""The compiled kernels of T-FDPA (Xie et al. 2025 Algorithm 7 and Khattak-Mikaitis'
generic block FMA: sticky bit, c early/late, interleaved groups; dispatched by
:mod:`workbench.engine.operations.tfdpa`), parallel over output tiles, blocked over K.

Both GEMM kernels walk tiles of outputs (rows x columns) in parallel; inside a tile they
walk K in chunks of a few hundred elements and, for each chunk, update every output of
the tile, so a chunk of A and B is reused from cache across the tile
(benchmarks/README.md, "The performance diary": the untiled kernel fell to 5e7 MAC/s at
10 x 1,000,000 x 10).

* :func:`tfdpa_gemm_lanes` (the models of :func:`lane_eligible` - every NVIDIA
  T-FDPA and ST-FDPA preset, interleaved fp8 ``mma.sync`` and c-late ones included -
  with at least 4 columns): the outputs of one row of a tile are computed side by
  side, every step of a block a loop over up to 64 lanes that LLVM turns into
  vector instructions (B in its own (K, N) layout, so a step's lanes are
  adjacent); outputs meeting Inf/NaN or overflow are recomputed by the scalar path.
  Chained products of the models
  :func:`workbench.engine.operations.tfdpa.vector_chain.simd_eligible` accepts (the
  NVIDIA fp16/bf16/tf32 presets and Hopper's wgmma fp8 among them) run on the vector
  chain instead (:mod:`workbench.engine.operations.tfdpa.vector_chain`), the same
  arithmetic written as explicit 16-lane LLVM vectors.
* :func:`tfdpa_gemm` (every model): one output at a time, its chain in
  :func:`_chain` - an integer fast path (accumulator kept as sign, significand and
  scale; branch-free block maximum and alignment; ``lzcnt`` rounding) for the
  common models, the general :func:`tfdpa_step` for blocks holding Inf/NaN and for
  interleaved or c-late models.
* :func:`tfdpa_rows`: the row kernel of ``dots``.

Parameters travel as one int64 array (``prm``, laid out by :mod:`workbench.engine.layout`,
tiles set by :func:`pack_tfdpa`) so that a single compiled specialisation serves every
model.  The lane tiling and the 32-bit steps they use are shared
(:mod:`workbench.engine.kernels`).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ...kernels import (LANE_PAD, ashr32, c_exponents, exact_add, lane_value, max_product_exponents, mul32, output_tiles,
                       shl32, tile_lanes)
from ...layout import (  # the one parameter layout (see workbench.engine.layout)
    ACC_CHAIN,
    ACC_OUTSIDE,
    ACC_PROMOTE,
    P_BC,
    P_CLATE,
    P_EMAXRES,
    P_EMINC,
    P_EMINRES,
    P_EZ,
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
    P_ACCMODE,
)
from ...ops import (
    NEG_BIG,
    SPECIAL,
    align_term,
    add_round,
    bit_length,
    round_int,
    shift_lost,
    combine_special,
    decompose_one,
    decompose_small_product,
    round_fixed,
    special_product,
    special_result,
    special_value,
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
def tfdpa_step(sa, ea, sb, eb, i, j, k0, d, prm):
    """One T-FDPA instruction: ``d <- block(a[k0:k0+L], b[k0:k0+L], c=d)``.  Every fused
    sum it rounds gives +0 where it is zero (``+ 0.0``, as MMA-Sim 2.1.1's t_fdpa ends;
    :meth:`~workbench.engine.model.Operation.positive_zero`), so a late c's IEEE addition
    sees the unit's +0, never an underflowed -0."""
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
        return round_fixed(S, emax - F - (1 if sticky else 0), pr, eminr, emaxr, mode, flush) + 0.0   # zeros: +0
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
            # the fused sum's zeros are +0 (Operation.positive_zero), before a late c's IEEE addition sees them
            part = round_fixed(S, emax - gF - (1 if sticky else 0), pr, eminr, emaxr, mode, flush) + 0.0
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
    c_exponents(mag, q, ul, eminc, ezp, emx)
    for kk in range(L):          # the largest product exponent (zero products: ezp), in int32
        if ng > 1 and ((kk >> 1) % ng) != g:
            continue
        max_product_exponents(sa, ea, sb, eb, i, np.uint64(k0 + kk), uj0, ul, ez32, emx)
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
        neg[u] = neg_r & (keep != 0)    # the fused sum's zeros are +0, as tfdpa_step's
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
    M = sa.shape[0]
    N = acc.shape[1]
    TI = prm[P_TI]
    TJ = (prm[P_TJ] + LANE_PAD - 1) // LANE_PAD * LANE_PAD
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(((M + TI - 1) // TI) * n_jt):
        _lanes_tile(np.int64(t), sa, ea, sb, eb, row_special, col_special, acc, prm)


@numba.njit(cache=True)
def _lanes_tile(t, sa, ea, sb, eb, row_special, col_special, acc, prm):
    """Tile ``t`` of :func:`tfdpa_gemm_lanes` (its own function: numba compiles it
    without the parallel passes, which took 123 s over the whole body)."""
    Kp = sa.shape[1]
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
    n_jt = (N + TJ - 1) // TJ
    i0, ti, j0, nl, nv, neg, mag, q, bad = tile_lanes(t, n_jt, TI, TJ, acc, Np, row_special, col_special, mc, eminc)
    total = np.zeros((ti, nv))        # the fp32 accumulator (modes 1 and 2)
    emx = np.empty(nv, dtype=np.int32)
    S = np.empty(nv, dtype=np.int64)
    S32 = np.empty(nv, dtype=np.int32)
    pneg = np.zeros(nv, dtype=np.bool_)   # the block's products alone (c late)
    pmag = np.zeros(nv, dtype=np.int64)
    pq = np.zeros(nv, dtype=np.int64)
    if accmode != ACC_CHAIN:                      # partial chains start from 0, C waits in the fp32 total
        for ii in range(ti):
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


@numba.njit(cache=True)
def tfdpa_small(xa, xb, xc, acc, prm, man_bits, emin, flush, vmax_bits, has_nan, has_inf, out_man_bits, out_emin,
                out_vmax_bits):
    """A small product straight from its operands, on the calling thread
    (:meth:`~workbench.engine.model.Operation.run_small`): ``xa`` (M, K), ``xb`` (K, N)
    and ``xc`` (M, N) are the int64 patterns of float64 A, B and C; A and B are checked
    against the input format and decomposed (:func:`~workbench.engine.ops.decompose_small_product`,
    K zero-padded to whole blocks of L), C is checked against the output format, then
    every output runs its blocks through :func:`_accumulate` - the arithmetic of the
    scalar kernel :func:`tfdpa_gemm`, one chunk of blocks - on ``acc`` (C as float64 on
    entry, D on exit).  Returns the C-order index of the first value of A, B and C that
    is not representable (-1 each where none); ``acc`` is left as it was if any."""
    M, N = acc.shape
    L = prm[P_L]
    sa, ea, sb, eb, bad_a, bad_b, bad_c = decompose_small_product(xa, xb, xc, L, man_bits, emin, flush, vmax_bits,
                                                                  has_nan, has_inf, out_man_bits, out_emin,
                                                                  out_vmax_bits)
    if bad_a >= 0 or bad_b >= 0 or bad_c >= 0:
        return bad_a, bad_b, bad_c
    fast = fast_eligible(prm)
    nblocks = sa.shape[1] // L
    for i in range(M):
        for j in range(N):
            acc[i, j], _ = _accumulate(sa, ea, sb, eb, i, j, 0, nblocks, acc[i, j], 0.0, prm, fast)
    return bad_a, bad_b, bad_c


def pack_tfdpa(params: np.ndarray, M: int, N: int, nthreads: int) -> np.ndarray:
    """The parameter vector of :func:`tfdpa_gemm` (:mod:`workbench.engine.layout`):
    a copy of ``params`` with the output tiles for M x N outputs on ``nthreads``."""
    prm = np.array(params, dtype=np.int64, copy=True)
    prm[P_TI], prm[P_TJ] = output_tiles(M, N, nthreads)
    prm[P_BC] = max(1, 256 // max(1, int(params[P_L])))
    return prm


__all__ = ["tfdpa_gemm", "tfdpa_gemm_lanes", "tfdpa_rows", "tfdpa_small", "tfdpa_step", "lane_eligible", "fast_eligible", "pack_tfdpa"]
