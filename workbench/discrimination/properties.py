"""Property checks on models (Valpey et al. 2025 Sections 4.3 and 5).

* :func:`check_order_independence` - is the output unchanged when the terms of the dot
  product are permuted (Property 3)?  Searched: a counterexample settles it; no
  counterexample within the budget is evidence, not proof.
* :func:`check_monotonicity` - does raising one product never lower the output?
  Searched likewise (truncating alignment to the largest exponent breaks it).
* :func:`check_carry_bits` - are ``carry_bits`` extra bits above the leading bit of the
  fixed-point accumulator enough for ``n_terms`` terms (Valpey Section 4.3, "3 carry bits
  are enough for 5 terms", Algorithm 1 steps 4-7)?  Decided exactly by the bound
  argument (the largest attainable aligned sum, attained by a concrete input), checked
  on that input with integer arithmetic, and optionally proved with z3 bit vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..numbers import formats as _formats
from ..engine.model import Model
from . import _eval
from .search import _Space, _structured_random, resolve_model

__all__ = ["PropertyReport", "check_order_independence", "check_monotonicity", "check_carry_bits",
           "fixed_point_accumulate"]


@dataclass(frozen=True)
class PropertyReport:
    """``holds``: True (proved), False (counterexample in ``counterexample``), None
    (no counterexample found within the budget: not a proof).  ``method`` says how."""

    name: str
    holds: bool | None
    method: str
    explanation: str
    counterexample: dict[str, Any] | None = None
    checked: int = 0
    details: dict[str, Any] = field(default_factory=dict)


def _candidates(model: Model, K: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sp = _Space(model, model, K)
    rng = np.random.default_rng(seed)
    parts = [_structured_random(sp, rng, t, n // 4).arrays() for t in (2, 3, 4, min(K, 8))]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def check_order_independence(model: Model | str, *, K: int | None = None, budget: int = 4000,
                             seed: int = 0) -> PropertyReport:
    """Search for an input whose output changes when the terms are reversed or randomly
    permuted (Valpey et al. Property 3).  Within one T-FDPA block the aligned sum is
    exact, so a counterexample needs K > L (or a non-fused model such as an FMA chain)."""
    m = resolve_model(model)
    K = K or 2 * m.L
    a, b, c = _candidates(m, K, budget, seed)
    rng = np.random.default_rng(seed + 1)
    base = _eval.eval_pairs(m, a, b, c)
    checked = 0
    for perm in (np.arange(K)[::-1], rng.permutation(K), rng.permutation(K)):
        d = _eval.eval_pairs(m, a[:, perm], b[:, perm], c)
        checked += a.shape[0]
        bad = np.flatnonzero(~_eval.same_bits(base, d))
        if bad.size:
            r = int(bad[0])
            return PropertyReport("order independence", False, "search",
                                  f"permuting the terms changes the output: {base[r]!r} -> {d[r]!r}",
                                  {"a": a[r].tolist(), "b": b[r].tolist(), "c": float(c[r]),
                                   "permutation": perm.tolist(), "out": float(base[r]),
                                   "out_permuted": float(d[r])}, checked)
    return PropertyReport("order independence", None, "search",
                          f"no permutation changed the output on {checked} candidates (K={K}); not a proof",
                          None, checked)


def check_monotonicity(model: Model | str, *, K: int | None = None, budget: int = 4000,
                       seed: int = 0) -> PropertyReport:
    """Search for an input where raising one operand ``a_k`` (with ``b_k > 0``) to the
    next representable value lowers the output (or raises it when ``b_k < 0``)."""
    m = resolve_model(model)
    K = K or m.L
    a, b, c = _candidates(m, K, budget, seed)
    fin = m.in_fmt
    rng = np.random.default_rng(seed + 2)
    nz = (a != 0) & (b != 0)
    keep = nz.any(axis=1)
    a, b, c, nz = a[keep], b[keep], c[keep], nz[keep]
    k = np.array([rng.choice(np.flatnonzero(row)) for row in nz])
    rows = np.arange(a.shape[0])
    x = a[rows, k]
    up = np.nextafter(x, np.inf)
    up = np.asarray(_formats.round(up, fin, "ru"), dtype=np.float64)
    ok = np.isfinite(up)
    a2 = a.copy()
    a2[rows, k] = np.where(ok, up, x)
    d0 = _eval.eval_pairs(m, a, b, c)
    d1 = _eval.eval_pairs(m, a2, b, c)
    sgn = np.sign(b[rows, k])
    bad = np.flatnonzero(ok & np.isfinite(d0) & np.isfinite(d1) & ((d1 - d0) * sgn < 0))
    if bad.size:
        r = int(bad[0])
        return PropertyReport("monotonicity", False, "search",
                              f"raising a[{int(k[r])}] from {a[r, k[r]]!r} to {a2[r, k[r]]!r} (b = {b[r, k[r]]!r}) "
                              f"moves the output the wrong way: {d0[r]!r} -> {d1[r]!r}",
                              {"a": a[r].tolist(), "a_raised": a2[r].tolist(), "b": b[r].tolist(),
                               "c": float(c[r]), "out": float(d0[r]), "out_raised": float(d1[r])}, a.shape[0])
    return PropertyReport("monotonicity", None, "search",
                          f"no violation on {a.shape[0]} candidates (K={K}); not a proof", None, a.shape[0])


# ------------------------------------------------------------------ carry bits
def fixed_point_accumulate(a: list[float], b: list[float], c: float, *, F: int = 23,
                           carry_bits: int | None = None) -> Fraction:
    """Valpey et al. Algorithm 1 (Volta), exactly: products and c normalised to 24-bit
    significands in [1, 2) (exact in fp32), aligned to the largest exponent truncating
    to ``F`` fraction bits, summed in a two's-complement register with a sign bit,
    ``carry_bits`` extra bits above the leading bit and the F fraction bits; bits above
    the register are lost (``carry_bits=None``: an unbounded register).  Returns the
    register's value (before the final rounding) as a Fraction."""
    terms = [Fraction(x) * Fraction(y) for x, y in zip(a, b)] + [Fraction(c)]
    nz = [t for t in terms if t != 0]
    if not nz:
        return Fraction(0)
    def flog2(t: Fraction) -> int:  # exact floor(log2 |t|)
        n, d = abs(t.numerator), t.denominator
        e = n.bit_length() - d.bit_length()
        return e if (n >= d << e if e >= 0 else n << -e >= d) else e - 1
    E = max(flog2(t) for t in nz)
    S = 0
    for t in nz:
        mag = abs(t) * 2 ** (F - E)
        q = mag.numerator // mag.denominator  # truncate
        S += q if t > 0 else -q
    if carry_bits is not None:
        W = 1 + carry_bits + 1 + F
        S = (S + (1 << (W - 1))) % (1 << W) - (1 << (W - 1))
    return Fraction(S) * Fraction(2) ** (E - F)


