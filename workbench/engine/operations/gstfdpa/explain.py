"""GST-FDPA's step of :func:`workbench.engine.explain.explain` (NVFP4/MXFP4 k64, Xie et
al. 2025 Algorithm 9): each group's exact dot product p_g, its scaling by the two
scales' significands and exponent e_g, then the truncated fused sum of the group terms
and c; the groups come from the kernel's
:func:`~workbench.engine.operations.gstfdpa.kernels.gst_group`."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ....numbers import formats as _formats
from ... import ops as _ops
from ...explain import _decomp, _norm, _p2, _val
from ...operands import decompose
from ...trace import Block, Term
from . import kernels as _kernels


def gst_block(idx, a, b, d, m, sca, scb) -> Block:
    """One GST-FDPA (Xie et al. Algorithm 9; NVFP4/MXFP4 k64): exact group dot
    products (the kernel's :func:`~workbench.engine.operations.gstfdpa.kernels.gst_group`), each times the two
    scales' significands at the scales' exponent, then the truncated fused sum of the
    L/G group terms and c, as :func:`~workbench.engine.operations.gstfdpa.kernels.gst_step`."""

    fin, out, res = m.in_fmt, m.out_fmt, m.res_fmt
    sf = _formats.format(m.scale_format)
    r = _kernels.gst_params(m)
    L, G, kb, F = m.L, int(m.G), int(m.k_block), m.F
    fx = int(r[_kernels.P_FX])
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
        X, e, sp, p_, n_, nn, live = _kernels.gst_group(sa, ea, sb, eb, xsa, xea, xsb, xeb, 0, 0, 0, g, r)
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


__all__ = ["gst_block"]
