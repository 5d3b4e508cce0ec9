"""Recovery of a library's schedule from the black box (issue 54, item 1).

Oracles:
- the halving reduction and the masked-tail lanes: each lane the Fraction reference's fp32
  FMA chain (``reference_mma.fma_chain``), the lanes added in float32 here in the order a
  vector's horizontal reduction takes (upper half onto lower half);
- recovery: a black box whose schedule this file writes by hand (an FMA chain over
  16-column tiles, lanes summed by halving on the remainder from K = 32 on, GEMM_Q blocks
  past a size) - the recovered schedule must give that box's bits on fresh products of
  the probed (M, N) at K it never probed, and name the hand-written splits;
- the real library of this machine (numpy float64 through whatever BLAS kernel the
  environment selects, never set by the test): the schedule recovered here, now, replayed
  against that library on fresh products.  Nothing here encodes one CPU's kernel.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_mma as ref
import workbench as wb
from workbench.units import schedules as S
from workbench.probes.library import _fma
from workbench.probes.recovery import candidate_splits, recover_schedule, tile_of
from workbench.units.unitfile import read_unit

FMA32 = _fma("fp32")


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).astype(np.float64)


def test_tile_of_is_the_greedy_cut():
    assert tile_of(27, (16, 8, 4, 2, 1)).tolist() == [16] * 16 + [8] * 8 + [2] * 2 + [1]
    assert tile_of(7).tolist() == [4, 4, 4, 4, 2, 2, 1]
    assert tile_of(64 * 2 + 3).tolist() == [64] * 128 + [2, 2, 1]


def test_lanes_fed_round_robin_and_summed_by_halving():
    """16 lanes, every element to lane k % 16 (a masked tail), summed (l_i + l_{i+8}),
    (+4), (+2), (+1) in float32: written out here."""
    rng = np.random.default_rng(0)
    K = 37
    a = _f32(rng.standard_normal(K) * np.exp2(rng.integers(-12, 12, K)))
    b = _f32(rng.standard_normal(K))
    # each lane an fp32 FMA chain from zero (the Fraction reference), the lanes added in float32
    terms = [np.float32(ref.fma_chain(a[lane::16].tolist(), b[lane::16].tolist(), 0.0)) for lane in range(16)]
    while len(terms) > 1:
        h = len(terms) // 2
        terms = [np.float32(terms[i] + terms[i + h]) for i in range(h)]
    want = float(terms[0])
    sched = S.Schedule(rules=(S.KRule(1, None, S.Split(lanes=16, lane_block=1, lane_combine="halving")),),
                       c_position="combine")
    got = float(wb.gemm(a[None, :], b[:, None], model=FMA32, schedule=sched)[0, 0])
    assert got == want
    pairwise = S.Schedule(rules=(S.KRule(1, None, S.Split(lanes=16, lane_block=1)),), c_position="combine")
    # the two reductions differ somewhere on such data (or the test above could not tell them apart)
    diff = 0
    for seed in range(30):
        r = np.random.default_rng(seed)
        A = _f32(r.standard_normal((4, 100)) * np.exp2(r.integers(-12, 12, (4, 100))))
        B = _f32(r.standard_normal((100, 3)))
        diff += int((wb.gemm(A, B, model=FMA32, schedule=sched) != wb.gemm(A, B, model=FMA32, schedule=pairwise)).sum())
    assert diff > 0


def test_lane_block_must_be_one_or_a_multiple_of_lanes():
    S.Split(lanes=16, lane_block=1)
    with pytest.raises(ValueError, match="lane_block=8 must be 1 or a multiple of lanes=16"):
        S.Split(lanes=16, lane_block=8)
    with pytest.raises(ValueError, match="lane_combine='tree'"):
        S.Split(lanes=4, lane_block=4, lane_combine="tree")


_HALVING = S.Split(lanes=16, lane_block=1, lane_combine="halving")


def test_region_rules_hold_per_k_and_product_and_travel_as_data():
    g = S.Region((0, 1), (16, 1), 1, 1, rules=(S.KRule(32, None, _HALVING, mn=(3, 20)),))
    assert g.outputs(3, 20, 31)[1].size == 0                 # K below the rule: the region does not apply
    assert g.outputs(3, 20, 32)[1].tolist() == [16, 17, 18, 19]
    assert g.outputs(3, 21, 100)[1].size == 0                # another product: no rule
    assert g.split_for(40, 3, 20) == _HALVING and g.split_for(40, 3, 21) is None
    sched = S.Schedule(rules=(S.KRule(1, None, S.Split()),), c_position="combine", regions=(g,))
    assert S.Schedule.from_dict(sched.to_dict()) == sched
    with pytest.raises(ValueError, match="not both"):
        S.Region((0, 1), (16, 1), 1, 1, split=_HALVING, rules=(S.KRule(1, None, _HALVING),))
    with pytest.raises(TypeError, match="each with a split"):
        S.Region((0, 1), (16, 1), 1, 1, rules=(S.KRule(1, None, None),))


def test_gemm_runs_region_rules_with_the_whole_products_shape():
    """The region's rule names the whole product (3 x 20); its outputs are computed as a
    3 x 4 sub-product, which must still take the rule."""
    rng = np.random.default_rng(1)
    A, B = _f32(rng.standard_normal((3, 64))), _f32(rng.standard_normal((64, 20)))
    g = S.Region((0, 1), (16, 1), 1, 1, rules=(S.KRule(32, None, _HALVING, mn=(3, 20)),))
    sched = S.Schedule(rules=(S.KRule(1, None, S.Split()),), c_position="combine", regions=(g,))
    got = wb.gemm(A, B, model=FMA32, schedule=sched)
    chain = wb.gemm(A, B, model=FMA32, schedule=S.Schedule(rules=(S.KRule(1, None, S.Split()),), c_position="combine"))
    lanes = wb.gemm(A, B[:, 16:], model=FMA32,
                    schedule=S.Schedule(rules=(S.KRule(1, None, _HALVING),), c_position="combine"))
    assert np.array_equal(got[:, :16], chain[:, :16]) and np.array_equal(got[:, 16:], lanes)


#: the hand-written "library": 16-column tiles one FMA chain; the remainder columns one chain
#: below K = 32 and 16 round-robin lanes summed by halving from K = 32; products with
#: M N K > 20000 K blocks of 96 (halved last blocks, unroll 8) on every output
_BLOCKS = S.Split(block=96, block_unroll=8)


def _hand_library(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    M, K = A.shape
    N = B.shape[1]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    if M * N * K > 20000:
        return np.asarray(wb.gemm(A64, B64, model=FMA32, schedule=S.Schedule(
            rules=(S.KRule(1, None, _BLOCKS),), c_position="combine")), dtype=np.float32)
    split = S.Split() if K < 32 else _HALVING
    whole = N - N % 16
    out = np.empty((M, N))
    chain = S.Schedule(rules=(S.KRule(1, None, S.Split()),), c_position="combine")
    if whole:
        out[:, :whole] = wb.gemm(A64, B64[:, :whole], model=FMA32, schedule=chain)
    if whole < N:
        out[:, whole:] = wb.gemm(A64, B64[:, whole:], model=FMA32,
                                 schedule=S.Schedule(rules=(S.KRule(1, None, split),), c_position="combine"))
    return out.astype(np.float32)


def test_recovery_finds_a_hand_written_library():
    rec = recover_schedule(_hand_library, FMA32, "fp32", "float32", 24, [(3, 20), (2, 5)], k_max=2500)
    assert rec.schedule is not None and not rec.unexplained, rec.sheet()
    assert 96 in rec.blocks and rec.queries > 0 and rec.seconds > 0
    sched = rec.schedule
    # the splits it names: (3, 20)'s remainder columns 16 halving lanes at K = 100, chain at 20
    remainder = [g for g in sched.regions if g.split_for(100, 3, 20) is not None]
    assert remainder and remainder[0].split_for(100, 3, 20) == _HALVING
    below = remainder[0].split_for(20, 3, 20)            # K < 32: one accumulator takes all 20 (a chain)
    assert below is None or [len(x) for x in below.lanes_of(np.arange(20)) if len(x)] == [20]
    assert sched.split(1000, 3, 20) == _BLOCKS or sched.split(1000, 3, 20).block == 96
    # fresh products at K never probed (and past the probed range): the box's bits
    rng = np.random.default_rng(7)
    for M, N, K in ((3, 20, 37), (3, 20, 250), (3, 20, 333), (2, 5, 777), (2, 5, 2003), (2, 5, 4001)):
        A, B = _f32(rng.standard_normal((M, K))), _f32(rng.standard_normal((K, N)))
        want = _hand_library(A.astype(np.float32), B.astype(np.float32)).astype(np.float64)
        got = np.asarray(wb.gemm(A, B, model=FMA32, schedule=sched), dtype=np.float64)
        assert np.array_equal(got, want), (M, N, K)
    with pytest.raises(ValueError, match="no rule"):       # a product it did not probe: refused, not guessed
        wb.gemm(np.ones((4, 8)), np.ones((8, 4)), model=FMA32, schedule=sched)


def test_recovery_refuses_bad_shapes():
    with pytest.raises(ValueError, match="M, N >= 2"):
        recover_schedule(_hand_library, FMA32, "fp32", "float32", 24, [(1, 5)], k_max=10)
    with pytest.raises(ValueError, match="k_max=0"):
        recover_schedule(_hand_library, FMA32, "fp32", "float32", 24, [(2, 5)], k_max=0)


def test_candidates_hold_the_blocks_fprev_shows():
    splits = candidate_splits((96,))
    assert splits[0].whole and _HALVING in splits and S.Split(block=96, block_unroll=8) in splits


def test_this_machines_numpy_float64_is_recovered_and_replays():
    """The real library here, whatever kernel the environment selects: recovered on 5 x 3
    and 7 x 9, then replayed on fresh products at K the recovery never probed.  Every
    product the recovery says it explained must replay bit for bit; what it did not
    explain it must say.  The FMA kernels this project's machines run (OpenBLAS' Haswell
    kernels on a Zen 3, SkylakeX on a Zen 4) must be explained whole; older kernels, chosen
    by hand, need only be honest about what they leave unexplained."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from workbench.probes.recovery import draw_inputs

    call = lambda A, B: A @ B  # noqa: E731
    with threadpool_limits(1, user_api="blas"):
        rec = recover_schedule(call, _fma("fp64"), "fp64", "float64", 53, [(5, 3), (7, 9)], k_max=700)
        unexplained = {(M, N) for M, N in ((5, 3), (7, 9)) if any(u.startswith(f"{M}x{N}") for u in rec.unexplained)}
        kernels = {i.get("architecture") for i in threadpool_info() if i.get("user_api") == "blas"}
        if kernels & {"Haswell", "Zen", "SkylakeX"}:
            assert not unexplained, rec.sheet()
        assert rec.schedule is not None or unexplained == {(5, 3), (7, 9)}
        rng = np.random.default_rng(11)
        for M, N, K in ((5, 3, 77), (5, 3, 301), (7, 9, 150), (7, 9, 611), (7, 9, 699)):
            if (M, N) in unexplained:
                continue
            for kind in ("random", "adversarial"):
                A, B = draw_inputs(rng, kind, M, N, K, "fp64")
                got = np.asarray(wb.gemm(A, B, model=_fma("fp64"), schedule=rec.schedule), dtype=np.float64)
                assert np.array_equal(got, A @ B), (M, N, K, kind, rec.sheet())


