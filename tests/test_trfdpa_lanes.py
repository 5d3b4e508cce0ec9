"""The TR-/GTR-FDPA lane kernels against the one-output-at-a-time kernel they replace,
and against ``mmasim`` on shapes the differential test does not reach.

* ``trfdpa_gemm_lanes`` (Xie et al. 2025 Algorithms 10-11 on the outputs of a row side
  by side, K in chunks) and ``trfdpa_rows_lanes`` (``dots``: rows side by side)
  against ``amd_gemm`` / ``amd_rows`` (one ``trfdpa_step`` per block and output): bit
  for bit over shapes (N not a multiple of the lanes, K not a multiple of L), tiles,
  chunks of K, value kinds (normal, wide exponent range, subnormals, random bit
  patterns with NaN/Inf), every TR-/GTR-FDPA preset and custom models (the RZ twin,
  zero exponents, directed rounding with flushed outputs, fp16 outputs).
* ``trfdpa_gemm_simd`` (TR-FDPA on the vector chain of ``workbench.engine.vector_chain``,
  up to five rows of A per call) against ``amd_gemm`` over presets and drawn units
  (block sizes, windows F and F2, roundings, both alignment roundings, zero exponents,
  flushed and fp16 outputs), tile heights, chunks of K and the same value kinds.
* Through ``workbench.gemm`` against ``mmasim`` 2.1.1 with N = 13 and K crossing the
  lane kernel's chunks of K.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units.catalogue import records
from workbench.engine import core
from workbench.engine.operations.amd_fdpa import kernels as amd
from workbench.engine import kernels as K
from workbench.engine.operands import padded_decomposed

sys.path.insert(0, str(Path(__file__).parent))
import mmasim_oracle as mo  # noqa: E402
from test_amd_lane_kernels import KINDS, bits, operands, values  # noqa: E402

TR = [r for r in records() if r.kind in ("tr-fdpa", "gtr-fdpa")]
TR_CUSTOM = [wb.preset("MI300X", "fp8_e4m3fnuz", "fp32").with_params(alignment_rounding="rz", zero_exponent=-140),
             wb.preset("MI300X", "bf16", "fp32").with_params(rounding="rz", zero_exponent=-133),
             wb.preset("MI300X", "fp16", "fp32").with_params(rounding="ru", flush_output_subnormals=True, F=20, F2=27),
             wb.custom_model("fp16", "fp16", kind="tr-fdpa", L=8, F=14, F2=20, rounding="rne"),
             wb.custom_model("bf16", "fp32", kind="gtr-fdpa", L=4, F=24, F2=31, rounding="rd")]
TR_PAIRED = [p for p in mo.paired_presets() if p.kind in ("tr-fdpa", "gtr-fdpa")]
SETTINGS = settings(max_examples=25, deadline=None)


def code(m) -> int:
    return amd.KIND_GTR if m.kind == "gtr-fdpa" else amd.KIND_TR


def reference(m, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D by ``amd_gemm``: every output's chain of ``trfdpa_step`` blocks."""
    q = amd.amd_params(m, code(m))
    A2, BT2, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    D = C.copy()
    amd.amd_gemm(A2, BT2, sa, ea, sb.T, eb.T, D, q)
    return D


@SETTINGS
@given(m=st.sampled_from(TR + TR_CUSTOM), kind=st.sampled_from(KINDS),
       shape=st.tuples(st.integers(1, 9), st.integers(0, 70), st.integers(1, 21)), seed=st.integers(0, 2**31),
       TI=st.integers(1, 4), TJ=st.sampled_from([8, 16, 24]), BC=st.integers(1, 4))
