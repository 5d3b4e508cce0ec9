"""FP8 Ozaki-II / Ozaki-I on FP8 units, ADP-style automatic counts, bf16xN on every bf16 unit (issue 51 item 2).

Claims checked (expected values from exact arithmetic: :func:`workbench.numbers.exact.gemm`,
Python integers, Fractions):

* FP8 Ozaki-II (Uchino, Ozaki & Imamura, arXiv:2603.10634; GEMMul8's FP8 moduli) on an
  idealised exact FP8 unit reaches FP64 accuracy with the published moduli counts:
  the authors' measurements (GEMMul8_numerical_results, results_07, B200, K = 1024,
  accurate mode) give max relative error ~2.2e-16 with 15 moduli for phi = -1 .. 2
  and 1e-12 .. 1e-10 with 12 moduli; fewer moduli, lower accuracy.
* Its unit GEMMs run on the presets (H100 wgmma and mma.sync, B200, MI300X FNUZ); on
  Hopper's wgmma (sum kept to 13 fraction bits, truncated, rounded via e8m13) long
  sums are not exact, which is reported, and a shorter k_chunk restores exactness.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import algorithms
import workbench as wb
from algorithms import adp
from algorithms.ozaki_fp8 import (FP8_MODULI, SQUARE_ROOT, _split_residue, fp8_exact_unit, ozaki1_fp8,
                                  ozaki2_fp8)

EXACT = fp8_exact_unit()
FP8_PRESETS = ["H100:fp8_e4m3:fp32", "hopper/mma.sync/fp8_e4m3->fp32/mma.sync", "B200:fp8_e4m3:fp32",
               "MI300X:fp8_e4m3fnuz:fp32"]


def _gemmul8_matrix(rng, m, n, phi):
    """GEMMul8's test matrices (testing/make_matrix.hpp): randn for phi < 0, else (rand - 0.5) exp(phi randn)."""
    if phi < 0:
        return rng.standard_normal((m, n))
    return (rng.random((m, n)) - 0.5) * np.exp(rng.standard_normal((m, n)) * phi)


def _max_rel(D, exact):
    return float(np.max(np.abs(D - exact) / np.abs(exact)))


def test_moduli_are_gemmul8s_pairwise_coprime_set():
    assert len(FP8_MODULI) == 20 and FP8_MODULI[:6] == (1089, 1024, 961, 841, 625, 529)
    assert all(math.gcd(a, b) == 1 for i, a in enumerate(FP8_MODULI) for b in FP8_MODULI[i + 1:])
    assert all(s * s == m for m, s in SQUARE_ROOT.items())
    assert all(m <= 511 for m in FP8_MODULI[6:])


