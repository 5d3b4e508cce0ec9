"""Checks shared by the inference tests: is a host library the float32 FMA chain, and is
an inference result honest.  The chain is the test's own (reference_mma), not the engine.

:func:`assert_strongly_honest` does not take the result's word for it: a verified model is
replayed against the black box on fresh inputs (K past 256 too), a counterexample is run
again on both, and a "no model" answer is checked against the simplest model it rules out."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import reference_mma as ref


def is_fp32_fma_chain(matmul: Callable[..., object], in_dtype: type = np.float32) -> bool:
    """Whether ``matmul(A, B, C)`` is the float32 FMA chain with C added late
    (:func:`reference_mma.fp32_fma_chain_matmul`) on shapes like the probes' (1 to 256
    rows, K from 3 to 130), with ``in_dtype`` inputs (float32, or ml_dtypes.bfloat16).
    A BLAS may pick kernels with several partial sums by CPU and shape (OpenBLAS
    0.3.31 on AMD EPYC gives [2^30, 1, -2^30] @ ones = 1), so this is a property of
    the host that a test checks before it expects the chain to be recovered."""
    rng = np.random.default_rng(11)
    for m, K in ((1, 3), (8, 16), (64, 64), (256, 33), (32, 130)):
        A = (rng.standard_normal((m, K)) * np.exp2(rng.integers(-20, 20, (m, K)))).astype(in_dtype)
        A[:, 1::2] = -A[:, 0:K - 1:2]                     # exact cancellation ...
        A[:, 2::4] *= in_dtype(1.5)                       # ... and partial cancellation
        B = rng.standard_normal((K, m)).astype(in_dtype)
        C = rng.standard_normal((m, m)).astype(np.float32)
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        want = ref.fp32_fma_chain_matmul(A64, B64, C)
        got = np.asarray(matmul(A64, B64, C.astype(np.float64)), dtype=np.float64)
        if not np.array_equal(got, want):
            return False
    return True


def assert_honest(res) -> None:
    """A result is verified (bit-exact on its randomised comparison), or says why not:
    a counterexample or a note (issue 14: never one confident wrong answer)."""
    assert res.verified or res.counterexample is not None or res.notes, res.sheet()
    if res.verified:
        assert res.model is not None and res.counterexample is None, res.sheet()


#: (M, N, K) of the replay: a few outputs, one whole 64, and K past 256 (OpenBLAS' GEMM_Q
#: for DGEMM; a K blocking or a wider accumulator shows there) including an odd tail
REPLAY_SHAPES = ((3, 5, 7), (9, 4, 64), (5, 6, 300), (4, 3, 513))


def _in_format(x: np.ndarray, fmt: str) -> np.ndarray:
    """``x`` rounded into ``fmt`` by numpy/ml_dtypes casts (input preparation only; the
    workbench's own rounding for formats numpy cannot hold)."""
    casts: dict[str, Any] = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}
    if fmt == "bf16":
        import ml_dtypes

        casts["bf16"] = ml_dtypes.bfloat16
    if fmt in casts:
        return x.astype(casts[fmt]).astype(np.float64)
    import workbench as wb

    return np.asarray(wb.round(x, fmt), dtype=np.float64)


def _replay_inputs(rng: np.random.Generator, fin: str, fout: str, M: int, N: int, K: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random A, B, C (exponents spread over 2^-8..2^8), half of A's rows cancelling
    pairwise exactly (a sum order shows in what is left), signed zeros here and there."""
    A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-8, 9, (M, K)))
    B = rng.standard_normal((K, N)) * np.exp2(rng.integers(-8, 9, (K, N)))
    C = rng.standard_normal((M, N)) * np.exp2(rng.integers(-8, 9, (M, N)))
    A, B, C = _in_format(A, fin), _in_format(B, fin), _in_format(C, fout)
    half = rng.random(M) < 0.5
    A[half, 1::2] = -A[half, 0:K - 1:2]
    B[1::2] = B[0:K - 1:2]
    A[rng.random((M, K)) < 0.02] = -0.0
    return A, B, C


def _same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Equal as binary64 bit patterns (-0 != +0), any NaN equal to any NaN."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return (np.isnan(x) & np.isnan(y)) | (x.view(np.uint64) == y.view(np.uint64))


def _model_matmul(model: Any, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The proposed model run by ``workbench.gemm`` (a block-scaled model with unit scales,
    as ``workbench.probes.from_model`` runs it)."""
    import workbench as wb

    if model.scale_format is not None:
        return np.asarray(wb.probes.from_model(model).matmul(A, B, C), dtype=np.float64)
    return np.asarray(wb.gemm(A, B, C, model=model), dtype=np.float64)


def assert_strongly_honest(bb: Any, res: Any, *, seed: int = 4242) -> None:
    """:func:`assert_honest`, and each claim checked against the black box ``bb`` itself:

    * verified: the model gives the black box's bits on fresh random inputs of every
      :data:`REPLAY_SHAPES` (within ``bb.shape`` for a fixed-shape unit);
    * a counterexample: run again, the black box gives what the report says, the model
      too, and the two differ;
    * no model: the notes say so, and the black box is not the simplest unit the search
      covers (a float32 FMA chain with C late, for fp32/bf16 -> fp32 boxes);
    * a model neither verified nor refuted: the notes or ``unobservable`` say why
      (which parameters could not be determined, or why verification was impossible)."""
    assert_honest(res)
    fin, fout = bb.in_format, bb.out_format
    if res.verified:
        rng = np.random.default_rng(seed)
        for M, N, K in REPLAY_SHAPES:
            if bb.shape is not None:
                M, N, K = (min(x, s) for x, s in zip((M, N, K), bb.shape))
            A, B, C = _replay_inputs(rng, fin, fout, M, N, K)
            got, want = _model_matmul(res.model, A, B, C), np.asarray(bb.matmul(A, B, C), dtype=np.float64)
            ok = _same_bits(got, want)
            if not ok.all():
                i, j = map(int, np.argwhere(~ok)[0])
                raise AssertionError(f"verified model {res.model.describe()} differs from {bb.name} on a fresh "
                                     f"{M}x{N}x{K} product: {int((~ok).sum())} outputs, e.g. [{i}, {j}]: "
                                     f"model {got[i, j]!r}, black box {want[i, j]!r}\n{res.sheet()}")
        return
    cex = res.counterexample
    if cex is not None:
        assert res.model is not None, res.sheet()
        a, b, c = cex.a[None, :], cex.b[:, None], np.array([[cex.c]])
        d_bb = np.asarray(bb.matmul(a, b, c), dtype=np.float64)[0, 0]
        d_model = _model_matmul(res.model, a, b, c)[0, 0]
        assert _same_bits(d_bb, cex.black_box), (d_bb, str(cex))
        assert _same_bits(d_model, cex.model), (d_model, str(cex))
        assert not _same_bits(d_bb, d_model), f"the counterexample does not separate them: {cex}"
        return
    assert res.notes, res.sheet()
    if res.model is None:
        assert any("no model" in n for n in res.notes), res.sheet()
        if fout == "fp32" and fin in ("fp32", "bf16"):
            in_dtype: Any = np.float32
            if fin == "bf16":
                import ml_dtypes

                in_dtype = ml_dtypes.bfloat16
            assert not is_fp32_fma_chain(bb.matmul, in_dtype), f"'no model', yet {bb.name} is the fp32 FMA chain"
    else:
        assert res.unobservable or any("verification impossible" in n for n in res.notes), res.sheet()