def test_a_recovered_schedule_travels_in_a_unit_file(tmp_path):
    """Region rules (per K and product) written to a unit file and read back unchanged."""
    g = S.Region((8, 4), (16, 1), 1, 1, rules=(S.KRule(1, 33, S.Split(lanes=16, lane_block=32), mn=(3, 5)),
                                               S.KRule(34, None, _HALVING, mn=(3, 5))))
    sched = S.Schedule(name="recovered", rules=(S.KRule(1, None, S.Split(block=448, block_unroll=8), mn=(3, 5)),),
                       c_position="combine", regions=(g,), threads=1)
    path = wb.save_unit(FMA32, tmp_path / "lib.toml", schedule=sched)
    assert read_unit(path).schedule == sched


def test_a_split_without_fma_rounds_each_product_then_adds():
    """fused=False: per accumulator fl(acc + fl(a_k b_k)) in float32, written out here with
    numpy's float32 multiply and add (IEEE, round to nearest even), lanes summed in order."""
    rng = np.random.default_rng(5)
    A = _f32(rng.standard_normal((3, 41)) * np.exp2(rng.integers(-10, 10, (3, 41))))
    B = _f32(rng.standard_normal((41, 4)))
    want = np.zeros((3, 4), dtype=np.float32)
    for i in range(3):
        for j in range(4):
            lanes = [np.float32(0)] * 4
            for k in range(41):
                lanes[k % 4] = np.float32(lanes[k % 4] + np.float32(A[i, k]) * np.float32(B[k, j]))
            want[i, j] = ((lanes[0] + lanes[1]) + lanes[2]) + lanes[3]
    split = S.Split(lanes=4, lane_block=1, lane_combine="in-order", fused=False)
    got = wb.gemm(A, B, model=FMA32, schedule=S.Schedule(rules=(S.KRule(1, None, split),), c_position="combine"))
    assert np.array_equal(np.asarray(got, dtype=np.float32), want)
    fused = wb.gemm(A, B, model=FMA32, schedule=S.Schedule(rules=(S.KRule(1, None, S.Split(
        lanes=4, lane_block=1, lane_combine="in-order")),), c_position="combine"))
    assert not np.array_equal(np.asarray(fused, dtype=np.float32), want)   # the FMA gives other bits here
    with pytest.raises(ValueError, match="fused=1"):
        S.Split(fused=1)