def _smt_carry(n_terms: int, carry_bits: int, F: int, fin: _formats.FloatFormat, timeout: float) -> str:
    """z3: is there an input whose aligned sum leaves a register with ``carry_bits`` carry
    bits?  Terms are the (n_terms - 1) exact products of ``fin`` significands (normalised
    to [1, 2)) and an fp32 c, aligned to the largest (symbolic) exponent.  Returns
    ``"unsat"`` (proved sufficient), ``"sat"`` or ``"unknown"``."""
    import z3

    p = fin.p
    W = F + carry_bits + 8 + n_terms.bit_length()
    s = z3.Solver()
    s.set("timeout", int(timeout * 1000))
    mags, exps = [], []
    for i in range(n_terms - 1):
        sa, sb = z3.BitVec(f"sa{i}", W), z3.BitVec(f"sb{i}", W)
        for v in (sa, sb):  # normal significands (subnormals only make terms smaller)
            s.add(z3.UGE(v, 1 << (p - 1)), z3.ULT(v, 1 << p))
        prod = sa * sb  # 2p bits, value prod * 2^-(2p-2) in [1, 4)
        big = z3.UGE(prod, 1 << (2 * p - 1))
        # normalised 24-bit-style significand with F fraction bits (truncated), carry into exponent
        sh_big = 2 * p - 1 - F
        sh_small = 2 * p - 2 - F
        norm = z3.If(big, z3.LShR(prod, sh_big) if sh_big >= 0 else prod << -sh_big,
                     z3.LShR(prod, sh_small) if sh_small >= 0 else prod << -sh_small)
        e = z3.BitVec(f"e{i}", 16)
        mags.append(norm)
        exps.append(e + z3.If(big, z3.BitVecVal(1, 16), z3.BitVecVal(0, 16)))
    cs = z3.BitVec("c_sig", W)
    s.add(z3.UGE(cs, 1 << 23), z3.ULT(cs, 1 << 24))
    mags.append(z3.LShR(cs, 23 - F) if F <= 23 else cs << (F - 23))
    exps.append(z3.BitVec("e_c", 16))
    for e in exps:
        s.add(e >= -300, e <= 300)
    Emax = exps[0]
    for e in exps[1:]:
        Emax = z3.If(e > Emax, e, Emax)
    total = z3.BitVecVal(0, W)
    for mg, e in zip(mags, exps):
        d = z3.ZeroExt(W - 16, Emax - e)
        total = total + z3.LShR(mg, d)  # same signs: the magnitude is largest
    s.add(z3.UGE(total, 1 << (carry_bits + 1 + F)))
    return str(s.check())