@pytest.mark.parametrize("m", FP8_MODULI)
def test_every_residue_splits_into_e4m3_integers_and_the_products_recover_it(m):
    """Every symmetric residue r: digits are integers in [-16, 16] (exact in e4m3) and sum back to r;
    the three digit products give r_a r_b mod m (checked with Python integers on a grid of pairs)."""
    r = np.arange(-(m // 2), m // 2 + 1, dtype=np.float64)
    d = _split_residue(r, m)
    for x in d:
        assert np.all(np.abs(x) <= 16) and np.all(x == np.round(x))
        np.testing.assert_array_equal(wb.round(x, "fp8_e4m3"), x)
    if m in SQUARE_ROOT:
        np.testing.assert_array_equal(SQUARE_ROOT[m] * d[0] + d[1], r)
    else:
        np.testing.assert_array_equal(16 * d[0] + d[1], r)
        np.testing.assert_array_equal(d[2], d[0] + d[1])
    idx = np.arange(0, r.size, max(1, r.size // 40))
    for i in idx:
        for j in idx:
            a, b = [int(x) for x in (r[i], r[j])]
            if m in SQUARE_ROOT:
                s = SQUARE_ROOT[m]
                t = s * (int(d[0][i]) * int(d[1][j]) + int(d[1][i]) * int(d[0][j])) + int(d[1][i]) * int(d[1][j])
            else:
                c0, c1 = int(d[0][i]) * int(d[0][j]), int(d[1][i]) * int(d[1][j])
                c2 = int(d[2][i]) * int(d[2][j])
                t = 256 * c0 + 16 * (c2 - c0 - c1) + c1
            assert (t - a * b) % m == 0


@pytest.mark.parametrize("phi", [-1.0, 0.5, 1.0, 2.0])
def test_fp8_ozaki2_on_an_exact_unit_reaches_fp64_with_the_published_moduli_counts(phi):
    """15 moduli: FP64 accuracy (max relative error <= 2^-52; published 2.2e-16); 12 moduli: clearly
    lower (published 4e-12 .. 8e-11 on larger matrices, > 1e-14 here); error falls from 10 to 13 moduli."""
    rng = np.random.default_rng(11)
    A, B = _gemmul8_matrix(rng, 12, 1024, phi), _gemmul8_matrix(rng, 1024, 12, phi)
    exact = wb.exact.gemm(A, B)
    e = {n: _max_rel(ozaki2_fp8(A, B, model=EXACT, moduli=n), exact) for n in (10, 12, 13, 15)}
    assert e[15] <= 2.0**-52, e
    assert e[12] > 1e-14 and e[12] > 100 * max(e[15], 2.0**-53), e
    assert e[10] > e[12] > e[13], e


def test_fp8_ozaki2_default_is_14_accurate_and_reports_its_decisions():
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((5, 300)), rng.standard_normal((300, 4))
    D, dec = ozaki2_fp8(A, B, model=EXACT, return_words=True)
    assert dec["moduli"] == list(FP8_MODULI[:14]) and dec["scaling"] == "accurate" and not dec["fallback"]
    assert dec["crt_guaranteed"] and dec["crt_bound"] <= dec["crt_limit"] == (math.prod(FP8_MODULI[:14]) - 1) // 2
    assert dec["unit_gemms"] == 42 and dec["unit_inexact_gemms"] == 0
    # the integer matrices are the truncated scaled inputs, exactly
    np.testing.assert_array_equal(dec["A_int"], np.trunc(np.ldexp(A, dec["row_shift"][:, None])))
    # A'B' recovered exactly: D * 2^(s+t) is the float64 rounding of the exact integer product
    def ints(X):
        return np.array([[int(x) for x in row] for row in X], dtype=object)
    AB = ints(dec["A_int"]) @ ints(dec["B_int"])
    want = np.ldexp(np.array([[float(int(x)) for x in row] for row in AB]),
                    -(dec["row_shift"][:, None] + dec["col_shift"][None, :]))
    np.testing.assert_array_equal(D, want)
    assert np.abs(D - wb.exact.gemm(A, B)).max() <= 2.0**-50 * np.abs(A) .max() * np.abs(B).max() * 300


@pytest.mark.parametrize("unit", FP8_PRESETS)
def test_fp8_ozaki2_runs_on_the_fp8_presets(unit):
    """Small K: the presets' sums of digit products are exact, so the result is the exact unit's."""
    rng = np.random.default_rng(4)
    A, B = rng.standard_normal((6, 256)), rng.standard_normal((256, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D, dec = ozaki2_fp8(A, B, model=unit, moduli=15, return_words=True)
    assert dec["unit_inexact_gemms"] == 0
    np.testing.assert_array_equal(D, ozaki2_fp8(A, B, model=EXACT, moduli=15))
    assert _max_rel(D, wb.exact.gemm(A, B)) <= 2.0**-52


@pytest.mark.slow
def test_hopper_wgmma_breaks_long_sums_and_says_so_and_k_chunk_repairs_it():
    """Finding: H100 wgmma fp8 (13 fraction bits, truncation, e8m13 result) does not sum K = 4096 digit
    products exactly; the algorithm warns and reports it.  B200 and mma.sync (25 bits) stay exact;
    k_chunk=1024 (partial sums added outside the unit) restores exactness on wgmma."""
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((16, 4096)), rng.standard_normal((4096, 16))
    exact = wb.exact.gemm(A, B)
    with pytest.warns(RuntimeWarning, match="not exact in"):
        D, dec = ozaki2_fp8(A, B, model="H100:fp8_e4m3:fp32", moduli=15, return_words=True)
    assert dec["unit_inexact_gemms"] > 0 and _max_rel(D, exact) > 1e-3
    for unit in ("B200:fp8_e4m3:fp32", "hopper/mma.sync/fp8_e4m3->fp32/mma.sync"):
        assert _max_rel(ozaki2_fp8(A, B, model=unit, moduli=15), exact) <= 2.0**-52
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D2 = ozaki2_fp8(A, B, model="H100:fp8_e4m3:fp32", moduli=15, k_chunk=1024)
    assert _max_rel(D2, exact) <= 2.0**-52


def test_fast_mode_breaks_the_crt_condition_and_the_improved_scaling_does_not():
    """The published fast mode is not scale-invariant: for small-norm rows (log2 ||a|| < 1) at large K it
    breaks |A'||B'| <= (P-1)/2 (refused, or warned with on_unguaranteed='warn'); the improved
    (Cauchy-Schwarz) scaling holds for every input scaling and is exactly scale-invariant."""
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((2, 16384)) * 2.0**-12, rng.standard_normal((16384, 2)) * 2.0**-12
    with pytest.raises(ValueError, match="breaks the CRT condition"):
        ozaki2_fp8(A, B, model=EXACT, moduli=8, scaling="fast")
    with pytest.warns(RuntimeWarning, match="breaks the CRT condition"):
        ozaki2_fp8(A, B, model=EXACT, moduli=8, scaling="fast", on_unguaranteed="warn")
    D1, d1 = ozaki2_fp8(A, B, model=EXACT, moduli=8, scaling="fast-improved", return_words=True)
    D2, d2 = ozaki2_fp8(A * 2.0**40, B, model=EXACT, moduli=8, scaling="fast-improved", return_words=True)
    assert d1["crt_guaranteed"] and d2["crt_guaranteed"]
    np.testing.assert_array_equal(d2["row_shift"], d1["row_shift"] - 40)
    np.testing.assert_array_equal(D2, D1 * 2.0**40)
    _, f1 = ozaki2_fp8(A * 2.0**20, B * 2.0**20, model=EXACT, moduli=8, scaling="fast", return_words=True)
    _, f2 = ozaki2_fp8(A * 2.0**30, B * 2.0**20, model=EXACT, moduli=8, scaling="fast", return_words=True)
    np.testing.assert_array_equal(f2["row_shift"], f1["row_shift"] - 20)   # 2x the 10 it should move


def test_exponent_span_by_hand():
    A = np.array([[1.0, 2.0**-200], [3.0, 0.0]])
    B = np.array([[0.0, 1.0], [1.0, 0.0]])
    # frexp exponents: 1 -> 1, 2^-200 -> -199, 3 -> 2; row maxima eA = (1, 2), column maxima eB = (1, 1)
    # (0,0): only a_01 b_10 = 2^-200 is nonzero: E = -199 + 1, span = 1 + 1 - (-198) = 200
    np.testing.assert_array_equal(adp.exponent_span(A, B), [[200, 0], [0, 0]])
    assert adp.slices_needed(np.array([0]), 4) == math.ceil(57 / 4)


def test_auto_counts_cover_the_span_and_fall_back_beyond_capacity():
    rng = np.random.default_rng(6)
    A, B = rng.standard_normal((6, 512)), rng.standard_normal((512, 6))
    exact = wb.exact.gemm(A, B)
    D, dec = ozaki2_fp8(A, B, model=EXACT, moduli="auto", return_words=True)
    n = len(dec["moduli"])
    assert dec["auto"] and not dec["fallback"] and 12 <= n <= 16, dec["moduli"]
    assert _max_rel(D, exact) <= 2.0**-51
    _, fewer = ozaki2_fp8(A, B, model=EXACT, moduli=n - 1, return_words=True)   # n is the smallest with capacity
    eA, eB = np.frexp(np.abs(A).max(axis=1))[1], np.frexp(np.abs(B).max(axis=0))[1]
    assert adp.capacity(fewer["row_shift"] + eA, fewer["col_shift"] + eB, adp.exponent_span(A, B)) < 0
    # a span of ~400 bits: no count of moduli or slices covers it - native FP64, said so
    A2, B2 = A.copy(), B.copy()
    A2[0, :] = 0.0
    A2[0, 0], A2[0, 1] = 1.0, 2.0**-400
    B2[0, :] = 0.0
    D2, d2 = ozaki2_fp8(A2, B2, model=EXACT, moduli="auto", return_words=True)
    assert d2["fallback"] and "native FP64" in d2["reason"] and d2["exponent_span"] >= 400
    np.testing.assert_array_equal(D2, A2 @ B2)
    D3, d3 = ozaki1_fp8(A2, B2, model=EXACT, slices="auto", return_words=True)
    assert d3["fallback"] and d3["slices_needed"] > 15
    np.testing.assert_array_equal(D3, A2 @ B2)
    _, d4 = ozaki1_fp8(A, B, model=EXACT, slices="auto", return_words=True)
    assert d4["slices"] == math.ceil((57 + d4["exponent_span"]) / 4) and not d4["fallback"]


@pytest.mark.parametrize("f", [ozaki2_fp8, ozaki1_fp8])
def test_bad_input_is_refused_with_a_clear_message(f):
    A, B = np.ones((2, 3)), np.ones((3, 2))
    with pytest.raises(ValueError, match="NaN or Inf"):
        f(np.full((2, 3), np.inf), B, model=EXACT)
    with pytest.raises(ValueError, match="fp8_e5m2"):
        f(A, B, model="H100:fp8_e5m2:fp32")
    with pytest.raises(ValueError, match="block-scaled"):
        f(A, B, model="blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx")
    with pytest.raises(ValueError, match="k_chunk=100000"):
        f(A, B, model="B200:fp8_e4m3:fp32", k_chunk=100000)


def test_ozaki2_fp8_refuses_more_moduli_than_exact_recovery_allows():
    A, B = np.ones((2, 3)), np.ones((3, 2))
    with pytest.raises(ValueError, match="moduli=21: expected 2..20"):
        ozaki2_fp8(A, B, model=EXACT, moduli=21)
    with pytest.raises(ValueError, match="scaling='exact'"):
        ozaki2_fp8(A, B, model=EXACT, scaling="exact")
    with pytest.raises(ValueError, match="slices=16"):
        ozaki1_fp8(A, B, model=EXACT, slices=16)


def test_fp8_ozaki1_error_falls_with_slices_to_fp64_level():
    """Ozaki scheme with 4-bit FP8 digits: each slice gains ~2^4 until the normwise error is at fp64 level."""
    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((8, 400)), rng.standard_normal((400, 8))
    exact = wb.exact.gemm(A, B)
    from workbench.numbers.metrics import normwise_error_inf
    e = [normwise_error_inf(ozaki1_fp8(A, B, model=EXACT, slices=s), exact, A, B) for s in (4, 6, 8, 10)]
    assert all(e[i + 1] * 2**6 < e[i] for i in range(3)), e
    e14 = normwise_error_inf(ozaki1_fp8(A, B, model="B200:fp8_e4m3:fp32"), exact, A, B)
    assert e14 < 4 * max(normwise_error_inf(A @ B, exact, A, B), 2.0**-53), e14


def test_exact_fp8_unit_sums_exactly():
    rng = np.random.default_rng(9)
    X = rng.integers(-16, 17, (3, 5000)).astype(float)
    Y = rng.integers(-16, 17, (5000, 2)).astype(float)
    want = [[sum(Fraction(int(a)) * int(b) for a, b in zip(X[i], Y[:, j])) for j in range(2)] for i in range(3)]
    np.testing.assert_array_equal(wb.gemm(X, Y, model=EXACT), np.array(want, dtype=float))


def test_bf16xn_takes_every_bf16_unit():
    """Every preset reading bf16 and writing binary32 (NVIDIA, AMD, x86 AVX512/AMX, Arm BFDOT/BFMMLA,
    the /rn and /1k variants): bf16x9 runs and is far more accurate than one bf16 product."""
    names = [p["name"] for p in wb.presets() if p["in_format"] == "bf16" and p["out_format"] == "fp32"]
    assert len(names) >= 12
    rng = np.random.default_rng(10)
    A = rng.standard_normal((4, 64)).astype(np.float32).astype(np.float64)
    B = rng.standard_normal((64, 3)).astype(np.float32).astype(np.float64)
    exact = wb.exact.gemm(A, B)
    scale = np.abs(A).max() * np.abs(B).max() * 64
    for name in names:
        D = algorithms.bf16xn(A, B, model=name, products=9, word_format="bf16")
        assert np.abs(D - exact).max() <= 2.0**-18 * scale, name
