"""Schedules as data (issue 40, item 1): :mod:`workbench.units.schedules` run by ``workbench.gemm``.

Oracles: the engine's own ``accumulation`` kernels for the one-part schedules they are
(outside = parts of L with C first in the combination, promote = parts of 128), an
independent composition here (each part a separate one-chain ``gemm``, the parts summed with
numpy's float32 adds) for splits and pairwise sums, and the fresh products of the H100
(``benchmarks/measured/cublas_h100_schedule_check.npz``) for cuBLAS' schedule.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.units import schedules as S
from workbench.sweep.tasks import BUILTIN_ALGORITHMS

H100 = wb.preset("H100", "fp16", "fp32")
CHECK = Path(__file__).resolve().parents[1] / "benchmarks" / "measured" / "cublas_h100_schedule_check.npz"


def _fp16(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float16).astype(np.float64)


def _data(M: int = 5, K: int = 300, N: int = 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return _fp16(rng, (M, K)), _fp16(rng, (K, N)), rng.standard_normal((M, N)).astype(np.float32).astype(np.float64)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32)


@pytest.mark.parametrize("acc, every", [("chain", None), ("outside", None), ("promote", 128), ("promote", 64)])
def test_accumulation_options_are_one_part_schedules(acc, every):
    A, B, C = _data()
    want = wb.gemm(A, B, C, model=H100, accumulation=acc, promote_every=every)
    assert np.array_equal(_bits(wb.gemm(A, B, C, model=H100, schedule=S.from_accumulation(acc, every))), _bits(want))


@pytest.mark.parametrize("acc, every, size", [("outside", None, 16), ("promote", 128, 128)])
def test_outside_and_promote_are_splits_with_c_first_in_the_combination(acc, every, size):
    """The engine's kernels for ``outside``/``promote`` against the schedule path that cuts
    K into parts and sums them outside: two implementations, one result."""
    A, B, C = _data(K=333)
    split = S.Schedule(rules=(S.KRule(1, None, S.Split(part_size=size)),), c_position="combine")
    want = wb.gemm(A, B, C, model=H100, accumulation=acc, promote_every=every)
    assert np.array_equal(_bits(wb.gemm(A, B, C, model=H100, schedule=split)), _bits(want))


def _by_hand(A, B, parts, combine):
    terms = [np.float32(wb.gemm(A[:, p], B[p], model=H100)) for p in parts]
    if combine == "evens-odds" and len(terms) > 1:  # the even-numbered terms pairwise, the odd likewise, then both
        return _by_hand_terms(terms[0::2], "pairwise") + _by_hand_terms(terms[1::2], "pairwise")
    return _by_hand_terms(terms, combine)


def _by_hand_terms(terms, combine):
    while len(terms) > 1:
        if combine == "in-order":
            terms = [terms[0] + terms[1]] + terms[2:]
        elif combine == "pairwise":
            terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
        else:                                     # halving: the upper half added onto the lower half
            h = (len(terms) + 1) // 2
            terms = [terms[i] + terms[i + h] if i + h < len(terms) else terms[i] for i in range(h)]
    return terms[0]


@pytest.mark.parametrize("split", [S.Split(5), S.Split(part_size=96), S.Split(3, interleave=32)])
@pytest.mark.parametrize("combine", S.COMBINES)
def test_a_split_is_its_parts_summed_in_fp32(split, combine):
    A, B, _ = _data(K=480, seed=1)
    sched = S.Schedule(rules=(S.KRule(480, 480, split),), combine=combine)
    parts = split.indices(480)
    assert sorted(np.concatenate(parts).tolist()) == list(range(480))
    want = _by_hand(A, B, parts, combine)
    assert np.array_equal(_bits(wb.gemm(A, B, model=H100, schedule=sched)), _bits(want.astype(np.float32)))


def test_a_cycle_split_and_its_lanes():
    """Split.cycle: whole cycles of parts of the given sizes, the remainder one element at a
    time; a part shorter than lane_block is one accumulator (MKL's peel loop, by hand)."""
    sp = S.Split(cycle=(1, 1, 1, 1, 4), lanes=4, lane_block=4, lane_combine="in-order")
    assert [p.tolist() for p in sp.indices(19)] == [[0], [1], [2], [3], [4, 5, 6, 7], [8], [9], [10], [11],
                                                   [12, 13, 14, 15], [16], [17], [18]]
    assert [p.tolist() for p in sp.indices(3)] == [[0], [1], [2]]
    assert [q.tolist() for q in sp.lanes_of(np.arange(4, 8))] == [[4], [5], [6], [7]]
    assert [q.tolist() for q in sp.lanes_of(np.arange(8, 9))] == [[8]]
    assert not sp.whole
    for bad in ((), (0, 4), (1, 2.0)):
        with pytest.raises(ValueError, match="cycle"):
            S.Split(cycle=bad)
    with pytest.raises(ValueError, match="cycle"):
        S.Split(cycle=(1, 4), part_size=8)
    A, B, _ = _data(K=19, seed=4)
    sched = S.Schedule(rules=(S.KRule(19, 19, sp),), c_position="combine")
    fp32 = wb.custom_model("fp32", "fp32", kind="fma")
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    want = np.zeros((A.shape[0], B.shape[1]), dtype=np.float32)
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            p = A32[i] * B32[:, j]                 # float32 products: each rounded once
            acc = np.float32(0)
            for k0 in (0, 8):
                for k in range(k0, k0 + 4):
                    acc = np.float32(acc + p[k])
                acc = np.float32(acc + np.float32(np.float32(np.float32(p[k0 + 4] + p[k0 + 5]) + p[k0 + 6]) + p[k0 + 7]))
            for k in (16, 17, 18):
                acc = np.float32(acc + p[k])
            want[i, j] = acc
    assert np.array_equal(_bits(wb.gemm(A32.astype(np.float64), B32.astype(np.float64), model=fp32, schedule=sched)),
                          _bits(want))


def test_regions_by_n_modulo_and_small_products():
    """Region.n_mod and Region.below select the products a region applies to; the first
    (-r * 9) % 4 columns of row r are MKL's peel for N = 9 (rows 1, 2, 3: 3, 2, 1 columns)."""
    g = S.Region(rows=(0, 1), cols=(0, 3), lanes=1, lane_block=1, row_phase=(4, 1, 2), col_panel=0,
                 n_mod=(4, 1, 7), below=(4, 12))
    rows, cols = g.outputs(6, 9)
    assert rows.tolist() == [1, 5] and cols.tolist() == [0, 1, 2]
    assert g.outputs(6, 10)[0].size == 0 or g.outputs(6, 10)[1].size == 0     # N % 4 = 2
    assert g.outputs(6, 5)[1].size == 0 or g.outputs(6, 5)[0].size == 0       # N < 7: too few columns remain
    assert g.outputs(4, 13)[0].size == 0 or g.outputs(4, 13)[1].size == 0     # M >= 4 and N >= 12: not small
    assert g.outputs(3, 13)[0].tolist() == [1]
    with pytest.raises(ValueError, match="n_mod"):
        S.Region(rows=(0, 1), cols=(0, 1), lanes=1, lane_block=1, n_mod=(4, 4, 0))
    with pytest.raises(ValueError, match="below"):
        S.Region(rows=(0, 1), cols=(0, 1), lanes=1, lane_block=1, below=(0, 3))
    sched = S.Schedule(rules=(S.KRule(1, None, S.Split(part_size=1)),), regions=(
        S.Region(rows=(0, 1), cols=(0, 1), lanes=1, lane_block=1, split=S.Split(cycle=(1, 4), lanes=4,
                                                                                 lane_block=4)),))
    assert S.Schedule.from_dict(json.loads(json.dumps(sched.to_dict()))) == sched


def test_pairwise_and_in_order_differ_somewhere():
    A, B, _ = _data(M=16, K=512, N=16, seed=2)
    got = {c: wb.gemm(A, B, model=H100, schedule=S.Schedule(rules=(S.KRule(512, 512, S.Split(8)),), combine=c))
           for c in S.COMBINES}
    assert not np.array_equal(got["in-order"], got["pairwise"])


def test_c_in_the_epilogue_and_the_final_conversion():
    A, B, C = _data(K=64)
    sched = S.Schedule(c_position="epilogue", output="fp16")
    P = wb.gemm(A, B, model=H100).astype(np.float32)
    want = (P + C.astype(np.float32)).astype(np.float16)
    got = wb.gemm(A, B, C, model=H100, schedule=sched)
    assert got.dtype == np.float16 and np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_schedule_refuses_what_it_does_not_know():
    A, B, _ = _data(K=100)
    with pytest.raises(ValueError, match=r"no rule for K=100.*2048"):
        wb.gemm(A, B, model=H100, schedule="cublas-h100-fp16-fp32")
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match=r"8192 for 33 x 65 products is not known"):
        wb.gemm(_fp16(rng, (33, 8192)), _fp16(rng, (8192, 65)), model=H100, schedule="cublas-h100-fp16-fp16")
    with pytest.raises(ValueError, match="not both"):
        wb.gemm(A, B, model=H100, schedule="chain", accumulation="outside")
    with pytest.raises(ValueError, match="unknown schedule 'cublas-h100-fp61"):
        wb.gemm(A, B, model=H100, schedule="cublas-h100-fp61-fp32")
    with pytest.raises(ValueError, match="multiple of 7"):
        S.Split(7).indices(100)
    with pytest.raises(ValueError, match="inner='promote'"):
        S.Schedule(promote_every=128)
    with pytest.raises(ValueError, match="c_position"):
        S.Schedule(c_position="late")