def check_carry_bits(n_terms: int = 5, carry_bits: int = 3, *, F: int = 23, in_format: str = "fp16",
                     smt: bool | None = None, timeout: float = 60.0) -> PropertyReport:
    """Are ``carry_bits`` extra bits enough for a fixed-point accumulator of ``n_terms``
    terms (``n_terms - 1`` products of ``in_format`` values plus an fp32 c)?

    Exhaustive argument (Valpey et al. Section 4.3; Fasi et al.): aligned terms only
    lose bits, so the aligned sum is largest in magnitude when every term has the
    largest significand at the same exponent (all of one sign): products
    ``(2 - 2^-m)^2`` normalised to ``2 - 2^-(m-1) + 2^-2m`` and ``c = (2 - 2^-23) 2^1``.  The
    register holds magnitudes below ``2^(carry_bits + 1)`` (in units of the leading
    bit), so the bits suffice iff that maximum is below it.  The extreme input is run
    through :func:`fixed_point_accumulate` with and without the limit as a check, and
    is the counterexample when the bits do not suffice.  With ``smt=True`` (or None and
    z3 installed) z3 also searches for any input overflowing the register: ``unsat``
    is a proof independent of the argument above.
    """
    if not isinstance(n_terms, int) or n_terms < 1:
        raise ValueError(f"n_terms={n_terms!r}: expected a positive number of terms")
    if not isinstance(carry_bits, int) or carry_bits < 0:
        raise ValueError(f"carry_bits={carry_bits!r}: expected a non-negative number of bits")
    fin = _formats.format(in_format)
    m = fin.man_bits
    top = 2.0 - 2.0 ** -m
    a = [top] * (n_terms - 1)
    b = [top] * (n_terms - 1)
    c = 2.0 * (2.0 - 2.0 ** -23)  # at the products' exponent (they are in [2, 4))
    prod_norm = Fraction(top) ** 2 / 2
    max_sum = (n_terms - 1) * prod_norm + Fraction(c) / 2
    sufficient = max_sum < 2 ** (carry_bits + 1)
    exact = fixed_point_accumulate(a, b, c, F=F)
    limited = fixed_point_accumulate(a, b, c, F=F, carry_bits=carry_bits)
    if sufficient != (exact == limited):  # pragma: no cover - the argument and the check disagree
        raise RuntimeError("internal error: bound argument and integer check disagree")
    details: dict[str, Any] = {"max_aligned_sum": float(max_sum), "register_limit": 2 ** (carry_bits + 1)}
    method = "bound"
    if smt is None:
        try:
            import z3  # noqa: F401
            smt = True
        except ImportError:
            smt = False
    if smt:
        verdict = _smt_carry(n_terms, carry_bits, F, fin, timeout)
        details["smt"] = verdict
        method = "bound+smt"
        if verdict == "unsat" and not sufficient or verdict == "sat" and sufficient:  # pragma: no cover
            raise RuntimeError(f"internal error: z3 says {verdict} but the bound says sufficient={sufficient}")
    if sufficient:
        expl = (f"{carry_bits} carry bits are enough for {n_terms} terms: the largest aligned sum is "
                f"{float(max_sum)!r} < 2^{carry_bits + 1} (times the leading bit's weight)")
        if details.get("smt") == "unsat":
            expl += "; z3 proved no input overflows the register (unsat)"
        return PropertyReport("carry bits", True, method, expl, None, 1, details)
    return PropertyReport("carry bits", False, method,
                          f"{carry_bits} carry bits are not enough for {n_terms} terms: a = b = "
                          f"[{top!r}] * {n_terms - 1}, c = {c!r} sum to {float(exact)!r} but the register "
                          f"keeps {float(limited)!r}",
                          {"a": a, "b": b, "c": c, "exact_sum": float(exact), "register": float(limited)}, 1, details)
