"""Elementary pieces of the arithmetic, as small compiled (numba) functions.

Representation (docs/architecture.md, "The representation"): every finite operand is decomposed once into a signed
integer significand with ``m`` fraction bits and an exponent clamped at the format's
``emin``, so that ``x = sig * 2**(exp - m)`` and subnormals need no special case.
Infinities and NaN carry the exponent :data:`SPECIAL` and the significand +1/-1
(Inf) or 2 (NaN).  A product of two operands is then the integer ``sa * sb`` with
``ma + mb`` fraction bits and exponent ``ea + eb``: the unnormalised product of the
papers (significand in [0, 4)).

The pieces compose into the operations of Xie et al. (2025) Section 4.1:

* :func:`align_term` - shift one term to F fractional bits below the window's top
  exponent, truncating the magnitude (sign-magnitude RZ), with an optional sticky bit;
* :func:`round_int` / :func:`round_fixed` - convert ``S * 2**scale`` (exact integer) to a binary format
  with a given precision, exponent range and rounding mode (Xie Table 2's rho);
* :func:`round_double` - the same for a float64 value;
* :func:`special_result` - IEEE-style NaN/Inf of one fused operation (Xie Section 4.2).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..numbers.formats import RD, RNE, ROUNDING_CODES, RU

SPECIAL = 1 << 24          # exponent marking Inf/NaN operands
NEG_BIG = -(1 << 30)       # "no term yet" for the running maximum exponent
SIG_NAN = 2
#: Codes of special terms (:func:`special_product`, :func:`special_value`).
POS_INF, NEG_INF, IS_NAN = 1, 2, 3

#: The engine's rounding directions, coded as everywhere else (:data:`workbench.numbers.formats.ROUNDING_CODES`).
MODE_CODES = {name: ROUNDING_CODES[name] for name in ("rne", "rz", "rd", "ru")}


@intrinsic
def _ctlz64(typingctx, m):
    """LLVM ``ctlz`` on an int64 (64 for 0)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = builder.module.declare_intrinsic("llvm.ctlz", [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])

    return sig, codegen


@numba.njit(cache=True, inline="always")
def bit_length(m):
    """Number of bits of the non-negative int64 ``m`` (0 for 0): one ``lzcnt``."""
    return 64 - _ctlz64(np.int64(m))


@numba.njit(cache=True, inline="always")
def decompose_one(v, man_bits, emin, flush):
    """(signed significand, exponent) of one float64 value; see the module docstring."""
    if v != v:
        return SIG_NAN, SPECIAL
    if math.isinf(v):
        return (1 if v > 0 else -1), SPECIAL
    if v == 0.0:
        return 0, emin
    a = abs(v)
    _, e = math.frexp(a)
    e -= 1
    if e < emin:
        if flush:
            return 0, emin
        e = emin
    s = np.int64(math.ldexp(a, man_bits - e))
    return (-s if v < 0 else s), e


@numba.njit(cache=True, parallel=True)
def decompose(x, sig, exp, man_bits, emin, flush):
    """Decompose a C-contiguous 2-D float64 array in one compiled pass."""
    rows, cols = x.shape
    for i in numba.prange(rows):
        for k in range(cols):
            s, e = decompose_one(x[i, k], man_bits, emin, flush)
            sig[i, k] = s
            exp[i, k] = e


@numba.njit(cache=True)
def check_decompose_one(v, man_bits, emin, flush, vmax, has_nan, has_inf):
    """(representable?, significand, exponent) of one float64 value for a signed
    format with subnormals (``man_bits``, ``emin``, largest finite value ``vmax``):
    :func:`decompose_one` plus the test of ``workbench.numbers.formats.is_representable``
    (NaN/Inf only if the format has them, ``|v| <= vmax``, ``v`` on the format's
    grid; -0 is a zero)."""
    if v != v:
        return has_nan, SIG_NAN, SPECIAL
    if math.isinf(v):
        return has_inf, (1 if v > 0 else -1), SPECIAL
    if v == 0.0:
        return True, 0, emin
    a = abs(v)
    _, e = math.frexp(a)
    e -= 1
    sub = e < emin
    if sub:
        e = emin
    f = math.ldexp(a, man_bits - e)
    s = np.int64(f)
    ok = a <= vmax and float(s) == f
    if sub and flush:
        return ok, 0, emin
    return ok, (-s if v < 0 else s), e


