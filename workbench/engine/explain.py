"""``explain(a, b, c, model)``: one dot product, step by step.

A :class:`Trace` of what the modelled unit does to one row of A, one column of B and
one accumulator c, in the words of the papers: the exact unnormalised products
(significand and exponent, Xie et al. 2025 Algorithm 7 lines 2-4), the largest
exponent of the block (noting when a zero operand's fixed exponent set it), every
term aligned at it with the bits it lost (line 10, RZ_F), the exact fixed-point sum
(line 11), its normalisation and the final rounding rho (line 13); one such record
per block of L when K > L, each block's result feeding the next as c (Algorithm 5).
``str(trace)`` prints the walk-through in the style of the one under Table 5 of
Valpey et al. 2025.

Every number is computed with the compiled primitives the kernels use
(:func:`~workbench.engine.ops.decompose_one`, :func:`~workbench.engine.ops.align_term`,
:func:`~workbench.engine.ops.round_fixed`, and for the AMD operations
:func:`~workbench.engine.fdpa_amd.tr_parts` / :func:`~workbench.engine.fdpa_amd.efdpa_step`),
so the trace's value is the kernel's value bit for bit (tested on random inputs).

Supported kinds: ``t-fdpa`` (c early or late, sticky bit, and the interleaved
two-group pattern of fp8 through ``mma.sync`` on H100/H200/B200 - Khattak & Mikaitis
2025 Section IV-A5, Fig. 5c: each group is a fused sum of its own, chained from 0
when c is added late with its own rounding, with ``group_F`` fractional bits),
``e-fdpa``, ``tr-fdpa``, ``gtr-fdpa``, ``fma`` and ``ftz-addmul`` (AMD CDNA2, Xie
Algorithms 1-2: each block of P products shows the input flushes, every FTZ-Mul and
pairwise FTZ-Add with its RNE-FP32 rounding and any flush of a subnormal result to
zero, then the FTZ-Add into the running c; computed with the kernel's own
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_mul` /
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_add`),
``st-fdpa`` (MX formats, Xie Algorithm 8: the E8M0 scale exponents of each block of
``k_block`` elements are shown added to the products' exponents, then the T-FDPA
steps) and ``gst-fdpa`` (NVFP4/MXFP4 k64, Algorithm 9: each group's exact dot product
p_g, its scaling by the two scales' significands and exponent e_g, then the
truncated fused sum of the group terms and c; the groups come from the kernel's
:func:`~workbench.engine.gst.gst_group`).  The scaled kinds take keyword arguments
``scale_a``/``scale_b`` (the scales of the one row and column, as ``workbench.gemm``
takes them); a NaN scale gives NaN.  That is every kind of
:data:`workbench.engine.model.KINDS`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import numpy as np

from .. import formats as _formats
from . import fdpa_amd as _amd
from . import gst as _g
from . import ops as _ops
from .kernels import exact_add, fma_code, fma_step
from .model import Model
from .operands import decompose
from .model import OPERATIONS, operation
from .trace import Block, Term



def explained_kinds() -> tuple[str, ...]:
    """The kinds :func:`explain` traces: every registered operation."""
    return tuple(OPERATIONS)


#: The built-in kinds (Xie et al. Table 1), all traced.
EXPLAINED_KINDS = ("t-fdpa", "e-fdpa", "tr-fdpa", "gtr-fdpa", "fma", "ftz-addmul", "st-fdpa", "gst-fdpa")


def _val(sig: int, exp: int, frac: int) -> Fraction:
    return Fraction(int(sig)) * Fraction(2) ** (int(exp) - int(frac))


def _p2(x: Fraction) -> str:
    """A value as the papers write it: 2^k, or a decimal with its exact dyadic form."""
    if x == 0:
        return "0"
    ax = abs(x)
    n, d = ax.numerator, ax.denominator
    if n & (n - 1) == 0 and d & (d - 1) == 0:
        k = n.bit_length() - d.bit_length()
        return f"{'-' if x < 0 else ''}2^{k}"
    return f"{float(x):.17g}"


@dataclass
class Trace:
    model: Model
    a: tuple
    b: tuple
    c: float
    blocks: list[Block]
    value: float
    scale_a: tuple | None = None   # scaled kinds: the block scale factors of the row of A
    scale_b: tuple | None = None   # ... and of the column of B

    def __str__(self) -> str:
        m = self.model
        lines = [f"{m.kind} ({m.describe()})", f"a = {list(self.a)}", f"b = {list(self.b)}", f"c = {self.c!r}"]
        if self.scale_a is not None:
            lines += [f"scale_a = {list(self.scale_a)}", f"scale_b = {list(self.scale_b or ())}"]
        L = operation(m.kind).block_size(m)
        n = 1
        for blk in self.blocks:
            if blk.label:
                lines.append(f"-- {blk.label}, chain result d = {blk.c_in!r}")
            elif len(self.blocks) > 1:
                lines.append(f"-- block {blk.index} (elements {blk.index * L}..{(blk.index + 1) * L - 1}), "
                             f"c = {blk.c_in!r}")
            if blk.special:
                lines.append(f"{n}. special operands: {blk.special}; result {blk.result!r}")
                n += 1
                continue
            for s in blk.pre:
                lines.append(f"{n}. {s}")
                n += 1
            if blk.groups:
                for g in blk.groups:
                    lines.append(f"-- {g.label}, c = {g.c_in!r}")
                    if g.special:
                        lines.append(f"{n}. special operands: {g.special}; {g.label.split(' (')[0]} result "
                                     f"{g.result!r}")
                        n += 1
                        continue
                    n = _fused_lines(g, n, lines)
                    if g.normalised:
                        lines.append(f"{n}. normalised: {g.normalised}")
                        n += 1
                    lines.append(f"{n}. {g.label.split(' (')[0]} rounded {g.rounding}: {g.result!r}")
                    n += 1
            else:
                n = _fused_lines(blk, n, lines)
            for s in blk.stages:
                lines.append(f"{n}. {s}")
                n += 1
            if blk.normalised:
                lines.append(f"{n}. normalised: {blk.normalised}")
                n += 1
            lines.append(f"{n}. final rounding {blk.rounding}: {blk.result!r}")
            n += 1
        lines.append(f"result d = {self.value!r}")
        return "\n".join(lines)


def _fused_lines(blk: Block, n: int, lines: list[str]) -> int:
    """The exact products, the largest exponent, the aligned terms and their exact sum
    of one fused sum (a block, or one interleaved group of it)."""
    prods = [t for t in blk.terms if t.role == "product"]
    if prods:
        lines.append(f"{n}. a and b are multiplied exactly (products not normalised):")
        for t in prods:
            ex = "zero (no exponent)" if t.exponent is None else f"{_p2(t.significand)} * 2^{t.exponent}"
            note = f" ({t.note})" if t.note else ""
            lines.append(f"     {t.label} = {ex}{note} = {_p2(t.value)}")
        n += 1
    if blk.e_max is not None:
        note = " (set by a zero operand's fixed exponent)" if blk.zero_exponent_set_max else ""
        lines.append(f"{n}. largest exponent of all terms is {blk.e_max}{note}")
        n += 1
        lines.append(f"{n}. each term is shifted to align it at 2^{blk.e_max} and truncated to "
                     f"{blk.F} fractional bits:")
        for t in blk.terms:
            lost = f", lost {_p2(t.lost)}" if t.lost else ", exact"
            lines.append(f"     {t.label}: {_p2(t.value)} -> {_p2(t.aligned)}{lost}")
        n += 1
        lines.append(f"{n}. the aligned terms are added exactly: {_p2(blk.fixed_sum or Fraction(0))} "
                     f"(not normalised)")
        n += 1
    return n


def _norm(x: Fraction) -> str:
    if x == 0:
        return "0"
    ax = abs(x)
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    if Fraction(2) ** e > ax:
        e -= 1
    return f"{'-' if x < 0 else ''}{float(ax / Fraction(2) ** e):.17g} * 2^{e}"


def _special_block(blk: Block, codes) -> Block:
    pos = neg = nan = False
    for code in codes:
        pos, neg, nan = _ops.combine_special(code, pos, neg, nan)
    blk.result = float(_ops.special_result(pos, neg, nan))
    blk.special = "NaN" if nan or (pos and neg) else ("+Inf" if pos else "-Inf")
    return blk


def _decomp(v: float, fmt) -> tuple[int, int]:
    s, e = _ops.decompose_one(float(v), fmt.man_bits, fmt.emin, False)
    return int(s), int(e)


def _fused_trace(blk: Block, ops_, d: float, F: int, m: Model, c_label: str = "c") -> float:
    """One truncated fused sum (Xie et al. Algorithm 7 lines 5-13): the products
    ``ops_`` (label, s1, e1, s2, e2, note: decomposed operands, scale exponents already
    in e1) and the accumulator term ``d`` aligned at their largest exponent, truncated
    to ``F`` fractional bits (plus the sticky bit), added exactly and rounded with
    rho.  Fills ``blk`` and returns the rounded value; mirrors
    :func:`workbench.engine.kernels._fused` and :func:`~workbench.engine.kernels.tfdpa_step`."""
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
                                        m.flush_output_subnormals))
    return blk.result


def _elements(ks) -> str:
    ks = list(ks)
    if len(ks) <= 8:
        return ",".join(map(str, ks))
    return ",".join(map(str, ks[:4])) + ",...," + ",".join(map(str, ks[-2:]))


def tfdpa_block(idx, a, b, d, m, scale_exp=None) -> Block:
    """One T-FDPA (or ST-FDPA, with the scale exponents ``scale_exp`` = (per element of
    a, per element of b), None for a NaN scale) instruction, as
    :func:`workbench.engine.kernels.tfdpa_step`: one fused sum with c early, or - c
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


