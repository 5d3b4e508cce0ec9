"""The compiled kernels of GST-FDPA: group-scaled truncated FDPA (Xie et al. 2025,
Algorithm 9, Table 5; dispatched by :mod:`workbench.engine.operations.gstfdpa`).

The MXFP4/NVFP4 instructions of Blackwell and RTX Blackwell (``.block_scale`` with
k64): a block of L = 64 fp4 products is cut into groups of G = 16; each group's dot
product is computed exactly in fixed point (line 3), multiplied by the signed
significands of the two scale factors of its K_block (line 4: UE4M3 scales for
NVFP4, K_block = 16; E8M0 scales, significand 1, for MXFP4, K_block = 32), and
carries the sum of the two scales' exponents (line 5).  The L/G group terms and c
are then aligned at their largest exponent, truncated toward zero to F = 35
fractional bits (sign-magnitude RZ_F), added exactly and converted with rho
(RZ-FP32).  A group all of whose products are zero, or whose scale significands
are zero (a UE4M3 zero scale), is a zero term: it takes part in the maximum exponent
only through the model's ``zero_exponent`` (as does a zero c).  A group whose non-zero
products cancel to a zero sum keeps its scales' exponent e_g in the maximum (MMA-Sim's
``gst_fdpa``: "zeros resulted from summation do not apply e_zero"), so it can push c
and the other groups below the F-bit window.

Special values: a NaN scale factor in the block makes the result NaN (MMA-Sim's
block-scale models check the scales first); then NaN/Inf operands as in Xie
Section 4.2, NaN encoded canonically by ``workbench.gemm``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numba
import numpy as np

from ....numbers import formats as _formats
from ...layout import (  # the one parameter layout (see workbench.engine.layout)
    P_EMAXRES,
    P_EMINC,
    P_EMININ,
    P_EMINRES,
    P_EZ,
    P_F,
    P_FLUSHOUT,
    P_FX,
    P_G,
    P_KB,
    P_L,
    P_MC,
    P_MODE,
    P_PRES,
    P_USE_EZ,
    fused_params,
)

if TYPE_CHECKING:
    from ...model import Model
from ... import kernels as _k
from ...kernels import LANE_PAD, c_exponents, lane_value, tile_lanes
from ...operands import decompose
from ...ops import (
    NEG_BIG,
    SPECIAL,
    align_term,
    combine_special,
    decompose_one,
    decompose_small,
    decompose_small_scaled_product,
    round_fixed,
    round_int,
    shift_floor,
    special_product,
    special_result,
    special_value,
)



@numba.njit(cache=True)
def gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, g, r):
    """Group ``g`` of the block starting at ``k0``: (X, e_g, special?, +inf, -inf, nan, live).

    X is the exact group dot product times the scales' significands, an integer
    whose value is ``X * 2**(e_g - fx)`` with fx = ``r[P_FX]`` fractional bits.
    ``live``: some product of the group and both scale significands are non-zero, so
    e_g takes part in the block's maximum exponent even where X cancels to zero."""
    G = r[P_G]
    emin2 = 2 * r[P_EMININ]
    P = np.int64(0)
    spec = False
    pos = False
    neg = False
    nan = False
    some_product = False
    for jj in range(g * G, (g + 1) * G):
        k = k0 + jj
        e1 = ea[i, k]
        e2 = eb[j, k]
        if e1 >= SPECIAL or e2 >= SPECIAL:
            spec = True
            pos, neg, nan = combine_special(special_product(sa[i, k], e1, sb[j, k], e2), pos, neg, nan)
            continue
        p = np.int64(sa[i, k]) * np.int64(sb[j, k])
        if p != 0:
            P += p << (e1 + e2 - emin2)
            some_product = True
    blk = (k0 + g * G) // r[P_KB]
    if xea[i, blk] >= SPECIAL or xeb[j, blk] >= SPECIAL:
        return np.int64(0), 0, True, False, False, True, False
    X = P * np.int64(xsa[i, blk]) * np.int64(xsb[j, blk])
    live = some_product and xsa[i, blk] != 0 and xsb[j, blk] != 0
    return X, xea[i, blk] + xeb[j, blk], spec, pos, neg, nan, live


