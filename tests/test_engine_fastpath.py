"""The T-FDPA kernel's integer fast path (operations.tfdpa.kernels._chain) cannot hide a bug:

* small random chains (zeros, signed zeros, subnormals, ties, Inf/NaN, near-overflow
  values) against the Fraction reference of Xie et al. 2025 Algorithm 7
  (tests/reference_mma.py, ``dot_chain`` of ``t_fdpa``);
* large random GEMMs, every accumulation mode, through the fast path and through
  the general per-block path (``P_GENERAL``), bit for bit.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import workbench as wb
from workbench.numbers import formats as F
from workbench.engine import core, operands
from workbench.units import catalogue
from workbench.engine.operations import tfdpa as tfdpa_op
from workbench.engine import kernels as K
from workbench.engine.operations.tfdpa import kernels as TK

sys.path.insert(0, str(Path(__file__).parent))
from reference_mma import dot_chain, t_fdpa  # noqa: E402

MODELS = [wb.preset("volta", "fp16", "fp32"), wb.preset("ampere", "fp16", "fp32"),
          wb.preset("ampere", "bf16", "fp32"), wb.preset("hopper", "fp16", "fp32"),
          wb.preset("hopper", "bf16", "fp32"), wb.preset("ampere", "tf32", "fp32"),
          wb.preset("ampere", "fp16", "fp16")]
VARIANTS = [{}, {"rounding": "rne"}, {"rounding": "rd"}, {"rounding": "ru", "zero_exponent": None},
            {"sticky": True}, {"flush_output_subnormals": True}]


def _values(rng, shape, fmt, specials, spread):
    f = F.format(fmt)
    n = int(np.prod(shape))
    kind = rng.integers(0, 100, n)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-spread, spread + 1, n).astype(float))
    x[kind < 10] = 0.0
    x[(kind >= 10) & (kind < 13)] = -0.0
    sub = (kind >= 13) & (kind < 18)
    x[sub] = rng.integers(-8, 9, sub.sum()) * f.min_normal * 2.0 ** (1 - f.p)   # subnormals
    big = (kind >= 18) & (kind < 20)
    x[big] = rng.choice([-1.0, 1.0], big.sum()) * f.max
    ties = (kind >= 20) & (kind < 30)
    x[ties] = rng.choice([-1.0, 1.0], ties.sum()) * (1 + rng.integers(0, 4, ties.sum()) / 4)
    x = wb.round(x, fmt)
    if specials:
        x[kind == 99] = np.nan
        x[kind == 98] = np.inf
        x[kind == 97] = -np.inf
    return x.reshape(shape)


def _same(x, y):
    """Equal values, NaN = NaN, and zeros of the same sign."""
    return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))


def _expected_zero(want: float) -> float:
    """NVIDIA tensor cores never output -0 (Valpey et al. 2025 Sec. 4.4; MMA-Sim 2.1.1's
    t_fdpa ends in ``+ 0.0``); the reference keeps -0 for a sum of -0 addends (IEEE)."""
    return 0.0 if want == 0 else want


@pytest.mark.parametrize("mi", range(len(MODELS)))
@pytest.mark.parametrize("vi", range(len(VARIANTS)))
def test_small_chains_against_fraction_reference(mi, vi):
    m = MODELS[mi].with_params(**VARIANTS[vi])
    rng = np.random.default_rng(1000 * mi + vi)
    for trial in range(12):
        K_ = int(rng.integers(1, 4)) * m.L
        spread = (4, 12, 40)[trial % 3]
        a = _values(rng, (1, K_), m.in_format, trial % 4 == 3, spread)
        b = _values(rng, (K_, 1), m.in_format, trial % 4 == 3, spread)
        c = _values(rng, (1, 1), m.out_format, trial % 4 == 3, spread)
        got = float(core.run(m, a, b, c)[0, 0])
        kw = dict(F=m.F, rounding=m.rounding, in_format=m.in_format, out_format=m.out_format,
                  zero_exponent=m.zero_exponent, sticky=m.sticky, flush_output_subnormals=m.flush_output_subnormals)
        want = _expected_zero(dot_chain(list(a[0]), list(b[:, 0]), float(c[0, 0]), L=m.L, op=t_fdpa, **kw))
        assert _same(got, want), (m.describe(), a, b, c, got, want)
    # outputs subnormal before any flush (c subnormal, zero products), 1 - 2^-28: the
    # product is cut away entirely, and only a sticky bit leaves 1 - 2^-(F+1) (-> 1 - ulp in RZ),
    # and -2^-28 alone (c = +-0): below fp16's smallest subnormal, a zero of the product's sign
    # in IEEE arithmetic, +0 from a tensor core (_expected_zero), so _same's sign check is met
    fo = F.format(m.out_format)
    for a_0, c0 in ((0.0, -fo.min_normal / 2), (0.0, fo.min_normal * 0.75), (-(2.0**-14), 1.0),
                    (-(2.0**-14), 0.0), (-(2.0**-14), -0.0)):
        a0, b0 = np.zeros((1, m.L)), np.ones((m.L, 1))
        a0[0, 0], b0[0, 0] = a_0, 2.0**-14
        got = float(core.run(m, a0, b0, np.array([[c0]]))[0, 0])
        want = _expected_zero(dot_chain(list(a0[0]), list(b0[:, 0]), c0, L=m.L, op=t_fdpa, **kw))
        assert _same(got, want), (m.describe(), c0, got, want)


def _general(m, A, B, C, accumulation, promote_every):
    """core.run through the general per-block path."""
    Ap, BTp = operands.pad_k(A, np.ascontiguousarray(B.T), m.L)
    fin = m.in_fmt
    sa, ea = core.decompose(Ap, fin.man_bits, fin.emin, m.flush_subnormals)
    sb, eb = core.decompose(BTp, fin.man_bits, fin.emin, m.flush_subnormals)
    params = tfdpa_op.kernel_params(m)
    params[TK.P_ACCMODE] = {"chain": 0, "outside": 1, "promote": 2}[accumulation]  # layout.ACC_MODES
    params[TK.P_PROMOTE] = (promote_every or m.L) // m.L
    params[TK.P_GENERAL] = 1
    acc = np.array(C, dtype=np.float64, copy=True)
    TK.tfdpa_gemm(sa, ea, sb.T, eb.T, acc, TK.pack_tfdpa(params, A.shape[0], B.shape[1], numba.get_num_threads()))
    return acc


@pytest.mark.parametrize("mi", range(len(MODELS)))
@pytest.mark.parametrize("vi", range(len(VARIANTS)))
def test_large_random_fast_equals_general(mi, vi):
    m = MODELS[mi].with_params(**VARIANTS[vi])
    rng = np.random.default_rng(7 + 100 * mi + vi)
    for accumulation, pe, specials, spread in (("chain", None, False, 20), ("chain", None, True, 60),
                                               ("outside", None, True, 8), ("promote", 4 * m.L, False, 30)):
        M, K_, N = 7, 40 * m.L + 3, 9
        A = _values(rng, (M, K_), m.in_format, specials, spread)
        B = _values(rng, (K_, N), m.in_format, specials, spread)
        C = _values(rng, (M, N), m.out_format, specials, spread)
        got = core.run(m, A, B, C, accumulation=accumulation, promote_every=pe)
        want = _general(m, A, B, C, accumulation, pe)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (m.describe(), accumulation)


def test_dots_fast_equals_gemm():
    m = wb.preset("hopper", "bf16", "fp32")
    rng = np.random.default_rng(3)
    a = _values(rng, (50, 64), "bf16", True, 30)
    b = _values(rng, (50, 64), "bf16", True, 30)
    c = _values(rng, (50,), "fp32", True, 30)
    got = core.dots(m, a, b, c)
    for r in range(50):
        want = _general(m, a[r:r + 1], b[r:r + 1].T, c[r:r + 1].reshape(1, 1), "chain", None)[0, 0]
        assert np.float64(got[r]).view(np.uint64) == np.float64(want).view(np.uint64)


def _scattered_specials(rng, A, B, C, fmt):
    """One NaN in a row of A, +-Inf (NaN) in two columns of B, an Inf in C, and the
    largest values only in row 3 of A and in a quarter of B's rows (row 3's outputs
    overflow where the formats allow): most outputs stay finite, next to lanes
    that must leave the lane kernel."""
    vmax = F.format(fmt).max
    A[np.abs(A) == vmax] = 1.0
    B[np.abs(B) == vmax] = 1.0
    A[3, rng.integers(A.shape[1], size=8)] = vmax
    B[rng.integers(B.shape[0], size=B.shape[0] // 4), :] = 1.5
    B[A[3] == vmax, :] = 4.0
    A[1, int(rng.integers(A.shape[1]))] = np.nan
    inf = np.inf if F.format(fmt).has_inf else np.nan     # fp8_e4m3 has no Inf
    B[int(rng.integers(B.shape[0])), 3] = inf
    B[int(rng.integers(B.shape[0])), B.shape[1] - 2] = -inf
    C[2, 5] = np.inf


#: The lane kernel also computes interleaved groups and a late c (the scalar fast path does not).
LANE_MODELS = MODELS + [
    wb.preset("hopper", "fp8_e4m3", "fp32", instruction="mma.sync"),
    wb.preset("blackwell", "fp8_e5m2", "fp16", instruction="mma.sync"),
    wb.preset("ampere", "fp16", "fp32").with_params(c_position="late"),
    wb.preset("ampere", "bf16", "fp32").with_params(c_position="late", late_rounding="rz"),
    wb.preset("hopper", "fp16", "fp32").with_params(interleave=2, group_F=23),
    wb.preset("hopper", "fp16", "fp16").with_params(interleave=4, c_position="late", late_rounding="ru"),
    # the int32 terms of _lane_block hold |p| * 2**(F - fp) plus the sticky bit below 2**31: F = 29 is
    # the widest fp16 window they take (with the sticky variant, one bit too many: int64 terms), F = 40 never
    wb.preset("ampere", "fp16", "fp32").with_params(F=29),
    wb.preset("ampere", "fp16", "fp32").with_params(F=40),
]


@pytest.mark.parametrize("mi", range(len(LANE_MODELS)))
@pytest.mark.parametrize("vi", range(len(VARIANTS)))
def test_lane_kernel_equals_general_path(mi, vi):
    """core.run on the lane kernel (N >= LANES_MIN_N: two lane tiles, 64 + 6 lanes;
    K over more than one chunk of prm[P_BC] blocks) equals the general path in every
    accumulation mode, with scattered Inf/NaN and, for the fp16-output model,
    overflowing chains."""
    m = LANE_MODELS[mi].with_params(**VARIANTS[vi])
    assert tfdpa_op.lane_layout(m, 70)
    rng = np.random.default_rng(11 + 100 * mi + vi)
    nblocks = TK.pack_tfdpa(tfdpa_op.kernel_params(m), 1, 1, 1)[TK.P_BC] + 5
    for accumulation, pe in (("chain", None), ("outside", None), ("promote", 8 * m.L)):
        M, K_, N = 5, nblocks * m.L - 1, 70
        spread = 3 if m.out_format == "fp16" or m.in_format.startswith("fp8") else 14
        A = _values(rng, (M, K_), m.in_format, False, spread)
        B = _values(rng, (K_, N), m.in_format, False, spread)
        C = _values(rng, (M, N), m.out_format, False, spread)
        _scattered_specials(rng, A, B, C, m.in_format)
        got = core.run(m, A, B, C, accumulation=accumulation, promote_every=pe)
        want = _general(m, A, B, C, accumulation, pe)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (m.describe(), accumulation)
        assert np.isfinite(got).mean() > 0.5
        if F.format(m.in_format).max ** 2 > F.format(m.out_format).max:
            assert not np.isfinite(got[3]).all()


MX = [r for r in catalogue.records() if r.kind == "st-fdpa"]


@pytest.mark.parametrize("ri", range(len(MX)))
def test_mx_lane_kernel_equals_scalar_kernel(ri, monkeypatch):
    """ST-FDPA (MX) models run on the lane kernel too (B copied into its layout after
    the scale exponents are added); the scalar kernel gives the same bits, with a
    NaN scale and Inf/NaN elements scattered."""
    r = MX[ri]
    m = wb.preset(r.architecture, r.in_format, r.out_format, instruction=r.instruction, variant=r.variant)
    assert tfdpa_op.lane_layout(m, 20)
    rng = np.random.default_rng(40 + ri)
    M, K_, N = 6, 8 * m.L + 5, 20
    A = _values(rng, (M, K_), m.in_format, False, 2)
    B = _values(rng, (K_, N), m.in_format, False, 2)
    C = _values(rng, (M, N), m.out_format, False, 6)
    nb = -(-K_ // m.k_block)
    sa = 2.0 ** rng.integers(-20, 20, (M, nb)).astype(float)
    sb = 2.0 ** rng.integers(-20, 20, (nb, N)).astype(float)
    sa[2, 3] = np.nan
    if F.format(m.in_format).has_nan:
        B[7, 4] = np.nan
    got = wb.gemm(A, B, C, model=m, scale_a=sa, scale_b=sb)
    monkeypatch.setattr(K, "LANES_MIN_N", 10 ** 9)
    assert not tfdpa_op.lane_layout(m, 20)
    want = wb.gemm(A, B, C, model=m, scale_a=sa, scale_b=sb)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), m.describe()
    assert np.isnan(got[2]).all() and np.isfinite(got).mean() > 0.5


AMD_LANE_MODELS = [
    wb.preset("MI300X", "fp16", "fp32"),
    wb.preset("MI300X", "bf16", "fp32"),
    wb.preset("MI300X", "tf32", "fp32"),
    wb.preset("MI300X", "fp8_e4m3fnuz", "fp32"),
    wb.preset("MI300X", "fp8_e5m2fnuz", "fp32"),
    wb.preset("MI300X", "fp16", "fp32", variant="rz"),
    wb.preset("MI300X", "fp8_e4m3fnuz", "fp32").with_params(alignment_rounding="rz", zero_exponent=-140),
    wb.preset("MI300X", "bf16", "fp32").with_params(rounding="rz", zero_exponent=-133),
    wb.preset("MI300X", "fp16", "fp32").with_params(rounding="ru", flush_output_subnormals=True, F=20, F2=27),
    wb.custom_model("fp16", "fp16", kind="tr-fdpa", L=8, F=14, F2=20, rounding="rne"),
    wb.preset("MI300X", "fp8_e5m2fnuz", "fp32").with_params(rounding="rz"),
]


@pytest.mark.parametrize("mi", range(len(AMD_LANE_MODELS)))
def test_amd_lane_kernel_equals_scalar_kernel(mi, monkeypatch):
    """TR-/GTR-FDPA products with at least 4 columns run on amd_fdpa.kernels.trfdpa_gemm_lanes;
    the scalar amd_gemm (checked against the Fraction reference and MMA-Sim's tables
    elsewhere) gives the same bits, with scattered Inf/NaN, rows of large values and a
    row of c far below the products (GTR-FDPA's special truncation)."""
    m = AMD_LANE_MODELS[mi]
    rng = np.random.default_rng(70 + mi)
    M, K_, N = 5, 40 * m.L + 3, 70
    spread = 3 if m.out_format == "fp16" or m.in_format.startswith("fp8") else 14
    A = _values(rng, (M, K_), m.in_format, False, spread)
    B = _values(rng, (K_, N), m.in_format, False, spread)
    C = _values(rng, (M, N), m.out_format, False, spread)
    _scattered_specials(rng, A, B, C, m.in_format)
    C[4] = wb.round(C[4] * 2.0 ** -30, m.out_format)   # c far below the products: GTR-FDPA drops it
    got = wb.gemm(A, B, C, model=m)
    monkeypatch.setattr(K, "LANES_MIN_N", 10 ** 9)
    want = wb.gemm(A, B, C, model=m)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), m.describe()
    assert np.isfinite(got).mean() > 0.5
    # an exact block sum next to a tiny negative c: kept, RD/RZ would take one unit off
    ones_a, ones_b = np.ones((2, m.L)), np.ones((m.L, 8))
    tiny = np.full((2, 8), -max(2.0 ** -40, F.format(m.out_format).min_subnormal))
    monkeypatch.setattr(K, "LANES_MIN_N", 4)
    got = wb.gemm(ones_a, ones_b, tiny, model=m)
    monkeypatch.setattr(K, "LANES_MIN_N", 10 ** 9)
    want = wb.gemm(ones_a, ones_b, tiny, model=m)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), m.describe()