_EXP_MASK = 0x7FF
_FRAC_MASK = (1 << 52) - 1
_ABS_MASK = (1 << 63) - 1


@numba.njit(cache=True)
def check_decompose_bits(b, man_bits, emin, flush, vmax_bits, has_nan, has_inf):
    """:func:`check_decompose_one` of the float64 whose bit pattern is the int64 ``b``,
    in integer operations only (``vmax_bits``: the pattern of the largest finite
    value).  Float64 subnormals, below every format's range but fp64's, go through
    :func:`check_decompose_one`."""
    ef = (b >> 52) & _EXP_MASK
    frac = b & _FRAC_MASK
    neg = b < 0
    if ef == _EXP_MASK:
        if frac != 0:
            return has_nan, np.int64(SIG_NAN), np.int64(SPECIAL)
        return has_inf, np.int64(-1 if neg else 1), np.int64(SPECIAL)
    if ef == 0:
        if frac == 0:
            return True, np.int64(0), np.int64(emin)
        v = -math.ldexp(float(frac), -1074) if neg else math.ldexp(float(frac), -1074)
        ok, s, e = check_decompose_one(v, man_bits, emin, flush, math.inf, has_nan, has_inf)
        return ok and (b & _ABS_MASK) <= vmax_bits, np.int64(s), np.int64(e)
    e = ef - 1023
    full = frac | (np.int64(1) << 52)
    sh = 52 - man_bits
    sub = e < emin
    if sub:
        sh += emin - e
        e = emin
    if sh > 62:
        s = np.int64(0)
        ok = False
    else:
        s = full >> sh
        ok = (s << sh) == full and (b & _ABS_MASK) <= vmax_bits
    if sub and flush:
        s = np.int64(0)
    return ok, (-s if neg else s), np.int64(e)


_CHUNK = 4096           # elements of x per task (a piece of one row, or whole rows)
_CHUNK_T = 64           # rows of B per task when writing B^T (a tile read down its columns)


@numba.njit(cache=True)
def _task_range(x, transposed, t):
    """Rows ``i0 .. i1-1`` and columns ``k0 .. k1-1`` of ``x`` in task ``t`` (for
    ``transposed``, rows ``k0 .. k1-1`` of x and all its columns ``i0 .. i1-1``)."""
    R, C = x.shape
    if transposed:
        k0 = t * _CHUNK_T
        return 0, C, k0, min(R, k0 + _CHUNK_T)
    if C >= _CHUNK:
        nch = (C + _CHUNK - 1) // _CHUNK
        i0 = t // nch
        k0 = (t - i0 * nch) * _CHUNK
        return i0, i0 + 1, k0, min(C, k0 + _CHUNK)
    rows = _CHUNK // max(C, 1)
    i0 = t * rows
    return i0, min(R, i0 + rows), 0, C


