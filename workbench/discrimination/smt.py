"""Exact discrimination with z3: both models' T-FDPA accumulators in bit vectors.

Valpey et al. (2025) Sections 4.3 and 5 encode the tensor core's fixed-point
accumulator (no normalisation of partial sums, truncating alignment, carry bits) with
SMT bit-vector operations, because the IEEE operations of SMT-LIB normalise every
intermediate sum.  This module does the same for the engine's T-FDPA (Xie et al.
Algorithm 7, the semantics of :mod:`workbench.engine.kernels`): operands as integer
significands and clamped exponents; products exact; the largest exponent over the
products, c and (with ``zero_exponent``) the zero terms of the block, padding included;
each term shifted to ``F`` fraction bits below it truncating the magnitude, optionally
with a sticky bit; an exact signed sum; one rounding to the result format (RNE/RZ/RD/RU,
subnormals, overflow to Inf); blocks of L chained through c.  z3 is asked for finite
inputs on which the two outputs differ: ``sat`` gives a discriminating input (re-run
through :func:`workbench.gemm` before it is returned), ``unsat`` proves the models
equivalent for this K on finite inputs.

Requires ``pip install z3-solver`` (the optional extra ``smt``); imported lazily.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..engine.model import Model
from . import _eval
from .outcome import Discrimination, DiscriminationOutcome

__all__ = ["discriminate_smt", "supported"]

_EW = 24  # exponent bit-vector width (signed)


def supported(model: Model) -> str | None:
    """None when the model can be encoded, else the reason it cannot."""
    if not model.operation.smt_encodable:
        return f"kind={model.kind!r} (only 't-fdpa' is encoded)"
    if model.c_position != "early":
        return "c_position='late'"
    if model.interleave != 1:
        return f"interleave={model.interleave}"
    if model.flush_subnormals or model.flush_output_subnormals:
        return "flush_subnormals/flush_output_subnormals"
    return None


class _Enc:
    def __init__(self, z3: Any, W: int) -> None:
        self.z3 = z3
        self.W = W

    def e(self, v: int) -> Any:
        return self.z3.BitVecVal(v, _EW)

    def w(self, v: int) -> Any:
        return self.z3.BitVecVal(v, self.W)

    def to_w(self, x: Any) -> Any:
        """Exponent-width value (non-negative) as a W-bit shift amount."""
        z3 = self.z3
        return z3.ZeroExt(self.W - _EW, x) if self.W > _EW else z3.Extract(self.W - 1, 0, x)

    def bitlen(self, x: Any, width: int) -> Any:
        z3 = self.z3
        r = self.e(0)
        for i in range(width):
            r = z3.If(z3.Extract(i, i, x) == 1, self.e(i + 1), r)
        return r

    def shift(self, m: Any, sh: Any) -> Any:
        """``m * 2^sh`` truncated (sh signed, exponent width)."""
        z3 = self.z3
        return z3.If(sh >= 0, m << self.to_w(sh), z3.LShR(m, self.to_w(-sh)))


def _operand(z3: Any, s: Any, name: str, man_bits: int, emin: int, emax: int, max_sig: int,
             W: int) -> tuple[Any, Any, Any]:
    sign = z3.Bool(f"{name}_s")
    sig = z3.BitVec(f"{name}_m", W)
    exp = z3.BitVec(f"{name}_e", _EW)
    s.add(z3.ULT(sig, 1 << (man_bits + 1)), exp >= emin, exp <= emax)
    s.add(z3.Implies(exp > emin, z3.UGE(sig, 1 << man_bits)))
    s.add(z3.Implies(exp == emax, z3.ULE(sig, max_sig)))
    s.add(z3.Implies(sig == 0, z3.Not(sign)))
    return sign, sig, exp


def _round(en: _Enc, S: Any, scale: Any, p: int, emin: int, emax: int, mode: str) -> tuple[Any, Any, Any, Any]:
    """(inf, neg, keep, q): the engine's ``round_fixed`` of ``S * 2^scale``."""
    z3 = en.z3
    W = en.W
    neg = S < 0
    mag = z3.If(neg, -S, S)
    lead = en.bitlen(mag, W) - 1 + scale
    q = z3.If(lead > emin, lead, en.e(emin)) - (p - 1)
    sh = q - scale
    shw = en.to_w(z3.If(sh > 0, sh, en.e(0)))
    keep_r = z3.LShR(mag, shw)
    rem = mag - (keep_r << shw)
    half = en.w(1) << en.to_w(z3.If(sh > 0, sh - 1, en.e(0)))
    big = sh >= W - 1  # the value is below half a quantum: rem < half
    above = z3.And(z3.Not(big), z3.UGT(rem, half))
    is_half = z3.And(z3.Not(big), rem == half)
    rem_nz = rem != 0
    odd = z3.Extract(0, 0, keep_r) == 1
    if mode == "rne":
        inc = z3.And(rem_nz, z3.Or(above, z3.And(is_half, odd)))
    elif mode == "rz":
        inc = z3.BoolVal(False)
    elif mode == "rd":
        inc = z3.And(rem_nz, neg)
    else:
        inc = z3.And(rem_nz, z3.Not(neg))
    keep = z3.If(sh > 0, keep_r + z3.If(inc, en.w(1), en.w(0)), mag << en.to_w(z3.If(sh > 0, en.e(0), -sh)))
    carry = keep == (1 << p)
    keep = z3.If(carry, en.w(1 << (p - 1)), keep)
    q = z3.If(carry, q + 1, q)
    inf = z3.And(z3.UGE(keep, 1 << (p - 1)), q + (p - 1) > emax)
    return inf, neg, keep, q