@numba.njit(cache=True)
def gst_parts(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, c_sig, c_exp, r, Xs, Es):
    """Fill Xs/Es with the L/G group terms and return (emax, special?, +inf, -inf, nan).

    A NaN scale anywhere in the block gives NaN before any other special value."""
    L = r[P_L]
    G = r[P_G]
    ng = L // G
    ez = r[P_EZ]
    use_ez = r[P_USE_EZ] != 0
    nan_scale = False
    for g in range(ng):
        blk = (k0 + g * G) // r[P_KB]
        if xea[i, blk] >= SPECIAL or xeb[j, blk] >= SPECIAL:
            nan_scale = True
    if nan_scale:
        return NEG_BIG, True, False, False, True
    spec = False
    pos = False
    neg = False
    nan = False
    emax = NEG_BIG
    for g in range(ng):
        X, e, s, p_, n_, nn, live = gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, g, r)
        if s:
            spec = True
            pos = pos or p_
            neg = neg or n_
            nan = nan or nn
        Xs[g] = X
        Es[g] = e
        if live:
            if e > emax:
                emax = e
        elif use_ez and ez > emax:
            emax = ez
    if c_exp >= SPECIAL:
        spec = True
        pos, neg, nan = combine_special(special_value(c_sig), pos, neg, nan)
    elif c_sig != 0:
        if c_exp > emax:
            emax = c_exp
    elif use_ez and ez > emax:
        emax = ez
    return emax, spec, pos, neg, nan


