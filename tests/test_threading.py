"""A library's cut of a product over its threads (issue 54, item 2: "recover the
multithreaded split"): :class:`workbench.units.schedules.Threading`, :func:`workbench.gemm`
with a threaded schedule, :func:`workbench.probes.library.recover_threading`.

Oracles:

* the cuts of OpenBLAS' threaded driver (``interface/gemm.c``: the thread count from the
  work; ``driver/level3/level3_thread.c``: ``gemm_thread``'s layout, ``gemm_driver``'s
  ranges, ``inner_thread``'s DIVIDE_RATE pieces and ``(min_l + 1) / 2``), worked out by hand
  below from the source's integer arithmetic;
* a test-only library whose threads cut every product by a known record: the recovery
  must find a record that cuts the probes alike and verify it;
* the real numpy at its default thread count, where it runs OpenBLAS' Haswell kernels
  (the hand-written one-thread model's): skipped, with the reason, elsewhere.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.probes import library
from workbench.probes.library import LIBRARIES, OPENBLAS_CORES, Library, LibraryCandidate, LibraryEnvironment
from workbench.units import schedules as S
from workbench.units.unitfile import read_unit, save_unit

#: OpenBLAS 0.3.31's cut as recovered on its Haswell DGEMM at 2 threads (benchmarks/measured/library_kernels.md)
HASWELL_2 = S.Threading(threads=2, switch_ratio=8, row_multiple=8, col_multiple=4)


@pytest.mark.parametrize("shape, cut", [
    # W = 613800 > 2 x 262144: 2 threads; t_m = 2 (31 >= 16), t_n = ceil(33 / 16) = 3 capped at 1, then
    # 33 * 2 + 31 * 1 = 97 > 33 * 1 + 31 * 2 = 95: t_m = 1, t_n = 2; rows 17 + 16 (17 >= 8: not raised), each
    # in two pieces of ceil(17 / 2) = 9 and ceil(16 / 2) = 8; the columns are not cut
    ((33, 31, 600), ([(0, 9), (9, 17), (17, 25), (25, 33)], [(0, 31)])),
    # W = 523776: floor(W / 262144) = 1 thread
    ((33, 31, 512), None),
    # W = 524799: 2 threads
    ((33, 31, 513), ([(0, 9), (9, 17), (17, 25), (25, 33)], [(0, 31)])),
    # t_m = 2, t_n = 1 (25 * 2 + 200 < 25 + 400): rows 13 rounded up to 16 (the columns are cut too), the
    # rest 9; pieces 8 + 8 and 5 + 4; columns 100 + 100 (100 is a multiple of 4)
    ((25, 200, 400), ([(0, 8), (8, 16), (16, 21), (21, 25)], [(0, 100), (100, 200)])),
    # columns 51 rounded up to 52, then 49; rows 5 -> raised to switch_ratio 8 -> [0, 8) and [8, 9)
    ((9, 101, 900), ([(0, 4), (4, 8), (8, 9)], [(0, 52), (52, 101)])),
    # N = 9 < 2 * 8: t_m = 1; t_n = ceil(100 / 8) = 13 capped at 2: rows 50 + 50, pieces of 25
    ((100, 9, 900), ([(0, 25), (25, 50), (50, 75), (75, 100)], [(0, 9)])),
    # M = 3 < 8 x t_m and N = 3 < 2 x 8: t_m = t_n = 1, the one-thread driver
    ((3, 3, 100000), None),
])
def test_the_cut_is_openblas_threaded_drivers(shape, cut):
    assert HASWELL_2.cut(*shape) == cut


def test_the_threaded_driver_halves_the_last_k_blocks_up():
    """level3.c rounds rest / 2 up to GEMM_UNROLL_M (4); level3_thread.c takes ceil(rest / 2)."""
    def sizes(split: S.Split, K: int) -> list[int]:
        return [len(p) for p in split.indices(K)]

    one, threaded = S.Split(block=256, block_unroll=4), S.Split(block=256, block_half_up=True)
    assert sizes(one, 601) == [256, 172, 173] and sizes(threaded, 601) == [256, 173, 172]
    assert sizes(one, 700) == [256, 224, 220] and sizes(threaded, 700) == [256, 222, 222]
    assert sizes(one, 500) == [252, 248] and sizes(threaded, 500) == [250, 250]
    sched = S.Schedule(rules=(S.KRule(1, None, one),), threading=HASWELL_2)
    per_thread = HASWELL_2.per_thread(sched, 33, 31, 601)
    assert per_thread.threading is None and per_thread.split(601) == threaded
    with pytest.raises(ValueError, match="block_half_up"):
        S.Split(part_size=4, block_half_up=True)


@pytest.mark.parametrize("field, value", [("threads", 0), ("min_work", -1), ("pieces", 1.5), ("k_half_up", 1)])
def test_a_threading_record_is_checked(field, value):
    with pytest.raises(ValueError, match=f"Threading.{field}={value!r}"):
        S.Threading(**{"threads": 2, field: value})


def _fma64() -> wb.Model:
    return wb.custom_model("fp64", "fp64", kind="fma")


#: a one-thread schedule whose bits depend on where a row falls in its piece: the last row of an odd
#: number of rows keeps four accumulators (OpenBLAS' Haswell DGEMM edge), K blocks of 64
ONE_THREAD = S.Schedule(name="fake-edges", c_position="combine", combine_format="fp64",
                        rules=(S.KRule(1, None, S.Split(block=64, block_unroll=4)),),
                        regions=(S.Region(rows=(2, 1), cols=(0, 4), lanes=4, lane_block=8),))


def test_a_threaded_gemm_is_the_one_thread_schedule_on_each_piece():
    """Every output of the threaded product is the one-thread schedule (K halved up) on the
    sub-product of its piece: rows 8 and 32 of 33 x 31 x 600 end odd pieces."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((33, 600)), rng.standard_normal((600, 31))
    D = wb.gemm(A, B, model=_fma64(), schedule=replace(ONE_THREAD, threading=HASWELL_2))
    per_thread = replace(ONE_THREAD, rules=(S.KRule(1, None, S.Split(block=64, block_half_up=True)),))
    for r0, r1 in ((0, 9), (9, 17), (17, 25), (25, 33)):
        assert np.array_equal(D[r0:r1], wb.gemm(A[r0:r1], B, model=_fma64(), schedule=per_thread))
    assert not np.array_equal(D, wb.gemm(A, B, model=_fma64(), schedule=ONE_THREAD))


