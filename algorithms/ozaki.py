"""Ozaki schemes on an exact INT8 matrix unit.

The INT8 matrix unit (NVIDIA IMMA ``mma.sync ... .s32.s8.s8.s32``, AMD
``v_mfma_i32_*_i8``) computes integer dot products exactly and accumulates them in
int32.  :class:`Int8Unit` models it as exactly that: integer operands in
[-128, 127], the exact integer result, int32 accumulator; since the order of the
hardware's partial sums is not modelled, it raises ``ValueError`` whenever
``sum |a_k b_k| + |c|`` exceeds the int32 range (some order could then overflow).

* :func:`ozaki` with ``scheme="I"`` (default): the Ozaki scheme with integer
  slices as in ozIMMU (H. Ootomo, K. Ozaki, R. Yokota, "DGEMM on integer matrix
  multiplication unit", IJHPCA 2024, Section 3; K. Ozaki, T. Ogita, S. Oishi,
  S. M. Rump, Numer. Algorithms 59, 2012): each row of A (column of B) is scaled by
  a power of two into (-1, 1) and its fixed-point significand cut into ``slices``
  signed ``slice_bits``-bit integer slices (truncation); the slice products are
  exact int32 GEMMs on the unit, combined in float64.
* ``scheme="II"``: Ozaki scheme II (K. Ozaki, Y. Uchino, T. Imamura, "Ozaki Scheme
  II: A GEMM-oriented emulation of floating-point matrix multiplication using an
  integer modular technique", 2025): A and B are scaled to integer matrices A', B'
  (truncation), the product A'B' is computed modulo pairwise coprime moduli
  m_l <= 256 (one exact INT8 GEMM each) and recovered exactly by the Chinese
  remainder theorem, then scaled back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import gcd
from typing import Literal

import numpy as np

from workbench.matmul import product as matmul
from workbench.engine.model import Model
from workbench.units import UnitSpec, resolve

from . import adp
from ._common import as_matrices

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Int8Unit:
    """Exact INT8 x INT8 -> INT32 matrix unit (IMMA / MFMA-i8): exact products, int32 sum.

    Backed by the catalogue's integer preset ``name`` (default: NVIDIA IMMA
    ``ampere/mma.m16n8k32/s8->s32``, kind ``int-mma``, wrapping int32 accumulator;
    ``preset``): ``gemm`` runs it through :func:`workbench.gemm` after refusing
    any product whose int32 sum could overflow, so the result is the exact one."""

    name: str = "ampere/mma.m16n8k32/s8->s32"
    devices: tuple[str, ...] = ("T4", "A100", "L40S", "H100", "B200", "MI100", "MI250X", "MI300X")
    source: str = ("exact integer dot products with int32 accumulation (NVIDIA PTX ISA, mma .s8 -> .s32; "
                   "Ootomo-Ozaki-Yokota 2024 Section 2)")
    #: a unit that is not in the catalogue (``custom_model(..., kind="int-mma")``); None: ``name``
    unit: Model | None = None

    @property
    def preset(self) -> Model:
        """The integer unit this runs on: ``unit``, or the catalogue preset ``name``."""
        return self.unit if self.unit is not None else resolve(self.name)

    def gemm(self, A: np.typing.ArrayLike, B: np.typing.ArrayLike,
             C: np.typing.ArrayLike | None = None) -> np.ndarray:
        """Exact ``A @ B + C`` of int8 matrices A, B and an int32 matrix C, as int64 values.

        Raises ValueError for entries that are not int8 (int32 for C) integers, for
        mismatched shapes, and when ``sum_k |A_ik B_kj| + |C_ij|`` exceeds 2^31 - 1.
        """
        A64, B64, C64 = as_matrices(A, B, C)
        for name, X, lo, hi in (("A", A64, -128, 127), ("B", B64, -128, 127),
                                ("C", C64, -INT32_MAX - 1, INT32_MAX)):
            if X is not None and ((X != np.round(X)).any() or X.min(initial=0) < lo or X.max(initial=0) > hi):
                raise ValueError(f"{name} must hold {'int32' if name == 'C' else 'int8'} integers in [{lo}, {hi}] "
                                 "for the INT8 unit")
        absC = 0.0 if C64 is None else np.abs(C64)
        # float64 sums of int8 products are exact below 2^53 (here below 2^31 * 2).
        if (np.abs(A64) @ np.abs(B64) + absC > INT32_MAX).any():
            raise ValueError("int32 overflow in the INT8 unit: sum |a_k b_k| + |c| exceeds 2^31 - 1; split K into "
                             "shorter chunks (ozaki(..., k_chunk=...)) or use fewer slice bits")
        return matmul.gemm(A64, B64, C64, model=self.preset).astype(np.int64)


#: The exact INT8 matrix-unit preset (every NVIDIA IMMA and AMD i8 MFMA generation).
INT8_UNIT = Int8Unit()

SCHEMES = ("I", "II")
#: the most moduli scheme II takes (their product, about 2^310, recovers integer matrices of
#: about 150 bits each: FP64 and an exponent span of some 90 binades)
MAX_MODULI = 40
#: the most slices scheme I takes (20 x 7 bits cover FP64 and an exponent span of 80 binades)
MAX_SLICES = 20


def integer_unit(model: object) -> Int8Unit:
    """The :class:`Int8Unit` for ``model``: an Int8Unit, or any spelling of an integer unit
    (kind ``int-mma``: a catalogue preset such as ``"H100:s8:s32"``,
    ``"cdna3/mfma/s8->s32"``, ``"B200:s8:s32:satfinite"``, a unit file, a Model) whose A
    and B are signed 8-bit integers - the slices and residues of the Ozaki schemes are
    signed.  ValueError naming the unit otherwise (a floating-point unit: use
    :func:`algorithms.ozaki2_fp8` on FP8 units; u8 operands: ADP's unsigned slicing is
    not implemented)."""
    if isinstance(model, Int8Unit):
        return model
    try:
        unit = resolve(model)        # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ozaki runs on an integer unit: {exc}") from None
    label = getattr(unit, "name", "") or unit.describe()
    if not unit.operation.integer:
        raise ValueError(f"ozaki runs on an integer unit (kind int-mma: algorithms.INT8_UNIT or an s8 IMMA / "
                         f"MFMA i8 preset such as MI300X:s8:s32); {label} is a "
                         f"{unit.kind} unit of {unit.in_format}: for FP8 units use algorithms.ozaki2_fp8 / ozaki1_fp8")
    fa, fb, _ = unit.formats
    if not all(getattr(f, "signed", False) and getattr(f, "bits", 0) == 8 for f in (fa, fb)):
        raise ValueError(f"{label} takes {fa.name} x {fb.name}: the Ozaki schemes' slices and residues are signed "
                         "8-bit integers (s8 x s8); ADP's unsigned slicing onto u8 operands is not implemented")
    name = getattr(unit, "name", "")
    return Int8Unit(name=name, unit=None if name else unit)


def _max_k(bound: int) -> int:
    """Largest K with K * bound <= 2^31 - 1 (no int32 overflow)."""
    return INT32_MAX // bound


def _chunked(unit: Int8Unit, X: np.ndarray, Y: np.ndarray, k_chunk: int) -> np.ndarray:
    """Exact X @ Y as float64, issued to the unit in K-chunks of at most ``k_chunk``."""
    K = X.shape[1]
    out = np.zeros((X.shape[0], Y.shape[1]))
    for k0 in range(0, K, k_chunk):
        out += unit.gemm(X[:, k0:k0 + k_chunk], Y[k0:k0 + k_chunk]).astype(np.float64)
    return out


def _exponents(X: np.ndarray, axis: int) -> np.ndarray:
    """e with max|X| * 2^-e in [1/2, 1) along ``axis`` (0 for all-zero lines)."""
    return np.frexp(np.max(np.abs(X), axis=axis))[1].astype(np.int64)


def _slices(X: np.ndarray, e: np.ndarray, axis: int, slices: int, bits: int) -> list[np.ndarray]:
    """Signed ``bits``-bit slices of X * 2^-e (truncated): X 2^-e ~= sum_s x_s 2^(-bits s).

    The digits are peeled off in float64 one slice at a time (scale by 2^bits, take the
    integer part, keep the fraction), each step exact, so any number of slices is exact."""
    rest = np.abs(np.ldexp(X, -np.expand_dims(e, axis)))       # in [0, 1)
    sign = np.sign(X)
    out = []
    for _ in range(slices):
        rest = np.ldexp(rest, bits)
        digit = np.trunc(rest)
        rest -= digit
        out.append(sign * digit)
    return out


def _moduli(count: int) -> list[int]:
    """``count`` pairwise coprime moduli, greedily from 256 down (residues fit int8)."""
    out: list[int] = []
    m = 256
    while len(out) < count and m > 1:
        if all(gcd(m, x) == 1 for x in out):
            out.append(m)
        m -= 1
    return out


def auto_slices(A: np.ndarray, B: np.ndarray, *, slice_bits: int = 7, span: np.ndarray | None = None) -> int | None:
    """Scheme I's automatic count (``slices="auto"``) for float64 A, B: the fewest
    ``slice_bits``-bit slices that keep FP64 accuracy for the exponent span of every dot
    product (``algorithms.adp.slices_needed``), or None where more than
    :data:`MAX_SLICES` would be needed (:func:`ozaki` then falls back to native FP64)."""
    need = adp.slices_needed(adp.exponent_span(A, B) if span is None else span, slice_bits)
    return need if need <= MAX_SLICES else None


def auto_moduli(A: np.ndarray, B: np.ndarray, *, max_moduli: int = MAX_MODULI,
                span: np.ndarray | None = None) -> int | None:
    """Scheme II's automatic count (``moduli="auto"``) for float64 A, B: the fewest moduli
    (2..``max_moduli``) whose integer matrices keep FP64 accuracy for every dot product's
    exponent span (``algorithms.adp.capacity``), or None where none does."""
    span = adp.exponent_span(A, B) if span is None else span
    return next((n for n in range(2, max_moduli + 1)
                 if adp.capacity(*_crt_bits(A.shape[1], _moduli(n)), span) >= 0), None)


def _crt_bits(K: int, moduli: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Scheme II: the bits alpha (rows of A) and beta (columns of B) the integer matrices
    keep so that exact CRT recovery holds, 2^(alpha + beta) K <= M/2 with M the product of
    the moduli (as 1-element arrays, ``algorithms.adp.capacity``'s form)."""
    bits = (math.prod(moduli) // 2 // max(K, 1)).bit_length() - 1
    return np.array([bits // 2]), np.array([bits - bits // 2])


def _scaled_integers(X: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``trunc(X 2^shift)`` of any width, as ``(q, t)`` with value ``q 2^t``: ``q`` an int64
    below 2^53 in magnitude, ``t >= 0`` (scheme II's integer matrices may need more than
    the 63 bits of an int64)."""
    frac, ex = np.frexp(X)                        # X = frac 2^ex, frac with 53 significant bits
    total = ex.astype(np.int64) + shift
    t = np.maximum(total - 53, 0)
    return np.trunc(np.ldexp(frac, total - t)).astype(np.int64), t


def _residues(Xi: tuple[np.ndarray, np.ndarray], m: int) -> np.ndarray:
    """``q 2^t`` mod m in [-floor(m/2), ceil(m/2) - 1] (int8 for m <= 256)."""
    q, t = Xi
    powers = np.ones(int(t.max(initial=0)) + 1, dtype=np.int64)    # 2^s mod m
    for s in range(1, powers.size):
        powers[s] = powers[s - 1] * 2 % m
    r = np.mod(q, m) * powers[t] % m
    return np.where(r >= (m + 1) // 2, r - m, r)


def _python_integers(Xi: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``q 2^t`` as Python integers (an object array), for the words."""
    q, t = Xi
    return np.frompyfunc(lambda a, b: int(a) << int(b), 2, 1)(q, t)


def ozaki(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
          model: Int8Unit | UnitSpec = INT8_UNIT, scheme: str = "I", slices: int | Literal["auto"] = 8,
          slice_bits: int = 7, products: str = "triangle", moduli: int | Literal["auto"] = 14,
          max_moduli: int = MAX_MODULI, k_chunk: int | None = None,
          return_words: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, object]]:
    """fp64 GEMM emulated on an INT8 unit by the Ozaki scheme (I) or Ozaki scheme II.

    Parameters
    ----------
    A, B:
        float64 data (finite).
    C:
        Optional; added in float64 at the end.
    model:
        The integer unit (:func:`integer_unit`): :data:`INT8_UNIT` (NVIDIA IMMA, the
        default) or any s8 x s8 integer preset, unit file or model (``"MI300X:s8:s32"``,
        ``"H100:s8:s32:satfinite"``); a floating-point or u8 unit raises ValueError.  The
        unit's GEMMs are issued in K-chunks that cannot leave int32, so wrapping and
        saturating units give the same, exact, products.
    scheme:
        ``"I"`` (default, slices) or ``"II"`` (CRT).
    slices, slice_bits:
        Scheme I: number of slices per operand (default 8) and magnitude bits per
        slice (default 7: int8 without -128, as ozIMMU); at most :data:`MAX_SLICES`
        slices.  ``slices="auto"``: the fewest slices that keep FP64 accuracy for the
        inputs' exponent span (``algorithms.adp.slices_needed``, after ADP, Schwarz
        et al., arXiv:2511.13778); where :data:`MAX_SLICES` cannot, the product falls
        back to native FP64 (float64), and the words say so.
    products:
        Scheme I: ``"triangle"`` (default: slice pairs with s + t <= slices + 1, the
        Ozaki scheme's usual truncation) or ``"all"``.  The float64 sum takes the
        products smallest first (decreasing s + t).
    moduli:
        Scheme II: number of moduli (default 14, pairwise coprime, <= 256; at most
        :data:`MAX_MODULI`).  The integer matrices get as many bits as exact CRT recovery
        allows: 2^(alpha + beta) K < M / 2 with M the product of the moduli.  ``moduli="auto"``: the fewest moduli whose bits cover the inputs'
        exponent span at FP64 accuracy (``algorithms.adp.capacity``), up to
        ``max_moduli``, else a reported fallback to native FP64.
    k_chunk:
        Largest K per call of the unit; default the largest that cannot overflow
        int32 (K * 127^2 for scheme I with 7-bit slices, K * 128^2 for scheme II).
    return_words:
        Also return what was decided and the words: ``unit``, ``scheme``, ``k_chunk``,
        ``slices`` or ``moduli``, ``auto``, ``exponent_span``, ``fallback`` (and its
        ``reason``), the slices / residue data and the scalings.

    Returns
    -------
    float64 array, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    unit = integer_unit(model)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r}: expected 'I' (slices) or 'II' (CRT)")
    K = A64.shape[1]
    if scheme == "I":
        if not (isinstance(slice_bits, int) and 1 <= slice_bits <= 7):
            raise ValueError(f"slice_bits={slice_bits!r}: expected 1..7 (a signed int8 slice)")
        if slices != "auto" and not (isinstance(slices, int) and 1 <= slices <= MAX_SLICES):
            raise ValueError(f"slices={slices!r}: expected 1..{MAX_SLICES} or 'auto'")
        if products not in ("triangle", "all"):
            raise ValueError(f"products={products!r}: expected 'triangle' or 'all'")
        limit = _max_k((2**slice_bits - 1) ** 2)
    else:
        if not (isinstance(max_moduli, int) and 2 <= max_moduli <= MAX_MODULI):
            raise ValueError(f"max_moduli={max_moduli!r}: expected 2..{MAX_MODULI}")
        if moduli != "auto" and not (isinstance(moduli, int) and 2 <= moduli <= MAX_MODULI):
            raise ValueError(f"moduli={moduli!r}: expected 2..{MAX_MODULI} moduli or 'auto'")
        limit = _max_k(128**2)
    if k_chunk is None:
        k_chunk = limit
    if not (isinstance(k_chunk, int) and 1 <= k_chunk <= limit):
        raise ValueError(f"k_chunk={k_chunk!r}: expected 1..{limit} (int32 accumulator without overflow)")
    decided: dict[str, object] = {"unit": unit.name or unit.preset.describe(), "scheme": scheme, "k_chunk": k_chunk,
                                  "auto": (slices if scheme == "I" else moduli) == "auto", "fallback": False}
    if decided["auto"]:
        span = adp.exponent_span(A64, B64)
        decided["exponent_span"] = int(span.max(initial=0))
        if scheme == "I":
            chosen = auto_slices(A64, B64, slice_bits=slice_bits, span=span)
            reason = (f"the exponent span {decided['exponent_span']} needs "
                      f"{adp.slices_needed(span, slice_bits)} slices of {slice_bits} bits, more than {MAX_SLICES}")
        else:
            chosen = auto_moduli(A64, B64, max_moduli=max_moduli, span=span)
            reason = f"the exponent span {decided['exponent_span']} exceeds the capacity of {max_moduli} moduli"
        if chosen is None:
            decided.update({"fallback": True, "reason": reason + ": native FP64 (float64) product returned"})
            D = A64 @ B64 if C64 is None else A64 @ B64 + C64
            return (D, decided) if return_words else D
        slices, moduli = (chosen, moduli) if scheme == "I" else (slices, chosen)
    if scheme == "I":
        decided["slices"] = slices
    else:
        assert isinstance(moduli, int)
        decided["moduli"] = _moduli(moduli)
    eA = _exponents(A64, axis=1)
    eB = _exponents(B64, axis=0)
    if scheme == "I":
        assert isinstance(slices, int)
        As = _slices(A64, eA, 1, slices, slice_bits)
        Bs = _slices(B64, eB, 0, slices, slice_bits)
        idx = [(s, t) for s in range(1, slices + 1) for t in range(1, slices + 1)
               if products == "all" or s + t <= slices + 1]
        idx.sort(key=lambda st: (-(st[0] + st[1]), st))
        D = np.zeros((A64.shape[0], B64.shape[1]))
        for s, t in idx:
            D += np.ldexp(_chunked(unit, As[s - 1], Bs[t - 1], k_chunk), -slice_bits * (s + t))
        D = np.ldexp(D, eA[:, None] + eB[None, :])
        words: dict[str, object] = {"A": As, "B": Bs, "pairs": idx}
    else:
        assert isinstance(moduli, int)
        ms = _moduli(moduli)
        Mbig = math.prod(ms)
        alpha_row, beta_col = _crt_bits(K, ms)
        alpha, beta = int(alpha_row[0]), int(beta_col[0])
        Ai = _scaled_integers(A64, (alpha - eA)[:, None])
        Bi = _scaled_integers(B64, (beta - eB)[None, :])
        acc = np.zeros((A64.shape[0], B64.shape[1]), dtype=object)
        for m in ms:
            Ml = Mbig // m
            P = _chunked(unit, _residues(Ai, m).astype(np.float64), _residues(Bi, m).astype(np.float64),
                         k_chunk).astype(np.int64) % m
            acc = acc + P.astype(object) * (Ml * pow(Ml, -1, m))
        acc = acc % Mbig
        acc = np.where(acc > Mbig // 2, acc - Mbig, acc)
        exact = acc.astype(np.float64)  # Python int -> float64 rounds to nearest even
        D = np.ldexp(exact, -(alpha - eA)[:, None] - (beta - eB)[None, :])
        words = {"A_int": _python_integers(Ai), "B_int": _python_integers(Bi), "moduli": ms, "alpha": alpha,
                 "beta": beta}
    if C64 is not None:
        D = D + C64
    if return_words:
        words.update({"row_exponent": eA, "col_exponent": eB, **decided})
        return D, words
    return D
