"""FMA chains with c added late (d = rho(chain(a*b from 0) + c)), the arithmetic of a
BLAS ``A @ B + C`` (numpy/OpenBLAS sgemm and dgemm with beta = 1).  Expected values come
from the Fraction reference of tests/reference_mma.py, not from the engine."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_mma as ref  # noqa: E402
from inference_checks import assert_strongly_honest, is_fp32_fma_chain  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.probes import infer  # noqa: E402
from workbench.probes.targets import target  # noqa: E402


def _late_reference(a, b, c, out_format, late_rounding):
    chain = ref.fma_chain(a, b, 0.0, rounding="rne", out_format=out_format)
    return ref._ieee_fma(chain, 1.0, c, out_format, late_rounding)


def _same(x: float, y: float) -> bool:
    return (np.isnan(x) and np.isnan(y)) or (x == y and np.signbit(x) == np.signbit(y))


@pytest.mark.parametrize("fmt", ["fp32", "fp64"])
@pytest.mark.parametrize("late_rounding", ["rne", "rz", "rd", "ru"])
def test_fma_chain_with_late_c_matches_the_fraction_reference(fmt, late_rounding):
    m = wb.custom_model(fmt, fmt, kind="fma", c_position="late", late_rounding=late_rounding)
    rng = np.random.default_rng(7)
    dt = np.float32 if fmt == "fp32" else np.float64
    K = 5
    checked = 0
    for case in range(120):
        a = rng.standard_normal(K).astype(dt).astype(np.float64)
        b = rng.standard_normal(K).astype(dt).astype(np.float64)
        if case % 3 == 0:        # cancellation down to the low bits
            a[1], b[1] = -a[0], b[0]
        scale = 2.0 ** int(rng.integers(-60, 60))
        c = float(dt(rng.standard_normal() * scale))
        got = float(wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=m)[0, 0])
        want = _late_reference(list(a), list(b), c, fmt, late_rounding)
        assert _same(got, want), (a, b, c, got, want)
        checked += 1
    assert checked == 120


def test_late_c_survives_where_the_chain_cancels():
    # 1*1 + (-1)*1 cancels exactly; c = 2^-60 lies far below 1's ulp
    a, b, c = np.array([[1.0, -1.0]]), np.array([[1.0], [1.0]]), np.array([[2.0**-60]])
    early = wb.custom_model("fp32", "fp32", kind="fma")
    late = wb.custom_model("fp32", "fp32", kind="fma", c_position="late")
    assert wb.gemm(a, b, c, model=early)[0, 0] == 0.0          # c absorbed into 1, then 1 - 1
    assert wb.gemm(a, b, c, model=late)[0, 0] == np.float32(2.0**-60)


def test_independent_fp32_chain_matches_the_fraction_reference():
    rng = np.random.default_rng(5)
    for case in range(200):
        K = int(rng.integers(1, 7))
        a = (rng.standard_normal(K) * np.exp2(rng.integers(-140, 40, K))).astype(np.float32).astype(float)
        b = rng.standard_normal(K).astype(np.float32).astype(float)
        if case % 2 and K > 1:        # cancellation down to the low bits, and midpoints
            a[1:] = (-a[:-1] * rng.choice([1.0, 1 + 2.0**-23, 1 - 2.0**-24], K - 1)).astype(np.float32)
            b[1:] = 1.0
        c = float(np.float32(rng.standard_normal() * 2.0 ** int(rng.integers(-30, 30))))
        got = ref.fp32_fma_chain_matmul(a[None, :], b[:, None], np.array([[c]]))[0, 0]
        assert _same(got, _late_reference(list(a), list(b), c, "fp32", "rne")), (a, b, c)


def test_fp32_fma_chain_with_late_c_is_recovered_and_verified():
    # the arithmetic of a BLAS sgemm whose inner loop is one FMA chain, then numpy's + C,
    # as an independent black box: the c-late FMA recovery is covered on every host
    bb = wb.probes.BlackBox(ref.fp32_fma_chain_matmul, "fp32", "fp32", name="float32 FMA chain + C")
    res = infer(bb, n_verify=3000)
    assert res.params["kind"] == "fma" and res.params["L"] == 1
    assert res.params["c_position"] == "late" and res.params["late_rounding"] == "rne"
    assert res.verified, res.sheet()
    assert_strongly_honest(bb, res)


def test_the_host_check_tells_a_chain_from_a_wide_sum():
    assert is_fp32_fma_chain(ref.fp32_fma_chain_matmul)
    # one rounding of the binary64 sum (a wide accumulator) is not the chain
    assert not is_fp32_fma_chain(lambda A, B, C: (A @ B + C).astype(np.float32))


def test_numpy_fp32_matmul_plus_c_is_honestly_answered():
    """The host's OpenBLAS sgemm: not one FMA chain on the project's machines (blocked,
    vectorised sums), so the answer depends on the host; whatever it is, it is checked
    against the black box (inference_checks.assert_strongly_honest: a verified model
    replayed on fresh products with K up to 513, a counterexample rerun, 'no model'
    checked against the FMA chain it rules out).  The parameters (kind fma, c late, RNE,
    verified) are asserted on the deterministic chain of
    test_fp32_fma_chain_with_late_c_is_recovered_and_verified (and, under -m slow, of
    test_float64_fma_chain_in_python_is_recovered); the real library verified bit for bit
    is numpy's float64 matmul at one thread (tests/test_library_probe.py)."""
    bb = target("numpy-fp32")
    assert_strongly_honest(bb, infer(bb, n_verify=3000))


