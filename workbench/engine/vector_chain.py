"""Chains of fused blocks on explicit 16-lane vectors, for products with few columns.

:func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_gemm_lanes` lets LLVM vectorise loops over the
outputs of a row; with few columns (10 x 1,000,000 x 10: ten lanes padded to 16) its
loop set-up costs as much as the arithmetic, and each block's tail (c's exponent, its
alignment, the rounding) runs as separate loops.  Here one compiled function,
written at the level of LLVM vectors (:func:`_chain16`), runs a whole range of
blocks of up to :data:`MAX_ROWS` rows of A against 16 columns of B with the lane state
held in registers (the rows share each load of B's lanes, and their independent
chains keep the core busy): per block the largest exponent, c aligned to it, every
product aligned and summed in 32 bits, and the rounding - Xie et al. 2025 Algorithm 7
(RZ_F alignment, one rounding rho per block) and Khattak & Mikaitis 2025's generic
block FMA with c early, the arithmetic of :func:`~workbench.engine.operations.tfdpa.kernels._lane_block`
(its narrow path) and :func:`~workbench.engine.ops.round_int`, lane for lane; with
``tr`` the block of TR-FDPA (Xie Algorithm 10, driven by
:func:`~workbench.engine.operations.amd_fdpa.kernels.trfdpa_gemm_simd`).  :func:`efdpa_chain` does the
same for CDNA1's E-FDPA in binary64 (driven by
:func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_gemm_simd`).  B's rows are read with masked
loads, so B needs no padding columns.

The code generation is shared below the operations because T-FDPA and TR-FDPA run the
same block on it (``tr`` selects TR-FDPA's tail); each operation's driver is in its
folder: T-FDPA's (:mod:`workbench.engine.operations.tfdpa.vector_chain`: which models
and products it computes, and the parallel driver, which hands outputs meeting Inf/NaN
or overflow to the scalar path exactly as the lane kernel does) and the AMD family's
(:mod:`workbench.engine.operations.amd_fdpa.kernels`).  :func:`tile_state` and
:func:`chain_tile` are the parts every driver shares.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..numbers.formats import RD, RNE, RU
from .kernels import _loop, _splat, lanes_from_c, output_tiles
from .ops import NEG_BIG

#: Lanes of one vector (16 x 32 bits: one AVX-512 register).
W = 16
#: Most rows of A one call of :func:`_chain16` runs together.
MAX_ROWS = 5
#: Fields of the constants array the vector chain reads (:func:`chain_constants`).
C_L, C_F, C_G, C_ROFF, C_EZP, C_EMINC, C_PR, C_EMINR, C_EMAXR, C_MODE, C_FLUSH = range(11)
#: Fields only TR-FDPA's tail reads (:func:`workbench.engine.operations.amd_fdpa.kernels.tr_chain_constants`): F2, the
#: tail's fractional bits max(F, F2 + 1), the product exponent from which a block goes to the scalar
#: path (ovf - 1), c's exponent when c = 0 and whether that exponent is used (Xie Algorithm 10).
C_F2, C_GT, C_OVF1, C_EZ, C_USEEZ, C_N = range(11, 17)
#: "No term": the exponent of a sum without products (:data:`workbench.engine.ops.NEG_BIG`).
NO_TERM = NEG_BIG


def _chain16(sticky: bool, wide: bool, tr: str | None = None):  # type: ignore[no-untyped-def]
    """``chain16(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)``: T-FDPA blocks b0 .. b1-1
    (K = blk * L .. blk * L + L - 1) of the R = nr rows i .. i+R-1 of A (1 <= nr <=
    :data:`MAX_ROWS`) (``sa, ea`` (M, Kp)
    int32) against columns j0 .. j0+nl-1 of B (``sb, eb`` (Kp, NB) int32, C-ordered,
    nl <= 16), each lane's accumulator ``(-1)**neg * mag * 2**q`` of row i + r read
    from and written back to ``st[r0 + r]`` (``st`` (rows, 4, 16) int64: neg, mag, q,
    overflowed), ``cp`` the constants of :func:`chain_constants`; ``sticky`` fixes the
    sticky bit at compile time.  Lanes beyond nl read zeros and compute nothing
    meaningful.  The R rows share each load of B's lanes, and their chains, each a
    sequence of dependent block tails, are independent work for the core to overlap.

    With ``tr`` (``"rd"`` or ``"rz"``, the alignment rounding) the blocks are
    TR-FDPA's (Xie et al. 2025 Algorithm 10 as MMA-Sim 2.1.1 computes it, the arithmetic of
    :func:`~workbench.engine.operations.amd_fdpa.kernels._lane_group32` and
    :func:`~workbench.engine.operations.amd_fdpa.kernels._lane_tr_round`): the products alone are summed
    at their largest exponent (RZ_F), then that sum and c are re-aligned at the
    larger exponent to F2 + 1 and F fractional bits, added, cut to F2 + 1 significant
    bits and rounded; ``cp`` is then
    :func:`~workbench.engine.operations.amd_fdpa.kernels.tr_chain_constants`, the tail 64-bit, and a
    lane whose products reach the overflow threshold is flagged for the scalar path.

    Each block's tail (c aligned, the sum with c, the rounding) runs in 64-bit lanes
    when ``wide``, else in 32-bit ones, twice as many per instruction: exact when
    :func:`narrow_tail` holds (every shift count clamped to the width; a right shift
    of 32 or more in the rounding, which the 32-bit lanes cannot express, leaves
    less than half a unit and never rounds to nearest upwards)."""

    @intrinsic
    def chain16(typingctx, sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1):  # type: ignore[no-untyped-def]
        arrays = (sa, ea, sb, eb, st, cp)
        if not all(isinstance(x, types.Array) and x.layout == "C" for x in arrays):
            return None
        if [x.dtype for x in arrays] != [types.int32] * 4 + [types.int64] * 2:
            return None
        sig = types.void(*arrays, *[types.int64] * 7)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            sa_, ea_, sb_, eb_, st_, cp_ = (context.make_array(t)(context, builder, v)
                                            for t, v in zip(signature.args[:6], args[:6]))
            iv, nrv, r0v, j0v, nlv, b0v, b1v = args[6:]
            i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
            v1, v32, v64 = ir.VectorType(i1, W), ir.VectorType(i32, W), ir.VectorType(i64, W)
            Kp = builder.extract_value(sa_.shape, 1)
            NB = builder.extract_value(sb_.shape, 1)

            def declare(name, fnty):  # type: ignore[no-untyped-def]
                fn = builder.module.globals.get(name)
                return fn if fn is not None else ir.Function(builder.module, fnty, name)

            mload = declare("llvm.masked.load.v16i32.p0", ir.FunctionType(v32, [v32.as_pointer(), i32, v1, v32]))
            vt = v64 if wide else v32              # the lanes of the block's tail
            bits = 64 if wide else 32
            ctlz = declare(f"llvm.ctlz.v16i{bits}", ir.FunctionType(vt, [vt, i1]))

            def splat(x, vt):  # type: ignore[no-untyped-def]
                return _splat(builder, x, vt)

            def c64(v):  # type: ignore[no-untyped-def]
                return ir.Constant(v64, [v] * W)

            def ct(v):  # type: ignore[no-untyped-def]
                return ir.Constant(vt, [v] * W)

            def to_t(x):  # type: ignore[no-untyped-def]
                """A scalar i64 or a vector of i32 lanes as the tail's lanes."""
                if isinstance(x.type, ir.VectorType):
                    return x if x.type == vt else builder.sext(x, vt)
                return splat(x if wide else builder.trunc(x, i32), vt)

            def c32(v):  # type: ignore[no-untyped-def]
                return ir.Constant(v32, [v] * W)

            def smax(a, b):  # type: ignore[no-untyped-def]
                return builder.select(builder.icmp_signed(">", a, b), a, b)

            def smin(a, b):  # type: ignore[no-untyped-def]
                return builder.select(builder.icmp_signed("<", a, b), a, b)

            def bitlen(m):  # type: ignore[no-untyped-def]
                return builder.sub(ct(bits), builder.call(ctlz, [m, ir.Constant(i1, 0)]))

            def const(k):  # type: ignore[no-untyped-def]
                return builder.load(builder.gep(cp_.data, [ir.Constant(i64, k)]))

            L, F, G, roff, ezp, eminc, pr, eminr, emaxr, mode, flush = (
                const(k) for k in (C_L, C_F, C_G, C_ROFF, C_EZP, C_EMINC, C_PR, C_EMINR, C_EMAXR, C_MODE,
                                   C_FLUSH))
            st_bit = 1 if sticky else 0
            lanes = ir.Constant(v32, list(range(W)))
            mask = builder.icmp_signed("<", lanes, splat(builder.trunc(nlv, i32), v32))
            zero32 = c32(0)
            ezp_v = splat(builder.trunc(ezp, i32), v32)
            G_v = splat(builder.trunc(G, i32), v32)
            eminc_v, pr1_v, eminr_v, emaxr_v = (to_t(x) for x in (eminc, builder.sub(pr, ir.Constant(i64, 1)),
                                                                eminr, emaxr))
            F_v = to_t(F)
            scale_off = to_t(builder.add(F, ir.Constant(i64, st_bit)))   # rounding scale = emx - F - st
            top_shift = ct(bits - 1)
            is_rne = builder.icmp_signed("==", mode, ir.Constant(i64, RNE))
            is_rd = builder.icmp_signed("==", mode, ir.Constant(i64, RD))
            is_ru = builder.icmp_signed("==", mode, ir.Constant(i64, RU))
            flush_v = splat(builder.icmp_signed("!=", flush, ir.Constant(i64, 0)), v1)
            if tr:
                assert wide and not sticky, "TR-FDPA's tail is 64-bit and has no sticky bit"
                F2, GT, ovf1, ez, use_ez = (const(k) for k in (C_F2, C_GT, C_OVF1, C_EZ, C_USEEZ))
                ovf1_v = splat(builder.trunc(ovf1, i32), v32)
                ez_v, GT_v, no_term = to_t(ez), to_t(GT), ct(NO_TERM)
                F2_v = to_t(F2)
                F21mF_v = to_t(builder.sub(builder.add(F2, ir.Constant(i64, 1)), F))
                T_up, c_up = to_t(builder.sub(builder.sub(GT, F2), ir.Constant(i64, 1))), to_t(builder.sub(GT, F))
                use_ez_v = splat(builder.icmp_signed("!=", use_ez, ir.Constant(i64, 0)), v1)

            def emit(R):  # type: ignore[no-untyped-def]
                """The chain of R rows, from the current block on."""
                def state_row(r, f):  # type: ignore[no-untyped-def]
                    """A pointer to field f of row r0 + r of ``st`` as 16 int64 lanes."""
                    at = builder.add(builder.mul(builder.add(r0v, ir.Constant(i64, r)), ir.Constant(i64, 4 * W)),
                                     ir.Constant(i64, f * W))
                    return builder.bitcast(builder.gep(st_.data, [at]), v64.as_pointer())

                state0 = []
                for r in range(R):
                    state0.append(builder.icmp_signed("!=", builder.load(state_row(r, 0), align=8), c64(0)))
                    state0.extend((x if wide else builder.trunc(x, vt)) for x in (builder.load(state_row(r, f), align=8)
                                                                                   for f in (1, 2)))
                    state0.append(builder.icmp_signed("!=", builder.load(state_row(r, 3), align=8), c64(0)))
                a_rows = [builder.mul(builder.add(iv, ir.Constant(i64, r)), Kp) for r in range(R)]

                def a_operands(r, k):  # type: ignore[no-untyped-def]
                    """(a's significand, a's exponent) of row r at k."""
                    at = builder.add(a_rows[r], k)
                    return builder.load(builder.gep(sa_.data, [at])), builder.load(builder.gep(ea_.data, [at]))

                def b_operands(k):  # type: ignore[no-untyped-def]
                    """(B's significands, B's exponents) at k: 16 lanes, masked."""
                    off = builder.add(builder.mul(k, NB), j0v)
                    return tuple(builder.call(mload, [builder.bitcast(builder.gep(x.data, [off]), v32.as_pointer()),
                                                      ir.Constant(i32, 4), mask, zero32]) for x in (sb_, eb_))

                def loop(name, lo, hi, init):  # type: ignore[no-untyped-def]
                    return _loop(builder, name, lo, hi, init)

                def c_exponent(mag, q):  # type: ignore[no-untyped-def]
                    """c's exponent, clamped at the output format's emin; ezp for c = 0."""
                    ce = smax(builder.add(builder.sub(bitlen(mag), ct(1)), q), eminc_v)
                    return builder.select(builder.icmp_signed("!=", mag, ct(0)),
                                          ce if not wide else builder.trunc(ce, v32), ezp_v)

                def emax_step(emx, a_s, a_e, bs, be):  # type: ignore[no-untyped-def]
                    """The running maximum after one step (zero products: ezp)."""
                    e = builder.add(splat(a_e, v32), be)
                    zero = builder.or_(splat(builder.icmp_signed("==", a_s, ir.Constant(i32, 0)), v1),
                                       builder.icmp_signed("==", bs, zero32))
                    return smax(emx, builder.select(zero, ezp_v, e))

                def sum_step(S32, emx, a_s, a_e, bs, be):  # type: ignore[no-untyped-def]
                    """The running sum after one product, aligned: |p| 2**G shifted right, truncated."""
                    p32 = builder.mul(splat(a_s, v32), bs)
                    off = splat(builder.sub(builder.trunc(roff, i32), a_e), v32)
                    r32 = smax(smin(builder.sub(builder.add(emx, off), be), c32(31)), zero32)
                    p_neg = builder.icmp_signed("<", p32, zero32)
                    m32 = builder.shl(builder.select(p_neg, builder.neg(p32), p32), G_v)
                    t32 = builder.ashr(m32, r32)
                    if sticky:
                        lost32 = builder.icmp_signed("!=", builder.shl(t32, r32), m32)
                        t32 = builder.or_(builder.shl(t32, c32(1)), builder.zext(lost32, v32))
                    return builder.add(S32, builder.select(p_neg, builder.neg(t32), t32))

                def c_aligned(neg, mag, q, emx):  # type: ignore[no-untyped-def]
                    """c aligned to F fractional bits below emx (shift_floor; sticky: shift_lost), signed."""
                    sh = builder.sub(builder.add(q, F_v), to_t(emx))
                    left = smin(smax(sh, ct(0)), top_shift)
                    r = smin(smax(builder.neg(sh), ct(0)), top_shift)
                    t = builder.ashr(builder.shl(mag, left), r)
                    if sticky:
                        lost = builder.icmp_signed("!=", builder.and_(mag, builder.sub(builder.shl(ct(1), r), ct(1))),
                                                   ct(0))
                        t = builder.or_(builder.shl(t, ct(1)), builder.zext(lost, vt))
                    return builder.select(neg, builder.neg(t), t)

                def rounded(bad, S, S32, emx):  # type: ignore[no-untyped-def]
                    """round_int(S + S32, emx - F - st): rho to the result format; the next state."""
                    return round_int(builder.add(S, to_t(S32)), builder.sub(to_t(emx), scale_off), bad)

                def shift_align(x, sh):  # type: ignore[no-untyped-def]
                    """x 2**sh cut to an integer toward -inf (shift_floor) or, for "rz", toward zero."""
                    flip = None
                    if tr == "rz":
                        flip = builder.and_(builder.icmp_signed("<", x, ct(0)), builder.icmp_signed("<", sh, ct(0)))
                        x = builder.select(flip, builder.neg(x), x)
                    left = smin(smax(sh, ct(0)), top_shift)
                    r = smin(smax(builder.neg(sh), ct(0)), top_shift)
                    y = builder.ashr(builder.shl(x, left), r)
                    return y if flip is None else builder.select(flip, builder.neg(y), y)

                def tr_rounded(neg, mag, q, bad, T32, emx):  # type: ignore[no-untyped-def]
                    """TR-FDPA's tail (_lane_tr_round): the products' sum T32 at emx and c
                    re-aligned at E = max(c's exponent, emx) to F2 + 1 and F bits, added,
                    cut to F2 + 1 significant bits (amd_fdpa.kernels.tr_cut), rounded; the next state."""
                    bad = builder.or_(bad, builder.icmp_signed(">=", emx, ovf1_v))
                    emax = to_t(emx)
                    nz = builder.icmp_signed("!=", mag, ct(0))
                    ec = builder.select(nz, smax(builder.add(builder.sub(bitlen(mag), ct(1)), q), eminc_v), ez_v)
                    has_c = builder.or_(nz, use_ez_v)
                    E = builder.select(builder.and_(has_c, builder.icmp_signed(">", ec, emax)), ec, emax)
                    Tp = shift_align(to_t(T32), builder.sub(builder.add(F21mF_v, emax), E))
                    scp = shift_align(builder.select(neg, builder.neg(mag), mag), builder.sub(builder.add(F_v, q), E))
                    S = builder.add(builder.shl(builder.select(builder.icmp_signed("!=", emax, no_term), Tp, ct(0)),
                                                T_up),
                                    builder.shl(builder.select(nz, scp, ct(0)), c_up))
                    scale = builder.sub(E, GT_v)
                    lead = builder.add(builder.sub(bitlen(builder.select(builder.icmp_signed("<", S, ct(0)),
                                                                         builder.neg(S), S)), ct(1)), scale)
                    drop = smax(builder.sub(builder.sub(smax(lead, eminr_v), F2_v), scale), ct(0))
                    return round_int(shift_align(S, builder.neg(drop)), builder.add(scale, drop), bad)

                def round_int(Stot, scale, bad):  # type: ignore[no-untyped-def]
                    """ops.round_int(Stot, scale) to the result format, lane by lane; the next state."""
                    negS = builder.icmp_signed("<", Stot, ct(0))
                    m = builder.select(negS, builder.neg(Stot), Stot)
                    lead = builder.add(builder.sub(bitlen(m), ct(1)), scale)
                    qq = builder.sub(smax(lead, eminr_v), pr1_v)
                    shr = builder.sub(qq, scale)
                    rr = smin(smax(shr, ct(0)), top_shift)
                    keep = builder.ashr(m, rr)
                    rem = builder.sub(m, builder.shl(keep, rr))
                    half = builder.select(builder.icmp_signed(">", rr, ct(0)),
                                          builder.shl(ct(1), smax(builder.sub(rr, ct(1)), ct(0))), ct(0))
                    rne_up = builder.or_(builder.icmp_signed(">", rem, half),
                                         builder.and_(builder.icmp_signed("==", rem, half),
                                                      builder.icmp_signed("!=", builder.and_(keep, ct(1)), ct(0))))
                    if not wide:    # a shift of 32 or more: half a unit is 2**31 or more, above any |S|
                        rne_up = builder.and_(rne_up, builder.icmp_signed("<", shr, ct(bits)))
                    false_v = ir.Constant(v1, [0] * W)
                    up = builder.select(splat(is_rne, v1), rne_up,
                                        builder.select(splat(is_rd, v1), negS,
                                                       builder.select(splat(is_ru, v1), builder.not_(negS), false_v)))
                    up = builder.and_(up, builder.icmp_signed("!=", rem, ct(0)))
                    lft = smin(smax(builder.neg(shr), ct(0)), top_shift)
                    keep = builder.select(builder.icmp_signed(">", shr, ct(0)), builder.add(keep, builder.zext(up, vt)),
                                          builder.shl(m, lft))
                    top = builder.add(builder.sub(bitlen(keep), ct(1)), qq)
                    inf = builder.and_(builder.icmp_signed("!=", keep, ct(0)), builder.icmp_signed(">", top, emaxr_v))
                    flushed = builder.and_(flush_v, builder.icmp_signed("<", top, eminr_v))
                    keep = builder.select(builder.or_(flushed, inf), ct(0), keep)
                    return [builder.and_(negS, builder.not_(flushed)), keep, qq, builder.or_(bad, inf)]

                blk, state, close_blocks = loop("blocks", b0v, b1v, state0)
                rows = [state[4 * r:4 * r + 4] for r in range(R)]
                k0 = builder.mul(blk, L)
                k1 = builder.add(k0, L)
                # the largest product exponent of each row, B's lanes read once for all rows
                k, emxs, close = loop("emax", k0, k1, [c32(NO_TERM) if tr else c_exponent(mag, q)
                                                       for _, mag, q, _ in rows])
                bs, be = b_operands(k)
                emxs = close([emax_step(emx, *a_operands(r, k), bs, be) for r, emx in enumerate(emxs)])
                Ss = [None if tr else c_aligned(neg, mag, q, emx) for (neg, mag, q, _), emx in zip(rows, emxs)]
                # every product aligned and summed in 32 bits
                k, S32s, close = loop("sum", k0, k1, [zero32] * R)
                bs, be = b_operands(k)
                S32s = close([sum_step(S32, emx, *a_operands(r, k), bs, be)
                              for r, (S32, emx) in enumerate(zip(S32s, emxs))])
                state = close_blocks([x for (neg, mag, q, bad), S, S32, emx in zip(rows, Ss, S32s, emxs)
                                      for x in (tr_rounded(neg, mag, q, bad, S32, emx) if tr
                                                else rounded(bad, S, S32, emx))])
                for r in range(R):
                    neg, mag, q, bad = state[4 * r:4 * r + 4]
                    for f, flag in ((0, neg), (3, bad)):
                        builder.store(builder.zext(flag, v64), state_row(r, f), align=8)
                    for f, x in ((1, mag), (2, q)):
                        builder.store(x if x.type == v64 else builder.sext(x, v64), state_row(r, f), align=8)

            # one body per number of rows, chosen by a switch on nr
            done = builder.append_basic_block("rows_done")
            switch = builder.switch(nrv, done)
            for R in range(1, MAX_ROWS + 1):
                case = builder.append_basic_block(f"rows{R}")
                switch.add_case(ir.Constant(i64, R), case)
                builder.position_at_end(case)
                emit(R)
                builder.branch(done)
            builder.position_at_end(done)
            return context.get_dummy_value()

        return sig, codegen

    return chain16


