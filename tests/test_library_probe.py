"""Library probes (issue 40, item 2): :mod:`workbench.probes.library`.

Oracles: a sum whose tree is known (a left-to-right loop) for FPRev's counts, and the real
OpenBLAS on this machine (numpy float64) for the K blocking and the candidate schedule.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import workbench as wb
from workbench.numbers.formats import round as _round
from workbench.units import schedules as S
from workbench.probes.library import (LIBRARIES, ONEDNN_AVX512_BF16, OPENBLAS_CORES, TORCH_BF16_ONEDNN,
                                      TORCH_FP32, LibraryEnvironment, LibraryReport, fprev_counts,
                                      probe_library, torch_environment)

_BLAS = [i for i in threadpool_info() if i.get("user_api") == "blas"]
haswell_openblas = pytest.mark.skipif(
    not _BLAS or any(i.get("internal_api") != "openblas" or i.get("architecture") not in OPENBLAS_CORES
                     for i in _BLAS), reason=f"numpy's BLAS here is not OpenBLAS' Haswell kernels (cores "
                                             f"{OPENBLAS_CORES}), which the schedules describe: {_BLAS}")


def _left_to_right(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    out = np.zeros((A.shape[0], B.shape[1]))
    for k in range(A.shape[1]):
        out = out + np.outer(A[:, k], B[k])
    return out


def test_fprev_counts_of_a_known_chain():
    K = 40
    for i in (0, 7, 39):
        c = fprev_counts(_left_to_right, 3, 8, K, i, 53, "float64")
        j = np.arange(K)
        want = K - (np.maximum(i, j) + 1)
        want[i] = K - 1
        assert (c == want).all()


def test_openblas_blocking_rule():
    sizes = [len(p) for p in S.Split(block=256, block_unroll=4).indices(600)]
    assert sizes == [256, 172, 172]
    assert [len(p) for p in S.Split(block=256, block_unroll=4).indices(1000)] == [256, 256, 244, 244]
    assert [len(p) for p in S.Split(block=320, block_unroll=4).indices(1000)] == [320, 320, 180, 180]
    assert [len(p) for p in S.Split(block=320, block_unroll=8).indices(1000)] == [320, 320, 184, 176]
    with pytest.raises(ValueError, match="alone"):
        S.Split(2, block=256)


@haswell_openblas
def test_the_openblas_dgemm_blocks_are_fprevs():
    """FPRev on the real numpy float64 matmul (1 thread, 8 x 8 x 600): position 0 is chained
    with every element of the first block (256) and joins the other blocks (172, 172)
    where the schedule's parts end."""
    with threadpool_limits(1, user_api="blas"):
        c = fprev_counts(lambda A, B: A @ B, 8, 8, 600, 0, 53, "float64")
    assert (c == c[0]).all()
    parts = LIBRARIES["numpy-fp64"].candidate.schedule.parts(600)
    upto = np.cumsum([len(p) for p in parts])
    want = np.empty(600, dtype=int)
    want[parts[0]] = 600 - (parts[0] + 1)
    for n, p in enumerate(parts[1:], 1):
        want[p] = 600 - upto[n]
    want[0] = 599
    assert (c[0] == want).all()


@haswell_openblas
def test_numpy_fp64_is_the_openblas_schedule_with_its_odd_row_edge_kernel():
    """At 1 thread every output of numpy's float64 matmul is the candidate: FMA chains in
    OpenBLAS' K blocks, and on the last row of an odd M (the 1 x 4 edge kernel) four
    accumulators over k % 4 with the block's K % 8 tail on the first - odd M and N, K
    tails of 0-7 and K past the blocking."""
    shapes = ((3, 5, 100), (5, 9, 37), (7, 4, 260), (9, 6, 45), (4, 7, 700), (2, 3, 1000))
    r = probe_library("numpy-fp64", shapes=shapes, fprev_shape=(4, 8, 64))
    assert r.repeatable
    assert [(s, k, bad) for s, k, bad, _, _ in r.results if bad] == []
    assert r.verified and "bit-identical" in r.sheet()
    _replay_candidate("numpy-fp64", r)


