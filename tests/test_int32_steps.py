"""The lane kernels' 32-bit steps (``workbench.engine.kernels.mul32``, ``shl32``,
``ashr32``) against numpy's int32 arithmetic (wrapping multiply, left shift, arithmetic
right shift), over the whole int32 range and every legal shift count."""
from __future__ import annotations

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine.kernels import ashr32, mul32, shl32

I32 = st.integers(-(2**31), 2**31 - 1)


@numba.njit
def _steps(a, b, s):
    return mul32(a, b), shl32(a, s), ashr32(a, s)


@settings(max_examples=300, deadline=None)
@given(I32, I32, st.integers(0, 31))
def test_int32_steps_match_numpy(a, b, s):
    m, left, right = _steps(np.int32(a), np.int32(b), np.int32(s))
    with np.errstate(over="ignore"):
        assert m == np.int32(a) * np.int32(b)
    assert left == np.left_shift(np.int32(a), np.int32(s))
    assert right == np.right_shift(np.int32(a), np.int32(s))


def test_int32_steps_take_int64_operands_by_their_low_32_bits():
    """numba widens int32 arithmetic to int64: the steps truncate such operands."""
    m, left, right = _steps(np.int64(2**32 + 3), np.int64(-5), np.int64(1))
    assert (m, left, right) == (-15, 6, 1)