def test_schedules_travel_as_data_to_sweeps_and_torch_policies():
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    sched = S.get("cublas-h100-fp16-fp32")
    d = json.loads(json.dumps(sched.to_dict()))
    assert S.Schedule.from_dict(d) == sched
    rng = np.random.default_rng(4)
    A, B = _fp16(rng, (4, 4096)), _fp16(rng, (4096, 3))
    want = wb.gemm(A, B, model=H100, schedule=sched)
    for s in (d, "cublas-h100-fp16-fp32"):
        assert np.array_equal(_bits(BUILTIN_ALGORITHMS["gemm"](A, B, model=H100, schedule=s)), _bits(want))
    pol = wb.torch.Policy(forward=H100, schedule="cublas-h100-fp16-fp32")
    with wb.torch.simulate(pol):
        got = torch.from_numpy(A) @ torch.from_numpy(B)
    assert np.array_equal(got.numpy().astype(np.float32).view(np.uint32), _bits(want))
    with pytest.raises(ValueError, match="not both"):
        wb.torch.Policy(forward=H100, schedule="chain", accumulation="outside")


def _check_cases(big: bool) -> list[str]:
    keys = [k[:-5] for k in np.load(CHECK).files if k.endswith("__crc")]
    return [k for k in keys if (np.prod([int(x) for x in k.split("x")]) > 64 * 64 * 16384) == big]