def _replay_candidate(name: str, report: LibraryReport) -> None:
    """The report's word not taken: its candidate (unit and schedule) run by ``wb.gemm`` on
    fresh inputs of this test's own (not the probe's draws: cancelling pairs, signed
    zeros, exponents over 2^+-30, K past the 256 block with odd tails) must give the bits
    of the call the library target probes, numpy's ``A @ B`` at one thread.  (The
    schedule adds a C inside its block combination, as DGEMM with beta = 1 does; numpy's
    ``A @ B + C`` rounds the product first, so C is left out here.)"""
    assert report.verified
    cand = LIBRARIES[name].candidate
    rng = np.random.default_rng(20261128)
    for M, N, K in ((5, 7, 3), (3, 4, 257), (7, 5, 513), (6, 9, 611)):
        A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-30, 31, (M, K)))
        B = rng.standard_normal((K, N)) * np.exp2(rng.integers(-30, 31, (K, N)))
        A[::2, 1::2] = -A[::2, 0:K - 1:2]
        B[1::2] = B[0:K - 1:2]
        A[rng.random((M, K)) < 0.05] = -0.0
        with threadpool_limits(1, user_api="blas"):
            want = A @ B
        got = wb.gemm(A, B, model=cand.unit(), schedule=cand.schedule)
        same = got.view(np.uint64) == want.view(np.uint64)
        assert same.all(), (name, (M, N, K), np.argwhere(~same)[:5].tolist())


@haswell_openblas
def test_the_openblas_sgemm_blocks_are_fprevs():
    """FPRev on the real numpy float32 matmul (1 thread, 3 x 8 x 1000: 3 rows run OpenBLAS'
    one-accumulator 2- and 1-row kernels): the blocks of SGEMM_DEFAULT_Q = 320, the last two
    halves of 360 rounded up to SGEMM_UNROLL_M = 8: 0-319, 320-639, 640-823, 824-999."""
    with threadpool_limits(1, user_api="blas"):
        c = fprev_counts(lambda A, B: A @ B, 3, 8, 1000, 0, 24, "float32")
    assert (c == c[0]).all()
    j = np.arange(1000)
    want = np.select([j < 320, j < 640, j < 824], [1000 - (j + 1), 1000 - 640, 1000 - 824], 0)
    want[0] = 999
    assert (c[0] == want).all()


@haswell_openblas
def test_numpy_fp32_is_the_openblas_schedule_with_its_two_accumulator_tiles():
    """At 1 thread every output of numpy's float32 matmul is the candidate: FMA chains in
    SGEMM's K blocks, and two accumulators (k even, k odd) on the tiles of
    sgemm_kernel_8x4_haswell_2.c that keep them - 12-row blocks over 2, 3 and 4 eight-column
    tiles (the L half of the first tile, the last tile's L or R half by parity), 4-row
    blocks after them, K tails of 0-7 and K past the blocking."""
    shapes = ((12, 16, 37), (25, 24, 45), (13, 32, 700), (29, 17, 30), (2, 3, 1000))
    r = probe_library("numpy-fp32", shapes=shapes, fprev_shape=(4, 8, 64))
    assert r.repeatable
    assert [(s, k, bad) for s, k, bad, _, _ in r.results if bad] == []
    assert r.verified and "bit-identical" in r.sheet()


def _fma_chain(a: list[float], b: list[float]) -> float:
    """An fp64 FMA chain from zero, each step rounded once (exact Fraction, then float())."""
    acc = 0.0
    for x, y in zip(a, b):
        acc = float(Fraction(x) * Fraction(y) + Fraction(acc))
    return acc


