"""Slow, obviously-correct reference models of GPU matrix multiply-accumulate units.

Every elementary operation of Xie et al. (2025), "Bit-Accurate Modeling of GPU
Matrix Multiply-Accumulate Units" (MMA-Sim), Section 4, and the generic
block-FMA model of Khattak & Mikaitis (2025), "Accurate Models of NVIDIA Tensor
Cores", Sections IV and IV-C, written with ``fractions.Fraction`` only.  This
file is the independent ground truth for the compiled engine: it does not import
``workbench.engine`` / ``workbench.round``; it only reads format parameters
(``p``, ``emin``, ``emax``, ``max``, ``special``, ``bias``...) from
``workbench.numbers.formats.format(name)``.

Values
------
Inputs are Python lists of ``Fraction`` / ``int`` / ``float`` (``float('inf')``,
``float('nan')``, ``-0.0`` allowed).  Each value must be exactly representable in
its stated format (not checked).  Every function returns a Python ``float``
holding the output value exactly (all formats here fit in binary64); NaN is
returned as ``float('nan')``; use :func:`encode` to get output bits (NVIDIA
canonical NaN ``0x7FFFFFFF`` / ``0x7FFF``, Xie et al. Sec. 4.2).

Parameter names (shared by all functions)
-----------------------------------------
``L``            vector length of one fused operation (Xie Alg. 5 ``L = min(K, L_max)``);
                 used by :func:`dot_chain`, which cuts a long K into blocks of L.
``F``            number of fractional bits kept when aligning the terms at the
                 largest exponent (Xie Alg. 7 line 10, ``RZ_F``).  Relative to the
                 exponent of the *unnormalised* product, whose significand is in
                 [1, 4): an F-bit alignment is the "(2, F)" alignment of
                 Khattak-Mikaitis Table II.
``F2``           second precision of TR-/GTR-FDPA (Xie Alg. 10/11, Table 7).
``alignment_rounding`` mode of TR-/GTR-FDPA's later alignment steps (Xie Alg. 10
                 lines 14-15, Alg. 11 lines 15-16 and 22-23): "rd" (CDNA3, the
                 default) or "rz" (the hypothetical twin of Xie Sec. 6.2.4, Fig. 3).
``rounding``     mode of the final conversion rho: "rne", "rna", "rz", "rd", "ru".
                 Xie's rho = (mode, out_format): RZ-FP32 = ("rz", "fp32"),
                 RZ-E8M13 = ("rz", "e8m13"), RNE-FP16 = ("rne", "fp16").
``in_format``    format of a and b (e.g. "fp16", "bf16", "tf32", "fp8_e4m3"):
                 defines Exp/SignedSig of subnormal inputs (exponent clamped to emin).
``out_format``   format of the result d ("fp32", "fp16", "e8m13").
``c_format``     format of c; default "fp16" when out_format is "fp16", else "fp32".
``zero_exponent`` exponent a zero term (zero product or zero c) carries into the
                 max-exponent search; ``None`` (default) means zero terms take no
                 part in it.  MMA-Sim's code uses a fixed minimum (e.g. -126).
                 It only matters when every non-zero term is tiny.
``flush_subnormals`` flush subnormal inputs (a, b, c) to +0 before use.
``P``            pairwise group size of FTZ-AddMul (2 or 4), Xie Alg. 2.
``k_block``      number of consecutive elements sharing one scale factor
                 (32 for MX, 16 for NVFP4), Xie Alg. 8/9.
``G``            group size of GST-FDPA (Xie Table 5: 16).
``scale_format`` "e8m0" (MX) or "ue4m3" (NVFP4).
``n_fma``, ``neab``, ``sticky``, ``c_position`` ("early"|"late"),
``interleave``   the Khattak-Mikaitis block-FMA parameters: block size N_FMA,
                 extra alignment bits (F = 23 + neab), sticky bit appended after
                 the kept alignment bits, c added inside the fused sum (early) or
                 after it with its own RNE rounding (late), and the fp8 mma.sync
                 pattern of H100/H200/B200 (two interleaved groups of n_fma, pairs
                 alternating, then c late).

Semantics fixed here (not parameters): products exact and unnormalised; alignment
truncates toward zero in sign-magnitude (RZ_F); TR/GTR-FDPA's later steps round
down (RD, toward -inf, as two's complement truncation does) unless
``alignment_rounding="rz"``; NaN/Inf follow Xie
Sec. 4.2; a tensor-core conversion that overflows gives +-inf even under RZ
(``final_round(..., overflow="inf")``, Khattak-Mikaitis Sec. IV-B), while
FMA / FTZ-Add/Mul / E-FDPA follow IEEE 754 (``overflow="ieee"``).
The "c late" addition of the KM model aligns both operands with 2 extra bits and
a sticky bit and rounds RNE (MATLAB GEMM.m, fixed cOutRoundMode = 'rne').

Parameters that reproduce the Khattak-Mikaitis hardware vectors bit for bit:
see DEVICE_MODELS / hw_model in tests/test_reference_mma.py.

Sign of zero: an exact-zero fused sum is +0 unless every addend is -0 (IEEE sum
rule); NVIDIA tensor cores never output -0 otherwise (Valpey et al. Sec. 4.4); a
non-zero TR-/GTR-FDPA sum that rounds to zero keeps its sign (MMA-Sim 2.1.1).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from workbench.numbers.formats import format as _format

__all__ = [
    "CANONICAL_NAN",
    "fmt",
    "to_fraction",
    "floor_log2",
    "exp_sig",
    "round_fraction",
    "final_round",
    "encode",
    "decode",
    "t_fdpa",
    "e_fdpa",
    "fma_chain",
    "ftz_addmul",
    "tr_fdpa",
    "gtr_fdpa",
    "st_fdpa",
    "gst_fdpa",
    "block_fma_km",
    "dot_chain",
]

#: NVIDIA canonical NaN encodings (Xie et al. Sec. 4.2).
CANONICAL_NAN = {"fp32": 0x7FFFFFFF, "e8m13": 0x7FFFFFFF, "fp16": 0x7FFF}

NAN = float("nan")
INF = float("inf")


# --------------------------------------------------------------------------- basics
def fmt(name):
    """The FloatFormat record (only its parameters are used here)."""
    return _format(name)


def to_fraction(x) -> Fraction:
    """Exact value of a finite float / int / Fraction."""
    return x if isinstance(x, Fraction) else Fraction(x)


def _is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _is_inf(x) -> bool:
    return isinstance(x, float) and math.isinf(x)


def _is_neg_zero(x) -> bool:
    return isinstance(x, float) and x == 0.0 and math.copysign(1.0, x) < 0


def floor_log2(x: Fraction) -> int:
    """floor(log2(|x|)) for x != 0, exactly."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return e


