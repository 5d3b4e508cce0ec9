"""Batched evaluation of candidate dot products through :func:`workbench.gemm`.

A candidate is one dot product ``d = unit(a, b, c)`` with ``a``, ``b`` of length K and a
scalar ``c`` (Valpey et al. 2025 Section 4 fix one row of A, one column of B and one
element of C in exactly this way).  Two batched layouts are used, each one ``gemm``
call per chunk, never one Python call per candidate:

* *pairs*: candidates given as rows ``(a[r], b[r], c[r])``; a chunk of n rows is run as
  ``gemm(a_chunk, b_chunk.T, C)`` with ``C[r, :] = c[r]`` and the diagonal is kept
  (n^2 K simulated MACs for n answers; used for structured candidates and shrinking,
  where n is a few hundred);
* *cross*: ``gemm(A, B, C)`` where every (row of A, column of B, entry of C) is a
  candidate (used by the randomised search: n*m answers for n*m*K MACs).
"""

from __future__ import annotations

import numpy as np

from ..engine.model import Model


def _chunk(K: int) -> int:
    """Rows per pairs-layout gemm call: about 4e6 simulated MACs per call, so that the
    fixed cost of a call (checks, decomposition, thread start) stays small."""
    return int(min(1024, max(128, (4e6 / max(K, 1)) ** 0.5)))


def gemm_f64(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``workbench.gemm`` as float64 (the values are exactly the hardware's)."""
    from ..matmul.product import gemm

    return np.asarray(gemm(A, B, C, model=model), dtype=np.float64)


def eval_pairs(model: Model, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``d[r] = unit(a[r], b[r], c[r])`` for every row, a few hundred rows per gemm call."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    n = a.shape[0]
    out = np.empty(n)
    step = _chunk(a.shape[1])
    for s in range(0, n, step):
        e = min(n, s + step)
        m = e - s
        C = np.repeat(c[s:e, None], m, axis=1)
        D = gemm_f64(model, a[s:e], b[s:e].T, C)
        out[s:e] = np.diagonal(D)
    return out


def eval_cross(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``D[i, j] = unit(A[i], B[:, j], C[i, j])``: one gemm call."""
    return gemm_f64(model, A, B, C)


COMPARISONS = ("bits", "value")


def agree(x: np.ndarray, y: np.ndarray, compare: str = "bits") -> np.ndarray:
    """Elementwise: do two outputs count as equal?  ``"bits"``: :func:`same_bits`;
    ``"value"``: equal numbers (+0 equals -0, NaN equals NaN), for users who care about
    different values rather than the sign of a zero."""
    if compare == "bits":
        return same_bits(x, y)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return (np.isnan(x) & np.isnan(y)) | (x == y)


def same_bits(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
    """Elementwise: do two float64 arrays hold the same output (NaN equals NaN, +0
    differs from -0)?  Outputs of the engine carry canonical NaNs, so comparing values
    this way is comparing the hardware's bits."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    return both_nan | ((x == y) & (np.signbit(x) == np.signbit(y)))
