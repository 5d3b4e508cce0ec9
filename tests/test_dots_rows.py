"""``engine.core.dots`` for every kind: row r of a with row r of b from c[r], the
diagonal of the square product ``workbench.gemm`` computes (Xie et al. Section
3.1.1: outputs are independent dot products), K not a multiple of the block."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.engine import core

UNSCALED = [("cdna1", "fp16", "fp32"), ("cdna2", "fp16", "fp32"), ("cdna3", "fp16", "fp32"),
            ("cdna3", "fp8_e4m3fnuz", "fp32"), ("hopper", "fp16", "fp32"), ("ampere", "fp64", "fp64"),
            ("cdna3", "fp32", "fp32")]


@settings(max_examples=15, deadline=None)
@given(unit=st.sampled_from(UNSCALED), n=st.integers(1, 9), K=st.integers(0, 70), seed=st.integers(0, 2 ** 32 - 1))
def test_dots_is_the_diagonal_of_gemm(unit, n, K, seed):
    arch, fin, fout = unit
    m = wb.preset(arch, fin, fout)
    rng = np.random.default_rng(seed)
    a = wb.round(rng.standard_normal((n, K)) * 2.0 ** rng.integers(-8, 8, (n, K)), fin, "rne").astype(float)
    b = wb.round(rng.standard_normal((n, K)), fin, "rne").astype(float)
    c = wb.round(rng.standard_normal(n), fout, "rne").astype(float)
    want = np.diagonal(wb.gemm(a, b.T, np.diag(c), model=m)).astype(np.float64)
    got = core.dots(m, a, b, c)
    assert np.array_equal(got, want, equal_nan=True)


def test_dots_refuses_scaled_models():
    m = wb.preset("blackwell", "fp8_e4m3", "fp32", instruction="tcgen05.mma.block_scale")
    with pytest.raises(ValueError, match="scale"):
        core.dots(m, np.ones((2, 32)), np.ones((2, 32)), np.zeros(2))