def fma_block(start: int, a: np.ndarray, b: np.ndarray, d: float, m: Model) -> Block:
    """One IEEE FMA a_k * b_k + d of a chain (Xie et al. Algorithm 4), RNE in the output format."""
    r = float(fma_step(a[0], b[0], d, *fma_code(m.out_fmt)))
    return Block(index=start, c_in=d, rounding=f"IEEE FMA a{start}*b{start} + d, RNE to {m.out_fmt.name}", result=r)


def st_block(idx: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float, m: Model,
             sa: np.ndarray | None, sb: np.ndarray | None) -> Block:
    """One ST-FDPA (Xie et al. Algorithm 8): the scale exponents of the block's
    elements (``start ...`` of K) added to the products', then the T-FDPA steps."""
    pre = Block(index=idx, c_in=d)
    xs = _st_scales(pre, start, K, len(a), cast(int, m.k_block), sa, sb)  # STFDPAParams checked k_block
    blk = tfdpa_block(idx, a, b, d, m, scale_exp=xs)
    blk.pre = pre.pre + blk.pre
    return blk


def _scale_exp(v: float) -> int | None:
    """Exponent of an E8M0 scale factor (a power of two); None for NaN."""
    if not math.isfinite(v):
        return None
    return math.frexp(v)[1] - 1


