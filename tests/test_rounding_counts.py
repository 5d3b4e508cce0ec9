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


_ML = {"bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


@pytest.mark.parametrize("fmt", ["fp16", *sorted(_ML)])
@pytest.mark.parametrize("block", [(1, 32), (128, 128), (7, 1), None])
def test_round_counted_is_ml_dtypes_conversion_of_the_scaled_values(fmt: str, block: tuple[int, int] | None) -> None:
    """Scaled, rounded (RNE) and counted in one call: the values of ml_dtypes' conversion of
    ldexp(x, -e) (an independent rounding) wherever that value is a float32 (ml_dtypes
    converts a float64 through float32, which rounds twice otherwise: 160.500005 x 2^36
    becomes 160.5 then 160 in bfloat16) and :func:`workbench.round`'s elsewhere, the counts
    of the mask definitions, over several chunks of the parallel passes."""
    import ml_dtypes

    rng = np.random.default_rng(11)
    M, K = 150, 300
    with np.errstate(over="ignore"):
        x = _values(rng, fmt, M * K).reshape(M, K).astype(np.float32).astype(np.float64)
    f = wb.format(fmt)
    if not f.has_inf:
        x = np.where(np.isfinite(x), x, 1.0)
    if block is None:
        e, expanded = None, np.zeros((M, K), dtype=np.int64)
    else:
        e = rng.integers(-20, 21, (-(-M // block[0]), -(-K // block[1])))
        expanded = np.repeat(np.repeat(e, block[0], axis=0), block[1], axis=1)[:M, :K]
    scaled = np.ldexp(x, -expanded)
    with np.errstate(over="ignore"):
        exact32 = (scaled.astype(np.float32).astype(np.float64) == scaled) | np.isnan(scaled)
        dtype = np.float16 if fmt == "fp16" else getattr(ml_dtypes, _ML[fmt])    # numpy's own half: IEEE RNE
        want = np.where(exact32, scaled.astype(dtype).astype(np.float64), wb.round(scaled, fmt))
    assert exact32.mean() > 0.9
    got_scaled, q, counts = formats.round_counted(x, fmt, exponents=e, block=block or (1, 1))
    assert np.array_equal(got_scaled, scaled, equal_nan=True)
    assert np.array_equal(q, want, equal_nan=True)
    number = ~np.isnan(want)                                        # zeros keep their signs; NaN's sign is not data
    assert np.array_equal(np.signbit(q[number]), np.signbit(want[number]))
    assert counts == _by_masks(scaled, want, fmt) == formats.rounding_counts(scaled, want, fmt)


def test_round_counted_refuses_what_it_cannot_scale() -> None:
    with pytest.raises(ValueError, match="expected integers of magnitude at most 1022"):
        formats.round_counted(np.ones((4, 4)), "fp16", exponents=np.full((1, 1), 2000), block=(4, 4))
    with pytest.raises(ValueError, match="at least \\(2, 1\\)"):
        formats.round_counted(np.ones((4, 4)), "fp16", exponents=np.zeros((1, 1), dtype=int), block=(2, 4))
    with pytest.raises(ValueError, match="expected a 2-D array"):
        formats.round_counted(np.ones(4), "fp16")
    for mode in ("nearest", "sr"):
        with pytest.raises(ValueError, match="deterministic rounding mode"):
            formats.round_counted(np.ones((2, 2)), "fp16", mode)
