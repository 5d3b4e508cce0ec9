"""GST-FDPA: group-scaled truncated FDPA (Xie et al. 2025, Algorithm 9, Table 5).

The MXFP4/NVFP4 instructions of Blackwell and RTX Blackwell (``.block_scale`` with
k64): a block of L = 64 fp4 products is cut into groups of G = 16; each group's dot
product is computed exactly in fixed point (line 3), multiplied by the signed
significands of the two scale factors of its K_block (line 4: UE4M3 scales for
NVFP4, K_block = 16; E8M0 scales, significand 1, for MXFP4, K_block = 32), and
carries the sum of the two scales' exponents (line 5).  The L/G group terms and c
are then aligned at their largest exponent, truncated toward zero to F = 35
fractional bits (sign-magnitude RZ_F), added exactly and converted with rho
(RZ-FP32).  A group whose sum is zero is a zero term: it takes part in the maximum
exponent only through the model's ``zero_exponent`` (as does a zero c).

Special values: a NaN scale factor in the block makes the result NaN (MMA-Sim's
block-scale models check the scales first); then NaN/Inf operands as in Xie
Section 4.2, NaN encoded canonically by ``workbench.gemm``.
"""
from __future__ import annotations

import numba
import numpy as np

from .. import formats as _formats
from .layout import (  # the one parameter layout (see workbench.engine.layout)
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
from .operands import decompose, padded_decomposed
from .ops import (
    NEG_BIG,
    SPECIAL,
    align_term,
    combine_special,
    decompose_one,
    round_fixed,
    special_product,
    special_result,
    special_value,
)



@numba.njit(cache=True)
def gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, g, r):
    """Group ``g`` of the block starting at ``k0``: (X, e_g, special?, +inf, -inf, nan).

    X is the exact group dot product times the scales' significands, an integer
    whose value is ``X * 2**(e_g - fx)`` with fx = ``r[P_FX]`` fractional bits."""
    G = r[P_G]
    emin2 = 2 * r[P_EMININ]
    P = np.int64(0)
    spec = False
    pos = False
    neg = False
    nan = False
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
    blk = (k0 + g * G) // r[P_KB]
    if xea[i, blk] >= SPECIAL or xeb[j, blk] >= SPECIAL:
        return np.int64(0), 0, True, False, False, True
    X = P * np.int64(xsa[i, blk]) * np.int64(xsb[j, blk])
    return X, xea[i, blk] + xeb[j, blk], spec, pos, neg, nan


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
        X, e, s, p_, n_, nn = gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, k0, g, r)
        if s:
            spec = True
            pos = pos or p_
            neg = neg or n_
            nan = nan or nn
        Xs[g] = X
        Es[g] = e
        if X != 0:
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


@numba.njit(cache=True, parallel=True)
def gst_gemm(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r):
    """Chain of GST-FDPA blocks over K for every output, parallel over outputs.

    ``xsa, xea`` (M, K / k_block) and ``xsb, xeb`` (N, K / k_block): decomposed
    scale factors of A's rows and B's columns."""
    M, K = sa.shape
    N = sb.shape[0]
    L = r[P_L]
    ng = L // r[P_G]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        Xs = np.zeros(ng, dtype=np.int64)
        Es = np.zeros(ng, dtype=np.int64)
        d = acc[i, j]
        for blk in range(K // L):
            d = gst_step(sa, ea, sb, eb, xsa, xea, xsb, xeb, i, j, blk * L, d, r, Xs, Es)
        acc[i, j] = d


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


def run_gst(model, A, BT, acc, scale_a, scale_b):
    """GST-FDPA over whole matrices: K and the scales padded to whole blocks of L."""
    r = gst_params(model)
    M, K = A.shape
    kb = model.k_block
    A2, BT2, sa, ea, sb, eb = padded_decomposed(model, A, BT, model.L)
    nb_pad = A2.shape[1] // kb
    xa = np.ones((M, nb_pad))
    xb = np.ones((BT2.shape[0], nb_pad))
    nb = scale_a.shape[1]
    xa[:, :nb] = scale_a
    xb[:, :nb] = np.asarray(scale_b).T
    sf = _formats.format(model.scale_format)
    xsa, xea = decompose(xa, sf.man_bits, sf.emin, False)
    xsb, xeb = decompose(xb, sf.man_bits, sf.emin, False)
    gst_gemm(sa, ea, sb, eb, xsa, xea, xsb, xeb, acc, r)
    return acc


__all__ = ["run_gst", "gst_params", "gst_gemm", "gst_step", "gst_parts", "gst_group"]
