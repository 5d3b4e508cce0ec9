"""Random input generators for experiments, algorithms and probes.

Every generator is deterministic from its seed: it draws from
``numpy.random.default_rng(seed)`` (``seed`` may be an int, a sequence of ints or a
:class:`numpy.random.SeedSequence`) and nothing else, so the same call gives the same
array on every machine and in every process.  Values are float64; pass ``fmt`` to
round them to a number format (round-to-nearest-even, overflow to Inf as IEEE
conversion does) or do that yourself with :func:`workbench.numbers.formats.round`.

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
``gemmul8``         GEMMul8's test matrices (RIKEN-RCCS/GEMMul8, ``testing/make_matrix.hpp``):
                    N(0, 1) for ``phi < 0``, else ``(U(0, 1) - 0.5) exp(phi N(0, 1))``; the
                    exponent span of the entries grows with ``phi``.

Pairs of operands whose products must relate to each other come from
:func:`adversarial` (dot products with a prescribed large condition number
``sum|a_l b_l| / |sum a_l b_l|``, Xie et al. 2025, Section 3.1.4, input type (2)) and
:func:`inner_scaling` (A's columns scaled by 2^e_l and B's rows by 2^-e_l: entries spread
over many decades while every product stays O(1), the inputs that row-wise scaled splittings
such as the Ozaki schemes find hardest), and
:func:`matrices` builds the A, B (and C) of a GEMM from any generator.

Test matrices for linear solvers (square, float64): :func:`randsvd` (prescribed
2-norm condition number and singular-value distribution, Higham's modes),
:func:`diagonally_dominant`, :func:`two_sided_scaling` (badly scaled rows and
columns) and the pair generator :func:`linear_system` (A from randsvd, right-hand
sides B) that sweeps use as ``input = {generator = "linear_system", kappa = ...}``.

This module imports nothing above :mod:`workbench.numbers.formats`.
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


def gemmul8(shape: Shape, seed: Seed, *, phi: float = 0.5,
            fmt: str | _formats.FloatFormat | None = None) -> np.ndarray:
    """GEMMul8's test matrices (RIKEN-RCCS/GEMMul8, ``testing/make_matrix.hpp``, as read):
    N(0, 1) entries for ``phi < 0``, else ``(U(0, 1) - 0.5) * exp(phi * N(0, 1))``, so the
    entries' magnitudes spread over about ``phi * 4 / ln 10`` decades.  The authors'
    accuracy tables (GEMMul8_numerical_results) use phi = -1, 0, 0.5, 1, 2, 4."""
    rng = _rng(seed)
    if phi < 0:
        return _finish(rng.standard_normal(shape), fmt)
    x = (rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape))
    return _finish(x, fmt)


def inner_scaling(m: int, k: int, n: int, seed: Seed, *, decades: float = 8.0,
                  fmt: str | _formats.FloatFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A = G diag(2^e), B = diag(2^-e) H with G, H ~ N(0, 1) and integer e_l spread
    uniformly over ``decades`` decades: the entries of a row of A (column of B) span
    about 10^decades while every product ``a_il b_lj`` stays O(1).  Row-wise scaled
    splittings (Ozaki schemes I and II, ozIMMU, GEMMul8) scale a row by its largest entry,
    so the small entries - whose products matter as much - lose their bits: the
    exponent span of :mod:`algorithms.adp` is about ``decades * log2(10)``.  The scalings
    are powers of two (exact)."""
    if not decades >= 0:
        raise ValueError(f"decades={decades!r}: expected a non-negative number")
    rng = _rng(seed)
    half = decades * np.log2(10.0) / 2
    e = np.round(rng.uniform(-half, half, size=k)).astype(np.int64)
    G = rng.standard_normal((m, k))
    H = rng.standard_normal((k, n))
    return _finish(np.ldexp(G, e[None, :]), fmt), _finish(np.ldexp(H, -e[:, None]), fmt)


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


