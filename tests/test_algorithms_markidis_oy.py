"""Markidis et al. (2018) and Ootomo & Yokota (2022) on NVIDIA presets.

Checked against Valpey et al. (2025), Section 6 (Property 5, Table 5 and the
walk-through below it): Ootomo-Yokota's method, more accurate on average, is less
accurate than Markidis' on inputs where the unit's unnormalised block sum keeps a
bit that leaving the unit (RZ to fp32) drops.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import workbench
import workbench.numbers.inputs
from algorithms import markidis, ootomo_yokota
from workbench.numbers.metrics import normwise_error_inf

# One dot product of K = 4 (one Volta block), every entry in O-Y's Type 1 exponent
# range [2^-15, 2^14]; all words are exact except b_2 = 2^-6 + 2^-18, whose residual
# gives the correction A16_2 R_B2 = 2^-24 (Markidis) or 2^-13 (O-Y, scaled by 2^11).
A_ROW = [1 - 2**-11, 2**-6, 2**-6, 2**-12]
B_COL = [1, 2**-6 + 2**-18, 2**-6, 2**-12]


def _exact_dot(a: list[float], b: list[float]) -> Fraction:
    return sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(0))


@pytest.mark.parametrize("device", ["V100", "A100", "H100", "B200"])
def test_valpey_section6_markidis_beats_ootomo_yokota_on_constructed_input(device):
    """Valpey et al. Section 6, Property 5: |Markidis - exact| < |O-Y - exact| on a Type 1 input.

    Exact: a.b = (1 - 2^-11) + 2^-12 + 2^-24 + 2^-12 + 2^-24 = 1 + 2^-23 (Fractions).
    The large products' block sums to 1 + 2^-24, held unnormalised by the unit.
    Markidis (corrections chained first, then A16 B16 with them as addend): the block
    adds the correction 2^-24 inside the unit -> 1 + 2^-23, exact.  O-Y: the large
    block leaves the unit from c = 0, RZ to fp32 gives 1.0; then
    fl(1.0 + 2^-13 / 2^11) = fl(1 + 2^-24) = 1.0 (tie to even): error 2^-23.
    """
    A = np.array([A_ROW])
    B = np.array([B_COL]).T
    exact = _exact_dot(A_ROW, B_COL)
    assert exact == 1 + Fraction(1, 2**23)
    for v in A_ROW + B_COL:
        assert -15 <= np.frexp(v)[1] - 1 <= 14  # Type 1 exponent range
        assert np.float32(v) == v  # fp32 inputs
    model = workbench.preset(device, "fp16", "fp32")
    m_val = markidis(A, B, model=model)[0, 0]
    m4_val = markidis(A, B, model=model, terms=4)[0, 0]
    oy_val, words = ootomo_yokota(A, B, model=model, return_words=True)
    assert words["D_hi"][0, 0] == 1.0 and words["D_lo"][0, 0] == 2.0**-13
    assert Fraction(m_val) == exact and Fraction(m4_val) == exact
    assert Fraction(oy_val[0, 0]) == 1
    assert abs(Fraction(m_val) - exact) < abs(Fraction(oy_val[0, 0]) - exact)


def test_markidis_order_decides_the_effect():
    """Valpey et al. Section 6 step 7: the gain needs the corrections inside the large products' block.

    With the large product first (``ordering="large_first"``) or O-Y's in-unit "rz"
    variant, the block 1 + 2^-24 is truncated to 1.0 before the correction arrives.
    """
    A = np.array([A_ROW])
    B = np.array([B_COL]).T
    model = workbench.preset("V100", "fp16", "fp32")
    assert markidis(A, B, model=model, ordering="large_first")[0, 0] == 1.0
    assert ootomo_yokota(A, B, model=model, accumulation="rz")[0, 0] == 1.0


def _type1(m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    A = workbench.inputs.exponent_range((m, k), [seed, 1], type="type1").astype(np.float32).astype(np.float64)
    B = workbench.inputs.exponent_range((k, n), [seed, 2], type="type1").astype(np.float32).astype(np.float64)
    return A, B


@pytest.mark.parametrize("device", ["V100", "A100"])
def test_ootomo_yokota_more_accurate_than_markidis_on_type1_inputs(device):
    """Ootomo & Yokota Section 5 (Type 1 inputs): their method beats Markidis' on average.

    Valpey et al. Section 6 stress that Property 5 does not contradict this: here O-Y's
    normwise error is at least 2x smaller (measured 2.6x on V100, more on A100) than Markidis' at K = 2048, and within 4x of
    an fp32 GEMM with round-to-nearest (numpy float32 matmul) while Markidis' RZ
    accumulation is not.
    """
    A, B = _type1(16, 2048, 16, 7)
    exact = workbench.exact.gemm(A, B)
    model = workbench.preset(device, "fp16", "fp32")
    e_m = normwise_error_inf(markidis(A, B, model=model), exact, A, B)
    e_oy = normwise_error_inf(ootomo_yokota(A, B, model=model), exact, A, B)
    e_sgemm = normwise_error_inf((A.astype(np.float32) @ B.astype(np.float32)).astype(np.float64), exact, A, B)
    assert 2 * e_oy < e_m, (e_oy, e_m)
    assert e_oy < 4 * e_sgemm, (e_oy, e_sgemm)


def test_tf32tf32_recovers_fp32_accuracy():
    """Ootomo & Yokota tf32tf32 on the A100 tf32 unit: >300x more accurate than one tf32 word (measured ~900x), ~fp32 level."""
    A, B = _type1(16, 1024, 16, 3)
    exact = workbench.exact.gemm(A, B)
    tf32 = workbench.preset("A100", "tf32", "fp32")
    e_oy = normwise_error_inf(ootomo_yokota(A, B, model=tf32, variant="tf32tf32"), exact, A, B)
    At, Bt = workbench.round(A, "tf32"), workbench.round(B, "tf32")
    e_one = normwise_error_inf(workbench.gemm(At, Bt, model=tf32), exact, A, B)
    assert e_oy * 300 < e_one, (e_oy, e_one)
    assert e_oy < 2.0**-22


def test_split_words_are_the_papers():
    """Markidis: R_A = fp16(A - A16), unscaled; O-Y halfhalf: R_A = fp16((A - A16) 2^11); tf32tf32: RNA split."""
    A, B = _type1(3, 5, 2, 11)
    v = workbench.preset("V100", "fp16", "fp32")
    _, wm = markidis(A, B, model=v, return_words=True)
    _, wo = ootomo_yokota(A, B, model=v, return_words=True)
    A16 = A.astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(wm["A16"], A16)
    np.testing.assert_array_equal(wm["R_A"], (A - A16).astype(np.float16).astype(np.float64))
    np.testing.assert_array_equal(wo["R_A"], ((A - A16) * 2048).astype(np.float16).astype(np.float64))
    x = np.array([[1 + 2**-11, 1 + 3 * 2**-11]])  # ties: tf32 RNA rounds both away from zero
    _, wt = ootomo_yokota(x, np.ones((2, 1)), model=workbench.preset("A100", "tf32", "fp32"), variant="tf32tf32",
                          return_words=True)
    np.testing.assert_array_equal(wt["A_hi"], [[1 + 2**-10, 1 + 2 * 2**-10]])
    np.testing.assert_array_equal(wt["R_A"], [[-(2**-11), -(2**-11)]])