def _python_fp64_chain(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """fp64 FMA chain in K order from 0, then + C: each FMA is Fraction arithmetic rounded
    once by float() (correctly rounded, ties to even, in CPython), the late addition a
    float64 addition; the same bits on every machine."""
    from fractions import Fraction

    D = np.empty(C.shape)
    for i, j in np.ndindex(*C.shape):
        d = 0.0
        for x, y in zip(A[i], B[:, j]):
            x, y = float(x), float(y)
            if not (math.isfinite(x) and math.isfinite(y)) or x == 0 or y == 0:
                d = x * y + d                               # IEEE: Inf/NaN operands, zero products exactly
                continue
            if not math.isfinite(d):                        # a finite exact product leaves +-Inf/NaN as it is
                continue
            v = Fraction(x) * Fraction(y) + Fraction(d)
            try:
                d = float(v)
            except OverflowError:                           # beyond the largest float64: RNE -> Inf
                d = math.inf if v > 0 else -math.inf
        with np.errstate(all="ignore"):
            D[i, j] = np.float64(d) + np.float64(C[i, j])
    return D


@pytest.mark.slow   # infer's structure step asks for a 256 x 131 x 256 product: ~4 min of Fractions per call
def test_float64_fma_chain_in_python_is_recovered():
    bb = wb.probes.BlackBox(_python_fp64_chain, "fp64", "fp64", name="float64 FMA chain in Python + C")
    res = infer(bb, n_verify=300)
    assert res.params["kind"] == "fma" and res.params["L"] == 1, res.sheet()
    assert res.params["c_position"] == "late" and res.params["late_rounding"] == "rne", res.sheet()
    assert res.verified, res.sheet()


def test_fma_presets_still_have_c_early():
    res = infer(wb.probes.from_model(wb.preset("MI300X", "fp32", "fp32")), n_verify=2000)
    assert res.params["c_position"] == "early" and res.verified


def test_explain_traces_the_late_addition():
    m = wb.custom_model("fp32", "fp32", kind="fma", c_position="late")
    t = wb.explain([1.0, -1.0], [1.0, 1.0], 2.0**-60, m)
    assert t.value == 2.0**-60 and "c added late" in str(t)
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = rng.standard_normal(4).astype(np.float32).astype(float)
        b = rng.standard_normal(4).astype(np.float32).astype(float)
        c = float(np.float32(rng.standard_normal() * 2.0 ** int(rng.integers(-30, 30))))
        got = float(wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=m)[0, 0])
        assert _same(wb.explain(a, b, c, m).value, got)