def test_lanes_follow_the_unrolled_k_loop():
    """Split.lanes_of: 37 elements, 4 lanes, K unrolled by 8: lane l holds l, l + 4, ... below
    32, and lane 0 then takes the tail 32..36 (by hand)."""
    lanes = S.Split(lanes=4, lane_block=8).lanes_of(np.arange(37))
    assert [x.tolist() for x in lanes] == [[0, 4, 8, 12, 16, 20, 24, 28, 32, 33, 34, 35, 36], [1, 5, 9, 13, 17, 21, 25, 29],
                                           [2, 6, 10, 14, 18, 22, 26, 30], [3, 7, 11, 15, 19, 23, 27, 31]]
    with pytest.raises(ValueError, match="multiple of lanes"):
        S.Split(lanes=3, lane_block=8)


def test_regions_pick_the_rows_and_columns_of_their_kernel():
    edge = S.Region(rows=(2, 1), cols=(0, 4), lanes=4, lane_block=8)
    assert edge.span(3, 5) == (slice(2, 3), slice(0, 4))
    assert edge.span(4, 11) == (slice(4, 4), slice(0, 8))     # even M: no row
    assert S.Region(rows=(0, 4), cols=(8, 1), lanes=2, lane_block=8).span(10, 13) == (slice(0, 8), slice(8, 13))
    with pytest.raises(ValueError, match="Region.rows"):
        S.Region(rows=(1, 2), cols=(0, 4), lanes=2, lane_block=8)


def test_gemm_runs_a_region_with_its_lanes():
    """An fp64 FMA unit with a region of 4 lanes on the last (odd) row: that row is
    ((l0 + l1) + (l2 + l3)) of four FMA chains, the other rows one chain (Fraction-exact
    FMAs by hand); C joins in the combination (c_position='combine')."""
    rng = np.random.default_rng(3)
    M, N, K = 3, 2, 21
    A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-30, 30, (M, K)))
    B = rng.standard_normal((K, N))
    C = rng.standard_normal((M, N))
    sched = S.Schedule(c_position="combine", combine_format="fp64",
                       regions=(S.Region(rows=(2, 1), cols=(0, 1), lanes=4, lane_block=8),))
    D = wb.gemm(A, B, C, model=wb.custom_model("fp64", "fp64", kind="fma"), schedule=sched)
    for i in range(M):
        for j in range(N):
            if i == 2:                       # cols (0, 1): every column of the last row
                idx = [list(range(lane, 16, 4)) for lane in range(4)]
                idx[0] += list(range(16, K))
                l0, l1, l2, l3 = (_fma_chain(A[i, q].tolist(), B[q, j].tolist()) for q in idx)
                want = C[i, j] + ((l0 + l1) + (l2 + l3))
            else:
                want = C[i, j] + _fma_chain(A[i].tolist(), B[:, j].tolist())
            assert D[i, j] == want, (i, j)
    back = S.Schedule.from_dict(sched.to_dict())
    assert back == sched


def test_region_narrowings_pick_their_outputs():
    """row_phase, col_panel and panels by hand: 6 of every 12 rows, one 8-column tile, only for
    some numbers of tiles; bad values are refused."""
    r = S.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 6, 12), col_panel=-1,
                 panels=(3, 2, 1))
    rows, cols = r.outputs(25, 26)                 # rows 0..23, three tiles of 8 columns: the last
    assert rows.tolist() == [6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23] and cols.tolist() == list(range(16, 24))
    assert r.outputs(25, 32)[1].size == 0 and r.outputs(25, 16)[1].size == 0 and r.outputs(11, 26)[0].size == 0
    first = S.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 0, 6), col_panel=0,
                     panels=(2, 1, 0))
    assert first.outputs(12, 17)[0].tolist() == [0, 1, 2, 3, 4, 5]
    assert first.outputs(12, 17)[1].tolist() == list(range(8))
    assert first.outputs(12, 15)[1].size == 0                  # one tile: fewer than 2
    plain = S.Region(rows=(2, 1), cols=(0, 4), lanes=4, lane_block=8)
    assert [x.tolist() for x in plain.outputs(3, 5)] == [[2], [0, 1, 2, 3]]
    for bad in ({"row_phase": (12, 6, 6)}, {"row_phase": (12, 0, 13)}, {"row_phase": (12, -1, 6)},
                {"col_panel": True}, {"col_panel": 1.0}, {"panels": (2, 2, 2)}, {"panels": (2, 0, 0)}):
        with pytest.raises(ValueError, match=f"Region.{next(iter(bad))}"):
            S.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, **bad)
    sched = S.Schedule(regions=(r, first, plain))
    assert S.Schedule.from_dict(json.loads(json.dumps(sched.to_dict()))) == sched


