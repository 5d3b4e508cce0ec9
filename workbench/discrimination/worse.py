"""Inputs on which one GEMM algorithm is less accurate than another (Valpey et al. 2025
Section 6, Property 5 and Table 5).

Property 5 asks for inputs with ``|Markidis - exact| < |Ootomo-Yokota - exact|``:
Ootomo and Yokota accumulate the large product outside the unit with round-to-nearest,
which normalises the partial sum, while inside a tensor core the unnormalised
fixed-point sum keeps a low bit that a later term can complete (Table 5 walk-through).
:func:`find_worse` searches batched inputs in an exponent range (Valpey et al. use
Ootomo-Yokota's Type 1 range, 2^-15 .. 2^14), screens against the exact product
(:func:`workbench.numbers.exact.gemm`) and confirms the chosen input with Fractions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
import numpy as np

import algorithms

from ..engine.model import Model
from .search import resolve_model

__all__ = ["WorseInput", "find_worse", "exact_errors"]

Algorithm = Callable[..., np.ndarray]


def _algorithm(alg: Algorithm | str, name: str) -> tuple[Algorithm, str]:
    if callable(alg):
        return alg, getattr(alg, "__name__", repr(alg))
    if isinstance(alg, str):
        return algorithms.get(alg), alg
    raise TypeError(f"{name} must be a callable f(A, B, C, *, model) or an algorithm name, got {type(alg).__name__}")


@dataclass(frozen=True)
class WorseInput:
    """An input (``a``, ``b``, ``c``) on which ``alg_x`` has a larger error than ``alg_y``:
    outputs ``out_x``, ``out_y``, the exact value ``exact`` (a Fraction) and the two
    absolute errors (Fractions), computed exactly."""

    a: np.ndarray
    b: np.ndarray
    c: float
    out_x: float
    out_y: float
    exact: Fraction
    err_x: Fraction
    err_y: Fraction
    alg_x: str
    alg_y: str
    candidates: int

    def __str__(self) -> str:
        return (f"a={self.a.tolist()} b={self.b.tolist()} c={self.c!r}: exact={float(self.exact)!r}, "
                f"{self.alg_x}={self.out_x!r} (error {float(self.err_x):.3g}), "
                f"{self.alg_y}={self.out_y!r} (error {float(self.err_y):.3g})")


def exact_errors(a: np.ndarray, b: np.ndarray, c: float, outs: tuple[float, ...]) -> tuple[Fraction, list[Fraction]]:
    """The exact ``a . b + c`` (Fraction) and the exact absolute error of each output."""
    ex = sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0)) + Fraction(float(c))
    return ex, [abs(Fraction(float(o)) - ex) for o in outs]


def _run(alg: Algorithm, A: np.ndarray, B: np.ndarray, C: np.ndarray, model: Model) -> np.ndarray:
    return np.asarray(alg(A, B, C, model=model), dtype=np.float64)


def find_worse(alg_x: Algorithm | str, alg_y: Algorithm | str, model: Model | str, *,
               exponent_range: tuple[int, int] = (-15, 14), K: int | None = None, budget: int = 200_000,
               seed: int = 0, in_format: str = "fp32", mode: str = "structured") -> WorseInput | None:
    """An input on which algorithm ``alg_x`` on ``model`` has a strictly larger absolute
    error than ``alg_y`` (Valpey et al. Property 5 with X = Ootomo-Yokota, Y = Markidis).

    ``alg_x``/``alg_y`` are callables ``f(A, B, C, *, model)`` or names from
    ``algorithms.get``.  Inputs are ``in_format`` values (default fp32) with
    exponents in ``exponent_range`` (inclusive; zeros allowed); c likewise.  ``mode``:
    ``"structured"`` draws near-cancelling products and terms one fp32 ulp apart (the
    shape of Table 5) and random values; ``"random"`` only random values.
    Returns a :class:`WorseInput` (errors confirmed with exact Fractions) or None when
    no such input is found within ``budget`` candidate dot products.
    """
    fx, nx = _algorithm(alg_x, "alg_x")
    fy, ny = _algorithm(alg_y, "alg_y")
    m = resolve_model(model)
    lo, hi = exponent_range
    if not (isinstance(lo, int) and isinstance(hi, int) and lo <= hi):
        raise ValueError(f"exponent_range={exponent_range!r}: expected (lo, hi) integers with lo <= hi")
    if mode not in ("structured", "random"):
        raise ValueError(f"mode={mode!r}: expected 'structured' or 'random'")
    K = K or m.L
    from ..numbers import exact as _exact
    from ..numbers import formats as _formats

    fmt = _formats.format(in_format)
    rng = np.random.default_rng(seed)
    tried = 0
    n, mcols = 128, 32

    def draw(shape: tuple[int, ...]) -> np.ndarray:
        if mode == "structured" and rng.random() < 0.5:
            # fp16 significands (11 bits) as in Table 5; exponents in the range
            sig = 1.0 + rng.integers(0, 1 << 10, size=shape) / 1024.0
        else:
            sig = 1.0 + rng.random(shape)
        e = rng.integers(lo, hi + 1, size=shape).astype(float)
        if mode == "structured":
            narrow = rng.integers(lo, hi + 1)
            e = np.where(rng.random(shape) < 0.7, np.clip(narrow - rng.geometric(0.4, size=shape) + 1, lo, hi), e)
        v = np.where(rng.random(shape) < 0.8, 1.0, -1.0) * sig * np.exp2(e)
        v = np.asarray(_formats.round(v, fmt, "rz"), dtype=np.float64)
        v[rng.random(shape) < 0.15] = 0.0
        return v

    while tried < budget:
        A, B, C = draw((n, K)), draw((K, mcols)), draw((n, mcols))
        if mode == "structured":
            # c one ulp-scale term below the products' sum (Table 5: c = 2^-24 against ~1)
            C[: n // 2] = np.exp2(np.floor(np.log2(np.abs(A[: n // 2] @ B) + 2.0 ** lo)) - 24)[:, :]
            C[: n // 2] = np.clip(C[: n // 2], 2.0 ** lo, 2.0 ** hi)
        C = np.asarray(_formats.round(C, m.out_fmt, "rz"), dtype=np.float64)
        Dx = _run(fx, A, B, C, m)
        Dy = _run(fy, A, B, C, m)
        R = _exact.gemm(A, B, C)
        tried += n * mcols
        with np.errstate(invalid="ignore", over="ignore"):
            ex = np.abs(Dx - R)
            ey = np.abs(Dy - R)
        cand = np.argwhere(np.isfinite(ex) & np.isfinite(ey) & (ex > ey))
        # confirm exactly (the float64 reference can tie or misorder near-equal errors)
        for i, j in sorted(cand.tolist(), key=lambda ij: -(ex[ij[0], ij[1]] - ey[ij[0], ij[1]]))[:20]:
            a, b, c = A[i].copy(), B[:, j].copy(), float(C[i, j])
            exv, (erx, ery) = exact_errors(a, b, c, (Dx[i, j], Dy[i, j]))
            if erx > ery:
                return WorseInput(a, b, c, float(Dx[i, j]), float(Dy[i, j]), exv, erx, ery, nx, ny, tried)
    return None

