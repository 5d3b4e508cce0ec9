"""Random input generators for experiments, algorithms and probes.

Every generator is deterministic from its seed: it draws from
``numpy.random.default_rng(seed)`` (``seed`` may be an int, a sequence of ints or a
:class:`numpy.random.SeedSequence`) and nothing else, so the same call gives the same
array on every machine and in every process.  Values are float64; pass ``fmt`` to
round them to a number format (round-to-nearest-even, overflow to Inf as IEEE
conversion does) or do that yourself with :func:`workbench.formats.round`.

Distributions (name in :data:`GENERATORS` -> function):

``normal``          N(mean, std^2).
``uniform``         U(low, high).
``log_uniform``     s * base**U(low, high), s = +-1 with equal probability: the
                    magnitudes of Khattak & Mikaitis (2025), Figure 7, after Mary &
                    Mikaitis (2024), Section 5 (``+-10^U(-10, 10)``).
``exponent_range``  s * m * 2**e with e uniform on the integers emin..emax and m
                    uniform on [1, 2): the controlled exponent ranges of Ootomo &
                    Yokota (2022) used by Valpey et al. (2025), Section 6 ("Type 1":
                    exponents between -15 and 14, :data:`OOTOMO_YOKOTA_TYPES`).
``dnn_like``        N(0, 1) + Bernoulli(0.001) * N(0, 100): the DNN-workload inputs
                    of Xie et al. (2025, MMA-Sim), Section 3.1.4, after FlashAttention-3
                    (outliers of variance 100, i.e. standard deviation 10).
``random_bits``     uniformly random bit patterns of a format, so normal numbers of
                    every binade, subnormals, zeros, infinities and NaNs all occur
                    (Xie et al. 2025, Section 3.1.4, input type (3)).

Pairs of operands whose products must relate to each other come from
:func:`adversarial` (dot products with a prescribed large condition number
``sum|a_l b_l| / |sum a_l b_l|``, Xie et al. 2025, Section 3.1.4, input type (2)) and
:func:`matrices` builds the A, B (and C) of a GEMM from any generator.

This module imports nothing above :mod:`workbench.formats`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import formats as _formats

Seed = int | np.random.SeedSequence | list[int] | tuple[int, ...]
Shape = int | tuple[int, ...]

#: Named exponent ranges (emin, emax) of Ootomo-Yokota input types.  Only Type 1 is
#: quoted in our sources (Valpey et al. 2025, Section 6: exponents 2^-15 .. 2^14,
#: inside the binary16 range); other ranges are given as emin/emax directly.
OOTOMO_YOKOTA_TYPES: dict[str, tuple[int, int]] = {
    "type1": (-15, 14),
}


def _rng(seed: Seed | np.random.Generator) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer, np.random.SeedSequence, list, tuple)):
        raise TypeError(f"seed={seed!r} must be an int, a sequence of ints or a numpy SeedSequence")
    return np.random.default_rng(seed)


def _finish(x: np.ndarray, fmt: str | _formats.FloatFormat | None) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x if fmt is None else _formats.round(x, fmt)


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{name}={value!r} must be positive")
    return float(value)


def normal(shape: Shape, seed: Seed, *, mean: float = 0.0, std: float = 1.0,
           fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:
    """Independent N(mean, std**2) entries (MMA-Sim's "common distributions")."""
    std = _positive("std", std)
    return _finish(_rng(seed).normal(mean, std, size=shape), fmt)


def uniform(shape: Shape, seed: Seed, *, low: float = -1.0, high: float = 1.0,
            fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:
    """Independent U(low, high) entries (MMA-Sim's "common distributions")."""
    if not low < high:
        raise ValueError(f"low={low!r} must be smaller than high={high!r}")
    return _finish(_rng(seed).uniform(low, high, size=shape), fmt)


def log_uniform(shape: Shape, seed: Seed, *, low: float = -10.0, high: float = 10.0, base: float = 10.0,
                fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:
    """Entries ``s * base**x`` with x ~ U(low, high) and s = +-1 equally likely.

    With the defaults this is Khattak & Mikaitis (2025), Figure 7 (MATLAB
    ``(randi(2)*2-3) .* 10.^(rand*2*l - l)`` with l = 10): magnitudes spread over
    twenty decades.  The exponent is drawn before the sign for each array.
    """
    if not low < high:
        raise ValueError(f"low={low!r} must be smaller than high={high!r}")
    base = _positive("base", base)
    rng = _rng(seed)
    x = rng.uniform(low, high, size=shape)
    s = rng.integers(0, 2, size=shape) * 2 - 1
    return _finish(s * np.power(base, x), fmt)


def exponent_range(shape: Shape, seed: Seed, *, emin: int | None = None, emax: int | None = None,
                   type: str | None = None, fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:  # noqa: A002
    """Entries ``s * m * 2**e``: e uniform on emin..emax, m ~ U[1, 2), s = +-1.

    The Ootomo & Yokota (2022) style inputs with a controlled exponent range; give
    ``emin``/``emax`` or a named ``type`` of :data:`OOTOMO_YOKOTA_TYPES` ("type1" =
    exponents -15..14, as Valpey et al. 2025, Section 6; the default).  Every magnitude lies in
    [2**emin, 2**(emax+1)).
    """
    if type is not None:
        if type not in OOTOMO_YOKOTA_TYPES:
            raise ValueError(f"type={type!r} is not an Ootomo-Yokota input type; expected one of "
                             f"{sorted(OOTOMO_YOKOTA_TYPES)}")
        if emin is not None or emax is not None:
            raise ValueError("give either type or emin/emax, not both")
        emin, emax = OOTOMO_YOKOTA_TYPES[type]
    if emin is None and emax is None:
        emin, emax = OOTOMO_YOKOTA_TYPES["type1"]
    if emin is None or emax is None:
        raise ValueError(f"emin={emin!r}, emax={emax!r}: give both (or a type)")
    if int(emin) != emin or int(emax) != emax or emin > emax:
        raise ValueError(f"emin={emin!r}, emax={emax!r}: expected integers with emin <= emax")
    if emin < -1022 or emax > 1022:
        raise ValueError(f"emin={emin}, emax={emax}: expected within [-1022, 1022] (float64 normals)")
    rng = _rng(seed)
    e = rng.integers(int(emin), int(emax) + 1, size=shape)
    m = rng.uniform(1.0, 2.0, size=shape)
    s = rng.integers(0, 2, size=shape) * 2 - 1
    return _finish(s * np.ldexp(m, e), fmt)


def dnn_like(shape: Shape, seed: Seed, *, outlier_probability: float = 0.001, outlier_std: float = 10.0,
             fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:
    """N(0, 1) + Bernoulli(p) * N(0, outlier_std**2), p = 0.001, outlier_std = 10.

    The "typical distribution in DNN workloads" of Xie et al. (2025, MMA-Sim),
    Section 3.1.4, quoted from FlashAttention-3 (Shah et al. 2024): N(0, 100) read as
    variance 100, a rare outlier of standard deviation 10 added to 0.1% of entries.
    """
    if not 0 <= outlier_probability <= 1:
        raise ValueError(f"outlier_probability={outlier_probability!r}: expected a probability in [0, 1]")
    outlier_std = _positive("outlier_std", outlier_std)
    rng = _rng(seed)
    base = rng.standard_normal(size=shape)
    hit = rng.random(size=shape) < outlier_probability
    big = rng.normal(0.0, outlier_std, size=shape)
    return _finish(base + np.where(hit, big, 0.0), fmt)


def random_bits(shape: Shape, seed: Seed, *, fmt: str | _formats.FloatFormat = "fp16",
                specials: bool = True) -> np.ndarray:
    """Values of uniformly random bit patterns of ``fmt`` (float64).

    Every encoding is equally likely, so all binades, subnormals, both zeros,
    infinities and NaNs occur (MMA-Sim's randomized bit-stream inputs, Xie et al.
    2025, Section 3.1.4).  ``specials=False`` redraws Inf and NaN patterns as finite
    ones (uniform over the finite encodings).
    """
    f = _formats.format(fmt)
    if f.width > 63:
        raise ValueError(f"fmt={f.name!r} is {f.width} bits wide; random_bits supports formats up to 63 bits")
    rng = _rng(seed)
    bits = rng.integers(0, 1 << f.width, size=shape, dtype=np.int64)
    x = _formats.from_bits(bits, f)
    if not specials:
        bad = ~np.isfinite(x)
        while bad.any():
            bits = rng.integers(0, 1 << f.width, size=int(bad.sum()), dtype=np.int64)
            x[bad] = _formats.from_bits(bits, f)
            bad = ~np.isfinite(x)
    return np.asarray(x, dtype=np.float64).reshape(shape)


def adversarial(m: int, k: int, n: int, seed: Seed, *, condition: float = 1e8,
                fmt: str | _formats.FloatFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n) whose every dot product is ill-conditioned.

    Construction: the k positions are split into two equal halves of "large" pairs
    and a remainder of "small" pairs.  A row holds [P, P, S] and B column
    [Q; -Q; T] (then the positions are shuffled, the same permutation for A's
    columns and B's rows), so the large products cancel exactly and
    ``(AB)_ij = (S T)_ij`` while ``sum_l |a_il b_lj|`` is dominated by ``2 |P||Q|``.
    P, Q ~ N(0, 1) and S, T ~ N(0, sigma^2) with sigma chosen so that the condition
    number ``sum_l |a_il b_lj| / |sum_l a_il b_lj|`` is about ``condition`` (its
    typical value; individual entries scatter around it).  With ``fmt`` every
    entry is rounded to that format first, so the cancellation stays exact; S and T
    may underflow in narrow formats if ``condition`` is too large.

    These are the "random adversarial inputs with large condition numbers" that
    trigger catastrophic cancellation (Xie et al. 2025, Section 3.1.4, type (2)).
    Needs k >= 3.
    """
    if k < 3:
        raise ValueError(f"k={k}: adversarial dot products need k >= 3")
    if not condition >= 1:
        raise ValueError(f"condition={condition!r}: expected a number >= 1")
    rng = _rng(seed)
    h = max(1, (k - 1) // 2) if k < 6 else (2 * k) // 5
    s = k - 2 * h
    P = _finish(rng.standard_normal((m, h)), fmt)
    Q = _finish(rng.standard_normal((h, n)), fmt)
    # E|x y| = 2/pi for independent standard normals: large part 2h*2/pi,
    # small part s*sigma^2*2/pi; their ratio to |sum of small| (~ sigma^2 sqrt(s) 2/pi
    # in the mean) sets the condition number.
    sigma = np.sqrt(2.0 * h / (condition * np.sqrt(s)))
    S = _finish(sigma * rng.standard_normal((m, s)), fmt)
    T = _finish(sigma * rng.standard_normal((s, n)), fmt)
    A = np.concatenate([P, P, S], axis=1)
    B = np.concatenate([Q, -Q, T], axis=0)
    perm = rng.permutation(k)
    return A[:, perm], B[perm, :]


def condition_numbers(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``sum_l |a_il b_lj| / |sum_l a_il b_lj|`` for every entry of A @ B (float64)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    num = np.abs(A) @ np.abs(B)
    den = np.abs(A @ B)
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / den


#: Element-wise generators: name -> f(shape, seed, **params).
GENERATORS: dict[str, Callable[..., np.ndarray]] = {
    "normal": normal,
    "uniform": uniform,
    "log_uniform": log_uniform,
    "exponent_range": exponent_range,
    "dnn_like": dnn_like,
    "random_bits": random_bits,
}


def matrices(generator: str, m: int, k: int, n: int, seed: Seed, *, c: Mapping[str, Any] | None = None,
             **params: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A (m x k), B (k x n) and optionally C (m x n) for a GEMM, from one seed.

    ``generator`` is a name in :data:`GENERATORS` or ``"adversarial"``; ``params``
    go to it.  A, B and C use independent streams spawned from ``seed``
    (``SeedSequence(seed).spawn(3)``), so adding C does not change A and B.  ``c``,
    if given, is ``{"generator": name, **params}`` for C (any element-wise
    generator); otherwise C is None.
    """
    for name, v in (("m", m), ("k", k), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}={v!r}: expected a positive integer")
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    sa, sb, sc = ss.spawn(3)
    if generator == "adversarial":
        A, B = adversarial(m, k, n, sa, **params)
    elif generator in GENERATORS:
        gen = GENERATORS[generator]
        A = gen((m, k), sa, **params)
        B = gen((k, n), sb, **params)
    else:
        raise ValueError(f"generator={generator!r} is not known; expected one of "
                         f"{sorted([*GENERATORS, 'adversarial'])}")
    C = None
    if c is not None:
        c = dict(c)
        cgen = c.pop("generator", None)
        if cgen not in GENERATORS:
            raise ValueError(f"c.generator={cgen!r} is not known; expected one of {sorted(GENERATORS)}")
        C = GENERATORS[cgen]((m, n), sc, **c)
    return A, B, C
