"""Signs of exact zeros.

Two rules, each from its source, and every kernel computing them must agree:
- a fused sum (T-FDPA and the other FDPA kinds) that is exactly zero is +0 (MMA-Sim 2.1.1,
  ``arithmetic/fdpa.py``: "-0.0 to +0.0"; Xie et al. 2025, Section 4.2);
- the adder after the products - c added late (Khattak-Mikaitis Table II), the late addition
  of an FMA chain (a BLAS ``A @ B + C``) - is an IEEE adder: an exact zero sum is -0 + -0 = -0,
  otherwise +0, or -0 when rounding down (IEEE 754-2019 Section 6.3).
The expected values below are those rules written out, not the engine's output; the lane
kernel (N >= 4 outputs side by side), the one-output kernel (N = 1) and ``explain`` must
all give them.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.engine.kernels import exact_add
from workbench.engine.ops import MODE_CODES

MODES = ["rne", "rz", "rd", "ru"]


def ieee_zero_sum(a: float, b: float, mode: str) -> float:
    """IEEE 754-2019 Sec. 6.3: the sign of an exact zero sum a + b."""
    if a == 0 and b == 0 and math.copysign(1, a) == math.copysign(1, b):
        return a
    return -0.0 if mode == "rd" else 0.0


def same(x: float, y: float) -> bool:
    return x == y and math.copysign(1, x) == math.copysign(1, y)


fp32_values = st.floats(width=32, allow_nan=False, allow_infinity=False).map(float)


@settings(max_examples=300, deadline=None)
@given(a=fp32_values, zero_b=st.sampled_from(["+0", "-0", "-a"]), mode=st.sampled_from(MODES))
def test_exact_add_signs_an_exact_zero_as_ieee(a, zero_b, mode):
    b = {"+0": 0.0, "-0": -0.0, "-a": -a}[zero_b]
    if a + b != 0:
        return
    got = exact_add(a, b, 24, -126, 127, MODE_CODES[mode], False)
    assert same(got, ieee_zero_sum(a, b, mode)), (a, b, mode, got)


def _tfdpa_late(mode: str) -> wb.Model:
    return wb.custom_model("fp16", "fp32", kind="t-fdpa", L=4, F=24, rounding="rz", c_position="late",
                           late_rounding=mode)


def _three_ways(model: wb.Model, a: np.ndarray, b: np.ndarray, c: float) -> list[float]:
    """The output through the lane kernel (8 equal columns), the one-output kernel and explain."""
    lanes = wb.gemm(np.tile(a, (2, 1)), np.tile(b[:, None], (1, 8)), np.full((2, 8), c), model=model)
    one = wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=model)
    assert (np.signbit(lanes) == np.signbit(lanes[0, 0])).all() and (lanes == lanes[0, 0]).all()
    return [float(lanes[0, 0]), float(one[0, 0]), float(wb.explain(list(a), list(b), c, model).value)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("c", [0.0, -0.0])
@pytest.mark.parametrize("products", ["cancel", "zeros", "negative zeros"])
def test_tfdpa_late_c_adds_a_zero_block_as_ieee(products, c, mode):
    a = {"cancel": [1.5, -1.5, 0.25, -0.25], "zeros": [0.0] * 4, "negative zeros": [-0.0] * 4}[products]
    a = np.array(a)
    b = np.array([1.0, 1.0, 2.0, 2.0])
    want = ieee_zero_sum(0.0, c, mode)      # the fused block sum is +0 whatever the products' signs
    for got in _three_ways(_tfdpa_late(mode), a, b, c):
        assert same(got, want), (products, c, mode, got, want)


@pytest.mark.parametrize("late", MODES)
@pytest.mark.parametrize("c", [0.0, -0.0])
@pytest.mark.parametrize("fused", ["rz", "rne"])
@pytest.mark.parametrize("F", [24, 53])
def test_tfdpa_late_c_sees_plus_zero_from_an_underflowed_block(F, fused, c, late):
    # -2^-24 * 2^-24 = -2^-48 lies below fp16's smallest subnormal 2^-24: the fused sum rounds
    # (RZ, RNE) to zero, which the unit gives as +0 (MMA-Sim 2.1.1's t_fdpa ends in + 0.0); the
    # late IEEE addition then sees +0 + c, never -0 + c.  F = 24 runs the lane kernel on the
    # large product, F = 53 the one-output kernel (beyond the lanes' 50 bits).
    model = wb.custom_model("fp16", "fp16", kind="t-fdpa", L=4, F=F, rounding=fused, c_position="late",
                            late_rounding=late)
    a, b = np.array([-(2.0**-24), 0.0, 0.0, 0.0]), np.array([2.0**-24, 0.0, 0.0, 0.0])
    want = ieee_zero_sum(0.0, c, late)
    large = wb.gemm(np.tile(a, (130, 1)), np.tile(b[:, None], (1, 130)), np.full((130, 130), c), model=model)
    assert (large == 0).all() and (np.signbit(large) == np.signbit(want)).all(), (F, fused, c, late)
    for got in _three_ways(model, a, b, c):
        assert same(got, want), (F, fused, c, late, got, want)


@pytest.mark.parametrize("mode", MODES)
def test_tfdpa_late_c_cancelling_the_block_is_ieee(mode):
    a, b = np.array([1.5, 0.25, -3.0, 0.125]), np.array([1.0, 2.0, 0.5, 4.0])
    part = float(a @ b)                     # 1.5 + 0.5 - 1.5 + 0.5 = 1.0, exact in every window
    for got in _three_ways(_tfdpa_late(mode), a, b, -part):
        assert same(got, -0.0 if mode == "rd" else 0.0), (mode, got)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("c", [0.0, -0.0])
def test_fma_chain_late_c_keeps_an_underflowed_negative_zero(c, mode):
    # fp32 FMA chain from +0: -2^-100 * 2^-100 rounds (RNE) to -0, then -0 + c late
    model = wb.custom_model("fp32", "fp32", kind="fma", c_position="late", late_rounding=mode)
    a, b = np.array([-(2.0**-100)]), np.array([2.0**-100])
    want = ieee_zero_sum(-0.0, c, mode)
    got_lanes = wb.gemm(np.tile(a, (4, 1)), np.tile(b[:, None], (1, 16)), np.full((4, 16), c), model=model)
    got_one = wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=model)
    for got in (float(got_lanes[0, 0]), float(got_one[0, 0])):
        assert same(got, want), (c, mode, got, want)
    assert (np.signbit(got_lanes) == np.signbit(want)).all()
    # the same arithmetic in IEEE hardware: numpy's float32 fma chain is an independent check
    hw = np.float32(np.float32(a[0]) * np.float32(b[0])) + np.float32(c)
    if mode == "rne":
        assert same(float(hw), want)
