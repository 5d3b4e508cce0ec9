"""The NaN helpers of :mod:`workbench.engine.nans` that replace hardware conversions
with bit operations (so that the CUDA kernels, which run the same functions, give the
CPU's payloads)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine.nans import narrow_nan32

EXPONENT = 0x7FF0_0000_0000_0000


@settings(deadline=None)
@given(st.booleans(), st.integers(1, (1 << 52) - 1))
def test_narrow_nan32_is_the_cpus_conversion_to_binary32_and_back(negative, fraction):
    """Every NaN, quiet or signaling, with any payload.  Oracle: numpy's float64 ->
    float32 -> float64 cast, the CPU's own conversion instructions (x86-64 cvtsd2ss /
    cvtss2sd: sign and the leading 23 fraction bits kept, a signaling NaN quieted)."""
    bits = np.array([EXPONENT | fraction | (1 << 63 if negative else 0)], dtype=np.uint64)
    x = bits.view(np.float64)
    with np.errstate(invalid="ignore"):
        want = x.astype(np.float32).astype(np.float64).view(np.uint64)[0]
    got = np.array([narrow_nan32(float(x[0]))]).view(np.uint64)[0]
    assert got == want, (hex(int(bits[0])), hex(int(got)), hex(int(want)))
