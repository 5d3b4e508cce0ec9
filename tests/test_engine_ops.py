"""The engine's rounding pieces against exact rational arithmetic.

``ops.round_int`` (every kernel's final conversion), ``ops.add_round`` (the lane
kernel's late addition of c) and ``kernels.exact_add`` (the scalar kernels' late
addition and the fp32 accumulator of "outside"/"promote") are checked on random
operands - exponent gaps from 0 to far beyond the precision, ties, subnormal and
overflowing results, every rounding mode, with and without flushing - against
``final_round`` of tests/reference_mma.py on the exact Fraction value (Xie et al.
Table 2's rho with the tensor cores' overflow to Inf, Khattak-Mikaitis Sec. IV-B).
"""
from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.numbers import formats as F
from workbench.engine import kernels, ops

sys.path.insert(0, str(Path(__file__).parent))
from reference_mma import final_round  # noqa: E402

MODES = ["rne", "rz", "rd", "ru"]
FORMATS = ["fp32", "fp16", "bf16", "e8m13"]


def _value(neg: bool, keep: int, q: int, inf: bool) -> float:
    if inf:
        return -math.inf if neg else math.inf
    v = math.ldexp(float(keep), int(q))
    return -v if neg else v


def _want(x: Fraction, fmt: str, mode: str, flush: bool) -> float:
    if x == 0:
        return 0.0
    return final_round(x, fmt, mode, flush_subnormals=flush, overflow="inf")


def _same(got: float, want: float, flush: bool) -> bool:
    if got == 0 and want == 0 and flush:
        return True   # a flushed result is +0 in the engine; the reference keeps the sign
    return got == want and math.copysign(1, got) == math.copysign(1, want)


def _args(fmt: str, mode: str, flush: bool) -> tuple[int, ...]:
    f = F.format(fmt)
    return f.p, f.emin, f.emax, ops.MODE_CODES[mode], flush


@settings(max_examples=3000, deadline=None)
@given(S=st.integers(-(2 ** 61), 2 ** 61) | st.integers(-(2 ** 30), 2 ** 30), scale=st.integers(-220, 140),
       fmt=st.sampled_from(FORMATS), mode=st.sampled_from(MODES), flush=st.booleans())
@example(S=2047, scale=-25, fmt="fp16", mode="rne", flush=True)  # rounds up to the smallest normal: kept
def test_round_int(S: int, scale: int, fmt: str, mode: str, flush: bool) -> None:
    got = _value(*ops.round_int(np.int64(S), np.int64(scale), *_args(fmt, mode, flush)))
    want = _want(Fraction(S) * Fraction(2) ** scale, fmt, mode, flush)
    assert _same(got, want, flush), (S, scale, fmt, mode, flush, got, want)


def _addend(draw, fmt: str) -> tuple[bool, int, int]:
    """A value of ``fmt`` as (neg, magnitude, q): magnitude below 2**p (or 0)."""
    f = F.format(fmt)
    m = draw(st.integers(0, 2 ** f.p) | st.sampled_from([0, 1, 2 ** (f.p - 1), 2 ** f.p - 1, 2 ** f.p]))
    q = draw(st.integers(f.emin - f.p + 1, f.emax - f.p + 1))
    return draw(st.booleans()), m, q


@st.composite
def _pairs(draw):
    fmt = draw(st.sampled_from(FORMATS))
    a = _addend(draw, fmt)
    if draw(st.booleans()):      # near the first addend: cancellation, ties
        m = draw(st.integers(0, 2 ** F.format(fmt).p - 1))
        b = (draw(st.booleans()), m, a[2] + draw(st.integers(-30, 30)))
    else:
        b = _addend(draw, fmt)
    return fmt, a, b


@settings(max_examples=3000, deadline=None)
@given(pair=_pairs(), mode=st.sampled_from(MODES), flush=st.booleans())
@example(pair=("fp16", (False, 1024, -24), (True, 1, -25)), mode="rne", flush=True)  # found by hypothesis
@example(pair=("fp32", (True, 0, -20), (True, 0, 3)), mode="rne", flush=False)   # -0 + -0 = -0 (IEEE 754 Sec. 6.3)
@example(pair=("fp16", (False, 3, -20), (True, 3, -20)), mode="rd", flush=False)  # x - x = -0 rounding down
def test_add_round_and_exact_add(pair, mode: str, flush: bool) -> None:
    fmt, (n1, m1, q1), (n2, m2, q2) = pair
    x1 = Fraction(-m1 if n1 else m1) * Fraction(2) ** q1
    x2 = Fraction(-m2 if n2 else m2) * Fraction(2) ** q2
    want = _want(x1 + x2, fmt, mode, flush)
    if x1 + x2 == 0:    # IEEE 754-2019 Sec. 6.3: -0 + -0 = -0; any other exact zero +0, -0 rounding down
        both_negative_zeros = m1 == 0 and m2 == 0 and n1 and n2
        want = -0.0 if both_negative_zeros or (mode == "rd" and not (m1 == 0 and m2 == 0 and n1 == n2)) else 0.0
    args = _args(fmt, mode, flush)
    got = _value(*ops.add_round(n1, np.int64(m1), np.int64(q1), n2, np.int64(m2), np.int64(q2), *args))
    assert _same(got, want, flush), ("add_round", pair, mode, flush, got, want)
    # exact_add takes float64 operands; they must lie in the format (as the kernels' do)
    if all(x == 0 or abs(x) >= Fraction(F.format(fmt).min_subnormal) for x in (x1, x2)):
        a, b = float(x1), float(x2)
        a = -0.0 if n1 and m1 == 0 else a
        b = -0.0 if n2 and m2 == 0 else b
        got2 = kernels.exact_add(a, b, *args)
        assert _same(got2, want, flush), ("exact_add", pair, mode, flush, got2, want)