#: Fields of the constants array of :func:`_efdpa_chain16`.
E_L, E_FLUSH, E_N = range(3)
#: The smallest normal binary32 value (E-FDPA's output flushing).
_MIN_NORMAL32 = 2.0 ** -126


def _efdpa_chain16():  # type: ignore[no-untyped-def]
    """``echain(A, B, cst, wf, cp, i, nr, r0, j0, nl, b0, b1) -> int64``: E-FDPA blocks
    b0 .. b1-1 (products k = blk * L .. min(blk * L + L, K) - 1) of the nr rows
    i .. i+nr-1 of A (``A`` (M, K) float64, values of the input format) against
    columns j0 .. j0+nl-1 of B (``B`` (K, N) float64, C-ordered, nl <= 16), each lane's
    c (binary64, an fp32 value) read from and written back to ``cst[r0 + r]`` ((rows,
    16) float64); ``cp`` holds E_L and E_FLUSH.  The arithmetic of
    :func:`~workbench.engine.operations.amd_fdpa.kernels._round_fp32` and
    :func:`~workbench.engine.operations.amd_fdpa.kernels._lane_round` (Xie et al. 2025 Algorithms 5-6
    for fp32 results): the block's exact products summed with TwoSum, exact when
    every error term is zero (in any order: then every partial sum is exact), then c
    added and rounded once to fp32 through round-to-odd.  A block that is not exact
    that way, or whose result is not finite, stops the chain: the other lanes of that
    block are advanced, the lanes left to the limbs are flagged in ``wf[r0 + r]``
    (their c unchanged) and the block's index is returned for the caller to compute
    them (:func:`~workbench.engine.operations.amd_fdpa.kernels._limb_block`) and go on from the next
    block; b1 when every block was done."""

    @intrinsic
    def echain(typingctx, A, B, cst, wf, cp, i, nr, r0, j0, nl, b0, b1):  # type: ignore[no-untyped-def]
        arrays = (A, B, cst, wf, cp)
        if not all(isinstance(x, types.Array) and x.layout == "C" and x.ndim == n
                   for x, n in zip(arrays, (2, 2, 2, 2, 1))):
            return None
        if [x.dtype for x in arrays] != [types.float64] * 3 + [types.int64] * 2:
            return None
        sig = types.int64(*arrays, *[types.int64] * 7)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            A_, B_, cst_, wf_, cp_ = (context.make_array(t)(context, builder, v)
                                      for t, v in zip(signature.args[:5], args[:5]))
            iv, nrv, r0v, j0v, nlv, b0v, b1v = args[5:]
            i1, i16, i32, i64, f32, f64 = (ir.IntType(1), ir.IntType(16), ir.IntType(32), ir.IntType(64),
                                           ir.FloatType(), ir.DoubleType())
            v1, v32, vi, vf, vs = (ir.VectorType(t, W) for t in (i1, i32, i64, f64, f32))
            K = builder.extract_value(A_.shape, 1)
            N = builder.extract_value(B_.shape, 1)
            fn = builder.module.globals.get("llvm.masked.load.v16f64.p0")
            mload = fn if fn is not None else ir.Function(builder.module, ir.FunctionType(
                vf, [vf.as_pointer(), i32, v1, vf]), "llvm.masked.load.v16f64.p0")
            L, flush = (builder.load(builder.gep(cp_.data, [ir.Constant(i64, k)])) for k in (E_L, E_FLUSH))
            lanes = ir.Constant(v32, list(range(W)))
            mask = builder.icmp_signed("<", lanes, _splat(builder, builder.trunc(nlv, i32), v32))
            zero_f, zero_i = ir.Constant(vf, [0.0] * W), ir.Constant(vi, [0] * W)
            flush_v = _splat(builder, builder.icmp_signed("!=", flush, ir.Constant(i64, 0)), v1)
            tiny, neg_tiny = ir.Constant(vf, [_MIN_NORMAL32] * W), ir.Constant(vf, [-_MIN_NORMAL32] * W)
            done = builder.append_basic_block("rows_done")

            def lane_row(arr, r):  # type: ignore[no-untyped-def]
                """Row r0 + r of a (rows, 16) state array as a pointer to 16 lanes."""
                at = builder.mul(builder.add(r0v, ir.Constant(i64, r)), ir.Constant(i64, W))
                return builder.bitcast(builder.gep(arr.data, [at]), (vf if arr is cst_ else vi).as_pointer())

            def two_sum(a, b):  # type: ignore[no-untyped-def]
                """Knuth's TwoSum: fl(a + b) and its exact error."""
                s = builder.fadd(a, b)
                bp = builder.fsub(s, a)
                return s, builder.fadd(builder.fsub(a, builder.fsub(s, bp)), builder.fsub(b, bp))

            def emit(R):  # type: ignore[no-untyped-def]
                """The chain of R rows; returns (the block it stopped at, the block it ends in)."""
                a_rows = [builder.mul(builder.add(iv, ir.Constant(i64, r)), K) for r in range(R)]

                def a_splat(r, k):  # type: ignore[no-untyped-def]
                    return _splat(builder, builder.load(builder.gep(A_.data, [builder.add(a_rows[r], k)])), vf)

                def b_lanes(k):  # type: ignore[no-untyped-def]
                    ptr = builder.bitcast(builder.gep(B_.data, [builder.add(builder.mul(k, N), j0v)]), vf.as_pointer())
                    return builder.call(mload, [ptr, ir.Constant(i32, 8), mask, zero_f])

                c0 = [builder.load(lane_row(cst_, r), align=8) for r in range(R)]
                blk, cs, close_blocks = _loop(builder, "eblocks", b0v, b1v, c0)
                k0 = builder.mul(blk, L)
                k1 = builder.add(k0, L)
                k1 = builder.select(builder.icmp_signed("<", k1, K), k1, K)
                b = b_lanes(k0)
                first = [builder.fmul(a_splat(r, k0), b) for r in range(R)]
                false_v = ir.Constant(v1, [0] * W)
                k, state, close = _loop(builder, "eprod", builder.add(k0, ir.Constant(i64, 1)), k1,
                                        first + [false_v] * R)
                b = b_lanes(k)
                nxt = []
                for r in range(R):
                    s_, e_ = two_sum(state[r], builder.fmul(a_splat(r, k), b))
                    nxt.append((s_, builder.or_(state[R + r], builder.fcmp_unordered("!=", e_, zero_f))))
                state = close([x for x, _ in nxt] + [w for _, w in nxt])
                new_c, flags = [], []
                for r in range(R):      # RNE-FP32(c + P) through round-to-odd (_round_fp32)
                    c = cs[r]
                    s_, e_ = two_sum(c, builder.fadd(state[r], zero_f))
                    sb_, eb_ = builder.bitcast(s_, vi), builder.bitcast(e_, vi)
                    step = builder.or_(builder.ashr(builder.xor(eb_, sb_), ir.Constant(vi, [63] * W)),
                                       ir.Constant(vi, [1] * W))
                    to_odd = builder.and_(builder.fcmp_unordered("!=", e_, zero_f),
                                          builder.icmp_signed("==", builder.and_(sb_, ir.Constant(vi, [1] * W)),
                                                              zero_i))
                    odd = builder.bitcast(builder.add(sb_, builder.select(to_odd, step, zero_i)), vf)
                    rr = builder.fpext(builder.fptrunc(odd, vs), vf)
                    small = builder.and_(builder.fcmp_ordered("<", rr, tiny), builder.fcmp_ordered(">", rr, neg_tiny))
                    rr = builder.select(builder.and_(flush_v, small), zero_f, rr)
                    w = builder.or_(state[R + r], builder.fcmp_unordered("!=", builder.fsub(rr, rr), zero_f))
                    w = builder.and_(w, mask)
                    new_c.append(builder.select(w, c, rr))
                    flags.append(w)
                any_w = builder.icmp_unsigned("!=", builder.bitcast(flags[0], i16), ir.Constant(i16, 0))
                for w in flags[1:]:
                    any_w = builder.or_(any_w, builder.icmp_unsigned("!=", builder.bitcast(w, i16),
                                                                     ir.Constant(i16, 0)))
                stop = builder.append_basic_block("eblock_limbs")
                go_on = builder.append_basic_block("eblock_next")
                builder.cbranch(any_w, stop, go_on)
                builder.position_at_end(stop)
                for r in range(R):
                    builder.store(new_c[r], lane_row(cst_, r), align=8)
                    builder.store(builder.zext(flags[r], vi), lane_row(wf_, r), align=8)
                stopped = builder.block
                builder.branch(done)
                builder.position_at_end(go_on)
                cs = close_blocks(new_c)
                for r in range(R):
                    builder.store(cs[r], lane_row(cst_, r), align=8)
                ended = builder.block
                builder.branch(done)
                return (blk, stopped), (b1v, ended)

            switch = builder.switch(nrv, done)
            exits = []
            entry = builder.block
            for R in range(1, MAX_ROWS + 1):
                case = builder.append_basic_block(f"erows{R}")
                switch.add_case(ir.Constant(i64, R), case)
                builder.position_at_end(case)
                exits.extend(emit(R))
            builder.position_at_end(done)
            ret = builder.phi(i64)
            ret.add_incoming(b1v, entry)
            for value, block in exits:
                ret.add_incoming(value, block)
            return ret

        return sig, codegen

    return echain


