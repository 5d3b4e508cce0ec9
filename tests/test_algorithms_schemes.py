"""CUTLASS 3xTF32/4xTF32, bf16x3/x6/x9 and the Ozaki schemes on the exact INT8 unit.

Accuracy claims checked: CUTLASS (example 27, "3xTF32 ... fp32 accuracy") and Henry
et al. (ARITH 2019, Section IV: bf16x3 ~ 16 bits, bf16x6/x9 ~ fp32) reach the
accumulator's own level; Ozaki scheme (Ootomo, Ozaki & Yokota 2024, Section 5) and
Ozaki scheme II (Ozaki, Uchino & Imamura 2025, Section 5) reach fp64 accuracy with
enough slices / moduli, and the error falls as slices / moduli are added.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench
from algorithms import INT8_UNIT, bf16xn, cutlass_xtf32, ozaki
from workbench.numbers.metrics import normwise_error_inf


def _fp32_data(m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, k)).astype(np.float32).astype(np.float64)
    B = rng.standard_normal((k, n)).astype(np.float32).astype(np.float64)
    return A, B


def _unit_floor(model, A, B) -> float:
    """Error of the unit on inputs it holds exactly: its accumulation error alone."""
    Ar, Br = workbench.round(A, model.in_format), workbench.round(B, model.in_format)
    return normwise_error_inf(workbench.gemm(Ar, Br, model=model), workbench.exact.gemm(Ar, Br), Ar, Br)


@pytest.mark.parametrize("device", ["A100", "H100"])
def test_cutlass_3xtf32_reaches_the_accumulators_fp32_level(device):
    """CUTLASS 3xTF32/4xTF32: the tf32 input rounding is gone, the unit's fp32 accumulation is what remains.

    Error within 5x of the unit's own accumulation error on exactly representable
    data (three chained products instead of one: measured 1.1-3x) and >30x below a
    single tf32 product (measured 80x on A100 at K = 1024).
    """
    A, B = _fp32_data(16, 1024, 16, 1)
    exact = workbench.exact.gemm(A, B)
    model = workbench.preset(device, "tf32", "fp32")
    e3 = normwise_error_inf(cutlass_xtf32(A, B, model=model), exact, A, B)
    e4 = normwise_error_inf(cutlass_xtf32(A, B, model=model, products=4), exact, A, B)
    e1 = normwise_error_inf(workbench.gemm(workbench.round(A, "tf32", "rz"), workbench.round(B, "tf32", "rz"),
                                           model=model), exact, A, B)
    floor = _unit_floor(model, A, B)
    assert e3 < 5 * floor, (e3, floor)
    assert e4 < 5 * floor, (e4, floor)
    assert 30 * e3 < e1, (e3, e1)


def test_cutlass_words_big_truncated_small_rna():
    """CUTLASS FastF32: big = tf32 round-toward-zero, small = tf32(x - big) round-half-ulp-truncate (RNA)."""
    # x - big = 2^-11 + 2^-22 is a tie at tf32's 11 bits: RNA gives 2^-11 + 2^-21 (RNE would give 2^-11)
    x = np.array([[1 + 2**-10 + 2**-11 + 2**-22, -(1 + 2**-10 + 2**-11 + 2**-22)]])
    _, w = cutlass_xtf32(x, np.ones((2, 1)), model=workbench.preset("A100", "tf32", "fp32"), return_words=True)
    np.testing.assert_array_equal(w["A_big"], [[1 + 2**-10, -(1 + 2**-10)]])
    np.testing.assert_array_equal(w["A_small"], [[2**-11 + 2**-21, -(2**-11 + 2**-21)]])


def test_bf16xn_accuracy_by_product_count():
    """Henry et al. Section IV: bf16x3 < bf16x6 ~ bf16x9 ~ fp32 accumulation level on the A100 bf16 unit."""
    A, B = _fp32_data(16, 1024, 16, 2)
    exact = workbench.exact.gemm(A, B)
    model = workbench.preset("A100", "bf16", "fp32")
    e = {p: normwise_error_inf(bf16xn(A, B, model=model, products=p), exact, A, B) for p in (3, 6, 9)}
    floor = _unit_floor(model, A, B)
    assert e[3] > 3 * e[6], e
    assert e[9] <= 1.5 * e[6], e
    assert e[6] < 3 * floor, (e, floor)
    e1 = normwise_error_inf(workbench.gemm(workbench.round(A, "bf16"), workbench.round(B, "bf16"), model=model),
                            exact, A, B)
    assert 100 * e[3] < e1, (e, e1)


def test_bf16xn_words_sum_to_the_fp32_input():
    """Three bf16 words hold the 24 bits of an fp32 value exactly (8 + 8 + 8)."""
    A, B = _fp32_data(4, 8, 3, 3)
    _, w = bf16xn(A, B, model=workbench.preset("A100", "bf16", "fp32"), return_words=True)
    np.testing.assert_array_equal(w["A"][0] + w["A"][1] + w["A"][2], A)
    assert w["pairs"] == [(1, 2), (2, 1), (1, 1)]


@pytest.mark.parametrize("scale", [1.0, 2.0**-600, 2.0**500])
def test_ozaki_reaches_fp64_accuracy(scale):
    """Ozaki scheme with 8 seven-bit slices and scheme II with 16 moduli: error within 4x of float64 BLAS."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((20, 300)) * scale
    B = rng.standard_normal((300, 20))
    exact = workbench.exact.gemm(A, B)
    e_blas = max(normwise_error_inf(A @ B, exact, A, B), 2.0**-53)
    e1 = normwise_error_inf(ozaki(A, B, model=INT8_UNIT, slices=8), exact, A, B)
    e2 = normwise_error_inf(ozaki(A, B, scheme="II", moduli=16), exact, A, B)
    assert e1 < 4 * e_blas and e2 < 4 * e_blas, (e1, e2, e_blas)


