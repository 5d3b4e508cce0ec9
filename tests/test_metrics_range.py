"""Metrics over the whole float64 range (issue 15): every error measure checked
against the same formula evaluated in exact rational arithmetic (fractions), on data
whose magnitudes run from subnormals to 1e308, where squaring, summing or multiplying
in float64 would underflow or overflow."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from workbench.numbers import metrics

RTOL = 1e-12


@st.composite
def scaled(draw, shape):
    """Arrays of a random shape's values ~ 2^e with e anywhere in float64's range,
    a common scale for the array plus per-entry spread (zeros included)."""
    scale = draw(st.integers(-1060, 1000))
    mant = draw(arrays(np.float64, shape, elements=st.floats(-4, 4, allow_nan=False, width=32)))
    spread = draw(arrays(np.int64, shape, elements=st.integers(-20, 20)))
    return np.ldexp(mant, np.clip(scale + spread, -1074, 1019))


def F(x: float) -> Fraction:
    return Fraction(float(x))


def close(got: float, want: Fraction) -> bool:
    if want == 0:
        return got == 0.0
    if want > Fraction(2) ** 1024:
        return math.isinf(got)
    w = float(want)
    return abs(got - w) <= RTOL * abs(w) + 5e-324


def inf_norm(X) -> Fraction:
    return max((sum((abs(F(v)) for v in row), Fraction(0)) for row in X), default=Fraction(0))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(1, 5), st.integers(1, 4))
def test_normwise_error_inf_matches_fractions(data, m, k, n):
    A = data.draw(scaled((m, k)))
    B = data.draw(scaled((k, n)))
    C = data.draw(scaled((m, n)))
    C_hat = data.draw(scaled((m, n)))
    got = metrics.normwise_error_inf(C_hat, C, A, B)
    num = inf_norm([[F(a) - F(b) for a, b in zip(r1, r2)] for r1, r2 in zip(C_hat, C)])
    den = inf_norm(A) * inf_norm(B)
    if num != 0 and den == 0:
        assert got == math.inf
    else:
        want = num / den if num else Fraction(0)
        assert close(got, want), (got, float(want))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 12))
def test_relative_frobenius_error_matches_fractions(data, size):
    C = data.draw(scaled((size,)))
    C_hat = data.draw(scaled((size,)))
    got = metrics.relative_frobenius_error(C_hat, C)
    num2 = sum(((F(a) - F(b)) ** 2 for a, b in zip(C_hat, C)), Fraction(0))
    den2 = sum((F(b) ** 2 for b in C), Fraction(0))
    if num2 == 0:
        assert got == 0.0
    elif den2 == 0:
        assert got == math.inf
    else:
        assert close(got * got, num2 / den2) or abs(got / math.sqrt(float(num2 / den2)) - 1) <= RTOL


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.booleans())
def test_componentwise_error_matches_fractions(data, m, k, n, with_addend):
    A = data.draw(scaled((m, k)))
    B = data.draw(scaled((k, n)))
    C = data.draw(scaled((m, n)))
    C_hat = data.draw(scaled((m, n)))
    add = data.draw(scaled((m, n))) if with_addend else None
    got = metrics.componentwise_error(C_hat, C, A, B, add)
    want = Fraction(0)
    inf = False
    for i in range(m):
        for j in range(n):
            den = sum((abs(F(A[i, t]) * F(B[t, j])) for t in range(k)), Fraction(0))
            if add is not None:
                den += abs(F(add[i, j]))
            num = abs(F(C_hat[i, j]) - F(C[i, j]))
            if den == 0:
                inf |= num != 0
            else:
                want = max(want, num / den)
    if inf:
        assert got == math.inf
    else:
        assert close(got, want), (got, float(want))


@settings(max_examples=80, deadline=None)
@given(st.data(), st.sampled_from(["fp64", "fp32", "fp16", "bf16"]))
def test_ulp_error_and_signed_stats_match_fractions(data, fmt):
    x = data.draw(scaled((5,)))
    x_hat = data.draw(scaled((5,)))
    from workbench import format as get_format

    f = get_format(fmt)
    got = metrics.ulp_error(x_hat, x, fmt)
    for g, a, b in zip(got, x_hat, x):
        e = max(math.frexp(abs(b))[1] - 1, f.emin) if b != 0 else f.emin
        want = abs(F(a) - F(b)) / Fraction(2) ** (e - f.p + 1)
        assert close(float(g), want), (g, float(want))
    nz = x != 0
    if nz.any():
        stats = metrics.signed_error_stats(x_hat, x, "relative")
        rel = [(F(a) - F(b)) / abs(F(b)) for a, b in zip(x_hat[nz], x[nz])]
        assert close(stats.max_abs, max(abs(r) for r in rel))
        assert stats.frac_positive == pytest.approx(sum(r > 0 for r in rel) / len(rel))


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1.0, 1e200, 1e300])
def test_the_cases_of_the_issue(scale):
    # relative_frobenius_error([2e-200], [1e-200]) was 0.0: squares underflowed
    assert metrics.relative_frobenius_error([2 * scale], [scale]) == 1.0
    # differences and norms near the top of the range did not overflow to Inf/NaN
    big = 8e307
    assert metrics.relative_frobenius_error([big, -big], [-big, big]) == 2.0
    assert metrics.normwise_error_inf([[big]], [[-big]], [[big]], [[1.0]]) == 2.0


def test_empty_products_have_zero_error():
    z = np.zeros((3, 0))
    assert metrics.normwise_error_inf(z, z, np.ones((3, 4)), np.ones((4, 0))) == 0.0
    assert metrics.componentwise_error(z, z, np.ones((3, 4)), np.ones((4, 0))) == 0.0
    assert metrics.relative_frobenius_error([], []) == 0.0
