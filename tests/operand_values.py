"""Operand values that reach every corner of a unit's arithmetic, shared by the tests that
hold one engine path against another (``gpu_simulator_cases.py``: the GPU kernels against
the CPU; ``test_small_path.py``: the small-product path against the general one)."""
from __future__ import annotations

import numpy as np

import workbench as wb
from workbench.numbers import formats as F


def values(rng: np.random.Generator, shape: tuple[int, int], fmt: str, specials: bool) -> np.ndarray:
    """Values of ``fmt``: zeros of both signs, subnormals, the largest finite values,
    ties, wide exponent spreads, and with ``specials`` NaN and +-Inf where ``fmt`` has them.
    An integer format (the integer units): zeros, its extremes and values near them, small
    and uniform integers (integers have no specials)."""
    n = int(np.prod(shape))
    if F.is_int_format(fmt):
        fi = F.int_format(fmt)
        kind = rng.integers(0, 4, n)
        xi = rng.integers(fi.min, fi.max, n, endpoint=True)
        xi[kind == 0] = 0
        xi[kind == 1] = rng.choice([fi.min, fi.max], int((kind == 1).sum()))
        xi[kind == 2] = np.clip(rng.choice([fi.min, fi.max], int((kind == 2).sum()))
                                + rng.integers(-5, 6, int((kind == 2).sum())), fi.min, fi.max)
        return xi.astype(np.float64).reshape(shape)
    f = F.format(fmt)
    kind = rng.integers(0, 100, n)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-20, 21, n).astype(float))
    x[kind < 10] = 0.0
    x[(kind >= 10) & (kind < 13)] = -0.0
    sub = (kind >= 13) & (kind < 20)
    x[sub] = rng.integers(-8, 9, sub.sum()) * f.min_normal * 2.0 ** (1 - f.p)
    big = (kind >= 20) & (kind < 24)
    x[big] = rng.choice([-1.0, 1.0], big.sum()) * f.max
    ties = (kind >= 24) & (kind < 32)
    x[ties] = rng.choice([-1.0, 1.0], ties.sum()) * (1 + rng.integers(0, 4, ties.sum()) / 4)
    x = wb.round(x, fmt)
    if specials:
        if f.has_nan:
            x[kind == 99] = nans(rng, int((kind == 99).sum()), f)
        if f.has_inf:
            x[kind == 98] = np.inf
            x[kind == 97] = -np.inf
    return x.reshape(shape)


#: Formats whose NaNs carry a payload (an IEEE-style all-ones exponent with any nonzero fraction).
PAYLOAD_NANS = ("fp16", "bf16", "tf32", "fp32", "fp64", "fp8_e5m2")


def nans(rng: np.random.Generator, n: int, f: F.FloatFormat) -> np.ndarray:
    """n quiet NaNs of format ``f`` as float64: random signs and, where the format has
    them, random payloads in its fraction bits (so that which operand's NaN comes out -
    E-FDPA's fold, FTZ-AddMul's second operand - shows in the bits)."""
    bits = np.full(n, 0x7FF8_0000_0000_0000, dtype=np.uint64)
    bits |= rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63)
    if f.name in PAYLOAD_NANS and f.man_bits > 1:
        payload = rng.integers(0, 1 << (f.man_bits - 1), n).astype(np.uint64)
        bits |= payload << np.uint64(52 - f.man_bits)
    return bits.view(np.float64)
