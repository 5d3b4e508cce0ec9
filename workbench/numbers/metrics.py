"""Error metrics of computed matrix products against a reference.

Every function names its formula; ``C_hat`` is the computed result, ``C`` the
reference (ideally :func:`workbench.numbers.exact.gemm`), ``A`` and ``B`` the factors.
Every quantity is computed over the whole float64 range, from subnormals to
``1.8e308``: differences, sums, squares and products are formed on values scaled
by powers of two (exact) and carried as ``(mantissa, exponent)`` pairs, so nothing
overflows or underflows before the final ratio (Higham 2002, Sec. 27.8 on
scaling norms; LAPACK's ``dnrm2`` does the same for the 2-norm).  Each difference
``C_hat - C`` has a relative error of at most 2^-53, negligible against the errors
measured here.  Matrix norms follow Higham,
*Accuracy and Stability of Numerical Algorithms* (2002), Sec. 6.2: ``||X||_inf`` is
the largest absolute row sum, ``||X||_F`` the Frobenius norm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .formats import FloatFormat
from .validation import real_array
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
    return real_array(x, name, ndim=ndim)


# Extended-range arithmetic on nonnegative values carried as (m, e), value = m * 2**e,
# with m in [0.5, 1) or m == 0 (then e is _ZERO_EXP, below every real exponent).
_ZERO_EXP = -(1 << 20)
_EXP_CLIP = 1 << 21  # exponent differences beyond any float64 ratio, safe for ldexp


def _ldexp(m: np.ndarray, e: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore"):  # Inf / 0 where the value is out of range
        return np.ldexp(m, np.clip(e, -_EXP_CLIP, _EXP_CLIP).astype(np.int64))


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|x| as (m, e); Inf and NaN keep m = |x| (they propagate through the ratios)."""
    m, e = np.frexp(np.abs(x))
    e = e.astype(np.int64)
    return m, np.where(m == 0, _ZERO_EXP, e)


