"""``accumulation="outside"`` and ``"promote"`` on every kind of unit (issue 39 item 1).

The T-FDPA and ST-FDPA kernels keep the fp32 accumulator of these modes in their
own registers; every other operation (the AMD kinds, the FMA chain, GST-FDPA) gets
them from :func:`workbench.matmul.schedule_run.unit_accumulation`: K cut into parts of one block
(outside) or of ``promote_every`` elements (promote), each a chain from c = 0, the
parts' results added in order to an fp32 accumulator starting at C with
round-to-nearest-even.

Expected values come from two independent sources:

* the Fraction reference of every operation (``tests/reference_mma.py`` through
  :func:`test_engine_reference.reference_dot`) for each part, accumulated with
  numpy's own float32 conversion (IEEE round-to-nearest-even, signed zeros kept);
* for T-FDPA and ST-FDPA, the kernels' own outside/promote modes, which the composed
  schedule must reproduce bit for bit when forced on them.
"""
from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.units import schedules
from workbench import units

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_engine_reference import bits, draw, reference_dot  # noqa: E402

#: One default preset of each kind whose kernels have no outside/promote mode of their own,
#: with the output formats that matter (fp32; fp16 rounds the fp32 total at the end).
COMPOSED = [
    ("MI100", "fp16", "fp32"),        # e-fdpa
    ("MI250X", "fp16", "fp32"),       # ftz-addmul
    ("MI300X", "fp16", "fp32"),       # tr-fdpa
    ("MI300X", "fp8_e4m3", "fp32"),   # gtr-fdpa
    ("A100", "fp64", "fp64"),         # fma chain (fp64 results converted to the fp32 accumulator)
    ("blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4", None, None),   # gst-fdpa (scale blocks of 16)
]


def _unit(device, fin, fout):
    return units.resolve(device if fin is None else f"{device}:{fin}:{fout}")


