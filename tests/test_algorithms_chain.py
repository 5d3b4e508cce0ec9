"""``algorithms._common.chain`` (order "sequential") runs one GEMM per product, each result the
next one's accumulator input; that must be the unit's chain over all products at once: one
:func:`workbench.gemm` over the products concatenated along K, each zero-padded to whole blocks
of L (the definition, written here independently), bit for bit on every preset without block
scales, with and without C, for K that is not a multiple of L."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from algorithms._common import chain
from workbench.units.catalogue import records

sys.path.insert(0, str(Path(__file__).parent))
from operand_values import values  # noqa: E402 - integer operands of the integer units

PRESETS = [p for p in records() if p.kind not in ("st-fdpa", "gst-fdpa")]


def _concatenated(model, pairs, C):
    L = model.L
    K = pairs[0][0].shape[1]
    Kp = -(-K // L) * L
    A = np.concatenate([np.pad(X, ((0, 0), (0, Kp - K))) for X, _ in pairs], axis=1)
    B = np.concatenate([np.pad(Y, ((0, Kp - K), (0, 0))) for _, Y in pairs], axis=0)
    return np.asarray(wb.gemm(A, B, C, model=model), dtype=np.float64)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), products=st.integers(1, 4), with_c=st.booleans())
def test_sequential_chain_is_one_gemm_over_the_concatenated_products(preset, seed, products, with_c):
    rng = np.random.default_rng(seed)
    L = preset.P if preset.kind == "ftz-addmul" else preset.L
    K = int(rng.integers(1, 4)) * L + (0 if preset.kind == "ftz-addmul" else int(rng.integers(0, L)))
    scale = 2.0 ** rng.integers(-6, 7, size=(products, 1, 1))   # words of different magnitudes
    pairs = [(wb.round(s * rng.standard_normal((3, K)), preset.in_format),
              wb.round(rng.standard_normal((K, 5)), preset.in_format)) for s in scale] \
        if not preset.operation.integer else [(values(rng, (3, K), preset.in_format, False),
                                               values(rng, (K, 5), preset.in_format, False)) for _ in scale]
    C = (values(rng, (3, 5), preset.out_format, False) if preset.operation.integer
         else wb.round(rng.standard_normal((3, 5)), preset.out_format)) if with_c else None
    got = chain(preset, pairs, C, order="sequential")
    want = _concatenated(preset, pairs, C)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
