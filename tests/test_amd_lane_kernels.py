"""The lane kernels of E-FDPA and FTZ-AddMul against the one-output-at-a-time kernels
they replace, and against ``mmasim`` on shapes the differential test does not reach.

* ``efdpa_gemm_lanes`` (Xie et al. 2025 Algorithm 6 on outputs side by side, the
  exact sum in one int64 when a block's terms fit, the limbs otherwise) against
  ``amd_gemm`` / ``efdpa_step``, and ``ftz_addmul_lanes`` (Algorithms 1-2 in float32
  lanes, NaN results recomputed) against ``ftz_addmul_gemm``: bit for bit, NaN
  payloads included, over shapes (M, N not multiples of the lane width, K not a
  multiple of L), tiles, chunks of K, value kinds (normal, wide exponent range,
  subnormals, random bit patterns with NaN/Inf) and every preset of both kinds plus
  custom E-FDPA models (fp16 outputs, L up to 16, every rounding).
* Through ``workbench.gemm`` (the operations' ``prepare`` and dispatch) against the
  same references, and against ``mmasim`` 2.1.1 with N not a multiple of 8 and K
  crossing the lane kernels' chunks of K (M * N * K a multiple of 8, as in
  ``tests/test_mmasim_differential.py``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.numbers import formats as F
from workbench.units.catalogue import records
from workbench.engine.operations.amd_fdpa import kernels as amd
from workbench.engine import kernels as K
from workbench.engine.operations.ftz_addmul import kernels as others
from workbench.engine.operands import pad_k, padded_decomposed

sys.path.insert(0, str(Path(__file__).parent))
import mmasim_oracle as mo  # noqa: E402

EFDPA = [r for r in records() if r.kind == "e-fdpa"]
FTZ = [r for r in records() if r.kind == "ftz-addmul"]
EFDPA_CUSTOM = [wb.custom_model("fp16", "fp16", kind="e-fdpa", L=8, rounding="rz"),
                wb.custom_model("bf16", "fp32", kind="e-fdpa", L=16, rounding="rd"),
                wb.custom_model("tf32", "fp32", kind="e-fdpa", L=4, rounding="ru"),
                wb.custom_model("fp8_e4m3", "fp32", kind="e-fdpa", L=1, rounding="rne")]
#: Units of the binary64 lane kernels (fp32 results, RNE) besides the presets: L of 1,
#: 3 (blocks of no fused form, a last block short) and 16, fp8 inputs, flushed outputs.
EFDPA_FLOAT = [r for r in EFDPA if amd.efdpa_float_fits(r, 8)] + [
    wb.custom_model("bf16", "fp32", kind="e-fdpa", L=16, rounding="rne"),
    wb.custom_model("fp8_e4m3", "fp32", kind="e-fdpa", L=1, rounding="rne"),
    wb.custom_model("fp16", "fp32", kind="e-fdpa", L=3, rounding="rne", flush_output_subnormals=True)]
KINDS = ("normal", "wide", "subnormal", "bits")
SETTINGS = settings(max_examples=25, deadline=None)


def values(kind: str, fmt: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    """float64 values of ``fmt`` of one kind (``bits``: every pattern, NaN payloads kept)."""
    rng = np.random.default_rng(seed)
    if kind == "subnormal":   # around the smallest normal: subnormals, their neighbours, zeros of both signs
        f = F.format(fmt)
        x = rng.standard_normal(shape) * f.min_normal * np.exp2(rng.integers(-f.man_bits, 3, shape))
        x[rng.random(shape) < 0.1] = -0.0
        return F.round(x, f, "rne")
    return mo.values(mo.draw(kind, fmt, shape, rng), fmt)


def operands(m, kind: str, M: int, Kk: int, N: int, seed: int):
    """(A, B, C) float64 for model ``m``; C of the same kind in the output format."""
    return (values(kind, m.in_format, (M, Kk), seed), values(kind, m.in_format, (Kk, N), seed + 1),
            values(kind, m.out_format, (M, N), seed + 2))


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def efdpa_reference(m, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D by ``amd_gemm``: every output's chain of ``efdpa_step`` blocks (the limbs)."""
    q = amd.amd_params(m, amd.KIND_E)
    q[amd.P_K] = A.shape[1]
    A2, BT2, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    D = C.copy()
    amd.amd_gemm(A2, BT2, sa, ea, sb.T, eb.T, D, q)
    return D