def test_gemm_runs_a_phased_region_with_its_lanes():
    """An fp64 FMA unit with a two-lane region on rows 6-11 of the 12-row band and the last of
    two 8-column tiles (K unrolled by 8, the tail on lane 0): those outputs are l0 + l1 of two
    FMA chains, the others one chain (Fraction-exact FMAs by hand); C joins last."""
    rng = np.random.default_rng(4)
    M, N, K = 13, 18, 19
    A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-30, 30, (M, K)))
    B = rng.standard_normal((K, N))
    C = rng.standard_normal((M, N))
    sched = S.Schedule(c_position="combine", combine_format="fp64", regions=(
        S.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 6, 12), col_panel=-1,
                 panels=(2, 2, 0)),))
    D = wb.gemm(A, B, C, model=wb.custom_model("fp64", "fp64", kind="fma"), schedule=sched)
    even = list(range(0, 16, 2)) + [16, 17, 18]
    odd = list(range(1, 16, 2))
    for i in range(M):
        for j in range(N):
            if 6 <= i < 12 and 8 <= j < 16:
                l0, l1 = (_fma_chain(A[i, q].tolist(), B[q, j].tolist()) for q in (even, odd))
                want = C[i, j] + (l0 + l1)
            else:
                want = C[i, j] + _fma_chain(A[i].tolist(), B[:, j].tolist())
            assert D[i, j] == want, (i, j)


def test_a_report_verifies_only_when_every_output_matched():
    env = LibraryEnvironment("lib", "1", "core", 1, 2)
    cand = LIBRARIES["numpy-fp64"].candidate
    ok = LibraryReport("x", env, True, True, "", "", cand, [((2, 2, 2), "random", 0, 4, [])])
    assert ok.verified and "verified: bit-identical on all 4 outputs" in ok.sheet()
    assert not LibraryReport("x", env, False, True, "", "", cand, ok.results).verified
    bad = LibraryReport("x", env, True, True, "", "", cand, [((2, 2, 2), "random", 1, 4, [0])])
    assert not bad.verified and "NOT verified: 1 of 4" in bad.sheet()
    with pytest.raises(ValueError, match="unknown library target"):
        probe_library("numpy-fp17")
    assert wb.probes.library.LIBRARIES.keys() >= {"numpy-fp64", "numpy-fp32", "torch-cpu-fp32", "torch-cpu-bf16"}


def test_mkl_halving_rule_and_shape_conditions():
    """Split.halve (MKL SGEMM's K blocking) and KRule.m_min/n_min by hand; bad values refused."""
    mkl = S.Split(part_size=192, halve=True)
    assert [len(p) for p in mkl.indices(191)] == [191]
    assert [len(p) for p in mkl.indices(193)] == [96, 96, 1]
    assert [len(p) for p in mkl.indices(300)] == [150, 150]
    assert [len(p) for p in mkl.indices(384)] == [192, 192]
    assert [len(p) for p in mkl.indices(700)] == [192, 192, 192, 124]
    assert [len(p) for p in S.Split(part_size=192).indices(300)] == [192, 108]
    with pytest.raises(ValueError, match="Split.halve"):
        S.Split(halve=True)
    with pytest.raises(ValueError, match="Split.lane_combine"):
        S.Split(lanes=2, lane_block=2, lane_combine="tree")
    with pytest.raises(ValueError, match="KRule.m_min"):
        S.KRule(1, None, S.Split(), m_min=0)
    sched = S.Schedule(rules=(S.KRule(1, None, mkl, m_min=4, n_min=12), S.KRule(1, None, S.Split(part_size=1), n_min=2)))
    assert sched.split(300, 4, 12) is mkl and sched.split(300, 3, 12).part_size == 1
    assert sched.split(300, 40, 11).part_size == 1
    with pytest.raises(ValueError, match=r"no rule for K=300 \(4 x 1\).*N >= 2"):
        sched.split(300, 4, 1)
    assert S.Schedule.from_dict(json.loads(json.dumps(sched.to_dict()))) == sched