def _fp32_total(total: float, part: float) -> float:
    """total + part rounded to fp32 (RNE) by numpy's IEEE conversion: both are fp32
    values, so their binary64 sum is exact or rounds innocuously (53 >= 2 * 24 + 2)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.float32(total + part))


def _reference(m, A, B, C, size, sa=None, sb=None):
    """Each output: parts of ``size`` elements, each the reference chain from +0, added
    in order to an fp32 total starting at C (rounded to fp32 where the output is wider); the
    total rounded to the output format."""
    M, K = A.shape
    N = B.shape[1]
    D = np.empty((M, N))
    kb = m.k_block
    for i in range(M):
        for j in range(N):
            total = float(np.float32(C[i, j]))      # the fp32 accumulator holds C
            for s in range(0, K, size):
                e = min(s + size, K)
                if sa is None:
                    part = reference_dot(m, A[i, s:e], B[s:e, j], 0.0)
                else:
                    part = reference_dot(m, A[i, s:e], B[s:e, j], 0.0, sa[i, s // kb:-(-e // kb)],
                                         sb[s // kb:-(-e // kb), j])
                total = _fp32_total(total, float(np.float32(part)))
            D[i, j] = total
    if m.out_format != "fp32":
        D = np.array([[float(np.asarray(x, dtype=np.float64).astype(m.out_fmt.numpy_dtype)) for x in row]
                      for row in D])
    return D


def _operands(m, rng, M, K, N):
    A = draw(rng, m.in_format, M * K, specials=False, top=12).reshape(M, K)
    B = draw(rng, m.in_format, K * N, specials=False, top=12).reshape(K, N)
    C = draw(rng, "fp32" if m.out_format == "fp32" else m.out_format, M * N, specials=False, top=20).reshape(M, N)
    if not m.operation.scaled:
        return A, B, C, {}
    nb = -(-K // m.k_block)
    sa = 2.0 ** rng.integers(-3, 4, (M, nb))
    sb = 2.0 ** rng.integers(-3, 4, (nb, N))
    return A, B, C, {"scale_a": sa, "scale_b": sb}


def _same_bits(D, R, out):
    """Output bit patterns equal; NaN as NaN (the payload rules are tests/test_nans.py's)."""
    def pattern(x: float) -> int | str:
        return "NaN" if np.isnan(x) else bits(x, out)
    got = [pattern(float(x)) for x in np.asarray(D, dtype=np.float64).ravel()]
    want = [pattern(float(x)) for x in R.ravel()]
    assert got == want


@pytest.mark.parametrize("device,fin,fout", COMPOSED)
@pytest.mark.parametrize("mode", ["outside", "promote"])
def test_composed_accumulation_matches_the_reference(device, fin, fout, mode):
    m = _unit(device, fin, fout)
    assert mode not in m.operation.accumulations    # this test is about the composed path
    L = m.operation.block_size(m)
    size = L if mode == "outside" else 2 * L
    rng = np.random.default_rng(zlib.crc32(f"{device}{fin}{mode}".encode()))
    for _ in range(3):
        K = int(rng.integers(1, 4)) * size + int(rng.integers(0, L))   # a last part shorter than the others
        if m.operation.scaled:
            K -= K % m.k_block
        A, B, C, scales = _operands(m, rng, 3, K, 2)
        kw = {"promote_every": size} if mode == "promote" else {}
        D = wb.gemm(A, B, C, model=m, accumulation=mode, **kw, **scales)
        R = _reference(m, A, B, C, size, scales.get("scale_a"), scales.get("scale_b"))
        _same_bits(D, R, m.out_format)


@pytest.mark.parametrize("device,fin,fout", [("H100", "fp16", "fp32"), ("V100", "fp16", "fp16"),
                                              ("H100", "fp8_e4m3", "fp32")])
@pytest.mark.parametrize("mode", ["outside", "promote"])
def test_the_composed_schedule_reproduces_the_t_fdpa_kernels_own_mode(device, fin, fout, mode):
    """The T-FDPA kernels implement outside/promote in registers (exact_add into an fp32
    total): the chains-and-fp32-combine schedule the other kinds get must give the same
    bits when forced on them."""
    m = wb.preset(device, fin, fout)
    L = m.L
    size = L if mode == "outside" else 4 * L
    composed = schedules.Schedule(name="composed", rules=(schedules.KRule(0, None, schedules.Split(part_size=size)),),
                                  c_position="combine", combine="in-order", combine_format="fp32",
                                  combine_rounding="rne")
    rng = np.random.default_rng(7)
    for K in (size, 3 * size + 1, 5 * size - 1):
        A, B, C, _ = _operands(m, rng, 4, K, 3)
        kw = {"promote_every": size} if mode == "promote" else {}
        want = wb.gemm(A, B, C, model=m, accumulation=mode, **kw)
        got = wb.gemm(A, B, C, model=m, schedule=composed)
        np.testing.assert_array_equal(got.view(np.uint32 if got.dtype == np.float32 else np.uint16),
                                      want.view(np.uint32 if want.dtype == np.float32 else np.uint16))


def test_promote_every_must_be_a_multiple_of_the_block():
    m = wb.preset("MI300X", "fp16", "fp32")
    with pytest.raises(ValueError, match=r"promote_every=6: expected a positive multiple of the block size L=\d+"):
        wb.gemm(np.ones((2, 32)), np.ones((32, 2)), model=m, accumulation="promote", promote_every=6)


def test_a_split_schedule_with_outside_parts_is_refused_on_kinds_that_compose_it():
    m = wb.preset("MI300X", "fp16", "fp32")
    sched = schedules.Schedule(name="split-outside", inner="outside",
                               rules=(schedules.KRule(0, None, schedules.Split(parts=2)),))
    with pytest.raises(ValueError, match="split-outside.*tr-fdpa.*one-part"):
        wb.gemm(np.ones((2, 32)), np.ones((32, 2)), model=m, schedule=sched)


def test_scaled_parts_must_hold_whole_scale_blocks():
    m = _unit(*COMPOSED[-1])      # NVFP4: k_block 16
    sched = schedules.Schedule(name="odd-parts", rules=(schedules.KRule(0, None, schedules.Split(part_size=24)),))
    K = 64
    with pytest.raises(ValueError, match="k_block=16.*elements 0..23"):
        wb.gemm(np.ones((2, K)), np.ones((K, 2)), model=m, schedule=sched, scale_a=np.ones((2, 4)),
                scale_b=np.ones((4, 2)))
