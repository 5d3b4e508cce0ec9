"""Exact dot products and matrix products: fast path vs the mpmath oracle vs Fractions.

Expected values come from exact rational arithmetic written here (Python
``Fraction`` sums of exact products, rounded by Python's correctly rounded integer
division) and from hand-derived cases at the subnormal and overflow edges.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.numbers import exact

MAXF = np.finfo(np.float64).max
TINY = 2.0**-1074


def ref_round(x: Fraction) -> float:
    """Independent RNE of an exact rational to float64 (ties at the top go to inf)."""
    if abs(x) >= Fraction(2**1024 - 2**970):
        return math.inf if x > 0 else -math.inf
    return x.numerator / x.denominator


def ref_dot(a, b, c=0.0) -> Fraction:
    return Fraction(float(c)) + sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0))


def ref_gemm(A, B, C=None, alpha=1.0, beta=1.0):
    m, n = A.shape[0], B.shape[1]
    out = np.empty((m, n), dtype=object)
    for i in range(m):
        for j in range(n):
            s = Fraction(alpha) * ref_dot(A[i], B[:, j])
            if C is not None:
                s += Fraction(beta) * Fraction(float(C[i, j]))
            out[i, j] = s
    return out


def same_bits(x, y) -> bool:
    return np.array_equal(np.asarray(x, np.float64).view(np.int64), np.asarray(y, np.float64).view(np.int64))


def wide_random(rng, shape, lo=-300, hi=300):
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(lo, hi, shape)


def cancelling(rng, n, big=1e20):
    """Pairs (x, y), (-x, y) that cancel exactly plus small terms: condition >= 1e30."""
    u = rng.standard_normal(n) * big
    v = rng.standard_normal(n) * big
    s = rng.standard_normal(3)
    t = rng.standard_normal(3) * 1e-3
    a = np.concatenate([u, -u, s, -s * (1 + 2.0**-52)])
    b = np.concatenate([v, v, t, t])
    p = rng.permutation(a.size)
    return a[p], b[p]


@pytest.mark.parametrize("method", ["fast", "mpmath"])
def test_random_dots_match_fractions(method):
    rng = np.random.default_rng(1)
    for n in (1, 7, 300, 600):
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        c = float(rng.standard_normal())
        d, ex = exact.dot(a, b, c, return_exact="fraction", method=method)
        r = ref_dot(a, b, c)
        assert ex == r
        assert same_bits(d, ref_round(r))


def test_cancelling_dots_condition_1e30():
    rng = np.random.default_rng(2)
    for _ in range(5):
        a, b = cancelling(rng, 400)
        r = ref_dot(a, b)
        cond = sum(abs(Fraction(x) * Fraction(y)) for x, y in zip(a, b)) / abs(r)
        assert cond > 1e30
        fast = exact.dot(a, b)
        assert same_bits(fast, ref_round(r))
        assert same_bits(fast, exact.dot(a, b, method="mpmath"))
        assert float(np.dot(a, b)) != fast  # float64 arithmetic is far off here


def test_wide_range_gemm_fast_equals_mpmath_oracle():
    rng = np.random.default_rng(3)
    A, B, C = wide_random(rng, (3, 70)), wide_random(rng, (70, 4)), wide_random(rng, (3, 4))
    for alpha, beta in ((1.0, 1.0), (-0.3, 1e-7), (3e200, -2.5e-300), (1.0, 0.0)):
        D = exact.gemm(A, B, C, alpha, beta)
        assert same_bits(D, exact.gemm(A, B, C, alpha, beta, method="mpmath"))
        R = ref_gemm(A, B, C if beta else None, alpha, beta)
        assert same_bits(D, np.vectorize(ref_round, otypes=[float])(R))


def test_tiles_blocks_and_k_split_paths():
    rng = np.random.default_rng(4)
    # more outputs than one tile (8 x 8), K crossing the 256-term blocks
    A = rng.standard_normal((13, 531)) * 2.0 ** rng.integers(-60, 60, (13, 531))
    B = rng.standard_normal((531, 17))
    D, ex = exact.gemm(A, B, return_exact="fraction")
    R = ref_gemm(A, B)
    assert (ex == R).all()
    assert same_bits(D, np.vectorize(ref_round, otypes=[float])(R))
    a, b = wide_random(rng, 5000, -30, 30), wide_random(rng, 5000, -30, 30)
    assert exact.dot(a, b, return_exact="fraction")[1] == ref_dot(a, b)


def test_threaded_paths_on_long_products():
    """Above 2^21 MACs the threaded kernel runs: K split across threads for a single
    output, output tiles otherwise.  A repeated pattern gives the exact value."""
    rng = np.random.default_rng(7)
    p, q = wide_random(rng, 1000, -30, 30), wide_random(rng, 1000, -30, 30)
    reps = 2200
    a, b = np.tile(p, reps), np.tile(q, reps)
    expected = reps * ref_dot(p, q) + Fraction(0.75)
    d, ex = exact.dot(a, b, 0.75, return_exact="fraction")
    assert ex == expected and same_bits(d, ref_round(expected))
    B = np.stack([b, -2.0 * b], axis=1)
    D = exact.gemm(a[None, :], B)
    assert same_bits(D, [[ref_round(expected - Fraction(0.75)), ref_round(-2 * (expected - Fraction(0.75)))]])


def test_carry_headroom_with_largest_significands():
    """Thousands of products of 53-bit all-ones significands: every bin near its limit."""
    m = float(2**53 - 1)
    for sign in (1, -1):
        a = np.full(3000, m)
        b = np.full(3000, sign * m)
        d, ex = exact.dot(a, b, 1.0, return_exact="fraction")
        assert ex == 1 + sign * 3000 * (2**53 - 1) ** 2
        assert same_bits(d, ref_round(ex))


def test_subnormal_results_round_to_nearest_even():
    # 2^-1075 is halfway between 0 and 2^-1074: ties to even gives +0
    assert same_bits(exact.dot([TINY], [0.5]), 0.0)
    # 3 * 2^-1075 is halfway between 2^-1074 (odd) and 2^-1073 (even)
    assert exact.dot([TINY], [1.5]) == 2.0**-1073
    # just above the tie rounds up
    assert exact.dot([TINY, TINY], [0.5, 2.0**-60]) == TINY
    # sums of subnormal products landing in the normal range
    a = np.full(4, 2.0**-1000)
    b = np.full(4, 2.0**-30)
    assert exact.dot(a, b) == 2.0**-1028
    rng = np.random.default_rng(5)
    a = rng.standard_normal(50) * 2.0**-1040
    b = rng.standard_normal(50) * 2.0**-20
    r = ref_dot(a, b)
    assert same_bits(exact.dot(a, b), ref_round(r))
    assert same_bits(exact.dot(a, b, method="mpmath"), ref_round(r))


def test_overflow_edge():
    half_ulp = 2.0**970  # half an ulp of the largest float64
    # exactly at the midpoint between MAXF and 2^1024: ties to even -> inf
    assert exact.dot([MAXF, half_ulp], [1.0, 1.0]) == math.inf
    assert exact.dot([-MAXF, -half_ulp], [1.0, 1.0]) == -math.inf
    # just below the midpoint -> MAXF
    assert exact.dot([MAXF, half_ulp, -TINY], [1.0, 1.0, 1.0]) == MAXF
    # products far beyond the range that cancel back into it
    d = exact.dot([1e308, -1e308, 3.0], [1e300, 1e300, 7.0])
    assert d == 21.0
    # intermediate sums beyond the range, final value in range
    a = np.array([MAXF, MAXF, -MAXF, 1.0])
    assert exact.dot(a, [1.0, 1.0, 1.0, 1.0]) == MAXF  # MAXF + 1 rounds to MAXF
    assert exact.dot(a, np.ones(4), method="mpmath") == MAXF
    assert exact.dot([MAXF], [2.0]) == math.inf


def test_exact_zero_and_degenerate_shapes():
    assert same_bits(exact.dot([1.0, -1.0], [3.0, 3.0]), 0.0)
    assert same_bits(exact.dot([], []), 0.0)
    assert exact.dot([], [], 2.5) == 2.5
    D = exact.gemm(np.ones((2, 3)), np.ones((3, 4)), np.full((2, 4), 5.0), alpha=0.0, beta=2.0)
    assert (D == 10.0).all()
    assert exact.gemm(np.ones((2, 0)), np.ones((0, 3))).shape == (2, 3)
    assert exact.gemm(np.ones((0, 4)), np.ones((4, 3))).shape == (0, 3)


def test_return_exact_mpf_is_exact():
    rng = np.random.default_rng(6)
    a, b = cancelling(rng, 50)
    for method in ("fast", "mpmath"):
        d, v = exact.dot(a, b, 1e-30, return_exact="mpf", method=method)
        assert isinstance(v, mpmath.mpf)
        sign, man, exp, _ = v._mpf_
        assert Fraction((-1) ** sign * int(man)) * Fraction(2) ** int(exp) == ref_dot(a, b, 1e-30)


def test_exact_precision_formula():
    # two terms 2^0 and 2^-100: 101 bits + log2(3) rounded up + margin
    assert exact.exact_precision(2, -100, 1) == 101 + 2 + 8


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
        ),
        min_size=0,
        max_size=12,
    ),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_hypothesis_any_magnitude(pairs, c):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    d, ex = exact.dot(a, b, c, return_exact="fraction")
    r = ref_dot(a, b, c)
    assert ex == r
    assert same_bits(d, ref_round(r)) or (r == 0 and d == 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_rejected_with_reason(bad):
    with pytest.raises(ValueError, match="do not exist for NaN or Inf"):
        exact.dot([1.0, bad], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"C\[0, 1\]"):
        exact.gemm(np.ones((2, 2)), np.ones((2, 2)), np.array([[1.0, bad], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="alpha"):
        exact.gemm(np.ones((2, 2)), np.ones((2, 2)), alpha=bad)


def test_shape_and_option_errors():
    with pytest.raises(ValueError, match="inner dimensions"):
        exact.gemm(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="C.shape"):
        exact.gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="same length"):
        exact.dot([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="1-D"):
        exact.dot(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="return_exact"):
        exact.dot([1.0], [1.0], return_exact="decimal")
    with pytest.raises(ValueError, match="method"):
        exact.dot([1.0], [1.0], method="gmpy")
    with pytest.raises(TypeError, match="complex"):
        exact.dot([1j], [1.0])
    with pytest.raises(ValueError, match="not exactly a float64"):
        exact.dot(np.array([2**60 + 1], dtype=np.int64), np.array([1], dtype=np.int64))


def test_fraction_to_float64_edges():
    assert exact.fraction_to_float64(Fraction(2**1024 - 2**970)) == math.inf
    assert exact.fraction_to_float64(Fraction(2**1024 - 2**970 - 1)) == MAXF
    assert exact.fraction_to_float64(Fraction(1, 2**1075)) == 0.0
    assert exact.fraction_to_float64(Fraction(3, 2**1076)) == TINY


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(finite, min_size=6, max_size=6),
    st.lists(finite, min_size=6, max_size=6),
    st.lists(finite, min_size=4, max_size=4),
    finite,
    finite,
)
def test_hypothesis_gemm_alpha_beta_any_magnitude(a, b, c, alpha, beta):
    A = np.array(a).reshape(2, 3)
    B = np.array(b).reshape(3, 2)
    C = np.array(c).reshape(2, 2)
    D, ex = exact.gemm(A, B, C, alpha, beta, return_exact="fraction")
    R = ref_gemm(A, B, C if beta else None, alpha, beta)
    assert (ex == R).all()
    expected = np.vectorize(ref_round, otypes=[float])(R)
    # exact zeros are +0.0; a nonzero value that rounds to zero keeps its sign (-5e-324 * 0.5 -> -0.0)
    expected = np.where(np.vectorize(lambda r: r == 0, otypes=[bool])(R), 0.0, expected)
    assert same_bits(D, expected)