def _abs_diff(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|a - b| as (m, e), formed on a and b scaled by the power of two of the larger
    (exact), so that neither 1e308 - (-1e308) overflows nor 2e-300 - 1e-300 loses bits."""
    big = np.maximum(np.abs(a), np.abs(b))
    _, k = np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))
    k = k.astype(np.int64)
    with np.errstate(invalid="ignore"):     # Inf - Inf is NaN, which propagates (no warning)
        m, e = _split(_ldexp(a, -k) - _ldexp(b, -k))
    return m, np.where(m == 0, _ZERO_EXP, e + k)


def _sum(m: np.ndarray, e: np.ndarray, axis: int | None = None, power: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """sum of (m * 2**e)**power along ``axis`` as (m, e) of that sum."""
    top = np.max(e, axis=axis, keepdims=True) if e.size else np.zeros((1,) * e.ndim, np.int64)
    total = np.sum(_ldexp(m, e - top) ** power, axis=axis, keepdims=True)
    sm, se = _split(total)
    se = np.where(sm == 0, _ZERO_EXP, se + power * top)
    if axis is None:
        return sm.reshape(()), se.reshape(())
    return np.squeeze(sm, axis), np.squeeze(se, axis)


def _add(m1: np.ndarray, e1: np.ndarray, m2: np.ndarray, e2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    top = np.maximum(e1, e2)
    sm, se = _split(_ldexp(m1, e1 - top) + _ldexp(m2, e2 - top))
    return sm, np.where(sm == 0, _ZERO_EXP, se + top)


def _sqrt(m: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sqrt(m 2^e) as (m', e'): the exponent halved exactly (its odd bit moved into m)."""
    odd = e % 2
    return np.sqrt(_ldexp(m, odd)), (e - odd) // 2


def _ratio(mn: np.ndarray, en: np.ndarray, md: np.ndarray, ed: np.ndarray) -> np.ndarray:
    """(mn 2^en) / (md 2^ed) as float64 (Inf/0 only where the ratio itself is out of
    range); a zero denominator gives 0 for a zero numerator and Inf otherwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _ldexp(mn / np.where(md == 0, 1.0, md), en - ed)
    return np.where(md == 0, np.where(mn == 0, 0.0, np.inf), r)


def _max(m: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest of a 1-D array of (m, e) values (NaN wins, as in numpy)."""
    if np.isnan(m).any():
        return np.asarray(np.nan), np.asarray(0)
    i = int(np.lexsort((m, np.where(m == 0, _ZERO_EXP, e)))[-1])
    return m[i], e[i]


def _same_shape(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{na}.shape={a.shape} and {nb}.shape={b.shape} differ")


def _check_product_shapes(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"A and B must be 2-D; got A.shape={A.shape}, B.shape={B.shape}")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: A.shape={A.shape}, B.shape={B.shape}")
    if C.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"C.shape={C.shape} does not match A @ B, which has shape {(A.shape[0], B.shape[1])}")


def _inf_norm(m: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest absolute row sum of a matrix given as (m, e), as (m, e)."""
    if m.size == 0:
        return np.asarray(0.0), np.asarray(_ZERO_EXP)
    return _max(*_sum(m, e, axis=1))


def normwise_error_inf(C_hat: Any, C: Any, A: Any, B: Any) -> float:
    """``||C_hat - C||_inf / (||A||_inf ||B||_inf)``: Khattak & Mikaitis (2025), Figure 7.

    The norm-wise error of the multi-word experiment (the ``error`` column of the
    paper's data; infinity norms are largest absolute row sums).  The bound it is
    compared with is :func:`workbench.matmul.bounds.multiword_bound`.  Returns ``0.0``
    when ``A`` or ``B`` is zero and ``C_hat == C``, ``inf`` when they are zero
    and ``C_hat != C``.
    """
    C_hat, C = _real(C_hat, "C_hat", (2,)), _real(C, "C", (2,))
    A, B = _real(A, "A", (2,)), _real(B, "B", (2,))
    _same_shape(C_hat, C, "C_hat", "C")
    _check_product_shapes(C, A, B)
    mn, en = _inf_norm(*_abs_diff(C_hat, C))
    ma, ea = _inf_norm(*_split(A))
    mb, eb = _inf_norm(*_split(B))
    md, ed = _split(ma * mb)
    return float(_ratio(mn, en, md, ed + ea + eb))


def relative_frobenius_error(C_hat: Any, C: Any) -> float:
    """``||C_hat - C||_F / ||C||_F`` (relative error in the Frobenius norm).

    ``0.0`` if both are zero, ``inf`` if ``C`` is zero and ``C_hat`` is not.
    """
    C_hat, C = _real(C_hat, "C_hat"), _real(C, "C")
    _same_shape(C_hat, C, "C_hat", "C")
    mn, en = _sum(*_abs_diff(C_hat.ravel(), C.ravel()), power=2)
    md, ed = _sum(*_split(C.ravel()), power=2)
    return float(_ratio(*_sqrt(mn, en), *_sqrt(md, ed)))   # roots first: the squared ratio may overflow


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
    # |A||B| with the rows of A and the columns of B scaled by powers of two (exact)
    _, ka = _split(np.max(np.abs(A), axis=1, initial=0.0))
    _, kb = _split(np.max(np.abs(B), axis=0, initial=0.0))
    ka, kb = np.where(ka == _ZERO_EXP, 0, ka), np.where(kb == _ZERO_EXP, 0, kb)
    md, ed = _split(np.abs(_ldexp(A, -ka[:, None])) @ np.abs(_ldexp(B, -kb[None, :])))
    ed = np.where(md == 0, _ZERO_EXP, ed + ka[:, None] + kb[None, :])
    if addend is not None:
        add = np.broadcast_to(_real(addend, "addend", (0, 2)), C.shape)
        md, ed = _add(md, ed, *_split(add))
    ratio = _ratio(*_abs_diff(C_hat, C), md, ed)
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
    mn, en = _abs_diff(x_hat, x)
    return _ratio(mn, en, *_split(_ulp(x, f)))


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
    d = np.where(C_hat[keep] < C[keep], -1.0, 1.0) * _ratio(*_abs_diff(C_hat[keep], C[keep]), *_split(s[keep]))
    if d.size == 0:
        raise ValueError("no entries with a nonzero scale: the statistics are undefined")
    max_abs = float(np.abs(d).max())
    unit = max_abs if math.isfinite(max_abs) and max_abs > 0 else 1.0  # mean and std without overflow
    return SignedErrorStats(
        count=int(d.size),
        mean=float((d / unit).mean()) * unit,
        median=float(np.median(d)),
        std=float((d / unit).std()) * unit,
        max_abs=max_abs,
        frac_positive=float((d > 0).mean()),
        frac_negative=float((d < 0).mean()),
        frac_zero=float((d == 0).mean()),
    )