def exp_sig(x: Fraction, fmt_name: str) -> tuple[Fraction, int]:
    """(SignedSig(x), Exp(x)) of a non-zero finite x of format fmt_name.

    Exp is the unbiased exponent, clamped to emin for subnormals, and
    SignedSig = x / 2**Exp (|.| in [1, 2) for normals, (0, 1) for subnormals).
    """
    e = max(floor_log2(x), fmt(fmt_name).emin)
    return x / Fraction(2) ** e, e


def _round_int(q: Fraction, mode: str) -> int:
    """Round a rational to an integer in one of the IEEE/extra modes."""
    fl = q.numerator // q.denominator
    if fl == q:
        return fl
    if mode == "rz":
        return fl if q > 0 else fl + 1
    if mode == "rd":
        return fl
    if mode == "ru":
        return fl + 1
    if mode == "ra":
        return fl + 1 if q > 0 else fl
    frac = q - fl
    if frac != Fraction(1, 2):
        return fl + 1 if frac > Fraction(1, 2) else fl
    if mode == "rne":
        return fl if fl % 2 == 0 else fl + 1
    if mode == "rna":
        return fl + 1 if q > 0 else fl
    if mode == "rnz":
        return fl if q > 0 else fl + 1
    raise ValueError(f"unknown rounding mode {mode!r}")


def round_fraction(x: Fraction, F: int, mode: str) -> Fraction:
    """Round x to a multiple of 2**-F (F fractional bits) with mode.

    ``RZ_F`` / ``RD_F`` of Xie et al. Alg. 7/10/11 are ``mode="rz"`` / ``"rd"``.
    """
    scale = Fraction(2) ** F
    return Fraction(_round_int(x * scale, mode)) / scale


def final_round(value, fmt_name: str, mode: str = "rne", *, flush_subnormals: bool = False,
                overflow: str = "ieee") -> float:
    """Round an exact value (Fraction, or +-inf / nan) into format fmt_name.

    The conversion functions rho of Xie et al. Table 2 (RZ-FP32, RZ-E8M13,
    RNE-FP32, RNE-FP16): quantum 2**(max(floor(log2|v|), emin) - p + 1).
    overflow="ieee": IEEE 754 Sec. 7.4 (RNE -> inf; RZ -> max finite; RD/RU
    directed).  overflow="inf": any rounded result above max is +-inf (tensor
    cores: "finite accumulations lead to +-Inf", Khattak-Mikaitis Sec. IV-B).
    A zero result keeps the sign of the value (callers decide exact zeros).
    """
    if _is_nan(value) or _is_inf(value):
        return float(value)
    f = fmt(fmt_name)
    v = to_fraction(value)
    if v == 0:
        return float(value) if isinstance(value, float) else 0.0
    e = max(floor_log2(v), f.emin)
    quantum = Fraction(2) ** (e - f.p + 1)
    r = _round_int(v / quantum, mode) * quantum
    if abs(r) > Fraction(f.max):
        if f.special == "none":
            return math.copysign(f.max, v)
        if f.special != "ieee":
            return NAN
        to_inf = (overflow == "inf" or mode in ("rne", "rna", "rnz", "ra")
                  or (mode == "ru" and v > 0) or (mode == "rd" and v < 0))
        return math.copysign(INF if to_inf else f.max, v)
    if flush_subnormals and abs(r) < Fraction(f.min_normal):
        return math.copysign(0.0, v)
    if r == 0:
        return math.copysign(0.0, v)
    return float(r)


def encode(x: float, fmt_name: str, *, nan_bits: int | None = None) -> int:
    """Bit pattern of value x in an IEEE-style format (sign|exponent|fraction).

    NaN encodes as ``nan_bits`` (default: NVIDIA canonical NaN for fp32/fp16).
    """
    f = fmt(fmt_name)
    width = 1 + f.exp_bits + f.man_bits
    sign = 1 << (width - 1)
    if _is_nan(x):
        return CANONICAL_NAN[fmt_name] if nan_bits is None else nan_bits
    s = sign if math.copysign(1.0, x) < 0 else 0
    if _is_inf(x):
        return s | (((1 << f.exp_bits) - 1) << f.man_bits)
    v = abs(Fraction(x))
    if v == 0:
        return s
    e = max(floor_log2(v), f.emin)
    m = v / Fraction(2) ** e * (1 << f.man_bits)
    assert m.denominator == 1, f"{x} is not representable in {fmt_name}"
    m = int(m)
    biased = e + f.bias if m >= (1 << f.man_bits) else 0
    return s | (biased << f.man_bits) | (m & ((1 << f.man_bits) - 1))


