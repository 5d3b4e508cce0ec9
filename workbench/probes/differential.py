"""Randomised differential testing of a black box against a model: the random inputs
(Xie et al. 2025 Section 3.1.4: normal, log-uniform, random bit patterns, cancelling
sparse tiny data, a few terms next to a larger c, sums that carry into the next binade) and the bitwise comparison of outputs.  Shared by the
verification (:mod:`workbench.probes.inference`) and the model-space search
(:mod:`workbench.probes.search`)."""
from __future__ import annotations

import math
from collections.abc import Callable

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
    elif distribution in ("sparse", "carry"):
        A, B, C = _few_terms(distribution == "carry", rng, fin, fout, M, K, N, rnd)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return A, B, C


def _few_terms(carry: bool, rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
               M: int, K: int, N: int, rnd: Callable[[np.ndarray, _formats.FloatFormat], np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One to four products per row of A at random positions (``carry``: the last one or
    two, in the last block: a block without products after the carry would cut the
    sum to the window again), spread over a few dozen binades below the row's largest, times B
    entries in [1, 4); C next to them.  Units whose window is narrower
    than the output (F < p_out), or with one or two products per block, differ only on
    such inputs: two terms that meet alone in one block, c much larger than the
    products, and (``carry``) c just below a power of two with products of its sign,
    so that the sum carries into the next binade and the final rounding sees the bits
    the alignment kept (Xie et al. 2025 Section 3.1.4: inputs built for the features)."""
    span = fout.p + 16
    lo = math.log2(fin.min_subnormal) if fin.subnormals else fin.emin
    hi = min(fin.emax, fout.emax - span // 2 - 2)     # room for c above the products
    low = min(max(int(lo) + span // 2, fout.emin - span // 2), hi)    # ... and products c can reach
    top = rng.integers(low, hi + 1, size=M).astype(float)
    # a quarter of the rows (paired with their own column of B, as the search's batteries
    # pair them) with products in the output's subnormal range, down to half its smallest
    # subnormal: B's column carries part of the exponent, A keeps its top above A's
    # smallest value.  Only such outputs tell a unit that flushes subnormal outputs from
    # one that rounds them, or the final rounding of a window narrower than the output
    floor = math.floor(math.log2(fout.min_subnormal)) - 1 if fout.subnormals else fout.emin - 3
    lift = np.zeros(M)
    near = (rng.random(M) < 0.25) & (np.arange(M) < N)
    top[near] = rng.integers(floor, min(fout.emin + 1, hi) + 1, size=int(near.sum()))
    lift[near] = np.clip(math.ceil(lo) + 2 - top[near], 0, max(-fin.emin, 0))
    sign = np.where(rng.random(M) < 0.5, -1.0, 1.0)    # one sign per row of A (carry)
    A = np.zeros((M, K))
    for i in range(M):
        if carry:   # the last product, or the last two when K is even: in the last block whatever L is
            where = np.arange(K - (2 if K % 2 == 0 and K > 1 and rng.random() < 0.5 else 1), K)
        else:
            where = rng.choice(K, size=min(K, int(rng.integers(1, 5))), replace=False)
        e = top[i] - np.concatenate(([0], rng.integers(0, span, size=where.size - 1)))
        s = sign[i] if carry else np.where(rng.random(where.size) < 0.5, -1.0, 1.0)
        A[i, where] = s * (1 + rng.random(where.size)) * np.exp2(e + lift[i])
    A = rnd(A, fin)
    lift_b = np.zeros(N)
    lift_b[:min(M, N)] = lift[:N]
    B = rnd((1 + rng.random((K, N))) * np.exp2(rng.integers(0, 2, size=(K, N)) - lift_b), fin)
    if not carry:
        B *= np.where(rng.random((K, N)) < 0.5, -1.0, 1.0)
        ec = np.minimum(top[:, None] + rng.integers(-span, span, size=(M, N)), fout.emax + 1)
        C = np.where(rng.random((M, N)) < 0.25, 0.0, np.where(rng.random((M, N)) < 0.5, -1.0, 1.0)
                     * (1 + rng.random((M, N))) * np.exp2(ec))
    else:   # a power of two above the products less u times their sum: c + sum crosses it when u < 1
        P = A @ B
        mag = np.exp2(np.ceil(np.log2(np.where(P == 0, 1.0, np.abs(P)))) + rng.integers(1, span // 2, size=(M, N)))
        C = np.where(P == 0, 0.0, np.sign(P) * mag - rng.uniform(0.5, 1.5, size=(M, N)) * P)
    C[~(np.abs(C) < fout.max)] = 0.0              # beyond the output's range (inf for fp64 included)
    return A, B, rnd(C, fout)


DISTRIBUTIONS = ("normal", "log-uniform", "bits", "cancellation", "sparse-tiny", "sparse", "carry")


__all__ = ["same_outputs", "random_inputs", "DISTRIBUTIONS"]
