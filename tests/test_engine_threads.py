"""Threads: the engine chooses them from the work alone (issue 21), and results never depend on them.

``threads_used`` is 1 below ``PARALLEL_MIN_WORK`` and numba's thread count from there,
whatever the load average says (it is not read: a machine that reports any load gives the
same choice); a product above the threshold gives the same bits on one thread and on
numba's threads, for one preset of every kind.
"""
from __future__ import annotations

import os

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.numbers import formats as _formats
from workbench.engine import core, operands
from workbench._runtime.threads import PARALLEL_MIN_WORK, threads_for, threads_used

KINDS = [("V100", "fp16", "fp32", None), ("A100", "fp64", "fp64", None), ("MI100", "fp16", "fp32", None),
         ("MI250X", "fp16", "fp32", None), ("MI300X", "fp8_e4m3fnuz", "fp32", None),
         ("B200", "fp8_e4m3", "fp32", "mx"), ("B200", "fp4_e2m1", "fp32", "nvfp4")]


@settings(max_examples=50, deadline=None)
@given(work=st.integers(0, 1 << 40), load=st.floats(0, 1000))
def test_threads_depend_on_the_work_only(work, load):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "getloadavg", lambda: (load, load, load))
        expected = 1 if work < PARALLEL_MIN_WORK else numba.get_num_threads()
        assert threads_used(work) == expected
        with threads_for(work):
            assert numba.get_num_threads() == expected
    assert not hasattr(operands, "machine_busy")


@pytest.mark.parametrize("device,fin,fout,variant", KINDS)
def test_results_do_not_depend_on_the_threads(device, fin, fout, variant):
    model = wb.preset(device, fin, fout, variant=variant)
    rng = np.random.default_rng(7)
    M, K, N = 16, 1024, 16                      # 2^18 multiply-adds: threaded when numba has threads
    assert M * K * N >= PARALLEL_MIN_WORK
    f = _formats.format(fin)
    A = _formats.round(rng.standard_normal((M, K)) * 2.0 ** rng.integers(-8, 8, (M, K)), f, "rne", saturate=True)
    B = _formats.round(rng.standard_normal((K, N)), f, "rne", saturate=True)
    C = wb.round(rng.standard_normal((M, N)), fout)
    kwargs = {}
    if model.kind in ("st-fdpa", "gst-fdpa"):
        blocks = -(-K // model.k_block)
        sf = _formats.format(model.scale_format)
        kwargs = {"scale_a": _formats.round(2.0 ** rng.integers(-3, 4, (M, blocks)), sf, "rne"),
                  "scale_b": _formats.round(2.0 ** rng.integers(-3, 4, (blocks, N)), sf, "rne")}
    many = wb.gemm(A, B, C, model=model, **kwargs)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = wb.gemm(A, B, C, model=model, **kwargs)
    finally:
        numba.set_num_threads(n)
    np.testing.assert_array_equal(one.view(f"u{one.itemsize}"), many.view(f"u{many.itemsize}"))


@settings(max_examples=30, deadline=None)
@given(outer=st.integers(PARALLEL_MIN_WORK, 1 << 40), inner=st.integers(0, PARALLEL_MIN_WORK - 1))
def test_small_stages_of_a_large_call_keep_its_threads(outer, inner):
    n = numba.get_num_threads()
    with threads_for(outer):
        with threads_for(inner):
            assert numba.get_num_threads() == n
    with threads_for(inner):                      # outside a large call small work runs on one thread
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == n


@pytest.mark.parametrize("device,fin,fout", [("MI100", "fp32", "fp32"), ("H100", "fp16", "fp32")])
def test_a_large_gemm_never_changes_the_thread_count(device, fin, fout):
    """Every stage of a product of 2^18 multiply-adds and more (checking C, decomposing,
    converting) runs on the product's threads: switching the pool's size between stages
    costs more than the small stages themselves."""
    model = wb.preset(device, fin, fout)
    rng = np.random.default_rng(3)
    A = wb.round(rng.standard_normal((64, 128)), fin)
    B = wb.round(rng.standard_normal((128, 64)), fin)
    C = wb.round(rng.standard_normal((64, 64)), fout)
    assert 64 * 128 * 64 >= PARALLEL_MIN_WORK and A.size + B.size < PARALLEL_MIN_WORK
    calls = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numba, "set_num_threads", lambda k: calls.append(k))
        wb.gemm(A, B, C, model=model)
        core.run(model, A, B, C)
    assert calls == []
