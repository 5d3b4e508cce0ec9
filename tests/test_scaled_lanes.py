"""The block-scaled operations' fast paths against their one-output kernels.

* GST-FDPA (Xie et al. 2025 Algorithm 9): ``gst_gemm_lanes`` (outputs side by side)
  must give the bits of ``gst_gemm`` (one output at a time, every special case) for
  every GST-FDPA preset and custom models with fp6/fp8 inputs.
* ST-FDPA (Algorithm 8): ``workbench.gemm`` (operands decomposed once, scale
  exponents added in one compiled pass) must give the bits of the one-output T-FDPA
  kernel run on operands scaled here with numpy.

Shapes with M and N not multiples of the lane width and K not a multiple of the
block; values: normal, wide-ranged scales, subnormals, zeros, and Inf/NaN where the
formats have them (C, scales, fp8 operands) - overflowing chains included.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench.engine import core
from workbench.engine.operations.gstfdpa import kernels as gst
from workbench.engine.operations.tfdpa import kernels as TK
from workbench.engine.operations.tfdpa import kernel_params

GST_MODELS = [r for r in catalogue.records() if r.kind == "gst-fdpa"] + [
    wb.custom_model("fp6_e2m3", "fp32", kind="gst-fdpa", L=32, F=30, G=8, k_block=16, scale_format="ue4m3",
                    rounding="rne", zero_exponent=-139),
    wb.custom_model("fp8_e4m3", "fp32", kind="gst-fdpa", L=64, F=25, G=16, k_block=32, scale_format="e8m0",
                    rounding="rz"),
]
ST_MODELS = [r for r in catalogue.records() if r.kind == "st-fdpa"]
KINDS = ["normal", "wide", "subnormal", "special"]


def _grid(fmt: str) -> np.ndarray:
    """Every finite value of a narrow format (its binades' grids, filtered by the format)."""
    f = wb.format(fmt)
    steps = np.arange(1 << f.man_bits) / (1 << f.man_bits)
    mags = np.concatenate([[0.0], steps * 2.0 ** f.emin, *[(1 + steps) * 2.0 ** e for e in range(f.emin, f.emax + 1)]])
    x = np.unique(np.concatenate([mags, -mags]))
    return x[wb.is_representable(x, fmt) & np.isfinite(x)]


def _operands(fmt: str, kind: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    f = wb.format(fmt)
    vals = _grid(fmt)
    x = rng.choice(vals, shape)
    if kind == "subnormal":
        tiny = vals[np.abs(vals) < 2.0 ** f.emin]
        x = np.where(rng.random(shape) < 0.5, rng.choice(tiny, shape), x)
    if kind == "special" and f.has_nan:
        x = np.where(rng.random(shape) < 0.03, np.nan, x)
    if kind == "special" and f.has_inf:
        x = np.where(rng.random(shape) < 0.03, np.inf * np.sign(rng.random(shape) - 0.5), x)
    return x


def _scales(fmt: str, kind: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    vals = _grid(fmt)
    if kind != "wide":
        vals = vals[(vals >= 2.0 ** -4) & (vals <= 2.0 ** 4)]
    x = rng.choice(vals, shape)
    if kind == "special":
        x = np.where(rng.random(shape) < 0.02, np.nan, x)
    return x


def _accumulator(kind: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    c = rng.standard_normal(shape) * 2.0 ** rng.integers(-10, 10, shape)
    if kind == "wide":
        c = c * 2.0 ** rng.integers(-140, 127, shape)
    if kind == "subnormal":
        c = c * 2.0 ** -130
    if kind == "special":
        pick = rng.random(shape)
        c = np.where(pick < 0.03, np.nan, np.where(pick < 0.06, -np.inf, np.where(pick < 0.1, 3.0e38, c)))
    return wb.round(c, "fp32", "rne").astype(np.float64)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.uint64)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal bits, NaN for NaN (gemm encodes NaN canonically)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    nan = np.isnan(x)
    return bool((nan == np.isnan(y)).all() and (_bits(x)[~nan] == _bits(y)[~nan]).all())


def _draw(model, kind: str, M: int, Kdim: int, N: int, seed: int) -> tuple[np.ndarray, ...]:
    """A (M, K), B (K, N), their block scales and C, drawn as ``kind`` for a block-scaled model."""
    rng = np.random.default_rng(seed)
    nb = -(-Kdim // model.k_block)
    A = _operands(model.in_format, kind, (M, Kdim), rng)
    B = _operands(model.in_format, kind, (Kdim, N), rng)
    sa = _scales(model.scale_format, kind, (M, nb), rng)
    sb = _scales(model.scale_format, kind, (nb, N), rng)
    C = _accumulator(kind, (M, N), rng)
    return A, B, sa, sb, C


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(GST_MODELS), M=st.integers(1, 13), N=st.integers(4, 21), Kdim=st.integers(0, 200),
       kind=st.sampled_from(KINDS), seed=st.integers(0, 2 ** 32 - 1))
@example(model=GST_MODELS[5], M=11, N=11, Kdim=11, kind="wide", seed=11)   # C = -0 that no product changes
def test_gst_lanes_equal_one_output_kernel(model, M, N, Kdim, kind, seed):
    A, B, sa, sb, C = _draw(model, kind, M, Kdim, N, seed)
    ops = core.prepare(model, A, B)
    want = C.copy()
    gst.run_gst(model, ops.sa, ops.ea, ops.sb, ops.eb, want, sa, sb, True, lanes=False)
    got = C.copy()
    gst.run_gst(model, ops.sa, ops.ea, ops.sb, ops.eb, got, sa, sb, ops.special, lanes=True)
    assert (_bits(got) == _bits(want)).all()
    # and what gemm returns (fp32, canonical NaN) is that result, with the unit's zeros +0: an
    # NVIDIA tensor core outputs no -0 (Valpey et al. 2025 Sec. 4.4; MMA-Sim's gst_fdpa ends in
    # + 0.0), while the kernels leave a C of -0 that no product changed as it is
    D = wb.gemm(A, B, C, model=model, scale_a=sa, scale_b=sb)
    assert _same(D, np.where(want == 0, 0.0, want).astype(np.float32))


def _st_one_output(model, A: np.ndarray, B: np.ndarray, C: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """ST-FDPA on the one-output T-FDPA kernel, the scales' exponents added with numpy:
    a NaN scale makes its block's elements NaN, Inf/NaN elements keep their exponent."""
    M, Kdim = A.shape
    N = B.shape[1]
    Kp = Kdim + (-Kdim) % model.L if Kdim else model.L
    Ap = np.zeros((M, Kp))
    BTp = np.zeros((N, Kp))
    Ap[:, :Kdim] = A
    BTp[:, :Kdim] = B.T
    f = model.in_fmt
    s_a, e_a = core.decompose(Ap, f.man_bits, f.emin, model.flush_subnormals)
    s_b, e_b = core.decompose(BTp, f.man_bits, f.emin, model.flush_subnormals)
    cols = np.arange(Kdim) // model.k_block
    for s, e, lg in ((s_a, e_a, np.log2(sa)[:, cols]), (s_b, e_b, np.log2(sb.T)[:, cols])):
        nan = np.isnan(lg)
        sub_e = e[:, :Kdim]
        sub_s = s[:, :Kdim]
        sub_e += np.where(nan | (sub_e >= 1 << 24), 0, np.nan_to_num(lg)).astype(np.int32)
        sub_s[nan] = 2
        sub_e[nan] = 1 << 24
    prm = TK.pack_tfdpa(kernel_params(model), M, N, numba.get_num_threads())
    acc = C.copy()
    TK.tfdpa_gemm(s_a, e_a, s_b.T, e_b.T, acc, prm)
    return acc


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(ST_MODELS), M=st.integers(1, 13), N=st.integers(1, 21), Kdim=st.integers(0, 100),
       kind=st.sampled_from(KINDS), seed=st.integers(0, 2 ** 32 - 1))
def test_st_gemm_equals_one_output_kernel(model, M, N, Kdim, kind, seed):
    A, B, sa, sb, C = _draw(model, kind, M, Kdim, N, seed)
    want = _st_one_output(model, A, B, C, sa, sb).astype(np.float32)
    assert _same(wb.gemm(A, B, C, model=model, scale_a=sa, scale_b=sb), want)
    ops = core.prepare(model, A, B)          # running twice leaves the prepared operands as they were
    first = core.run_prepared(model, ops, C, scale_a=sa, scale_b=sb)
    assert (_bits(core.run_prepared(model, ops, C, scale_a=sa, scale_b=sb)) == _bits(first)).all()


def test_a_group_that_cancels_keeps_its_scales_exponent():
    """Xie et al. Algorithm 9, line 5: e_g = Exp(alpha) + Exp(beta) whatever p_g is, so a
    group whose products cancel (1*1 + 1*(-1) = 0) at scale 2^20 still sets e_max = 20,
    and c = 1 + 2^-23 aligned there loses its last bit to the F = 35 truncation:
    c * 2^-20 needs 43 fractional bits.  MMA-Sim 2.1.1's gst_fdpa does the same ("zeros
    resulted from summation do not apply e_zero"); only a group whose products are all
    zero takes the zero exponent.  By hand: d = RZ(1.0) = 1.0 on every output, lanes
    (16 columns) and one output at a time (1 column) alike."""
    m = wb.preset("B200", "fp4_e2m1", "fp32", instruction="tcgen05.mma.block_scale.k64", variant="mxfp4")
    assert (m.kind, m.L, m.G, m.F, m.k_block) == ("gst-fdpa", 64, 16, 35, 32)
    c = 1 + 2.0 ** -23
    for N in (1, 16):
        A = np.zeros((2, 64))
        B = np.zeros((64, N))
        A[:, :2] = 1.0
        B[0], B[1] = 1.0, -1.0
        sa = np.ones((2, 2))
        sa[:, 0] = 2.0 ** 20
        D = wb.gemm(A, B, np.full((2, N), c), model=m, scale_a=sa, scale_b=np.ones((2, N)))
        assert (D == 1.0).all(), D
        # the same block with all-zero products: the group takes the zero exponent, c is kept
        D0 = wb.gemm(np.zeros((2, 64)), B, np.full((2, N), c), model=m, scale_a=sa, scale_b=np.ones((2, N)))
        assert (D0 == c).all(), D0


@pytest.mark.parametrize("N", [2, 16])    # B stored as B^T (a transposed view), and in the lane layout
def test_prepared_operands_survive_other_products_in_between(N):
    """ST-FDPA writes its scaled exponents into workspace buffers and hands them back
    after the product: never the prepared operands' own buffers (B^T's transposed view
    is a new object over them), which a caller may run again after other products of
    the same shapes took buffers from the workspace.  K is large enough (2^18) for the
    workspace to keep the buffers."""
    model = wb.preset("blackwell", "fp8_e4m3", "fp32", "mx")
    rng = np.random.default_rng(N)
    M, Kdim = 2, 1 << 18
    nb = Kdim // model.k_block

    def draw():
        return (wb.round(rng.standard_normal((M, Kdim)), model.in_format),
                wb.round(rng.standard_normal((Kdim, N)), model.in_format),
                {"scale_a": np.exp2(rng.integers(-3, 4, (M, nb))), "scale_b": np.exp2(rng.integers(-3, 4, (nb, N)))})

    A, B, scales = draw()
    ops = core.prepare(model, A, B)
    C = np.zeros((M, N))
    first = core.run_prepared(model, ops, C, **scales)
    A2, B2, scales2 = draw()
    wb.gemm(A2, B2, C, model=model, **scales2)
    assert (_bits(core.run_prepared(model, ops, C, **scales)) == _bits(first)).all()
    assert (_bits(first) == _bits(core.run(model, A, B, C, **scales))).all()