def ftz_reference(m, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D by ``ftz_addmul_gemm``: every output's chain in float64, rounded to fp32 per operation."""
    A2, BT2 = pad_k(A, np.ascontiguousarray(B.T), m.P)
    D = C.copy()
    others.ftz_addmul_gemm(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), D, m.P, m.in_fmt.min_normal)
    return D


shapes = st.tuples(st.integers(1, 9), st.integers(0, 37), st.integers(4, 21))


@SETTINGS
@given(m=st.sampled_from(EFDPA + EFDPA_CUSTOM), kind=st.sampled_from(KINDS), shape=shapes,
       seed=st.integers(0, 2**31), TI=st.integers(1, 4), TJ=st.sampled_from([8, 16, 24]), BC=st.integers(1, 4))
@example(m=EFDPA_CUSTOM[2], kind="subnormal", shape=(2, 1, 12), seed=3, TI=1, TJ=8, BC=1)
def test_efdpa_lanes_equal_the_one_output_kernel(m, kind, shape, seed, TI, TJ, BC):
    """efdpa_gemm_lanes with any tiles and chunks of K gives amd_gemm's bits (the
    example: a block left to the limbs that rounds up to -0, whose sign the lane
    must keep)."""
    M, Kk, N = shape
    A, B, C = operands(m, kind, M, Kk, N, seed)
    q = amd.amd_params(m, amd.KIND_E)
    q[amd.P_K] = Kk
    A2, BT2, sa, ea, sb, eb = padded_decomposed(m, A, np.ascontiguousarray(B.T), m.L)
    sbl, ebl, row_special, col_special = K.lane_operands(sa, ea, sb.T, eb.T, N, m.in_fmt.emin)
    D = C.copy()
    amd.efdpa_gemm_lanes(A, np.ascontiguousarray(B.T), sa, ea, sbl, ebl, row_special, col_special, D, q, TI, TJ, BC)
    np.testing.assert_array_equal(bits(D), bits(efdpa_reference(m, A, B, C)))


@settings(max_examples=80, deadline=None)
@given(m=st.sampled_from(EFDPA_FLOAT), kind=st.sampled_from(KINDS),
       shape=st.tuples(st.integers(1, 12), st.integers(0, 90), st.integers(1, 40)), seed=st.integers(0, 2**31),
       TI=st.integers(1, 12), BC=st.integers(1, 4))
def test_efdpa_binary64_lanes_equal_the_one_output_kernel(m, kind, shape, seed, TI, BC):
    """efdpa_gemm_simd (the vector chain of up to five rows x 16 lanes: TwoSum, round
    to odd, the fp32 conversion; the limbs where that is not exact, the chain resumed
    after them) with any tile height and chunk of K gives amd_gemm's bits, NaN
    payloads, Inf, signed zeros and subnormal results included."""
    M, Kk, N = shape
    A, B, C = operands(m, kind, M, Kk, N, seed)
    q = amd.amd_params(m, amd.KIND_E)
    A2, B2 = (A, B) if Kk else (np.zeros((M, m.L)), np.zeros((m.L, N)))
    q[amd.P_K] = A2.shape[1]
    D = C.copy()
    amd.efdpa_gemm_simd(A2, np.ascontiguousarray(B2), D, q, m.in_fmt.man_bits, m.in_fmt.emin, TI, BC)
    np.testing.assert_array_equal(bits(D), bits(efdpa_reference(m, A, B, C)))


