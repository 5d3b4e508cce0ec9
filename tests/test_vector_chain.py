"""The explicit-vector T-FDPA chain (workbench.engine.vector_chain, driven by operations.tfdpa.vector_chain) gives the bits of
the lane kernel and of the general per-block path, over a space of units, shapes and
values drawn by hypothesis.

Expected values come from two independent implementations: the lane kernel
(operations.tfdpa.kernels.tfdpa_gemm_lanes, numba loops that LLVM vectorises) called directly, and the
general scalar path (P_GENERAL: one block at a time through operations.tfdpa.kernels.tfdpa_step), which
tests/test_engine_fastpath.py holds to the Fraction reference of Xie et al. 2025
Algorithm 7.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.numbers import formats as F
from workbench.engine import core
from workbench.engine import kernels as K
from workbench.engine.operations.tfdpa import kernels as TK
from workbench.engine import vector_chain as vc
from workbench.engine.operations.tfdpa import vector_chain as tvc
from workbench.engine.operations import tfdpa as tfdpa_op

sys.path.insert(0, str(Path(__file__).parent))
from test_engine_fastpath import _general as _general_path  # noqa: E402


def _general(m: wb.Model, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D through the general per-block path (chained accumulation)."""
    return _general_path(m, A, B, C, "chain", None)

IN_FORMATS = ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp4_e2m1"]


def _values(rng: np.random.Generator, shape: tuple[int, int], fmt: str, spread: int, specials: bool) -> np.ndarray:
    """Normal values over 2**-spread .. 2**spread, rounded to ``fmt``, with zeros, -0,
    subnormals, the largest values, ties and (with ``specials``) Inf/NaN mixed in."""
    f = F.format(fmt)
    n = int(np.prod(shape))
    kind = rng.integers(0, 100, n)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-spread, spread + 1, n).astype(float))
    x[kind < 10] = 0.0
    x[(kind >= 10) & (kind < 13)] = -0.0
    sub = (kind >= 13) & (kind < 18)
    x[sub] = rng.integers(-3, 4, sub.sum()) * f.min_subnormal
    big = (kind >= 18) & (kind < 20)
    x[big] = rng.choice([-1.0, 1.0], big.sum()) * f.max
    x = F.round(np.clip(x, -f.max, f.max), f)
    if specials and f.has_nan:
        x[kind == 99] = np.nan
        if f.has_inf:
            x[kind == 98] = np.inf
    return x.reshape(shape)