efdpa_chain = _efdpa_chain16()


#: The compiled variants of :func:`_chain16` (:func:`chain_variant`): T-FDPA with 64- or
#: 32-bit tails, without or with the sticky bit, and TR-FDPA with either alignment rounding.
V_PLAIN, V_STICKY, V_PLAIN32, V_STICKY32, V_TR_RD, V_TR_RZ = range(6)
_chain_plain, _chain_sticky = _chain16(False, True), _chain16(True, True)
_chain_plain32, _chain_sticky32 = _chain16(False, False), _chain16(True, False)
_chain_tr_rd, _chain_tr_rz = _chain16(False, True, "rd"), _chain16(False, True, "rz")


@numba.njit(cache=True, inline="always")
def chain_variant(narrow, sticky):
    """The T-FDPA variant of :func:`_chain16` (``narrow``: :func:`narrow_tail`)."""
    if narrow:
        return V_STICKY32 if sticky else V_PLAIN32
    return V_STICKY if sticky else V_PLAIN


@numba.njit(cache=True, inline="always")
def _chain_rows(variant, sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1):
    """:func:`_chain16` of one variant (``V_*``) on rows i .. i+nr-1."""
    if variant == V_PLAIN:
        _chain_plain(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)
    elif variant == V_STICKY:
        _chain_sticky(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)
    elif variant == V_PLAIN32:
        _chain_plain32(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)
    elif variant == V_STICKY32:
        _chain_sticky32(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)
    elif variant == V_TR_RD:
        _chain_tr_rd(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)
    else:
        _chain_tr_rz(sa, ea, sb, eb, st, cp, i, nr, r0, j0, nl, b0, b1)


