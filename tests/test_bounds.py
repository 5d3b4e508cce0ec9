"""A-priori bounds: paper values (Figure 7 data, Table 9) and validity against an
independent exact simulation of a chain of truncating block FMAs."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from workbench.matmul import bounds

FIG7 = Path(__file__).resolve().parents[1] / "paper_data" / "khattak2025_fig7"
FIG7_FORMATS = {"bfloat16": "bf16", "binary16": "fp16", "fp8-e5m2": "fp8_e5m2"}


@pytest.mark.skipif(not FIG7.is_dir(), reason=f"paper data folder {FIG7} is absent")
def test_multiword_bound_matches_figure7_data():
    files = sorted(FIG7.glob("matmul_test_*_binary32_words_*_model_*.csv"))
    assert len(files) == 56  # 18 bfloat16 + 21 binary16 + 17 fp8-e5m2 (README table)
    for f in files:
        data = np.loadtxt(f, delimiter=",", skiprows=1)
        fmt = FIG7_FORMATS[f.name.removeprefix("matmul_test_").split("_binary32")[0]]
        got = bounds.multiword_bound(data[:, 0].astype(np.int64), fmt, "fp32")
        # the .dat files print 7 significant digits
        np.testing.assert_allclose(got, data[:, 2], rtol=6e-7, err_msg=f.name)


def test_multiword_bound_terms_by_hand():
    # fp16, n = 10: theta = fmax = 65504; bound = 2^-10 + 10 * 2^-24 + 400 * 2^-14 / 65504 + 400 * 2^-126 / 65504^2
    expected = 2.0**-10 + 10 * 2.0**-24 + 400 * 2.0**-14 / 65504 + 400 * 2.0**-126 / 65504.0**2
    assert bounds.multiword_bound(10, "fp16") == pytest.approx(expected, rel=1e-15)
    # bf16: theta = sqrt(Fmax / n) < fmax
    n = 1000
    Fmax = float(np.finfo(np.float32).max)
    th = math.sqrt(Fmax / n)
    expected = 2 * 2.0**-8 + n * 2.0**-24 + 4 * n**2 * 2.0**-126 / th + 4 * n**2 * 2.0**-126 / th**2
    assert bounds.multiword_bound(n, "bf16") == pytest.approx(expected, rel=1e-14)
    with pytest.raises(ValueError, match="n must be"):
        bounds.multiword_bound(0, "fp16")


def test_table9_error_sources():
    # Xie et al. Table 9 and Sec. 6.1-6.2
    ftz16 = {s.source: s for s in bounds.mma_sim_error_sources("ftz-addmul", in_format="fp16")}
    assert ftz16["input FTZ"].bound() == 2.0**-14
    assert ftz16["output FTZ"].bound() == 2.0**-126
    assert ftz16["add/mul"].bound(e_result=3) == 0.5 * 2.0 ** (3 - 23)
    ftzbf = {s.source: s for s in bounds.mma_sim_error_sources("ftz-addmul", in_format="bf16")}
    assert ftzbf["input FTZ"].bound() == 2.0**-126
    (fma,) = bounds.mma_sim_error_sources("fma", rounding="rne", out_format="fp64")
    assert fma.bound(e_result=0) == 0.5 * 2.0**-52
    hopper = {s.source: s for s in bounds.mma_sim_error_sources("t-fdpa", L=16, F=25, rounding="rz")}
    assert hopper["fused summation"].bound(e_max=5) == 17 * 2.0 ** (5 - 25)
    assert hopper["output rounding"].bound(e_result=5) == 2.0 ** (5 - 23)
    # Ada/Hopper fp8: F = 13 and RZ-E8M13: 1 ulp = 2^(e_result - 13)
    fp8 = {s.source: s for s in bounds.mma_sim_error_sources("t-fdpa", L=32, F=13, rounding="rz", out_format="e8m13")}
    assert fp8["output rounding"].bound(e_result=0) == 2.0**-13
    # RNE-FP16 output: 0.5 ulp_fp16 = 0.5 x 2^(e_result - 10)
    h16 = {s.source: s for s in bounds.mma_sim_error_sources("t-fdpa", L=8, F=24, rounding="rne", out_format="fp16")}
    assert h16["output rounding"].bound(e_result=0) == 0.5 * 2.0**-10
    with pytest.raises(ValueError, match="needs L"):
        bounds.mma_sim_error_sources("t-fdpa", F=25)
    with pytest.raises(ValueError, match="Table 9"):
        bounds.mma_sim_error_sources("wmma")


def test_block_fma_bound_closed_forms():
    # one block, F given: (1 + (L+1) 2^-F)(1 + u_out) - 1
    c = bounds.block_fma_bound(8, 8, 24, "rz", "fp32")
    assert c == pytest.approx((1 + 9 * 2.0**-24) * (1 + 2.0**-23) - 1, rel=1e-12)
    # Blanchard's model with u_high, input rounding to fp16, q = 4 blocks, RNE fp32 output
    u_h, u_in, u_out = 2.0**-24, 2.0**-11, 2.0**-24
    g = 4 * u_h / (1 - 4 * u_h)
    c = bounds.block_fma_bound(16, 4, None, "rne", "fp32", "fp16", u_high=u_h)
    assert c == pytest.approx((1 + u_in) ** 2 * ((1 + g) * (1 + u_out)) ** 4 - 1, rel=1e-12)
    # first order: 2 u_in + n u_high + (n / b) u_FMA (Blanchard et al. 2020, Sec. 3)
    n, L = 4096, 16
    c = bounds.block_fma_bound(n, L, None, "rne", "fp32", "fp16", u_high=2.0**-24)
    first = 2 * 2.0**-11 + n * 2.0**-24 + (n // L) * 2.0**-24
    assert c == pytest.approx(first, rel=1e-3)
    with pytest.raises(ValueError, match="exactly one"):
        bounds.block_fma_bound(16, 4, 24, "rz", u_high=2.0**-24)
    with pytest.raises(ValueError, match="rounding"):
        bounds.block_fma_bound(16, 4, 24, "sr")
    with pytest.raises(ValueError, match="positive integer"):
        bounds.block_fma_bound(0, 4, 24, "rz")


def _round_p(x: Fraction, p: int, mode: str) -> Fraction:
    """Round a nonzero rational to p significant bits (unbounded exponent)."""
    if x == 0:
        return x
    e = math.floor(math.log2(abs(x)))
    while Fraction(2) ** e > abs(x):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(x):
        e += 1
    q = Fraction(2) ** (e - p + 1)
    m = x / q
    r = math.trunc(m) if mode == "rz" else round(m)  # round() on Fraction: ties to even
    return r * q


def _tfdpa_chain(a, b, L: int, F: int, mode: str) -> Fraction:
    """Independent model: blocks of L products + accumulator, aligned at the largest
    summand's exponent, truncated to F fraction bits, summed, rounded to fp32."""
    s = Fraction(0)
    for k0 in range(0, len(a), L):
        terms = [s] + [Fraction(x) * Fraction(y) for x, y in zip(a[k0:k0 + L], b[k0:k0 + L])]
        big = max(abs(t) for t in terms)
        if big == 0:
            continue
        e = math.floor(math.log2(big))
        while Fraction(2) ** e > big:
            e -= 1
        q = Fraction(2) ** (e - F)
        total = sum((math.trunc(t / q) * q for t in terms), Fraction(0))
        s = _round_p(total, 24, mode)
    return s