#: Singular-value distributions of :func:`randsvd` (Higham 2002, Section 28.3).
RANDSVD_MODES: dict[int, str] = {
    1: "one large: 1, 1/kappa, ..., 1/kappa",
    2: "one small: 1, ..., 1, 1/kappa",
    3: "geometric: kappa^(-(i-1)/(n-1))",
    4: "arithmetic: 1 - (i-1)/(n-1) (1 - 1/kappa)",
    5: "random with uniformly distributed logarithm in [1/kappa, 1] (ends pinned at 1 and 1/kappa)",
}


def _haar_orthogonal(n: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-distributed random orthogonal matrix: Q of the QR factorisation of an
    n x n Gaussian matrix with the signs of R's diagonal moved into Q (Stewart 1980;
    Mezzadri 2007, Section 5)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def randsvd_singular_values(n: int, kappa: float, mode: int = 3, seed: Seed | np.random.Generator = 0) -> np.ndarray:
    """The singular values sigma_1 >= ... >= sigma_n of :func:`randsvd` (sigma_1 = 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r}: expected a positive integer")
    if not (isinstance(kappa, (int, float, np.integer, np.floating)) and np.isfinite(kappa) and kappa >= 1):
        raise ValueError(f"kappa={kappa!r}: expected a finite condition number >= 1")
    if mode not in RANDSVD_MODES:
        raise ValueError(f"mode={mode!r}: expected one of {sorted(RANDSVD_MODES)} ({RANDSVD_MODES})")
    kappa = float(kappa)
    i = np.arange(n, dtype=np.float64)
    if n == 1:
        return np.ones(1)
    if mode == 1:
        sigma = np.full(n, 1.0 / kappa)
        sigma[0] = 1.0
    elif mode == 2:
        sigma = np.ones(n)
        sigma[-1] = 1.0 / kappa
    elif mode == 3:
        sigma = kappa ** (-i / (n - 1))
    elif mode == 4:
        sigma = 1.0 - i / (n - 1) * (1.0 - 1.0 / kappa)
    else:
        inner = np.exp(-_rng(seed).uniform(0.0, np.log(kappa), size=n - 2))
        sigma = np.concatenate([[1.0], np.sort(inner)[::-1], [1.0 / kappa]])
    return sigma


def randsvd(n: int, kappa: float, *, mode: int = 3, seed: Seed = 0) -> np.ndarray:
    """An n x n float64 matrix U diag(sigma) V^T with 2-norm condition number kappa.

    Higham's randsvd (N. J. Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., SIAM 2002, Section 28.3; MATLAB ``gallery('randsvd', n,
    kappa, mode)``): U and V are independent Haar-random orthogonal matrices and the
    singular values follow ``mode`` (:data:`RANDSVD_MODES`; 3, geometric, is the
    default as in MATLAB).  sigma_1 = 1, so ``||A||_2 = 1``.  Mode 5 draws the
    inner n - 2 values and pins the ends at 1 and 1/kappa so that the condition
    number is kappa exactly (MATLAB's mode 5 draws all n).  The product is formed
    in float64, so the computed matrix's singular values differ from sigma by
    about n u ||A||_2 (u = 2^-53): relatively, by n u kappa for the smallest.
    """
    rng = _rng(seed)
    sigma = randsvd_singular_values(n, kappa, mode, rng)
    U = _haar_orthogonal(n, rng)
    V = _haar_orthogonal(n, rng)
    return (U * sigma) @ V.T


def diagonally_dominant(n: int, *, seed: Seed = 0, dominance: float = 2.0) -> np.ndarray:
    """n x n N(0, 1) matrix whose diagonal is replaced by +-``dominance`` times the
    row's off-diagonal absolute sum: strictly row diagonally dominant for
    dominance > 1, so LU needs no pivoting and the growth factor is at most 2
    (Higham 2002, Theorem 9.9, for column dominance of A^T)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r}: expected a positive integer")
    if not dominance > 1:
        raise ValueError(f"dominance={dominance!r}: expected a number > 1")
    rng = _rng(seed)
    A = rng.standard_normal((n, n))
    np.fill_diagonal(A, 0.0)
    off = np.abs(A).sum(axis=1)
    sign = rng.integers(0, 2, size=n) * 2 - 1
    np.fill_diagonal(A, sign * dominance * np.where(off > 0, off, 1.0))
    return A