def test_gemm_sums_lanes_in_order():
    """Split(lanes=4, lane_block=4, lane_combine='in-order') with an fp64 FMA unit: four FMA
    chains over k % 4, the K % 4 tail on the first, summed ((l0 + l1) + l2) + l3 (Fraction-exact
    FMAs and float64 additions by hand)."""
    rng = np.random.default_rng(5)
    M, N, K = 2, 3, 23
    A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-30, 30, (M, K)))
    B = rng.standard_normal((K, N))
    sched = S.Schedule(combine_format="fp64", rules=(S.KRule(1, None, S.Split(lanes=4, lane_block=4,
                                                                             lane_combine="in-order")),))
    D = wb.gemm(A, B, model=wb.custom_model("fp64", "fp64", kind="fma"), schedule=sched)
    idx = [list(range(lane, 20, 4)) for lane in range(4)]
    idx[0] += [20, 21, 22]
    for i in range(M):
        for j in range(N):
            l0, l1, l2, l3 = (_fma_chain(A[i, q].tolist(), B[q, j].tolist()) for q in idx)
            assert D[i, j] == ((l0 + l1) + l2) + l3, (i, j)


def _torch_marker(why: Callable[[Any], str]) -> pytest.MarkDecorator:
    """skipif with the reason ``why(torch)`` gives ('' where the test applies), or that PyTorch
    is not installed."""
    try:
        import torch
    except ImportError:
        reason = "needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'"
    else:
        reason = why(torch)
    return pytest.mark.skipif(bool(reason), reason=reason or "-")


def _not_mkl_sgemm(torch: Any) -> str:
    """Why the torch float32 schedules do not apply here ('' where they do): the SGEMM that
    runs is not the MKL dispatch they were verified on."""
    kernel = torch_environment().kernel
    if kernel not in TORCH_FP32.kernels:
        return f"torch's float32 GEMM here ({kernel}) is not the one the torch schedules were verified on " \
               f"({', '.join(TORCH_FP32.kernels)})"
    return ""


torch_mkl = _torch_marker(_not_mkl_sgemm)


@pytest.mark.needs_torch
@torch_mkl
def test_the_mkl_sgemm_blocks_are_fprevs():
    """FPRev on the real torch.matmul float32 (1 thread, 4 x 12 x 300: MKL's FMA path): position 0
    is chained with the first half (150) and joins the second half at the root."""
    call = LIBRARIES["torch-cpu-fp32"].call
    with LIBRARIES["torch-cpu-fp32"].set_threads(1):
        c = fprev_counts(call, 4, 12, 300, 0, 24, "float32")
    assert (c == c[0]).all()
    j = np.arange(300)
    want = np.where(j < 150, 300 - (j + 1), 0)
    want[0] = 299
    assert (c[0] == want).all()
    assert [len(p) for p in TORCH_FP32.schedule.parts(300, 4, 12)] == [150, 150]


