"""E-FDPA, TR-FDPA and GTR-FDPA: the fused dot products of AMD's matrix cores.

Xie et al. 2025 (MMA-Sim), Section 4.1.3:

* **E-FDPA** (Algorithm 6; CDNA1 bf16 L = 2 and fp16 L = 4, Table 6): ``c`` plus the
  L exact products, summed exactly and rounded once (RNE-FP32 on CDNA1; the model's
  ``rounding`` in general).  The exact sum is kept in a fixed-point accumulator of
  30-bit limbs wide enough for every product and every ``c`` of the formats, so no
  bit is ever lost before the single rounding (:func:`efdpa_step`).  The lane kernel
  :func:`efdpa_gemm_lanes` sums a block in one int64 instead wherever its terms fit
  a 62-bit window (the common case), and uses the limbs for the blocks that do not.
  For units rounding to fp32 to nearest even (CDNA1's), :func:`efdpa_gemm_simd` (on the
  explicit vectors of :mod:`workbench.engine.vector_chain`) and
  :func:`efdpa_rows_float` sum in binary64 instead: TwoSum of the exact products,
  then c added and rounded to odd, which the fp32 conversion rounds correctly.
* **TR-FDPA** (Algorithm 10; CDNA3 tf32/bf16/fp16, Table 7: F = 24, F2 = 31,
  RNE-FP32): the L products (not c) are aligned at their largest exponent and
  truncated toward zero to F fractional bits (sign-magnitude ``RZ_F``, line 8) and
  added exactly into T.  Then T and c are aligned at E = max(e_max, e_c) and rounded
  *down* (toward -inf: floor of the two's-complement value, ``RD``) to F2 + 1 and F
  fractional bits respectively (lines 14-15), added, the sum cut down to F2 + 1
  significant bits (:func:`tr_cut`) and converted with rho.  The paper's line 14
  rounds T to F2 bits and has no cut; MMA-Sim 2.1.1 (``arithmetic/fdpa.py``,
  ``tr_fdpa`` and ``gtr_fdpa``: ``floor(s_dot * 2**(F2 + 1))``, then
  ``frexp_and_normalize`` and ``floor(sum * 2**F2)``), its authors' executable model,
  keeps one more bit of T and cuts the normalised sum.  The two differ only where
  that bit decides a tie of rho, about once in 500,000 blocks of normal random fp16
  data (a 64 x 1024 x 64 product shows one output 1 ulp apart); the kernels follow
  MMA-Sim.
* **GTR-FDPA** (Algorithm 11; CDNA3 fp8, Table 7: L = 16): as TR-FDPA, but the
  products of even and of odd index form two truncated fused sums (lines 6-12) that
  are aligned at the larger of their exponents and rounded down to F fractional
  bits before being added (lines 14-17); c is dropped when e_c < E - F - 1 (the
  "special truncation", lines 24-25).

The direction of those re-alignments (Algorithm 10 lines 14-15, Algorithm 11 lines
15-16 and 22-23) is the model's ``alignment_rounding``: ``"rd"`` as CDNA3 does, or
``"rz"`` (toward zero, sign-magnitude) for the hypothetical twin ``Phi'_TR-FDPA`` of
MMA-Sim Section 6.2.4 / Figure 3, whose errors are symmetric.  It is one entry of the
kernels' parameter vector (``P_ARZ``), not a second copy of the kernels.

Special values (Section 4.2): NaN and infinite operands propagate as in IEEE
arithmetic; in TR-/GTR-FDPA a finite product whose magnitude reaches 2**128 (the
fp32 overflow threshold; 2**(emax+1) of the output format in general) becomes an
infinity.  Zero products and a zero c take no part in the maximum exponent unless
the model sets ``zero_exponent`` (MMA-Sim's AMD models give zeros exponent -999).

Representation (see :mod:`workbench.engine.ops`): operands are decomposed into
integer significands with ``man_bits`` fraction bits and exponents; a product is
the integer ``sa * sb`` with ``2 * man_bits`` fraction bits and exponent
``ea + eb``.  Every step below is integer arithmetic on those.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ....numbers.formats import RD, RU, RZ
from ... import kernels as _k
from ... import vector_chain as _vc
from ...kernels import lane_tile, lane_value, lanes_from_c, max_product_exponents, tile_lanes
from ...nans import _bits_from_f64, _f64_from_bits, efdpa_nan
from ...layout import (  # the one parameter layout (see workbench.engine.layout)
    P_ARZ,
    P_BASE,
    P_EMAXRES,
    P_EMINC,
    P_EMINRES,
    P_EZ,
    P_F,
    P_F2,
    P_FLUSHOUT,
    P_FP,
    P_K,
    P_KIND,
    P_L,
    P_MC,
    P_MODE,
    P_NLIMBS,
    P_OVF,
    P_PRES,
    P_USE_EZ,
    fused_params,
)
from ...operands import decompose_checked, padded_decomposed
from ...ops import (
    NEG_BIG,
    SPECIAL,
    align_term,
    bit_length,
    combine_special,
    decompose_one,
    decompose_small_product,
    round_fixed,
    round_int,
    shift_floor,
    special_product,
    special_result,
    special_value,
)

LIMB_BITS = 30
_LIMB_MASK = (1 << LIMB_BITS) - 1

KIND_E, KIND_TR, KIND_GTR = 0, 1, 2
_NO_TERM = 1 << 30     # "no term yet" for the running minimum exponent


# ------------------------------------------------------------------ helpers
@numba.njit(cache=True, inline="always")
def shift_align(x, sh, rz):
    """x * 2**sh cut to an integer: toward -inf (:func:`shift_floor`, the ``RD`` of
    Xie Algorithms 10-11) or, with ``rz``, toward zero (the RZ twin of Figure 3)."""
    flip = rz & (x < 0) & (sh < 0)          # no branches: the lane kernels vectorise it
    y = shift_floor(-x if flip else x, sh)
    return -y if flip else y


@numba.njit(cache=True)
def scan_specials(sa, ea, sb, eb, i, j, k0, L, c_sig, c_exp, fp, ovf):
    """Special outcome of one block of row i of A and column j of B (``sb, eb``
    indexed ``[k, j]``): (special?, +inf, -inf, nan).

    NaN/Inf operands first (Xie Section 4.2); then, if ``ovf`` > 0, finite
    products with |value| >= 2**ovf overflow to infinities (TR-/GTR-FDPA), which
    meet Inf operands and an Inf c as IEEE says: an overflowed +Inf product and a
    -Inf c give NaN (MMA-Sim 2.1.1 ``tr_fdpa``: ``s[overflow] *= inf`` before the
    sums, whatever else is special)."""
    pos = False
    neg = False
    nan = False
    spec = False
    for jj in range(L):
        k = k0 + jj
        e1 = ea[i, k]
        e2 = eb[k, j]
        if e1 >= SPECIAL or e2 >= SPECIAL:
            spec = True
            pos, neg, nan = combine_special(special_product(sa[i, k], e1, sb[k, j], e2), pos, neg, nan)
    if c_exp >= SPECIAL:
        spec = True
        pos, neg, nan = combine_special(special_value(c_sig), pos, neg, nan)
    if nan or ovf <= 0:
        return spec, pos, neg, nan
    for jj in range(L):
        k = k0 + jj
        if ea[i, k] >= SPECIAL or eb[k, j] >= SPECIAL:
            continue
        p = np.int64(sa[i, k]) * np.int64(sb[k, j])
        if p == 0:
            continue
        m = p if p > 0 else -p
        if bit_length(m) - 1 + ea[i, k] + eb[k, j] - fp >= ovf:
            spec = True
            if p > 0:
                pos = True
            else:
                neg = True
    return spec, pos, neg, nan


# ------------------------------------------------------------------ E-FDPA
@numba.njit(cache=True, inline="always")
def _limb_add(limbs, m, neg, off):
    """limbs += (-1)**neg * m * 2**off  (m >= 0, off >= 0), every limb gets < 2**30."""
    q = off // LIMB_BITS
    r = off - q * LIMB_BITS
    while m != 0:
        v = (m & _LIMB_MASK) << r
        m >>= LIMB_BITS
        lo = v & _LIMB_MASK
        hi = v >> LIMB_BITS
        if neg:
            limbs[q] -= lo
            limbs[q + 1] -= hi
        else:
            limbs[q] += lo
            limbs[q + 1] += hi
        q += 1


@numba.njit(cache=True)
def limb_round(limbs, base, p, emin, emax, mode, flush):
    """Round the exact value ``sum(limbs[i] * 2**(30 i + base))`` once to the format
    (p, emin, emax) in ``mode``.  The limbs are normalised in place (sign handled by
    two's complement); the leading 61 bits and a sticky bit go to
    :func:`~workbench.engine.ops.round_fixed`, which is exact for p <= 59.  Overflow
    follows IEEE 754 (E-FDPA is an exact operation rounded once, Xie Algorithm 6):
    RZ, and RD/RU away from the overflow's sign, give the largest finite value."""
    n = limbs.size
    carry = np.int64(0)
    for t in range(n):
        v = limbs[t] + carry
        carry = v >> LIMB_BITS
        limbs[t] = v & _LIMB_MASK
    neg = carry < 0
    if neg:  # magnitude = 2**(30 n) - X = sum((mask - limb) 2**(30 t)) + 1
        carry = np.int64(1)
        for t in range(n):
            v = (_LIMB_MASK - limbs[t]) + carry
            carry = v >> LIMB_BITS
            limbs[t] = v & _LIMB_MASK
    top = n - 1
    while top >= 0 and limbs[top] == 0:
        top -= 1
    if top < 0:
        return 0.0
    S = limbs[top]
    bits = bit_length(S)
    t = top - 1
    while t >= 0 and bits + LIMB_BITS <= 61:
        S = (S << LIMB_BITS) | limbs[t]
        bits += LIMB_BITS
        t -= 1
    lsb = LIMB_BITS * (t + 1)
    if t >= 0:
        take = 61 - bits
        rest = limbs[t]
        if take > 0:
            S = (S << take) | (limbs[t] >> (LIMB_BITS - take))
            rest = limbs[t] & ((np.int64(1) << (LIMB_BITS - take)) - 1)
        lsb = LIMB_BITS * t + LIMB_BITS - take
        sticky = rest != 0
        u = t - 1
        while u >= 0 and not sticky:
            sticky = limbs[u] != 0
            u -= 1
        S = (S << 1) | (1 if sticky else 0)
        lsb -= 1
    r = round_fixed(-S if neg else S, base + lsb, p, emin, emax, mode, flush)
    if math.isinf(r) and (mode == RZ or (mode == RD and not neg) or (mode == RU and neg)):
        # IEEE 754 Sec. 7.4: directed roundings away from the overflow give the largest finite value
        big = math.ldexp(2.0 - math.ldexp(1.0, 1 - p), emax)
        r = -big if neg else big
    return r


@numba.njit(cache=True)
def efdpa_step(A, BT, sa, ea, sb, eb, i, j, k0, d, q, limbs):
    """One E-FDPA (Xie Algorithm 6): rho(c + sum of the L exact products).  A NaN
    result carries the payload :func:`~workbench.engine.nans.efdpa_nan` selects from
    the float64 operands ``A``, ``BT`` (the block's real products: those below
    ``q[P_K]``, as MMA-Sim sums a last block shorter than L)."""
    L = q[P_L]
    fp = q[P_FP]
    mc = q[P_MC]
    c_sig, c_exp = decompose_one(d, mc, q[P_EMINC], False)
    spec, pos, neg, nan = scan_specials(sa, ea, sb, eb, i, j, k0, L, c_sig, c_exp, fp, 0)
    if spec:
        if nan or (pos and neg):    # Inf - Inf too: the fold's default NaN (efdpa_nan), not +NaN
            return efdpa_nan(A, BT, i, j, k0, max(0, min(L, q[P_K] - k0)), d)
        return special_result(pos, neg, nan)
    base = q[P_BASE]
    for t in range(limbs.size):
        limbs[t] = 0
    for jj in range(L):
        k = k0 + jj
        p = np.int64(sa[i, k]) * np.int64(sb[k, j])
        if p != 0:
            _limb_add(limbs, p if p > 0 else -p, p < 0, ea[i, k] + eb[k, j] - fp - base)
    if c_sig != 0:
        m = np.int64(c_sig)
        _limb_add(limbs, m if m > 0 else -m, m < 0, c_exp - mc - base)
    return limb_round(limbs, base, q[P_PRES], q[P_EMINRES], q[P_EMAXRES], q[P_MODE], q[P_FLUSHOUT] != 0)


# ------------------------------------------------------------ TR / GTR-FDPA
@numba.njit(cache=True)
def group_sum(sa, ea, sb, eb, i, j, k0, L, start, step, fp, F, ez, use_ez):
    """Truncated fused sum of the products k0+start, k0+start+step, ... of a block
    (Xie Algorithm 10 lines 6-9, Algorithm 11 lines 6-12): returns (T, e_max, any),
    the value being ``T * 2**(e_max - F)``; each aligned product is truncated toward
    zero in sign-magnitude (RZ_F)."""
    emax = NEG_BIG
    for jj in range(start, L, step):
        k = k0 + jj
        if sa[i, k] == 0 or sb[k, j] == 0:
            if use_ez and ez > emax:
                emax = ez
            continue
        e = ea[i, k] + eb[k, j]
        if e > emax:
            emax = e
    if emax == NEG_BIG:
        return np.int64(0), emax, False
    T = np.int64(0)
    base = F - fp - emax
    for jj in range(start, L, step):
        k = k0 + jj
        p = np.int64(sa[i, k]) * np.int64(sb[k, j])
        if p == 0:
            continue
        t = align_term(p if p > 0 else -p, base + ea[i, k] + eb[k, j], False)
        T += t if p > 0 else -t
    return T, emax, True


@numba.njit(cache=True, inline="always")
def tr_sum_bits(F, F2):
    """G = max(F, F2 + 1): the fractional bits at E of TR-/GTR-FDPA's sum of T' (F2 + 1
    bits, MMA-Sim 2.1.1) and c' (F bits)."""
    return F2 + 1 if F2 + 1 > F else F


@numba.njit(cache=True)
def tr_parts(sa, ea, sb, eb, i, j, k0, c_sig, c_exp, q):
    """The fixed-point stages of TR-/GTR-FDPA for one block with c = (c_sig, c_exp).

    Returns (T, e_max, has_T, E, T', s'_c, c_used, S, G): T the products' fused sum
    (F fractional bits at e_max; for GTR the sum of the two rounded-down group sums),
    T' = RD_{F2+1}(T * 2**(e_max - E)) and s'_c = RD_F(s_c * 2**(e_c - E)) as
    integers with F2 + 1 and F fractional bits at E (MMA-Sim 2.1.1's one bit more than
    Algorithm 10's F2; see the module notes), and S = T' + s'_c with G = max(F, F2 + 1)
    fractional bits at E (value S * 2**(E - G)), before :func:`tr_cut`."""
    L = q[P_L]
    F = q[P_F]
    F2 = q[P_F2]
    fp = q[P_FP]
    ez = q[P_EZ]
    use_ez = q[P_USE_EZ] != 0
    gtr = q[P_KIND] == KIND_GTR
    rz = q[P_ARZ] != 0
    if gtr:
        T0, e0, h0 = group_sum(sa, ea, sb, eb, i, j, k0, L, 0, 2, fp, F, ez, use_ez)
        T1, e1, h1 = group_sum(sa, ea, sb, eb, i, j, k0, L, 1, 2, fp, F, ez, use_ez)
        has_T = h0 or h1
        emax = NEG_BIG
        if h0:
            emax = e0
        if h1 and e1 > emax:
            emax = e1
        T = np.int64(0)
        if h0:
            T += shift_align(T0, e0 - emax, rz)
        if h1:
            T += shift_align(T1, e1 - emax, rz)
    else:
        T, emax, has_T = group_sum(sa, ea, sb, eb, i, j, k0, L, 0, 1, fp, F, ez, use_ez)
    has_c = c_sig != 0 or use_ez
    ec = c_exp if c_sig != 0 else ez
    E = NEG_BIG
    if has_T:
        E = emax
    if has_c and ec > E:
        E = ec
    G = tr_sum_bits(F, F2)
    Tp = np.int64(0)
    if has_T:
        Tp = shift_align(T, F2 + 1 - F + emax - E, rz)
    scp = np.int64(0)
    c_used = False
    if c_sig != 0 and not (gtr and ec < E - F - 1):
        scp = shift_align(np.int64(c_sig), F - q[P_MC] + ec - E, rz)
        c_used = True
    S = (Tp << (G - F2 - 1)) + (scp << (G - F))
    return T, emax, has_T, E, Tp, scp, c_used, S, G


@numba.njit(cache=True, inline="always")
def tr_cut(S, scale, F2, emin, rz):
    """The sum ``S * 2**scale`` of TR-/GTR-FDPA's T' and c' cut to F2 + 1 significant
    bits - F2 fractional bits of its normalised significand, the exponent clamped at
    the output's emin - toward -inf (or, with ``rz``, toward zero) before rho: MMA-Sim
    2.1.1's ``frexp_and_normalize(..., e_subnormal=-126)`` and ``floor(sum * 2**F2)``
    (fp32 output: emin = -126).  Returns ``(S', scale')``; branch-free."""
    m = S if S >= 0 else -S
    lead = bit_length(m) - 1 + scale
    drop = (lead if lead > emin else emin) - F2 - scale
    drop = drop if drop > 0 else 0
    return shift_align(S, -drop, rz), scale + drop


@numba.njit(cache=True, inline="always")
def tr_round(S, scale, q):
    """rho of a TR-/GTR-FDPA block's sum ``S * 2**scale`` (:func:`tr_cut`, then the
    result format's rounding), as a float64."""
    S, scale = tr_cut(S, scale, q[P_F2], q[P_EMINRES], q[P_ARZ] != 0)
    return round_fixed(S, scale, q[P_PRES], q[P_EMINRES], q[P_EMAXRES], q[P_MODE], q[P_FLUSHOUT] != 0)


@numba.njit(cache=True)
def trfdpa_step(sa, ea, sb, eb, i, j, k0, d, q):
    """One TR-FDPA (Xie Algorithm 10) or GTR-FDPA (Algorithm 11) with c = d."""
    c_sig, c_exp = decompose_one(d, q[P_MC], q[P_EMINC], False)
    spec, pos, neg, nan = scan_specials(sa, ea, sb, eb, i, j, k0, q[P_L], c_sig, c_exp, q[P_FP], q[P_OVF])
    if spec and q[P_KIND] == KIND_GTR and c_exp >= SPECIAL:
        # MMA-Sim 2.1.1 gtr_fdpa: an Inf/NaN c gets exponent -1 (torch.frexp's 0, less
        # one in frexp_and_normalize) and falls to the special truncation
        # (``s_c[e_c < e_max - F - 1] = 0``) when finite products reach e_max >= F + 1;
        # the block is then the products' sum alone.
        spec_p, _, _, _ = scan_specials(sa, ea, sb, eb, i, j, k0, q[P_L], 0, 0, q[P_FP], q[P_OVF])
        if not spec_p:
            T, emax, has_T, E, Tp, scp, c_used, S, G = tr_parts(sa, ea, sb, eb, i, j, k0, 0, 0, q)
            if has_T and emax > q[P_F]:
                return tr_round(S, E - G, q)
    if spec:
        return special_result(pos, neg, nan)
    T, emax, has_T, E, Tp, scp, c_used, S, G = tr_parts(sa, ea, sb, eb, i, j, k0, c_sig, c_exp, q)
    if E == NEG_BIG:
        return 0.0
    return tr_round(S, E - G, q)


# ------------------------------------------------------------------ GEMMs
@numba.njit(cache=True)
def amd_chain(A, BT, sa, ea, sb, eb, i, j, d, q, limbs):
    """Output (i, j): the chain of E-/TR-/GTR-FDPA blocks over K from c = d (Xie
    Algorithm 5)."""
    L = q[P_L]
    for blk in range(sa.shape[1] // L):
        if q[P_KIND] == KIND_E:
            d = efdpa_step(A, BT, sa, ea, sb, eb, i, j, blk * L, d, q, limbs)
        else:
            d = trfdpa_step(sa, ea, sb, eb, i, j, blk * L, d, q)
    return d


@numba.njit(cache=True, parallel=True)
def amd_gemm(A, BT, sa, ea, sb, eb, acc, q):
    """:func:`amd_chain` for every output, parallel over outputs; ``sb, eb``
    indexed ``[k, j]``; ``acc`` holds C on entry and D on exit; ``A`` (M, Kp) and
    ``BT`` (N, Kp) are the float64 operands (NaN payloads)."""
    M = sa.shape[0]
    N = acc.shape[1]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
        acc[i, j] = amd_chain(A, BT, sa, ea, sb, eb, i, j, acc[i, j], q, limbs)


@numba.njit(cache=True)
def amd_small(A, BT, xa, xb, xc, acc, q, man_bits, emin, flush, vmax_bits, has_nan, has_inf, out_man_bits, out_emin,
              out_vmax_bits):
    """A small product straight from its operands, on the calling thread
    (:meth:`~workbench.engine.model.Operation.run_small`): ``xa`` (M, K), ``xb`` (K, N),
    ``xc`` (M, N) are the int64 patterns of float64 A, B and C (``A`` and ``BT`` the
    float64 A and B^T, read for E-FDPA's NaN payloads); A and B are checked and
    decomposed (K zero-padded to whole blocks of L) and C checked against the output
    format (:func:`~workbench.engine.ops.decompose_small_product`), then every output
    runs :func:`amd_chain`, the arithmetic of :func:`amd_gemm`, on ``acc`` (C as
    float64 on entry).  Returns the first
    unrepresentable C-order index of A, B and C (-1 each where none); ``acc`` is left as
    it was if any."""
    M, N = acc.shape
    L = q[P_L]
    sa, ea, sb, eb, bad_a, bad_b, bad_c = decompose_small_product(xa, xb, xc, L, man_bits, emin, flush, vmax_bits,
                                                                  has_nan, has_inf, out_man_bits, out_emin,
                                                                  out_vmax_bits)
    if bad_a >= 0 or bad_b >= 0 or bad_c >= 0:
        return bad_a, bad_b, bad_c
    limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
    for i in range(M):
        for j in range(N):
            limbs[:] = 0
            acc[i, j] = amd_chain(A, BT, sa, ea, sb, eb, i, j, acc[i, j], q, limbs)
    return bad_a, bad_b, bad_c


@numba.njit(cache=True, parallel=True)
def amd_rows(A, BT, sa, ea, sb, eb, acc, q):
    """Batched dot products: ``acc[r]`` <- :func:`amd_chain` over row r of A and
    column r of B (``sa, ea`` (n, Kp); ``sb, eb`` (Kp, n) indexed ``[k, r]``; ``A``
    and ``BT`` (n, Kp) float64 for NaN payloads), parallel over rows."""
    for r in numba.prange(sa.shape[0]):
        limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
        i = np.int64(r)    # prange's index is unsigned: one compiled amd_chain for every caller
        acc[r] = amd_chain(A, BT, sa, ea, sb, eb, i, i, acc[r], q, limbs)


@numba.njit(cache=True, inline="always")
def _lane_group(sa, ea, sb, eb, i, j0, nv, k0, L, start, step, ezp, G, roff, ovf1, T, em, bad):
    """Truncated fused sum of the products k0+start, k0+start+step, ... of a block
    (:func:`group_sum`) for outputs (i, j0 .. j0+nv-1) side by side: ``T[u]``,
    ``em[u]`` (NEG_BIG when the group has no term).  Each magnitude ``|p| * 2**G`` is
    shifted right by ``em - e + roff`` (RZ_F, Xie Algorithm 10 line 8).  ``bad[u]`` is
    set where the group's largest exponent reaches ``ovf1`` = ovf - 1: only there can
    a product (``|p| < 2**(fp + 2)``) reach 2**ovf, an infinity left to the scalar path."""
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    for u in range(ul):
        em[u] = NEG_BIG
        T[u] = 0
    for jj in range(start, L, step):
        k = np.uint64(k0 + jj)
        a_zero = sa[i, k] == 0
        a_e = np.int64(ea[i, k])
        for u in range(ul):
            v = ezp if (a_zero | (sb[k, uj0 + u] == 0)) else a_e + np.int64(eb[k, uj0 + u])
            em[u] = max(em[u], v)
    for u in range(ul):
        bad[u] |= em[u] >= ovf1
    for jj in range(start, L, step):
        k = np.uint64(k0 + jj)
        a_s = np.int64(sa[i, k])
        a_e = np.int64(ea[i, k]) - roff
        for u in range(ul):
            p = a_s * np.int64(sb[k, uj0 + u])
            r = em[u] - a_e - np.int64(eb[k, uj0 + u])
            r = r if r > 0 else 0
            t = ((p if p >= 0 else -p) << G) >> (r if r < 63 else 63)
            T[u] += t if p >= 0 else -t


@numba.njit(cache=True, inline="always")
def _lane_group32(sa, ea, sb, eb, i, j0, nv, k0, L, start, step, ezp, G, roff, ovf1, T, em, bad, T32, em32):
    """:func:`_lane_group` in 32-bit steps (16 lanes a vector), for units whose terms
    and group sums fit in int32 (:func:`_group_fits_int32`): the same ``T`` and
    ``em``, through the int32 scratch lanes ``T32`` and ``em32``."""
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    ez32 = np.int32(ezp)
    for u in range(ul):
        em32[u] = np.int32(NEG_BIG)
        T32[u] = 0
    for jj in range(start, L, step):
        max_product_exponents(sa, ea, sb, eb, i, np.uint64(k0 + jj), uj0, ul, ez32, em32)
    for u in range(ul):
        bad[u] |= em32[u] >= ovf1
    G32 = np.int32(G)
    for jj in range(start, L, step):
        k = np.uint64(k0 + jj)
        a_s32 = np.int32(sa[i, k])
        off32 = np.int32(roff - ea[i, k])
        for u in range(ul):       # em32 >= NEG_BIG = -2**30 keeps the shift count within int32
            p32 = _k.mul32(a_s32, sb[k, uj0 + u])
            r32 = np.int32(em32[u] + off32 - eb[k, uj0 + u])
            r32 = r32 if r32 < np.int32(31) else np.int32(31)
            r32 = r32 if r32 > np.int32(0) else np.int32(0)
            p_neg = p32 < 0
            t32 = _k.ashr32(_k.shl32(np.int32(-p32) if p_neg else p32, G32), r32)
            T32[u] += np.int32(-t32) if p_neg else t32
    for u in range(ul):
        T[u] = np.int64(T32[u])
        em[u] = np.int64(em32[u])


@numba.njit(cache=True, inline="always")
def _group_fits_int32(q, L):
    """Whether :func:`_lane_group32` holds a unit's groups (of at most L products):
    a magnitude ``|p| * 2**G < 2**(fp + 2 + G)`` fits in int32, and so does the sum
    of L aligned terms, each below 2**(F + 2) (its largest shift-free value is
    ``|p| 2**G`` with F >= fp, or ``|p| 2**-roff`` with F < fp), when
    ``L 2**(F + 2) <= 2**31``."""
    F = q[P_F]
    fp = q[P_FP]
    G = F - fp if F > fp else 0
    return fp + 2 + G <= 31 and bit_length(L - 1) + F + 2 <= 31


@numba.njit(cache=True, inline="always")
def _lane_group_rows(sal, eal, sbl, ebl, r0, nv, k0, L, start, step, ezp, G, roff, ovf1, T, em, bad):
    """:func:`_lane_group` for batched dot products: lane u is row r0 + u of both
    operands (``sal, eal, sbl, ebl`` (Kp, np) indexed ``[k, r]``)."""
    ul = np.uint64(nv)
    ur0 = np.uint64(r0)
    for u in range(ul):
        em[u] = NEG_BIG
        T[u] = 0
    for jj in range(start, L, step):
        k = np.uint64(k0 + jj)
        for u in range(ul):
            z = (sal[k, ur0 + u] == 0) | (sbl[k, ur0 + u] == 0)
            em[u] = max(em[u], ezp if z else np.int64(eal[k, ur0 + u]) + np.int64(ebl[k, ur0 + u]))
    for u in range(ul):
        bad[u] |= em[u] >= ovf1
    for jj in range(start, L, step):
        k = np.uint64(k0 + jj)
        for u in range(ul):
            p = np.int64(sal[k, ur0 + u]) * np.int64(sbl[k, ur0 + u])
            r = em[u] + roff - np.int64(eal[k, ur0 + u]) - np.int64(ebl[k, ur0 + u])
            r = r if r > 0 else 0
            t = ((p if p >= 0 else -p) << G) >> (r if r < 63 else 63)
            T[u] += t if p >= 0 else -t


@numba.njit(cache=True, inline="always")
def _lane_tr_round_loop(T0, E0, T1, E1, nv, q, neg, mag, qq, bad, gtr, rz):
    """:func:`_lane_tr_round` for constant ``gtr`` and ``rz`` (each combination
    compiles to its own branch-free loop over the lanes, which LLVM vectorises)."""
    F = q[P_F]
    F2 = q[P_F2]
    G = tr_sum_bits(F, F2)
    eminc = q[P_EMINC]
    ez = q[P_EZ]
    use_ez = q[P_USE_EZ] != 0
    pr = q[P_PRES]
    eminr = q[P_EMINRES]
    emaxr = q[P_EMAXRES]
    mode = q[P_MODE]
    flush = q[P_FLUSHOUT] != 0
    for u in range(np.uint64(nv)):
        m = mag[u]
        top = bit_length(m) - 1 + qq[u]
        ec = (top if top > eminc else eminc) if m != 0 else ez
        has_c = (m != 0) | use_ez
        if gtr:                  # both groups rounded down to F bits at the larger exponent
            e0 = E0[u]
            e1 = E1[u]
            emax = e0 if e0 > e1 else e1
            t0 = shift_align(T0[u], e0 - emax, rz)
            t1 = shift_align(T1[u], e1 - emax, rz)
            Tsum = (t0 if e0 != NEG_BIG else 0) + (t1 if e1 != NEG_BIG else 0)
        else:
            emax = E0[u]
            Tsum = T0[u]
        has_T = emax != NEG_BIG
        E = ec if (has_c & (ec > emax)) else emax
        Tp = shift_align(Tsum, F2 + 1 - F + emax - E, rz)
        use_c = (m != 0) & ~(gtr & (ec < E - F - 1))   # GTR drops a c far below E
        scp = shift_align(-m if neg[u] else m, F + qq[u] - E, rz)
        S = ((Tp if has_T else 0) << (G - F2 - 1)) + ((scp if use_c else 0) << (G - F))
        S, scale = tr_cut(S, E - G, F2, eminr, rz)
        neg_r, keep, q_r, inf = round_int(S, scale, pr, eminr, emaxr, mode, flush)
        neg[u] = neg_r
        mag[u] = keep
        qq[u] = q_r
        bad[u] |= inf


@numba.njit(cache=True, inline="always")
def _lane_tr_round(T0, E0, T1, E1, nv, q, neg, mag, qq, bad):
    """The rest of a TR-/GTR-FDPA block (:func:`tr_parts`, then rho) for lanes side by
    side, from the group sums ``T0, E0`` (GTR: and ``T1, E1``): c is the lane state
    ``(-1)**neg * mag * 2**qq`` (exactly the output format's c, whose exponent is
    clamped at emin); the rounded block result replaces it, ``bad`` set on overflow."""
    gtr = q[P_KIND] == KIND_GTR
    if q[P_ARZ] != 0:
        if gtr:
            _lane_tr_round_loop(T0, E0, T1, E1, nv, q, neg, mag, qq, bad, True, True)
        else:
            _lane_tr_round_loop(T0, E0, T1, E1, nv, q, neg, mag, qq, bad, False, True)
    elif gtr:
        _lane_tr_round_loop(T0, E0, T1, E1, nv, q, neg, mag, qq, bad, True, False)
    else:
        _lane_tr_round_loop(T0, E0, T1, E1, nv, q, neg, mag, qq, bad, False, False)


@numba.njit(cache=True, inline="always")
def _group_shifts(q):
    """(G, roff, ovf1, ezp) of :func:`_lane_group`: a term ``|p| * 2**G`` is shifted
    right by ``e_max - e + roff`` (>= 0) to F fractional bits."""
    F = q[P_F]
    fp = q[P_FP]
    G = F - fp if F > fp else 0
    ezp = q[P_EZ] if q[P_USE_EZ] != 0 else NEG_BIG
    return G, G - F + fp, q[P_OVF] - 1, ezp


@numba.njit(cache=True, parallel=True)
def trfdpa_gemm_lanes(A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC):
    """TR-/GTR-FDPA chains for tiles of TI x TJ outputs, the TJ outputs of a row side
    by side (:func:`_lane_group`, :func:`_lane_tr_round`: the stages of
    :func:`tr_parts` as loops over lanes that LLVM vectorises), K walked in chunks of
    BC blocks so that a chunk of B serves the tile's rows from cache: the same bits
    as :func:`amd_gemm`.  ``sb, eb`` C-ordered (Kp, Np), Np >= N a multiple of 8
    (zero padding, computed and never written).  Outputs whose row of A or column of
    B holds Inf/NaN, whose C is Inf/NaN, whose products may reach the overflow
    threshold or whose chain overflows are recomputed by :func:`amd_chain` (``A``,
    ``BT`` unused by TR/GTR there).  The result format must fit in the output format
    (a block's result is exactly the next c)."""
    M = sa.shape[0]
    N = acc.shape[1]
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(((M + TI - 1) // TI) * n_jt):
        _tr_gemm_lanes_tile(np.int64(t), A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC)


@numba.njit(cache=True)
def _tr_gemm_lanes_tile(t, A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC):
    """Tile ``t`` of :func:`trfdpa_gemm_lanes` (its own function: numba compiles it without
    the parallel passes, which took 4.5 minutes over the whole body)."""
    Kp = sa.shape[1]
    N = acc.shape[1]
    Np = sb.shape[1]
    L = q[P_L]
    G, roff, ovf1, ezp = _group_shifts(q)
    gtr = q[P_KIND] == KIND_GTR
    ngroups = 2 if gtr else 1
    narrow = _group_fits_int32(q, L)
    nblocks = Kp // L
    n_jt = (N + TJ - 1) // TJ
    i0, ti, j0, nl, nv, neg, mag, qq, bad = tile_lanes(t, n_jt, TI, TJ, acc, Np, row_special, col_special, q[P_MC],
                                                       q[P_EMINC])
    T0 = np.empty(nv, dtype=np.int64)
    E0 = np.empty(nv, dtype=np.int64)
    T1 = np.zeros(nv, dtype=np.int64)
    E1 = np.full(nv, NEG_BIG, dtype=np.int64)
    T32 = np.empty(nv, dtype=np.int32)
    em32 = np.empty(nv, dtype=np.int32)
    for b0 in range(0, nblocks, BC):
        for ii in range(ti):
            i = i0 + ii
            if row_special[i] != 0:
                continue
            rneg, rmag, rq, rbad = neg[ii], mag[ii], qq[ii], bad[ii]
            for blk in range(b0, min(nblocks, b0 + BC)):
                if narrow:
                    _lane_group32(sa, ea, sb, eb, i, j0, nv, blk * L, L, 0, ngroups, ezp, G, roff, ovf1, T0, E0,
                                  rbad, T32, em32)
                    if gtr:
                        _lane_group32(sa, ea, sb, eb, i, j0, nv, blk * L, L, 1, 2, ezp, G, roff, ovf1, T1, E1,
                                      rbad, T32, em32)
                else:
                    _lane_group(sa, ea, sb, eb, i, j0, nv, blk * L, L, 0, ngroups, ezp, G, roff, ovf1, T0, E0,
                                rbad)
                    if gtr:
                        _lane_group(sa, ea, sb, eb, i, j0, nv, blk * L, L, 1, 2, ezp, G, roff, ovf1, T1, E1, rbad)
                _lane_tr_round(T0, E0, T1, E1, nv, q, rneg, rmag, rq, rbad)
    for ii in range(ti):
        i = i0 + ii
        for u in range(nl):
            j = j0 + u
            if bad[ii, u]:
                limbs = np.zeros(1, dtype=np.int64)
                acc[i, j] = amd_chain(A, BT, sa, ea, sb, eb, i, j, acc[i, j], q, limbs)
            else:
                acc[i, j] = lane_value(neg[ii, u], mag[ii, u], qq[ii, u])


@numba.njit(cache=True)
def tr_simd_eligible(q):
    """Whether :func:`trfdpa_gemm_simd` computes this unit: TR-FDPA (not GTR: one group
    of products) whose terms and group sums fit 32 bits (:func:`_group_fits_int32`)."""
    return q[P_KIND] == KIND_TR and _group_fits_int32(q, q[P_L])


@numba.njit(cache=True)
def tr_chain_constants(q):
    """The int64 constants (fields ``C_*`` of :mod:`~workbench.engine.vector_chain`)
    of the vector chain's TR-FDPA blocks for the parameters ``q``."""
    G, roff, ovf1, ezp = _group_shifts(q)
    F, F2 = q[P_F], q[P_F2]
    cp = np.zeros(_vc.C_N, dtype=np.int64)
    cp[_vc.C_L] = q[P_L]
    cp[_vc.C_F] = F
    cp[_vc.C_G] = G
    cp[_vc.C_ROFF] = roff
    cp[_vc.C_EZP] = ezp
    cp[_vc.C_EMINC] = q[P_EMINC]
    cp[_vc.C_PR] = q[P_PRES]
    cp[_vc.C_EMINR] = q[P_EMINRES]
    cp[_vc.C_EMAXR] = q[P_EMAXRES]
    cp[_vc.C_MODE] = q[P_MODE]
    cp[_vc.C_FLUSH] = 1 if q[P_FLUSHOUT] != 0 else 0
    cp[_vc.C_F2] = F2
    cp[_vc.C_GT] = tr_sum_bits(F, F2)
    cp[_vc.C_OVF1] = ovf1
    cp[_vc.C_EZ] = q[P_EZ]
    cp[_vc.C_USEEZ] = 1 if q[P_USE_EZ] != 0 else 0
    return cp


@numba.njit(cache=True, parallel=True)
def trfdpa_gemm_simd(sa, ea, sb, eb, row_special, col_special, acc, q, TI, BC):
    """:func:`trfdpa_gemm_lanes` for the units of :func:`tr_simd_eligible` on the
    vector chain (:func:`~workbench.engine.vector_chain.chain_tile`: tiles of TI rows x
    16 columns, the lane state in registers, B's lanes read once for up to five rows):
    the same bits.  ``sb, eb`` (Kp, NB >= N) C-ordered, no padding needed; outputs
    meeting Inf/NaN or overflow are recomputed by :func:`amd_chain`."""
    M, Kp = sa.shape
    N = acc.shape[1]
    nblocks = Kp // q[P_L]
    cp = tr_chain_constants(q)
    variant = _vc.V_TR_RZ if q[P_ARZ] != 0 else _vc.V_TR_RD
    n_it = (M + TI - 1) // TI
    n_jt = (N + _vc.W - 1) // _vc.W
    none = np.empty((0, 0))
    for t in numba.prange(n_it * n_jt):
        i0, ti, j0, nl, _ = lane_tile(np.int64(t), n_jt, TI, _vc.W, M, N, N)
        st = _vc.tile_state(acc, i0, ti, j0, nl, row_special, col_special, q[P_MC], q[P_EMINC])
        for b0 in range(0, nblocks, BC):
            _vc.chain_tile(variant, sa, ea, sb, eb, st, cp, i0, row_special, j0, nl, b0, min(nblocks, b0 + BC))
        for ii in range(ti):
            i = i0 + ii
            for u in range(nl):
                j = j0 + u
                if st[ii, 3, u] != 0 or row_special[i] != 0:
                    limbs = np.zeros(1, dtype=np.int64)
                    acc[i, j] = amd_chain(none, none, sa, ea, sb, eb, i, j, acc[i, j], q, limbs)
                else:
                    acc[i, j] = lane_value(st[ii, 0, u] != 0, st[ii, 1, u], st[ii, 2, u])


def tr_simd(model, code: int) -> bool:
    """Whether the model's TR-/GTR-FDPA products run on :func:`trfdpa_gemm_simd` (and
    so want B decomposed unpadded)."""
    return bool(tr_simd_eligible(amd_params(model, code)))


@numba.njit(cache=True, parallel=True)
def trfdpa_rows_lanes(sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q):
    """Batched TR-/GTR-FDPA dot products, :data:`_ROW_LANES` rows side by side
    (:func:`_lane_group_rows`, :func:`_lane_tr_round`): the bits of :func:`amd_rows`.
    ``sal, eal, sbl, ebl`` (Kp, np) the operands in lane layout (np >= n a multiple
    of the lanes, zero padding computed and never written); ``sa, ea`` (rows, Kp),
    ``sb, eb`` (Kp, rows) the same (transposed views allowed) for rows whose operands
    or c are Inf/NaN (flagged in ``special``), whose products may overflow or whose
    chain overflows (:func:`amd_chain`).  Each group of rows is one call of
    :func:`_tr_rows_lanes_tile`, which numba compiles without its parallel passes (the
    whole body inside the ``prange`` took 214 s to compile, the split a few)."""
    n = acc.shape[0]
    for t in numba.prange((n + _ROW_LANES - 1) // _ROW_LANES):
        _tr_rows_lanes_tile(np.int64(t) * _ROW_LANES, sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q)


@numba.njit(cache=True)
def _tr_rows_lanes_tile(r0, sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q):
    """Rows r0 .. r0 + :data:`_ROW_LANES` - 1 of :func:`trfdpa_rows_lanes`."""
    Kp, Np = sal.shape
    n = acc.shape[0]
    L = q[P_L]
    G, roff, ovf1, ezp = _group_shifts(q)
    gtr = q[P_KIND] == KIND_GTR
    ngroups = 2 if gtr else 1
    nl = min(_ROW_LANES, n - r0)
    nv = min(_ROW_LANES, Np - r0)
    neg = np.zeros(nv, dtype=np.bool_)
    mag = np.zeros(nv, dtype=np.int64)
    qq = np.zeros(nv, dtype=np.int64)
    bad = np.zeros(nv, dtype=np.bool_)
    T0 = np.empty(nv, dtype=np.int64)
    E0 = np.empty(nv, dtype=np.int64)
    T1 = np.zeros(nv, dtype=np.int64)
    E1 = np.full(nv, NEG_BIG, dtype=np.int64)
    lanes_from_c(acc.reshape(1, n), 0, r0, nl, np.zeros(1, dtype=np.int8), special, q[P_MC], q[P_EMINC], neg, mag,
                 qq, bad)
    for blk in range(Kp // L):
        _lane_group_rows(sal, eal, sbl, ebl, r0, nv, blk * L, L, 0, ngroups, ezp, G, roff, ovf1, T0, E0, bad)
        if gtr:
            _lane_group_rows(sal, eal, sbl, ebl, r0, nv, blk * L, L, 1, 2, ezp, G, roff, ovf1, T1, E1, bad)
        _lane_tr_round(T0, E0, T1, E1, nv, q, neg, mag, qq, bad)
    none = np.empty((0, 0))
    for u in range(nl):
        r = r0 + u
        if bad[u]:
            limbs = np.zeros(1, dtype=np.int64)
            acc[r] = amd_chain(none, none, sa, ea, sb, eb, r, r, acc[r], q, limbs)
        else:
            acc[r] = lane_value(neg[u], mag[u], qq[u])


def trfdpa_lanes(model, code: int, sa, ea, sb, eb, acc, special: bool = True):
    """TR-/GTR-FDPA over whole matrices on :func:`trfdpa_gemm_lanes`: ``sa, ea`` (M, Kp)
    and ``sb, eb`` (Kp, N) decomposed, K zero-padded to L (B copied into the lane
    layout unless it is there already); ``acc`` C on entry, D on exit.
    ``special=False`` promises that no operand is Inf/NaN."""
    q = amd_params(model, code)
    M, N = acc.shape
    simd = bool(tr_simd_eligible(q))
    sbl, ebl, row_special, col_special = _k.lane_operands(sa, ea, sb, eb, N, model.in_fmt.emin, special, pad=not simd)
    if simd:
        BC = max(1, _LANE_CHUNK // (model.L * _vc.W))
        trfdpa_gemm_simd(sa, ea, sbl, ebl, row_special, col_special, acc, q, _vc.simd_rows(M, N, numba.get_num_threads()),
                         BC)
        return acc
    TI, TJ = _k.output_tiles(M, N, numba.get_num_threads())
    TJ = -(-TJ // _k.LANE_PAD) * _k.LANE_PAD
    BC = max(1, _LANE_CHUNK // (model.L * sbl.shape[1]))
    none = np.empty((0, 0))
    trfdpa_gemm_lanes(none, none, sa, ea, sbl, ebl, row_special, col_special, acc, q, TI, TJ, BC)
    return acc


@numba.njit(cache=True, inline="always")
def _lane_efdpa_block(sa, ea, sb, eb, i, j0, nv, k0, L, fp, window, neg, mag, qq, lo, hi, S):
    """The exact sum of c and the products of the block at k0 (Xie Algorithm 6) for
    outputs (i, j0 .. j0+nv-1) side by side, in int64: ``S[u] * 2**lo[u]``, exact
    where ``hi[u] - lo[u] <= window`` (every term's bits lie in a window of that
    many bits above ``lo``, the lowest bit of any term; ``hi`` bounds the terms'
    leading bits).  Lanes where that fails keep a meaningless S for the caller to
    redo with the limbs (:func:`efdpa_step`).  c is the lane state ``(-1)**neg * mag
    * 2**qq``; zero terms take no part (a lane of zeros: ``lo > hi``, S = 0)."""
    ul = np.uint64(nv)
    uj0 = np.uint64(j0)
    for u in range(ul):          # c's lowest and (exact) leading bit
        m = mag[u]
        lo[u] = qq[u] if m != 0 else _NO_TERM
        hi[u] = bit_length(m) + qq[u] if m != 0 else NEG_BIG
    for kk in range(L):          # the products' lowest bits and bounds on their leading bits
        k = np.uint64(k0 + kk)
        a_zero = sa[i, k] == 0
        a_e = np.int64(ea[i, k]) - fp
        for u in range(ul):
            e = a_e + np.int64(eb[k, uj0 + u])
            z = a_zero | (sb[k, uj0 + u] == 0)
            lo[u] = min(lo[u], _NO_TERM if z else e)
            hi[u] = max(hi[u], NEG_BIG if z else e + fp + 2)
    for u in range(ul):          # c and every product at 2**lo: exact integers
        sh = qq[u] - lo[u]
        sh = sh if sh > 0 else 0
        t = mag[u] << (sh if sh < 63 else 63)
        S[u] = -t if neg[u] else t
    for kk in range(L):
        k = np.uint64(k0 + kk)
        a_s = np.int64(sa[i, k])
        a_e = np.int64(ea[i, k]) - fp
        for u in range(ul):
            sh = a_e + np.int64(eb[k, uj0 + u]) - lo[u]
            sh = sh if sh > 0 else 0
            S[u] += (a_s * np.int64(sb[k, uj0 + u])) << (sh if sh < 63 else 63)


@numba.njit(cache=True, inline="always")
def _lane_efdpa_round(S, lo, hi, nv, window, pr, eminr, emaxr, mode, flush, neg, mag, qq, bad, wide):
    """Each lane's exact block sum ``S * 2**lo`` rounded once (:func:`round_int`) into
    its state ``(neg, mag, qq)``, ``bad`` set where it overflows; lanes whose terms
    did not fit the window keep their state and are marked ``wide``.  Returns how
    many are wide."""
    n_wide = 0
    for u in range(np.uint64(nv)):
        fits = hi[u] - lo[u] <= window
        neg_r, keep, q_r, inf = round_int(S[u], lo[u] if lo[u] != _NO_TERM else 0, pr, eminr, emaxr, mode, flush)
        neg[u] = neg_r if fits else neg[u]
        mag[u] = keep if fits else mag[u]
        qq[u] = q_r if fits else qq[u]
        bad[u] |= inf & fits
        wide[u] = not fits
        n_wide += 0 if fits else 1
    return n_wide


@numba.njit(cache=True, inline="always")
def _limb_lane(A, BT, sa, ea, sb, eb, i, j, k0, q, limbs, mc, eminc, u, neg, mag, qq, bad):
    """Lane u's block at k0 for output (i, j) by :func:`efdpa_step` (the limbs) from
    its state as c; an Inf/NaN result marks it ``bad``."""
    d = efdpa_step(A, BT, sa, ea, sb, eb, i, j, k0, lane_value(neg[u], mag[u], qq[u]), q, limbs)
    if d != d or math.isinf(d):
        bad[u] = True
    else:
        c_sig, c_exp = decompose_one(d, mc, eminc, False)
        neg[u] = math.copysign(1.0, d) < 0       # a zero result keeps its sign
        mag[u] = -c_sig if c_sig < 0 else c_sig
        qq[u] = c_exp - mc


@numba.njit(cache=True, parallel=True)
def efdpa_gemm_lanes(A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC):
    """E-FDPA chains (Xie Algorithms 5-6) for tiles of TI x TJ outputs, the TJ outputs
    of a row side by side (:func:`_lane_efdpa_block`, then :func:`round_int` on the
    exact sum): the same bits as :func:`amd_gemm`.  A lane whose block does not fit
    the int64 window (wide exponent spread between c and the products) has that
    block computed by :func:`efdpa_step` with the limbs and goes on in its lane.
    Outputs whose row of A or column of B holds Inf/NaN, whose C is Inf/NaN, or
    whose chain reaches an infinity are recomputed by :func:`amd_chain` (which
    also chooses NaN payloads from ``A`` (M, K) and ``BT`` (N, K), any layout).
    ``sb, eb`` C-ordered (Kp, Np), Np >= N a multiple of 8 (zero padding, computed
    and never written); K is walked in chunks of BC blocks.  The result format must
    fit in the output format (a block's result is exactly the next c)."""
    M = sa.shape[0]
    N = acc.shape[1]
    n_jt = (N + TJ - 1) // TJ
    for t in numba.prange(((M + TI - 1) // TI) * n_jt):
        _e_gemm_lanes_tile(np.int64(t), A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC)


@numba.njit(cache=True)
def _e_gemm_lanes_tile(t, A, BT, sa, ea, sb, eb, row_special, col_special, acc, q, TI, TJ, BC):
    """Tile ``t`` of :func:`efdpa_gemm_lanes` (its own function: numba compiles it without
    the parallel passes)."""
    Kp = sa.shape[1]
    N = acc.shape[1]
    Np = sb.shape[1]
    L = q[P_L]
    fp = q[P_FP]
    mc = q[P_MC]
    eminc = q[P_EMINC]
    mode = q[P_MODE]
    pr = q[P_PRES]
    eminr = q[P_EMINRES]
    emaxr = q[P_EMAXRES]
    flush = q[P_FLUSHOUT] != 0
    window = 62 - bit_length(L)          # L + 1 terms below 2**window sum below 2**62
    nblocks = Kp // L
    n_jt = (N + TJ - 1) // TJ
    i0, ti, j0, nl, nv, neg, mag, qq, bad = tile_lanes(t, n_jt, TI, TJ, acc, Np, row_special, col_special, mc, eminc)
    lo = np.empty(nv, dtype=np.int64)
    hi = np.empty(nv, dtype=np.int64)
    S = np.empty(nv, dtype=np.int64)
    wide = np.zeros(nv, dtype=np.bool_)
    limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
    for b0 in range(0, nblocks, BC):
        b1 = min(nblocks, b0 + BC)
        for ii in range(ti):
            i = i0 + ii
            if row_special[i] != 0:
                continue
            rneg, rmag, rq, rbad = neg[ii], mag[ii], qq[ii], bad[ii]
            for blk in range(b0, b1):
                _lane_efdpa_block(sa, ea, sb, eb, i, j0, nv, blk * L, L, fp, window, rneg, rmag, rq, lo, hi, S)
                if _lane_efdpa_round(S, lo, hi, nv, window, pr, eminr, emaxr, mode, flush, rneg, rmag, rq, rbad,
                                     wide) == 0:
                    continue
                for u in range(nl):          # the limbs, for the lanes the window did not hold
                    if wide[u] and not rbad[u]:
                        _limb_lane(A, BT, sa, ea, sb, eb, i, j0 + u, blk * L, q, limbs, mc, eminc, u, rneg, rmag,
                                   rq, rbad)
    for ii in range(ti):
        i = i0 + ii
        for u in range(nl):
            j = j0 + u
            if bad[ii, u]:
                acc[i, j] = amd_chain(A, BT, sa, ea, sb, eb, i, j, acc[i, j], q, limbs)
            else:
                acc[i, j] = lane_value(neg[ii, u], mag[ii, u], qq[ii, u])


@numba.njit(cache=True, inline="always")
def _lane_efdpa_rows_block(sal, eal, sbl, ebl, r0, nv, k0, L, fp, neg, mag, qq, lo, hi, S):
    """:func:`_lane_efdpa_block` for batched dot products: lane u is row r0 + u of
    both operands (``sal, eal, sbl, ebl`` (Kp, np) indexed ``[k, r]``)."""
    ul = np.uint64(nv)
    ur0 = np.uint64(r0)
    for u in range(ul):          # c's lowest and (exact) leading bit
        m = mag[u]
        lo[u] = qq[u] if m != 0 else _NO_TERM
        hi[u] = bit_length(m) + qq[u] if m != 0 else NEG_BIG
    for kk in range(L):          # the products' lowest bits and bounds on their leading bits
        k = np.uint64(k0 + kk)
        for u in range(ul):
            e = np.int64(eal[k, ur0 + u]) - fp + np.int64(ebl[k, ur0 + u])
            z = (sal[k, ur0 + u] == 0) | (sbl[k, ur0 + u] == 0)
            lo[u] = min(lo[u], _NO_TERM if z else e)
            hi[u] = max(hi[u], NEG_BIG if z else e + fp + 2)
    for u in range(ul):          # c and every product at 2**lo: exact integers
        sh = qq[u] - lo[u]
        sh = sh if sh > 0 else 0
        t = mag[u] << (sh if sh < 63 else 63)
        S[u] = -t if neg[u] else t
    for kk in range(L):
        k = np.uint64(k0 + kk)
        for u in range(ul):
            sh = np.int64(eal[k, ur0 + u]) - fp + np.int64(ebl[k, ur0 + u]) - lo[u]
            sh = sh if sh > 0 else 0
            S[u] += (np.int64(sal[k, ur0 + u]) * np.int64(sbl[k, ur0 + u])) << (sh if sh < 63 else 63)


#: Rows side by side in :func:`efdpa_rows_lanes` (a multiple of the lane padding).
_ROW_LANES = 4 * _k.LANE_PAD


@numba.njit(cache=True, parallel=True)
def efdpa_rows_lanes(A, BT, sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q):
    """Batched E-FDPA dot products, :data:`_ROW_LANES` rows side by side (:func:`_lane_efdpa_rows_block`, :func:`_lane_efdpa_round`): the bits of
    :func:`amd_rows`.  ``sal, eal, sbl, ebl`` (Kp, np) the operands in lane layout
    (np >= n a multiple of the lanes, zero padding computed and never written);
    ``sa, ea`` (rows, Kp), ``sb, eb`` (Kp, rows) (the same, transposed views allowed)
    and the float64 ``A``, ``BT`` (n, K) for the limbs of wide blocks and for rows whose operands or c are Inf/NaN (flagged
    in ``special``) or whose chain overflows (:func:`amd_chain`)."""
    n = acc.shape[0]
    for t in numba.prange((n + _ROW_LANES - 1) // _ROW_LANES):
        _e_rows_lanes_tile(np.int64(t) * _ROW_LANES, A, BT, sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q)


@numba.njit(cache=True)
def _e_rows_lanes_tile(r0, A, BT, sa, ea, sb, eb, sal, eal, sbl, ebl, special, acc, q):
    """Rows r0 .. r0 + :data:`_ROW_LANES` - 1 of :func:`efdpa_rows_lanes` (its own
    function: numba compiles it without the parallel passes)."""
    Kp, Np = sal.shape
    n = acc.shape[0]
    L = q[P_L]
    fp = q[P_FP]
    mc = q[P_MC]
    eminc = q[P_EMINC]
    window = 62 - bit_length(L)
    zero_row = np.zeros(1, dtype=np.int8)
    acc2 = acc.reshape(1, n)
    nl = min(_ROW_LANES, n - r0)
    nv = min(_ROW_LANES, Np - r0)
    neg = np.zeros(nv, dtype=np.bool_)
    mag = np.zeros(nv, dtype=np.int64)
    qq = np.zeros(nv, dtype=np.int64)
    bad = np.zeros(nv, dtype=np.bool_)
    lo = np.empty(nv, dtype=np.int64)
    hi = np.empty(nv, dtype=np.int64)
    S = np.empty(nv, dtype=np.int64)
    wide = np.zeros(nv, dtype=np.bool_)
    limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
    lanes_from_c(acc2, 0, r0, nl, zero_row, special, mc, eminc, neg, mag, qq, bad)
    for blk in range(Kp // L):
        _lane_efdpa_rows_block(sal, eal, sbl, ebl, r0, nv, blk * L, L, fp, neg, mag, qq, lo, hi, S)
        if _lane_efdpa_round(S, lo, hi, nv, window, q[P_PRES], q[P_EMINRES], q[P_EMAXRES], q[P_MODE],
                             q[P_FLUSHOUT] != 0, neg, mag, qq, bad, wide) == 0:
            continue
        for u in range(nl):          # the limbs, for the lanes the window did not hold
            if wide[u] and not bad[u]:
                _limb_lane(A, BT, sa, ea, sb, eb, r0 + u, r0 + u, blk * L, q, limbs, mc, eminc, u, neg, mag, qq,
                           bad)
    for u in range(nl):
        r = r0 + u
        if bad[u]:
            acc[r] = amd_chain(A, BT, sa, ea, sb, eb, r, r, acc[r], q, limbs)
        else:
            acc[r] = lane_value(neg[u], mag[u], qq[u])


# ------------------------------------------------ E-FDPA in binary64 lanes
#: fp32's parameters (p, emin, emax): the result format of the binary64 lane kernels.
_FP32 = (24, -126, 127)
_MIN_NORMAL32 = 2.0 ** -126


def efdpa_float_fits(model, N: int) -> bool:
    """Whether :func:`efdpa_gemm_simd` / :func:`efdpa_rows_float` compute this model:
    every product of two inputs is exact in binary64 (2p <= 53, exponents in range),
    the blocks round to fp32 (the format binary64 -> binary32 conversion rounds to)
    to nearest even, c is an fp32 value (output format fp32), and inputs are not
    flushed (the kernels multiply the values as given); N as :func:`lanes_fit`."""
    fin, res, out = model.in_fmt, model.res_fmt, model.out_fmt
    products_exact = 2 * fin.p <= 53 and 2 * (fin.emax + 1) <= 1023 and 2 * (fin.emin - fin.man_bits) >= -1074
    return (N >= _k.LANES_MIN_N and products_exact and (res.p, res.emin, res.emax) == _FP32
            and (out.p, out.emin, out.emax) == _FP32 and model.rounding == "rne" and not model.flush_subnormals)


@numba.njit(cache=True, inline="always")
def _two_sum(a, b):
    """Knuth's TwoSum: ``s = fl(a + b)`` and the exact ``e = a + b - s`` (binary64, no
    overflow)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


@numba.njit(cache=True, inline="always")
def _round_fp32(c, P, flush):
    """RNE-FP32 of the exact ``c + P`` (binary64 values, no overflow), as
    :func:`limb_round` rounds it: TwoSum gives ``s + e`` exactly, ``s`` rounded to odd
    with ``e`` as its sticky bit is then rounded once more by the binary32 conversion,
    which is correct since 53 >= 24 + 2 (Boldo & Melquiond 2008, round-to-odd).  A
    zero sum is +0 (``P + 0`` is never -0, so neither is ``s``), a non-zero sum that
    rounds to zero keeps its sign, and with ``flush`` a result below 2**-126 becomes
    +0; overflow gives +-Inf."""
    s, e = _two_sum(c, P + 0.0)
    b = _bits_from_f64(s)
    step = ((_bits_from_f64(e) ^ b) >> 63) | 1
    odd = _f64_from_bits(b + (step if (e != 0.0) & ((b & 1) == 0) else np.int64(0)))
    r = np.float64(np.float32(odd))
    return 0.0 if (flush & (abs(r) < _MIN_NORMAL32)) else r


@numba.njit(cache=True)
def _limb_block(a, bt, nk, d, q, man_bits, emin, limbs, sa, ea, sb, eb):
    """The block ``c = d`` plus ``a[0, k] * bt[0, k]`` for k < nk (binary64 values of
    the input format, ``a``, ``bt`` (1, L)) by :func:`efdpa_step` itself: the inputs
    decomposed into the scratch ``sa, ea`` (1, L) and ``sb, eb`` (L, 1), zeros past nk,
    and ``q[P_K] = nk`` (a NaN's payload comes from the real products)."""
    for kk in range(sa.shape[1]):
        sa[0, kk], ea[0, kk] = decompose_one(a[0, kk], man_bits, emin, False) if kk < nk else (0, emin)
        sb[kk, 0], eb[kk, 0] = decompose_one(bt[0, kk], man_bits, emin, False) if kk < nk else (0, emin)
    q[P_K] = nk
    return efdpa_step(a, bt, sa, ea, sb, eb, 0, 0, 0, d, q, limbs)


@numba.njit(cache=True, inline="always")
def _lane_round(c, P, w, flush):
    """One lane's next state: ``(RNE-FP32(c + P), False)`` (:func:`_round_fp32`) when
    its product sum ``P`` is exact (``w`` not set) and the result finite, else ``(c,
    True)``: the block is left to the limbs."""
    r = _round_fp32(c, P, flush)
    w = w | ((r - r) != 0.0)
    return (c if w else r), w


@numba.njit(cache=True, inline="always")
def _float_round(c, P, W, nv, flush):
    """:func:`_lane_round` on nv lanes (``c``, ``P``, ``W`` arrays); returns how many
    are left to the limbs."""
    n = 0
    for u in range(np.uint64(nv)):
        c[u], W[u] = _lane_round(c[u], P[u], W[u], flush)
        n += 1 if W[u] else 0
    return n


@numba.njit(cache=True, parallel=True)
def efdpa_gemm_simd(A, B, acc, q, man_bits, emin, TI, BC):
    """E-FDPA chains (Xie Algorithms 5-6) of fp32-result units for tiles of TI rows x
    16 columns in binary64 on the vector chain
    (:func:`~workbench.engine.vector_chain.efdpa_chain`: c in registers, B's lanes read
    once for up to five rows): the L exact products of a block summed with TwoSum
    (exact unless an error term appears), then c added and rounded once to fp32
    (:func:`_round_fp32`).  Where a block of some lanes is not exact that way (a
    product sum wider than 53 bits, an Inf/NaN operand, c or result) the chain stops
    there; those lanes' block is computed by :func:`efdpa_step` (:func:`_limb_block`)
    and the chain goes on: the bits of :func:`amd_gemm`, NaN payloads included.
    ``A`` (M, K), ``B`` (K, N) C-ordered float64 values of the input format (K >= 1,
    unpadded); ``acc`` holds C on entry and D on exit; K walked in chunks of BC
    blocks."""
    M, K = A.shape
    N = acc.shape[1]
    L = q[P_L]
    W = _vc.W
    cp = np.zeros(_vc.E_N, dtype=np.int64)
    cp[_vc.E_L] = L
    cp[_vc.E_FLUSH] = 1 if q[P_FLUSHOUT] != 0 else 0
    nblocks = (K + L - 1) // L
    n_it = (M + TI - 1) // TI
    n_jt = (N + W - 1) // W
    for t in numba.prange(n_it * n_jt):
        i0, ti, j0, nl, _ = lane_tile(np.int64(t), n_jt, TI, W, M, N, N)
        cst = np.zeros((ti, W), dtype=np.float64)
        wf = np.zeros((ti, W), dtype=np.int64)
        ql = q.copy()
        limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
        la = np.zeros((1, L), dtype=np.float64)
        lb = np.zeros((1, L), dtype=np.float64)
        sa = np.zeros((1, L), dtype=np.int32)
        ea = np.zeros((1, L), dtype=np.int32)
        sb = np.zeros((L, 1), dtype=np.int32)
        eb = np.zeros((L, 1), dtype=np.int32)
        for ii in range(ti):
            for u in range(nl):
                cst[ii, u] = acc[i0 + ii, j0 + u]
        calls = (ti + _vc.MAX_ROWS - 1) // _vc.MAX_ROWS
        for b0 in range(0, nblocks, BC):
            b1 = min(nblocks, b0 + BC)
            for c in range(calls):
                r0 = ti * c // calls
                nr = ti * (c + 1) // calls - r0
                blk = b0
                while blk < b1:
                    stop = _vc.efdpa_chain(A, B, cst, wf, cp, i0 + r0, nr, r0, j0, nl, blk, b1)
                    if stop >= b1:
                        break
                    k0 = stop * L
                    nk = min(L, K - k0)
                    for rr in range(r0, r0 + nr):      # the limbs, for the lanes the fast sum did not hold
                        for u in range(nl):
                            if wf[rr, u] != 0:
                                for kk in range(nk):
                                    la[0, kk] = A[i0 + rr, k0 + kk]
                                    lb[0, kk] = B[k0 + kk, j0 + u]
                                cst[rr, u] = _limb_block(la, lb, nk, cst[rr, u], ql, man_bits, emin, limbs, sa, ea,
                                                         sb, eb)
                                wf[rr, u] = 0
                    blk = stop + 1
        for ii in range(ti):
            for u in range(nl):
                acc[i0 + ii, j0 + u] = cst[ii, u]


@numba.njit(cache=True, inline="always")
def _float_rows_block(at, bt, k, nk, P, W):
    """A block of :func:`efdpa_gemm_simd` for batched dot products: product kk of lane u is
    ``at[k + kk, u] * bt[k + kk, u]`` (both operands per lane)."""
    ul = np.uint64(P.size)
    for u in range(ul):
        P[u] = at[k, u] * bt[k, u]
        W[u] = False
    for kk in range(1, nk):
        for u in range(ul):
            s, e = _two_sum(P[u], at[k + kk, u] * bt[k + kk, u])
            P[u] = s
            W[u] |= e != 0.0


@numba.njit(cache=True, parallel=True)
def efdpa_rows_float(a, b, acc, q, man_bits, emin, R):
    """Batched E-FDPA dot products of fp32-result units (:func:`efdpa_float_fits`),
    R rows side by side in binary64 as :func:`efdpa_gemm_simd` sums
    them: ``acc[r]`` <- the chain over row r of ``a`` and of ``b`` (both (n, K)
    C-ordered float64 values of the input format, K >= 1), every block that is not
    exact in binary64 computed by :func:`efdpa_step`: the bits of :func:`amd_rows`.
    Each chunk of K is transposed into two small buffers first (rows past n stay
    zero: computed, never written).  R is an argument, not a constant: with the
    lanes fixed at compile time LLVM turns the transposition into gathers, four
    times slower."""
    n, K = a.shape
    L = q[P_L]
    flush = q[P_FLUSHOUT] != 0
    kc_max = L * max(1, 64 // L)
    for t in numba.prange((n + R - 1) // R):
        r0 = t * R
        nl = min(R, n - r0)
        at = np.zeros((kc_max, R), dtype=np.float64)
        bt = np.zeros((kc_max, R), dtype=np.float64)
        c = np.zeros(R, dtype=np.float64)
        P = np.empty(R, dtype=np.float64)
        W = np.empty(R, dtype=np.bool_)
        ql = q.copy()
        limbs = np.zeros(max(1, q[P_NLIMBS]), dtype=np.int64)
        la = np.zeros((1, L), dtype=np.float64)
        lb = np.zeros((1, L), dtype=np.float64)
        sa = np.zeros((1, L), dtype=np.int32)
        ea = np.zeros((1, L), dtype=np.int32)
        sb = np.zeros((L, 1), dtype=np.int32)
        eb = np.zeros((L, 1), dtype=np.int32)
        for u in range(nl):
            c[u] = acc[r0 + u]
        for k0 in range(0, K, kc_max):
            kc = min(kc_max, K - k0)
            for u in range(nl):
                for kk in range(kc):
                    at[kk, u] = a[r0 + u, k0 + kk]
                    bt[kk, u] = b[r0 + u, k0 + kk]
            for kb in range(0, kc, L):
                nk = min(L, kc - kb)
                _float_rows_block(at, bt, kb, nk, P, W)
                if _float_round(c, P, W, R, flush) == 0:
                    continue
                for u in range(nl):          # the limbs, for the lanes the fast sum did not hold
                    if W[u]:
                        for kk in range(nk):
                            la[0, kk] = at[kb + kk, u]
                            lb[0, kk] = bt[kb + kk, u]
                        c[u] = _limb_block(la, lb, nk, c[u], ql, man_bits, emin, limbs, sa, ea, sb, eb)
        for u in range(nl):
            acc[r0 + u] = c[u]


def _nonempty_k(x: np.ndarray, L: int, axis: int) -> np.ndarray:
    """``x`` C-ordered float64, an empty K axis (``axis``) made one block of L zeros
    (the chain then rounds c once, as :func:`pad_k` makes it)."""
    if x.shape[axis] == 0:
        shape = list(x.shape)
        shape[axis] = L
        return np.zeros(shape)
    return np.ascontiguousarray(x, dtype=np.float64)


def efdpa_float(model, A: np.ndarray, B: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """E-FDPA over whole matrices on :func:`efdpa_gemm_simd` (models of
    :func:`efdpa_float_fits`): ``A`` (M, K) and ``B`` (K, N) float64 values of the
    input format (any layout), ``acc`` C on entry and D on exit."""
    q = amd_params(model, KIND_E)
    A, B = _nonempty_k(A, model.L, 1), _nonempty_k(B, model.L, 0)
    q[P_K] = A.shape[1]
    M, N = acc.shape
    BC = max(1, _LANE_CHUNK // (model.L * _vc.W))
    fin = model.in_fmt
    efdpa_gemm_simd(A, B, acc, q, fin.man_bits, fin.emin, _vc.simd_rows(M, N, numba.get_num_threads()), BC)
    return acc


def amd_params(model, code: int) -> np.ndarray:
    """The int64 parameter vector of :func:`amd_gemm` for a model computing ``code``
    (:data:`KIND_E`, :data:`KIND_TR` or :data:`KIND_GTR`), validated."""
    fin = model.in_fmt
    out = model.out_fmt
    res = model.res_fmt
    if 2 * fin.p > 62:
        raise ValueError(f"in_format={model.in_format!r}: products of {fin.p}-bit significands do not fit the "
                         f"64-bit kernels of {model.kind!r}")
    q = fused_params(model, 0 if code == KIND_E else model.F)
    q[P_KIND] = code
    if code == KIND_E:
        if res.p > 59:
            raise ValueError(f"result precision {res.p} is too wide for the E-FDPA rounding (at most 59 bits)")
        base = min(2 * (fin.emin - fin.man_bits), out.emin - out.man_bits)
        top = max(2 * (fin.emax + 1) + 1, out.emax + 2) + int(math.ceil(math.log2(model.L + 2))) + 2
        q[P_BASE] = base
        q[P_NLIMBS] = (top - base) // LIMB_BITS + 3
    else:
        F, F2 = model.F, model.F2
        width = max(F, F2) + 3 + int(math.ceil(math.log2(model.L + 1))) + 1
        if width > 62 or out.p + F > 61:
            raise ValueError(f"F={F}, F2={F2}, L={model.L}: the fixed-point sums of {model.kind!r} need {width} bits, "
                             "more than the kernel's 62")
        q[P_F2] = F2
        q[P_OVF] = out.emax + 1
        q[P_ARZ] = model.alignment_rounding == "rz"
    return q


def amd_dots(model, code: int, a, b, acc):
    """Batched E-FDPA / TR-FDPA / GTR-FDPA dot products ``acc[r]`` <- unit(a[r, :],
    b[r, :], acc[r]) (``a``, ``b`` (n, K) float64 in the input format, K zero-padded
    to L) on :func:`efdpa_rows_float` (E-FDPA of :func:`efdpa_float_fits`, straight
    from ``a`` and ``b``), :func:`efdpa_rows_lanes` or :func:`trfdpa_rows_lanes`
    (:func:`lanes_fit` with N = n) or :func:`amd_rows`: the bits of :func:`amd_gemm`'s
    diagonal."""
    if code == KIND_E and efdpa_float_fits(model, a.shape[0]):
        a2, b2 = _nonempty_k(a, model.L, 1), _nonempty_k(b, model.L, 1)
        q = amd_params(model, code)
        q[P_K] = a2.shape[1]
        efdpa_rows_float(a2, b2, acc, q, model.in_fmt.man_bits, model.in_fmt.emin, _ROW_LANES)
        return acc
    q = amd_params(model, code)
    q[P_K] = a.shape[1]
    (n, K), L = a.shape, model.L
    if not lanes_fit(model, n):
        a2, b2, sa, ea, sb, eb = padded_decomposed(model, a, b, L)
        amd_rows(a2, b2, sa, ea, sb.T, eb.T, acc, q)
        return acc
    Kp = K + (-K) % L if K else L
    fin, flush = model.in_fmt, model.flush_subnormals
    none = np.empty((0, K))     # each operand alone, decomposed into the lane layout (Kp, np)
    _, _, sal, eal, special_a = decompose_checked(none, a.T, fin, flush, Kp, False)
    _, _, sbl, ebl, special_b = decompose_checked(none, b.T, fin, flush, Kp, False)
    rows_special = np.zeros(n, dtype=np.int8)
    if special_a or special_b:
        special_rows = np.asarray((eal >= SPECIAL).any(axis=0) | (ebl >= SPECIAL).any(axis=0))
        rows_special[:] = special_rows[:n]
    if code == KIND_E:
        efdpa_rows_lanes(a, b, sal.T, eal.T, sbl, ebl, sal, eal, sbl, ebl, rows_special, acc, q)
    else:
        trfdpa_rows_lanes(sal.T, eal.T, sbl, ebl, sal, eal, sbl, ebl, rows_special, acc, q)
    return acc


def lanes_fit(model, N: int) -> bool:
    """Whether the lane kernels compute this product: at least
    :data:`~workbench.engine.kernels.LANES_MIN_N` columns and a result format that fits
    in the output format (each block's result is exactly the next block's c)."""
    res, out = model.res_fmt, model.out_fmt
    return N >= _k.LANES_MIN_N and res.p <= out.p and res.emin >= out.emin


def efdpa_lanes(model, A, BT, sa, ea, sb, eb, acc, special: bool = True):
    """E-FDPA over whole matrices on :func:`efdpa_gemm_lanes`: ``A`` (M, K) and ``BT``
    (N, K) float64 (any layout; read for NaN payloads only), ``sa, ea`` (M, Kp) and
    ``sb, eb`` (Kp, N) decomposed, K zero-padded to L (B copied into the lane layout
    unless it is there already); ``acc`` C on entry, D on exit.  ``special=False``
    promises that no operand is Inf/NaN."""
    q = amd_params(model, KIND_E)
    q[P_K] = A.shape[1]
    M, N = acc.shape
    sbl, ebl, row_special, col_special = _k.lane_operands(sa, ea, sb, eb, N, model.in_fmt.emin, special)
    TI, TJ = _k.output_tiles(M, N, numba.get_num_threads())
    TJ = -(-TJ // _k.LANE_PAD) * _k.LANE_PAD
    BC = max(1, _LANE_CHUNK // (model.L * sbl.shape[1]))
    efdpa_gemm_lanes(A, BT, sa, ea, sbl, ebl, row_special, col_special, acc, q, TI, TJ, BC)
    return acc


#: Elements of B (significands and exponents) the E-FDPA lane kernel walks per chunk of K.
_LANE_CHUNK = 1 << 13


def run_amd(model, code: int, A, BT, acc):
    """E-FDPA / TR-FDPA / GTR-FDPA over whole matrices (K zero-padded to L): the lane
    kernels for products of :func:`lanes_fit`, :func:`amd_gemm` otherwise."""
    q = amd_params(model, code)
    q[P_K] = A.shape[1]
    A2, BT2, sa, ea, sb, eb = padded_decomposed(model, A, BT, model.L)
    M, N = acc.shape
    if not lanes_fit(model, N):
        amd_gemm(A2, BT2, sa, ea, sb.T, eb.T, acc, q)
        return acc
    if code == KIND_E:
        return efdpa_lanes(model, A, BT, sa, ea, sb.T, eb.T, acc)
    return trfdpa_lanes(model, code, sa, ea, sb.T, eb.T, acc)


def screen_amd(model, code: int, battery, acc):
    """:func:`amd_rows` on a :class:`~workbench.engine.operands.RowBattery`'s
    decomposition (the probes' search runs every candidate E-/TR-/GTR-FDPA on one
    battery: decomposed once per block size): the bits of :func:`amd_dots`."""
    q = amd_params(model, code)
    q[P_K] = battery.a.shape[1]
    amd_rows(*battery.decomposed(model, model.L), acc, q)  # type: ignore[call-arg]  # numba's Dispatcher takes *args
    return acc


__all__ = ["run_amd", "amd_params", "amd_chain", "amd_small", "efdpa_float_fits", "efdpa_float", "efdpa_gemm_simd",
           "efdpa_rows_float", "amd_gemm", "amd_rows", "amd_dots", "screen_amd", "efdpa_rows_lanes", "trfdpa_gemm_lanes",
           "trfdpa_rows_lanes", "trfdpa_lanes", "trfdpa_gemm_simd", "tr_simd_eligible", "tr_simd",
           "tr_chain_constants", "efdpa_gemm_lanes", "efdpa_lanes", "lanes_fit", "efdpa_step", "trfdpa_step",
           "tr_parts", "tr_sum_bits", "group_sum", "limb_round", "scan_specials", "shift_floor", "shift_align"]