def _model_output(en: _Enc, m: Model, a: list, b: list, c: tuple, K: int) -> tuple[Any, Any, Any, Any]:
    z3 = en.z3
    fin, fout, res = m.in_fmt, m.out_fmt, m.res_fmt
    fp = 2 * fin.man_bits
    mc = fout.man_bits
    L, F = m.L, m.F
    st = 1 if m.sticky else 0
    use_ez = m.zero_exponent is not None
    NEG = -(1 << (_EW - 3))
    ez = NEG if m.zero_exponent is None else m.zero_exponent
    nblocks = max(1, -(-K // L))
    c_sign, c_sig, c_exp = c
    inf_prev = z3.BoolVal(False)
    inf_sign = z3.BoolVal(False)
    out = None
    for blk in range(nblocks):
        terms = []  # (sign, magnitude, exponent, fraction bits, nonzero)
        n_pad = 0
        for j in range(L):
            k = blk * L + j
            if k >= K:
                n_pad += 1
                continue
            (sa, ma, ea), (sb, mb, eb) = a[k], b[k]
            prod = ma * mb
            terms.append((z3.Xor(sa, sb), prod, ea + eb, fp, prod != 0))
        terms.append((c_sign, c_sig, c_exp, mc, c_sig != 0))
        emax: Any = en.e(NEG)
        for _, _, e, _, nz in terms:
            cand = z3.If(nz, e, en.e(ez))
            emax = z3.If(cand > emax, cand, emax)
        if use_ez and n_pad:
            emax = z3.If(en.e(ez) > emax, en.e(ez), emax)
        S = en.w(0)
        for sg, mag, e, frac, nz in terms:
            sh = en.e(F - frac) + e - emax
            t = en.shift(mag, sh)
            if st:
                r = en.to_w(z3.If(sh < 0, -sh, en.e(0)))
                lost = z3.And(sh < 0, mag != (z3.LShR(mag, r) << r))
                t = (t << 1) | z3.If(lost, en.w(1), en.w(0))
            S = S + z3.If(z3.And(nz, sg), -t, z3.If(nz, t, en.w(0)))
        all_zero = emax == NEG
        inf, neg, keep, q = _round(en, S, emax - F - st, res.p, res.emin, res.emax, m.rounding)
        keep = z3.If(all_zero, en.w(0), keep)
        neg = z3.And(z3.Not(all_zero), neg)
        inf = z3.And(z3.Not(all_zero), inf)
        # Inf from an earlier block propagates through c
        inf_sign = z3.If(inf_prev, inf_sign, neg)
        inf_now = z3.Or(inf_prev, inf)
        out = (inf_now, z3.If(inf_prev, inf_sign, neg), keep, q)
        inf_prev = inf_now
        # c of the next block: the result decomposed with mc fraction bits
        lead = q + en.bitlen(keep, res.p + 1) - 1
        ce = z3.If(lead > fout.emin, lead, en.e(fout.emin))
        cs = z3.If(keep == 0, en.w(0), keep << en.to_w(q - (ce - mc)))
        c_sign, c_sig, c_exp = z3.And(neg, keep != 0), cs, z3.If(keep == 0, en.e(fout.emin), ce)
    assert out is not None
    return out


def discriminate_smt(ma: Model, mb: Model, *, K: int, timeout: float = 60.0) -> DiscriminationOutcome:
    """Ask z3 for finite inputs of length K on which ``ma`` and ``mb`` differ."""
    try:
        import z3
    except ImportError as exc:
        raise ValueError("backend='smt' needs z3: pip install z3-solver (the optional extra 'smt')") from exc
    for name, m in (("model_a", ma), ("model_b", mb)):
        why = supported(m)
        if why is not None:
            raise ValueError(f"backend='smt' cannot encode {name}: {why}")
    if (ma.in_format, ma.out_format) != (mb.in_format, mb.out_format):
        raise ValueError(f"backend='smt' needs equal formats; got {ma.in_format}->{ma.out_format} and "
                         f"{mb.in_format}->{mb.out_format}")
    if ma.res_fmt.emin != mb.res_fmt.emin:
        raise ValueError("backend='smt' needs result formats with the same emin")
    if K > 64:
        raise ValueError(f"K={K}: backend='smt' is meant for small K (at most 64)")
    fin, fout = ma.in_fmt, ma.out_fmt
    Fmax = max(ma.F, mb.F)
    W = 2 * max(fin.p, fout.p) + max(0, Fmax - min(2 * fin.man_bits, fout.man_bits)) + K.bit_length() + 12
    W = max(W, _EW + 2)
    s = z3.Solver()
    s.set("timeout", int(timeout * 1000))
    en = _Enc(z3, W)
    args = (fin.man_bits, fin.emin, fin.emax, fin.max_significand, W)
    a = [_operand(z3, s, f"a{k}", *args) for k in range(K)]
    b = [_operand(z3, s, f"b{k}", *args) for k in range(K)]
    c = _operand(z3, s, "c", fout.man_bits, fout.emin, fout.emax, fout.max_significand, W)
    ia, na, ka, qa = _model_output(en, ma, a, b, c, K)
    ib, nb, kb, qb = _model_output(en, mb, a, b, c, K)
    P = max(ma.res_fmt.p, mb.res_fmt.p)
    ka2, qa2 = ka << (P - ma.res_fmt.p), qa - (P - ma.res_fmt.p)
    kb2, qb2 = kb << (P - mb.res_fmt.p), qb - (P - mb.res_fmt.p)
    same = z3.If(z3.Or(ia, ib), z3.And(ia == ib, na == nb),
                 z3.And(na == nb, ka2 == kb2, z3.Or(ka2 == 0, qa2 == qb2)))
    s.add(z3.Not(same))
    verdict = s.check()
    if verdict == z3.unsat:
        return DiscriminationOutcome(None, "proved equivalent",
                                     f"z3 proved the two T-FDPA models give the same output on every finite "
                                     f"input of length K={K} ({fin.name} -> {fout.name})")
    if verdict != z3.sat:
        return DiscriminationOutcome(None, "none found within budget",
                                     f"z3 returned {verdict} within {timeout} s (K={K}): neither an input nor a proof")
    mdl = s.model()

    def val(op: tuple, fmt_man: int) -> float:
        sg, sig, e = op
        m_ = mdl.eval(sig, model_completion=True).as_long()
        e_ = mdl.eval(e, model_completion=True).as_signed_long()
        v = math.ldexp(float(m_), e_ - fmt_man)
        return -v if z3.is_true(mdl.eval(sg, model_completion=True)) else v

    av = np.array([val(x, fin.man_bits) for x in a])
    bv = np.array([val(x, fin.man_bits) for x in b])
    cv = val(c, fout.man_bits)
    A, B, C = av[None, :], bv[:, None], np.array([[cv]])
    res = Discrimination(a=av, b=bv, c=cv, out_a=float(_eval.gemm_f64(ma, A, B, C)[0, 0]),
                         out_b=float(_eval.gemm_f64(mb, A, B, C)[0, 0]), model_a=ma, model_b=mb, method="smt")
    if _eval.same_bits(res.out_a, res.out_b):
        raise RuntimeError(f"internal error: the z3 witness does not discriminate when run through gemm: {res}")
    return DiscriminationOutcome(res, "found", f"z3 found a distinguishing input (K={K})")