@numba.njit(cache=True)
def gst_step(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, d, r, Xs, Es):
    """One GST-FDPA (Xie Algorithm 9) with c = d."""
    c_sig, c_exp = decompose_one(d, r[P_MC], r[P_EMINC], False)
    emax, spec, pos, neg, nan = gst_parts(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, c_sig, c_exp, r, Xs, Es)
    if spec:
        return special_result(pos, neg, nan)
    if emax == NEG_BIG:
        return 0.0
    F = r[P_F]
    fx = r[P_FX]
    S = np.int64(0)
    for g in range(r[P_L] // r[P_G]):
        X = Xs[g]
        if X != 0:
            t = align_term(X if X > 0 else -X, F - fx + Es[g] - emax, False)
            S += t if X > 0 else -t
    if c_sig != 0:
        m = np.int64(c_sig)
        t = align_term(m if m > 0 else -m, F - r[P_MC] + c_exp - emax, False)
        S += t if m > 0 else -t
    return round_fixed(S, emax - F, r[P_PRES], r[P_EMINRES], r[P_EMAXRES], r[P_MODE], r[P_FLUSHOUT] != 0)


@numba.njit(cache=True)
def gst_chain(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, d, r, Xs, Es):
    """The chain of GST-FDPA blocks over K of output (i, j) from ``d`` (one output at
    a time, every special case; layouts as :func:`gst_gemm`)."""
    L = r[P_L]
    for blk in range(sa.shape[1] // L):
        d = gst_step(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, blk * L, d, r, Xs, Es)
    return d


@numba.njit(cache=True, parallel=True)
def gst_gemm(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r):
    """Chain of GST-FDPA blocks over K for every output, one output at a time,
    parallel over outputs (the reference of :func:`gst_gemm_lanes`, and the kernel for
    fewer than :data:`~workbench.engine.kernels.LANES_MIN_N` columns).

    ``sa, ea`` (M, Kp) and ``sb, eb`` (N', Kp) indexed ``[j, k]`` (any layout, N' >=
    N): decomposed A and B^T; ``xsa, xea`` (M, Kp / k_block) and ``xsb, xeb`` (N',
    Kp / k_block): decomposed scale factors of A's rows and B's columns."""
    M = sa.shape[0]
    N = acc.shape[1]
    ng = r[P_L] // r[P_G]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        Xs = np.zeros(ng, dtype=np.int64)
        Es = np.zeros(ng, dtype=np.int64)
        acc[i, j] = gst_chain(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, acc[i, j], r, Xs, Es)


@numba.njit(cache=True, parallel=True)
def gst_rows(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r):
    """Batched dot products: acc[q] <- chain of GST-FDPA blocks over row q of A and row q
    of B^T (``sa, ea``, ``sb, eb``: (n, Kp); scales ``xsa, xea``, ``xsb, xeb``: (n, Kp /
    k_block)), one output at a time (the probes' consistency search)."""
    n = sa.shape[0]
    ng = r[P_L] // r[P_G]
    for q in numba.prange(n):
        i = np.int64(q)
        Xs = np.zeros(ng, dtype=np.int64)
        Es = np.zeros(ng, dtype=np.int64)
        acc[q] = gst_chain(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, i, acc[q], r, Xs, Es)


@numba.njit(cache=True, inline="always")
def _gst_lane_block(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j0, nv, k0, neg, mag, q, emx, S, Xg, Eg, Og, r, ezp, bad):
    """One GST-FDPA block (k0 .. k0+L-1) for outputs (i, j0 .. j0+nv-1) side by side:
    :func:`gst_step` with the loop over outputs innermost (B, and its scales, in the
    (K, N) layout, so a step's lanes are adjacent).  The lane state ``(neg, mag, q)``
    (c on entry, the rounded result on exit, each ``(-1)**neg * mag * 2**q``) is
    updated in place; ``bad`` is set where the result overflowed to Inf.  Operands
    and scales must be finite (the caller sends other outputs to :func:`gst_chain`)."""
    L = r[P_L]
    G = r[P_G]
    KB = r[P_KB]
    emin2 = 2 * r[P_EMININ]
    F = r[P_F]
    fx = r[P_FX]
    eminc = r[P_EMINC]
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    c_exponents(mag, q, ul, eminc, ezp, emx)
    for g in range(L // G):             # each group's exact sum, times the scales' significands
        for u in range(ul):
            Xg[g, u] = 0
            Og[u] = 0
        for kk in range(g * G, (g + 1) * G):
            k = np.uint64(k0 + kk)
            a_s = np.int64(sa[i, k])
            a_e = np.int64(ea[i, k]) - emin2
            for u in range(ul):
                sh = a_e + np.int64(eb[k, uj0 + u])
                p = a_s * np.int64(sb[k, uj0 + u])
                Xg[g, u] += p << (sh if sh < 63 else 63)
                Og[u] |= p          # non-zero where some product is (the group is live)
        blk = (k0 + g * G) // KB
        xs = np.int64(xsa[i, blk])
        xe = np.int64(xea[i, blk])
        ublk = np.uint64(blk)
        for u in range(ul):
            xsbu = np.int64(xsb[ublk, uj0 + u])
            X = Xg[g, u] * xs * xsbu
            E = xe + np.int64(xeb[ublk, uj0 + u])
            Xg[g, u] = X
            Eg[g, u] = E
            live = Og[u] != 0 and xs != 0 and xsbu != 0
            emx[u] = max(emx[u], E if live else ezp)
    for u in range(ul):                 # c aligned to F fractional bits below the maximum
        t = shift_floor(mag[u], q[u] + F - emx[u])
        S[u] = -t if neg[u] else t
    for g in range(L // G):             # the group terms aligned (truncated magnitude) and summed
        for u in range(ul):
            X = Xg[g, u]
            t = shift_floor(X if X >= 0 else -X, F - fx + Eg[g, u] - emx[u])
            S[u] += t if X >= 0 else -t
    for u in range(ul):                 # rounded to the result format
        neg_r, keep, qq, inf = round_int(S[u], emx[u] - F, r[P_PRES], r[P_EMINRES], r[P_EMAXRES], r[P_MODE],
                                         r[P_FLUSHOUT] != 0)
        neg[u] = neg_r
        mag[u] = keep
        q[u] = qq
        bad[u] |= inf


@numba.njit(cache=True, parallel=True)
def gst_gemm_lanes(sa, ea, sb, eb, xsa, xea, xsb, xeb, row_special, col_special, acc, r, TI, TJ):
    """:func:`gst_gemm` with up to TJ outputs of a row computed side by side
    (:func:`_gst_lane_block`): the same bits, many times faster.

    ``sb, eb`` (Kp, Np) and ``xsb, xeb`` (Kp / k_block, Np) C-ordered (B's own
    layout; Np a multiple of :data:`~workbench.engine.kernels.LANE_PAD`, columns
    beyond N computed, never written), ``xsa, xea`` (M, Kp / k_block).
    ``row_special[i]`` / ``col_special[j]`` (int8) mark rows of A and columns of B
    whose operands or scales hold Inf/NaN; their outputs, outputs whose C is Inf/NaN
    and outputs whose chain overflows are recomputed by :func:`gst_chain`."""
    M = sa.shape[0]
    N = acc.shape[1]
    TJ = (TJ + LANE_PAD - 1) // LANE_PAD * LANE_PAD
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(((M + TI - 1) // TI) * n_jt):
        _gst_lanes_tile(np.int64(t), sa, ea, sb, eb, xsa, xea, xsb, xeb, row_special, col_special, acc, r, TI, TJ)


@numba.njit(cache=True)
def _gst_lanes_tile(t, sa, ea, sb, eb, xsa, xea, xsb, xeb, row_special, col_special, acc, r, TI, TJ):
    """Tile ``t`` of :func:`gst_gemm_lanes` (``TJ`` a multiple of the lane padding; its own
    function: numba compiles it without the parallel passes, several times faster)."""
    Kp = sa.shape[1]
    N = acc.shape[1]
    Np = sb.shape[1]
    L = r[P_L]
    ng = L // r[P_G]
    nblocks = Kp // L
    BC = max(1, 256 // L)               # blocks per chunk of K, reused from cache by every row of a tile
    ezp = r[P_EZ] if r[P_USE_EZ] != 0 else NEG_BIG
    n_jt = (N + TJ - 1) // TJ
    i0, ti, j0, nl, nv, neg, mag, q, bad = tile_lanes(t, n_jt, TI, TJ, acc, Np, row_special, col_special, r[P_MC],
                                                      r[P_EMINC])
    emx = np.empty(nv, dtype=np.int64)
    S = np.empty(nv, dtype=np.int64)
    Xg = np.empty((ng, nv), dtype=np.int64)
    Eg = np.empty((ng, nv), dtype=np.int64)
    Og = np.empty(nv, dtype=np.int64)
    for b0 in range(0, nblocks, BC):
        for ii in range(ti):
            if row_special[i0 + ii] != 0:
                continue
            for blk in range(b0, min(nblocks, b0 + BC)):
                _gst_lane_block(sa, ea, sb, eb, xsa, xea, xsb, xeb, i0 + ii, j0, nv, blk * L, neg[ii], mag[ii],
                                q[ii], emx, S, Xg, Eg, Og, r, ezp, bad[ii])
    Xs = np.zeros(ng, dtype=np.int64)
    Es = np.zeros(ng, dtype=np.int64)
    for ii in range(ti):
        i = i0 + ii
        for u in range(nl):
            j = j0 + u
            if bad[ii, u]:
                acc[i, j] = gst_chain(sa, ea, sb.T, eb.T, xsa, xea, xsb.T, xeb.T, i, j, acc[i, j], r, Xs, Es)
            else:
                acc[i, j] = lane_value(neg[ii, u], mag[ii, u], q[ii, u])


@numba.njit(cache=True)
def gst_small(xa, xb, xc, scale_a, scale_b, acc, r, check, scale_check):
    """A small GST-FDPA product straight from its operands, on the calling thread
    (:meth:`~workbench.engine.model.Operation.run_small`): ``xa`` (M, K), ``xb`` (K, N)
    and ``xc`` (M, N) the int64 patterns of float64 A, B and C, checked and decomposed,
    and the float64 block scales ``scale_a`` (M, nb) and ``scale_b`` (nb, N) checked
    against the scale format (:func:`~workbench.engine.ops.decompose_small_scaled_product`,
    ``check`` and ``scale_check`` its format arguments); the scales decomposed as
    :func:`scale_operands` does (the padding's scales 1); then every output's chain of blocks (:func:`gst_chain`, the
    arithmetic of :func:`gst_gemm`) on ``acc`` (C on entry, D on exit).  Returns the
    C-order indices of the first value of A, B, C, scale_a and scale_b that is not
    representable (-1 each where none); ``acc`` is left as it was if any."""
    M, N = acc.shape
    L = r[P_L]
    sa, ea, sb, eb, bad = decompose_small_scaled_product(xa, xb, xc, scale_a, scale_b, L, check, scale_check)
    if bad[0] >= 0 or bad[1] >= 0 or bad[2] >= 0 or bad[3] >= 0 or bad[4] >= 0:
        return bad
    nb = scale_a.shape[1]
    nb_pad = sa.shape[1] // r[P_KB]
    xa = np.ones((M, nb_pad))
    xb = np.ones((nb_pad, N))
    xa[:, :nb] = scale_a
    xb[:nb, :] = scale_b
    xsa = np.empty((M, nb_pad), dtype=np.int32)
    xea = np.empty((M, nb_pad), dtype=np.int32)
    xsb = np.empty((nb_pad, N), dtype=np.int32)
    xeb = np.empty((nb_pad, N), dtype=np.int32)
    s_man, s_emin, s_vmax, s_nan, s_inf = scale_check[0], scale_check[1], scale_check[2], scale_check[3], scale_check[4]
    decompose_small(xa.view(np.int64), xsa, xea, False, s_man, s_emin, False, s_vmax, s_nan, s_inf)
    decompose_small(xb.view(np.int64), xsb, xeb, False, s_man, s_emin, False, s_vmax, s_nan, s_inf)
    ng = L // r[P_G]
    Xs = np.zeros(ng, dtype=np.int64)
    Es = np.zeros(ng, dtype=np.int64)
    for i in range(M):
        for j in range(N):
            acc[i, j] = gst_chain(sa, ea, sb.T, eb.T, xsa, xea, xsb.T, xeb.T, i, j, acc[i, j], r, Xs, Es)
    return bad


def gst_params(model) -> np.ndarray:
    """Parameter vector of :func:`gst_gemm` (validates that the sums fit in int64)."""
    fin = model.in_fmt
    sf = _formats.format(model.scale_format)
    out = model.out_fmt
    r = fused_params(model, model.F)
    r[P_G] = model.G
    r[P_KB] = model.k_block
    r[P_EMININ] = fin.emin
    fx = 2 * fin.man_bits - 2 * fin.emin + 2 * sf.man_bits
    r[P_FX] = fx
    # exact group sums: 2p bits, exponent span 2 (emax - emin), G terms, two scale significands
    gbits = 2 * fin.p + 2 * (fin.emax - fin.emin) + int(np.ceil(np.log2(model.G))) + 2 * sf.p
    # aligned terms: the largest group term shifted to F fractional bits at e_max
    tbits = max(gbits - fx + model.F, out.p + model.F - out.man_bits) + int(np.ceil(np.log2(model.L // model.G + 2)))
    if gbits > 62 or tbits > 62:
        raise ValueError(f"GST-FDPA with in_format={model.in_format!r}, scale_format={model.scale_format!r}, "
                         f"G={model.G}, F={model.F}: the fixed-point group sums need {max(gbits, tbits)} bits, "
                         "more than the kernel's 62")
    return r


def scale_operands(model: "Model", Kp: int, Np: int, scale_a: np.ndarray,
                   scale_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The scale factors decomposed for the GST-FDPA kernels (CPU and GPU):
    ``xsa, xea`` (M, Kp / k_block) from ``scale_a`` (M, nb) and ``xsb, xeb``
    (Kp / k_block, Np) from ``scale_b`` (nb, N), the scales of K's and N's padding 1."""
    M, nb = scale_a.shape
    N = scale_b.shape[1]
    nb_pad = Kp // cast(int, model.k_block)
    xa = np.ones((M, nb_pad))
    xb = np.ones((nb_pad, Np))
    xa[:, :nb] = scale_a
    xb[:nb, :N] = scale_b
    sf = _formats.format(cast(str, model.scale_format))   # GSTFDPAParams checked it
    xsa, xea = decompose(xa, sf.man_bits, sf.emin, False)
    xsb, xeb = decompose(xb, sf.man_bits, sf.emin, False)
    return xsa, xea, xsb, xeb


def run_gst(model: "Model", sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, acc: np.ndarray,
            scale_a: np.ndarray, scale_b: np.ndarray, special: bool = True, lanes: bool = True) -> np.ndarray:
    """GST-FDPA over whole matrices on ``acc`` (C on entry, D on exit): ``sa, ea``
    (M, Kp) and ``sb, eb`` (Kp, Np) C-ordered, decomposed A and B with K padded to whole
    blocks of L (:func:`~workbench.engine.operands.decompose_checked`'s lane layout),
    ``scale_a`` (M, nb) and ``scale_b`` (nb, N) the block scales (those of the padding
    are 1).  The lane kernel for at least :data:`~workbench.engine.kernels.LANES_MIN_N`
    columns (unless ``lanes`` is False), the one-output kernel otherwise;
    ``special=False`` promises that no operand is Inf/NaN."""
    r = gst_params(model)
    M, N = acc.shape
    xsa, xea, xsb, xeb = scale_operands(model, sa.shape[1], sb.shape[1], scale_a, scale_b)
    if not lanes or N < _k.LANES_MIN_N:
        gst_gemm(sa, ea, sb.T, eb.T, xsa, xea, xsb.T, xeb.T, acc, r)
        return acc
    sb, eb, row_special, col_special = _k.lane_operands(sa, ea, sb, eb, N, model.in_fmt.emin, special)
    row_special |= (xea >= SPECIAL).any(axis=1)
    col_special |= (xeb[:, :N] >= SPECIAL).any(axis=0)
    TI, TJ = _k.output_tiles(M, N, numba.get_num_threads())
    gst_gemm_lanes(sa, ea, sb, eb, xsa, xea, xsb, xeb, row_special, col_special, acc, r, TI, TJ)
    return acc


__all__ = ["run_gst", "gst_small", "scale_operands", "gst_params", "gst_gemm", "gst_gemm_lanes", "gst_rows", "gst_chain", "gst_step", "gst_parts", "gst_group"]
