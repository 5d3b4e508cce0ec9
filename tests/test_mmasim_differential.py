"""Differential test against ``mmasim`` 2.1.1 (MMA-Sim, Xie et al. 2025), bit for bit.

Every preset that has an ``mmasim`` counterpart (``tests/mmasim_oracle.py``: 72
preset/format combinations, NVIDIA and AMD, fp16/fp32/fp64 outputs), five input kinds
(normal, wide exponent range, DNN-like with outliers, random bit patterns with
NaN/Inf/subnormals, exact cancellation) and K that is not a multiple of the block.
The default run checks one small GEMM per (preset, kind); ``-m slow`` adds larger
shapes, more seeds, and every pair of 8-bit operands of the fp8 units.

Needs the ``oracle`` extra (``pip install -e '.[oracle]'``: mmasim and CPU torch).

Shapes: M * N * K is a multiple of 8 for every call, so torch's element-wise
kernels inside mmasim run their vectorised loops only (their scalar tails choose
NaN payloads differently; see :mod:`workbench.engine.nans`).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="the mmasim oracle needs torch (pip install -e '.[oracle]')")
pytest.importorskip("mmasim", reason="mmasim is not installed (pip install -e '.[oracle]')")

import mmasim_oracle as mo  # noqa: E402

PRESETS = mo.paired_presets()


def _block(p) -> int:
    return p.P if p.kind == "ftz-addmul" else p.L


def _K(p, blocks: int) -> int:
    """A K that is not a multiple of the block (FTZ-AddMul is defined on whole
    pairs/quads only: MMA-Sim indexes product[i + 1], so K stays a multiple of P)."""
    L = _block(p)
    if p.kind == "ftz-addmul" or L == 1:
        return blocks * L
    return blocks * L + max(1, L // 2) + (1 if L > 2 else 0)


def _check(p, kind: str, M: int, N: int, K: int, seed: int) -> None:
    rng = np.random.default_rng([seed, len(p.name), K, mo.INPUT_KINDS.index(kind)])
    A, B, C = mo.operands(kind, p, M, K, N, rng)
    got, want = mo.compare(p, A, B, C)
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{p.name} {kind} {M}x{K}x{N}: {len(bad)} of {got.size} outputs differ from mmasim; first at {tuple(bad[0])}: "
        f"workbench {got[tuple(bad[0])]:#x}, mmasim {want[tuple(bad[0])]:#x}"
    )


def test_the_pairing_covers_at_least_43_combinations():
    assert len(PRESETS) >= 43
    kinds = {p.kind for p in PRESETS}
    assert {"t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa"} <= kinds
    assert {p.out_format for p in PRESETS} >= {"fp16", "fp32", "fp64"}


@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", PRESETS, ids=[p.name for p in PRESETS])
def test_preset_matches_mmasim(p, kind):
    _check(p, kind, 8, 8, _K(p, 2), seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", PRESETS, ids=[p.name for p in PRESETS])
def test_preset_matches_mmasim_larger(p, kind):
    for seed in range(3):
        _check(p, kind, 16, 24, _K(p, 5), seed=seed + 1)


FP8 = [p for p in PRESETS if p.in_fmt.width == 8]


@pytest.mark.slow
@pytest.mark.parametrize("p", FP8, ids=[p.name for p in FP8])
def test_every_pair_of_8bit_operands(p):
    """All 256 x 256 (a, b) pairs as one product each: row r of A holds pattern r in
    column 0, column s of B pattern s in row 0, the rest of the block zero, C drawn
    as random bit patterns of the output format."""
    L = p.L
    A = np.zeros((256, L), dtype=np.uint8)
    B = np.zeros((L, 256), dtype=np.uint8)
    A[:, 0] = np.arange(256)
    B[0, :] = np.arange(256)
    rng = np.random.default_rng(8)
    for cbits in (mo.draw("bits", p.out_format, (256, 256), rng), mo.draw("normal", p.out_format, (256, 256), rng)):
        got, want = mo.compare(p, A, B, cbits)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{p.name}: {len(bad)} of 65536 operand pairs differ; first a={bad[0][0]:#04x} "
                               f"b={bad[0][1]:#04x}: workbench {got[tuple(bad[0])]:#x}, mmasim {want[tuple(bad[0])]:#x}")