def two_sided_scaling(A: np.ndarray, *, decades: float, seed: Seed = 0) -> np.ndarray:
    """``D_r A D_c`` with diagonal D_r, D_c of powers of two spread log-uniformly over
    ``decades`` decades each (row and column scalings of arbitrary size): the
    badly scaled systems that overflow or underflow when entries are rounded to
    fp16 (Higham, Pranesh & Zounon, SIAM J. Sci. Comput. 41(4), 2019).  The
    scalings are powers of two, so ``D_r A D_c`` is exact."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D array; got shape {A.shape}")
    if not decades >= 0:
        raise ValueError(f"decades={decades!r}: expected a non-negative number")
    rng = _rng(seed)
    half = decades * np.log2(10.0) / 2
    r = np.round(rng.uniform(-half, half, size=A.shape[0]))
    c = np.round(rng.uniform(-half, half, size=A.shape[1]))
    return np.ldexp(np.ldexp(A, r.astype(np.int64)[:, None]), c.astype(np.int64)[None, :])


def linear_system(m: int, k: int, n: int, seed: Seed, *, kappa: float, mode: int = 3,
                  fmt: str | _formats.FloatFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A linear system as a sweep input pair: A = :func:`randsvd` (k, kappa, mode)
    (m must equal k) and n right-hand sides B (k x n) with N(0, 1) entries, from
    independent streams of ``seed``.  ``fmt`` rounds both (None: keep float64)."""
    if m != k:
        raise ValueError(f"linear_system: A is square, so m={m} must equal k={k}")
    sa, sb = (seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)).spawn(2)
    A = _finish(randsvd(k, kappa, mode=mode, seed=sa), fmt)
    B = _finish(np.random.default_rng(sb).standard_normal((k, n)), fmt)
    return A, B


#: Generators of operand pairs: name -> f(m, k, n, seed, **params) -> (A, B).
PAIR_GENERATORS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "adversarial": adversarial,
    "linear_system": linear_system,
    "inner_scaling": inner_scaling,
}


#: Element-wise generators: name -> f(shape, seed, **params).
GENERATORS: dict[str, Callable[..., np.ndarray]] = {
    "normal": normal,
    "uniform": uniform,
    "log_uniform": log_uniform,
    "exponent_range": exponent_range,
    "dnn_like": dnn_like,
    "random_bits": random_bits,
    "gemmul8": gemmul8,
}


def matrices(generator: str, m: int, k: int, n: int, seed: Seed, *, c: Mapping[str, Any] | None = None,
             **params: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A (m x k), B (k x n) and optionally C (m x n) for a GEMM, from one seed.

    ``generator`` is a name in :data:`GENERATORS` or :data:`PAIR_GENERATORS`; ``params``
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
    if generator in PAIR_GENERATORS:
        A, B = PAIR_GENERATORS[generator](m, k, n, sa, **params)
    elif generator in GENERATORS:
        gen = GENERATORS[generator]
        A = gen((m, k), sa, **params)
        B = gen((k, n), sb, **params)
    else:
        raise ValueError(f"generator={generator!r} is not known; expected one of "
                         f"{sorted([*GENERATORS, *PAIR_GENERATORS])}")
    C = None
    if c is not None:
        c = dict(c)
        cgen = c.pop("generator", None)
        if cgen not in GENERATORS:
            raise ValueError(f"c.generator={cgen!r} is not known; expected one of {sorted(GENERATORS)}")
        C = GENERATORS[cgen]((m, n), sc, **c)
    return A, B, C
