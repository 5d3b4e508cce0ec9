"""The FMA chain's lane kernels against its one-output kernel, and narrow-format FMA
chains against an independent chain written here.

* ``fma_gemm_lanes`` (outputs side by side in vector lanes, through ``workbench.gemm``)
  and ``fma_rows`` (``engine.core.dots``) must give the bits of ``fma_gemm``, the
  one-output-at-a-time kernel, for every FMA preset, c early and late, over shapes
  whose M and N are not multiples of the lane width and over values that are normal,
  wide-ranged, subnormal, or Inf/NaN bit patterns (NaN payloads included).
* A chain in fp16 or bf16 (a custom model) rounds every step to the format: the
  expected values come from exact rational arithmetic (``fractions``) rounded to
  nearest-even here, for ``gemm`` and ``dots`` alike.
"""
from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.engine import core
from workbench.engine.kernels import add_late
from workbench.engine.operations.fma import kernels as K
from workbench.engine.ops import MODE_CODES

#: Every FMA-chain preset (Xie et al. Tables 3, 6-7): NVIDIA DMMA fp64, AMD MFMA fp32 and fp64.
FMA_PRESETS = [(arch, "fp64") for arch in ("ampere", "hopper", "blackwell", "cdna2", "cdna3")] + \
              [(arch, "fp32") for arch in ("cdna1", "cdna2", "cdna3")]

_BITS = {"fp32": (np.uint32, np.float32, 8, 23), "fp64": (np.uint64, np.float64, 11, 52)}


def _values(fmt: str, kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values of ``fmt`` of one kind: normal, wide range, subnormal, or raw bit patterns
    (every class: zeros, subnormals, Inf, NaN with payloads)."""
    ut, ft, ebits, mbits = _BITS[fmt]
    n = int(np.prod(shape))
    if kind == "normal":
        x = rng.standard_normal(n).astype(ft)
    elif kind == "wide":
        x = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(ft)
    elif kind == "subnormal":
        frac = rng.integers(1, 1 << min(mbits, 62), n, dtype=np.uint64).astype(ut)
        x = (frac | (rng.integers(0, 2, n).astype(ut) << ut(ebits + mbits))).view(ft)
        x = np.where(rng.random(n) < 0.5, x, rng.standard_normal(n).astype(ft) * ft(2.0 ** -(1 << (ebits - 2))))
    else:
        top = 1 << (ebits + mbits + 1)
        x = rng.integers(0, min(top, 1 << 63), n, dtype=np.uint64).astype(ut).view(ft)
        special = rng.random(n) < 0.1
        inf_nan = np.array([np.inf, -np.inf, np.nan], dtype=ft)
        x = np.where(special, inf_nan[rng.integers(0, 3, n)], x)
    with np.errstate(invalid="ignore"):     # signalling NaN patterns are quieted by the cast
        return x.astype(np.float64).reshape(shape)


def _one_output(m: wb.Model, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D of the one-output kernel ``fma_gemm`` (c late: chain from 0, then add_late)."""
    how, p, emin, emax = K.fma_code(m.out_fmt)
    out = m.out_fmt
    d = C.copy() if m.c_position == "early" else np.zeros_like(C)
    K.fma_gemm(A, np.ascontiguousarray(B.T).T, d, how, p, emin, emax)
    if m.c_position == "late":
        add_late(d, C, out.p, out.emin, out.emax, MODE_CODES[m.late_rounding], False)
    return d


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return x.shape == y.shape and bool((x.view(np.uint64) == y.view(np.uint64)).all())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(FMA_PRESETS), M=st.integers(1, 19), N=st.integers(1, 21), Kdim=st.integers(0, 40),
       kind=st.sampled_from(["normal", "wide", "subnormal", "bits"]), late=st.booleans(),
       seed=st.integers(0, 2 ** 32 - 1))
def test_lanes_equal_one_output_kernel(preset, M, N, Kdim, kind, late, seed):
    arch, f = preset
    m = wb.preset(arch, f, f)
    if late:
        m = wb.custom_model(f, f, kind="fma", L=1, c_position="late", late_rounding="rz")
    rng = np.random.default_rng(seed)
    A = _values(f, kind, (M, Kdim), rng)
    B = _values(f, kind, (Kdim, N), rng)
    C = _values(f, kind, (M, N), rng)
    want = _one_output(m, A, B, C)
    got = wb.gemm(A, B, C, model=m)
    assert _same_bits(got, want.astype(got.dtype))
    # dots: row r of a with row r of b (the diagonal of a square product)
    n = min(M, N)
    got_rows = core.dots(m, A[:n], np.ascontiguousarray(B.T[:n]), np.diagonal(C)[:n])
    assert _same_bits(got_rows, np.diagonal(want)[:n])


