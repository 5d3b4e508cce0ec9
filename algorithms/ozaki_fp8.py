"""FP64 GEMM emulated on an FP8 matrix unit: Ozaki scheme II and Ozaki scheme I.

The unit's GEMMs run on the unit model (:func:`workbench.gemm` with the preset), so
that its real accumulation (Hopper's 13 fraction bits truncated, B200's 25 bits,
MI300X's GTR-FDPA) is what the emulation gets.  Both schemes rely on the unit summing
the small integer products *exactly*; each unit GEMM is compared with the exact
integer product and a mismatch is reported (``RuntimeWarning`` and the returned
decisions), never silently returned.

* :func:`ozaki2_fp8`: Y. Uchino, K. Ozaki, T. Imamura, "Double-Precision Matrix
  Multiplication Emulation via Ozaki-II Scheme with FP8 Quantization",
  arXiv:2603.10634 (2026).  Only the paper's abstract was retrievable here; the
  algorithm follows the authors' library GEMMul8 (RIKEN-RCCS/GEMMul8, FP8 back end:
  ``src/table.hpp``, ``mod.hpp``, ``gemmul8_real.hpp``, ``scaling_*_real.hpp``), read and
  re-implemented, not copied:

  - moduli (pairwise coprime) 1089 = 33^2, 1024 = 32^2, 961 = 31^2, 841 = 29^2,
    625 = 25^2, 529 = 23^2, then 511, 509, 503, 499, 491, 487, 481, 479, 467, 463,
    461, 457, 449, 443: at most 20 (:data:`FP8_MODULI`);
  - a residue r (symmetric, |r| <= m/2) of a square modulus m = s^2 is split as
    r = s hi + lo, hi = round(r/s), |hi|, |lo| <= 16 (integers e4m3 holds exactly), and
    r_A r_B = s^2 hi_A hi_B + s (hi_A lo_B + lo_A hi_B) + lo_A lo_B, whose first term
    vanishes mod m: three FP8 GEMMs (hi_A lo_B, lo_A hi_B, lo_A lo_B);
  - the other moduli (<= 511, |r| <= 255) use r = 16 hi + lo with
    hi = sign(r) ceil(|r|/16) and Karatsuba: hi_A hi_B, lo_A lo_B and
    (hi_A + lo_A)(hi_B + lo_B), again three FP8 GEMMs with |digits| <= 16;
  - the integer matrices A' = trunc(diag(2^s) A), B' = trunc(B diag(2^t)) are scaled
    so that |A'||B'| <= (P - 1)/2 (P the product of the moduli: the CRT recovers A'B'
    exactly), by the *accurate* mode (an upper bound |A||B| from FP8 upper bounds of
    |A| and |B|, GEMMul8 ``scaling_accu``) or the *fast* mode (row amax and 2-norm,
    GEMMul8 ``scaling_fast``);
  - A'B' is recovered exactly by the CRT (here with Python integers; GEMMul8 uses
    double-double) and scaled back (one rounding to float64).

  The defaults are GEMMul8's: 14 moduli and the accurate mode (the README's example,
  ``num_moduli = 14``, ``fastmode = false``).  The authors' published measurements
  (GEMMul8_numerical_results, results_07, B200, K = 1024) reach FP64 accuracy (max
  relative error ~2e-16) with 14-15 moduli for phi <= 2 test matrices.

  ``scaling="fast-improved"`` is the follow-up "Improved Scaling for Fast Mode of Ozaki
  Scheme II" (arXiv:2606.29129, GEMMul8 pull request 4): the fast mode's shift is
  not scale-invariant (it mixes ``log2 ||a_i||_2`` with ``ilogb(max |a_i|)``) and can break
  the CRT uniqueness condition; the follow-up derives the shift from the condition
  by Cauchy-Schwarz.  That paper's text was not retrievable; the formula here is
  derived from the stated condition: ``s_i = floor(log2((P-1)/2)/2 - log2 ||a_i||_2)``, so
  ``|a'_i . b'_j| <= ||a'_i||_2 ||b'_j||_2 <= (P-1)/2`` for every input scaling.

* :func:`ozaki1_fp8`: the Ozaki scheme with slices (K. Ozaki, T. Ogita, S. Oishi,
  S. M. Rump, Numer. Algorithms 59, 2012; integer slices as in Ootomo, Ozaki, Yokota,
  IJHPCA 2024, Section 3) with FP8 digits, as proposed for FP8/FP6 tensor cores in
  "DGEMM without FP64 Arithmetic - using FP64 Emulation and FP8 Tensor Cores with
  Ozaki Scheme" (arXiv:2508.00441; abstract only retrievable here).  Each row of A
  (column of B) is scaled into (-1, 1) and cut into ``slices`` signed digits of
  ``slice_bits`` magnitude bits (default 4: |digit| <= 15, exact in e4m3); slice pairs
  with s + t <= slices + 1 are multiplied on the unit and combined in float64.
  Default 14 slices (56 bits, as ozIMMU's 8 seven-bit slices); this default is ours,
  not verified against arXiv:2508.00441.

``moduli="auto"`` / ``slices="auto"``: the smallest count whose exponent span capacity
covers the data (:mod:`algorithms.adp`), or a reported fallback to native FP64.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from workbench.numbers import formats
from workbench.units.catalogue import custom_model
from workbench.engine.model import Model
from workbench.units import UnitSpec

from . import adp
from ._common import as_matrices, resolve_unit, unit_gemm
from .ozaki import _exponents, _slices

#: GEMMul8's FP8 moduli (table.hpp), in order; the first six are squares.
FP8_MODULI = (1089, 1024, 961, 841, 625, 529, 511, 509, 503, 499, 491, 487, 481, 479, 467, 463, 461, 457, 449,
              443)
#: sqrt of the square moduli (split r = s hi + lo)
SQUARE_ROOT = {1089: 33, 1024: 32, 961: 31, 841: 29, 625: 25, 529: 23}
MAX_MODULI = len(FP8_MODULI)
DEFAULT_MODULI = 14
SCALINGS = ("accurate", "fast", "fast-improved")
#: the largest |digit| of either scheme's FP8 words (integers -16..16 are exact in e4m3)
DIGIT_MAX = 16
#: GEMMul8's maxUFP for FP8: the accurate mode's first scaling puts |A| below 2^(7+1)
_MAX_UFP = 7


def fp8_exact_unit(in_format: str = "fp8_e4m3") -> Model:
    """An idealised FP8 unit: exact products, an exact sum (T-FDPA with 56 fraction bits,
    more than any sum of these integer products needs) and a float64 output."""
    return custom_model(in_format, "fp64", kind="t-fdpa", L=32, F=56, rounding="rne")


def _check_unit(model: UnitSpec, algorithm: str, digit_max: int) -> tuple[Model, int]:
    """The resolved unit and the largest K per call for which its output format holds the
    exact sums (``K digit_max^2 <= 2^p``); ValueError where the unit's formats do not fit."""
    from workbench import units
    m = resolve_unit(model, algorithm)
    fin = formats.format(m.in_format)
    fout = formats.format(m.out_format)
    if not fin.signed or fin.p < 4 or fin.max < digit_max:
        raise ValueError(f"{algorithm}: the unit's input format {fin.name} (precision {fin.p}, largest {fin.max:g}"
                         f"{'' if fin.signed else ', unsigned'}) does not hold the integers -{digit_max}..{digit_max} "
                         f"the scheme's FP8 words take; choose an e4m3 preset (e.g. 'H100:fp8_e4m3:fp32')")
    if m.operation.scaled:
        raise ValueError(f"{algorithm}: block-scaled unit {units.unit_name(m)}: the scheme needs a plain FP8 unit")
    limit = int(2.0 ** fout.p) // (digit_max * digit_max)
    if limit < 1:
        raise ValueError(f"{algorithm}: the unit's output format {fout.name} cannot hold a single product "
                         f"{digit_max}^2 exactly")
    return m, limit


