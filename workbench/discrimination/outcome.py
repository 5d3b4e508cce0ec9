"""What a discrimination search returns: :class:`Discrimination` (an input on which
two models differ, Valpey et al. 2025 Section 4) and :class:`DiscriminationOutcome`
(the result with the reason a search ended).  Shared by the search back end
(:mod:`workbench.discrimination.search`) and the SMT back end
(:mod:`workbench.discrimination.smt`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..engine.model import Model
from . import _eval

Status = Literal["found", "none exists", "proved equivalent", "none found within budget"]


def model_label(model: Model) -> str:
    """Preset name when the model is a preset, else its parameters."""
    name = getattr(model, "name", "")
    return name or f"custom({model.describe()})"


# ------------------------------------------------------------------ results
def _sig_bits(v: float) -> int:
    """Significant bits of ``v`` beyond the leading one (0 for powers of two and 0)."""
    if v == 0 or not math.isfinite(v):
        return 0
    m, _ = math.frexp(abs(v))
    n = int(math.ldexp(m, 53))
    n >>= (n & -n).bit_length() - 1
    return n.bit_length() - 1


def _score(a: np.ndarray, b: np.ndarray, c: float) -> tuple[int, int, int, int]:
    """Simplicity: (nonzero terms incl. c, significant bits, highest position used,
    sum of |exponents|); smaller is simpler."""
    nz = np.flatnonzero((a != 0) & (b != 0))
    bits = sum(_sig_bits(float(a[i])) + _sig_bits(float(b[i])) for i in nz) + _sig_bits(float(c))
    expo = sum(abs(math.frexp(float(v))[1] - 1) for i in nz for v in (a[i], b[i]))
    if c != 0:
        expo += abs(math.frexp(float(c))[1] - 1)
    last = int(nz[-1]) + 1 if nz.size else 0
    return int(nz.size + (c != 0)), int(bits), last, int(expo)


def _fmt_value(v: float) -> str:
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    if not math.isfinite(v):
        return str(v)
    m, e = math.frexp(abs(v))
    sign = "-" if v < 0 else ""
    sig = m * 2
    return f"{sign}2^{e - 1}" if sig == 1 else f"{sign}{sig!r}*2^{e - 1}"


def exact_text(v: float) -> str:
    """``v`` written exactly: ``0``/``-0``, ``inf``/``nan``, a power of two as ``2^e``
    (``-2^-24``), any other value as a hex float (``0x1.8p-3``, :meth:`float.hex`)."""
    v = float(v)
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    if not math.isfinite(v):
        return str(v)
    m, e = math.frexp(abs(v))
    if m == 0.5:
        return f"{'-' if v < 0 else ''}2^{e - 1}"
    return v.hex()


@dataclass(frozen=True)
class Discrimination:
    """An input on which two models give different outputs.

    ``a`` and ``b`` are the dot-product vectors (a row of A and a column of B), ``c``
    the accumulator input; ``out_a`` and ``out_b`` the outputs of ``model_a`` and
    ``model_b`` (float64 holding exactly the output format's values).  ``method`` is
    ``"structured"``, ``"random"`` or ``"smt"``.
    """

    a: np.ndarray
    b: np.ndarray
    c: float
    out_a: float
    out_b: float
    model_a: Model
    model_b: Model
    method: str
    candidates: int = 0
    note: str = ""
    compare: str = "bits"

    @property
    def K(self) -> int:
        return int(self.a.shape[0])

    @property
    def outputs(self) -> tuple[float, float]:
        return self.out_a, self.out_b

    @property
    def nonzero_terms(self) -> int:
        """Nonzero products plus one when c is nonzero."""
        return _score(self.a, self.b, self.c)[0]

    def terms(self) -> list[tuple[int, float, float]]:
        """``(position, a_k, b_k)`` of the nonzero products."""
        return [(int(k), float(self.a[k]), float(self.b[k])) for k in np.flatnonzero((self.a != 0) & (self.b != 0))]

    def matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The input as ``gemm`` arguments: A (1, K), B (K, 1), C (1, 1)."""
        return self.a[None, :].copy(), self.b[:, None].copy(), np.array([[self.c]])

    def recheck(self) -> bool:
        """Run both models through :func:`workbench.gemm` again: do they still differ,
        and do they give the recorded outputs?"""
        A, B, C = self.matrices()
        da = _eval.gemm_f64(self.model_a, A, B, C)[0, 0]
        db = _eval.gemm_f64(self.model_b, A, B, C)[0, 0]
        return (bool(_eval.same_bits(da, self.out_a)) and bool(_eval.same_bits(db, self.out_b))
                and not bool(_eval.agree(da, db, self.compare)))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists and floats) for tables and JSON."""
        return {
            "model_a": model_label(self.model_a), "model_b": model_label(self.model_b), "K": self.K,
            "terms": [{"k": k, "a": x, "b": y} for k, x, y in self.terms()], "c": float(self.c),
            "out_a": float(self.out_a), "out_b": float(self.out_b), "nonzero_terms": self.nonzero_terms,
            "method": self.method,
        }

    def __str__(self) -> str:
        terms = ", ".join(f"a[{k}]={_fmt_value(x)} b[{k}]={_fmt_value(y)}" for k, x, y in self.terms()) or "all zero"
        return (f"K={self.K}: {terms}; c={_fmt_value(self.c)} -> {model_label(self.model_a)}: "
                f"{_fmt_value(self.out_a)} ({self.out_a!r}), {model_label(self.model_b)}: "
                f"{_fmt_value(self.out_b)} ({self.out_b!r})  [{self.method}]")


@dataclass(frozen=True)
class DiscriminationOutcome:
    """What a search ended with: ``result`` (or None), ``status`` (``"found"``,
    ``"none exists"``, ``"proved equivalent"``, ``"none found within budget"``), a
    human-readable ``reason`` and the number of candidates evaluated."""

    result: Discrimination | None
    status: Status
    reason: str
    candidates: int = 0
    details: dict[str, Any] = field(default_factory=dict)


__all__ = ["Discrimination", "DiscriminationOutcome", "Status", "model_label", "exact_text"]
