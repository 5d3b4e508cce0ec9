"""Scale factors applied at promotion (``gemm(..., accumulation="promote", scale_a=...,
scale_b=...)`` on a unit that takes none): DeepSeek-V3's fine-grained quantisation
(DeepSeek-AI 2024, Section 3.3.2) in one call.  Oracle: the recipe written out with numpy
float32 arithmetic over one ``gemm`` per K-chunk (each a chain on the unit from zero)."""
from __future__ import annotations

import numpy as np
import pytest

import workbench


def _written_out(a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray, unit, every: int) -> np.ndarray:
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for c, k0 in enumerate(range(0, a.shape[1], every)):
        part = workbench.gemm(a[:, k0:k0 + every], b[k0:k0 + every], model=unit).astype(np.float32)
        scale = sa[:, c:c + 1].astype(np.float32) * sb[c:c + 1, :].astype(np.float32)
        acc = acc + part * scale
    return acc


@pytest.mark.parametrize("K", [1, 128, 200, 385])
@pytest.mark.parametrize("preset", [("H100", "fp8_e4m3"), ("A100", "fp16")])
def test_each_promoted_part_is_scaled_then_added_in_fp32(K, preset):
    unit = workbench.preset(*preset)
    rng = np.random.default_rng(K)
    M, N, every = 5, 7, 128
    a = workbench.round(rng.standard_normal((M, K)), unit.in_format)
    b = workbench.round(rng.standard_normal((K, N)), unit.in_format)
    nb = -(-K // every)
    # fp32 factors that are not powers of two: the product of the two is rounded once
    sa = workbench.round(rng.uniform(0.1, 3.0, (M, nb)), "fp32")
    sb = workbench.round(rng.uniform(0.1, 3.0, (nb, N)), "fp32")
    got = workbench.gemm(a, b, model=unit, accumulation="promote", promote_every=every, scale_a=sa, scale_b=sb)
    want = _written_out(a, b, sa, sb, unit, every)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    ones = workbench.gemm(a, b, model=unit, accumulation="promote", promote_every=every, scale_a=np.ones((M, nb)),
                          scale_b=np.ones((nb, N)))
    assert np.array_equal(ones, workbench.gemm(a, b, model=unit, accumulation="promote", promote_every=every))


@pytest.mark.parametrize("kw, message", [
    ({"scale_a": np.ones((2, 2))}, "need both scale_a and scale_b"),
    ({"scale_a": np.ones((2, 1)), "scale_b": np.ones((2, 3))}, r"scale_a must have shape \(2, 2\)"),
    ({"scale_a": np.full((2, 2), np.inf), "scale_b": np.ones((2, 3))}, r"scale_a\[0, 0\] is not finite"),
    ({"scale_a": np.full((2, 2), 0.1), "scale_b": np.ones((2, 3))}, "not representable"),
])
def test_promotion_scales_are_checked(kw, message):
    unit = workbench.preset("H100", "fp8_e4m3")
    with pytest.raises(ValueError, match=message):
        workbench.gemm(np.ones((2, 200)), np.ones((200, 3)), model=unit, accumulation="promote", promote_every=128,
                       **kw)
    with pytest.raises(ValueError, match="applied at promotion only with accumulation='promote'"):
        workbench.gemm(np.ones((2, 200)), np.ones((200, 3)), model=unit, scale_a=np.ones((2, 2)),
                       scale_b=np.ones((2, 3)))