def test_lanes_cover_long_chains_and_many_rows():
    """More rows than one task of fma_rows (64) and a chain longer than its K chunk."""
    rng = np.random.default_rng(5)
    for arch, f in (("ampere", "fp64"), ("cdna3", "fp32")):
        m = wb.preset(arch, f, f)
        a = _values(f, "wide", (150, 203), rng)
        b = _values(f, "normal", (150, 203), rng)
        c = _values(f, "normal", (150,), rng)
        a[7, 100] = np.nan
        b[140, 3] = np.inf
        want = np.array([_one_output(m, a[r:r + 1], b[r:r + 1].T, c[r:r + 1].reshape(1, 1))[0, 0]
                         for r in range(150)])
        assert _same_bits(core.dots(m, a, b, c), want)
        B = _values(f, "wide", (203, 70), rng)
        C = _values(f, "normal", (150, 70), rng)
        assert _same_bits(wb.gemm(a, B, C, model=m).astype(np.float64), _one_output(m, a, B, C))


# ---------------------------------------------------------------- narrow formats
_NARROW = {"fp16": (11, -14, 15), "bf16": (8, -126, 127)}


def _rne(x: Fraction, p: int, emin: int, emax: int) -> float:
    """x rounded to nearest-even in the format of precision p and exponents emin..emax
    (Inf beyond the overflow threshold), from exact rationals."""
    if x == 0:
        return 0.0
    neg = x < 0
    a = -x if neg else x
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    q, r = divmod(a, ulp)
    if r * 2 > ulp or (r * 2 == ulp and q % 2 == 1):
        q += 1
    v = q * ulp
    v_f = float(v) if v < Fraction(2) ** (emax + 1) else float("inf")
    return -v_f if neg else v_f


def _chain(a: np.ndarray, b: np.ndarray, c: float, fmt: str) -> float:
    """An independent FMA chain in a narrow format: each step's exact a*b + d rounded once."""
    p, emin, emax = _NARROW[fmt]
    d = c
    for x, y in zip(a, b):
        if np.isinf(d):        # finite products: an overflowed chain stays infinite
            continue
        d = _rne(Fraction(float(x)) * Fraction(float(y)) + Fraction(d), p, emin, emax)
    return d


@settings(max_examples=30, deadline=None)
@given(fmt=st.sampled_from(sorted(_NARROW)), M=st.integers(1, 5), N=st.integers(1, 5), Kdim=st.integers(1, 12),
       seed=st.integers(0, 2 ** 32 - 1), spread=st.integers(0, 12))
def test_narrow_fma_chain_rounds_every_step(fmt, M, N, Kdim, seed, spread):
    """fp16/bf16 chains: gemm and dots round each step to the format (not once at the end)."""
    rng = np.random.default_rng(seed)
    m = wb.custom_model(fmt, fmt, kind="fma", L=1)

    def draw(shape: tuple[int, ...]) -> np.ndarray:
        x = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread + 1, shape)
        return wb.round(x, fmt, "rne").astype(np.float64)

    A, B, C = draw((M, Kdim)), draw((Kdim, N)), draw((M, N))
    want = np.array([[_chain(A[i], B[:, j], C[i, j], fmt) for j in range(N)] for i in range(M)])
    got = wb.gemm(A, B, C, model=m).astype(np.float64)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    n = min(M, N)
    rows = core.dots(m, A[:n], np.ascontiguousarray(B.T[:n]), np.diagonal(C)[:n])
    assert np.array_equal(rows, np.diagonal(want)[:n], equal_nan=True)


def test_fp16_chain_is_not_rounded_once_at_the_end():
    """1 + 2^-11 + 2^-11 in fp16: each step ties to even (1), while a chain in binary64
    rounded at the end would give 1 + 2^-10."""
    m = wb.custom_model("fp16", "fp16", kind="fma", L=1)
    a = np.array([[2.0 ** -11, 2.0 ** -11]])
    b = np.array([[1.0, 1.0]])
    assert float(wb.gemm(a, b.T, np.ones((1, 1)), model=m)[0, 0]) == 1.0
    assert core.dots(m, a, b, np.ones(1))[0] == 1.0


def test_fma_chain_needs_exact_products():
    """A format too wide for exact binary64 products has no FMA chain but fp32/fp64's."""
    with pytest.raises(ValueError, match="2p <= 53"):
        K.fma_code(SimpleNamespace(name="wide", p=30, emin=-126, emax=127))
