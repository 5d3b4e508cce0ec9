"""Randomised differential testing of a black box against a model: the random inputs
(Xie et al. 2025 Section 3.1.4: normal, log-uniform, random bit patterns, cancelling
and sparse tiny data) and the bitwise comparison of outputs.  Shared by the
verification (:mod:`workbench.probes.inference`) and the model-space search
(:mod:`workbench.probes.search`)."""
from __future__ import annotations

import math

import numpy as np

from .. import formats as _formats


def same_outputs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bitwise equality of values in one format held as float64 (NaN == NaN, -0 != +0)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    return both_nan | ((x == y) & (np.signbit(x) == np.signbit(y)))


# ------------------------------------------------------------- distributions
def random_inputs(distribution: str, rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                  M: int, K: int, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (M, K), B (K, N) in ``fin`` and C (M, N) in ``fout`` drawn from ``distribution``
    (one of :data:`DISTRIBUTIONS`)."""
    def rnd(x: np.ndarray, f: _formats.FloatFormat) -> np.ndarray:
        x = np.clip(x, -f.max, f.max)
        return _formats.round(x, f, "rne")

    def logu(shape: tuple[int, int], f: _formats.FloatFormat) -> np.ndarray:
        lo = math.log2(f.min_subnormal) if f.subnormals else f.emin
        e = rng.uniform(lo, f.emax + 1, size=shape)
        return rnd(np.where(rng.random(shape) < 0.5, -1.0, 1.0) * np.exp2(e), f)

    def bits(shape: tuple[int, int], f: _formats.FloatFormat) -> np.ndarray:
        raw = rng.integers(0, 2 ** f.width, size=shape, dtype=np.uint64)
        return _formats.from_bits(raw, f)

    if distribution == "normal":
        A, B = rnd(rng.standard_normal((M, K)), fin), rnd(rng.standard_normal((K, N)), fin)
        C = rnd(rng.standard_normal((M, N)), fout)
    elif distribution == "log-uniform":
        A, B, C = logu((M, K), fin), logu((K, N), fin), logu((M, N), fout)
        # keep products where the output can hold them most of the time
        C[rng.random(C.shape) < 0.5] = 0.0
    elif distribution == "bits":
        A, B, C = bits((M, K), fin), bits((K, N), fin), bits((M, N), fout)
    elif distribution == "cancellation":
        A, B = rnd(rng.standard_normal((M, K)), fin), rnd(rng.standard_normal((K, N)), fin)
        C = rnd(-(A @ B), fout)
    elif distribution == "sparse-tiny":
        A = logu((M, K), fin) * (rng.random((M, K)) < 0.5)
        B = logu((K, N), fin) * (rng.random((K, N)) < 0.5)
        A = rnd(np.abs(A) * np.sign(A), fin)
        B = rnd(B, fin)
        C = np.zeros((M, N))
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return A, B, C


DISTRIBUTIONS = ("normal", "log-uniform", "bits", "cancellation", "sparse-tiny")


__all__ = ["same_outputs", "random_inputs", "DISTRIBUTIONS"]