@numba.njit(cache=True)
def tile_state(acc, i0, ti, j0, nl, row_special, col_special, mc, eminc):
    """The lane state (ti, 4, 16) of :func:`_chain16` for outputs (i0 .. i0+ti-1,
    j0 .. j0+nl-1) from C (:func:`~workbench.engine.kernels.lanes_from_c`)."""
    st = np.zeros((ti, 4, W), dtype=np.int64)
    neg = np.zeros(W, dtype=np.bool_)
    mag = np.zeros(W, dtype=np.int64)
    q = np.zeros(W, dtype=np.int64)
    bad = np.zeros(W, dtype=np.bool_)
    for ii in range(ti):
        lanes_from_c(acc, i0 + ii, j0, nl, row_special, col_special, mc, eminc, neg, mag, q, bad)
        for u in range(nl):
            st[ii, 0, u] = 1 if neg[u] else 0
            st[ii, 1, u] = mag[u]
            st[ii, 2, u] = q[u]
            st[ii, 3, u] = 1 if bad[u] else 0
    return st


@numba.njit(cache=True)
def chain_tile(variant, sa, ea, sb, eb, st, cp, i0, row_special, j0, nl, b0, b1):
    """Blocks b0 .. b1-1 of a tile's rows (state ``st``, rows i0 ..): each run of rows
    without Inf/NaN in calls of :func:`_chain16` of at most :data:`MAX_ROWS` rows."""
    ti = st.shape[0]
    ii = 0
    while ii < ti:
        if row_special[i0 + ii] != 0:
            ii += 1
            continue
        run = 1
        while ii + run < ti and row_special[i0 + ii + run] == 0:
            run += 1
        calls = (run + MAX_ROWS - 1) // MAX_ROWS
        for c in range(calls):
            r0 = ii + run * c // calls
            nr = ii + run * (c + 1) // calls - r0
            _chain_rows(variant, sa, ea, sb, eb, st, cp, i0 + r0, nr, r0, j0, nl, b0, b1)
        ii += run


def simd_rows(M: int, N: int, nthreads: int) -> int:
    """Rows per tile of the vector chain's drivers (:func:`~workbench.engine.kernels.output_tiles`
    with tiles of 16 columns): at most 32, enough tiles to give every thread one."""
    return output_tiles(M, N, nthreads, W)[0]


__all__ = ["simd_rows", "chain_variant", "tile_state", "chain_tile", "efdpa_chain", "E_L", "E_FLUSH", "E_N", "W", "MAX_ROWS", "V_TR_RD", "V_TR_RZ"]