@settings(max_examples=60, deadline=None)
@given(fmt=st.sampled_from(["fp32", "fp16"]), K=st.integers(1, 24), data=st.data())
def test_a_split_without_fma_takes_any_values_of_its_format(fmt, K, data):
    """fused=False on any values of the accumulation's format - subnormals, zeros of both
    signs, Inf, NaN, products that overflow - against the loop written out in Python's binary64
    with each product and sum rounded to the format by numpy's conversion (one binary64
    operation then RNE to fp32 or fp16 is the format's own operation: 53 >= 2p + 2)."""
    dt, width = (np.float32, 32) if fmt == "fp32" else (np.float16, 16)
    values = st.floats(width=width, allow_nan=True, allow_infinity=True)
    A = np.array(data.draw(st.lists(values, min_size=2 * K, max_size=2 * K)), dtype=np.float64).reshape(2, K)
    B = np.array(data.draw(st.lists(values, min_size=3 * K, max_size=3 * K)), dtype=np.float64).reshape(K, 3)
    want = np.zeros((2, 3))
    with np.errstate(all="ignore"):
        for i in range(2):
            for j in range(3):
                acc = 0.0
                for k in range(K):
                    acc = float(dt(acc + float(dt(A[i, k] * B[k, j]))))
                want[i, j] = acc
    unit = FMA32 if fmt == "fp32" else _fma("fp16")
    split = S.Split(lanes=1, lane_block=1, fused=False)
    got = np.asarray(wb.gemm(A, B, model=unit, schedule=S.Schedule(rules=(S.KRule(1, None, split),),
                                                                 c_position="combine", combine_format=fmt)),
                     dtype=np.float64)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (A, B, got, want)