def decode(bits: int, fmt_name: str) -> float:
    """Value of an IEEE-style (or fn) bit pattern."""
    f = fmt(fmt_name)
    width = 1 + f.exp_bits + f.man_bits
    neg = (bits >> (width - 1)) & 1
    E = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1)
    M = bits & ((1 << f.man_bits) - 1)
    top = (1 << f.exp_bits) - 1
    if f.special == "ieee" and E == top:
        v = NAN if M else INF
    elif f.special == "fn" and E == top and M == (1 << f.man_bits) - 1:
        v = NAN
    elif E == 0:
        v = float(Fraction(M, 1 << f.man_bits) * Fraction(2) ** f.emin)
    else:
        v = float((1 + Fraction(M, 1 << f.man_bits)) * Fraction(2) ** (E - f.bias))
    return -v if neg else v


# ---------------------------------------------------------------- shared helpers
def _default_c_format(out_format: str) -> str:
    return "fp16" if out_format == "fp16" else "fp32"


def _flush(x, fmt_name: str):
    """FlushSubnormal (Xie Alg. 2 line 1): subnormal -> +0."""
    if _is_nan(x) or _is_inf(x) or x == 0:
        return x
    return 0.0 if abs(to_fraction(x)) < Fraction(fmt(fmt_name).min_normal) else x


def _special(a, b, others=()):
    """IEEE NaN/Inf outcome of sum(a_k*b_k) + sum(others), or None if all finite.

    Xie Sec. 4.2: NaN + x = NaN, inf*0 = NaN, inf - inf = NaN, inf*z = +-inf.
    """
    infs = set()
    for x, y in zip(a, b):
        if _is_nan(x) or _is_nan(y):
            return NAN
        if _is_inf(x) or _is_inf(y):
            if x == 0 or y == 0:
                return NAN
            infs.add(math.copysign(1.0, x) * math.copysign(1.0, y))
    for z in others:
        if _is_nan(z):
            return NAN
        if _is_inf(z):
            infs.add(math.copysign(1.0, z))
    if len(infs) == 2:
        return NAN
    if infs:
        return infs.pop() * INF
    return None


def _all_neg_zero(a, b, others=()) -> bool:
    """True when every addend a_k*b_k and every other addend is -0."""
    for x, y in zip(a, b):
        if not (x == 0 or y == 0):
            return False
        if math.copysign(1.0, x) * math.copysign(1.0, y) > 0:
            return False
    return all(_is_neg_zero(z) for z in others)


def _product_terms(a, b, in_format, zero_exponent, extra_exp=None):
    """Exact unnormalised products (Xie Alg. 7 lines 2-4).

    SignedSig(a)*SignedSig(b) (|.| in [1, 4) for normal inputs) with exponent
    Exp(a) + Exp(b) (+ extra_exp[k], the scale exponents of ST-FDPA).  Zero
    products become (0, zero_exponent) or are dropped when zero_exponent is None.
    """
    terms = []
    for k, (x, y) in enumerate(zip(a, b)):
        x, y = to_fraction(x), to_fraction(y)
        if x == 0 or y == 0:
            if zero_exponent is not None:
                terms.append((Fraction(0), zero_exponent))
            continue
        sx, ex = exp_sig(x, in_format)
        sy, ey = exp_sig(y, in_format)
        terms.append((sx * sy, ex + ey + (extra_exp[k] if extra_exp else 0)))
    return terms


def _value_term(c, c_format, zero_exponent):
    """(SignedSig(c), Exp(c)) as a one-element list (Xie Alg. 7 lines 6-7)."""
    c = to_fraction(c)
    if c == 0:
        return [] if zero_exponent is None else [(Fraction(0), zero_exponent)]
    return [exp_sig(c, c_format)]


def _aligned_sum(terms, F, mode="rz", sticky=False):
    """Truncated fused sum (Xie Alg. 7 lines 8-11).

    e_max = max e_k; S = sum_k RZ_F(s_k * 2**(e_k - e_max)).  With sticky=True a
    term that lost non-zero bits gets one more bit 2**-(F+1) of its own sign
    (Khattak-Mikaitis IV-C, params.stkbitenabled).  Returns (S, e_max), or None
    when there is no term.
    """
    if not terms:
        return None
    e_max = max(e for _, e in terms)
    S = Fraction(0)
    for s, e in terms:
        x = s * Fraction(2) ** (e - e_max)
        t = round_fraction(x, F, mode)
        if sticky and t != x:
            t += Fraction(1 if x > 0 else -1, 2 ** (F + 1))
        S += t
    return S, e_max


def _flush_out(d, out_format, flush):
    """flush_output_subnormals: a result below the format's smallest normal after
    rounding (tininess after rounding, also a result rounded to zero) becomes +0."""
    if flush and not (_is_nan(d) or _is_inf(d)) and abs(Fraction(d)) < Fraction(fmt(out_format).min_normal):
        return 0.0
    return d


def _sum_to_output(S, e_max, out_format, rounding, neg_zero=False, keep_sign=False, flush=False):
    """Step 3 of Xie Alg. 7: d = rho(S * 2**e_max); exact zero -> +0 (or -0).

    A non-zero S that rounds to zero gives +0 (NVIDIA tensor cores never return -0,
    Valpey Sec. 4.4; MMA-Sim 2.1.1's t_fdpa/st_fdpa/gst_fdpa add +0.0), or, with
    ``keep_sign``, the zero of S's sign (AMD CDNA3: MMA-Sim 2.1.1's tr_fdpa/gtr_fdpa
    convert their last fixed-point sum to fp32 with its sign, no +0.0)."""
    v = S * Fraction(2) ** e_max
    if v == 0:
        return -0.0 if neg_zero else 0.0
    d = _flush_out(final_round(v, out_format, rounding, overflow="inf"), out_format, flush)
    return 0.0 if d == 0 and not keep_sign else d