@pytest.mark.parametrize("m", [r for r in EFDPA_FLOAT if r.L >= 2 and r.in_format in ("fp16", "bf16")],
                         ids=lambda r: f"{r.in_format}-L{r.L}")
def test_efdpa_binary64_chain_sends_inexact_sums_to_the_limbs(m):
    """c = 2**30 and a block whose products are 2**6 (8 x 8) and +-2**-48
    (2**-24 x 2**-24): binary64 cannot hold 2**6 + 2**-48 (55 bits), so TwoSum's
    error term is non-zero and the block must go to the limbs.  Exactly, c + 2**6 is
    the midpoint between the fp32 neighbours 2**30 and 2**30 + 2**7 (ulp 2**7), so the
    2**-48 decides: RNE gives 2**30 + 2**7 above it, 2**30 below it (and the mirror
    images for -c).  Summing the rounded 2**6 instead would give 2**30 (ties to even)
    both times.  Lanes and rows around them hold ordinary blocks, and the chain goes
    on after the limbs (a second block adds 1.5 * 2**8)."""
    L = m.L
    K_ = 2 * L
    A = np.zeros((6, K_))
    B = np.zeros((K_, 11))
    A[:, 0], A[:, 1] = 8.0, 2.0 ** -24
    A[:, L] = 1.5
    B[0, :], B[1, :] = 8.0, 2.0 ** -24
    B[1, 1::2] = -(2.0 ** -24)
    B[L, :] = 2.0 ** 8
    C = np.full((6, 11), 2.0 ** 30)
    C[3:] = -(2.0 ** 30)
    A[3:, :] *= -1            # -c with every product negated: the mirror image
    up, down = 2.0 ** 30 + 2.0 ** 7, 2.0 ** 30
    want = np.where(np.arange(11) % 2 == 0, up, down)[None, :] + 1.5 * 2.0 ** 8
    want = np.vstack([np.repeat(want, 3, axis=0), -np.repeat(want, 3, axis=0)])
    q = amd.amd_params(m, amd.KIND_E)
    q[amd.P_K] = K_
    for TI in (1, 2, 6):
        D = C.copy()
        amd.efdpa_gemm_simd(A, B, D, q, m.in_fmt.man_bits, m.in_fmt.emin, TI, 1)
        np.testing.assert_array_equal(D, want)
    np.testing.assert_array_equal(np.asarray(wb.gemm(A, B, C, model=m), dtype=np.float64), want)


@SETTINGS
@given(m=st.sampled_from(EFDPA_FLOAT), kind=st.sampled_from(KINDS),
       shape=st.tuples(st.integers(4, 40), st.integers(0, 150)), seed=st.integers(0, 2**31))
def test_efdpa_binary64_rows_equal_the_one_output_kernel(m, kind, shape, seed):
    """efdpa_rows_float (workbench's dots for these units: rows side by side, K in
    chunks of 64 or so) gives the diagonal of amd_gemm's product bit for bit."""
    n, Kk = shape
    A, B, C = operands(m, kind, n, Kk, n, seed)
    d = amd.amd_dots(m, amd.KIND_E, A, np.ascontiguousarray(B.T), np.diag(C).copy())
    np.testing.assert_array_equal(bits(d), bits(np.diag(efdpa_reference(m, A, B, C))))


def test_binary64_lanes_take_only_fp32_rne_units():
    """Directed roundings, narrower results and flushed inputs stay on the integer lanes."""
    assert all(amd.efdpa_float_fits(r, 8) for r in EFDPA)
    assert not any(amd.efdpa_float_fits(r, 8) for r in EFDPA_CUSTOM if r.rounding != "rne" or r.out_format != "fp32")
    assert not amd.efdpa_float_fits(wb.custom_model("fp16", "fp32", kind="e-fdpa", L=4, rounding="rne",
                                                    flush_subnormals=True), 8)
    assert not amd.efdpa_float_fits(EFDPA[0], 3)


