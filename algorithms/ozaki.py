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

from dataclasses import dataclass
from math import gcd

import numpy as np

from workbench.matmul import product as matmul
from workbench.engine.model import Model
from workbench.units import resolve

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

    @property
    def preset(self) -> Model:
        """The catalogue preset (a :class:`workbench.units.catalogue.Preset`) this unit runs on."""
        return resolve(self.name)

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
    """Signed ``bits``-bit slices of X * 2^-e (truncated): X 2^-e ~= sum_s x_s 2^(-bits s)."""
    scaled = np.ldexp(X, -np.expand_dims(e, axis))
    q = np.trunc(np.ldexp(np.abs(scaled), bits * slices)).astype(np.int64)
    sign = np.sign(scaled).astype(np.int64)
    mask = (1 << bits) - 1
    return [(sign * ((q >> (bits * (slices - s))) & mask)).astype(np.float64) for s in range(1, slices + 1)]


def _moduli(count: int) -> list[int]:
    """``count`` pairwise coprime moduli, greedily from 256 down (residues fit int8)."""
    out: list[int] = []
    m = 256
    while len(out) < count and m > 1:
        if all(gcd(m, x) == 1 for x in out):
            out.append(m)
        m -= 1
    return out


def _symmetric_mod(X: np.ndarray, m: int) -> np.ndarray:
    """X mod m in [-floor(m/2), ceil(m/2) - 1] (int8 for m <= 256)."""
    r = np.mod(X, m)
    return np.where(r >= (m + 1) // 2, r - m, r)


def ozaki(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
          model: Int8Unit = INT8_UNIT, scheme: str = "I", slices: int = 8, slice_bits: int = 7,
          products: str = "triangle", moduli: int = 14, k_chunk: int | None = None,
          return_words: bool = False) -> np.ndarray | tuple[np.ndarray, dict[str, object]]:
    """fp64 GEMM emulated on the exact INT8 unit by the Ozaki scheme (I) or Ozaki scheme II.

    Parameters
    ----------
    A, B:
        float64 data (finite).
    C:
        Optional; added in float64 at the end.
    model:
        The INT8 unit (:data:`INT8_UNIT`); a floating-point preset raises ValueError.
    scheme:
        ``"I"`` (default, slices) or ``"II"`` (CRT).
    slices, slice_bits:
        Scheme I: number of slices per operand (default 8) and magnitude bits per
        slice (default 7: int8 without -128, as ozIMMU).  ``slices * slice_bits``
        must not exceed 62.
    products:
        Scheme I: ``"triangle"`` (default: slice pairs with s + t <= slices + 1, the
        Ozaki scheme's usual truncation) or ``"all"``.  The float64 sum takes the
        products smallest first (decreasing s + t).
    moduli:
        Scheme II: number of moduli (default 14, pairwise coprime, <= 256).  The
        integer matrices get as many bits as exact CRT recovery allows:
        2^(alpha + beta) K < M / 2 with M the product of the moduli (at most 62
        bits each).
    k_chunk:
        Largest K per call of the unit; default the largest that cannot overflow
        int32 (K * 127^2 for scheme I with 7-bit slices, K * 128^2 for scheme II).
    return_words:
        Also return the slices / residue data and scalings.

    Returns
    -------
    float64 array, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    if not isinstance(model, Int8Unit):
        raise ValueError("ozaki runs on the exact INT8 matrix unit: pass model=algorithms.INT8_UNIT (or omit "
                         f"model=), not a floating-point preset ({type(model).__name__})")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r}: expected 'I' (slices) or 'II' (CRT)")
    K = A64.shape[1]
    if scheme == "I":
        if not (isinstance(slice_bits, int) and 1 <= slice_bits <= 7):
            raise ValueError(f"slice_bits={slice_bits!r}: expected 1..7 (a signed int8 slice)")
        if not (isinstance(slices, int) and slices >= 1 and slices * slice_bits <= 62):
            raise ValueError(f"slices={slices!r}: expected >= 1 with slices * slice_bits <= 62")
        if products not in ("triangle", "all"):
            raise ValueError(f"products={products!r}: expected 'triangle' or 'all'")
        limit = _max_k((2**slice_bits - 1) ** 2)
    else:
        if not (isinstance(moduli, int) and 2 <= moduli <= 40):
            raise ValueError(f"moduli={moduli!r}: expected 2..40 moduli")
        limit = _max_k(128**2)
    if k_chunk is None:
        k_chunk = limit
    if not (isinstance(k_chunk, int) and 1 <= k_chunk <= limit):
        raise ValueError(f"k_chunk={k_chunk!r}: expected 1..{limit} (int32 accumulator without overflow)")
    eA = _exponents(A64, axis=1)
    eB = _exponents(B64, axis=0)
    if scheme == "I":
        As = _slices(A64, eA, 1, slices, slice_bits)
        Bs = _slices(B64, eB, 0, slices, slice_bits)
        idx = [(s, t) for s in range(1, slices + 1) for t in range(1, slices + 1)
               if products == "all" or s + t <= slices + 1]
        idx.sort(key=lambda st: (-(st[0] + st[1]), st))
        D = np.zeros((A64.shape[0], B64.shape[1]))
        for s, t in idx:
            D += np.ldexp(_chunked(model, As[s - 1], Bs[t - 1], k_chunk), -slice_bits * (s + t))
        D = np.ldexp(D, eA[:, None] + eB[None, :])
        words: dict[str, object] = {"A": As, "B": Bs, "pairs": idx}
    else:
        ms = _moduli(moduli)
        Mbig = 1
        for m in ms:
            Mbig *= m
        bits = (Mbig // 2 // max(K, 1)).bit_length() - 1  # 2^bits * K <= M/2
        alpha = min(62, bits // 2)
        beta = min(62, bits - alpha)
        Ai = np.trunc(np.ldexp(A64, (alpha - eA)[:, None])).astype(np.int64)
        Bi = np.trunc(np.ldexp(B64, (beta - eB)[None, :])).astype(np.int64)
        acc = np.zeros((A64.shape[0], B64.shape[1]), dtype=object)
        for m in ms:
            Ml = Mbig // m
            P = _chunked(model, _symmetric_mod(Ai, m).astype(np.float64), _symmetric_mod(Bi, m).astype(np.float64),
                         k_chunk).astype(np.int64) % m
            acc = acc + P.astype(object) * (Ml * pow(Ml, -1, m))
        acc = acc % Mbig
        acc = np.where(acc > Mbig // 2, acc - Mbig, acc)
        exact = acc.astype(np.float64)  # Python int -> float64 rounds to nearest even
        D = np.ldexp(exact, -(alpha - eA)[:, None] - (beta - eB)[None, :])
        words = {"A_int": Ai, "B_int": Bi, "moduli": ms, "alpha": alpha, "beta": beta}
    if C64 is not None:
        D = D + C64
    if return_words:
        words.update({"row_exponent": eA, "col_exponent": eB})
        return D, words
    return D