#: (L, F, sticky) of fp16 units whose blocks of L largest aligned terms just fit the lane
#: kernel's int32 sums (bit_length(L - 1) + F + 2 + sticky = 31), and of units one bit past it.
INT32_SUM_EDGES = [(16, 25, False), (8, 25, True), (64, 23, False), (2, 28, False), (1, 29, False),
                   (16, 26, False), (8, 26, True), (64, 24, False), (2, 29, False)]


@pytest.mark.parametrize("L, F_, sticky", INT32_SUM_EDGES)
def test_lane_kernel_sums_blocks_of_the_largest_terms_exactly(L, F_, sticky):
    """Every product at the block's largest exponent with the largest significand, one
    sign per row: each aligned term is just below 2**(F + 2 + sticky), the block's sum
    just below L times that.  The lane kernel sums such terms in int32 exactly where
    they fit and in int64 past that: it agrees with the general path, and (no sticky
    knob in the reference) with the Fraction reference of Algorithm 7."""
    m = wb.preset("ampere", "fp16", "fp32").with_params(L=L, F=F_, sticky=sticky, rounding="rne")
    assert tfdpa_op.lane_layout(m, 8)
    big = (2 - 2.0 ** -10) * 2.0 ** 3          # fp16's largest significand
    K_ = 3 * L
    A = np.full((4, K_), big)
    A[1] = -big                                 # rows of negative products
    A[3, ::2] = -big                            # and of products that cancel pairwise
    B = np.full((K_, 8), big)
    C = np.zeros((4, 8))
    C[:, 1::2] = np.array([[2.0 ** 24], [-3.0], [1.0], [2.0 ** -30]])   # c above, near, below the block
    got = core.run(m, A, B, C)
    want = _general(m, A, B, C, "chain", None)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), m.describe()
    if not sticky:
        for i in range(4):
            for j in (0, 1):
                ref = dot_chain(list(A[i]), list(B[:, j]), float(C[i, j]), L=L, op=t_fdpa, F=F_, rounding="rne",
                                in_format="fp16", out_format="fp32", zero_exponent=m.zero_exponent)
                assert _same(float(got[i, j]), ref), (m.describe(), i, j, got[i, j], ref)
