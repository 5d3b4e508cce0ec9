"""T-FDPA's driver of the explicit-vector chain (:mod:`workbench.engine.vector_chain`,
Xie et al. 2025 Algorithm 7 on 16-lane LLVM vectors, up to five rows of A per call):
which models and products it computes (:func:`simd_eligible`: one group, c early,
chained accumulation, 32-bit sums), whether a block's tail fits 32-bit lanes
(:func:`narrow_tail`), the constants the chain reads (:func:`chain_constants`), and the
parallel driver (:func:`tfdpa_gemm_simd`)."""
from __future__ import annotations

import numba
import numpy as np

from ...kernels import lane_tile, lane_value
from ...layout import ACC_CHAIN, P_ACCMODE, P_BC, P_F, P_L
from ...ops import bit_length
from ...vector_chain import (C_EMAXR, C_EMINC, C_EMINR, C_EZP, C_F, C_FLUSH, C_G, C_L, C_MODE, C_N, C_PR, C_ROFF, W,
                             chain_tile, chain_variant, tile_state)
from .kernels import _accumulate, _sum_params, fast_eligible


@numba.njit(cache=True, inline="always")
def simd_eligible(prm):
    """Whether :func:`tfdpa_gemm_simd` computes this model and accumulation: the fast
    path of :func:`~workbench.engine.operations.tfdpa.kernels._chain` (lane-eligible, one group, c
    early), chained blocks, and products and block sums that fit 32 bits (the narrow
    path of :func:`~workbench.engine.operations.tfdpa.kernels._lane_block`)."""
    if not (fast_eligible(prm) and prm[P_ACCMODE] == ACC_CHAIN):
        return False
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    F = prm[P_F]
    G = F - fp if F > fp else 0
    st = 1 if sticky else 0
    return fp + 2 + G + st <= 31 and bit_length(prm[P_L] - 1) + F + 2 + st <= 31


@numba.njit(cache=True, inline="always")
def narrow_tail(prm):
    """Whether a block's tail fits 32-bit lanes (:func:`~workbench.engine.vector_chain._chain16` with ``wide`` False):
    c aligned is below 2**(F + 1 + st) and each of the L aligned terms below
    2**(F + 2 + st), so the block's sum is below (2L + 1) 2**(F + 1 + st), which must
    stay below 2**31; the accumulator's significand (output and result formats of at
    most 30 bits) too.  Volta's and Ampere's fp16/bf16 units (L 4 and 8) qualify,
    Hopper's (L 16, F 25) are one bit past it."""
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    st = 1 if sticky else 0
    return bit_length(2 * prm[P_L] + 1) + prm[P_F] + 1 + st <= 31 and mc <= 29 and pr <= 29


@numba.njit(cache=True)
def chain_constants(prm):
    """The int64 constants :func:`~workbench.engine.vector_chain._chain16` reads (fields ``C_*``)."""
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    F = prm[P_F]
    G = F - fp if F > fp else 0
    cp = np.zeros(C_N, dtype=np.int64)
    cp[C_L] = prm[P_L]
    cp[C_F] = F
    cp[C_G] = G
    cp[C_ROFF] = G - F + fp
    cp[C_EZP] = ezp
    cp[C_EMINC] = eminc
    cp[C_PR] = pr
    cp[C_EMINR] = eminr
    cp[C_EMAXR] = emaxr
    cp[C_MODE] = mode
    cp[C_FLUSH] = 1 if flush else 0
    return cp


@numba.njit(cache=True, parallel=True)
def tfdpa_gemm_simd(sa, ea, sb, eb, row_special, col_special, acc, prm, TI):
    """:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_gemm_lanes` for the models and
    accumulation of :func:`simd_eligible`, on tiles of ``TI`` rows x 16 columns (one
    vector of lanes, :func:`~workbench.engine.vector_chain._chain16`): the same bits.  ``sa, ea`` (M, Kp) and ``sb, eb``
    (Kp, NB >= N) int32, C-ordered; ``row_special``/``col_special`` as the lane
    kernel's; outputs meeting Inf/NaN (A's row, B's column or C) or overflow are
    recomputed by the scalar :func:`~workbench.engine.operations.tfdpa.kernels._accumulate`."""
    M, Kp = sa.shape
    N = acc.shape[1]
    L = prm[P_L]
    nblocks = Kp // L
    BC = prm[P_BC]
    fp, ezp, sticky, mode, pr, eminr, emaxr, mc, eminc, flush = _sum_params(prm)
    cp = chain_constants(prm)
    variant = chain_variant(narrow_tail(prm), sticky)
    n_it = (M + TI - 1) // TI
    n_jt = (N + W - 1) // W
    fast = fast_eligible(prm)
    for t in numba.prange(n_it * n_jt):
        # prange's index is unsigned: as int64, one compiled _accumulate for every caller
        i0, ti, j0, nl, _ = lane_tile(np.int64(t), n_jt, TI, W, M, N, N)
        st = tile_state(acc, i0, ti, j0, nl, row_special, col_special, mc, eminc)
        for b0 in range(0, nblocks, BC):
            chain_tile(variant, sa, ea, sb, eb, st, cp, i0, row_special, j0, nl, b0, min(nblocks, b0 + BC))
        for ii in range(ti):
            i = i0 + ii
            for u in range(nl):
                j = j0 + u
                if st[ii, 3, u] != 0 or row_special[i] != 0:
                    acc[i, j] = _accumulate(sa, ea, sb, eb, i, j, np.int64(0), nblocks, acc[i, j], 0.0, prm, fast)[0]
                else:
                    acc[i, j] = lane_value(st[ii, 0, u] != 0, st[ii, 1, u], st[ii, 2, u])


__all__ = ["simd_eligible", "narrow_tail", "chain_constants", "tfdpa_gemm_simd"]
