"""``engine.core.dots`` for every kind: row r of a with row r of b from c[r], the
diagonal of the square product ``workbench.gemm`` computes (Xie et al. Section
3.1.1: outputs are independent dot products), K not a multiple of the block.  The
row kernels of the AMD kinds (E-FDPA, FTZ-AddMul, TR-/GTR-FDPA) against that
diagonal bit for bit, NaN payloads included, on every preset of those kinds and on
normal, wide-range, subnormal and random-bit-pattern (NaN/Inf) values."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units.catalogue import records
from workbench.engine import core

sys.path.insert(0, str(Path(__file__).parent))
from test_amd_lane_kernels import EFDPA_CUSTOM, KINDS, bits, values  # noqa: E402

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


AMD_ROWS = [r for r in records() if r.kind in ("e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa")] + EFDPA_CUSTOM


@settings(max_examples=30, deadline=None)
@given(m=st.sampled_from(AMD_ROWS), kind=st.sampled_from(KINDS), n=st.integers(1, 40), K=st.integers(0, 70),
       seed=st.integers(0, 2 ** 31))
def test_amd_row_kernels_give_the_bits_of_the_gemm_diagonal(m, kind, n, K, seed):
    """E-FDPA, FTZ-AddMul, TR-FDPA and GTR-FDPA on their row kernels (``has_row_kernel``):
    the bits ``workbench.gemm`` gives on the diagonal (lane or one-output kernels);
    NaN payloads compared where the kind propagates them (E-FDPA, FTZ-AddMul); n up
    to 40 crosses the row-lane kernels' tiles, custom E-FDPA models bring fp16
    outputs, L up to 16 and every rounding."""
    assert m.operation.has_row_kernel
    a = values(kind, m.in_format, (n, K), seed)
    b = values(kind, m.in_format, (n, K), seed + 1)
    c = values(kind, m.out_format, (n,), seed + 2)
    C = np.zeros((n, n))
    np.fill_diagonal(C, c)
    want = np.diagonal(wb.gemm(a, b.T, C, model=m)).astype(np.float64)
    got = core.dots(m, a, b, c)
    if not m.operation.propagates_nan:   # gemm writes the output format's canonical NaN, dots float64's
        got[np.isnan(got)] = want[np.isnan(want)] = np.nan
    np.testing.assert_array_equal(bits(got), bits(want))


def test_dots_refuses_scaled_models():
    m = wb.preset("blackwell", "fp8_e4m3", "fp32", instruction="tcgen05.mma.block_scale")
    with pytest.raises(ValueError, match="scale"):
        core.dots(m, np.ones((2, 32)), np.ones((2, 32)), np.zeros(2))