def test_a_pipelined_two_accumulator_loop_adds_its_tail_after_their_sum():
    """Split(tail="after", held=1): even k on one accumulator and odd k on another over the
    loop's whole rounds of 4, less the last product still pending; their sum; then that
    product and the K % 4 tail one by one - written out here with numpy's float32 multiply
    and add (mulps, addps), and told apart from the tail on accumulator 0."""
    split = S.Split(lanes=2, lane_block=4, lane_combine="in-order", tail="after", held=1, fused=False)
    part = np.arange(11)
    assert [q.tolist() for q in split.lanes_of(part)] == [[0, 2, 4, 6], [1, 3, 5]]
    assert split.tail_of(part).tolist() == [7, 8, 9, 10]
    assert [q.tolist() for q in split.lanes_of(np.arange(3))] == [[], []]
    assert split.tail_of(np.arange(3)).tolist() == [0, 1, 2]
    assert S.Split(lanes=2, lane_block=4).tail_of(part).size == 0
    rng = np.random.default_rng(11)
    sched = S.Schedule(rules=(S.KRule(1, None, split),), c_position="combine")
    first = S.Schedule(rules=(S.KRule(1, None, S.Split(lanes=2, lane_block=4, lane_combine="in-order",
                                                       fused=False)),), c_position="combine")
    differ = 0
    for K in (1, 3, 4, 7, 8, 13, 40):
        A = _f32(rng.standard_normal((3, K)) * np.exp2(rng.integers(-12, 12, (3, K))))
        B = _f32(rng.standard_normal((K, 2)))
        want = np.zeros((3, 2), dtype=np.float32)
        loop_end = K - K % 4 - 1 if K >= 4 else 0
        for i in range(3):
            for j in range(2):
                p = [np.float32(A[i, k]) * np.float32(B[k, j]) for k in range(K)]
                even, odd = np.float32(0), np.float32(0)
                for k in range(loop_end):
                    if k % 2:
                        odd = np.float32(odd + p[k])
                    else:
                        even = np.float32(even + p[k])
                    acc = np.float32(odd + even)
                for k in range(loop_end, K):
                    acc = np.float32((acc if loop_end or k > loop_end else np.float32(0)) + p[k])
                want[i, j] = acc
        got = np.asarray(wb.gemm(A, B, model=FMA32, schedule=sched), dtype=np.float32)
        assert np.array_equal(got, want), K
        differ += int((np.asarray(wb.gemm(A, B, model=FMA32, schedule=first), dtype=np.float32) != want).sum())
    assert differ
    assert S.Schedule.from_dict(sched.to_dict()) == sched
    for bad in ({"held": 1}, {"held": 4, "tail": "after"}, {"tail": "last"}):
        with pytest.raises(ValueError, match="Split.held|Split.tail"):
            S.Split(lanes=2, lane_block=4, **bad)