def test_ozaki_error_falls_with_slices_and_moduli():
    """Ozaki scheme: each extra 7-bit slice gains >= 2^5 until fp64; scheme II likewise per modulus pair."""
    rng = np.random.default_rng(6)
    A = rng.standard_normal((10, 200))
    B = rng.standard_normal((200, 10))
    exact = workbench.exact.gemm(A, B)
    e = [normwise_error_inf(ozaki(A, B, slices=s), exact, A, B) for s in (2, 3, 4, 5)]
    assert all(e[i + 1] * 2**5 < e[i] for i in range(3)), e
    e2 = [normwise_error_inf(ozaki(A, B, scheme="II", moduli=m), exact, A, B) for m in (6, 8, 10)]
    assert all(e2[i + 1] * 2**5 < e2[i] for i in range(2)), e2


def test_int8_unit_is_exact_and_refuses_int32_overflow():
    """The INT8 unit: exact integer products + C; ValueError on non-int8 input and on possible int32 overflow."""
    rng = np.random.default_rng(8)
    A = rng.integers(-128, 128, (7, 300))
    B = rng.integers(-128, 128, (300, 5))
    C = rng.integers(-(2**20), 2**20, (7, 5))
    np.testing.assert_array_equal(INT8_UNIT.gemm(A, B, C), A.astype(object) @ B.astype(object) + C)
    with pytest.raises(ValueError, match="int8"):
        INT8_UNIT.gemm(A + 0.5, B)
    with pytest.raises(ValueError, match="int8"):
        INT8_UNIT.gemm(A * 2, B)
    big = np.full((1, 2**17 + 1), -128)
    with pytest.raises(ValueError, match="int32 overflow"):
        INT8_UNIT.gemm(big, big.T)
    with pytest.raises(ValueError, match="k_chunk"):
        ozaki(np.ones((2, 3)), np.ones((3, 2)), k_chunk=2**20)


def test_ozaki_needs_the_int8_unit():
    with pytest.raises(ValueError, match="INT8_UNIT"):
        ozaki(np.ones((2, 3)), np.ones((3, 2)), model=workbench.preset("A100", "fp16", "fp32"))