def test_trfdpa_lanes_equal_the_one_output_kernel(m, kind, shape, seed, TI, TJ, BC):
    """trfdpa_gemm_lanes with any tiles and chunks of K gives amd_gemm's bits."""
    M, Kk, N = shape
    A, B, C = operands(m, kind, M, Kk, N, seed)
    q = amd.amd_params(m, code(m))
    _, _, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    sbl, ebl, row_special, col_special = K.lane_operands(sa, ea, sb.T, eb.T, N, m.in_fmt.emin)
    D = C.copy()
    none = np.empty((0, 0))
    amd.trfdpa_gemm_lanes(none, none, sa, ea, sbl, ebl, row_special, col_special, D, q, TI, TJ, BC)
    np.testing.assert_array_equal(bits(D), bits(reference(m, A, B, C)))


@st.composite
def tr_units(draw: st.DrawFn) -> wb.Model:
    """TR-FDPA units the vector chain computes (terms and group sums within 32 bits)."""
    fin = draw(st.sampled_from(["fp16", "bf16", "fp8_e4m3fnuz", "fp8_e5m2fnuz"]))
    fout = draw(st.sampled_from(["fp32", "fp16"]))
    L = draw(st.sampled_from([1, 2, 4, 8, 16]))
    F_ = draw(st.integers(8, 26))
    try:
        m = wb.custom_model(fin, fout, kind="tr-fdpa", L=L, F=F_, F2=draw(st.integers(8, 34)),
                            rounding=draw(st.sampled_from(["rne", "rz", "rd", "ru"])),
                            alignment_rounding=draw(st.sampled_from(["rd", "rz"])),
                            zero_exponent=draw(st.sampled_from([None, -140, -30])),
                            flush_output_subnormals=draw(st.booleans()))
        eligible = bool(amd.tr_simd_eligible(amd.amd_params(m, amd.KIND_TR)))
    except ValueError:
        eligible = False
    assume(eligible)
    return m


TR_SIMD = [m for m in TR + TR_CUSTOM if m.kind == "tr-fdpa"]


@settings(max_examples=120, deadline=None, derandomize=True)
@given(m=st.one_of(st.sampled_from(TR_SIMD), tr_units()), kind=st.sampled_from(KINDS),
       shape=st.tuples(st.integers(1, 12), st.integers(0, 90), st.integers(1, 40)), seed=st.integers(0, 2**31),
       TI=st.integers(1, 12), BC=st.integers(1, 4))
def test_trfdpa_vector_chain_equals_the_one_output_kernel(m, kind, shape, seed, TI, BC):
    """trfdpa_gemm_simd with any tile height and chunk of K gives amd_gemm's bits, B
    read unpadded (N not a multiple of the 16 lanes)."""
    M, Kk, N = shape
    A, B, C = operands(m, kind, M, Kk, N, seed)
    q = amd.amd_params(m, amd.KIND_TR)
    assert amd.tr_simd_eligible(q)
    _, _, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    sbl, ebl, row_special, col_special = K.lane_operands(sa, ea, sb.T, eb.T, N, m.in_fmt.emin, pad=False)
    D = C.copy()
    amd.trfdpa_gemm_simd(sa, ea, sbl, ebl, row_special, col_special, D, q, TI, BC)
    np.testing.assert_array_equal(bits(D), bits(reference(m, A, B, C)))


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_cdna3_tr_presets_take_the_vector_chain(fmt):
    """CDNA3's fp16/bf16 units (Xie et al. Table 7: L 8, F 24, F2 31) run on the vector
    chain with B decomposed unpadded; the grouped fp8 units keep the lane kernel."""
    m = wb.preset("MI300X", fmt, "fp32")
    assert amd.tr_simd(m, amd.KIND_TR)
    rng = np.random.default_rng(3)
    A, B, C = (values("normal", f, s, int(rng.integers(2**31))) for f, s in
               ((fmt, (3, 40)), (fmt, (40, 10)), ("fp32", (3, 10))))
    assert core.prepare(m, A, B).sb.shape == (40, 10)
    assert not amd.tr_simd(wb.preset("MI300X", "fp8_e4m3fnuz", "fp32"), amd.KIND_GTR)


@SETTINGS
@given(m=st.sampled_from(TR + TR_CUSTOM), kind=st.sampled_from(KINDS), n=st.integers(4, 70),
       Kk=st.integers(0, 40), seed=st.integers(0, 2**31))