@pytest.mark.needs_torch
@torch_mkl
def test_torch_fp32_is_mkls_two_paths():
    """At 1 thread torch.matmul float32 is the candidate on both of MKL's paths: FMA chains in K
    blocks of 192 (odd M, N >= 12, K past the blocking and in the halving range) and rounded
    products added in order (N < 12 or M < 4), with the small path's peel loop on the first
    (-r * N) % 4 columns of row r: N % 4 = 1, 2 and 3, K % 8 tails 0 ... 7, and N = 6, 7 where
    the peel leaves fewer than 4 columns on some rows."""
    shapes = ((5, 13, 193), (4, 12, 700), (3, 5, 100), (2, 3, 1000), (12, 4, 511), (4, 5, 24), (4, 9, 16),
              (6, 10, 17), (9, 7, 255), (8, 6, 131), (5, 11, 1500), (7, 9, 2051))
    r = probe_library("torch-cpu-fp32", shapes=shapes, fprev_shape=(4, 12, 64))
    assert r.repeatable
    assert [(s, k, bad) for s, k, bad, _, _ in r.results if bad] == []
    assert r.verified and "bit-identical" in r.sheet() and "not modelled" not in r.sheet()


@pytest.mark.needs_torch
@torch_mkl
def test_mkl_peel_loop_is_needed():
    """Without its peel regions the schedule misses outputs of torch.matmul on the small path
    (so the regions are what reproduce them, not an accident of the inputs)."""
    import dataclasses

    import torch

    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 40)).astype(np.float32)
    B = rng.standard_normal((40, 9)).astype(np.float32)
    with LIBRARIES["torch-cpu-fp32"].set_threads(1):
        want = torch.matmul(torch.from_numpy(A), torch.from_numpy(B)).numpy()
    bare = dataclasses.replace(TORCH_FP32.schedule, regions=())
    unit = TORCH_FP32.unit()
    got = np.asarray(wb.gemm(A.astype(np.float64), B.astype(np.float64), None, model=unit, schedule=bare),
                     dtype=np.float32)
    full = np.asarray(wb.gemm(A.astype(np.float64), B.astype(np.float64), None, model=unit,
                              schedule=TORCH_FP32.schedule), dtype=np.float32)
    assert np.array_equal(full.view(np.uint32), want.view(np.uint32))
    # rows 1, 2, 3 (N = 9: peels of 3, 2 and 1 columns) hold the only outputs the bare schedule can miss
    missed = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    assert len(missed) and all(j < (-i * 9) % 4 for i, j in missed)


@pytest.mark.needs_torch
@torch_mkl
def test_torch_bf16_is_atens_four_partial_sums():
    """torch.matmul bfloat16 is ATen's loop: four fp32 partial sums over k % 4 summed in order,
    rounded to bf16 - odd M and N, K % 4 tails 0-3."""
    shapes = ((3, 5, 101), (7, 4, 258), (5, 9, 1003), (2, 3, 16))
    r = probe_library("torch-cpu-bf16", shapes=shapes, fprev_shape=(4, 8, 64))
    assert r.repeatable and r.thread_independent
    assert [(s, k, bad) for s, k, bad, _, _ in r.results if bad] == []
    assert r.verified


def _not_onednn_bf16(torch: Any) -> str:
    """Why the oneDNN bf16 schedule does not apply here ('' where it does)."""
    kernel = torch_environment("bfloat16").kernel
    if kernel != ONEDNN_AVX512_BF16:
        return (f"torch's bf16 matmul here runs {kernel}, not {ONEDNN_AVX512_BF16} (oneDNN's brgemm on a CPU "
                f"with AVX512-BF16), which the schedule describes")
    return ""


onednn_bf16 = _torch_marker(_not_onednn_bf16)


