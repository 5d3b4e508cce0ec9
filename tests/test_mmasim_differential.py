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

pytest.importorskip("torch", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
pytest.importorskip("mmasim", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")

import mmasim_oracle as mo  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.engine import core  # noqa: E402

PRESETS = mo.paired_presets()


def _block(p) -> int:
    return p.P if p.kind == "ftz-addmul" else p.L


def _K(p, blocks: int) -> int:
    """A K that is not a multiple of the block (FTZ-AddMul is defined on whole
    pairs/quads only: MMA-Sim indexes product[i + 1], so K stays a multiple of P)."""
    L = _block(p)
    if p.kind == "ftz-addmul" or L == 1 or p.scale_format:   # scaled: whole instructions (k32/k64)
        return blocks * L
    return blocks * L + max(1, L // 2) + (1 if L > 2 else 0)


def _check(p, kind: str, M: int, N: int, K: int, seed: int, scales: str = "random") -> None:
    key = [seed, len(p.name), K, mo.INPUT_KINDS.index(kind)]
    rng = np.random.default_rng(key + [mo.SCALE_KINDS.index(scales)] if p.scale_format else key)
    A, B, C = mo.operands(kind, p, M, K, N, rng)
    SA = SB = None
    if p.scale_format:
        nb = K // p.k_block
        SA = mo.draw_scales(scales, p.scale_format, (M, nb), rng)
        SB = mo.draw_scales(scales, p.scale_format, (nb, N), rng)
    got, want = mo.compare(p, A, B, C, SA=SA, SB=SB)
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{p.name} {kind} scales {scales} {M}x{K}x{N}: {len(bad)} of {got.size} outputs differ from mmasim; "
        f"first at {tuple(bad[0])}: "
        f"workbench {got[tuple(bad[0])]:#x}, mmasim {want[tuple(bad[0])]:#x}"
    )


def test_the_pairing_covers_at_least_43_combinations():
    assert len(PRESETS) >= 43
    kinds = {p.kind for p in PRESETS}
    assert {"t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa"} <= kinds
    assert {p.out_format for p in PRESETS} >= {"fp16", "fp32", "fp64"}


#: M x N of the default run's product per (preset, input kind); tests/evidence_sources.py
#: counts the outputs each preset was compared on from it
SHAPE = (8, 8)


@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", PRESETS, ids=[p.name for p in PRESETS])
def test_preset_matches_mmasim(p, kind):
    _check(p, kind, *SHAPE, _K(p, 2), seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", mo.INPUT_KINDS)
@pytest.mark.parametrize("p", PRESETS, ids=[p.name for p in PRESETS])
def test_preset_matches_mmasim_larger(p, kind):
    for seed in range(3):
        _check(p, kind, 16, 24, _K(p, 5), seed=seed + 1)


SCALED = [p for p in PRESETS if p.scale_format]


def test_every_block_scaled_preset_is_paired():
    """MXFP8/6/4 (ST-FDPA) and NVFP4/MXFP4 (GST-FDPA) on Blackwell and RTX Blackwell."""
    names = {(p.architecture, p.kind, p.in_format, p.scale_format) for p in SCALED}
    for arch in ("blackwell", "rtx-blackwell"):
        for fin in ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"):
            assert (arch, "st-fdpa", fin, "e8m0") in names
        assert {(arch, "gst-fdpa", "fp4_e2m1", sf) for sf in ("e8m0", "ue4m3")} <= names


@pytest.mark.parametrize("scales", mo.SCALE_KINDS)
@pytest.mark.parametrize("kind", ["normal", "wide", "bits"])
@pytest.mark.parametrize("p", SCALED, ids=[p.name for p in SCALED])
def test_block_scaled_preset_matches_mmasim(p, kind, scales):
    """Random, special (NaN/Inf operand patterns, NaN scales) and edge-of-range values
    (the whole exponent range of the operands; scales at 2^-127 and 2^127, UE4M3 zero,
    subnormal and 448) through two instructions' worth of K."""
    _check(p, kind, 8, 8, 2 * p.L, seed=0, scales=scales)


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


TR_UNITS = [p for p in PRESETS if p.kind in ("tr-fdpa", "gtr-fdpa")]
#: M x N of the binade-crossing product of each TR unit
TR_SHAPE = (2000, 16)


@pytest.mark.parametrize("p", TR_UNITS, ids=[p.name for p in TR_UNITS])
def test_tr_fdpa_sum_crossing_a_binade_matches_mmasim(p):
    """TR-/GTR-FDPA where T' + c' leaves c's binade: c just above a power of two with
    products of the opposite sign (the sum falls a binade) or just below one with
    products of the same sign (it carries), and products 2^-6 to 2^-12 of c so that
    T has bits down to 2^-32 of it.  There MMA-Sim 2.1.1 keeps F2 + 1 bits of T and
    cuts the normalised sum to F2 + 1 bits, where Xie et al. Algorithm 10 as printed
    keeps F2 bits and has no cut: the printed form parts from MMA-Sim on tens of these
    32,000 outputs for each of fp16, bf16 and tf32 (and on one output of the
    64 x 1024 x 64 product of ``benchmarks/bench_engine.py``); GTR's fp8 products are
    too short to reach that bit here.  Every path is checked: the gemm kernels and the
    row kernel of ``dots``."""
    rng = np.random.default_rng([21, len(p.name)])
    f = p.in_fmt
    (M, N), K = TR_SHAPE, 2 * p.L
    narrow = f.width == 8
    A = wb.round(rng.standard_normal((M, K)) * 2.0 ** ((-7 if narrow else -4) + rng.integers(-3, 2, (M, K))),
                 p.in_format, saturate=True)
    B = wb.round(rng.standard_normal((K, N)) * 2.0 ** (-7 if narrow else -5), p.in_format, saturate=True)
    near = np.where(rng.random((M, N)) < 0.5, 1 + rng.integers(0, 2 ** 16, (M, N)) * 2.0 ** -23,
                    2 - rng.integers(1, 2 ** 16, (M, N)) * 2.0 ** -23)
    C = near * rng.choice([-1, 1], (M, N)) * 2.0 ** rng.integers(-1, 2, (M, N))
    bits = [mo.bits_of(x, fmt) for x, fmt in ((A, p.in_format), (B, p.in_format), (C, p.out_format))]
    got, want = mo.compare(p, *bits)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{p.name}: {len(bad)} of {got.size} differ; first at {tuple(bad[0])}"
    rows, cols = np.divmod(np.arange(2000), N)
    d = core.dots(p, A[rows], B[:, cols].T, C[rows, cols])
    ut = np.uint32 if p.out_format == "fp32" else np.uint16
    dots_bits = d.astype(p.out_fmt.numpy_dtype).view(ut)
    assert (dots_bits == want[rows, cols]).all()
