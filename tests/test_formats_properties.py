"""Hypothesis properties of workbench.round: bracketing, idempotence, monotonicity, symmetry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench

NAMES = ["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp6_e3m2", "fp4_e2m1", "e8m13"]
DETERMINISTIC = ["rne", "rna", "rnz", "rz", "rd", "ru", "ra", "ro"]
SYMMETRIC = ["rne", "rna", "rnz", "rz", "ra", "ro"]

def _in_range(name: str) -> st.SearchStrategy[float]:
    """Values where rounding to ``name`` is decided: a signed significand in [1, 2) at
    every exponent from below the smallest subnormal to above the largest finite value
    (binades drawn uniformly, so subnormals, ties and overflow are all common), the
    format's own boundary values, and signed zeros."""
    f = workbench.format(name)
    sig = st.one_of(st.floats(1.0, 2.0, exclude_max=True),          # anything in the binade
                    st.integers(0, 2 ** (f.man_bits + 2) - 1).map(lambda k: 1 + k / 2 ** (f.man_bits + 2)))  # ties
    spread = st.builds(lambda s, m, e: s * m * 2.0 ** e, st.sampled_from([-1.0, 1.0]), sig,
                       st.integers(f.emin - f.man_bits - 2, f.emax + 2))
    edges = [f.max, f.min_normal, f.min_normal * 2.0 ** -f.man_bits, 0.0]
    return st.one_of(spread, st.sampled_from(edges + [-v for v in edges]))


in_range = {name: _in_range(name) for name in NAMES}
finite_in = {name: in_range[name].filter(lambda x, m=workbench.format(name).max: abs(x) <= m) for name in NAMES}


def _on_grid(v: float, name: str) -> bool:
    """Whether a finite ``v`` is a value of the format, from its definition (not from
    workbench.is_representable, which reads the same rounding): zero, or a multiple of
    the quantum 2^(max(e, emin) - man_bits) of its binade e, no larger than the largest
    finite value, and normal where the format has no subnormals."""
    f = workbench.format(name)
    if v == 0:
        return True
    a = abs(v)
    e = math.frexp(a)[1] - 1
    q = math.ldexp(1.0, max(e, f.emin) - f.man_bits)
    return (a / q).is_integer() and a <= f.max and (f.subnormals or a >= f.min_normal) and (f.signed or v > 0)


def _r(x, name, mode, **kw):
    return float(workbench.round(np.array([x]), name, mode, **kw)[0])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_round_down_and_up_bracket_the_value(name, data):
    x = data.draw(finite_in[name])
    lo, hi = _r(x, name, "rd"), _r(x, name, "ru")
    assert lo <= x <= hi
    assert _on_grid(lo, name) and _on_grid(hi, name), (x, lo, hi)
    for mode in DETERMINISTIC:
        assert _r(x, name, mode) in (lo, hi)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(DETERMINISTIC), st.data())
def test_idempotent(name, mode, data):
    x = data.draw(in_range[name])
    once = _r(x, name, mode, saturate=True)
    assert _r(once, name, mode, saturate=True) == once
    assert workbench.is_representable(np.array([once]), name)[0]
    assert not math.isfinite(once) or _on_grid(once, name), (x, once)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(DETERMINISTIC), st.data())
def test_monotone(name, mode, data):
    x = data.draw(in_range[name])
    f = workbench.format(name)
    q = 2.0 ** (max(int(np.frexp(abs(x))[1]) - 1, f.emin) - f.man_bits)   # x's quantum in the format
    y = data.draw(st.one_of(in_range[name], st.integers(-6, 6).map(lambda k: x + k * q / 4)))  # or a neighbour
    x, y = min(x, y), max(x, y)
    assert _r(x, name, mode, saturate=True) <= _r(y, name, mode, saturate=True)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(SYMMETRIC), st.data())
def test_symmetric_modes_commute_with_negation(name, mode, data):
    x = data.draw(in_range[name])
    assert _r(-x, name, mode, saturate=True) == -_r(x, name, mode, saturate=True)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_round_down_is_minus_round_up_of_minus(name, data):
    x = data.draw(in_range[name])
    assert _r(x, name, "rd", saturate=True) == -_r(-x, name, "ru", saturate=True)


@pytest.mark.parametrize("name", NAMES)
def test_vectorised_equals_elementwise(name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 8, 1000)
    whole = workbench.round(x, name, "rne", saturate=True)
    one_by_one = np.array([_r(v, name, "rne", saturate=True) for v in x])
    assert np.array_equal(whole, one_by_one)