def test_trfdpa_row_lanes_equal_the_row_kernel(m, kind, n, Kk, seed):
    """amd_dots on trfdpa_rows_lanes (n >= 4; n up to 70 crosses the 32-row tiles)
    gives amd_rows' bits (one trfdpa_step chain per row)."""
    a = values(kind, m.in_format, (n, Kk), seed)
    b = values(kind, m.in_format, (n, Kk), seed + 1)
    c = values(kind, m.out_format, (n,), seed + 2)
    got = amd.amd_dots(m, code(m), a, b, c.copy())
    q = amd.amd_params(m, code(m))
    a2, b2, sa, ea, sb, eb = padded_decomposed(m, a, b, m.L)
    want = c.copy()
    amd.amd_rows(a2, b2, sa, ea, sb.T, eb.T, want, q)
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", TR_PAIRED, ids=[p.name for p in TR_PAIRED])
def test_lane_shapes_match_mmasim(p, kind):
    """N = 13 (lanes padded to 16, three left unwritten) and K = 1032, past the first
    chunk of K of the lane kernel at this N, bit for bit against mmasim 2.1.1."""
    pytest.importorskip("torch", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    pytest.importorskip("mmasim", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    rng = np.random.default_rng([21, len(p.name), mo.INPUT_KINDS.index(kind)])
    A, B, C = mo.operands(kind, p, 4, 1032, 13, rng)
    got, want = mo.compare(p, A, B, C)
    np.testing.assert_array_equal(got, want)


#: (kind, L, F) of fp16 units whose groups of the largest aligned terms just fit the lane
#: kernel's int32 sums (bit_length(L - 1) + F + 2 = 31), and of units one bit past it.
INT32_GROUP_EDGES = [("tr-fdpa", 8, 26), ("tr-fdpa", 2, 28), ("gtr-fdpa", 16, 26), ("tr-fdpa", 16, 25),
                     ("tr-fdpa", 8, 27), ("tr-fdpa", 2, 29), ("gtr-fdpa", 16, 27), ("tr-fdpa", 16, 26)]


@pytest.mark.parametrize("kind, L, F", INT32_GROUP_EDGES)
def test_trfdpa_lanes_sum_groups_of_the_largest_terms_exactly(kind, L, F):
    """Every product with fp16's largest significand at one exponent, one sign per row
    (and a row whose products cancel pairwise): each group's aligned terms are just
    below 2**(F + 2), their sum just below L times that.  The lane kernel sums them in
    int32 where they fit and in int64 past that: amd_gemm's bits either way."""
    m = wb.custom_model("fp16", "fp32", kind=kind, L=L, F=F, F2=F + 7, rounding="rne")
    big = (2 - 2.0 ** -10) * 2.0 ** 3
    A = np.full((4, 3 * L), big)
    A[1] = -big
    A[3, ::2] = -big
    B = np.full((3 * L, 8), big)
    C = np.zeros((4, 8))
    C[:, 1::2] = np.array([[2.0 ** 24], [-3.0], [1.0], [2.0 ** -30]])
    q = amd.amd_params(m, code(m))
    _, _, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    sbl, ebl, row_special, col_special = K.lane_operands(sa, ea, sb.T, eb.T, 8, m.in_fmt.emin)
    D = C.copy()
    none = np.empty((0, 0))
    amd.trfdpa_gemm_lanes(none, none, sa, ea, sbl, ebl, row_special, col_special, D, q, 2, 8, 2)
    want = reference(m, A, B, C)
    np.testing.assert_array_equal(bits(D), bits(want))
    assert np.isfinite(D).all()
    # through the engine: the vector chain for TR-FDPA where its sums fit 32 bits
    assert amd.tr_simd(m, code(m)) == (kind == "tr-fdpa" and INT32_GROUP_EDGES.index((kind, L, F)) < 4)
    np.testing.assert_array_equal(bits(core.run(m, A, B, C)), bits(want))