class _UnitRunner:
    """Issues X @ Y to the unit in K-chunks (chunk sums added exactly in float64) and
    checks each call against the exact product (integers: float64 is exact here)."""

    def __init__(self, model: Model, k_chunk: int, check: bool, device: str):
        self.model, self.k_chunk, self.check, self.device = model, k_chunk, check, device
        self.calls = 0
        self.inexact = 0
        self.max_dev = 0.0

    def __call__(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        K = X.shape[1]
        out = np.zeros((X.shape[0], Y.shape[1]))
        for k0 in range(0, max(K, 1), self.k_chunk):
            Xc, Yc = X[:, k0:k0 + self.k_chunk], Y[k0:k0 + self.k_chunk]
            D = np.asarray(unit_gemm(Xc, Yc, None, model=self.model, device=self.device), dtype=np.float64)
            self.calls += 1
            if self.check:
                dev = float(np.abs(D - Xc @ Yc).max(initial=0.0))
                if dev:
                    self.inexact += 1
                    self.max_dev = max(self.max_dev, dev)
            out += D
        return out

    def report(self, algorithm: str) -> dict[str, object]:
        rec: dict[str, object] = {"unit_gemms": self.calls, "unit_checked": self.check,
                                  "unit_inexact_gemms": self.inexact, "unit_max_deviation": self.max_dev}
        if self.inexact:
            warnings.warn(f"{algorithm}: the unit's accumulation was not exact in {self.inexact} of {self.calls} "
                          f"GEMMs (largest deviation {self.max_dev:g}); the emulation's exactness assumption fails on "
                          "this unit and the result is not guaranteed (a smaller k_chunk may help)",
                          RuntimeWarning, stacklevel=3)
        return rec


def _ilogb(x: np.ndarray) -> np.ndarray:
    """floor(log2 |x|) (frexp exponent - 1); 0 for zeros."""
    return np.where(x == 0, 0, np.frexp(x)[1].astype(np.int64) - 1)


def _round_up_p(x: np.ndarray, p: int) -> np.ndarray:
    """x >= 0 rounded up to p significant bits (GEMMul8's fp8_e4m3_ru, without range limits)."""
    f, e = np.frexp(x)
    return np.ldexp(np.ceil(np.ldexp(f, p)), e - p)


def _modulus_product(ms: tuple[int, ...] | list[int]) -> int:
    P = 1
    for m in ms:
        P *= m
    return P


def _shifts(A: np.ndarray, B: np.ndarray, P: int, scaling: str) -> tuple[np.ndarray, np.ndarray]:
    """Row shifts s (A' = trunc(2^s_i a_i)) and column shifts t of the given scaling mode."""
    L = math.floor(math.log2(P - 1) / 2 - 0.5)          # GEMMul8 table::log2P
    absA, absB = np.abs(A), np.abs(B)
    amaxA, amaxB = absA.max(axis=1, initial=0.0), absB.max(axis=0, initial=0.0)
    half = 0.5 * (1 + 2.0**-20)                           # GEMMul8's 0.5 rounded up (0x1.000006p-1)
    if scaling == "accurate":
        sA0 = _MAX_UFP - _ilogb(amaxA)
        sB0 = _MAX_UFP - _ilogb(amaxB)
        UA = _round_up_p(np.ldexp(absA, sA0[:, None]), 4)
        UB = _round_up_p(np.ldexp(absB, sB0[None, :]), 4)
        bound = UA @ UB                                   # exact: products of 4-bit values, K < 2^37
        with np.errstate(divide="ignore"):
            r = np.log2(bound.max(axis=1, initial=0.0))
            c = np.log2(bound.max(axis=0, initial=0.0))
        s = sA0 + np.floor(L - half * np.where(np.isfinite(r), r, 0)).astype(np.int64)
        t = sB0 + np.floor(L - half * np.where(np.isfinite(c), c, 0)).astype(np.int64)
    else:
        with np.errstate(divide="ignore"):
            nA = np.log2((absA * absA).sum(axis=1)) * half
            nB = np.log2((absB * absB).sum(axis=0)) * half
        nA = np.where(np.isfinite(nA), nA, 0.0)
        nB = np.where(np.isfinite(nB), nB, 0.0)
        if scaling == "fast":                            # GEMMul8 scaling_fast compute_sft (as published)
            s = np.floor(L - 1.5 - np.maximum(1.0, nA)).astype(np.int64) - _ilogb(amaxA)
            t = np.floor(L - 1.5 - np.maximum(1.0, nB)).astype(np.int64) - _ilogb(amaxB)
        else:                                            # scale-invariant, from Cauchy-Schwarz
            L2 = math.log2((P - 1) // 2) / 2 - 2.0**-20
            s = np.floor(L2 - nA - 2.0**-20).astype(np.int64)
            t = np.floor(L2 - nB - 2.0**-20).astype(np.int64)
    s = np.where(amaxA == 0, 0, s)
    t = np.where(amaxB == 0, 0, t)
    return s, t


def _split_residue(r: np.ndarray, m: int) -> tuple[np.ndarray, ...]:
    """The FP8 digits of a symmetric residue r mod m: (hi, lo) for squares, (hi, lo, hi+lo) otherwise."""
    if m in SQUARE_ROOT:
        s = SQUARE_ROOT[m]
        hi = np.rint(r / s)
        return hi, r - s * hi
    hi = np.sign(r) * np.ceil(np.abs(r) / 16)
    lo = r - 16 * hi
    return hi, lo, hi + lo


def _residue_product(run: _UnitRunner, Ad: tuple[np.ndarray, ...], Bd: tuple[np.ndarray, ...], m: int) -> np.ndarray:
    """(A' B') mod m in [0, m) from three FP8 GEMMs on the unit (module doc)."""
    if m in SQUARE_ROOT:
        s = SQUARE_ROOT[m]
        C0 = run(Ad[0], Bd[1])
        C1 = run(Ad[1], Bd[0])
        C2 = run(Ad[1], Bd[1])
        T = s * (np.fmod(C0, m) + np.fmod(C1, m)) + np.fmod(C2, m)
    else:
        C0 = run(Ad[0], Bd[0])
        C1 = run(Ad[1], Bd[1])
        C2 = run(Ad[2], Bd[2])
        r0, r1, r2 = np.fmod(C0, m), np.fmod(C1, m), np.fmod(C2, m)
        T = 256 * r0 + 16 * (r2 - r0 - r1) + r1
    return np.mod(T, m)


def _symmetric(X: np.ndarray, m: int) -> np.ndarray:
    r = np.mod(X, m)
    return np.where(r > m // 2, r - m, r)


def _native(A64: np.ndarray, B64: np.ndarray, C64: np.ndarray | None) -> np.ndarray:
    D = A64 @ B64
    return D if C64 is None else D + C64


def _crt_check(Ai: np.ndarray, Bi: np.ndarray, P: int) -> tuple[bool, float]:
    """Whether max_ij (|A'||B'|)_ij < (P-1)/2 holds (float64 sum, rounding allowed for)."""
    K = Ai.shape[1]
    worst = float((np.abs(Ai) @ np.abs(Bi)).max(initial=0.0)) * (1 + (K + 2) * 2.0**-52)
    return worst <= (P - 1) // 2, worst


def auto_moduli(A: np.ndarray, B: np.ndarray, *, scaling: str = "accurate", max_moduli: int = MAX_MODULI,
                span: np.ndarray | None = None) -> int | None:
    """The count ``moduli="auto"`` chooses for float64 A, B: the smallest number of moduli
    (2..``max_moduli``) whose exponent span capacity (:mod:`algorithms.adp`) covers every
    dot product's span, or None where none does (:func:`ozaki2_fp8` then falls back to
    native FP64)."""
    if span is None:
        span = adp.exponent_span(A, B)
    eA = _exponents(A, axis=1)
    eB = _exponents(B, axis=0)
    for n in range(2, max_moduli + 1):
        s, t = _shifts(A, B, _modulus_product(FP8_MODULI[:n]), scaling)
        if adp.capacity(s + eA, t + eB, span) >= 0:
            return n
    return None


def ozaki2_fp8(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
               model: UnitSpec, moduli: int | str = DEFAULT_MODULI, scaling: str = "accurate",
               k_chunk: int | None = None, check_unit: bool = True, on_unguaranteed: str = "raise",
               max_moduli: int = MAX_MODULI, device: str = "cpu",
               return_words: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """fp64 GEMM emulated by Ozaki scheme II with FP8 words on an FP8 unit (module doc).

    Parameters
    ----------
    A, B, C:
        float64 data (finite; NaN/Inf raise ValueError).  C is added in float64 at the end.
    model:
        An FP8 preset (``"H100:fp8_e4m3:fp32"``, ``"B200:fp8_e4m3:fp32"``,
        ``"MI300X:fp8_e4m3fnuz:fp32"``, ``"hopper/mma.sync/fp8_e4m3->fp32/mma.sync"``, ...) or
        :func:`fp8_exact_unit`; its input format must hold the integers -16..16 (e5m2
        does not: ValueError).
    moduli:
        Number of moduli, 2..20 (default 14, GEMMul8's), or ``"auto"``: the smallest count
        whose exponent span capacity covers the data (:mod:`algorithms.adp`), else a
        fallback to native FP64 (computed in float64 and reported).
    scaling:
        ``"accurate"`` (default), ``"fast"`` (as published; not scale-invariant, may break
        the CRT condition) or ``"fast-improved"`` (scale-invariant Cauchy-Schwarz shift).
    k_chunk:
        Largest K per unit GEMM (chunks are added exactly outside the unit); default and
        maximum: the largest K whose exact sum the output format holds (2^24/256 = 65536
        for fp32).  A smaller chunk keeps partial sums small (e.g. Hopper's 14-bit sum).
    check_unit:
        Compare every unit GEMM with the exact integer product (default True) and warn
        (``RuntimeWarning``) and report where the unit's accumulation was not exact.
    on_unguaranteed:
        Where the scaled integers break the CRT condition |A'||B'| <= (P-1)/2 (only the
        published fast mode can): ``"raise"`` (default, ValueError) or ``"warn"``
        (RuntimeWarning; the result is then not the exact recovery).
    max_moduli:
        The largest count ``"auto"`` may choose (default 20) before it falls back.
    device:
        Where the unit's :func:`workbench.gemm` calls run (``"cpu"`` or ``"cuda"``).
    return_words:
        Also return the decisions and words: moduli, scaling, shifts, P, CRT bound,
        fallback, unit-exactness report, the integer matrices.

    Returns
    -------
    float64 array, or ``(D, decisions)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    model, limit = _check_unit(model, "ozaki2_fp8", DIGIT_MAX)
    if scaling not in SCALINGS:
        raise ValueError(f"scaling={scaling!r}: expected one of {SCALINGS}")
    if on_unguaranteed not in ("raise", "warn"):
        raise ValueError(f"on_unguaranteed={on_unguaranteed!r}: expected 'raise' or 'warn'")
    if not (isinstance(max_moduli, int) and 2 <= max_moduli <= MAX_MODULI):
        raise ValueError(f"max_moduli={max_moduli!r}: expected 2..{MAX_MODULI}")
    if moduli != "auto" and not (isinstance(moduli, int) and not isinstance(moduli, bool) and 2 <= moduli <= MAX_MODULI):
        raise ValueError(f"moduli={moduli!r}: expected 2..{MAX_MODULI} (the FP8 moduli table: exact CRT recovery "
                         f"is defined for at most {MAX_MODULI} moduli) or 'auto'")
    if k_chunk is None:
        k_chunk = limit
    if not (isinstance(k_chunk, int) and 1 <= k_chunk <= limit):
        raise ValueError(f"k_chunk={k_chunk!r}: expected 1..{limit} (the unit's output format "
                         f"{model.out_format} holds sums of at most {limit} products 16 x 16 exactly)")
    dec: dict[str, Any] = {"algorithm": "ozaki2_fp8", "scaling": scaling, "k_chunk": k_chunk, "fallback": False}
    if moduli == "auto":
        span = adp.exponent_span(A64, B64)
        eA = _exponents(A64, axis=1)
        eB = _exponents(B64, axis=0)
        chosen = auto_moduli(A64, B64, scaling=scaling, max_moduli=max_moduli, span=span)
        dec.update({"exponent_span": int(span.max(initial=0)), "auto": True})
        if chosen is None:
            s, t = _shifts(A64, B64, _modulus_product(FP8_MODULI[:max_moduli]), scaling)
            dec.update({"fallback": True, "moduli": [], "capacity": adp.capacity(s + eA, t + eB, span) + int(
                span.max(initial=0)), "reason": f"the exponent span {int(span.max(initial=0))} exceeds the capacity "
                        f"of {max_moduli} moduli: native FP64 (float64) product returned"})
            D = _native(A64, B64, C64)
            return (D, dec) if return_words else D
        moduli = chosen
    assert isinstance(moduli, int)
    ms = list(FP8_MODULI[:moduli])
    P = _modulus_product(ms)
    s, t = _shifts(A64, B64, P, scaling)
    Ai = np.trunc(np.ldexp(A64, s[:, None]))
    Bi = np.trunc(np.ldexp(B64, t[None, :]))
    ok, worst = _crt_check(Ai, Bi, P)
    dec.update({"moduli": ms, "P": P, "row_shift": s, "col_shift": t, "crt_bound": worst,
                "crt_limit": (P - 1) // 2, "crt_guaranteed": ok})
    if not ok:
        msg = (f"ozaki2_fp8: scaling={scaling!r} breaks the CRT condition for these data: max (|A'||B'|)_ij = "
               f"{worst:.4g} exceeds (P-1)/2 = {float((P - 1) // 2):.4g} with {moduli} moduli, so A'B' cannot be "
               "recovered exactly; use scaling='accurate' or 'fast-improved'")
        if on_unguaranteed == "raise":
            raise ValueError(msg)
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    run = _UnitRunner(model, k_chunk, check_unit, device)
    acc = np.zeros((A64.shape[0], B64.shape[1]), dtype=object)
    for m in ms:
        Ad = _split_residue(_symmetric(Ai, m), m)
        Bd = _split_residue(_symmetric(Bi, m), m)
        Pm = _residue_product(run, Ad, Bd, m).astype(np.int64)
        Ml = P // m
        acc = acc + Pm.astype(object) * (Ml * pow(Ml, -1, m))
    acc = acc % P
    acc = np.where(acc > P // 2, acc - P, acc)
    exact = acc.astype(np.float64)                       # Python int -> float64: round to nearest even
    D = np.ldexp(exact, -(s[:, None] + t[None, :]))
    if C64 is not None:
        D = D + C64
    dec.update(run.report("ozaki2_fp8"))
    if return_words:
        dec.update({"A_int": Ai, "B_int": Bi})
        return D, dec
    return D


def ozaki1_fp8(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
               model: UnitSpec, slices: int | str = 14, slice_bits: int = 4, products: str = "triangle",
               k_chunk: int | None = None, check_unit: bool = True, max_slices: int | None = None,
               device: str = "cpu", return_words: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    """fp64 GEMM emulated by the Ozaki scheme (slices) with FP8 digits on an FP8 unit (module doc).

    Parameters
    ----------
    model:
        An FP8 preset (or :func:`fp8_exact_unit`) whose input format holds the digits.
    slices:
        Slices per operand (default 14), or ``"auto"`` (:mod:`algorithms.adp`: the
        smallest count covering the exponent span, else a reported fallback to native
        FP64).  ``slices * slice_bits`` must not exceed 62.
    slice_bits:
        Magnitude bits per digit, 1..4 (default 4: |digit| <= 15, exact in e4m3).
    products:
        ``"triangle"`` (default: s + t <= slices + 1) or ``"all"``.
    k_chunk, check_unit, device:
        As :func:`ozaki2_fp8` (the limit is 2^p / (2^slice_bits - 1)^2).
    max_slices:
        The largest count ``"auto"`` may choose (default 62 // slice_bits).
    return_words:
        Also return the decisions and words (slices, pairs, exponents, fallback, unit report).
    """
    A64, B64, C64 = as_matrices(A, B, C)
    if not (isinstance(slice_bits, int) and 1 <= slice_bits <= 4):
        raise ValueError(f"slice_bits={slice_bits!r}: expected 1..4 (digits up to 15 are exact in e4m3)")
    dmax = 2**slice_bits - 1
    model, limit = _check_unit(model, "ozaki1_fp8", dmax)
    cap = 62 // slice_bits
    if max_slices is None:
        max_slices = cap
    if not (isinstance(max_slices, int) and 1 <= max_slices <= cap):
        raise ValueError(f"max_slices={max_slices!r}: expected 1..{cap}")
    if products not in ("triangle", "all"):
        raise ValueError(f"products={products!r}: expected 'triangle' or 'all'")
    if k_chunk is None:
        k_chunk = limit
    if not (isinstance(k_chunk, int) and 1 <= k_chunk <= limit):
        raise ValueError(f"k_chunk={k_chunk!r}: expected 1..{limit} (the unit's output format {model.out_format} "
                         f"holds sums of at most {limit} digit products exactly)")
    dec: dict[str, Any] = {"algorithm": "ozaki1_fp8", "slice_bits": slice_bits, "k_chunk": k_chunk,
                           "fallback": False}
    if slices == "auto":
        span = adp.exponent_span(A64, B64)
        need = adp.slices_needed(span, slice_bits)
        dec.update({"auto": True, "exponent_span": int(span.max(initial=0)), "slices_needed": need})
        if need > max_slices:
            dec.update({"fallback": True, "slices": 0, "reason": f"the exponent span {int(span.max(initial=0))} "
                        f"needs {need} slices of {slice_bits} bits, more than {max_slices}: native FP64 (float64) "
                        "product returned"})
            D = _native(A64, B64, C64)
            return (D, dec) if return_words else D
        slices = need
    if not (isinstance(slices, int) and not isinstance(slices, bool) and 1 <= slices <= cap):
        raise ValueError(f"slices={slices!r}: expected 1..{cap} (slices * slice_bits <= 62) or 'auto'")
    eA = _exponents(A64, axis=1)
    eB = _exponents(B64, axis=0)
    As = _slices(A64, eA, 1, slices, slice_bits)
    Bs = _slices(B64, eB, 0, slices, slice_bits)
    idx = [(i, j) for i in range(1, slices + 1) for j in range(1, slices + 1)
           if products == "all" or i + j <= slices + 1]
    idx.sort(key=lambda st: (-(st[0] + st[1]), st))
    run = _UnitRunner(model, k_chunk, check_unit, device)
    D = np.zeros((A64.shape[0], B64.shape[1]))
    for i, j in idx:
        D += np.ldexp(run(As[i - 1], Bs[j - 1]), -slice_bits * (i + j))
    D = np.ldexp(D, eA[:, None] + eB[None, :])
    if C64 is not None:
        D = D + C64
    dec.update({"slices": slices, "pairs": idx, "row_exponent": eA, "col_exponent": eB})
    dec.update(run.report("ozaki1_fp8"))
    if return_words:
        dec.update({"A": As, "B": Bs})
        return D, dec
    return D
