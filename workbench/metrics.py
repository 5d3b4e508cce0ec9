"""Error metrics of computed matrix products against a reference.

Every function names its formula; ``C_hat`` is the computed result, ``C`` the
reference (ideally :func:`workbench.exact.gemm`), ``A`` and ``B`` the factors.
Differences ``C_hat - C`` are formed in float64 (relative error at most 2^-53 per
entry, negligible against the errors measured here).  Matrix norms follow Higham,
*Accuracy and Stability of Numerical Algorithms* (2002), Sec. 6.2: ``||X||_inf`` is
the largest absolute row sum, ``||X||_F`` the Frobenius norm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .formats import FloatFormat
from .formats import format as _get_format

__all__ = [
    "normwise_error_inf",
    "relative_frobenius_error",
    "componentwise_error",
    "ulp_error",
    "SignedErrorStats",
    "signed_error_stats",
]


def _real(x: Any, name: str, ndim: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or np.iscomplexobj(arr) or arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a real numeric array; got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimensions; got shape {arr.shape}")
    return arr


def _same_shape(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{na}.shape={a.shape} and {nb}.shape={b.shape} differ")


def _as_matrix(x: np.ndarray) -> np.ndarray:
    return x.reshape(1, -1) if x.ndim == 1 else x.reshape(1, 1) if x.ndim == 0 else x


def _check_product_shapes(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"A and B must be 2-D; got A.shape={A.shape}, B.shape={B.shape}")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: A.shape={A.shape}, B.shape={B.shape}")
    if C.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"C.shape={C.shape} does not match A @ B, which has shape {(A.shape[0], B.shape[1])}")


def _inf_norm(X: np.ndarray) -> float:
    X = _as_matrix(X)
    return float(np.abs(X).sum(axis=1).max()) if X.size else 0.0


def normwise_error_inf(C_hat: Any, C: Any, A: Any, B: Any) -> float:
    """``||C_hat - C||_inf / (||A||_inf ||B||_inf)``: Khattak & Mikaitis (2025), Figure 7.

    The norm-wise error of the multi-word experiment (the ``error`` column of the
    paper's data; infinity norms are largest absolute row sums).  The bound it is
    compared with is :func:`workbench.bounds.multiword_bound`.  Returns ``0.0``
    when ``A`` or ``B`` is zero and ``C_hat == C``, ``inf`` when they are zero
    and ``C_hat != C``.
    """
    C_hat, C = _real(C_hat, "C_hat", (2,)), _real(C, "C", (2,))
    A, B = _real(A, "A", (2,)), _real(B, "B", (2,))
    _same_shape(C_hat, C, "C_hat", "C")
    _check_product_shapes(C, A, B)
    num = _inf_norm(C_hat - C)
    den = _inf_norm(A) * _inf_norm(B)
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


def relative_frobenius_error(C_hat: Any, C: Any) -> float:
    """``||C_hat - C||_F / ||C||_F`` (relative error in the Frobenius norm).

    ``0.0`` if both are zero, ``inf`` if ``C`` is zero and ``C_hat`` is not.
    """
    C_hat, C = _real(C_hat, "C_hat"), _real(C, "C")
    _same_shape(C_hat, C, "C_hat", "C")
    num = float(np.linalg.norm((C_hat - C).ravel()))
    den = float(np.linalg.norm(C.ravel()))
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


def componentwise_error(C_hat: Any, C: Any, A: Any, B: Any, addend: Any = None) -> float:
    """``max_ij |C_hat - C|_ij / (|A| |B|)_ij``: component-wise error of a product.

    The quantity bounded by the component-wise bounds ``|C_hat - C| <= c |A||B|``
    of Higham (2002, eq. 3.13) and Blanchard et al. (2020, Sec. 3).  With
    ``addend`` (the ``beta * C0`` of ``alpha A B + beta C0``; pass ``alpha A`` as
    ``A``) the denominator is ``|A||B| + |addend|``.  Entries with a zero
    denominator count as ``0`` if exact and ``inf`` otherwise.
    """
    C_hat, C = _real(C_hat, "C_hat", (2,)), _real(C, "C", (2,))
    A, B = _real(A, "A", (2,)), _real(B, "B", (2,))
    _same_shape(C_hat, C, "C_hat", "C")
    _check_product_shapes(C, A, B)
    den = np.abs(A) @ np.abs(B)
    if addend is not None:
        add = _real(addend, "addend", (0, 2))
        den = den + np.abs(add)
    num = np.abs(C_hat - C)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, 0.0))
    return float(ratio.max()) if ratio.size else 0.0


def _ulp(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Unit in the last place of |x| in ``fmt``: 2^(max(floor(log2|x|), emin) - p + 1)."""
    _, ex = np.frexp(np.abs(x))  # |x| = f 2^ex, f in [0.5, 1): floor(log2|x|) = ex - 1
    e = np.maximum(ex.astype(np.int64) - 1, fmt.emin)
    e = np.where(x == 0, fmt.emin, e)
    return np.ldexp(1.0, (e - fmt.p + 1).astype(np.int32))


def ulp_error(x_hat: Any, x: Any, fmt: str | FloatFormat) -> np.ndarray:
    """``|x_hat - x| / ulp_fmt(x)``: error in units in the last place of ``fmt``.

    ``ulp_fmt(x) = 2^(max(e, emin) - p + 1)`` with ``e = floor(log2 |x|)`` the
    exponent of the reference value (Muller et al., *Handbook of Floating-Point
    Arithmetic*, 2018, Def. 2.1 in the "Goldberg" form; below ``2^emin`` the ulp
    is the subnormal spacing ``2^(emin - p + 1)``).  A correctly rounded
    (RNE) result has ``ulp_error <= 0.5``, a faithful one ``< 1``; results beyond
    the format's range are measured with the ulp of its binade.
    """
    f = fmt if isinstance(fmt, FloatFormat) else _get_format(fmt)
    x_hat, x = _real(x_hat, "x_hat"), _real(x, "x")
    _same_shape(x_hat, x, "x_hat", "x")
    if not np.isfinite(x).all():
        raise ValueError("x (the reference) must be finite: an ulp of NaN or Inf does not exist")
    return np.abs(x_hat - x) / _ulp(x, f)


@dataclass(frozen=True)
class SignedErrorStats:
    """Statistics of the signed errors ``d = (C_hat - C) / scale``.

    ``mean`` is the bias (systematic error; RZ and truncated alignment give a
    negative bias for positive results), ``median``, ``std`` (population),
    ``max_abs``, and the fractions of positive, negative and zero errors.
    """

    count: int
    mean: float
    median: float
    std: float
    max_abs: float
    frac_positive: float
    frac_negative: float
    frac_zero: float


def signed_error_stats(C_hat: Any, C: Any, scale: Any = None) -> SignedErrorStats:
    """Bias statistics of ``d = (C_hat - C) / scale`` over all entries.

    ``scale`` is ``None`` (absolute errors), ``"relative"`` (``|C|``; entries with
    ``C == 0`` are skipped), a format name or :class:`FloatFormat` (errors in ulps
    of that format, see :func:`ulp_error`, keeping the sign), or an array
    broadcastable to ``C`` (e.g. ``|A||B|``).  Entries with a zero scale are
    skipped.
    """
    C_hat, C = _real(C_hat, "C_hat"), _real(C, "C")
    _same_shape(C_hat, C, "C_hat", "C")
    diff = C_hat - C
    if scale is None:
        s = np.ones_like(C)
    elif isinstance(scale, str) and scale == "relative":
        s = np.abs(C)
    elif isinstance(scale, (str, FloatFormat)):
        f = scale if isinstance(scale, FloatFormat) else _get_format(scale)
        s = _ulp(C, f)
    else:
        s = np.broadcast_to(_real(scale, "scale"), C.shape)
        if (s < 0).any():
            raise ValueError("scale must be nonnegative")
    keep = s > 0
    d = diff[keep] / s[keep]
    if d.size == 0:
        raise ValueError("no entries with a nonzero scale: the statistics are undefined")
    return SignedErrorStats(
        count=int(d.size),
        mean=float(d.mean()),
        median=float(np.median(d)),
        std=float(d.std()),
        max_abs=float(np.abs(d).max()),
        frac_positive=float((d > 0).mean()),
        frac_negative=float((d < 0).mean()),
        frac_zero=float((d == 0).mean()),
    )