def _h100_fresh(key: str) -> None:
    """Fresh fp16 products (standard normal, seed K + M; CRC-32 of the inputs stored) run
    through ``torch.mm`` on an H100, every output bit, fp32 and fp16 outputs."""
    import zlib

    d = np.load(CHECK)
    M, N, K = map(int, key.split("x"))
    rng = np.random.default_rng(K + M)
    A16, B16 = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    assert d[key + "__crc"].tolist() == [zlib.crc32(A16.tobytes()), zlib.crc32(B16.tobytes())]
    A, B = A16.astype(np.float64), B16.astype(np.float64)
    assert np.array_equal(_bits(wb.gemm(A, B, model=H100, schedule="cublas-h100-fp16-fp32")), d[key + "__mm_fp32"])
    if (M, N) != (33, 65):
        got = wb.gemm(A, B, model=H100, schedule="cublas-h100-fp16-fp16")
        assert np.array_equal(got.view(np.uint16), d[key + "__mm"])


@pytest.mark.parametrize("key", _check_cases(False))
def test_cublas_schedule_predicts_fresh_h100_products(key):
    _h100_fresh(key)


@pytest.mark.slow
@pytest.mark.parametrize("key", _check_cases(True))
def test_cublas_schedule_predicts_fresh_h100_products_big(key):
    _h100_fresh(key)


def test_the_fresh_fprev_rows_are_the_schedules_parts():
    """FPRev's first fixed position at K = 2560, 3072, 6144, 12288 (measured with the fresh
    products): j in part p > 0 counts K - (elements of parts 0..p); in part 0 the chain."""
    d = np.load(CHECK)
    sched = S.get("cublas-h100-fp16-fp32")
    for K in (2560, 3072, 6144, 12288):
        parts = sched.parts(K, 64, 64)
        want = np.empty(K, dtype=int)
        upto = np.cumsum([len(p) for p in parts])
        for n, p in enumerate(parts):
            want[p] = K - (((p - p[0]) // 16 + 1) * 16 if n == 0 else upto[n])
        want[0] = K - 1
        assert np.array_equal(d[f"fprev_row_{K}"].astype(int), want), K
