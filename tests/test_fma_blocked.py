"""The register-blocked FMA kernel (``fma_gemm_lanes``) against the one-output kernel
``fma_gemm``, bit for bit, over the shapes that exercise its blocking.

Shapes are drawn so that M leaves every remainder of the 4-row register block, N needs
panels of 4, 2 and 1 vectors with a partial last vector (8 binary64 or 16 binary32
lanes), K crosses the passes of FMA_KC (64) elements, and the rows are cut into 1-3 groups (tasks);
values are normal, wide-ranged, subnormal or raw bit patterns with Inf/NaN payloads.
The operands' checks are tested too: a binary32 chain refuses the first value that is
not a binary32 (by index), and ``is_representable``'s cast round trip for the formats
with a numpy dtype agrees with a definition from exact arithmetic written here.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.engine.operations.fma import kernels as K
from test_fma_lanes import _one_output, _same_bits, _values


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=st.sampled_from(["fp64", "fp32"]), M=st.integers(1, 13), N=st.integers(1, 120), Kdim=st.integers(0, 300),
       groups=st.integers(1, 3), kind=st.sampled_from(["normal", "wide", "subnormal", "bits"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_blocked_kernel_equals_one_output_kernel(f, M, N, Kdim, groups, kind, seed):
    rng = np.random.default_rng(seed)
    A, B, C = _values(f, kind, (M, Kdim), rng), _values(f, kind, (Kdim, N), rng), _values(f, kind, (M, N), rng)
    m = wb.preset("cdna2", f, f)
    want = _one_output(m, A, B, C)
    dt = np.float32 if f == "fp32" else np.float64
    with np.errstate(invalid="ignore"):     # NaN payloads: the cast keeps them
        Al, Bl = np.ascontiguousarray(A, dtype=dt), np.ascontiguousarray(B, dtype=dt)
    got = C.copy()
    K.fma_gemm_lanes(Al, Bl, got, K.fma_code(m.out_fmt)[0], min(groups, -(-M // K.FMA_MR)))
    assert _same_bits(got, want)


def test_fma_panels_cover_every_column_once():
    """Panels of 4, then 2 and 1 vectors: every vector of columns in exactly one."""
    for nvec in range(0, 20):
        n, covered = K.fma_panels(nvec * 8, 8)
        assert covered == nvec
        vecs = [v for p in range(n) for v in range(*(lambda v0, nv: (v0, v0 + nv))(*K.fma_panel(p, nvec)))]
        assert vecs == list(range(nvec))


def test_fp32_chain_names_the_first_value_not_in_binary32():
    A = np.ones((3, 40))
    B = np.ones((40, 5))
    A[2, 17] = 1 + 2.0 ** -30
    A[2, 30] = 0.1
    with pytest.raises(ValueError, match=r"A\[2, 17\] = 1.0000000009313226 is not representable in fp32"):
        wb.gemm(A, B, np.zeros((3, 5)), model=wb.preset("cdna1", "fp32", "fp32"))
    B[39, 4] = 1e300
    with pytest.raises(ValueError, match=r"B\[39, 4\] = 1e\+300 is not representable in fp32"):
        wb.gemm(np.ones((3, 40)), B, np.zeros((3, 5)), model=wb.preset("cdna1", "fp32", "fp32"))


_IEEE = {"fp16": (11, -14, 15), "fp32": (24, -126, 127), "fp64": (53, -1022, 1023)}


def _in_format(x: float, p: int, emin: int, emax: int) -> bool:
    """x is a value of the IEEE format (p, emin, emax), from exact rationals."""
    if x != x or x in (float("inf"), float("-inf")) or x == 0:
        return True
    q = Fraction(abs(x)) / Fraction(2) ** (emin - p + 1)      # in units of the smallest subnormal
    if q.denominator != 1:
        return False
    n = q.numerator
    return n.bit_length() <= p + emax - emin and n >> max(0, n.bit_length() - p) << max(0, n.bit_length() - p) == n


@settings(max_examples=30, deadline=None)
@given(f=st.sampled_from(sorted(_IEEE)), bits=st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=30),
       near=st.lists(st.floats(allow_nan=False, width=16) | st.floats(allow_nan=False, width=32), max_size=30))
def test_is_representable_of_ieee_dtypes_matches_exact_definition(f, bits, near):
    x = np.concatenate([np.array(bits, dtype=np.uint64).view(np.float64), np.array(near, dtype=np.float64)])
    p, emin, emax = _IEEE[f]
    assert wb.is_representable(x, f).tolist() == [_in_format(float(v), p, emin, emax) for v in x]