def test_a_threaded_schedule_travels_in_a_unit_file(tmp_path):
    sched = replace(ONE_THREAD, threading=HASWELL_2, threads=2)
    path = save_unit(_fma64(), tmp_path / "t.toml", schedule=sched)
    assert "threading = {threads = 2, switch_ratio = 8, row_multiple = 8, col_multiple = 4}" in path.read_text()
    assert read_unit(path).schedule == sched
    assert S.Schedule.from_dict(sched.to_dict()) == sched
    with pytest.raises(ValueError, match="unknown threading fields"):
        S.Schedule.from_dict({**sched.to_dict(), "threading": {"threads": 2, "cores": 4}})


def _threaded_fake(cut_by: S.Threading) -> Library:
    """A library whose A @ B at n threads is ONE_THREAD cut as ``cut_by`` cuts it (at one thread: uncut)."""
    threads = {"n": 1}

    @contextlib.contextmanager
    def set_threads(n: int):
        old, threads["n"] = threads["n"], n
        try:
            yield
        finally:
            threads["n"] = old

    def call(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        sched = ONE_THREAD if threads["n"] == 1 else replace(ONE_THREAD, threading=cut_by)
        return wb.gemm(A, B, model=_fma64(), schedule=sched)

    env = LibraryEnvironment("fakeblas", "1.2", "TestCore", 1, 2, "a threaded test double")
    return Library("fp64", "float64", call, set_threads, lambda: env,
                   (LibraryCandidate(_fma64, ONE_THREAD, "written for the test", kernels=("TestCore",)),))


@pytest.mark.parametrize("cut_by", [HASWELL_2, S.Threading(threads=2, switch_ratio=4, row_multiple=2, col_multiple=8,
                                                          min_work=65536 * 8)])
def test_the_cut_is_recovered_from_the_library_at_its_threads(cut_by, monkeypatch):
    monkeypatch.setitem(LIBRARIES, "fake-threads", _threaded_fake(cut_by))
    shapes = ((33, 31, 600), (9, 101, 900))
    rec = library.recover_threading("fake-threads", _fma64(), ONE_THREAD, threads=2, shapes=shapes)
    assert rec.candidate is not None and rec.verified, rec.sheet()
    assert rec.consistent[0].cut(33, 31, 600) == cut_by.cut(33, 31, 600)
    assert rec.candidate.schedule.threading == rec.consistent[0] and rec.candidate.schedule.threads == 2
    assert "at 2 threads: verified" in rec.sheet()


def test_a_library_whose_threads_no_cut_explains_says_so(monkeypatch):
    """The library at 2 threads sums every K in one chain (no blocks): no record of the
    search reproduces it, and the report keeps the one-thread model."""
    lib = _threaded_fake(HASWELL_2)
    one_chain = S.Schedule(name="chain", regions=ONE_THREAD.regions)
    fake = Library(lib.fmt, lib.dtype, lambda A, B: wb.gemm(A, B, model=_fma64(), schedule=one_chain),
                   lib.set_threads, lib.environment, lib.candidates)
    monkeypatch.setitem(LIBRARIES, "fake-threads", fake)
    rec = library.recover_threading("fake-threads", _fma64(), ONE_THREAD, threads=2, shapes=((33, 31, 600),))
    assert rec.candidate is None and not rec.consistent and "none does" in rec.sheet()


_NUMPY = library.numpy_environment()


@pytest.mark.skipif(_NUMPY.kernel not in OPENBLAS_CORES or _NUMPY.default_threads < 2,
                    reason=f"numpy's BLAS here is not OpenBLAS' Haswell kernels (cores {OPENBLAS_CORES}) at 2 or more "
                           f"threads, whose one-thread DGEMM model the recovery starts from: {_NUMPY.describe()}")
def test_openblas_haswell_dgemm_threads_are_recovered_and_verified():
    """The real library at its default thread count: the cut recovered over the hand-written
    one-thread model verifies on fresh products past the thresholds and the blocking."""
    threads = _NUMPY.default_threads
    cand = LIBRARIES["numpy-fp64"].candidate_for("Haswell")
    rec = library.recover_threading("numpy-fp64", cand.unit(), cand.schedule, threads=threads,
                                    shapes=((41, 29, 700), (17, 200, 400), (57, 43, 1500)))
    assert rec.verified, rec.sheet()


def test_a_threaded_product_keeps_its_promotion_scales():
    """Scale factors applied at promotion reach every piece of a threaded product: each
    piece is the product of its rows and columns with their rows and columns of the factors."""
    unit = wb.preset("H100", "fp8_e4m3")
    rng = np.random.default_rng(5)
    A = wb.round(rng.standard_normal((33, 600)), "fp8_e4m3")
    B = wb.round(rng.standard_normal((600, 31)), "fp8_e4m3")
    sa, sb = np.exp2(rng.integers(-4, 5, (33, 5))), np.exp2(rng.integers(-4, 5, (5, 31)))
    sched = S.Schedule(inner="promote", promote_every=128, threading=HASWELL_2)
    D = wb.gemm(A, B, model=unit, schedule=sched, scale_a=sa, scale_b=sb)
    whole = wb.gemm(A, B, model=unit, accumulation="promote", promote_every=128, scale_a=sa, scale_b=sb)
    assert np.array_equal(D, whole)          # no region and no K blocks: the pieces change nothing
    assert not np.array_equal(D, wb.gemm(A, B, model=unit, accumulation="promote", promote_every=128))


@settings(max_examples=300, deadline=None)
@given(M=st.integers(1, 400), N=st.integers(1, 400), K=st.integers(1, 5000), threads=st.integers(1, 16),
       switch_ratio=st.sampled_from([2, 4, 8, 16, 32]), row_multiple=st.sampled_from([1, 2, 4, 8, 16, 32]),
       col_multiple=st.sampled_from([1, 2, 4, 8, 16, 32]), pieces=st.integers(1, 4),
       min_work=st.sampled_from([1, 65536, 262144]))
def test_a_cut_tiles_the_product_exactly(M, N, K, threads, switch_ratio, row_multiple, col_multiple, pieces,
                                         min_work):
    """Whatever the record and the product: the row ranges and the column ranges are
    non-empty, in order and cover every row and column once; at most ``threads`` x
    ``pieces`` row ranges and ``threads`` column ranges; one thread leaves it uncut."""
    t = S.Threading(threads=threads, min_work=min_work, switch_ratio=switch_ratio, row_multiple=row_multiple,
                    col_multiple=col_multiple, pieces=pieces)
    cut = t.cut(M, N, K)
    tm, tn = t.layout(M, N, K)
    assert 1 <= tm * tn <= threads
    if cut is None:
        assert tm * tn == 1
        return
    for ranges, n, most in ((cut[0], M, tm * tn * pieces), (cut[1], N, tm)):
        assert ranges[0][0] == 0 and ranges[-1][1] == n and len(ranges) <= most
        assert all(a < b for a, b in ranges) and all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