def _lane_kernel(m: wb.Model, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D through the lane kernel, called directly (chained accumulation)."""
    ops = core.prepare(m, A, B)
    N = B.shape[1]
    sb, eb, rows, cols = K.lane_operands(ops.sa, ops.ea, ops.sb, ops.eb, N, m.in_fmt.emin, True)
    acc = np.array(C, dtype=np.float64, copy=True)
    prm = TK.pack_tfdpa(tfdpa_op.accumulation_params(m, "chain", None), A.shape[0], N, numba.get_num_threads())
    TK.tfdpa_gemm_lanes(ops.sa, ops.ea, sb, eb, rows, cols, acc, prm)
    return acc


@st.composite
def units(draw: st.DrawFn) -> wb.Model:
    """T-FDPA units the vector chain computes: any block size, window, rounding,
    sticky bit, zero exponent and output flushing whose products and block sums fit
    32 bits."""
    fin = draw(st.sampled_from(IN_FORMATS))
    fout = draw(st.sampled_from(["fp32", "fp16"]))
    L = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    fp = 2 * F.format(fin).man_bits
    F_ = draw(st.integers(max(1, fp - 6), 29))
    m = wb.custom_model(fin, fout, L=L, F=F_, rounding=draw(st.sampled_from(["rz", "rne", "rd", "ru"])),
                        sticky=draw(st.booleans()), zero_exponent=draw(st.sampled_from([None, -133, -30, -5])),
                        flush_output_subnormals=draw(st.booleans()))
    prm = TK.pack_tfdpa(tfdpa_op.accumulation_params(m, "chain", None), 1, 16, 1)
    assume(bool(tvc.simd_eligible(prm)))
    return m


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(m=units(), M=st.integers(1, 9), N=st.integers(K.LANES_MIN_N, 40), blocks=st.integers(1, 40),
       extra=st.integers(0, 31), spread=st.integers(0, 20), specials=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_vector_chain_equals_lane_kernel_and_general_path(m: wb.Model, M: int, N: int, blocks: int, extra: int,
                                                          spread: int, specials: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    K_ = blocks * m.L + extra % m.L
    A = _values(rng, (M, K_), m.in_format, spread, specials)
    B = _values(rng, (K_, N), m.in_format, spread, specials)
    C = _values(rng, (M, N), m.out_format, spread, specials)
    assert not tfdpa_op.b_padded(m, N)
    got = core.run(m, A, B, C)
    assert np.array_equal(got.view(np.uint64), _lane_kernel(m, A, B, C).view(np.uint64)), m.describe()
    assert np.array_equal(got.view(np.uint64), _general(m, A, B, C).view(np.uint64)), m.describe()


def test_long_chains_cross_many_chunks() -> None:
    """Thousands of blocks (chunks of prm[P_BC] blocks, the tiles' rows resumed from
    the lane state each time) on the fp16/bf16 presets: the lane kernel's bits."""
    rng = np.random.default_rng(5)
    for arch, fmt in (("volta", "fp16"), ("ampere", "bf16"), ("hopper", "fp16"), ("hopper", "bf16")):
        m = wb.preset(arch, fmt, "fp32")
        A = _values(rng, (5, 20011), fmt, 6, False)
        B = _values(rng, (20011, 10), fmt, 6, False)
        C = _values(rng, (5, 10), "fp32", 6, False)
        got = core.run(m, A, B, C)
        assert np.array_equal(got.view(np.uint64), _lane_kernel(m, A, B, C).view(np.uint64)), m.describe()


@pytest.mark.parametrize("arch, fmt", [("volta", "fp16"), ("turing", "fp16"), ("ampere", "fp16"), ("ampere", "bf16"),
                                       ("ada", "fp16"), ("hopper", "fp16"), ("hopper", "bf16"),
                                       ("blackwell", "fp16"), ("blackwell", "bf16"), ("ampere", "tf32")])
def test_the_nvidia_presets_take_the_vector_chain(arch: str, fmt: str) -> None:
    """The fp16/bf16 (and tf32) presets' chained products run on the vector chain, and
    their B is decomposed unpadded; other accumulations keep the lane kernel."""
    m = wb.preset(arch, fmt, "fp32")
    assert not tfdpa_op.b_padded(m, 10)
    for accumulation, pe, want in (("chain", None, True), ("outside", None, False), ("promote", 4 * m.L, False)):
        prm = TK.pack_tfdpa(tfdpa_op.accumulation_params(m, accumulation, pe), 10, 10, 2)
        assert bool(tvc.simd_eligible(prm)) is want


def test_rows_per_tile() -> None:
    """Tiles of 16 columns and at most 32 rows, enough of them for every thread."""
    assert vc.simd_rows(10, 10, 2) == 5
    assert vc.simd_rows(64, 64, 2) == 32
    assert vc.simd_rows(64, 64, 16) == 16
    assert vc.simd_rows(1, 100, 8) == 1
    assert vc.simd_rows(1000, 4, 1) == 32


@settings(max_examples=60, deadline=None, derandomize=True)
@given(preset=st.sampled_from([("volta", "fp16"), ("hopper", "fp16"), ("ampere", "bf16"), ("hopper", "fp8_e4m3")]),
       M=st.integers(1, 23), TI=st.integers(1, 23), special_rows=st.sets(st.integers(0, 22), max_size=4),
       seed=st.integers(0, 2**32 - 1))
def test_rows_run_together_in_any_tile(preset: tuple[str, str], M: int, TI: int, special_rows: set[int],
                                       seed: int) -> None:
    """Tiles of any height, split into runs of rows without Inf/NaN and each run into
    calls of at most MAX_ROWS rows (every count 1 .. MAX_ROWS, runs broken anywhere by
    a row holding NaN): the lane kernel's bits."""
    m = wb.preset(preset[0], preset[1], "fp32")
    rng = np.random.default_rng(seed)
    K_ = 7 * m.L + 3
    A = _values(rng, (M, K_), m.in_format, 6, False)
    for i in special_rows:
        if i < M:
            A[i, rng.integers(K_)] = np.nan
    B = _values(rng, (K_, 13), m.in_format, 6, False)
    C = _values(rng, (M, 13), "fp32", 6, False)
    ops = core.prepare(m, A, B)
    sb, eb, rows, cols = K.lane_operands(ops.sa, ops.ea, ops.sb, ops.eb, 13, m.in_fmt.emin, True, pad=False)
    prm = TK.pack_tfdpa(tfdpa_op.accumulation_params(m, "chain", None), M, 13, numba.get_num_threads())
    got = np.array(C, dtype=np.float64, copy=True)
    tvc.tfdpa_gemm_simd(ops.sa, ops.ea, sb, eb, rows, cols, got, prm, TI)
    assert np.array_equal(got.view(np.uint64), _lane_kernel(m, A, B, C).view(np.uint64)), (M, TI, special_rows)


#: (L, F, sticky) at the edge of the 32-bit tail (bit_length(2L + 1) + F + 1 + sticky = 31) and one bit past it.
TAIL_EDGES = [(8, 25, False), (4, 25, True), (2, 27, False), (1, 28, False), (16, 24, False),
              (8, 26, False), (4, 26, True), (2, 28, False), (16, 25, False)]


@pytest.mark.parametrize("L, F_, sticky", TAIL_EDGES)
def test_tails_at_the_edge_of_32_bits(L: int, F_: int, sticky: bool) -> None:
    """Every product at the block's largest exponent with fp16's largest significand, one
    sign per row, next to c above, near and below the block: the block's sum with c
    comes within a few units of 2**31 where the 32-bit tail is chosen, and the 64-bit
    one takes the units one bit past it; both give the general path's bits."""
    m = wb.custom_model("fp16", "fp32", L=L, F=F_, sticky=sticky, rounding="rne")
    prm = TK.pack_tfdpa(tfdpa_op.accumulation_params(m, "chain", None), 4, 8, 1)
    assert bool(tvc.simd_eligible(prm))
    assert bool(tvc.narrow_tail(prm)) == (TAIL_EDGES.index((L, F_, sticky)) < 5)
    big = (2 - 2.0 ** -10) * 2.0 ** 3
    K_ = 3 * L
    A = np.full((4, K_), big)
    A[1] = -big
    A[3, ::2] = -big
    B = np.full((K_, 8), big)
    C = np.zeros((4, 8))
    C[:, 1::2] = np.array([[2.0 ** 24], [-3.0 * 2.0 ** 7], [1.0], [2.0 ** -30]])
    C[:, 2] = -(2 - 2.0 ** -23) * 2.0 ** 14     # c just below the block's top, of the other sign
    got = core.run(m, A, B, C)
    assert np.array_equal(got.view(np.uint64), _general(m, A, B, C).view(np.uint64)), m.describe()
