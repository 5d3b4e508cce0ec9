"""Library probes (issue 40, item 2): :mod:`workbench.probes.library`.

Oracles: a sum whose tree is known (a left-to-right loop) for FPRev's counts, and the real
OpenBLAS on this machine (numpy float64) for the K blocking and the candidate schedule.
"""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import workbench as wb
from workbench import schedules as S
from workbench.probes.library import LIBRARIES, LibraryReport, fprev_counts, probe_library

_BLAS = [i for i in threadpool_info() if i.get("user_api") == "blas"]
haswell_openblas = pytest.mark.skipif(
    not _BLAS or any(i.get("internal_api") != "openblas" or i.get("architecture") not in ("Haswell", "Zen")
                     for i in _BLAS), reason=f"numpy's BLAS here is not OpenBLAS' Haswell/Zen kernels: {_BLAS}")


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
def test_numpy_fp64_is_the_openblas_schedule_for_even_m_and_the_report_says_where_not():
    """At 1 thread every output of even-M products (K to 4000, odd N) is the FMA chain in
    OpenBLAS' K blocks; the last row of an odd M (the one-row edge kernel) is not, and the
    report then says NOT verified, listing that row."""
    shapes = ((4, 7, 700), (6, 13, 257), (2, 3, 1000), (3, 5, 100))
    r = probe_library("numpy-fp64", shapes=shapes, fprev_shape=(4, 8, 64))
    assert r.repeatable
    by = {(s, k): (bad, rows) for s, k, bad, _, rows in r.results}
    for s in shapes[:3]:
        assert by[(s, "random")][0] == by[(s, "adversarial")][0] == 0, s
    assert by[((3, 5, 100), "random")][1] == [2]
    assert not r.verified and "NOT verified" in r.sheet() and "bit-identical" not in r.sheet()


def test_a_report_verifies_only_when_every_output_matched():
    ok = LibraryReport("x", "lib", True, True, "", "", "", [((2, 2, 2), "random", 0, 4, [])])
    assert ok.verified and "verified: bit-identical on all 4 outputs" in ok.sheet()
    assert not LibraryReport("x", "lib", False, True, "", "", "", ok.results).verified
    bad = LibraryReport("x", "lib", True, True, "", "", "", [((2, 2, 2), "random", 1, 4, [0])])
    assert not bad.verified and "NOT verified: 1 of 4" in bad.sheet()
    with pytest.raises(ValueError, match="unknown library target"):
        probe_library("numpy-fp17")
    assert wb.probes.library.LIBRARIES.keys() >= {"numpy-fp64", "numpy-fp32", "torch-cpu-fp32", "torch-cpu-bf16"}
