"""Generalised test vectors: constants derived from the formats, never hard-coded.

Khattak & Mikaitis 2025, Section III-A (GNFT): a test vector is an *expression* in the
parameters of the input and output formats (precision, exponent range), so the same
test runs on fp16, bf16, tf32, fp8... and on any fused-sum width.  This module holds
the two pieces every probe needs:

* :class:`Ranges`: which product exponents are available (normal or subnormal
  operands) and which magnitudes the output format can carry;
* :class:`Cases`: a batch of dot-product cases built from exact *product values*
  (each value is split into two representable operands ``a * b``), evaluated in one
  go on a :class:`~workbench.probes.blackbox.BlackBox`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..numbers import formats as _formats
from .blackbox import BlackBox

__all__ = ["Ranges", "Cases", "split_product", "fits"]


def _exp2(x: float) -> int:
    """Exponent of the leading bit of |x| (x != 0)."""
    return math.frexp(abs(x))[1] - 1


@dataclass(frozen=True)
class Ranges:
    """Exponent ranges of the formats, as Khattak-Mikaitis' generalised vectors use them.

    ``prod_lo``/``prod_hi``: exponents of products of two *normal* powers of two of the
    input format; ``prod_lo_sub``: the lowest with subnormal operands; ``out_lo``: the
    exponent of the output's smallest subnormal; ``out_hi``: its largest exponent."""

    fin: _formats.FloatFormat
    fout: _formats.FloatFormat

    @property
    def prod_lo(self) -> int:
        return 2 * self.fin.emin

    @property
    def prod_lo_sub(self) -> int:
        return 2 * _exp2(self.fin.min_subnormal) if self.fin.subnormals else self.prod_lo

    @property
    def prod_hi(self) -> int:
        return 2 * self.fin.emax

    @property
    def out_lo(self) -> int:
        return _exp2(self.fout.min_subnormal) if self.fout.subnormals else self.fout.emin

    @property
    def out_hi(self) -> int:
        return self.fout.emax


def fits(x: float, fmt: _formats.FloatFormat) -> bool:
    """Whether a finite float64 is exactly a value of ``fmt`` (scalar, no array round
    trip: the probes call this while building vectors)."""
    if x == 0.0:
        return True
    if not math.isfinite(x) or abs(x) > fmt.max or (x < 0 and not fmt.signed):
        return False
    if abs(x) < fmt.min_normal:
        if not fmt.subnormals:
            return False
        q = abs(x) / fmt.min_subnormal
        return q == math.floor(q)
    m, e = math.frexp(abs(x))          # |x| = m 2^e, m in [0.5, 1)
    q = math.ldexp(m, fmt.p)
    return q == math.floor(q)


def split_product(value: float, fin: _formats.FloatFormat, allow_subnormal: bool = True) -> tuple[float, float]:
    """Two values a, b representable in ``fin`` with a * b == value exactly.

    ``value`` must be (odd integer m) * 2^k with m representable in ``fin``; b is a
    power of two.  The split is balanced (|a| close to b) and prefers normal operands
    (Fasi et al. 2021 build every vector the same way, e.g. 2^-24 * 2^2)."""
    if value == 0.0:
        return 0.0, 0.0
    if not math.isfinite(value):
        raise ValueError(f"split_product: {value!r} is not finite")
    lo = (fin.emin - fin.man_bits) if (allow_subnormal and fin.subnormals) else fin.emin
    e_val = _exp2(value)
    center = min(max(e_val // 2, lo), fin.emax)
    order = sorted(range(lo, fin.emax + 1), key=lambda kb: (abs(kb - center), kb))
    best: tuple[float, float, float] | None = None
    for kb in order:
        b = math.ldexp(1.0, kb)
        a = value / b
        if a == 0.0 or not math.isfinite(a) or abs(a) > fin.max:
            continue
        if not fits(a, fin):
            continue
        sub = (abs(a) < fin.min_normal) + (b < fin.min_normal)
        if sub == 0:
            return a, b
        if best is None:
            best = (float(sub), a, b)
    if best is None:
        raise ValueError(f"{value!r} is not a product of two {fin.name} values of the form m*2^k, 2^j")
    return best[1], best[2]


class Cases:
    """A batch of dot-product probes ``d = c + sum_k a_k b_k`` of length K.

    Each case is given as *products* at positions (the papers' p_k) plus c; the
    operands are derived with :func:`split_product`."""

    def __init__(self, K: int, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                 allow_subnormal: bool = True) -> None:
        if K < 1:
            raise ValueError(f"K={K}: a probe needs at least one term")
        self.K = K
        self.fin = fin
        self.fout = fout
        self.allow_subnormal = allow_subnormal
        self._a: list[np.ndarray] = []
        self._b: list[np.ndarray] = []
        self._c: list[float] = []
        self._split: dict[float, tuple[float, float]] = {}

    def __len__(self) -> int:
        return len(self._c)

    def add(self, products: dict[int, float] | Iterable[tuple[int, float]], c: float = 0.0) -> int:
        """Append a case; returns its index.  ``products``: position -> exact value."""
        items = products.items() if isinstance(products, dict) else products
        a = np.zeros(self.K)
        b = np.zeros(self.K)
        for k, v in items:
            if not 0 <= k < self.K:
                raise ValueError(f"position {k} outside 0..{self.K - 1}")
            if v not in self._split:
                self._split[v] = split_product(v, self.fin, self.allow_subnormal)
            a[k], b[k] = self._split[v]
        if not fits(c, self.fout) and math.isfinite(c):
            raise ValueError(f"c={c!r} is not representable in {self.fout.name}")
        self._a.append(a)
        self._b.append(b)
        self._c.append(float(c))
        return len(self._c) - 1

    def add_raw(self, a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, c: float = 0.0) -> int:
        """Append a case given by its operands directly."""
        self._a.append(np.asarray(a, dtype=np.float64).reshape(self.K))
        self._b.append(np.asarray(b, dtype=np.float64).reshape(self.K))
        self._c.append(float(c))
        return len(self._c) - 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array(self._a), np.array(self._b), np.array(self._c)

    def run(self, bb: BlackBox) -> np.ndarray:
        """Evaluate every case on the black box (batched; see :meth:`BlackBox.dots`)."""
        if not self._c:
            return np.empty(0)
        a, b, c = self.arrays()
        return bb.dots(a, b, c)