@SETTINGS
@given(m=st.sampled_from(FTZ), kind=st.sampled_from(KINDS), shape=shapes, seed=st.integers(0, 2**31),
       TI=st.integers(1, 4), TJ=st.sampled_from([8, 16, 24]), BC=st.integers(1, 4))
def test_ftz_lanes_equal_the_one_output_kernel(m, kind, shape, seed, TI, TJ, BC):
    """ftz_addmul_lanes with any tiles and chunks of K, its NaN outputs recomputed by
    ftz_addmul_outputs, gives ftz_addmul_gemm's bits."""
    M, Kk, N = shape
    A, B, C = operands(m, kind, M, Kk, N, seed)
    P = m.P
    A2, BT2 = pad_k(A, np.ascontiguousarray(B.T), P)
    Np = -(-N // K.LANE_PAD) * K.LANE_PAD
    A32 = np.empty((M, A2.shape[1]), dtype=np.float32)
    B32 = np.empty((A2.shape[1], Np), dtype=np.float32)
    others.ftz_operand32(A, A32, m.in_fmt.min_normal)
    others.ftz_operand32(B, B32, m.in_fmt.min_normal)
    D = C.copy()
    others.ftz_addmul_lanes(A32, B32, D, P, TI, TJ, BC)
    rows, cols = np.nonzero(np.isnan(D))
    others.ftz_addmul_outputs(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), D, C, rows, cols, P,
                              m.in_fmt.min_normal)
    np.testing.assert_array_equal(bits(D), bits(ftz_reference(m, A, B, C)))


@SETTINGS
@given(m=st.sampled_from(EFDPA + EFDPA_CUSTOM + FTZ), kind=st.sampled_from(KINDS),
       shape=st.tuples(st.integers(1, 9), st.integers(0, 37), st.integers(1, 21)), seed=st.integers(0, 2**31))
def test_gemm_equals_the_one_output_kernels(m, kind, shape, seed):
    """workbench.gemm (compiled input check and decomposition, dispatch to the lane or
    the one-output kernel by N) gives the reference kernels' bits."""
    M, Kk, N = shape
    if m.kind == "ftz-addmul":
        Kk -= Kk % m.P        # FTZ-AddMul is defined on whole pairs/quads (Xie Algorithm 2)
    A, B, C = operands(m, kind, M, Kk, N, seed)
    reference = efdpa_reference if m.kind == "e-fdpa" else ftz_reference
    np.testing.assert_array_equal(bits(wb.gemm(A, B, C, model=m)), bits(reference(m, A, B, C)))


def test_an_input_off_the_format_is_named():
    m = next(r for r in FTZ if r.in_format == "fp16")
    A = np.ones((3, 8))
    A[2, 5] = 1 + 2.0 ** -12
    with pytest.raises(ValueError, match=r"A\[2, 5\] = 1.000244140625 is not representable in fp16"):
        wb.gemm(A, np.ones((8, 5)), model=m)
    B = np.ones((8, 5))
    B[3, 4] = B[6, 0] = 70000.0
    with pytest.raises(ValueError, match=r"B\[3, 4\] = 70000.0 is not representable in fp16"):
        wb.gemm(np.ones((3, 8)), B, model=m)


@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", EFDPA + FTZ, ids=[p.name for p in EFDPA + FTZ])
def test_lane_shapes_match_mmasim(p, kind):
    """N = 13 (lanes padded to 16, three left unwritten) and K = 1032, past the first
    chunk of K of both lane kernels at this N, bit for bit against mmasim 2.1.1."""
    pytest.importorskip("torch", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    pytest.importorskip("mmasim", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    rng = np.random.default_rng([13, len(p.name), mo.INPUT_KINDS.index(kind)])
    A, B, C = mo.operands(kind, p, 8, 1032, 13, rng)
    got, want = mo.compare(p, A, B, C)
    np.testing.assert_array_equal(got, want)