@pytest.mark.needs_torch
@onednn_bf16
def test_torch_bf16_on_avx512_bf16_is_atens_loop_then_onednns_chunks():
    """On an AVX512-BF16 CPU torch.matmul bfloat16 is the candidate at 1 thread and at the
    default: ATen's four partial sums up to 16^3 multiply-adds (16 x 16 x 16 on one side,
    16 x 16 x 17 on the other), then VDPBF16PS chains over K chunks (K <= 512 one chunk,
    chunks of 512 up to 1024, then of 1024), odd M, N and K."""
    shapes = ((16, 16, 16), (16, 16, 17), (3, 5, 101), (7, 9, 509), (5, 3, 777), (9, 11, 1024), (3, 7, 1025),
              (2, 5, 3001), (33, 17, 700))
    r = probe_library("torch-cpu-bf16", shapes=shapes, fprev_shape=(4, 8, 64))
    assert r.environment.kernel == ONEDNN_AVX512_BF16
    assert r.repeatable and r.candidate is TORCH_BF16_ONEDNN
    assert [(s, k, bad) for s, k, bad, _, _ in r.results if bad] == []
    assert r.verified and r.at_default_threads is not None and r.at_default_threads[0] == 0


@pytest.mark.needs_torch
@onednn_bf16
def test_onednn_bf16_chunks_and_aten_rule_are_each_needed():
    """The schedule's parts are what reproduce torch: one VDPBF16PS chain over the whole K
    misses outputs at K = 700 and 3001 (chunks of 512 and 1024), and oneDNN's chunks without
    ATen's rule miss outputs of an 8 x 8 x 64 product.  Inputs of this test's own: a product
    of 2^24 first and of -2^24 last (in another chunk, another partial sum) swamp the
    products between them differently in each way of summing, and signed zeros."""
    import dataclasses

    import torch

    unit, sched = TORCH_BF16_ONEDNN.unit(), TORCH_BF16_ONEDNN.schedule
    chain = dataclasses.replace(sched, rules=(S.KRule(1, None, S.Split()),))
    no_aten = dataclasses.replace(sched, rules=sched.rules[1:])
    rng = np.random.default_rng(20261207)
    for (M, N, K), wrong in (((6, 5, 700), chain), ((3, 4, 3001), chain), ((8, 8, 64), no_aten)):
        A = _round(rng.standard_normal((M, K)) * np.exp2(rng.integers(-2, 3, (M, K))), "bf16")
        B = _round(rng.standard_normal((K, N)) * np.exp2(rng.integers(-2, 3, (K, N))), "bf16")
        A[:, 0], A[:, -1], B[0], B[-1] = 4096.0, -4096.0, 4096.0, 4096.0
        A[rng.random((M, K)) < 0.05] = -0.0
        with LIBRARIES["torch-cpu-bf16"].set_threads(1):
            want = (torch.from_numpy(A).bfloat16() @ torch.from_numpy(B).bfloat16()).float().numpy()
        got = np.asarray(wb.gemm(A, B, model=unit, schedule=sched), dtype=np.float32)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (M, N, K)
        bad = np.asarray(wb.gemm(A, B, model=unit, schedule=wrong), dtype=np.float32)
        assert not np.array_equal(bad.view(np.uint32), want.view(np.uint32)), (M, N, K)


def test_a_rule_can_bound_the_products_work():
    """KRule.mnk_max: the rule covers products of at most that many multiply-adds (M * N * K),
    never a product whose M or N is not given; it travels through to_dict/from_dict."""
    small = S.KRule(1, None, S.Split(lanes=4, lane_block=4), mnk_max=4096)
    assert small.covers(16, 16, 16) and not small.covers(17, 16, 16) and not small.covers(1)
    sched = S.Schedule(rules=(small, S.KRule(1, None, S.Split(part_size=512))))
    assert sched.split(16, 16, 16).lanes == 4 and sched.split(17, 16, 16).part_size == 512
    assert S.Schedule.from_dict(json.loads(json.dumps(sched.to_dict()))) == sched
    with pytest.raises(ValueError, match="mnk_max=0"):
        S.KRule(1, None, S.Split(), mnk_max=0)
    with pytest.raises(ValueError, match="unknown rule fields"):
        S.Schedule.from_dict({"rules": [{"k_min": 1, "k_max": None, "split": None, "mnk": 3}]})
    with pytest.raises(ValueError, match=r"M \* N \* K <= 4096"):
        S.Schedule(rules=(small,)).split(17, 16, 16)
