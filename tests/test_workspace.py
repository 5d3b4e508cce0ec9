"""The workspace of decomposed operands (workbench.engine.operands): buffers that a
finished product hands back are reused by the next product of the same shape, never
while anything else holds them; results are the bits of a product on fresh memory."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import workbench as wb
from workbench.numbers import formats as F
from workbench.engine import core
from workbench.engine import operands as O


def _ops(rng: np.random.Generator, M: int, K: int, N: int, fmt: str = "fp16") -> tuple[np.ndarray, ...]:
    f = F.format(fmt)
    A = F.round(rng.standard_normal((M, K)), f, "rne", saturate=True)
    B = F.round(rng.standard_normal((K, N)), f, "rne", saturate=True)
    C = F.round(rng.standard_normal((M, N)), F.format("fp32"), "rne", saturate=True)
    return A, B, C


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.uint64)


@pytest.fixture(autouse=True)
def _empty_workspace():
    O.release_workspace()
    yield
    O.release_workspace()


def test_a_finished_product_hands_its_buffers_to_the_next() -> None:
    m = wb.preset("hopper", "fp16", "fp32")
    rng = np.random.default_rng(0)
    A, B, C = _ops(rng, 4, 70_000, 10)
    first = wb.gemm(A, B, C, model=m)
    held = O._WORKSPACE.free[:]
    assert len(held) == 4 and sum(a.nbytes for a in held) >= 4 * 4 * 70_000
    ops = core.prepare(m, A, B)
    assert any(ops.sa is a for a in held)          # taken from the workspace
    assert O._WORKSPACE.free == [a for a in held if not any(a is x for x in (ops.sa, ops.ea, ops.sb, ops.eb))]
    A2, B2, C2 = _ops(rng, 4, 70_000, 10)
    # a held Operands is not handed out again: the next products do not write into it
    sa, ea = ops.sa.copy(), ops.ea.copy()
    second = wb.gemm(A2, B2, C2, model=m)
    assert np.array_equal(ops.sa, sa) and np.array_equal(ops.ea, ea)
    assert np.array_equal(_bits(core.run_prepared(m, ops, C)), _bits(first))
    O.release_workspace()
    assert np.array_equal(_bits(wb.gemm(A2, B2, C2, model=m)), _bits(second))


def test_reused_buffers_give_the_bits_of_fresh_ones() -> None:
    """Products of one shape in a row, each on the buffers of the one before (left
    holding other values, Inf/NaN among them), against each computed on fresh memory."""
    rng = np.random.default_rng(1)
    for arch, fmt in (("volta", "fp16"), ("ampere", "bf16"), ("cdna1", "fp16"), ("cdna2", "bf16"), ("cdna3", "fp16")):
        m = wb.preset(arch, fmt, "fp32")
        runs = []
        for r in range(3):
            A, B, C = _ops(rng, 3, 50_000, 9, fmt)
            if r == 1:
                A[1, 7] = np.inf
                B[11, 2] = np.nan
            runs.append((A, B, C, wb.gemm(A, B, C, model=m)))
        for A, B, C, D in runs:
            O.release_workspace()
            assert np.array_equal(_bits(wb.gemm(A, B, C, model=m)), _bits(D))


def test_the_workspace_keeps_at_most_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(O, "WORKSPACE_BYTES", 3 << 20)
    m = wb.preset("hopper", "fp16", "fp32")
    rng = np.random.default_rng(2)
    for K in (300_000, 200_000, 100_000):
        wb.gemm(*_ops(rng, 2, K, 4), model=m)
        assert sum(a.nbytes for a in O._WORKSPACE.free) <= 3 << 20
    assert O._WORKSPACE.free          # the last product's buffers fit
    O.release_workspace()
    assert O._WORKSPACE.free == []


def test_small_arrays_and_foreign_arrays_stay_out() -> None:
    m = wb.preset("hopper", "fp16", "fp32")
    rng = np.random.default_rng(3)
    wb.gemm(*_ops(rng, 8, 64, 8), model=m)
    assert O._WORKSPACE.free == []
    mine = np.zeros((10, 1 << 20), dtype=np.int32)
    O.recycle(O.Operands(10, 1 << 20, 1, None, None, mine, mine, mine[:, :5], None))
    assert O._WORKSPACE.free == []


def test_threads_sharing_the_workspace_get_their_own_buffers() -> None:
    m = wb.preset("ampere", "fp16", "fp32")
    rng = np.random.default_rng(4)
    cases = [_ops(rng, 3, 90_000, 6) for _ in range(8)]
    want = []
    for A, B, C in cases:
        O.release_workspace()
        want.append(wb.gemm(A, B, C, model=m))
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: wb.gemm(*c, model=m), cases * 3))
    for g, w in zip(got, want * 3):
        assert np.array_equal(_bits(g), _bits(w))