# ------------------------------------------------------------------- T-FDPA
def t_fdpa(a, b, c, *, F, rounding="rz", in_format, out_format="fp32", c_format=None,
           zero_exponent=None, flush_subnormals=False, sticky=False, flush_output_subnormals=False):
    """Truncated FDPA, Xie et al. Sec. 4.1.3, Algorithm 7 (NVIDIA, Table 4).

    d = rho(S * 2**e_max), S = sum_{k<=L} RZ_F(s_k * 2**(e_k - e_max)) over the
    exact unnormalised products and c; rho = (rounding, out_format).  ``sticky``: the
    Khattak-Mikaitis sticky bit of :func:`_aligned_sum`; ``flush_output_subnormals``:
    a subnormal result becomes +0 (:func:`_flush_out`).
    """
    c_format = c_format or _default_c_format(out_format)
    if flush_subnormals:
        a = [_flush(x, in_format) for x in a]
        b = [_flush(x, in_format) for x in b]
        c = _flush(c, c_format)
    sp = _special(a, b, [c])
    if sp is not None:
        return sp
    terms = _product_terms(a, b, in_format, zero_exponent) + _value_term(c, c_format, zero_exponent)
    r = _aligned_sum(terms, F, sticky=sticky)
    if r is None:
        return -0.0 if _all_neg_zero(a, b, [c]) else 0.0
    return _sum_to_output(*r, out_format, rounding, _all_neg_zero(a, b, [c]), flush=flush_output_subnormals)


# ------------------------------------------------------------------- E-FDPA
def e_fdpa(a, b, c, *, rounding="rne", out_format="fp32", flush_output_subnormals=False):
    """Exact FDPA, Xie et al. Sec. 4.1.3, Algorithm 6 (AMD CDNA1).

    d = RNE-FP32(c + sum a_k b_k), computed exactly.
    """
    sp = _special(a, b, [c])
    if sp is not None:
        return sp
    v = sum((to_fraction(x) * to_fraction(y) for x, y in zip(a, b)), to_fraction(c))
    if v == 0:
        return -0.0 if _all_neg_zero(a, b, [c]) else 0.0
    return _flush_out(final_round(v, out_format, rounding), out_format, flush_output_subnormals)


# -------------------------------------------------------------------- FMA chain
def _ieee_fma(x, y, z, out_format, rounding, ftz=False):
    """IEEE 754 fused multiply-add x*y + z with one rounding (Xie Alg. 3)."""
    sp = _special([x], [y], [z])
    if sp is not None:
        return sp
    v = to_fraction(x) * to_fraction(y) + to_fraction(z)
    if v == 0:
        if (x == 0 or y == 0) and z == 0:  # sum of two zeros
            signs = {math.copysign(1.0, x) * math.copysign(1.0, y), math.copysign(1.0, z)}
            if len(signs) == 1:
                return signs.pop() * 0.0
        return -0.0 if rounding == "rd" else 0.0  # IEEE 754 Sec. 6.3
    d = final_round(v, out_format, rounding)
    if ftz and d != 0 and abs(Fraction(d)) < Fraction(fmt(out_format).min_normal):
        d = math.copysign(0.0, d)
    return d


def fma_chain(a, b, c, *, rounding="rne", out_format="fp32"):
    """Chain of standard FMAs, Xie et al. Sec. 4.1.2, Algorithms 3 and 4.

    d = c; for k: d = FMA(a_k, b_k, d)  (FP64 on NVIDIA, FP64/FP32 on AMD).
    """
    d = c
    for x, y in zip(a, b):
        d = _ieee_fma(x, y, d, out_format, rounding)
    return d


# ----------------------------------------------------------------- FTZ-AddMul
def _ftz_add(x, y):
    """FTZ-Add, Xie Alg. 1: RNE-FP32(x + y), subnormal results -> signed zero."""
    return _ieee_fma(x, 1.0, y, "fp32", "rne", ftz=True)


def _ftz_mul(x, y):
    """FTZ-Mul, Xie Alg. 1: RNE-FP32(x * y), subnormal results -> signed zero."""
    return _ieee_fma(x, y, -0.0, "fp32", "rne", ftz=True)


def ftz_addmul(a, b, c, *, P, in_format, flush_subnormals=True):
    """Phi_FTZ-AddMul, Xie et al. Sec. 4.1.1, Algorithms 1 and 2 (AMD CDNA2).

    Inputs flushed to +0; per group of P (2 or 4) products: pairwise FTZ-Add,
    then d = FTZ-Add(d, s) sequentially, starting from d = c.
    """
    if flush_subnormals:
        a = [_flush(x, in_format) for x in a]
        b = [_flush(x, in_format) for x in b]
        c = _flush(c, "fp32")
    d = c
    for k in range(0, len(a) - P + 1, P):
        p = [_ftz_mul(a[k + u], b[k + u]) for u in range(P)]
        s = _ftz_add(p[0], p[1])
        if P == 4:
            s = _ftz_add(s, _ftz_add(p[2], p[3]))
        d = _ftz_add(d, s)
    return d


# ------------------------------------------------------------------- TR-FDPA
def _tr_special(a, b, c, in_format):
    """Special values of TR/GTR-FDPA: products overflow to inf if >= 2**128 (Xie Sec. 4.2),
    and those infinities meet the Inf/NaN operands and c as IEEE says (MMA-Sim 2.1.1
    ``tr_fdpa`` multiplies the overflowed products by inf before any sum)."""
    finite = [(x, y) for x, y in zip(a, b) if not (_is_nan(x) or _is_nan(y) or _is_inf(x) or _is_inf(y))]
    big = [to_fraction(x) * to_fraction(y) for x, y in finite]
    big = [math.copysign(INF, p) for p in big if abs(p) >= Fraction(2) ** 128]
    return _special(a, b, [c] + big)


