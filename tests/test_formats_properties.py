"""Hypothesis properties of workbench.round: bracketing, idempotence, monotonicity, symmetry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench

NAMES = ["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp6_e3m2", "fp4_e2m1", "e8m13"]
DETERMINISTIC = ["rne", "rna", "rnz", "rz", "rd", "ru", "ra", "ro"]
SYMMETRIC = ["rne", "rna", "rnz", "rz", "ra", "ro"]

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
finite_in = {name: st.floats(min_value=-workbench.format(name).max, max_value=workbench.format(name).max,
                             allow_nan=False, width=64) for name in NAMES}


def _r(x, name, mode, **kw):
    return float(workbench.round(np.array([x]), name, mode, **kw)[0])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_round_down_and_up_bracket_the_value(name, data):
    x = data.draw(finite_in[name])
    lo, hi = _r(x, name, "rd"), _r(x, name, "ru")
    assert lo <= x <= hi
    for mode in DETERMINISTIC:
        assert _r(x, name, mode) in (lo, hi)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(DETERMINISTIC), finite)
def test_idempotent(name, mode, x):
    once = _r(x, name, mode, saturate=True)
    assert _r(once, name, mode, saturate=True) == once
    assert workbench.is_representable(np.array([once]), name)[0]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(DETERMINISTIC), finite, finite)
def test_monotone(name, mode, x, y):
    x, y = min(x, y), max(x, y)
    assert _r(x, name, mode, saturate=True) <= _r(y, name, mode, saturate=True)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(SYMMETRIC), finite)
def test_symmetric_modes_commute_with_negation(name, mode, x):
    assert _r(-x, name, mode, saturate=True) == -_r(x, name, mode, saturate=True)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NAMES), finite)
def test_round_down_is_minus_round_up_of_minus(name, x):
    assert _r(x, name, "rd", saturate=True) == -_r(-x, name, "ru", saturate=True)


@pytest.mark.parametrize("name", NAMES)
def test_vectorised_equals_elementwise(name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 8, 1000)
    whole = workbench.round(x, name, "rne", saturate=True)
    one_by_one = np.array([_r(v, name, "rne", saturate=True) for v in x])
    assert np.array_equal(whole, one_by_one)