@pytest.mark.parametrize("L,F,mode", [(4, 23, "rz"), (8, 24, "rne"), (16, 25, "rz")])
def test_block_fma_bound_holds_for_simulated_chains(L, F, mode):
    rng = np.random.default_rng(L)
    n = 96
    worst = 0.0
    for trial in range(30):
        if trial % 3 == 0:  # all positive: errors of one sign accumulate
            a = rng.uniform(0.5, 1, n).astype(np.float16).astype(float)
            b = rng.uniform(0.5, 1, n).astype(np.float16).astype(float)
        else:
            a = rng.standard_normal(n).astype(np.float16).astype(float)
            b = (rng.standard_normal(n) * 2.0 ** rng.integers(-6, 6, n)).astype(np.float16).astype(float)
        got = _tfdpa_chain(a, b, L, F, mode)
        exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(0))
        scale = sum((abs(Fraction(x) * Fraction(y)) for x, y in zip(a, b)), Fraction(0))
        worst = max(worst, float(abs(got - exact) / scale))
    c = bounds.block_fma_bound(n, L, F, mode, "fp32")
    assert 0 < worst <= c
    # and the bound is not vacuous: within a small factor of what truncation achieves
    assert c < 64 * worst


def test_unit_roundoff_and_gamma():
    assert bounds.unit_roundoff(24, "rne") == 2.0**-24
    assert bounds.unit_roundoff(24, "rz") == 2.0**-23
    assert bounds.gamma(3, 0.25) == 3
    with pytest.raises(ValueError, match="undefined"):
        bounds.gamma(4, 0.25)