def _gtr_drops_special_c(a, b, c, in_format, F) -> bool:
    """MMA-Sim 2.1.1 ``gtr_fdpa``: an Inf/NaN c has exponent -1 there (``torch.frexp``
    gives 0, ``frexp_and_normalize`` subtracts one), so the special truncation
    ``s_c[e_c < e_max - F - 1] = 0`` drops it when the (finite) products reach
    e_max >= F + 1 (e_max: the largest Exp(a_k) + Exp(b_k) of the nonzero products)."""
    if not (_is_nan(c) or _is_inf(c)) or _special(a, b) is not None:
        return False
    es = [exp_sig(to_fraction(x), in_format)[1] + exp_sig(to_fraction(y), in_format)[1]
          for x, y in zip(a, b) if x != 0 and y != 0]
    return bool(es) and max(es) >= F + 1


def _cut(S, E, F2, out_format, ar):
    """MMA-Sim 2.1.1's last fixed-point step of ``tr_fdpa``/``gtr_fdpa``: the sum
    S * 2**E normalised (``frexp_and_normalize(..., e_subnormal=-126)``: the exponent
    clamped at the output's emin) and cut to F2 fractional bits of that significand
    (``floor(sum * 2**F2)``; RZ for the rz twin).  Returned in units of 2**E."""
    v = S * Fraction(2) ** E
    if v == 0:
        return S
    lead = max(floor_log2(abs(v)), fmt(out_format).emin)
    return round_fraction(v * Fraction(2) ** -lead, F2, ar) * Fraction(2) ** (lead - E)


def tr_fdpa(a, b, c, *, F=24, F2=31, rounding="rne", in_format, out_format="fp32",
            zero_exponent=None, alignment_rounding="rd", flush_output_subnormals=False):
    """Truncated rounded FDPA, Xie et al. Sec. 4.1.3, Algorithm 10 (AMD CDNA3), as
    MMA-Sim 2.1.1's ``tr_fdpa`` computes it.

    T = sum RZ_F(products aligned at e_max); E = max(e_max, e_c);
    S = RD_{F2+1}(T * 2**(e_max - E)) + RD_F(s_c * 2**(e_c - E)) (the paper's line 14
    has F2; MMA-Sim keeps one bit more); S cut to F2 + 1 significant bits
    (:func:`_cut`, not in the paper); d = rho(S * 2**E).
    alignment_rounding="rz" makes every RD an RZ (Xie Sec. 6.2.4, Phi'_TR-FDPA).
    """
    ar = alignment_rounding
    if ar not in ("rd", "rz"):
        raise ValueError(ar)
    sp = _tr_special(a, b, c, in_format)
    if sp is not None:
        return sp
    r = _aligned_sum(_product_terms(a, b, in_format, zero_exponent), F)
    cterm = _value_term(c, "fp32", zero_exponent)
    if r is None and not cterm:
        return -0.0 if _all_neg_zero(a, b, [c]) else 0.0
    T, e_max = r if r is not None else (Fraction(0), None)
    s_c, e_c = cterm[0] if cterm else (Fraction(0), None)
    E = max(e for e in (e_max, e_c) if e is not None)
    S = Fraction(0)
    if e_max is not None:
        S += round_fraction(T * Fraction(2) ** (e_max - E), F2 + 1, ar)
    if e_c is not None:
        S += round_fraction(s_c * Fraction(2) ** (e_c - E), F, ar)
    return _sum_to_output(_cut(S, E, F2, out_format, ar), E, out_format, rounding, _all_neg_zero(a, b, [c]),
                          keep_sign=True, flush=flush_output_subnormals)


def gtr_fdpa(a, b, c, *, F=24, F2=31, rounding="rne", in_format, out_format="fp32",
             zero_exponent=None, alignment_rounding="rd", flush_output_subnormals=False):
    """Group-truncated rounded FDPA, Xie et al. Sec. 4.1.3, Algorithm 11 (AMD CDNA3 FP8).

    Even- and odd-index products: two truncated fused sums (RZ_F); their sum with
    RD_F at the larger exponent; then c as in TR-FDPA, with c dropped when
    e_c < E - F - 1 (line 24, "special truncation"); T and the sum as in
    :func:`tr_fdpa` (MMA-Sim 2.1.1's ``gtr_fdpa``: F2 + 1 bits of T, the cut).
    alignment_rounding="rz" makes every RD (lines 15-16, 22-23) an RZ.
    """
    ar = alignment_rounding
    if ar not in ("rd", "rz"):
        raise ValueError(ar)
    if _gtr_drops_special_c(a, b, c, in_format, F):
        c = 0.0
    sp = _tr_special(a, b, c, in_format)
    if sp is not None:
        return sp
    groups = [_aligned_sum(_product_terms(a[i::2], b[i::2], in_format, zero_exponent), F) for i in (0, 1)]
    groups = [g for g in groups if g is not None]
    cterm = _value_term(c, "fp32", zero_exponent)
    if not groups and not cterm:
        return -0.0 if _all_neg_zero(a, b, [c]) else 0.0
    e_max = max(e for _, e in groups) if groups else None
    T = sum((round_fraction(s * Fraction(2) ** (e - e_max), F, ar) for s, e in groups), Fraction(0))
    s_c, e_c = cterm[0] if cterm else (Fraction(0), None)
    E = max(e for e in (e_max, e_c) if e is not None)
    S = Fraction(0)
    if e_max is not None:
        S += round_fraction(T * Fraction(2) ** (e_max - E), F2 + 1, ar)
    if e_c is not None and not e_c < E - F - 1:
        S += round_fraction(s_c * Fraction(2) ** (e_c - E), F, ar)
    return _sum_to_output(_cut(S, E, F2, out_format, ar), E, out_format, rounding, _all_neg_zero(a, b, [c]),
                          keep_sign=True, flush=flush_output_subnormals)