def _st_scales(blk: Block, k0: int, K: int, L: int, kb: int, sa, sb):
    """ST-FDPA (Xie et al. Algorithm 8 line 4): the per-element scale exponents of a
    block (elements past K, the zero padding, carry none, as in
    :func:`workbench.engine.others.run_scaled`) and the text saying so."""
    xa, xb = [], []
    for j in range(L):
        k = k0 + j
        if k < K:
            xa.append(_scale_exp(sa[k // kb]))
            xb.append(_scale_exp(sb[k // kb]))
        else:
            xa.append(0)
            xb.append(0)
    for q in range(k0 // kb, min(-(-K // kb), (k0 + L) // kb)):
        lo, hi = q * kb, min(K, (q + 1) * kb) - 1
        ea, eb = _scale_exp(sa[q]), _scale_exp(sb[q])
        if ea is None or eb is None:
            blk.pre.append(f"scale factors of elements {lo}..{hi}: alpha = {float(sa[q])!r}, "
                           f"beta = {float(sb[q])!r}: "
                           f"a NaN scale makes every product of its block NaN")
        else:
            blk.pre.append(f"scale factors of elements {lo}..{hi}: alpha = 2^{ea}, beta = 2^{eb} (E8M0, "
                           f"significand 1): their exponents {ea} + {eb} = {ea + eb} are added to each "
                           f"product's exponent (Xie Alg. 8 line 4)")
    return xa, xb


def gst_block(idx, a, b, d, m, sca, scb) -> Block:
    """One GST-FDPA (Xie et al. Algorithm 9; NVFP4/MXFP4 k64): exact group dot
    products (the kernel's :func:`~workbench.engine.gst.gst_group`), each times the two
    scales' significands at the scales' exponent, then the truncated fused sum of the
    L/G group terms and c, as :func:`~workbench.engine.gst.gst_step`."""

    fin, out, res = m.in_fmt, m.out_fmt, m.res_fmt
    sf = _formats.format(m.scale_format)
    r = _g.gst_params(m)
    L, G, kb, F = m.L, int(m.G), int(m.k_block), m.F
    fx = int(r[_g.P_FX])
    fp = 2 * fin.man_bits
    k0 = idx * L
    blk = Block(index=idx, c_in=d, F=F)
    sa, ea = decompose(np.asarray([a], float), fin.man_bits, fin.emin, m.flush_subnormals)
    sb, eb = decompose(np.asarray([b], float), fin.man_bits, fin.emin, m.flush_subnormals)
    xsa, xea = decompose(np.asarray([sca], float), sf.man_bits, sf.emin, False)
    xsb, xeb = decompose(np.asarray([scb], float), sf.man_bits, sf.emin, False)
    nan_scale = [q for q in range(L // kb) if xea[0, q] >= _ops.SPECIAL or xeb[0, q] >= _ops.SPECIAL]
    if nan_scale:  # checked before any operand (gst_parts)
        blk.result = math.nan
        blk.special = (f"NaN scale factor of elements {k0 + nan_scale[0] * kb}..{k0 + (nan_scale[0] + 1) * kb - 1}"
                       f" (scales are checked first): NaN")
        return blk
    pos = neg = nan = spec = False
    ez = m.zero_exponent
    emax = _ops.NEG_BIG
    zero_max = False
    groups = []
    for g in range(L // G):
        X, e, sp, p_, n_, nn, live = _g.gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, 0, 0, 0, g, r)
        X, e = int(X), int(e)
        q = g * G // kb
        lo, hi = k0 + g * G, k0 + (g + 1) * G - 1
        if sp:
            spec = True
            pos, neg, nan = pos or p_, neg or n_, nan or nn
            blk.pre.append(f"group {g} (elements {lo}..{hi}) holds Inf/NaN operands")
            continue
        prods = [(g * G + j, int(sa[0, g * G + j]) * int(sb[0, g * G + j]),
                  int(ea[0, g * G + j] + eb[0, g * G + j])) for j in range(G)]
        pg = sum((_val(p, e2, fp) for _, p, e2 in prods if p), Fraction(0))
        listed = ", ".join(f"a{k0 + k}*b{k0 + k} = {_p2(_val(p, e2, fp))}" for k, p, e2 in prods if p) or "none"
        siga, sigb = _val(int(xsa[0, q]), 0, sf.man_bits), _val(int(xsb[0, q]), 0, sf.man_bits)
        sg = Fraction(X, 2 ** fx)
        blk.pre.append(
            f"group {g} (elements {lo}..{hi}): exact fixed-point dot product p_{g} = {_p2(pg)}\n"
            f"     (non-zero products: {listed})\n"
            f"     scale factors alpha = {float(sca[q])!r}, beta = {float(scb[q])!r} ({sf.name}, elements "
            f"{k0 + q * kb}..{k0 + (q + 1) * kb - 1}): s_{g} = p_{g} * SignedSig(alpha) * SignedSig(beta) = "
            f"{_p2(pg)} * {_p2(siga)} * {_p2(sigb)} = {_p2(sg)}, "
            f"e_{g} = Exp(alpha) + Exp(beta) = {int(xea[0, q])} + {int(xeb[0, q])} = {e}")
        if live:    # a sum that cancels to zero keeps e_g in the maximum (MMA-Sim's gst_fdpa)
            groups.append((g, X, e))
            blk.terms.append(Term(f"group {g}", sg, e, sg * Fraction(2) ** e, role="group"))
            if e > emax:
                emax, zero_max = e, False
        else:
            groups.append((g, 0, e))
            blk.terms.append(Term(f"group {g}", Fraction(0), ez, Fraction(0), role="group"))
            if ez is not None and ez > emax:
                emax, zero_max = ez, True
    cs, ce = _decomp(d, out)
    if ce >= _ops.SPECIAL:
        spec = True
        pos, neg, nan = _ops.combine_special(_ops.special_value(cs), pos, neg, nan)
    if spec:
        blk.pre = [t for t in blk.pre if "Inf/NaN" in t]
        blk.result = float(_ops.special_result(pos, neg, nan))
        blk.special = "NaN" if nan or (pos and neg) else ("+Inf" if pos else "-Inf")
        return blk
    if cs == 0:
        cterm = Term("c", Fraction(0), ez, Fraction(0), role="c")
        if ez is not None and ez > emax:
            emax, zero_max = ez, True
    else:
        cterm = Term("c", _val(cs, 0, out.man_bits), ce, _val(cs, ce, out.man_bits), role="c")
        if ce > emax:
            emax, zero_max = ce, False
    blk.terms.append(cterm)
    blk.rounding = f"{m.rounding.upper()} to {res.name}"
    if emax == _ops.NEG_BIG:
        blk.fixed_sum = Fraction(0)
        blk.result = 0.0
        return blk
    blk.e_max = emax
    blk.zero_exponent_set_max = zero_max
    S = 0
    for (g, X, e), t in zip(groups, blk.terms):
        if X:
            al = int(_ops.align_term(abs(X), F - fx + e - emax, False))
            S += al if X > 0 else -al
            t.aligned = _val(al if X > 0 else -al, emax, F)
            t.lost = t.value - t.aligned
    if cs:
        al = int(_ops.align_term(abs(cs), F - out.man_bits + ce - emax, False))
        S += al if cs > 0 else -al
        cterm.aligned = _val(al if cs > 0 else -al, emax, F)
        cterm.lost = cterm.value - cterm.aligned
    blk.fixed_sum = _val(S, emax, F)
    blk.normalised = _norm(blk.fixed_sum)
    blk.result = float(_ops.round_fixed(np.int64(S), emax - F, res.p, res.emin, res.emax,
                                        _ops.MODE_CODES[m.rounding], m.flush_output_subnormals))
    return blk


def efdpa_block(idx: int, a: np.ndarray, b: np.ndarray, d: float, m: Model) -> Block:
    """One E-FDPA (Xie et al. Algorithm 6): the products and c added exactly, rounded once."""
    return _amd_block(idx, a, b, d, m, _amd.KIND_E)


def tr_block(idx: int, a: np.ndarray, b: np.ndarray, d: float, m: Model, grouped: bool) -> Block:
    """One TR-FDPA (Xie et al. Algorithm 10), or GTR-FDPA (Algorithm 11) when ``grouped``."""
    return _amd_block(idx, a, b, d, m, _amd.KIND_GTR if grouped else _amd.KIND_TR)


def _amd_block(idx, a, b, d, m, code) -> Block:

    fin, out = m.in_fmt, m.out_fmt
    q = _amd.amd_params(m, code)
    sa = np.empty((1, len(a)), np.int32)
    ea = np.empty_like(sa)
    sb = np.empty_like(sa)
    eb = np.empty_like(sa)
    _ops.decompose(np.asarray([a], float), sa, ea, fin.man_bits, fin.emin, m.flush_subnormals)
    _ops.decompose(np.asarray([b], float), sb, eb, fin.man_bits, fin.emin, m.flush_subnormals)
    fp = 2 * fin.man_bits
    blk = Block(index=idx, c_in=d, F=m.F)
    cs, ce = _decomp(d, out)
    spec, pos, neg, nan = _amd.scan_specials(sa, ea, sb.T, eb.T, 0, 0, 0, len(a), cs, ce, fp, q[_amd.P_OVF])
    if spec:
        blk.result = float(_ops.special_result(pos, neg, nan))
        blk.special = "NaN" if nan or (pos and neg) else ("+Inf" if pos else "-Inf")
        return blk
    for k in range(len(a)):
        p = int(sa[0, k]) * int(sb[0, k])
        e = int(ea[0, k] + eb[0, k])
        blk.terms.append(Term(f"a{k}*b{k}", _val(p, 0, fp), e if p else m.zero_exponent, _val(p, e, fp)))
    if code == _amd.KIND_E:
        limbs = np.zeros(max(1, int(q[_amd.P_NLIMBS])), np.int64)
        exact = sum((t.value for t in blk.terms), Fraction(0)) + _val(cs, ce, out.man_bits)
        blk.stages.append(f"c = {d!r} and the products are added exactly (no alignment loss): {_p2(exact)}")
        blk.normalised = _norm(exact)
        q[_amd.P_K] = len(a)
        blk.result = float(_amd.efdpa_step(np.asarray([a], float), np.asarray([b], float), sa, ea, sb.T, eb.T, 0, 0,
                                           0, float(d), q, limbs))
        blk.rounding = f"{m.rounding.upper()} to {m.res_fmt.name} (once)"
        return blk
    T, emax, has_T, E, Tp, scp, c_used, S, G = _amd.tr_parts(sa, ea, sb.T, eb.T, 0, 0, 0, cs, ce, q)
    F, F2 = m.F, m.F2
    rd = m.alignment_rounding != "rz"  # "rz": the round-toward-zero twin of Xie Figure 3
    cut = "rounded down (toward -inf)" if rd else "truncated toward zero (RZ twin)"
    R = "RD" if rd else "RZ"
    if has_T:
        blk.e_max = int(emax)
        if code == _amd.KIND_GTR:
            blk.stages.append("products of even and of odd index form two truncated fused sums, aligned at "
                              f"the larger exponent and {cut} to F bits (Xie Alg. 11)")
        gmax: dict[int, int] = {}
        for k, t in enumerate(blk.terms):  # window of each term: the block's (TR) or its group's (GTR) e_max
            g = k % 2 if code == _amd.KIND_GTR else 0
            if t.value and t.exponent is not None:
                gmax[g] = max(gmax.get(g, t.exponent), t.exponent)
        for k, t in enumerate(blk.terms):
            if t.value and t.exponent is not None:
                g = k % 2 if code == _amd.KIND_GTR else 0
                p = int(t.significand * 2 ** fp)
                al = int(_ops.align_term(abs(p), F - fp + t.exponent - gmax[g], False))
                t.aligned = _val(al if p > 0 else -al, gmax[g], F)
                t.lost = t.value - t.aligned
        blk.fixed_sum = _val(int(T), int(emax), F)
    blk.stages.append(f"E = max(e_max, e_c) = {int(E)}; T' = {R}_(F2+1)(T) = {_p2(_val(int(Tp), int(E), F2 + 1))} "
                      f"(F2 = {F2}; MMA-Sim 2.1.1 keeps one bit more than Alg. 10 line 14), "
                      f"c' = {R}_F(c) = {_p2(_val(int(scp), int(E), F)) if c_used else '0 (dropped)'}")
    total = _val(int(S), int(E), int(G))
    blk.stages.append(f"T' + c' = {_p2(total)}")
    S_cut, scale_cut = _amd.tr_cut(S, E - G, F2, q[_amd.P_EMINRES], not rd)
    cut_value = _val(int(S_cut), int(scale_cut), 0)
    blk.stages.append(f"{R} to F2 + 1 = {F2 + 1} significant bits (MMA-Sim 2.1.1's floor of the normalised sum): "
                      f"{_p2(cut_value)}")
    blk.normalised = _norm(cut_value)
    blk.rounding = f"{m.rounding.upper()} to {m.res_fmt.name}"
    blk.result = float(_amd.trfdpa_step(sa, ea, sb.T, eb.T, 0, 0, 0, float(d), q))
    return blk


def explain(a, b, c: float = 0.0, model: Model | None = None, *, scale_a=None, scale_b=None) -> Trace:
    """Step-by-step trace of d = unit(a, b, c) for a :class:`Model` (Xie et al. 2025
    Algorithms 2-11; walk-through style of Valpey et al. 2025, under Table 5).

    ``a``, ``b``: equal-length sequences of values of ``model.in_format``; ``c`` a
    value of ``model.out_format``.  K is consumed in blocks of L, zero-padded.

    ``scale_a``, ``scale_b``: only for the scaled kinds (``st-fdpa``, ``gst-fdpa``),
    the block scale factors of this row of A and this column of B, as
    ``workbench.gemm`` takes them for a 1 x K by K x 1 product: ceil(K / k_block)
    values each (a sequence, or ``gemm``'s (1, nb) / (nb, 1) arrays), representable
    in ``model.scale_format``; element k is scaled by ``scale_a[k // k_block]`` and
    ``scale_b[k // k_block]``."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a workbench Model/Preset, got {type(model).__name__}")
    op = operation(model.kind)
    a = np.asarray(a, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.size} and {b.size}")
    _formats.check_representable(a, model.in_fmt, "a")
    _formats.check_representable(b, model.in_fmt, "b")
    c = float(_formats.check_representable(np.array([c], float), model.out_fmt, "c")[0])
    scaled = op.scaled
    sa = sb = None
    if scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"model kind {model.kind!r} needs scale_a and scale_b (block scale factors)")
        nb = -(-a.size // model.k_block)
        sa = np.asarray(scale_a, dtype=float).reshape(-1)
        sb = np.asarray(scale_b, dtype=float).reshape(-1)
        if sa.size != nb or sb.size != nb:
            raise ValueError(f"scale_a and scale_b must each hold ceil(K / k_block) = {nb} values "
                             f"(K={a.size}, k_block={model.k_block}); got {sa.size} and {sb.size}")
        sf = cast(str, model.scale_format)  # scaled parameter classes require it
        sa = _formats.check_representable(sa, sf, "scale_a")
        sb = _formats.check_representable(sb, sf, "scale_b")
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"scale_a/scale_b given but model kind {model.kind!r} takes no scale factors")
    L = op.block_size(model)
    K = max(1, a.size)
    pad = (-K) % L
    ap = np.concatenate([a, np.zeros(pad + (K - a.size))])
    bp = np.concatenate([b, np.zeros(pad + (K - b.size))])
    late_c = op.late_c(model)
    d = 0.0 if late_c else c     # a late c waits until the chain is done
    blocks = []
    for i in range(0, ap.size, L):
        blk = op.explain_block(i // L, i, a.size, ap[i:i + L], bp[i:i + L], d, model, sa, sb)
        blocks.append(blk)
        d = blk.result
    if late_c:
        out = model.out_fmt
        r = float(exact_add(d, c, out.p, out.emin, out.emax, _ops.MODE_CODES[model.late_rounding],
                            model.flush_output_subnormals))
        blocks.append(Block(index=ap.size, c_in=d, result=r, label="c added late",
                            rounding=f"d + c, {model.late_rounding.upper()} to {out.name}"))
        d = r
    scales = {"scale_a": tuple(sa.tolist()), "scale_b": tuple(sb.tolist())} if sa is not None and sb is not None else {}
    return Trace(model=model, a=tuple(a.tolist()), b=tuple(b.tolist()), c=c, blocks=blocks, value=d, **scales)


__all__ = ["explain", "Trace", "Block", "Term", "EXPLAINED_KINDS", "explained_kinds", "tfdpa_block", "fma_block",
           "st_block", "gst_block", "efdpa_block", "tr_block"]
