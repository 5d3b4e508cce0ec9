"""Automatic slice / moduli counts from the inputs' exponent span (after ADP).

D. Schwarz et al., "Automatic Dynamic Precision (ADP)", arXiv:2511.13778
(SCA/HPCAsia 2026).  Only the paper's abstract was retrievable here: ADP chooses the
number of slices of an Ozaki decomposition with a conservative "Exponent Span
Capacity" (ESC) estimate, slices unsigned magnitudes, and falls back to native FP64
where the decomposition cannot reach FP64 accuracy.  The estimate below is derived
here from that description (not copied from the paper, whose formula could not be
read), and states its own bound:

* Scale each row of A by its largest exponent ``eA_i`` (``|a_ik| < 2^eA_i``) and each
  column of B by ``eB_j``.  A decomposition that keeps ``alpha_i`` bits of row i (error
  of each entry below ``2^(eA_i - alpha_i)``) and ``beta_j`` bits of column j makes a
  dot-product error below ``K 2^(eA_i + eB_j) (2^-alpha_i + 2^-beta_j)``.
* Native DGEMM's own worst-case bound is ``K u sum_k |a_ik b_kj| >= K u 2^(E_ij - 2)``
  with ``E_ij = max_k (e(a_ik) + e(b_kj))`` (frexp exponents, ``u = 2^-53``).
* So the decomposition is at FP64 level (within native DGEMM's bound) where
  ``min(alpha_i, beta_j) >= 56 + span_ij``, ``span_ij = eA_i + eB_j - E_ij >= 0``: the
  *exponent span* of the pair, how far the largest actual product lies below the
  scaling of its row and column.  ``min(alpha_i, beta_j) - 56`` is the decomposition's
  *exponent span capacity*; the count is the smallest whose capacity covers every span,
  and where the largest count allowed cannot, the algorithm reports a fallback to
  native FP64 (and computes the product in float64, as ADP's fallback does).

The signed-magnitude slices of :func:`algorithms.ozaki` (``sign(x) * |digit|``) are the
unsigned slicing of ADP applied to the magnitude; unsigned 8-bit digits proper need a
u8 x s8 integer unit, which :class:`~algorithms.ozaki.Int8Unit` does not model.
"""

from __future__ import annotations

import math

import numpy as np

#: Bits a row/column must keep, beyond its exponent span, for FP64-level accuracy (see module doc).
FP64_BITS = 56


def _exp(X: np.ndarray) -> np.ndarray:
    """frexp exponents (|x| in [2^(e-1), 2^e)); zeros get a very small exponent."""
    e = np.frexp(X)[1].astype(np.int64)
    return np.where(X == 0, np.int64(-(1 << 20)), e)


def exponent_span(A: np.ndarray, B: np.ndarray, *, k_block: int = 64) -> np.ndarray:
    """``span_ij = eA_i + eB_j - max_k (e(a_ik) + e(b_kj))`` for every (i, j) (0 where
    every product a_ik b_kj is zero): the exponent span of each dot product (module doc)."""
    eAe = _exp(A)
    eBe = _exp(B)
    eA = eAe.max(axis=1)
    eB = eBe.max(axis=0)
    E = np.full((A.shape[0], B.shape[1]), -(1 << 22), dtype=np.int64)
    for k0 in range(0, A.shape[1], k_block):      # max-plus product, a block of K at a time
        blk = eAe[:, k0:k0 + k_block, None] + eBe[None, k0:k0 + k_block, :]
        np.maximum(E, blk.max(axis=1), out=E)
    span = eA[:, None] + eB[None, :] - E
    return np.where(E < -(1 << 19), 0, span)


def slices_needed(span: np.ndarray, slice_bits: int) -> int:
    """Ozaki scheme I: slices of ``slice_bits`` bits keeping ``FP64_BITS + max span`` bits
    (one bit more for the products the triangle drops)."""
    bits = FP64_BITS + 1 + int(span.max(initial=0))
    return math.ceil(bits / slice_bits)


def capacity(alpha: np.ndarray, beta: np.ndarray, span: np.ndarray) -> int:
    """Smallest margin ``min(alpha_i, beta_j) - FP64_BITS - span_ij`` over (i, j): >= 0 is FP64 level."""
    if span.size == 0:
        return 0
    return int((np.minimum(alpha[:, None], beta[None, :]) - FP64_BITS - span).min())