# ------------------------------------------------------------------- ST-FDPA
def _scale_exp_sig(x, scale_format):
    """(SignedSig, Exp) of a scale factor (E8M0: significand 1, exponent log2)."""
    if scale_format == "e8m0":
        return Fraction(1), floor_log2(to_fraction(x))
    return exp_sig(to_fraction(x), scale_format)


def st_fdpa(a, b, c, scale_a, scale_b, *, F, rounding="rz", in_format, out_format="fp32",
            k_block=32, scale_format="e8m0", zero_exponent=None, flush_output_subnormals=False):
    """Scaled truncated FDPA, Xie et al. Sec. 4.1.3, Algorithm 8 (MXFP8/6/4).

    T-FDPA whose product exponents also add Exp(alpha) + Exp(beta) of the E8M0
    scales of the element's block of k_block (scale_a[k // k_block]).
    """
    if any(_is_nan(s) for s in list(scale_a) + list(scale_b)):
        return NAN
    sp = _special(a, b, [c])
    if sp is not None:
        return sp
    extra = [_scale_exp_sig(scale_a[k // k_block], scale_format)[1]
             + _scale_exp_sig(scale_b[k // k_block], scale_format)[1] for k in range(len(a))]
    terms = _product_terms(a, b, in_format, zero_exponent, extra) + _value_term(c, "fp32", zero_exponent)
    r = _aligned_sum(terms, F)
    if r is None:
        return 0.0
    return _sum_to_output(*r, out_format, rounding, flush=flush_output_subnormals)


def gst_fdpa(a, b, c, scale_a, scale_b, *, F=35, G=16, rounding="rz", in_format="fp4_e2m1",
             out_format="fp32", k_block=16, scale_format="ue4m3", zero_exponent=None,
             flush_output_subnormals=False):
    """Group-scaled truncated FDPA, Xie et al. Sec. 4.1.3, Algorithm 9 (MXFP4/NVFP4).

    p_g = exact sum of G products; s_g = p_g * SignedSig(alpha) * SignedSig(beta),
    e_g = Exp(alpha) + Exp(beta) of the group's scales (index g*G // k_block);
    then the truncated fused sum of the L/G terms and c, d = rho(S * 2**e_max).
    A group with no non-zero product, or with a zero scale significand, is a zero term
    (see zero_exponent); a group whose non-zero products cancel keeps e_g in the
    maximum exponent (MMA-Sim 2.1.1's gst_fdpa: "zeros resulted from summation do not
    apply e_zero").
    """
    if any(_is_nan(s) for s in list(scale_a) + list(scale_b)):
        return NAN
    sp = _special(a, b, [c])
    if sp is not None:
        return sp
    terms = []
    for g in range(len(a) // G):
        products = [to_fraction(x) * to_fraction(y) for x, y in zip(a[g * G:(g + 1) * G], b[g * G:(g + 1) * G])]
        p = sum(products, Fraction(0))
        sa, ea = _scale_exp_sig(scale_a[g * G // k_block], scale_format)
        sb, eb = _scale_exp_sig(scale_b[g * G // k_block], scale_format)
        if any(products) and sa != 0 and sb != 0:
            terms.append((p * sa * sb, ea + eb))
        elif zero_exponent is not None:
            terms.append((Fraction(0), zero_exponent))
    terms += _value_term(c, "fp32", zero_exponent)
    r = _aligned_sum(terms, F)
    if r is None:
        return 0.0
    return _sum_to_output(*r, out_format, rounding, flush=flush_output_subnormals)


# ------------------------------------------------- Khattak-Mikaitis block FMA
def _km_round_format(out_format, neab):
    """Ada/L40S fp8 (neab < 0, fp32 out): result kept to 23 + neab fraction bits."""
    return f"e8m{23 + neab}" if neab < 0 and out_format == "fp32" else out_format


def _km_block(a, b, c, *, neab, rounding, sticky, in_format, out_format, c_format):
    """One block FMA (KM Sec. IV, Figs. 2-5): products unnormalised, aligned at the
    largest exponent with F = 23 + neab fraction bits (+ optional sticky bit),
    c inside the fused sum, one normalisation and final rounding."""
    terms = _product_terms(a, b, in_format, None) + _value_term(c, c_format, None)
    r = _aligned_sum(terms, 23 + neab, sticky=sticky)
    if r is None:
        return 0.0
    return _sum_to_output(*r, _km_round_format(out_format, neab), rounding)


def _km_late_add(x, c, out_format):
    """c added late (KM Sec. IV-A5, IV-C): x + c with RNE, 2 extra alignment bits
    and a sticky bit, both operands being values of the output format."""
    terms = _value_term(x, out_format, None) + _value_term(c, out_format, None)
    r = _aligned_sum(terms, fmt(out_format).p - 1 + 2, sticky=True)
    if r is None:
        return 0.0
    return _sum_to_output(*r, out_format, "rne")


def block_fma_km(a, b, c, *, n_fma, neab, rounding="rz", sticky=False, c_position="early",
                 interleave=False, in_format, out_format="fp32", c_format=None):
    """Generic block FMA of Khattak & Mikaitis (2025), Sec. IV and IV-C
    (Generic_BFMA_TC / CustomTC parameters fma, neab, frmode, stkbitenabled,
    inter_pattern).  The vector is consumed in blocks of n_fma elements (2*n_fma
    with interleave=True), each block's result becoming the next block's c
    (recursive accumulation, Sec. IV-C).  With interleave=True (fp8 through
    mma.sync on H100/H200/B200, Sec. IV-A5, Fig. 5c) elements k with k % 4 < 2
    of a block form the first group (accumulated with c = 0), the others the
    second group (accumulated onto the first group's rounded result), then c is
    added late with RNE.
    """
    c_format = c_format or _default_c_format(out_format)
    sp = _special(a, b, [c])
    if sp is not None:
        return sp
    kw = dict(neab=neab, rounding=rounding, sticky=sticky, in_format=in_format, out_format=out_format)
    size = 2 * n_fma if interleave else n_fma
    d = c
    for i in range(0, len(a), size):
        x, y = a[i:i + size], b[i:i + size]
        if interleave:
            g1 = [k for k in range(len(x)) if k % 4 < 2]
            g2 = [k for k in range(len(x)) if k % 4 >= 2]
            d1 = _km_block([x[k] for k in g1], [y[k] for k in g1], 0, c_format=out_format, **kw)
            d2 = _km_block([x[k] for k in g2], [y[k] for k in g2], d1, c_format=out_format, **kw)
            d = _km_late_add(d2, d, out_format)
        elif c_position == "late":
            d = _km_late_add(_km_block(x, y, 0, c_format=c_format, **kw), d, out_format)
        else:
            d = _km_block(x, y, d, c_format=c_format if i == 0 else out_format, **kw)
    return d


# --------------------------------------------------------------------- chains
def int_mma(a, b, c, *, overflow: str) -> float:
    """One instruction of an integer unit (kind ``int-mma``), from the PTX ISA's mma
    "Integer operations" text: the exact sum ``c + sum a_k b_k`` in Python integers,
    then the s32 accumulator's overflow rule - ``"wrap"`` (".satfinite not specified:
    the accumulated value is wrapped", modulo 2^32) or ``"saturate"`` (".satfinite:
    limited to the range MIN_INT32..MAX_INT32").  Returns the int32 value as a float."""
    s = int(c) + sum(int(x) * int(y) for x, y in zip(a, b))
    if overflow == "wrap":
        s = (s + 2**31) % 2**32 - 2**31
    elif overflow == "saturate":
        s = min(max(s, -(2**31)), 2**31 - 1)
    else:
        raise ValueError(overflow)
    return float(s)


def dot_chain(a, b, c, *, L, op, scale_a=None, scale_b=None, k_block=None, **kw):
    """Phi_FDPA of Xie et al. Algorithm 5: d = c; for each block of L elements,
    d = op(block of a, block of b, d, **kw) -- the way a GEMM keeps its
    accumulator.  For scaled ops the scales of each block are passed along.
    """
    d = c
    for i in range(0, len(a), L):
        if scale_a is None:
            d = op(a[i:i + L], b[i:i + L], d, **kw)
        else:
            sl = slice(i // k_block, (i + L) // k_block)
            d = op(a[i:i + L], b[i:i + L], d, scale_a[sl], scale_b[sl], k_block=k_block, **kw)
    return d


# ------------------------------------------------- vectorised float32 FMA chain
def _round_to_fp32_exact(hi, lo):
    """RNE to binary32 of the exact value hi + lo, where hi = fl64(hi + lo) (TwoSum).

    numpy's cast rounds hi (RNE); the exact value differs from hi only by lo, which is
    below half an ulp of binary64, so it can change the result only when hi lies on a
    binary32 midpoint: then the exact value is beyond the midpoint when lo points
    away from the cast result, and rounds to that neighbour."""
    import numpy as np

    with np.errstate(all="ignore"):
        r = hi.astype(np.float32)
        d = hi - r.astype(np.float64)
        towards = np.where(d > 0, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
        nb = np.nextafter(r, towards)
        mid = (r.astype(np.float64) + nb.astype(np.float64)) / 2
        beyond = (d != 0) & (hi == mid) & (lo != 0) & (np.sign(lo) == np.sign(d)) & np.isfinite(hi)
    return np.where(beyond, nb, r)


def fp32_fma_chain_matmul(A, B, C):
    """D = fl32(chain + C), chain = FMA_32(a_k, b_k, ...) from +0 over k = 0..K-1: the
    float32 FMA chain with C added late (a BLAS sgemm's inner loop, then numpy's + C).

    Independent of the engine: products of binary32 values are exact in binary64, each
    FMA's sum is held exactly as a TwoSum pair and rounded once by
    :func:`_round_to_fp32_exact`; the late addition is numpy's float32 add (IEEE RNE).
    Specials follow IEEE arithmetic (inf * 0 and inf - inf give NaN)."""
    import numpy as np

    A = np.asarray(A, dtype=np.float32).astype(np.float64)
    B = np.asarray(B, dtype=np.float32).astype(np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), dtype=np.float32)
    with np.errstate(all="ignore"):
        for k in range(A.shape[1]):
            p = A[:, k:k + 1] * B[k:k + 1, :]          # exact: 48-bit significands
            s = acc.astype(np.float64)
            hi = p + s
            bv = hi - p
            lo = (p - (hi - bv)) + (s - bv)
            acc = _round_to_fp32_exact(hi, np.where(np.isfinite(hi), lo, 0.0))
        return (acc + np.asarray(C, dtype=np.float32)).astype(np.float64)


# ------------------------------------------------ CPU bf16 pair units (pair-dot)
# The vendors' pseudo-code read again, in exact arithmetic: Intel SDM Vol. 2 VDPBF16PS and
# TDPBF16PS ("FP32 FMA with DAZ in, FTZ out and RNE rounding"; NaN operands by Table 5-1) and
# Arm's BFDotAdd (FPCR.EBF = 0: BFMulH, FPAdd_BF16, BFRound - round to odd, overflow to Inf,
# inputs and tiny results flushed, default NaN; FPCR.EBF = 1: FPDot then FPAdd, RNE, FZ = 0).
_MIN32 = Fraction(1, 2 ** 126)
_X86_NAN = 0xFFC00000
_ARM_NAN = 0x7FC00000


def _f32_from_bits(u: int) -> float:
    return struct.unpack("<f", struct.pack("<I", u))[0]


def _bits_of_f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def round32(x: Fraction, odd: bool) -> float:
    """x (nonzero) rounded to binary32: to nearest even, or to odd with overflow to Inf."""
    sign = -1.0 if x < 0 else 1.0
    m = abs(x)
    e = floor_log2(m)
    q = Fraction(2) ** (max(e, -126) - 23)
    n, rem = divmod(m, q)
    if odd:
        if e >= 128:
            return sign * math.inf
        n = n | 1 if rem else n
    elif rem > q / 2 or (rem == q / 2 and n % 2):
        n += 1
    v = n * q
    return sign * math.inf if v >= 2 ** 128 else sign * float(v)


def _daz(x: float) -> float:
    return math.copysign(0.0, x) if x != 0 and abs(x) < 2.0 ** -126 else x


def _add32(x: float, y: float, *, odd: bool, ftz_before: bool, ftz_after: bool) -> float:
    """Round(x + y) to binary32 with IEEE zero signs and Inf rules (NaN in, NaN out)."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x + y
    s = Fraction(x) + Fraction(y)
    if s == 0:
        return x + y           # +0 unless both are -0 (round to nearest)
    if ftz_before and abs(s) < _MIN32:
        return math.copysign(0.0, float(s))
    r = round32(s, odd)
    return _daz(r) if ftz_after else r


def _x86_fma(x: float, y: float, z: float) -> float:
    """x86 binary32 FMA of bf16 values x, y and binary32 z: RNE, results subnormal after
    rounding flushed."""
    if not all(map(math.isfinite, (x, y, z))):
        return x * y + z
    p = Fraction(x) * Fraction(y)
    if p == 0:
        return _add32(x * y, z, odd=False, ftz_before=False, ftz_after=True) if z == 0 else z
    s = p + Fraction(z)
    return 0.0 if s == 0 else _daz(round32(s, False))


def _arm_mul_odd(x: float, y: float) -> float:
    """Arm BFMulH with FPCR.EBF = 0: the product rounded to odd, tiny results flushed."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y
    p = Fraction(x) * Fraction(y)
    if p == 0:
        return x * y
    return math.copysign(0.0, float(p)) if abs(p) < _MIN32 else round32(p, True)


def _arm_dot2(a0: float, b0: float, a1: float, b1: float) -> float:
    """Arm FPDot with FPCR.EBF = 1 (RNE, FZ = 0): both products summed exactly, rounded once."""
    if not all(map(math.isfinite, (a0, b0, a1, b1))):
        return a0 * b0 + a1 * b1
    s = Fraction(a0) * Fraction(b0) + Fraction(a1) * Fraction(b1)
    return a0 * b0 + a1 * b1 if s == 0 else round32(s, False)


def pair_dot(a, b, c, *, rule: str) -> float:
    """One instruction of a CPU bf16 pair unit (kind ``pair-dot``): the pairs of ``a`` and
    ``b`` (an even number of bf16 values) and the binary32 accumulator ``c`` -> the new
    accumulator, by ``rule`` ("x86-fma", "x86-even-odd", "arm-odd", "arm-fused").  A NaN
    result carries its bits: the first NaN operand of the instruction in SDM Table 5-1's
    order (a low, b low, a high, b high per pair, then c), quieted, or x86's default NaN
    0xFFC00000; Arm's rules give the default NaN 0x7FC00000."""
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    c = float(c)
    pairs = range(0, len(a), 2)
    if rule in ("x86-fma", "x86-even-odd"):
        acc = _daz(c)
        if rule == "x86-fma":
            for k in pairs:
                acc = _x86_fma(_daz(a[k + 1]), _daz(b[k + 1]), acc)
                acc = _x86_fma(_daz(a[k]), _daz(b[k]), acc)
        else:
            ev = od = 0.0
            for k in pairs:
                ev = _x86_fma(_daz(a[k]), _daz(b[k]), ev)
                od = _x86_fma(_daz(a[k + 1]), _daz(b[k + 1]), od)
            acc = _add32(acc, _add32(ev, od, odd=False, ftz_before=False, ftz_after=True),
                         odd=False, ftz_before=False, ftz_after=True)
        if math.isnan(acc):
            for v in [x for k in pairs for x in (a[k], b[k], a[k + 1], b[k + 1])] + [c]:
                if math.isnan(v):
                    return _f32_from_bits(_bits_of_f32(v) | 0x00400000)
            return _f32_from_bits(_X86_NAN)
        return acc
    if rule not in ("arm-odd", "arm-fused"):
        raise ValueError(f"rule={rule!r}")
    odd = rule == "arm-odd"
    acc = _daz(c) if odd else c
    for k in pairs:
        if odd:
            t = _add32(_arm_mul_odd(_daz(a[k]), _daz(b[k])), _arm_mul_odd(_daz(a[k + 1]), _daz(b[k + 1])),
                       odd=True, ftz_before=True, ftz_after=False)
            acc = _add32(acc, t, odd=True, ftz_before=True, ftz_after=False)
        else:
            acc = _add32(acc, _arm_dot2(a[k], b[k], a[k + 1], b[k + 1]), odd=False, ftz_before=False,
                         ftz_after=False)
    return _f32_from_bits(_ARM_NAN) if math.isnan(acc) else acc