def test_a_halving_with_the_tail_after_its_first_step():
    """Split(tail="half"): four accumulators over k % 4 (whole rounds of 4), the first halving
    step (l0 + l2, l1 + l3), the K % 4 tail one by one onto the first of those, then their
    sum - written out here in float64 with products rounded to float32 first (mulsd, addsd
    of an FMA-less float32 kernel)."""
    split = S.Split(lanes=4, lane_block=4, lane_combine="halving", tail="half", fused=False)
    sched = S.Schedule(rules=(S.KRule(1, None, split),), c_position="combine")
    rng = np.random.default_rng(12)
    for K in (2, 4, 9, 23):
        A = _f32(rng.standard_normal((2, K)) * np.exp2(rng.integers(-12, 12, (2, K))))
        B = _f32(rng.standard_normal((K, 3)))
        want = np.zeros((2, 3), dtype=np.float32)
        main = K - K % 4
        for i in range(2):
            for j in range(3):
                p = [np.float32(A[i, k]) * np.float32(B[k, j]) for k in range(K)]
                lanes = [np.float32(0)] * 4
                for k in range(main):
                    lanes[k % 4] = np.float32(lanes[k % 4] + p[k])
                low, high = np.float32(lanes[0] + lanes[2]), np.float32(lanes[1] + lanes[3])
                for k in range(main, K):
                    low = np.float32(low + p[k])
                want[i, j] = np.float32(low + high)
        got = np.asarray(wb.gemm(A, B, model=FMA32, schedule=sched), dtype=np.float32)
        assert np.array_equal(got, want), K
    with pytest.raises(ValueError, match="tail='half' goes with"):
        S.Split(lanes=4, lane_block=4, lane_combine="pairwise", tail="half")
