"""Checks shared by the inference tests: is a host library the float32 FMA chain, and is
an inference result honest.  The chain is the test's own (reference_mma), not the engine."""
from __future__ import annotations

from collections.abc import Callable

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
