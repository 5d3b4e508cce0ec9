"""Feature probes of MMA-Sim's closed-loop feature probing (CLFP) and Khattak-Mikaitis' GNFT.

Every probe takes a :class:`~workbench.probes.blackbox.BlackBox` and returns plain data
(a dataclass with the conclusion and the evidence).  Constants come from the formats
(:mod:`workbench.probes.vectors`).  The probes and their sources:

* :func:`probe_subnormals` - Fasi et al. 2021, "Support for subnormal numbers";
  Khattak & Mikaitis 2025 Section III-A (generalised form).
* :func:`probe_structure` - Xie et al. 2025 Section 3.1.2: the FPRev matrix
  ``d(i, j) / v`` with p_i = U, p_j = -U and every other product v, matched against
  the summation trees of the elementary operations (block chains of L terms with c
  early, interleaved groups with c late, FTZ-AddMul's pairwise trees, exact blocks).
  This gives the block size NFMA / L (Khattak-Mikaitis Section IV) and interleaving.
* :func:`probe_c_position` - c early or late (Khattak-Mikaitis Table II; Fasi et al.
  found c inside the 5-operand sum, Hickmann et al. outside).
* :func:`probe_precision` - Xie Section 3.1.3 "Summation Precision":
  FusedSum(U, -U, eps), eps halved until it is lost: F fractional bits (neab = F - (p_out - 1)).
* :func:`probe_result_precision` - precision of the fused sum's final rounding (the
  RZ-E8M13 of Ada/Hopper fp8, Xie Table 2), with carries so the window is not the limit.
* :func:`probe_rounding` - Xie Section 3.1.3 "Rounding Mode": remainders 0.25, 0.75 ulp
  on both signs, then ties 0.5 and 1.5 ulp (RNE/RNA/RNZ/RNO...).
* :func:`probe_sticky` - Khattak-Mikaitis' ``stkbitenabled``: terms that fall off the
  window leave a trace only if a sticky bit is kept.
* the zero-operand exponent search lives in :mod:`workbench.probes.inference` (it needs the
  other parameters to build the hypotheses it compares).
* :func:`probe_specials` - Xie Section 4.2 (Inf, NaN, overflow).
* :func:`probe_exact_groups` - Xie Algorithm 9 (GST-FDPA): groups of G products summed
  exactly, seen through pairs of half window bits next to c = 2^E.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .blackbox import BlackBox
from .vectors import Cases, Ranges

__all__ = [
    "Structure", "probe_subnormals", "probe_structure", "probe_c_position", "probe_precision",
    "probe_result_precision", "probe_rounding", "probe_sticky", "probe_specials", "decide_rounding",
    "fprev_prediction", "group_positions", "probe_exact_groups", "ExactGroups",
]


# =================================================================== subnormals
@dataclass
class Subnormals:
    """Fasi et al. 2021 (Section "Support for subnormal numbers"), generalised."""

    inputs: bool            # a subnormal a times 2^k is not flushed
    c_passthrough: bool     # a subnormal c (the smallest, or min_normal / 2) with A = B = 0 comes back unchanged
    outputs_from_products: bool | None  # products can produce an output subnormal (None: unreachable)
    evidence: dict[str, Any] = field(default_factory=dict)


def probe_subnormals(bb: BlackBox, K: int = 4) -> Subnormals:
    fin, fout = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fout)
    K = min(K, bb.max_k or K)
    cs = Cases(K, fin, fout)
    # a = smallest subnormal of the input, b = a power of two lifting the product into
    # the output's normal range when possible (Fasi: a11 = 2^-24, b11 = 2^2)
    a = fin.min_subnormal
    kb = min(fin.emax, max(0, fout.emin - int(math.log2(a)) + 1))
    aa = np.zeros(K)
    bb_ = np.zeros(K)
    aa[0], bb_[0] = a, 2.0 ** kb
    i_in = cs.add_raw(aa, bb_, 0.0)
    # a subnormal c alone: the smallest one, and the largest power of two below the normal
    # range (a window of F bits below the exponent floor drops the smallest, keeps this one)
    i_c = cs.add({}, fout.min_subnormal) if fout.subnormals else None
    i_c_top = cs.add({}, fout.min_normal / 2) if fout.subnormals else None
    # output subnormal from normal inputs: c = min_normal_out, product = -min_normal_out/2
    target = fout.min_normal / 2
    i_out = None
    if r.prod_lo <= math.log2(target) <= r.prod_hi:
        i_out = cs.add({0: target})
    d = cs.run(bb)
    exp_in = a * 2.0 ** kb
    return Subnormals(
        inputs=bool(d[i_in] == exp_in),
        c_passthrough=bool(i_c is None or d[i_c] == fout.min_subnormal or d[i_c_top] == fout.min_normal / 2),
        outputs_from_products=None if i_out is None else bool(d[i_out] == target),
        evidence={"subnormal_input_result": float(d[i_in]), "expected": exp_in,
                  "c_subnormal_result": None if i_c is None else float(d[i_c]),
                  "c_largest_subnormal_power_result": None if i_c_top is None else float(d[i_c_top])},
    )


# =================================================================== structure
@dataclass(frozen=True)
class Structure:
    """A summation tree family (Xie et al. Figure 2).

    ``shape``: ``"chain"`` (blocks of L terms, each fused with the running result:
    T-FDPA with c early; L = 1 is a chain of FMAs), ``"late"`` (blocks of L terms split
    into ``interleave`` groups of pairs, the groups chained, the running result added
    after: Khattak-Mikaitis' fp8 ``mma.sync``), ``"pairwise"`` (FTZ-AddMul: P products
    summed pairwise, then added to the running result; Xie Algorithm 2), ``"exact"``
    (blocks summed without swamping and rounded once: E-FDPA, Xie Algorithm 6; the block's
    rounding to the output still loses v next to a surviving U, so only U and -U in one
    block leave the running sum and the block's v terms intact)."""

    shape: str
    L: int
    interleave: int = 1

    def describe(self) -> str:
        if self.shape == "chain":
            return "chain of FMAs" if self.L == 1 else f"fused blocks of L={self.L} with c early (swamped)"
        if self.shape == "late":
            return f"fused blocks of L={self.L}, {self.interleave} interleaved group(s), c added late"
        if self.shape == "pairwise":
            return f"pairwise sums of P={self.L} products, then added to c"
        return f"exact (non-swamped) blocks of L={self.L}"


def group_positions(L: int, interleave: int) -> list[list[int]]:
    """Positions of each interleaved group inside a block (pairs of consecutive elements,
    Khattak-Mikaitis Fig. 5c: 0,1,4,5,... and 2,3,6,7,...)."""
    if interleave == 1:
        return [list(range(L))]
    return [[k for k in range(L) if (k >> 1) % interleave == g] for g in range(interleave)]


def _fused(terms: list[tuple[int, int]], swamped: bool) -> tuple[int, int]:
    """Swamp algebra: a value is (multiple of U, multiple of v).  A swamped fused sum
    containing any U term loses every v term (Xie Eq. 8); a non-swamped one keeps
    them (Eq. 9)."""
    big = 0
    small = 0
    has_big = False
    for b, v in terms:
        if b:
            has_big = True
            big += b
        small += v
    if has_big and swamped:
        return big, 0
    return big, small


def _simulate(st: Structure, vals: list[tuple[int, int]]) -> tuple[int, int]:
    K = len(vals)
    acc = (0, 0)
    L = st.L
    for k0 in range(0, K, L):
        blk = vals[k0:k0 + L] + [(0, 0)] * max(0, k0 + L - K)
        if st.shape == "chain":
            acc = _fused([acc] + blk, True)
        elif st.shape == "exact":
            # summed without swamping (Eq. 9), then rounded once to the output: a U that
            # survives the block swamps the small terms in that rounding (E-FDPA)
            big, small = _fused([acc] + blk, False)
            acc = (big, 0) if big else (0, small)
        elif st.shape == "late":
            s: tuple[int, int] | None = None
            for pos in group_positions(L, st.interleave):
                terms = [blk[p] for p in pos]
                s = _fused(terms if s is None else [s] + terms, True)
            assert s is not None
            acc = _fused([acc, s], True)
        elif st.shape == "pairwise":
            level = list(blk)
            while len(level) > 1:
                level = [_fused([level[q], level[q + 1]], True) for q in range(0, len(level), 2)]
            acc = _fused([acc, level[0]], True)
        else:  # pragma: no cover - guarded by the constructor callers
            raise ValueError(st.shape)
    return acc


def _predict(st: Structure, K: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    out = np.empty(len(pairs), dtype=np.int64)
    for q, (i, j) in enumerate(pairs):
        vals = [(0, 1)] * K
        vals[i] = (1, 0)
        vals[j] = (-1, 0)
        big, small = _simulate(st, vals)
        out[q] = small if big == 0 else -1
    return out


def fprev_prediction(st: Structure, K: int) -> np.ndarray:
    """Predicted FPRev matrix n[i, j] = d(i, j) / v (i < j; -1 elsewhere) of a structure."""
    n = np.full((K, K), -1, dtype=np.int64)
    iu = np.triu_indices(K, 1)
    n[iu] = _predict(st, K, list(zip(iu[0].tolist(), iu[1].tolist())))
    return n


def _candidates(K: int) -> list[Structure]:
    out = [Structure("chain", L) for L in range(1, K + 1)]
    pw = [1 << s for s in range(0, 8) if (1 << s) <= K]
    out += [Structure("exact", L) for L in pw if L > 1]
    out += [Structure("late", L, g) for L in pw for g in (1, 2, 4) if L % (2 * g if g > 1 else 1) == 0
            and L >= 2 * g]
    out += [Structure("pairwise", P) for P in (2, 4, 8) if P <= K]
    return out


@dataclass
class StructureResult:
    structure: Structure | None
    candidates: list[Structure]
    matrix: np.ndarray           # observed d(i, j) / v, -1 where not a count
    swamp_bits: int              # log2(U / v)
    K: int
    note: str = ""


def _fprev_cases(bb: BlackBox, K: int, allow_sub: bool) -> tuple[np.ndarray, float, int]:
    fin, fout = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fout)
    eU = min(r.prod_hi, r.out_hi - 1)
    # v a product of normal numbers where that leaves U room to swamp any window the
    # model space holds (F <= 56 less a margin): a product of subnormals keeps its
    # leading zeros in the alignment (its exponent is emin), so a narrow window loses
    # it even in a block of v's alone (fp16: 2^-24 * 2^-24 is 20 bits below 2^-28)
    lo = r.prod_lo if not allow_sub or eU - max(r.prod_lo, fout.emin + 1) >= 48 else r.prod_lo_sub
    ev = max(lo, fout.emin + 1)          # v normal in the output (FTZ units flush the rest)
    if eU - ev < 28:
        ev = max(lo, r.out_lo + 1)
    U, v = 2.0 ** eU, 2.0 ** ev
    cs = Cases(K, fin, fout, allow_subnormal=allow_sub)
    idx = {}
    for i in range(K):
        for j in range(i + 1, K):
            prods = {k: v for k in range(K)}
            prods[i] = U
            prods[j] = -U
            idx[(i, j)] = cs.add(prods)
    d = cs.run(bb)
    n = np.full((K, K), -1, dtype=np.int64)
    for (i, j), t in idx.items():
        q = d[t] / v
        if np.isfinite(q) and q == np.round(q) and 0 <= q <= K:   # a count of v's (a directed rounding can leave U's ulp)
            n[i, j] = int(q)
    return n, v, eU - ev


def probe_structure(bb: BlackBox, K: int | None = None, allow_subnormal: bool = True) -> StructureResult:
    """Summation tree by FPRev (Xie et al. Section 3.1.2), matched to the elementary
    operations' trees.  K grows (16, 32, 64) until a block boundary is inside the probe."""
    sizes = [K] if K is not None else [16, 32, 64]
    if bb.max_k is not None:
        sizes = sorted({min(s, bb.max_k) for s in sizes})
    res: StructureResult | None = None
    order = {"chain": 0, "pairwise": 1, "late": 2, "exact": 3}
    for Kp in sizes:
        n, _v, bits = _fprev_cases(bb, Kp, allow_subnormal)
        iu = np.triu_indices(Kp, 1)
        # cheap filter on row 0 and the superdiagonal, then the whole matrix
        matches = _candidates(Kp)
        for sample in ([(0, j) for j in range(1, Kp)], [(i, i + 1) for i in range(1, Kp - 1)]):
            obs = np.array([n[i, j] for i, j in sample])
            matches = [st for st in matches if np.array_equal(_predict(st, Kp, sample), obs)]
        matches = [st for st in matches if np.array_equal(fprev_prediction(st, Kp)[iu], n[iu])]
        matches.sort(key=lambda s: (order[s.shape], s.interleave, s.L))
        note = "" if matches else "no elementary-operation summation tree explains the FPRev matrix"
        res = StructureResult(matches[0] if matches else None, matches, n, bits, Kp, note)
        # a block boundary inside the probe makes L certain; otherwise L >= Kp
        if not matches or matches[0].L < Kp:
            break
    assert res is not None
    return res


# ================================================================== fused terms
def _slots(st: Structure, L: int) -> list[int]:
    """Positions that share one fused sum (the first interleaved group of block 0)."""
    if st.shape == "late":
        return group_positions(L, st.interleave)[0]
    return list(range(L))


def _top(bb: BlackBox) -> int:
    r = Ranges(bb.in_fmt, bb.out_fmt)
    return min(r.prod_hi, r.out_hi - 3)


def _low(bb: BlackBox, allow_sub: bool) -> int:
    r = Ranges(bb.in_fmt, bb.out_fmt)
    return max(r.prod_lo_sub if allow_sub else r.prod_lo, r.out_lo + 1)


@dataclass
class Measure:
    value: int | None          # the measured number (None: beyond what the formats can show)
    bound: int                 # largest value the probe could resolve
    evidence: dict[str, Any] = field(default_factory=dict)


def probe_precision(bb: BlackBox, st: Structure, c_early: bool = True, allow_sub: bool = True) -> Measure:
    """F by FusedSum(U, -U, eps) (Xie Section 3.1.3): eps = 2^-t U is kept iff t <= F."""
    K = min(max(st.L, 4), bb.max_k or 4096)
    slots = _slots(st, st.L)
    eU = _top(bb)
    lo = _low(bb, allow_sub)
    tmax = eU - lo
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    U = 2.0 ** eU
    use_c = len(slots) < 3
    if use_c and not c_early:
        return Measure(None, 0, {"reason": "fewer than 3 terms share a fused sum and c is added late"})
    for t in range(1, tmax + 1):
        eps = 2.0 ** (eU - t)
        if use_c:
            cs.add({slots[0]: U, slots[1]: -U}, c=eps)
        else:
            cs.add({slots[0]: U, slots[1]: -U, slots[2]: eps})
    d = cs.run(bb)
    kept = [t for t in range(1, tmax + 1) if d[t - 1] == 2.0 ** (eU - t)]
    lost = [t for t in range(1, tmax + 1) if t not in kept]
    if not lost:
        return Measure(None, tmax, {"kept_up_to": tmax})
    F = lost[0] - 1
    return Measure(F, tmax, {"first_lost_t": lost[0], "kept_after_loss": [t for t in kept if t > F]})


def _base_layout(st: Structure, L: int, c_early: bool) -> tuple[list[int], int | None, str]:
    """Where to put 4 (or 2) equal base products and the remainder term.

    Returns (base positions, remainder position or None for c, description)."""
    slots = _slots(st, L)
    for m in (4, 2, 1):
        if len(slots) >= m + 1:
            return slots[:m], slots[m], f"{m} products + remainder product"
        if len(slots) >= m and c_early:
            return slots[:m], None, f"{m} products + remainder in c"
    raise ValueError("no layout for the rounding probe")


def probe_result_precision(bb: BlackBox, st: Structure, F: int, c_early: bool = True,
                           allow_sub: bool = True) -> Measure:
    """Precision p_res of the fused sum's final rounding: m products 2^e (sum 2^(e+log2 m),
    a carry out of the window's top) plus 2^(e-t) for t = 0..F; the sum is returned
    exactly iff t <= p_res - 1 - log2 m."""
    base, rem, _ = _base_layout(st, st.L, c_early)
    m = len(base)
    lg = int(math.log2(m))
    e = _top(bb) - lg - 1
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    ts = [t for t in range(0, F + 1) if e - t >= _low(bb, allow_sub)]
    for t in ts:
        prods = {p: 2.0 ** e for p in base}
        eps = 2.0 ** (e - t)
        if rem is None:
            cs.add(prods, c=eps)
        else:
            prods[rem] = eps
            cs.add(prods)
    d = cs.run(bb)
    exact = [t for q, t in enumerate(ts) if d[q] == m * 2.0 ** e + 2.0 ** (e - t)]
    if not ts:
        return Measure(None, 0, {})
    missing = [t for t in ts if t not in exact]
    if not missing:
        return Measure(None, max(ts) + 1 + lg, {"exact_up_to": max(ts)})
    return Measure(missing[0] - 1 + 1 + lg, max(ts) + 1 + lg, {"first_inexact_t": missing[0], "carry_bits": lg})


RoundingTable = dict[str, int]


def decide_rounding(table: RoundingTable) -> str:
    """Rounding mode from Xie et al.'s tables: keys ``'+0.25', '+0.75', '-0.25', '-0.75'``
    (ulps rounded away from the base, in magnitude) and ties ``'+0.5', '+1.5', '-0.5',
    '-1.5'``.  Returns rz, rd, ru, ra, rne, rna, rnz, rno, rnu, rnd or ``"unknown"``."""
    up = (table["+0.25"], table["+0.75"])
    dn = (table["-0.25"], table["-0.75"])
    if up == (0, 0) and dn == (0, 0):
        return "rz"
    if up == (0, 0) and dn == (1, 1):
        return "rd"
    if up == (1, 1) and dn == (0, 0):
        return "ru"
    if up == (1, 1) and dn == (1, 1):
        return "ra"
    if up == (0, 1) and dn == (0, 1):
        # round to nearest: tie rule from 0.5 and 1.5 ulp (base has an even last bit)
        ties = (table["+0.5"], table["+1.5"], table["-0.5"], table["-1.5"])
        rules = {(0, 2, 0, 2): "rne", (1, 2, 1, 2): "rna", (0, 1, 0, 1): "rnz", (1, 1, 1, 1): "rno",
                 (1, 2, 0, 1): "rnu", (0, 1, 1, 2): "rnd"}
        return rules.get(ties, "unknown")
    return "unknown"


@dataclass
class Rounding:
    mode: str
    table: RoundingTable
    layout: str
    resolution_ok: bool


def probe_rounding(bb: BlackBox, st: Structure, F: int, p_res: int, c_early: bool = True,
                   allow_sub: bool = True) -> Rounding:
    """Final rounding of the fused sum (Xie Section 3.1.3, Fasi et al. "Rounding modes").

    Base: m equal products 2^e summing to S = 2^(e + log2 m) - the largest exponent
    among the terms stays e, so remainders of a quarter ulp of S fit in the F-bit
    window as long as F >= p_res - 1 - log2 m + 2 (Fasi et al.'s carry trick, which
    also makes the test independent of neab as Khattak-Mikaitis ask)."""
    base, rem, layout = _base_layout(st, st.L, c_early)
    m = len(base)
    lg = int(math.log2(m))
    e = _top(bb) - lg - 1
    q_exp = e + lg - (p_res - 1) - 2         # a quarter ulp of S
    ok = q_exp >= e - F and q_exp >= _low(bb, allow_sub)
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    keys = [("+", 1), ("+", 3), ("+", 2), ("+", 6), ("-", 1), ("-", 3), ("-", 2), ("-", 6)]
    S = m * 2.0 ** e
    ulp = 2.0 ** (q_exp + 2)
    for sgn, x in keys:
        s = 1.0 if sgn == "+" else -1.0
        prods = {p: s * 2.0 ** e for p in base}
        r = s * x * 2.0 ** q_exp
        if rem is None:
            cs.add(prods, c=r)
        else:
            prods[rem] = r
            cs.add(prods)
    d = cs.run(bb)
    table: RoundingTable = {}
    for q, (sgn, x) in enumerate(keys):
        k = (abs(d[q]) - S) / ulp
        table[f"{sgn}{x / 4:g}"] = int(k) if k == int(k) else -99
    mode = decide_rounding(table) if ok else "unknown"
    return Rounding(mode, table, layout, ok)


def probe_sticky(bb: BlackBox, st: Structure, F: int, c_early: bool = True, allow_sub: bool = True) -> bool | None:
    """Sticky bit (Khattak-Mikaitis ``stkbitenabled``): U, -U and small terms just below
    the window.  Without a sticky bit they vanish (d = 0); with one, each leaves
    2^(e - F - 1)."""
    slots = _slots(st, st.L)
    if len(slots) < 2:
        return None
    eU = _top(bb)
    tiny = 2.0 ** (eU - F - 2)
    if eU - F - 2 < _low(bb, allow_sub):
        return None
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    if len(slots) >= 3:
        prods = {slots[0]: 2.0 ** eU, slots[1]: -(2.0 ** eU)}
        for p in slots[2:6]:
            prods[p] = tiny
        cs.add(prods)
    elif c_early:
        cs.add({slots[0]: 2.0 ** eU, slots[1]: -(2.0 ** eU)}, c=tiny)
    else:
        return None
    d = cs.run(bb)
    return bool(d[0] != 0.0)


@dataclass
class CPosition:
    position: str                     # "early" or "late"
    late_rounding: str | None = None
    table: RoundingTable | None = None


def probe_c_position(bb: BlackBox, st: Structure, allow_sub: bool = True, *, fma_chain: bool = False) -> CPosition:
    """c early or late (Khattak-Mikaitis Table II): U and -U first and last in a fused sum, c = eps far below
    U's window (for an FMA chain: in its first two steps).  In the fused sum (early) eps is lost, d = 0; added afterwards (late),
    d = eps.  When late, the late addition's rounding is probed with s = 2^e from the
    products and c = x/4 ulp (Xie's rounding table)."""
    # fma_chain (a chain of single FMAs in one format): two consecutive steps play the role
    # of the fused sum; c enters first (early, the running sum) or after the chain (late, A @ B + C)
    slots = [0, 1] if fma_chain else _slots(st, st.L)
    if len(slots) < 2:
        return CPosition("early")   # one product per fused step: c is the running sum
    eU = _top(bb)
    r = Ranges(bb.in_fmt, bb.out_fmt)
    ceps = max(r.out_lo + 1, eU - 60)
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    eps = 2.0 ** ceps
    # U and -U at the two ends of the fused sum: in different groups of a GST-FDPA, whose
    # group sums are exact (U - U in one group is a zero term, and eps would survive as if late)
    cs.add({slots[0]: 2.0 ** eU, slots[-1]: -(2.0 ** eU)}, c=eps)
    # late-rounding table: s = 2^e (a product), c = +-x * quarter ulp of s in the output
    fo = bb.out_fmt
    e = min(eU, fo.emax - 2)
    q = e - (fo.p - 1) - 2
    keys = [("+", 1), ("+", 3), ("+", 2), ("+", 6), ("-", 1), ("-", 3), ("-", 2), ("-", 6)]
    for sgn, x in keys:
        s = 1.0 if sgn == "+" else -1.0
        cs.add({slots[0]: s * 2.0 ** e}, c=s * x * 2.0 ** q)
    d = cs.run(bb)
    if d[0] != eps:   # 0, or a sticky trace of eps: either way eps met U in one fused sum
        return CPosition("early")
    table: RoundingTable = {}
    for n, (sgn, x) in enumerate(keys):
        k = (abs(d[n + 1]) - 2.0 ** e) / 2.0 ** (q + 2)
        table[f"{sgn}{x / 4:g}"] = int(k) if k == int(k) else -99
    return CPosition("late", decide_rounding(table), table)


# ==================================================================== specials
def probe_specials(bb: BlackBox) -> dict[str, str]:
    """Special values (Xie et al. Section 4.2): what comes out for Inf and NaN inputs,
    Inf - Inf, 0 * Inf, and a finite sum that overflows."""
    fin, fout = bb.in_fmt, bb.out_fmt
    K = min(4, bb.max_k or 4)
    cases: list[tuple[str, list[float], list[float], float]] = []
    if fin.has_inf:
        cases += [("inf*1", [math.inf], [1.0], 0.0), ("inf*0", [math.inf], [0.0], 0.0),
                  ("inf-inf", [math.inf, math.inf], [1.0, -1.0], 0.0)]
    if fin.has_nan:
        cases.append(("nan*1", [math.nan], [1.0], 0.0))
    if fout.has_inf:
        cases.append(("c=inf", [1.0], [1.0], math.inf))
        cases.append(("c=inf,p=-inf", [math.inf] if fin.has_inf else [0.0], [-1.0], math.inf))
    big = fin.max
    cases.append(("overflow", [big] * K, [big] * K, float(fout.max)))
    a = np.zeros((len(cases), K))
    b = np.zeros((len(cases), K))
    c = np.zeros(len(cases))
    for n, (_, av, bv, cv) in enumerate(cases):
        a[n, :len(av)] = av
        b[n, :len(bv)] = bv
        c[n] = cv
    d = bb.dots(a, b, c)
    return {name: ("NaN" if np.isnan(x) else repr(float(x))) for (name, *_), x in zip(cases, d)}



# ============================================== narrow formats: c carries the range
def narrow(bb: BlackBox, swamp_bits: int) -> bool:
    """True when products span too few binades for FPRev and FusedSum(U, -U, eps)
    (fp6/fp4 inputs): the probes below then let c (an output-format value) carry the
    large magnitude, as Khattak-Mikaitis' generalised vectors do for narrow formats."""
    return swamp_bits < bb.out_fmt.p + 8


def _c_exponent(bb: BlackBox, lowest_t: int, allow_sub: bool) -> int:
    """E such that products 2^(E - t) exist for t >= lowest_t (as far as the range goes)."""
    r = Ranges(bb.in_fmt, bb.out_fmt)
    return min(bb.out_fmt.emax - 2, r.prod_hi + lowest_t)


def probe_blocks_by_c(bb: BlackBox, allow_sub: bool = True) -> StructureResult:
    """Block size from rounding at block boundaries: c = 2^E, two products of half an
    ulp of c at positions 0 and j.  In one fused sum they add to one ulp exactly; in
    different blocks each meets a rounding of its own (Fasi et al.'s 1 + 2^-24 + 2^-24
    test, with the constants derived from the formats)."""
    fo = bb.out_fmt
    E = _c_exponent(bb, fo.p, allow_sub)
    h = 2.0 ** (E - fo.p)
    res: StructureResult | None = None
    for K in ([16, 32, 64] if bb.max_k is None else [bb.max_k]):
        cs = Cases(K, bb.in_fmt, fo, allow_subnormal=allow_sub)
        for j in range(1, K):
            cs.add({0: h, j: h}, c=2.0 ** E)
        d = cs.run(bb)
        same = d == 2.0 ** E + 2 * h
        n = np.full((K, K), -1, dtype=np.int64)
        n[0, 1:] = same
        if not same[0]:
            return StructureResult(None, [], n, 0, K, "two half-ulp terms are not fused even at positions 0, 1")
        L = int(np.argmin(same)) + 1 if not same.all() else K
        st = Structure("chain", L)
        res = StructureResult(st, [st], n, 0, K, "block size from rounding at block boundaries (narrow format)")
        if not same.all():
            break
    assert res is not None
    return res


def probe_precision_c(bb: BlackBox, allow_sub: bool = True) -> Measure:
    """F with c = 2^E carrying the range: eps = 2^(E - t) is kept iff t <= F, seen as a
    change of c - eps (RZ/RD), c + h + eps against the tie c + h (round to nearest) or
    c + eps (RU) against the eps = 0 baseline."""
    fo = bb.out_fmt
    r = Ranges(bb.in_fmt, fo)
    lo = r.prod_lo_sub if allow_sub else r.prod_lo
    E = _c_exponent(bb, fo.p, allow_sub)
    h = 2.0 ** (E - fo.p)
    ts = [t for t in range(fo.p, E - lo + 1)]
    K = 4 if bb.max_k is None else min(4, bb.max_k)
    cs = Cases(K, bb.in_fmt, fo, allow_subnormal=allow_sub)
    C = 2.0 ** E
    cs.add({}, c=C)
    cs.add({0: h}, c=C)
    for t in ts:
        eps = 2.0 ** (E - t)
        cs.add({1: -eps}, c=C)
        cs.add({0: h, 1: eps}, c=C)
        cs.add({1: eps}, c=C)
    d = cs.run(bb)
    kept = []
    for q, t in enumerate(ts):
        a, b, c_ = d[2 + 3 * q: 5 + 3 * q]
        kept.append(a != d[0] or b != d[1] or c_ != d[0])
    if all(kept):
        return Measure(None, ts[-1] if ts else 0, {"kept_up_to": ts[-1] if ts else None})
    first_lost = ts[kept.index(False)]
    return Measure(first_lost - 1, ts[-1], {"first_lost_t": first_lost, "method": "c carries the range"})


def probe_rounding_c(bb: BlackBox, F: int, allow_sub: bool = True) -> Rounding:
    """Xie's rounding table with the base in c: c = +-2^E, remainders x/4 ulp as products."""
    fo = bb.out_fmt
    r = Ranges(bb.in_fmt, fo)
    q_exp = min(r.prod_hi - 3, fo.emax - 2 - fo.p)
    E = q_exp + fo.p + 1
    ok = q_exp >= E - F and q_exp >= (r.prod_lo_sub if allow_sub else r.prod_lo) and E <= fo.emax - 1
    K = 4 if bb.max_k is None else min(4, bb.max_k)
    cs = Cases(K, bb.in_fmt, fo, allow_subnormal=allow_sub)
    keys = [("+", 1), ("+", 3), ("+", 2), ("+", 6), ("-", 1), ("-", 3), ("-", 2), ("-", 6)]
    for sgn, x in keys:
        s = 1.0 if sgn == "+" else -1.0
        cs.add({0: s * x * 2.0 ** q_exp}, c=s * 2.0 ** E)
    d = cs.run(bb)
    table: RoundingTable = {}
    for q, (sgn, x) in enumerate(keys):
        k = (abs(d[q]) - 2.0 ** E) / 2.0 ** (q_exp + 2)
        table[f"{sgn}{x / 4:g}"] = int(k) if k == int(k) else -99
    return Rounding(decide_rounding(table) if ok else "unknown", table, "base in c, remainder product", ok)


# ============================================ AMD: exactness, directed alignment, groups
def probe_exact(bb: BlackBox, st: Structure, allow_sub: bool = True) -> Measure:
    """E-FDPA against T-FDPA (Xie Algorithm 6 vs 7): FusedSum(U, -U, eps) with eps as far
    below U as the formats reach - c down to the output's smallest value, products down
    to the smallest product.  An exact fused sum returns every eps; a window of F bits
    loses those more than F binades below U.  ``value`` is None when every eps came back
    (exact), else the largest distance t (binades below U) that was still kept."""
    slots = _slots(st, st.L)
    if len(slots) < 2:
        return Measure(0, 0, {"reason": "one product per fused sum"})
    r = Ranges(bb.in_fmt, bb.out_fmt)
    eU = _top(bb)
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    U = 2.0 ** eU
    lo_c = r.out_lo
    # a product eps below the output's smallest value cannot come back whatever the sum
    # (the final rounding underflows it): probe down to what the output holds
    lo_p = max(r.prod_lo_sub if allow_sub else r.prod_lo, lo_c)
    tries: list[tuple[int, str, float]] = []
    for ec in sorted({lo_c, lo_c + 1, max(lo_c, eU - 120), max(lo_c, eU - 60)}):
        for s in (1.0, -1.0):
            tries.append((eU - ec, "c", s * 2.0 ** ec))
            cs.add({slots[0]: U, slots[1]: -U}, c=s * 2.0 ** ec)
    if len(slots) >= 3:
        for ep in sorted({lo_p, lo_p + 1, max(lo_p, eU - 60)}):
            for s in (1.0, -1.0):
                tries.append((eU - ep, "product", s * 2.0 ** ep))
                cs.add({slots[0]: U, slots[1]: -U, slots[2]: s * 2.0 ** ep})
    d = cs.run(bb)
    kept = [t for (t, _, eps), x in zip(tries, d) if x == eps]
    lost = [(t, where) for (t, where, eps), x in zip(tries, d) if x != eps]
    bound = max(t for t, _, _ in tries)
    if not lost:
        return Measure(None, bound, {"kept_down_to": f"2^{eU - bound} next to U = 2^{eU}"})
    return Measure(max([t for t in kept if t < min(t for t, _ in lost)], default=0), bound,
                   {"lost": lost[:4]})


@dataclass
class Alignment:
    """How terms below the window are dropped (Xie Section 6.2.4: RD inside CDNA3's sums).

    ``products``/``c``: ``"rz"`` (truncation toward zero, symmetric), ``"rd"``
    (round down: d(-a, b, -c) = -d(a, b, c) - ulp), ``"ru"``, ``"symmetric"`` (kept or
    a sticky trace, sign-symmetric) or ``"asymmetric"``.  ``c_dropped_from``: the
    first distance t (binades below the window's top) at which a negative c is dropped
    rather than rounded down (GTR-FDPA's "special truncation", Xie Algorithm 11)."""

    products: str
    c: str
    c_dropped_from: int | None
    c_kept_to: int | None
    table: dict[str, list[float]] = field(default_factory=dict)


def _sign_mode(pos: list[float], neg: list[float], ulp: float) -> str:
    if all(p == 0 for p in pos) and all(n == 0 for n in neg):
        return "rz"
    if all(n == -p for p, n in zip(pos, neg)):
        return "symmetric"
    if all(p == 0 for p in pos) and all(n in (-ulp, 0.0) for n in neg):
        return "rd"
    if all(n == 0 for n in neg) and all(p in (ulp, 0.0) for p in pos):
        return "ru"
    return "asymmetric"


def probe_alignment(bb: BlackBox, st: Structure, F: int, allow_sub: bool = True) -> Alignment | None:
    """Sign asymmetry of the alignment: FusedSum(U, -U, +-eps) with eps = 2^(eU - t),
    t = F + 1 .. F + 4 (below the F-bit window), eps as a product and as c.  Truncation
    (T-FDPA's RZ_F) gives d(-a, b, -c) = -d(a, b, c) = 0; TR-FDPA rounds c down
    (RD_F, Xie Algorithm 10 line 15), so -eps comes back as -2^(eU - F)."""
    slots = _slots(st, st.L)
    if len(slots) < 2:
        return None
    eU = _top(bb)
    lo = _low(bb, allow_sub)
    r = Ranges(bb.in_fmt, bb.out_fmt)
    ts = [t for t in range(F - 1, F + 5) if eU - t >= lo and eU - t >= r.out_lo]
    if not ts:
        return None
    K = min(max(st.L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    U = 2.0 ** eU
    rows: dict[tuple[str, int, float], int] = {}
    for t in ts:
        for s in (1.0, -1.0):
            eps = s * 2.0 ** (eU - t)
            rows[("c", t, s)] = cs.add({slots[0]: U, slots[1]: -U}, c=eps)
            if len(slots) >= 3:
                rows[("p", t, s)] = cs.add({slots[0]: U, slots[1]: -U, slots[2]: eps})
    d = cs.run(bb)
    ulp = 2.0 ** (eU - F)
    below = [t for t in ts if t > F]
    table: dict[str, list[float]] = {}

    def mode(where: str) -> str:
        if (where, ts[0], 1.0) not in rows or not below:   # nothing below the window fits the formats
            return "unprobed"
        pos = [float(d[rows[(where, t, 1.0)]]) for t in below]
        neg = [float(d[rows[(where, t, -1.0)]]) for t in below]
        table[f"{where} +eps (t={below[0]}..)"] = pos
        table[f"{where} -eps (t={below[0]}..)"] = neg
        return _sign_mode(pos, neg, ulp)

    pm, cm = mode("p"), mode("c")
    dropped = None
    if cm == "rd":
        zero = [t for t in below if d[rows[("c", t, -1.0)]] == 0]
        dropped = zero[0] if zero else None
    kept = [t for t in ts if d[rows[("c", t, 1.0)]] == 2.0 ** (eU - t)]
    return Alignment(pm, cm, dropped, max(kept) if kept else None, table)


def _group_candidates(L: int) -> list[tuple[str, list[int]]]:
    out = [("one group", [0] * L)]
    for g in (2, 4, 8):
        if 2 * g <= L:
            out.append((f"{g} groups by index mod {g}", [k % g for k in range(L)]))
            if L % (2 * g) == 0:
                out.append((f"{g} groups of interleaved pairs", [(k >> 1) % g for k in range(L)]))
    return out


@dataclass
class Groups:
    description: str | None
    labels: list[int] | None
    mismatches: int = 0


def probe_groups(bb: BlackBox, st: Structure, F: int, allow_sub: bool = True) -> Groups:
    """Groups truncated separately inside one block (Xie Algorithm 11: GTR-FDPA's even and
    odd products): U at 0, -U at i, and two halves of the window's last bit
    h = 2^(eU - F - 1) at k1, k2.  Truncated one by one next to U they vanish; if k1
    and k2 form a group of their own (its own maximum exponent, exact sum 2h) the sum
    is one window bit and survives the groups' alignment.  Matched against groupings
    by index mod g and by interleaved pairs."""
    L = st.L
    if st.shape != "chain" or L < 4:
        return Groups("one group", [0] * L)
    eU = _top(bb)
    h = 2.0 ** (eU - F - 1)
    if eU - F - 1 < _low(bb, allow_sub):
        return Groups(None, None)
    n = min(L, 16)
    K = min(max(L, 4), bb.max_k or 4096)
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    keys = []
    for i in range(1, min(n, 9)):
        for k1 in range(1, n):
            for k2 in range(k1 + 1, n):
                if i in (k1, k2):
                    continue
                keys.append((i, k1, k2))
                cs.add({0: 2.0 ** eU, i: -(2.0 ** eU), k1: h, k2: h})
    d = cs.run(bb)
    obs = d != 0
    best: Groups | None = None
    for desc, lab in _group_candidates(L):
        pred = np.array([lab[k1] == lab[k2] and lab[k1] not in (lab[0], lab[i]) for i, k1, k2 in keys])
        miss = int((pred != obs).sum())
        if miss == 0:
            return Groups(desc, lab)
        if best is None or miss < best.mismatches:
            best = Groups(None, lab, miss)
    assert best is not None
    return best


def probe_second_precision(bb: BlackBox, F: int, allow_sub: bool = True) -> Measure:
    """F2 of TR-/GTR-FDPA (Xie Algorithm 10 line 14): the products' sum T is aligned to
    the exponent E of a larger c and rounded down to F2 fractional bits.  With
    c = 2^E and T far below c, T's low bits only show through the final rounding:

    * ties (round to nearest): T = h + 2^(E - t) with h half an ulp of c; the result
      leaves the tie iff 2^(E - t) survived, i.e. t <= F2;
    * directed (RZ/RU): c = -2^E, T = 2^(E - t) moves the result off c iff it survived.

    The family whose first case differs from its baseline (t small enough to be kept)
    is used; F2 = last t kept."""
    fin, fo = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fo)
    lo = _low(bb, allow_sub)
    p = fo.p
    Ec = min(fo.emax - 1, r.prod_hi + p)
    h = 2.0 ** (Ec - p)
    K = min(4, bb.max_k or 4)
    cs = Cases(K, fin, fo, allow_subnormal=allow_sub)
    C = 2.0 ** Ec
    base_a = cs.add({0: h}, c=C)
    base_b = cs.add({}, c=-C)
    ta = [t for t in range(p + 1, p + F + 1) if Ec - t >= lo]
    tb = [t for t in range(p + 1, Ec - lo + 1)]
    ia = [cs.add({0: h, 1: 2.0 ** (Ec - t)}, c=C) for t in ta]
    ib = [cs.add({0: 2.0 ** (Ec - t)}, c=-C) for t in tb]
    d = cs.run(bb)
    for name, ts, idx, base in (("ties", ta, ia, base_a), ("directed", tb, ib, base_b)):
        if not ts:
            continue
        kept = [d[q] != d[base] for q in idx]
        if not kept[0]:
            continue
        if all(kept):
            return Measure(None, ts[-1], {"family": name, "kept_up_to": ts[-1]})
        first = ts[kept.index(False)]
        return Measure(first - 1, ts[-1], {"family": name, "first_lost_t": first,
                                           "kept_after_loss": [t for t, k in zip(ts, kept) if k and t > first]})
    return Measure(None, 0, {"reason": "neither the tie nor the directed family sees T next to a larger c"})


# ============================================ GST-FDPA: products summed exactly in groups
@dataclass
class ExactGroups:
    """Xie Algorithm 9 (GST-FDPA): groups of G consecutive products summed exactly, the
    group sums then truncated to F fractional bits in a fused sum with c.

    ``F``: fractional bits kept below c's exponent by a lone product (the fused sum's
    window when c carries the largest exponent; None when every distance tried was kept
    or the final rounding hides the bits); ``G``: size of the groups of consecutive
    products whose sub-window parts add up before the truncation (None: no such
    grouping - products truncated one by one, or not in consecutive groups);
    ``labels``: group of each position of block 0; ``group_exact_to``: a group with U,
    -U and eps = 2^-t U returned eps for every t up to this (the formats' range);
    ``group_lost_from``: the first t at which it did not (None: exact as far as seen)."""

    F: int | None
    G: int | None
    labels: list[int] | None
    group_exact_to: int = 0
    group_lost_from: int | None = None
    families: tuple[str, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)


def _tie_split(hpos: int) -> int:
    """The most halvings of the tie family's half ulp: 2^m equal products take positions
    hpos down to hpos - 2^m + 1, at most half of those up to hpos (the rest hold the
    probes' own products)."""
    return max((hpos + 1) // 2, 1).bit_length() - 1


def _tie_products(r: Ranges, eh: int, lo: int, split: int) -> int | None:
    """The least m <= ``split`` such that 2^m equal products 2^(eh - m) make the half ulp
    2^eh (one product when the input format reaches it; narrow formats such as fp4,
    whose power-of-two products span six binades, need 2^(t - 30) of them to put the
    half ulp of an fp32 c next to a window bit t binades below c).  None when none does."""
    for m in range(split + 1):
        if lo <= eh - m <= r.prod_hi:
            return m
    return None


def _c_families(bb: BlackBox, E: int, K: int, hpos: int, allow_sub: bool) -> dict[str, tuple[float, dict[int, float]]]:
    """Ways to see a small positive delta next to c = 2^E through the final rounding:
    ``minus`` c = 2^E, products -delta (RZ/RD leave 2^E), ``plus`` +delta (RU), ``tie``
    c = 2^E, h = half an ulp of c made of 2^m equal products at positions hpos, hpos - 1,
    ... (:func:`_tie_positions`) and +delta (round to nearest leaves the tie).  Returns
    family -> (c, extra products of the baseline); the sign of delta is applied by the
    caller (-1 for ``minus``)."""
    fin, fo = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fo)
    lo = r.prod_lo_sub if allow_sub else r.prod_lo
    fam: dict[str, tuple[float, dict[int, float]]] = {"minus": (2.0 ** E, {}), "plus": (2.0 ** E, {})}
    eh = E - fo.p
    m = _tie_products(r, eh, lo, _tie_split(hpos))
    if m is not None and hpos < K:
        fam["tie"] = (2.0 ** E, {hpos - j: 2.0 ** (eh - m) for j in range(2 ** m)})
    return fam


def _tie_positions(bb: BlackBox, E: int, K: int, hpos: int, allow_sub: bool) -> int:
    """How many positions (hpos and below) the tie family of :func:`_c_families` takes at
    c = 2^E (0 when there is none)."""
    fam = _c_families(bb, E, K, hpos, allow_sub)
    return len(fam["tie"][1]) if "tie" in fam else 0


def _c_exponent_for(bb: BlackBox, t: int, allow_sub: bool, room: int = 0, hpos: int = 0) -> int | None:
    """E >= 0 (above a unit scale's exponent) for c = 2^E with products 2^(E - t) up to
    2^(E - t + room),
    preferring one where half an ulp of c, 2^(E - p_out), is made of products at hpos
    and below too (the tie family of :func:`_c_families`, with as few as the ranges
    allow).  None when no such E fits the output format."""
    fo = bb.out_fmt
    r = Ranges(bb.in_fmt, fo)
    lo = r.prod_lo_sub if allow_sub else r.prod_lo
    hi = min(fo.emax - 2, r.prod_hi + t - room)     # the products 2^(E - t) .. 2^(E - t + room) exist
    low = max(0, lo + t)
    if hi < low:
        return None
    for m in range(_tie_split(hpos) + 1):     # the fewest products that make the half ulp
        tie = min(hi, r.prod_hi + m + fo.p)
        if tie >= max(low, lo + fo.p):
            return tie
    return hi


def _kept_next_to_c(bb: BlackBox, K: int, allow_sub: bool,
                    specs: list[tuple[int, dict[int, float]]], hpos: int) -> list[bool]:
    """For each (E, {position: delta > 0}) whether the deltas survived next to c = 2^E:
    some family's output differs from its delta-free baseline.  Sound for any final
    rounding (a delta truncated away leaves the baseline); complete for RZ/RD/RU, and
    for round-to-nearest when half an ulp of c is a product."""
    cs = Cases(K, bb.in_fmt, bb.out_fmt, allow_subnormal=allow_sub)
    rows: list[list[tuple[int, int]]] = []
    bases: dict[tuple[int, str], int] = {}
    for E, deltas in specs:
        row = []
        for name, (c, extra) in _c_families(bb, E, K, hpos, allow_sub).items():
            if (E, name) not in bases:
                bases[(E, name)] = cs.add(extra, c=c)
            s = -1.0 if name == "minus" else 1.0
            row.append((bases[(E, name)], cs.add({**extra, **{k: s * v for k, v in deltas.items()}}, c=c)))
        rows.append(row)
    d = cs.run(bb)
    return [any(d[q] != d[b] for b, q in row) for row in rows]


def probe_exact_groups(bb: BlackBox, L: int, allow_sub: bool = True) -> ExactGroups:
    """GST-FDPA's groups (Xie Algorithm 9 lines 1-5 and 10-11), with c = 2^E carrying the
    window (the group terms' own exponents are their scale factors', which f(A, B, C)
    does not expose, so c above every product sets e_max):

    1. F: a lone product 2^(E - t) is kept iff t <= F (E moves with t so that the
       product exists: this reaches far below the products' own range, as narrow formats
       such as fp4 need);
    2. G: two products of half the window's last bit, 2^(E - F - 1), at positions k1 and
       k2.  Truncated one by one (T-FDPA) both vanish; summed exactly in one group they
       make one window bit and survive.  Rows (0, k) and (k, k + 1) give the groups,
       which must be consecutive runs of one size G dividing L;
    3. exactness of a group: U, -U and eps = 2^-t U in one group with c = 0 return eps
       for every t the formats reach (group_F None in the engine's terms)."""
    fin, fo = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fo)
    lo = r.prod_lo_sub if allow_sub else r.prod_lo
    Emax = fo.emax - 2
    K = min(max(L, 4), bb.max_k or 4096)
    if L < 4 or K < L:
        return ExactGroups(None, None, None, evidence={"reason": "fewer than two groups of two products per block"})
    hpos = L - 1      # the tie family's half ulp ends here; the pairs use the positions below it
    # ---- 1. F, a lone product below c
    specs: list[tuple[int, dict[int, float]]] = []
    ts: list[int] = []
    for t in range(1, 61):
        E = _c_exponent_for(bb, t, allow_sub, hpos=hpos)
        if E is None:
            continue
        ts.append(t)
        specs.append((E, {0: 2.0 ** (E - t)}))
    if not ts:
        return ExactGroups(None, None, None, evidence={"reason": "no c above the products"})
    kept = _kept_next_to_c(bb, K, allow_sub, specs, hpos)
    fams = tuple(_c_families(bb, specs[0][0], K, hpos, allow_sub))
    ev: dict[str, Any] = {"t_range": (ts[0], ts[-1])}
    if all(kept) or not kept[0]:
        ev["reason"] = "a lone product is kept at every distance below c" if all(kept) else "not kept even at t = 1"
        return ExactGroups(None, None, None, families=fams, evidence=ev)
    first = ts[kept.index(False)]
    F = first - 1
    ev["kept_after_loss"] = [t for t, k in zip(ts, kept) if k and t > first]
    if ev["kept_after_loss"]:
        ev["reason"] = "products below the window leave traces (a sticky bit?)"
        return ExactGroups(F, None, None, families=fams, evidence=ev)
    # ---- 2. pairs of half window bits
    E = _c_exponent_for(bb, F + 1, allow_sub, room=1, hpos=hpos)
    if E is None:
        ev["reason"] = "no c puts a product half a window bit below it"
        return ExactGroups(F, None, None, families=fams, evidence=ev)
    n = L - _tie_positions(bb, E, K, hpos, allow_sub)
    h = 2.0 ** (E - F - 1)
    pairs = [(0, k) for k in range(1, n)] + [(k, k + 1) for k in range(1, n - 1)]
    rng = np.random.default_rng(L)
    extra = [tuple(sorted(rng.choice(n, size=2, replace=False).tolist())) for _ in range(min(32, n))]
    pairs += [p for p in extra if p not in pairs]
    # controls: one window bit alone is seen at this E, half of one alone is not
    specs = [(E, {0: 2 * h}), (E, {0: h})] + [(E, {k1: h, k2: h}) for k1, k2 in pairs]
    kept = _kept_next_to_c(bb, K, allow_sub, specs, hpos)
    if not kept[0] or kept[1]:
        ev["reason"] = (f"half a window bit (t = {F + 1}) survives alone" if kept[1]
                        else f"a window bit (t = {F}) is not seen next to c = 2^{E}")
        return ExactGroups(F, None, None, families=fams, evidence=ev)
    kept = kept[1:]
    together = dict(zip(pairs, kept[1:]))
    labels = [0] * n
    for k in range(1, n):
        labels[k] = labels[k - 1] + (0 if together[(k - 1, k)] else 1) if k > 1 else (0 if together[(0, 1)] else 1)
    sizes = np.bincount(labels)
    ev["pairs_kept"] = int(sum(kept[1:]))
    consistent = all(together[(k1, k2)] == (labels[k1] == labels[k2]) for k1, k2 in pairs)
    G = int(sizes[0])
    # the last group may miss the positions the tie family's half ulp occupies
    last_ok = sizes[-1] == (n % G or G)
    if not consistent or G == 1 or L % G or any(s != G for s in sizes[:-1]) or not last_ok:
        ev["reason"] = ("products truncated one by one" if G == 1 and consistent
                        else "pairs kept, but not in consecutive groups of one size dividing L")
        return ExactGroups(F, None, labels, families=fams, evidence=ev)
    if G == L:
        # one group per block looks the same as products fused on their own and c added
        # afterwards (c late): not told apart here
        ev["reason"] = "every pair of a block is kept: one group of L (or c added late)"
        return ExactGroups(F, None, labels, families=fams, evidence=ev)
    # ---- 3. a group's own sum: U and -U at its ends, eps = 2^-t U in between, c = 0
    eU = min(r.prod_hi, Emax)
    cs = Cases(K, fin, fo, allow_subnormal=allow_sub)
    tg = [t for t in range(1, eU - lo + 1) if eU - t >= r.out_lo and G >= 3]
    if not tg:
        ev["reason"] = f"groups of {G}: too small (or the range too narrow) to hold U, -U and eps"
        return ExactGroups(F, None, labels, families=fams, evidence=ev)
    for t in tg:
        cs.add({0: 2.0 ** eU, G - 1: -(2.0 ** eU), G // 2: 2.0 ** (eU - t)})
    d = cs.run(bb)
    ok = [d[q] == 2.0 ** (eU - t) for q, t in enumerate(tg)]
    lost = None if all(ok) else tg[ok.index(False)]
    exact_to = (tg[-1] if lost is None else lost - 1) if tg else 0
    ev["group_exact"] = f"eps = 2^-t U kept inside a group for t <= {exact_to}" + (
        f", lost at t = {lost}" if lost is not None else "")
    return ExactGroups(F, G, [k // G for k in range(L)], exact_to, lost, fams, ev)