@numba.njit(cache=True)
def _n_tasks(x, transposed):
    R, C = x.shape
    if transposed:
        return (R + _CHUNK_T - 1) // _CHUNK_T
    if C >= _CHUNK:
        return R * ((C + _CHUNK - 1) // _CHUNK)
    rows = _CHUNK // max(C, 1)
    return (R + rows - 1) // rows


@numba.njit(cache=True, inline="always")
def _decompose_bits_common(b, man_bits, emin, flush, vmax_bits):
    """Branch-free :func:`check_decompose_bits` for the common values: returns
    ``(sig, exp, ok)`` exactly as that function does when ``ok``; ``ok`` is False for
    values it does not cover (NaN, Inf, float64 subnormals) as well as for values
    that are not representable, which then go through :func:`check_decompose_bits`."""
    ef = (b >> 52) & _EXP_MASK
    ab = b & _ABS_MASK
    full = (b & _FRAC_MASK) | (np.int64(1) << 52)
    e = ef - 1023
    sub = e < emin
    sh = 52 - man_bits + (emin - e if sub else 0)
    sh = sh if sh < 63 else 63
    s = full >> sh
    zero = ab == 0
    ok = zero or ((s << sh) == full and ab <= vmax_bits and ef != 0)
    s = 0 if zero or (sub and flush) else s
    return (-s if b < 0 else s), (emin if sub else e), ok


@numba.njit(cache=True)
def _decompose_task(x, sig, exp, transposed, t, man_bits, emin, flush, vmax_bits, has_nan, has_inf):
    """Task ``t`` of :func:`decompose_checked` on one operand: returns ``(first,
    slow)``, the smallest C-order index in ``x`` of a value it found not
    representable (or ``x.size``), and whether the task left the common path.

    A branch-free pass covers the common values; a task that meets any other value
    (NaN, Inf, a float64 subnormal, or one that is not representable) is redone
    value by value."""
    R, C = x.shape
    best = np.int64(R) * np.int64(C)
    i0, i1, k0, k1 = _task_range(x, transposed, t)
    if not transposed and k1 == C:       # the padding columns of these rows
        for i in range(i0, i1):
            for k in range(C, sig.shape[1]):
                sig[i, k] = 0
                exp[i, k] = emin
    all_ok = True
    for i in range(i0, i1):
        for k in range(k0, k1):
            uk = np.uint64(k)    # unsigned: no wraparound test, so the loop vectorises
            b = x[uk, i] if transposed else x[i, uk]
            s, e, ok = _decompose_bits_common(b, man_bits, emin, flush, vmax_bits)
            sig[i, uk] = s
            exp[i, uk] = e
            all_ok &= ok
    if all_ok:
        return best, False
    for i in range(i0, i1):
        for k in range(k0, k1):
            flat = np.int64(k) * C + i if transposed else np.int64(i) * C + k
            b = x[k, i] if transposed else x[i, k]
            ok, s, e = check_decompose_bits(b, man_bits, emin, flush, vmax_bits, has_nan, has_inf)
            sig[i, k] = s
            exp[i, k] = e
            if not ok:
                best = min(best, flat)
    return best, True


@numba.njit(cache=True)
def _pad_zeros(sig, exp, rows, cols, emin):
    """Decomposed zeros ``(0, emin)`` outside the leading ``rows x cols`` block."""
    if cols < sig.shape[1]:
        for i in range(rows):
            for k in range(cols, sig.shape[1]):
                sig[i, k] = 0
                exp[i, k] = emin
    for i in range(rows, sig.shape[0]):
        for k in range(sig.shape[1]):
            sig[i, k] = 0
            exp[i, k] = emin


@numba.njit(cache=True, parallel=True)
def decompose_checked(xa, sa, ea, xb, sb, eb, transpose_b, man_bits, emin, flush, vmax_bits, has_nan, has_inf):
    """Check and decompose both operands of a product in one parallel pass.

    ``xa`` (M, K) and ``xb`` (K, N) are float64 arrays given as their int64 bit
    patterns; ``sa[i, k], ea[i, k]`` receive ``xa[i, k]``; ``sb, eb`` receive B in
    its own layout, ``sb[k, j]`` = ``xb[k, j]`` (Kp, N), or with ``transpose_b`` as
    B^T, ``sb[j, k]`` (N, Kp; B read 64 rows at a time so that both sides stay in
    cache).  Entries beyond K are the padding: decomposed zeros ``(0, emin)``.
    Returns, for A and for B, the C-order index of the first value that is not
    representable, or -1 (see :func:`check_decompose_bits`), and whether any value
    left the common path (so whether A or B may hold Inf/NaN).
    """
    na = _n_tasks(xa, False)
    nt = na + _n_tasks(xb, transpose_b)
    first = np.empty(nt, dtype=np.int64)
    slow = np.zeros(nt, dtype=np.bool_)
    for t in numba.prange(nt):
        if t < na:
            first[t], slow[t] = _decompose_task(xa, sa, ea, False, t, man_bits, emin, flush, vmax_bits, has_nan,
                                                has_inf)
        else:
            first[t], slow[t] = _decompose_task(xb, sb, eb, transpose_b, t - na, man_bits, emin, flush, vmax_bits,
                                                has_nan, has_inf)
    if transpose_b:        # (the tasks padded the columns of A's and of B's rows)
        _pad_zeros(sb, eb, xb.shape[1], xb.shape[0], emin)
    else:
        _pad_zeros(sb, eb, xb.shape[0], sb.shape[1], emin)
    bad_a = np.int64(xa.size)
    for t in range(na):
        bad_a = min(bad_a, first[t])
    bad_b = np.int64(xb.size)
    for t in range(na, nt):
        bad_b = min(bad_b, first[t])
    return (-1 if bad_a == xa.size else bad_a), (-1 if bad_b == xb.size else bad_b), slow.any()


@numba.njit(cache=True, inline="always")
def align_term(m, sh, sticky):
    """Magnitude ``m`` times 2**sh, truncated toward zero; with ``sticky`` one more
    bit is appended that is 1 when any bit fell off."""
    if sh >= 0:
        t = m << sh
        lost = False
    else:
        r = -sh
        if r > 62:
            t = np.int64(0)
        else:
            t = m >> r
        lost = m != 0 and (r > 62 or (t << r) != m)
    if sticky:
        t = (t << 1) | (1 if lost else 0)
    return t


@numba.njit(cache=True, inline="always")
def shift_floor(x, sh):
    """floor(x * 2**sh) for an int64 ``x`` (two's complement: rounds toward -inf);
    left shifts are capped at 63 (callers keep them far below), right shifts by more
    than 62 give 0 or -1.  Branch-free (the lane kernels vectorise it)."""
    left = sh if sh > 0 else 0
    left = left if left < 63 else 63
    r = -sh if sh < 0 else 0
    r = r if r < 63 else 63
    return (x << left) >> r


@numba.njit(cache=True, inline="always")
def shift_lost(m, sh):
    """``(floor(m * 2**sh), lost)`` for a magnitude ``m >= 0``: the shifted value
    (:func:`shift_floor`, truncation) and whether a non-zero bit fell off - the
    sticky bit of :func:`align_term`, branch-free."""
    r = -sh if sh < 0 else 0
    r = r if r < 63 else 63
    return shift_floor(m, sh), (m & ((np.int64(1) << r) - 1)) != 0


@numba.njit(cache=True, inline="always")
def round_int(S, scale, p, emin, emax, mode, flush_sub):
    """Round the exact value ``S * 2**scale`` (S: int64, ``|S| < 2**62``) to a binary
    format with precision ``p``, minimum normal exponent ``emin`` and maximum exponent
    ``emax``, in integers: returns ``(neg, keep, q, inf)``, the result being
    ``(-1)**neg * keep * 2**q`` (``keep`` < 2**(p+1)) or, when ``inf``, +-Inf
    (``keep`` is then 0).

    Modes: 0 RNE, 1 RZ, 2 RD, 3 RU.  Subnormal results are rounded at the fixed
    quantum ``2**(emin - p + 1)``; with ``flush_sub`` a result that is still
    subnormal after that rounding becomes +0 (a sum just below the smallest normal
    that rounds up to it is kept, as MMA-Sim's FTZ of a rounded value).  Results
    beyond the largest finite value become +-Inf in every mode, as NVIDIA's units do
    (MMA-Sim's conversions; Khattak-Mikaitis Section IV-B).  A zero sum is +0; a
    non-zero sum that rounds to zero keeps its sign (unless flushed).

    Written without branches on the data (selects only, every shift amount clamped
    to [0, 63]) so that the lane kernel's loop over outputs vectorises.
    """
    neg = S < 0
    m = -S if neg else S
    lead = bit_length(m) - 1 + scale
    q = (lead if lead > emin else emin) - (p - 1)
    sh = q - scale                       # bits to drop (> 0) or to append (< 0)
    r = sh if sh > 0 else 0
    r = r if r < 63 else 63
    keep = m >> r
    rem = m - (keep << r)
    half = (np.int64(1) << (r - 1)) if r > 0 else np.int64(0)
    if mode == RNE:
        up = (rem > half) | ((rem == half) & ((keep & 1) == 1))
    elif mode == RD:
        up = neg
    elif mode == RU:
        up = not neg
    else:  # RZ
        up = False
    up = up & (rem != 0)
    left = -sh if sh < 0 else 0
    keep = (keep + (1 if up else 0)) if sh > 0 else (m << left)
    top = bit_length(keep) - 1 + q
    inf = (keep != 0) & (top > emax)
    flushed = flush_sub & (top < emin)   # tininess after rounding; top < emin also when keep == 0
    keep = np.int64(0) if (flushed | inf) else keep
    neg = neg & (not flushed)
    return neg, keep, np.int64(q), inf


@numba.njit(cache=True, inline="always")
def add_round(neg1, m1, q1, neg2, m2, q2, p, emin, emax, mode, flush_sub):
    """``(-1)**neg1 * m1 * 2**q1 + (-1)**neg2 * m2 * 2**q2`` (magnitudes below 2**60)
    correctly rounded by :func:`round_int` (same arguments and result): the
    addend with the higher leading bit is placed with its top bit at bit 60, the
    other aligned to it with its lost bits kept as a sticky half-unit (so that no
    rounding boundary can separate the kept sum from the exact one).  Branch-free,
    for the lane kernel's late addition of c (Khattak-Mikaitis Table II).  An exact
    zero sum is signed as IEEE 754-2019 Sec. 6.3 says (the rule of
    :func:`workbench.engine.kernels.exact_add`): two zeros of one sign keep it,
    otherwise +0, or -0 in mode RD."""
    t1 = bit_length(m1) + q1 if m1 != 0 else np.int64(NEG_BIG)
    t2 = bit_length(m2) + q2 if m2 != 0 else np.int64(NEG_BIG)
    swap = t2 > t1
    nb, mb, qb = (neg2, m2, q2) if swap else (neg1, m1, q1)
    ns, ms, qs = (neg1, m1, q1) if swap else (neg2, m2, q2)
    lb = 61 - bit_length(mb)
    scale = qb - lb
    t, lost = shift_lost(ms, qs - scale)
    small = (t << 1) | (1 if lost else 0)
    big = (mb << lb) << 1
    S = (-big if nb else big) + (-small if ns else small)
    neg, keep, q, inf = round_int(S, scale - 1, p, emin, emax, mode, flush_sub)
    same_zeros = (m1 == 0) & (m2 == 0) & (neg1 == neg2)
    zero_neg = neg1 if same_zeros else (mode == RD)
    return (zero_neg if S == 0 else neg), keep, q, inf


@numba.njit(cache=True)
def round_fixed(S, scale, p, emin, emax, mode, flush_sub):
    """:func:`round_int` as a float64 (exact: every output format fits in binary64)."""
    neg, keep, q, inf = round_int(S, scale, p, emin, emax, mode, flush_sub)
    r = math.inf if inf else math.ldexp(float(keep), q)
    return -r if neg else r


@numba.njit(cache=True)
def round_double(x, p, emin, emax, mode, flush_sub):
    """Round a float64 ``x`` (finite) to the format (p, emin, emax) in ``mode``."""
    if x == 0.0 or x != x or math.isinf(x):
        return x + 0.0
    m, e = math.frexp(abs(x))
    S = np.int64(math.ldexp(m, 53))
    if x < 0:
        S = -S
    return round_fixed(S, e - 53, p, emin, emax, mode, flush_sub)


@numba.njit(cache=True)
def decode_value(sig, exp, man_bits):
    """Float64 value of a decomposed finite operand."""
    return math.ldexp(float(sig), exp - man_bits)


@numba.njit(cache=True)
def special_product(s1, e1, s2, e2):
    """Code of the product of two decomposed operands of which one is Inf/NaN:
    :data:`POS_INF`, :data:`NEG_INF` or :data:`IS_NAN`."""
    nan1 = e1 >= SPECIAL and s1 == SIG_NAN
    nan2 = e2 >= SPECIAL and s2 == SIG_NAN
    if nan1 or nan2:
        return IS_NAN
    if s1 == 0 or s2 == 0:  # Inf * 0
        return IS_NAN
    neg = (s1 < 0) != (s2 < 0)
    return NEG_INF if neg else POS_INF


@numba.njit(cache=True)
def special_value(s):
    """Code of one decomposed value known to be Inf/NaN (the accumulator c), as
    :func:`special_product` codes products."""
    if s == SIG_NAN:
        return IS_NAN
    return POS_INF if s > 0 else NEG_INF


@numba.njit(cache=True)
def combine_special(code, pos, neg, nan):
    """Accumulate special codes into (pos_inf, neg_inf, nan) flags."""
    if code == POS_INF:
        pos = True
    elif code == NEG_INF:
        neg = True
    elif code == IS_NAN:
        nan = True
    return pos, neg, nan


@numba.njit(cache=True)
def special_result(pos, neg, nan):
    """Result of a fused sum containing Inf/NaN terms (Xie Section 4.2)."""
    if nan or (pos and neg):
        return math.nan
    return math.inf if pos else -math.inf


#: Values per task of :func:`first_unrepresentable`.
_CHECK_CHUNK = 1 << 14
#: The exponent field of a float64's bit pattern in place (all ones: Inf or NaN).
_EXP_FIELD = _EXP_MASK << 52


@numba.njit(cache=True, parallel=True)
def first_unrepresentable(bits, man_bits, emin, vmax_bits, has_nan, has_inf):
    """``(first, special)``: the C-order index of the first value of ``bits`` (the
    int64 patterns of a C-contiguous float64 array) that is not representable in a
    signed format with subnormals (``man_bits``, ``emin``, largest finite pattern
    ``vmax_bits``), or -1, and whether any value is Inf or NaN (meaningful when
    ``first`` is -1), in one parallel read-only pass (the input check of FTZ-AddMul and
    E-FDPA).  Finite values whose bits below the format's grid (``2**(max(e, emin) -
    man_bits)``) are zero and whose magnitude is at most the largest pass a
    branch-free test of the bit pattern; a chunk holding anything else (Inf, NaN,
    float64 subnormals, values not representable) is redone value by value by
    :func:`check_decompose_bits`."""
    flat = bits.reshape(-1)
    n = flat.size
    nt = (n + _CHECK_CHUNK - 1) // _CHECK_CHUNK
    first = np.full(nt, n, dtype=np.int64)
    special = np.zeros(nt, dtype=np.bool_)
    for t in numba.prange(nt):
        lo = t * _CHECK_CHUNK
        hi = min(n, lo + _CHECK_CHUNK)
        all_ok = True
        for k in range(np.uint64(lo), np.uint64(hi)):
            b = flat[k]
            ab = b & _ABS_MASK
            below = emin + 1023 - ((b >> 52) & 0x7FF)       # > 0: a subnormal of the format
            sh = 52 - man_bits + (below if below > 0 else 0)
            sh = sh if sh < 63 else 63
            full = (b & _FRAC_MASK) | (np.int64(1) << 52)
            all_ok &= (ab == 0) | (((full & ((np.int64(1) << sh) - 1)) == 0) & (ab <= vmax_bits))
        if not all_ok:
            for k in range(lo, hi):
                special[t] |= (flat[k] & _EXP_FIELD) == _EXP_FIELD
                ok, _, _ = check_decompose_bits(flat[k], man_bits, emin, False, vmax_bits, has_nan, has_inf)
                if not ok:
                    first[t] = k
                    break
    best = first.min() if nt else n
    return (-1 if best == n else best), special.any()


@numba.njit(cache=True)
def decompose_small(bits, sig, exp, transposed, man_bits, emin, flush, vmax_bits, has_nan, has_inf):
    """Check and decompose one small operand on the calling thread (the small-product
    path of ``workbench.gemm``: no parallel launch, no workspace): ``bits`` (R, C) are
    the int64 patterns of a float64 array; ``sig[r, c], exp[r, c]`` receive value
    ``(r, c)`` (with ``transposed``, ``sig[c, r]``); entries beyond the value's block
    are the padding, decomposed zeros ``(0, emin)``.  Returns the C-order index of the
    first value that is not representable (:func:`check_decompose_bits`), or -1."""
    sig[:] = 0
    exp[:] = emin
    R, C = bits.shape
    first = np.int64(-1)
    for r in range(R):
        for c in range(C):
            ok, s, e = check_decompose_bits(bits[r, c], man_bits, emin, flush, vmax_bits, has_nan, has_inf)
            if transposed:
                sig[c, r] = s
                exp[c, r] = e
            else:
                sig[r, c] = s
                exp[r, c] = e
            if not ok and first < 0:
                first = np.int64(r) * C + c
    return first


@numba.njit(cache=True)
def first_unrepresentable_small(bits, man_bits, emin, vmax_bits, has_nan, has_inf):
    """:func:`first_unrepresentable`'s index on the calling thread, for small arrays
    (``bits``: (R, C) int64 patterns of a float64 array): the C-order index of the first
    value not representable in the signed format with subnormals, or -1."""
    R, C = bits.shape
    for r in range(R):
        for c in range(C):
            ok, _, _ = check_decompose_bits(bits[r, c], man_bits, emin, False, vmax_bits, has_nan, has_inf)
            if not ok:
                return np.int64(r) * C + c
    return np.int64(-1)


@numba.njit(cache=True)
def first_bad_scale_small(bits, man_bits, emin, vmax_bits, has_nan, has_inf, unsigned, has_zero):
    """:func:`first_unrepresentable_small` for block scale factors, whose formats may be
    unsigned (E8M0, UE4M3: no negative value; -0 is their zero, as
    :func:`workbench.numbers.formats.is_representable` counts it) or have no zero (E8M0)."""
    R, C = bits.shape
    for r in range(R):
        for c in range(C):
            b = bits[r, c]
            ok, _, _ = check_decompose_bits(b, man_bits, emin, False, vmax_bits, has_nan, has_inf)
            if not (((b >> 52) & _EXP_MASK) == _EXP_MASK and (b & _FRAC_MASK) != 0):     # NaN: as checked
                if unsigned and b < 0 and (b & _ABS_MASK) != 0:
                    ok = False
                if not has_zero and (b & _ABS_MASK) == 0:
                    ok = False
            if not ok:
                return np.int64(r) * C + c
    return np.int64(-1)


@numba.njit(cache=True)
def check_small(xa, xb, xc, man_bits, emin, vmax_bits, has_nan, has_inf, out_man_bits, out_emin, out_vmax_bits):
    """The input checks of a small product on the calling thread, for operations that
    read float64 values: the first unrepresentable C-order index of A and of B (``xa``,
    ``xb``: int64 patterns, in the input format) and of C (``xc``, in the output
    format), each -1 where there is none (:func:`first_unrepresentable_small`)."""
    return (first_unrepresentable_small(xa, man_bits, emin, vmax_bits, has_nan, has_inf),
            first_unrepresentable_small(xb, man_bits, emin, vmax_bits, has_nan, has_inf),
            first_unrepresentable_small(xc, out_man_bits, out_emin, out_vmax_bits, True, True))


@numba.njit(cache=True)
def decompose_small_product(xa, xb, xc, L, man_bits, emin, flush, vmax_bits, has_nan, has_inf, out_man_bits, out_emin,
                            out_vmax_bits):
    """The prologue of the small-product kernels that decompose their operands:
    ``(sa, ea, sb, eb, bad_a, bad_b, bad_c)``, A (M, K) and B (K, N) (``xa``, ``xb``:
    int64 patterns) checked and decomposed with K zero-padded to whole blocks of ``L``
    (:func:`decompose_small`; B as (Kp, N) indexed ``[k, j]``), and C (``xc``) checked
    against the output format; each ``bad`` the first unrepresentable C-order index or -1."""
    M, K = xa.shape
    N = xb.shape[1]
    Kp = (K + L - 1) // L * L
    sa = np.empty((M, Kp), dtype=np.int32)
    ea = np.empty((M, Kp), dtype=np.int32)
    sb = np.empty((Kp, N), dtype=np.int32)
    eb = np.empty((Kp, N), dtype=np.int32)
    bad_a = decompose_small(xa, sa, ea, False, man_bits, emin, flush, vmax_bits, has_nan, has_inf)
    bad_b = decompose_small(xb, sb, eb, False, man_bits, emin, flush, vmax_bits, has_nan, has_inf)
    bad_c = first_unrepresentable_small(xc, out_man_bits, out_emin, out_vmax_bits, True, True)
    return sa, ea, sb, eb, bad_a, bad_b, bad_c


@numba.njit(cache=True)
def decompose_small_scaled_product(xa, xb, xc, scale_a, scale_b, L, check, scale_check):
    """The prologue of the scaled kinds' small-product kernels:
    :func:`decompose_small_product` (``check``: its format arguments after ``L``), then
    the block scales ``scale_a`` and ``scale_b`` (float64) checked by
    :func:`first_bad_scale_small` (``scale_check``: its arguments after the patterns).
    Returns ``(sa, ea, sb, eb, bad)``, ``bad`` the first unrepresentable C-order index
    of A, B, C, scale_a and scale_b (-1 each where none)."""
    (man_bits, emin, flush, vmax_bits, has_nan, has_inf, out_man_bits, out_emin, out_vmax_bits) = check
    sa, ea, sb, eb, bad_a, bad_b, bad_c = decompose_small_product(xa, xb, xc, L, man_bits, emin, flush, vmax_bits,
                                                                  has_nan, has_inf, out_man_bits, out_emin,
                                                                  out_vmax_bits)
    s_man, s_emin, s_vmax, s_nan, s_inf, s_unsigned, s_zero = scale_check
    bad_sa = first_bad_scale_small(scale_a.view(np.int64), s_man, s_emin, s_vmax, s_nan, s_inf, s_unsigned, s_zero)
    bad_sb = first_bad_scale_small(scale_b.view(np.int64), s_man, s_emin, s_vmax, s_nan, s_inf, s_unsigned, s_zero)
    return sa, ea, sb, eb, (bad_a, bad_b, bad_c, bad_sa, bad_sb)
