"""What the engine's compiled kernels share, below every operation (each operation's own
kernels are in its folder, :mod:`workbench.engine.operations`).

* the IEEE adder after the products (:func:`exact_add`, :func:`add_late`): c added
  late, an FMA chain's late c, the fp32 accumulator of promoted chains (signs of zero
  as IEEE 754-2019 Sec. 6.3);
* the lane tiling of every lane kernel: output tiles (:func:`output_tiles`,
  :func:`lane_tile`), B in the lanes' layout (:func:`lane_operands`, :data:`LANE_PAD`,
  :data:`LANES_MIN_N`), a tile's state from C and back (:func:`tile_lanes`,
  :func:`lanes_from_c`, :func:`lane_value`), the largest exponent of a fused sum over lanes
  (:func:`c_exponents`, :func:`max_product_exponents`);
* the 32-bit lane steps (:data:`mul32`, :data:`shl32`, :data:`ashr32`) and the LLVM
  IR helpers of the explicit-vector kernels (:func:`_splat`, :func:`_loop`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..numbers.formats import RD
from .ops import (
    SPECIAL,
    bit_length,
    decompose_one,
    round_double,
    round_fixed,
)


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


#: The lane kernels compute whole groups of this many outputs (B's columns padded).
LANE_PAD = 8
#: Fewest columns of B for which the lane kernels beat the one-output-at-a-time ones.
LANES_MIN_N = 4


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
def tile_lanes(t, n_jt, TI, TJ, acc, Np, row_special, col_special, mc, eminc):
    """The prologue every lane kernel's tile shares: tile ``t``'s place
    (:func:`lane_tile`) and its lane state from C (:func:`lanes_from_c`), as
    ``(i0, ti, j0, nl, nv, neg, mag, q, bad)``; ``neg``, ``mag``, ``q`` and ``bad`` are
    (ti, nv), the lanes beyond N zero."""
    i0, ti, j0, nl, nv = lane_tile(t, n_jt, TI, TJ, row_special.shape[0], acc.shape[1], Np)
    neg = np.zeros((ti, nv), dtype=np.bool_)
    mag = np.zeros((ti, nv), dtype=np.int64)
    q = np.zeros((ti, nv), dtype=np.int64)
    bad = np.zeros((ti, nv), dtype=np.bool_)
    for ii in range(ti):
        lanes_from_c(acc, i0 + ii, j0, nl, row_special, col_special, mc, eminc, neg[ii], mag[ii], q[ii], bad[ii])
    return i0, ti, j0, nl, nv, neg, mag, q, bad


@numba.njit(cache=True, inline="always")
def c_exponents(mag, q, nl, eminc, ezp, emx):
    """``emx[u]`` <- the exponent of lane u's c (``mag * 2**q``), clamped at the output
    format's ``eminc`` as a decomposed c is, or ``ezp`` where c is zero: where a fused
    sum's largest exponent starts (T-FDPA's and GST-FDPA's lane blocks)."""
    for u in range(nl):
        m = mag[u]
        ce = bit_length(m) - 1 + q[u]
        ce = ce if ce > eminc else eminc
        emx[u] = ce if m != 0 else ezp


@numba.njit(cache=True, inline="always")
def max_product_exponents(sa, ea, sb, eb, i, k, uj0, ul, ez32, em):
    """``em[u]`` <- max(``em[u]``, the exponent of a[i, k] * b[k, uj0 + u]) over ``ul``
    lanes in int32 (16 lanes a vector), a zero product counting as ``ez32``: one step of
    a fused sum's largest exponent (T-FDPA's lane blocks, TR-/GTR-FDPA's lane groups)."""
    a_zero = sa[i, k] == 0
    a_e = ea[i, k]
    for u in range(ul):
        e = np.int32(a_e + eb[k, uj0 + u])
        v = ez32 if (a_zero | (sb[k, uj0 + u] == 0)) else e
        cur = em[u]
        em[u] = v if v > cur else cur


@numba.njit(cache=True, inline="always")
def lane_value(neg, mag, q):
    """The float64 ``(-1)**neg * mag * 2**q`` of one lane's state."""
    v = math.ldexp(float(mag), q)
    return -v if neg else v


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


def output_tiles(M: int, N: int, nthreads: int, cols: int = 64) -> tuple[int, int]:
    """(TI, TJ): tiles of at most 32 rows x ``cols`` columns of outputs, enough of them
    to give every thread one."""
    TJ = max(1, min(N, cols))
    n_jt = max(1, -(-N // TJ))  # an empty product (N = 0) still gets one (empty) tile
    n_it = max(1, min(M, -(-nthreads // n_jt)))
    return max(1, min(-(-M // n_it), 32)), TJ


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
    "lane_operands", "output_tiles", "lane_tile", "lanes_from_c", "tile_lanes", "c_exponents", "max_product_exponents",
    "lane_value", "exact_add", "add_late", "LANE_PAD",
    "LANES_MIN_N", "_splat", "_loop",
    "bit_length", "round_double", "mul32", "shl32", "ashr32",
]
