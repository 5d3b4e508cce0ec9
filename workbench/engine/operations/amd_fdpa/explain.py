"""The step of :func:`workbench.engine.explain.explain` that E-FDPA, TR-FDPA and GTR-FDPA
share (Xie et al. 2025 Algorithms 6, 10 and 11), like their kernels one function with a
kind code: the exact products, then E-FDPA's exact sum, or TR-/GTR-FDPA's group sums,
re-alignment at the larger exponent and cut, each value from the kernels' own
:func:`~workbench.engine.operations.amd_fdpa.kernels.tr_parts` /
:func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_step`."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ... import ops as _ops
from ...explain import _decomp, _norm, _p2, _val
from ...model import Model
from ...trace import Block, Term
from . import kernels as _kernels


def efdpa_block(idx: int, a: np.ndarray, b: np.ndarray, d: float, m: Model) -> Block:
    """One E-FDPA (Xie et al. Algorithm 6): the products and c added exactly, rounded once."""
    return _amd_block(idx, a, b, d, m, _kernels.KIND_E)


def tr_block(idx: int, a: np.ndarray, b: np.ndarray, d: float, m: Model, grouped: bool) -> Block:
    """One TR-FDPA (Xie et al. Algorithm 10), or GTR-FDPA (Algorithm 11) when ``grouped``."""
    return _amd_block(idx, a, b, d, m, _kernels.KIND_GTR if grouped else _kernels.KIND_TR)


def _amd_block(idx, a, b, d, m, code) -> Block:

    fin, out = m.in_fmt, m.out_fmt
    q = _kernels.amd_params(m, code)
    sa = np.empty((1, len(a)), np.int32)
    ea = np.empty_like(sa)
    sb = np.empty_like(sa)
    eb = np.empty_like(sa)
    _ops.decompose(np.asarray([a], float), sa, ea, fin.man_bits, fin.emin, m.flush_subnormals)
    _ops.decompose(np.asarray([b], float), sb, eb, fin.man_bits, fin.emin, m.flush_subnormals)
    fp = 2 * fin.man_bits
    blk = Block(index=idx, c_in=d, F=m.F)
    cs, ce = _decomp(d, out)
    spec, pos, neg, nan = _kernels.scan_specials(sa, ea, sb.T, eb.T, 0, 0, 0, len(a), cs, ce, fp, q[_kernels.P_OVF])
    if spec:
        blk.result = float(_ops.special_result(pos, neg, nan))
        blk.special = "NaN" if nan or (pos and neg) else ("+Inf" if pos else "-Inf")
        return blk
    for k in range(len(a)):
        p = int(sa[0, k]) * int(sb[0, k])
        e = int(ea[0, k] + eb[0, k])
        blk.terms.append(Term(f"a{k}*b{k}", _val(p, 0, fp), e if p else m.zero_exponent, _val(p, e, fp)))
    if code == _kernels.KIND_E:
        limbs = np.zeros(max(1, int(q[_kernels.P_NLIMBS])), np.int64)
        exact = sum((t.value for t in blk.terms), Fraction(0)) + _val(cs, ce, out.man_bits)
        blk.stages.append(f"c = {d!r} and the products are added exactly (no alignment loss): {_p2(exact)}")
        blk.normalised = _norm(exact)
        q[_kernels.P_K] = len(a)
        blk.result = float(_kernels.efdpa_step(np.asarray([a], float), np.asarray([b], float), sa, ea, sb.T, eb.T, 0, 0,
                                           0, float(d), q, limbs))
        blk.rounding = f"{m.rounding.upper()} to {m.res_fmt.name} (once)"
        return blk
    T, emax, has_T, E, Tp, scp, c_used, S, G = _kernels.tr_parts(sa, ea, sb.T, eb.T, 0, 0, 0, cs, ce, q)
    F, F2 = m.F, m.F2
    rd = m.alignment_rounding != "rz"  # "rz": the round-toward-zero twin of Xie Figure 3
    cut = "rounded down (toward -inf)" if rd else "truncated toward zero (RZ twin)"
    R = "RD" if rd else "RZ"
    if has_T:
        blk.e_max = int(emax)
        if code == _kernels.KIND_GTR:
            blk.stages.append("products of even and of odd index form two truncated fused sums, aligned at "
                              f"the larger exponent and {cut} to F bits (Xie Alg. 11)")
        gmax: dict[int, int] = {}
        for k, t in enumerate(blk.terms):  # window of each term: the block's (TR) or its group's (GTR) e_max
            g = k % 2 if code == _kernels.KIND_GTR else 0
            if t.value and t.exponent is not None:
                gmax[g] = max(gmax.get(g, t.exponent), t.exponent)
        for k, t in enumerate(blk.terms):
            if t.value and t.exponent is not None:
                g = k % 2 if code == _kernels.KIND_GTR else 0
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
    S_cut, scale_cut = _kernels.tr_cut(S, E - G, F2, q[_kernels.P_EMINRES], not rd)
    cut_value = _val(int(S_cut), int(scale_cut), 0)
    blk.stages.append(f"{R} to F2 + 1 = {F2 + 1} significant bits (MMA-Sim 2.1.1's floor of the normalised sum): "
                      f"{_p2(cut_value)}")
    blk.normalised = _norm(cut_value)
    blk.rounding = f"{m.rounding.upper()} to {m.res_fmt.name}"
    blk.result = float(_kernels.trfdpa_step(sa, ea, sb.T, eb.T, 0, 0, 0, float(d), q))
    return blk


__all__ = ["efdpa_block", "tr_block"]
