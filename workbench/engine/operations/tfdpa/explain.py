"""T-FDPA's step of :func:`workbench.engine.explain.explain` (Xie et al. 2025 Algorithm 7;
Khattak & Mikaitis 2025): the exact unnormalised products (lines 2-4), the block's
largest exponent (noting when a zero operand's fixed exponent set it), every term
aligned at it with the bits it lost (line 10, RZ_F), the exact fixed-point sum (line
11), its normalisation and the rounding rho (line 13); c early or late, the sticky bit,
and the interleaved two-group pattern of fp8 through ``mma.sync`` (Section IV-A5,
Fig. 5c).  Every number comes from the compiled primitives the kernels use, so the
trace's value is the kernel's bit for bit.  ST-FDPA's step
(:mod:`workbench.engine.operations.stfdpa.explain`) is this one with scale exponents."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ... import ops as _ops
from ...explain import _decomp, _norm, _val
from ...kernels import exact_add
from ...model import Model
from ...trace import Block, Term


def _special_block(blk: Block, codes) -> Block:
    pos = neg = nan = False
    for code in codes:
        pos, neg, nan = _ops.combine_special(code, pos, neg, nan)
    blk.result = float(_ops.special_result(pos, neg, nan))
    blk.special = "NaN" if nan or (pos and neg) else ("+Inf" if pos else "-Inf")
    return blk


def _fused_trace(blk: Block, ops_, d: float, F: int, m: Model, c_label: str = "c") -> float:
    """One truncated fused sum (Xie et al. Algorithm 7 lines 5-13): the products
    ``ops_`` (label, s1, e1, s2, e2, note: decomposed operands, scale exponents already
    in e1) and the accumulator term ``d`` aligned at their largest exponent, truncated
    to ``F`` fractional bits (plus the sticky bit), added exactly and rounded with
    rho.  Fills ``blk`` and returns the rounded value; mirrors
    :func:`workbench.engine.operations.tfdpa.kernels._fused` and :func:`~workbench.engine.operations.tfdpa.kernels.tfdpa_step`."""
    fin, out, res = m.in_fmt, m.out_fmt, m.res_fmt
    fp = 2 * fin.man_bits
    blk.F = F
    codes = []
    for _, s1, e1, s2, e2, _ in ops_:
        if e1 >= _ops.SPECIAL or e2 >= _ops.SPECIAL:
            codes.append(_ops.special_product(s1, e1, s2, e2))
    cs, ce = _decomp(d, out)
    if ce >= _ops.SPECIAL:
        codes.append(_ops.special_value(cs))
    if codes:
        return _special_block(blk, codes).result
    emax = _ops.NEG_BIG
    ez = m.zero_exponent
    zero_max = False
    for lab, s1, e1, s2, e2, note in ops_:
        p = s1 * s2
        if p == 0:
            blk.terms.append(Term(lab, Fraction(0), ez, Fraction(0), note=note))
            if ez is not None and ez > emax:
                emax, zero_max = ez, True
        else:
            blk.terms.append(Term(lab, _val(p, 0, fp), e1 + e2, _val(p, e1 + e2, fp), note=note))
            if e1 + e2 > emax:
                emax, zero_max = e1 + e2, False
    if cs == 0:
        cterm = Term(c_label, Fraction(0), ez, Fraction(0), role="c")
        if ez is not None and ez > emax:
            emax, zero_max = ez, True
    else:
        cterm = Term(c_label, _val(cs, 0, out.man_bits), ce, _val(cs, ce, out.man_bits), role="c")
        if ce > emax:
            emax, zero_max = ce, False
    blk.terms.append(cterm)
    stk = 1 if m.sticky else 0
    mode = _ops.MODE_CODES[m.rounding]
    blk.rounding = f"{m.rounding.upper()} to {res.name}"
    if emax == _ops.NEG_BIG:
        blk.fixed_sum = Fraction(0)
        blk.normalised = "0"
        blk.result = 0.0
        return 0.0
    blk.e_max = emax
    blk.zero_exponent_set_max = zero_max
    S = 0
    for t, (_, s1, e1, s2, e2, _) in zip(blk.terms, ops_):
        p = s1 * s2
        if p:
            a_ = int(_ops.align_term(abs(p), F - fp - emax + e1 + e2, m.sticky))
            S += a_ if p > 0 else -a_
            t.aligned = _val(a_ if p > 0 else -a_, emax, F + stk)
            t.lost = t.value - t.aligned
    if cs != 0:
        a_ = int(_ops.align_term(abs(cs), F - out.man_bits + ce - emax, m.sticky))
        S += a_ if cs > 0 else -a_
        cterm.aligned = _val(a_ if cs > 0 else -a_, emax, F + stk)
        cterm.lost = cterm.value - cterm.aligned
    blk.fixed_sum = _val(S, emax, F + stk)
    if m.sticky:
        blk.stages.append("each term that lost bits carries a sticky bit 2^-(F+1) of its sign")
    blk.normalised = _norm(blk.fixed_sum)
    blk.result = float(_ops.round_fixed(np.int64(S), emax - F - stk, res.p, res.emin, res.emax, mode,
                                        m.flush_output_subnormals)) + 0.0    # a zero fused sum is +0
    return blk.result


def _elements(ks) -> str:
    ks = list(ks)
    if len(ks) <= 8:
        return ",".join(map(str, ks))
    return ",".join(map(str, ks[:4])) + ",...," + ",".join(map(str, ks[-2:]))


def tfdpa_block(idx, a, b, d, m, scale_exp=None) -> Block:
    """One T-FDPA (or ST-FDPA, with the scale exponents ``scale_exp`` = (per element of
    a, per element of b), None for a NaN scale) instruction, as
    :func:`workbench.engine.operations.tfdpa.kernels.tfdpa_step`: one fused sum with c early, or - c
    late and/or interleaved groups (Khattak & Mikaitis Section IV-A5, Fig. 5c) -
    the groups' fused sums chained from 0 (c late) or c, then c added late."""
    fin = m.in_fmt
    L = len(a)
    k0 = idx * L
    blk = Block(index=idx, c_in=d, F=m.F)
    ops_ = []
    for k, (x, y) in enumerate(zip(a, b)):
        s1, e1 = _ops.decompose_one(float(x), fin.man_bits, fin.emin, m.flush_subnormals)
        s2, e2 = _ops.decompose_one(float(y), fin.man_bits, fin.emin, m.flush_subnormals)
        s1, e1, s2, e2 = int(s1), int(e1), int(s2), int(e2)
        note = ""
        if scale_exp is not None:
            xa, xb = scale_exp[0][k], scale_exp[1][k]
            if xa is None or xb is None:  # a NaN scale: every product of its block is NaN (Xie Sec. 4.2)
                s1, e1 = _ops.SIG_NAN, _ops.SPECIAL
                note = "NaN scale factor"
            else:
                e1 += xa if e1 < _ops.SPECIAL else 0
                e2 += xb if e2 < _ops.SPECIAL else 0
                note = f"scale exponents {xa} + {xb} included" if s1 and s2 else ""
        ops_.append((f"a{k0 + k}*b{k0 + k}", s1, e1, s2, e2, note))
    late = m.c_position == "late"
    ng = m.interleave
    if ng == 1:
        part = _fused_trace(blk, ops_, 0.0 if late else d, m.F, m,
                            c_label="0 (c is added late)" if late else "c")
        if blk.special:
            blk.special = ""  # the late addition below still runs (Inf/NaN + c)
            blk.stages.append(f"the products hold Inf/NaN: fused sum {part!r}")
    else:
        gF = m.F if m.group_F is None else m.group_F
        part = 0.0 if late else d
        for g in range(ng):
            sel = [jj for jj in range(L) if (jj >> 1) % ng == g]
            sub = Block(index=g, c_in=part, label=f"group {g} (elements {_elements(k0 + jj for jj in sel)}, "
                                                    f"pairs of consecutive elements interleaved)")
            if g == 0:
                lab = "0 (c is added late)" if late else "c"
            else:
                lab = f"group {g - 1} result"
            part = _fused_trace(sub, [ops_[jj] for jj in sel], part, gF, m, c_label=lab)
            blk.groups.append(sub)
        blk.F = gF
        blk.rounding = blk.groups[-1].rounding + f" (group {ng - 1})"
    if late:
        res = m.res_fmt
        r = float(exact_add(part, float(d), res.p, res.emin, res.emax, _ops.MODE_CODES[m.late_rounding],
                            m.flush_output_subnormals))
        if blk.normalised:
            blk.stages.append(f"normalised: {blk.normalised}")
            blk.normalised = ""
        how = f"is rounded ({blk.rounding}) to" if blk.rounding else "is"
        blk.stages.append(f"the products' sum {how} {part!r}; c = {d!r} is added late with its own rounding")
        blk.rounding = f"{m.late_rounding.upper()} to {res.name} of the late addition {part!r} + c"
        blk.result = r
    else:
        blk.result = part
    return blk


__all__ = ["tfdpa_block"]
