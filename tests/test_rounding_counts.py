"""``formats.rounding_counts``: the one-pass counts of what a rounding did, against the same
definitions written out with numpy masks (the counting :mod:`workbench.torch` did before)."""
from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.numbers import formats


def _by_masks(x: np.ndarray, q: np.ndarray, fmt: str) -> tuple[int, ...]:
    f = wb.format(fmt)
    finite = np.isfinite(x)
    return (int(np.count_nonzero(q != x) - np.count_nonzero(np.isnan(x))),
            int(np.count_nonzero((q == 0) & (x != 0) & ~np.isnan(x))),
            int(np.count_nonzero((q != 0) & (np.abs(q) < f.min_normal))),
            int(np.count_nonzero(finite & ~np.isfinite(q))),
            int(np.count_nonzero(finite & (np.abs(x) > f.max))))


def _values(rng: np.random.Generator, fmt: str, n: int) -> np.ndarray:
    f = wb.format(fmt)
    x = rng.standard_normal(n) * np.exp2(rng.integers(f.emin - f.p - 3, f.emax + 3, n))
    x[rng.random(n) < 0.05] = np.nan
    x[rng.random(n) < 0.05] = np.inf
    x[rng.random(n) < 0.05] = -np.inf
    x[rng.random(n) < 0.05] = 0.0
    x[rng.random(n) < 0.05] = wb.round(x[:1] * 0 + f.max, fmt)[0]         # exactly the largest
    return x


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "fp32"])
@pytest.mark.parametrize("mode,saturate", [("rne", False), ("rz", False), ("rne", True)])
def test_counts_equal_the_mask_definitions(fmt: str, mode: str, saturate: bool) -> None:
    rng = np.random.default_rng(7)
    f = wb.format(fmt)
    x = _values(rng, fmt, 4000)
    if f.special == "none" or not f.has_inf:
        x = np.where(np.isfinite(x), x, 1.0)        # formats without Inf take finite inputs only
        saturate = True
    q = wb.round(x, fmt, mode, saturate=saturate)
    expected = _by_masks(x, q, fmt)
    assert formats.rounding_counts(x, q, fmt) == expected
    with np.errstate(over="ignore"):            # fp32 inputs beyond float32's range become Inf
        x32, q32 = x.astype(np.float32), q.astype(np.float32)
    assert formats.rounding_counts(x32, q32, fmt) == _by_masks(x32, q32, fmt)
    assert formats.rounding_counts(x.reshape(40, 100), q.reshape(40, 100).T.copy().T, fmt) == expected
    assert sum(expected) > 0


def test_counts_refuse_arrays_of_different_sizes() -> None:
    with pytest.raises(ValueError, match="x has 3 values and q 2"):
        formats.rounding_counts(np.zeros(3), np.zeros(2), "fp16")
