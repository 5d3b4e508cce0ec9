"""A-priori error bounds that measured errors are compared against.

Functions take plain parameters (block size ``L``, fraction bits ``F``, rounding
mode, format names), not preset objects.

- :func:`block_fma_bound`: matrix product computed with a chain of block FMAs
  (Blanchard, Higham, Lopez, Mary & Pranesh, "Mixed precision block fused
  multiply-add: error analysis and application to GPU tensor cores", SIAM J. Sci.
  Comput. 42(3), C124-C141, 2020, Sec. 3), with the per-block summation error of
  a fused dot-product-add unit from Xie et al. (2025), Table 9.
- :func:`mma_sim_error_sources`: the per-model error sources of Table 9 of Xie et
  al., "MMA-Sim: bit-accurate reference model of tensor cores and matrix cores"
  (2025).
- :func:`multiword_bound`: bound (3.26) of T. Mary and M. Mikaitis, "Error analysis
  of matrix multiplication with narrow range floating-point arithmetic",
  hal-04671474 (2024), as plotted in Figure 7 of Khattak & Mikaitis (2025).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..engine import OPERATIONS
from ..engine.checks import positive_int
from ..numbers.formats import FloatFormat
from ..numbers.formats import format as _get_format

__all__ = [
    "unit_roundoff",
    "gamma",
    "block_fma_bound",
    "ErrorSource",
    "mma_sim_error_sources",
    "multiword_bound",
]

_NEAREST = ("rne", "rna", "rnz")
_DIRECTED = ("rz", "rd", "ru", "ra", "ro")


def _fmt(f: str | FloatFormat, name: str) -> FloatFormat:
    if isinstance(f, FloatFormat):
        return f
    if not isinstance(f, str):
        raise TypeError(f"{name} must be a format name or FloatFormat; got {type(f).__name__}")
    return _get_format(f)


def _check_rounding(rounding: str) -> None:
    if rounding not in _NEAREST + _DIRECTED:
        raise ValueError(
            f"rounding={rounding!r} has no deterministic error bound; expected one of "
            f"{', '.join(_NEAREST + _DIRECTED)} (see workbench.ROUNDING_MODES)"
        )


def unit_roundoff(p: int, rounding: str = "rne") -> float:
    """Relative error bound of rounding to precision ``p`` (normal range).

    ``2^-p`` for the round-to-nearest modes, ``2^(1-p)`` for directed ones and
    round-to-odd (Higham 2002, Thm. 2.2; Xie et al. 2025, Table 9: 0.5 ulp for RNE,
    1 ulp for RZ).
    """
    p = positive_int("p", p)
    _check_rounding(rounding)
    return 2.0**-p if rounding in _NEAREST else 2.0 ** (1 - p)


def gamma(k: int, u: float) -> float:
    """``gamma_k = k u / (1 - k u)`` (Higham 2002, Lemma 3.1); requires ``k u < 1``."""
    if k < 0 or u < 0:
        raise ValueError(f"gamma needs k >= 0 and u >= 0; got k={k}, u={u}")
    if k * u >= 1:
        raise ValueError(f"gamma_k is undefined for k u >= 1; got k={k}, u={u}")
    return k * u / (1 - k * u)


def block_fma_bound(
    n: int,
    L: int,
    F: int | None,
    rounding: str,
    out_format: str | FloatFormat = "fp32",
    in_format: str | FloatFormat | None = None,
    *,
    u_high: float | None = None,
) -> float:
    """Constant ``c`` with ``|C_hat - A B| <= c |A||B|`` for a chain of block FMAs.

    Model (Blanchard et al. 2020, Sec. 2.1 and Algorithm 3.1): each entry of
    ``C = A B`` (inner dimension ``n``) is computed by ``q = ceil(n / L)`` block
    FMAs ``s_i = fl_out(s_{i-1} + sum of L products)``, starting from ``s_0 = 0``.
    Inside a block, the ``L + 1`` summands are added with relative error ``delta``
    with respect to the sum of their magnitudes:

    - with ``F`` (a fused dot-product-add unit aligning at the largest exponent and
      keeping ``F`` fraction bits; Xie et al. 2025, Table 9 "fused summation"
      ``(L + 1) 2^(e_max - F)``): ``delta = (L + 1) 2^-F``, valid when the products
      are normal (``2^e_max`` is then at most the largest summand);
    - with ``u_high`` instead (Blanchard et al.'s model: products exact, summed in
      floating-point precision ``u_high``): ``delta = gamma_L(u_high)``.

    The result is rounded to ``out_format`` with ``rounding`` (relative error
    ``u_out`` = :func:`unit_roundoff`).  If ``in_format`` is given, ``A`` and ``B``
    are first rounded to it with RNE (relative error ``u_in`` each).  Induction
    over the blocks (``|s_i| <= rho (|s_{i-1}| + sum |p|)``,
    ``rho = (1 + delta)(1 + u_out)``) gives the rigorous bound returned here,

        ``c = (1 + u_in)^2 rho^q - 1``,

    whose first-order form ``2 u_in + q (delta + u_out)`` is Blanchard et al.'s
    ``2 u_low + n u_high + (n / b) u_FMA`` (their Sec. 3, the bound of Algorithm
    3.1 with block size ``b = L``).  Underflow and overflow are not covered.
    """
    n = positive_int("n", n)
    L = positive_int("L", L)
    _check_rounding(rounding)
    if (F is None) == (u_high is None):
        raise ValueError("give exactly one of F (fused summation fraction bits) and u_high (internal precision)")
    if F is not None:
        F = positive_int("F", F)
        delta = (L + 1) * 2.0**-F
    else:
        if not (0 < u_high < 1):  # type: ignore[operator]
            raise ValueError(f"u_high must be in (0, 1); got {u_high!r}")
        delta = gamma(L, float(u_high))  # type: ignore[arg-type]
    out = _fmt(out_format, "out_format")
    u_out = unit_roundoff(out.p, rounding)
    u_in = 0.0 if in_format is None else _fmt(in_format, "in_format").unit_roundoff
    q = -(-n // L)
    rho_log = math.log1p(delta) + math.log1p(u_out)
    return math.expm1(2 * math.log1p(u_in) + q * rho_log)


@dataclass(frozen=True)
class ErrorSource:
    """One row of Xie et al. (2025), Table 9: an error source and its bound.

    The bound is ``coefficient * 2^(reference + offset)`` where ``reference`` is
    ``"e_max"`` (exponent of the largest summand of the block), ``"e_result"``
    (exponent of the result) or ``"absolute"`` (the reference exponent is 0).
    """

    model: str
    source: str
    formula: str
    coefficient: float
    reference: Literal["e_max", "e_result", "absolute"]
    offset: int

    def bound(self, e_max: int = 0, e_result: int = 0) -> float:
        """The bound for given exponents of the largest summand and the result
        (``inf`` where it exceeds float64's range, as it does for e_max near 1024
        with a positive offset; exact otherwise, subnormal results included)."""
        e = {"e_max": e_max, "e_result": e_result, "absolute": 0}[self.reference]
        for name, v in (("e_max", e_max), ("e_result", e_result)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name}={v!r} ({type(v).__name__}): expected an int exponent")
        try:
            return math.ldexp(self.coefficient, int(e) + self.offset)
        except OverflowError:
            return math.inf




def mma_sim_error_sources(
    model: str,
    *,
    L: int | None = None,
    F: int | None = None,
    rounding: str = "rne",
    in_format: str | FloatFormat = "fp16",
    out_format: str | FloatFormat = "fp32",
) -> tuple[ErrorSource, ...]:
    """Error sources and bounds of one MMA-Sim model (Xie et al. 2025, Table 9).

    ``model`` is one of ``"ftz-addmul"`` (AMD CDNA2-style flush-to-zero adds and
    multiplies), ``"fma"``, ``"e-fdpa"`` (exact fused dot product, one rounding),
    or a truncating fused dot-product-add ``"t-fdpa"`` and its variants
    (``"st-fdpa"``, ``"gst-fdpa"``, ``"tr-fdpa"``, ``"gtr-fdpa"``), which need
    ``L`` (products per block) and ``F`` (fraction bits kept after alignment).
    ``rounding`` is the output rounding (``"rne"``: 0.5 ulp; ``"rz"``: 1 ulp) into
    ``out_format`` (e.g. ``"fp32"``, ``"fp16"``, or ``"e8m13"`` for Ada/Hopper fp8
    RZ-E8M13).  The errors are additive over a computation (Xie et al., Sec. 6.1).
    """
    key = model.lower()
    out = _fmt(out_format, "out_format")
    _check_rounding(rounding)
    ulp_off = -(out.p - 1)  # ulp of the result: 2^(e_result - (p - 1))
    half = 0.5 if rounding in _NEAREST else 1.0
    rname = f"{rounding.upper()}-{out.name.upper()}"
    out_round = ErrorSource(
        model, "output rounding", f"{half:g} ulp_{out.name} = {half:g} x 2^(e_result - {out.p - 1}) ({rname})",
        half, "e_result", ulp_off,
    )
    op = OPERATIONS.get(key)
    terms = None if op is None else op.error_terms(L, F, _fmt(in_format, "in_format"))
    if op is None or terms is None:
        listed = [k for k, o in OPERATIONS.items() if o.error_terms(8, 24, _fmt("fp16", "in_format")) is not None]
        raise ValueError(f"model={model!r} is not in Xie et al. Table 9; expected one of "
                         f"{', '.join(repr(m) for m in listed)}")
    own = tuple(ErrorSource(model, t.source, t.expression, t.coefficient, t.reference, t.offset) for t in terms)
    return own + ((out_round,) if op.includes_output_rounding() else ())


def multiword_bound(
    n: int | np.ndarray,
    in_format: str | FloatFormat,
    out_format: str | FloatFormat = "fp32",
) -> float | np.ndarray:
    """``2u + nU + 4 n^2 f_min / theta + 4 n^2 F_min / theta^2``, theta = min(f_max, sqrt(F_max / n)).

    Bound (3.26) of Mary & Mikaitis (2024) on the norm-wise error
    ``||C_hat - C||_inf / (||A||_inf ||B||_inf)`` of the scaled multi-word product,
    the ``bound`` curve of Khattak & Mikaitis (2025), Figure 7.  ``u = 2^-t``,
    ``f_min``, ``f_max`` are the unit roundoff, smallest normal and largest finite
    number of the word (input) format; ``U``, ``F_min``, ``F_max`` those of the
    output format.  ``n`` may be an array.
    """
    fi = _fmt(in_format, "in_format")
    fo = _fmt(out_format, "out_format")
    n_arr = np.asarray(n, dtype=np.float64)
    if (n_arr < 1).any() or not np.isfinite(n_arr).all():
        raise ValueError(f"n must be >= 1; got {n!r}")
    u, fmin, fmax = fi.unit_roundoff, fi.min_normal, fi.max
    U, Fmin, Fmax = fo.unit_roundoff, fo.min_normal, fo.max
    theta = np.minimum(fmax, np.sqrt(Fmax / n_arr))
    b = 2 * u + n_arr * U + 4 * n_arr**2 * fmin / theta + 4 * n_arr**2 * Fmin / theta**2
    return float(b) if b.ndim == 0 else b

