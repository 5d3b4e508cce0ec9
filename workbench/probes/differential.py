"""Randomised differential testing of a black box against a model: the random inputs
(Xie et al. 2025 Section 3.1.4: normal, log-uniform, random bit patterns, cancelling
sparse tiny data, a few terms next to a larger c, sums that carry into the next binade,
sums that are ties of the output format next to a tiny term) and the bitwise comparison of
outputs.  Shared by the
verification (:mod:`workbench.probes.inference`) and the model-space search
(:mod:`workbench.probes.search`)."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..numbers import formats as _formats


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
    elif distribution == "subnormal-products" and fin.subnormals:
        # a subnormal operand times a large one: the product's significand is not
        # normalised, so its bits sit below the exponent sum that anchors the window
        # (a T-FDPA F or sticky bit one unit apart shows only here, with a product of
        # normal size: tf32 2^-130 * 2^127)
        sub = np.floor(np.exp2(rng.uniform(0, fin.man_bits, size=(M, K)))) * fin.min_subnormal   # log-uniform
        A = np.where(rng.random((M, K)) < 0.5, -sub, sub) * (rng.random((M, K)) < 0.7)
        eb = np.clip(np.round(rng.uniform(-8, 8, size=(K, N))) - fin.emin, fin.emin, fin.emax)
        B = rnd(np.where(rng.random((K, N)) < 0.5, -1.0, 1.0) * rng.uniform(1, 2, size=(K, N)) * np.exp2(eb), fin)
        C = rnd(rng.standard_normal((M, N)), fout) * (rng.random((M, N)) < 0.5)
    elif distribution == "subnormal-products":
        A, B, C = logu((M, K), fin), logu((K, N), fin), np.zeros((M, N))
    elif distribution in ("sparse", "carry"):
        A, B, C = _few_terms(distribution == "carry", rng, fin, fout, M, K, N, rnd)
    elif distribution == "ties":
        A, B, C = _ties(rng, fin, fout, M, K, N)
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
    tiny_b: dict[int, tuple[int, int]] = {}     # rows of three large products: (small one's place, B's exponent)
    for i in range(M):
        if carry:   # the last product, or the last two when K is even: in the last block whatever L is
            where = np.arange(K - (2 if K % 2 == 0 and K > 1 and rng.random() < 0.5 else 1), K)
        else:
            where = rng.choice(K, size=min(K, int(rng.integers(1, 5))), replace=False)
        e = top[i] - np.concatenate(([0], rng.integers(0, span, size=where.size - 1)))
        s = sign[i] if carry else np.where(rng.random(where.size) < 0.5, -1.0, 1.0)
        sig = 1 + rng.random(where.size)
        if carry and K % 4 == 0 and i < N and rng.random() < 0.5:
            # three products of one exponent with significands in [2.7, 4) and a small one of the
            # other sign in the last four places (one block for every L >= 4 dividing K): the
            # products alone carry three binades past their exponent, and the fused sum holds
            # bits below the output's last one that only the final rounding decides (a unit's
            # rne and rz parted so: fp8 -> fp32, L 8, F 21, c late); B's entries set below
            where = np.arange(K - 4, K)
            small = int(rng.integers(4))
            e = np.full(4, top[i])
            d = int(rng.integers(fout.p // 2, span))
            e[small] = top[i] - (d + 1) // 2           # the rest of 2^-d below, in B's entry
            tiny_b[i] = (small, d // 2)
            s = np.full(4, sign[i])
            s[small] = -sign[i]
            sig = 1.65 + 0.35 * rng.random(4)
        A[i, where] = s * sig * np.exp2(e + lift[i])
    A = rnd(A, fin)
    lift_b = np.zeros(N)
    lift_b[:min(M, N)] = lift[:N]
    B = (1 + rng.random((K, N))) * np.exp2(rng.integers(0, 2, size=(K, N)) - lift_b)
    for i, (small, down) in tiny_b.items():
        B[K - 4:, i] = (1.65 + 0.35 * rng.random(4)) * np.exp2(-lift_b[i])
        B[K - 4 + small, i] *= 2.0 ** -down
    B = rnd(B, fin)
    if not carry:
        B *= np.where(rng.random((K, N)) < 0.5, -1.0, 1.0)
        ec = np.minimum(top[:, None] + rng.integers(-span, span, size=(M, N)), fout.emax + 1)
        with np.errstate(over="ignore"):          # 2^(emax + 1) of fp64 is inf: zeroed below
            C = np.where(rng.random((M, N)) < 0.25, 0.0, np.where(rng.random((M, N)) < 0.5, -1.0, 1.0)
                         * (1 + rng.random((M, N))) * np.exp2(ec))
    else:   # a power of two above the products less u times their sum: c + sum crosses it when u < 1
        P = A @ B
        mag = np.exp2(np.ceil(np.log2(np.where(P == 0, 1.0, np.abs(P)))) + rng.integers(1, span // 2, size=(M, N)))
        C = np.where(P == 0, 0.0, np.sign(P) * mag - rng.uniform(0.5, 1.5, size=(M, N)) * P)
    for i in tiny_b:
        C[i, i] = 0.0                               # the products alone carry
    C[~(np.abs(C) < fout.max)] = 0.0              # beyond the output's range (inf for fp64 included)
    return A, B, rnd(C, fout)


def _ties(rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat, M: int, K: int,
          N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row i of A with column i of B: a dot product whose exact value is a tie of the
    output format (halfway between two neighbours) or a tie moved by a tiny amount,
    built in one of three ways chosen at random per row:

    * ``product``: one product a * b whose p_out + 1 significant bits end in the half-ulp
      bit (where 2 p_in >= p_out + 1), next to c = +-2^-d of its ulp (d up to 48) or 0;
    * ``c``: c a random value of the output, one product its half ulp times
      (1 +- 2^-d) (d below 2 p_in) or exactly its half ulp;
    * ``chunks``: the tie's bits split into chunks of ``fin``'s precision over the
      first products (each chunk times a power of two), c tiny or 0.

    Units that differ only in how many bits below the output's last one a fused sum
    keeps (F wider than the output, a sticky bit) or in how ties are broken part only
    on such inputs: a unit with one product per block and F = 22 or 30 on bf16 -> fp16
    parted on about one random input in 20,000 of the other distributions.  Other pairs
    (i, j) and rows past N are zero."""
    A, B, C = np.zeros((M, K)), np.zeros((K, N)), np.zeros((M, N))
    lo = fin.emin - (fin.p - 1 if fin.subnormals else 0)        # the smallest power of two in fin

    def in_fin(x: float) -> bool:
        return x == 0 or _formats.round(np.array([x]), fin, "rne")[0] == x

    def tiny(ulp_e: int) -> float:
        x = (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** (ulp_e - int(rng.integers(1, 49)))
        return x if abs(x) >= fout.min_subnormal and rng.random() < 0.75 else 0.0

    ways = ["c", "chunks"] + (["product"] if 2 * fin.p >= fout.p + 1 else [])
    e_lo = max(fout.emin, 2 * lo + fout.p + 2, -1074 + fout.p + 48)   # the tiny terms stay float64 values
    e_hi = min(fout.emax - 1, 2 * fin.emax)
    if e_hi < e_lo:
        return A, B, C
    for i in range(min(M, N)):
        sign = -1.0 if rng.random() < 0.5 else 1.0
        E = int(rng.integers(e_lo, e_hi + 1))
        way = ways[int(rng.integers(len(ways)))]
        terms: list[tuple[float, float]] = []
        c = 0.0
        if way == "product":          # odd significands whose product has exactly p_out + 1 bits
            la = int(rng.integers(max(1, fout.p + 1 - fin.p), fin.p + 1))
            lb = fout.p + 1 - la + int(rng.integers(0, 2))
            lb = min(max(lb, 1), fin.p)
            ia = int(rng.integers(2 ** (la - 1), 2 ** la)) | 1
            ib = int(rng.integers(2 ** (lb - 1), 2 ** lb)) | 1
            if (ia * ib).bit_length() != fout.p + 1:
                continue
            a, b = ia * 2.0 ** (E // 2 - la + 1), ib * 2.0 ** (E - E // 2 - lb + 1)
            if not (in_fin(a) and in_fin(b)):
                continue
            terms = [(a, b)]
            c = tiny(E + 1 - fout.p)
        elif way == "c":              # c on the grid of the output, a product at its half ulp (1 +- 2^-d)
            m = int(rng.integers(2 ** (fout.p - 1), 2 ** fout.p))
            c = m * 2.0 ** (E - fout.p + 1)
            d = int(rng.integers(1, 2 * fin.p))
            scale = 1.0 + (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** -d if rng.random() < 0.75 else 1.0
            half = 2.0 ** (E - fout.p)
            if scale == 1.0:
                pair = as_product(half, fin)
            else:                     # half * scale as a * b: a = half's power times (1 +- 2^-d1) ...
                d1 = min(d, fin.p - 1)
                pa = 1.0 + math.copysign(2.0 ** -d1, scale - 1.0)
                pb = scale / pa
                pair = (pa * 2.0 ** (E - fout.p - (E - fout.p) // 2), pb * 2.0 ** ((E - fout.p) // 2))
                if not (in_fin(pair[0]) and in_fin(pair[1])):
                    pair = None
            if pair is None:
                continue
            terms = [pair]
            c = sign * c
        else:                         # the tie's bits, fin.p at a time, from the top
            T = 2 * int(rng.integers(2 ** (fout.p - 1), 2 ** fout.p)) + 1
            unit = E - fout.p
            for top in range(fout.p + 1, 0, -fin.p):
                width = min(fin.p, top)
                part = (T >> (top - width)) & ((1 << width) - 1)
                if part:
                    pair = as_product(part * 2.0 ** (unit + top - width), fin)
                    if pair is None:
                        break
                    terms.append(pair)
            else:
                c = tiny(unit + 1)
            if c == 0.0 and len(terms) * fin.p < fout.p + 1 - fin.p:
                continue
        if len(terms) > K:
            continue
        for k, (a, b) in enumerate(terms):
            A[i, k], B[k, i] = sign * a, b
        C[i, i] = c
    return A, B, C


def as_product(v: float, fin: _formats.FloatFormat) -> tuple[float, float] | None:
    """``v = a * b`` with ``a``, ``b`` values of ``fin`` and ``b`` a power of two (the
    exponent shared between them when the range allows), or None."""
    if v == 0.0 or not math.isfinite(v):
        return None
    lo = fin.emin - (fin.p - 1 if fin.subnormals else 0)
    top = math.floor(math.log2(abs(v)))
    for e in (min(max(top - fin.emax // 2, lo), fin.emax), min(max(top, lo), fin.emax), 0):
        a, b = v / 2.0 ** e, 2.0 ** e
        if _formats.is_representable(np.array([a, b]), fin).all():
            return a, b
    return None


@functools.lru_cache(maxsize=32)
def _tie_significands(fin: _formats.FloatFormat, fout: _formats.FloatFormat) -> np.ndarray:
    """Pairs (ma, mb) of ``fin`` significands (integers of fin.p bits) whose product is
    an odd integer of fout.p + 1 bits times a power of two: a product exactly halfway
    between two neighbours of ``fout`` (none when 2 fin.p < fout.p + 1, or fin wider
    than 12 bits of significand: the table would be too large)."""
    p = fin.p
    if 2 * p < fout.p + 1 or p > 12:
        return np.zeros((0, 2), dtype=np.int64)
    m = np.arange(2 ** (p - 1), 2 ** p, dtype=np.int64)
    prod = m[:, None] * m[None, :]
    low = prod & -prod                                   # the lowest set bit
    odd = prod // low
    ok = (odd >= 2 ** fout.p) & (odd < 2 ** (fout.p + 1))
    ia, ib = np.nonzero(ok)
    return np.stack([m[ia], m[ib]], axis=1)


def _tie_product_row(rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                     w: int) -> tuple[float, float, float] | None:
    """(a, b, c): a * b exactly halfway between two ``fout`` neighbours at exponent E and
    c = +-2^(E - w - 1 + j), j in -2..1: with one product per block (L = 1) the tiny
    term can only be c.  None when the formats cannot build it."""
    tab = _tie_significands(fin, fout)
    if not len(tab):
        return None
    ma, mb = (int(v) for v in tab[int(rng.integers(len(tab)))])
    carry = (ma * mb).bit_length() - 1 - 2 * (fin.p - 1)          # 0 or 1
    E = int(rng.integers(fout.emin, fout.emax))
    ea = int(rng.integers(fin.emin, fin.emax + 1))
    eb = E - carry - ea
    if not fin.emin <= eb <= fin.emax:
        eb = min(max(eb, fin.emin), fin.emax)
        ea = E - carry - eb
        if not fin.emin <= ea <= fin.emax:
            return None
    x = (-1.0 if rng.random() < 0.5 else 1.0) * ma * 2.0 ** (ea - fin.p + 1)
    y = mb * 2.0 ** (eb - fin.p + 1)
    tiny = (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** (E - w - 1 + int(rng.integers(-2, 2)))
    if abs(tiny) < fout.min_subnormal or not _formats.is_representable(np.array([x, y]), fin).all():
        return None
    return x, y, tiny


def _random_product(rng: np.random.Generator, fin: _formats.FloatFormat) -> tuple[float, float, int, int, int]:
    """(xa, xb, ea, eb, E): two significands of ``fin`` in [1, 2) and two exponents of its
    normal range, drawn uniformly, and the exponent E of their product X = xa xb 2^(ea + eb)
    (the large term of the tie rows)."""
    xa, xb = (float(rng.integers(2 ** (fin.p - 1), 2 ** fin.p)) * 2.0 ** (1 - fin.p) for _ in range(2))
    ea = int(rng.integers(fin.emin, fin.emax + 1))
    eb = int(rng.integers(fin.emin, fin.emax + 1))
    return xa, xb, ea, eb, ea + eb + (1 if xa * xb >= 2.0 else 0)


def _tie_in_c_row(rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                  w: int) -> tuple[float, float, float] | None:
    """(a, b, c): X = a * b a product of ``fin`` at exponent E and c = +-h +- 2^(E - w - 1 + j),
    j in -2..1, h half an ulp of X in ``fout``: the output tie and the tiny term both in c.
    Where no product of ``fin`` lies at an output tie (fp8, or fp16/bf16 into fp32: a
    product holds too few bits) and one product and c make the block (L = 1), only c
    can hold them: a window of w bits below E truncates c to the tie (round to nearest
    then goes to even), a wider one keeps the tiny term.  None when the formats cannot
    build it."""
    xa, xb, ea, eb, E = _random_product(rng, fin)
    j = int(rng.integers(-2, 2))
    if not (fout.emin + 1 < E - w - 1 + j and E < fout.emax):
        return None
    h = 2.0 ** (E - fout.p)
    tiny = (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** (E - w - 1 + j)
    cv = (-1.0 if rng.random() < 0.5 else 1.0) * h + tiny
    x = (-1.0 if rng.random() < 0.5 else 1.0) * xa * 2.0 ** ea
    y = xb * 2.0 ** eb
    if (cv == 0.0 or not _formats.is_representable(np.array([x, y]), fin).all()
            or not _formats.is_representable(np.array([cv]), fout)[0]):
        return None
    return x, y, cv


def _tail_tie_row(rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                  w: int) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """Two products for the first two places of a block: X, and T = h (1 + tail), h half
    an ulp of X in ``fout`` (an output tie where X fits the output: 2 fin.p <= fout.p),
    whose own tail bits start about at the window's edge
    ``2^(E - w - 1)`` (E the exponent of X): a window of w bits truncates T to the tie h
    (round to nearest then goes to even), a wider one - or one with a sticky bit - keeps
    the tail and leaves the tie.  Units with two products per block and c added late
    (c cannot hold X there) see a window's edge only on such rows.  None when the
    formats cannot build it."""
    p = fin.p
    z = w + 1 - fout.p + int(rng.integers(-1, 2))       # zero bits of T below h
    # T's significand ma * mb in [2^t, 2^t + 2^(t - z)); just above 2^(2p - 2) a product of two
    # p-bit significands has a bit at 2^(p - 1) or above, so z >= p - 1 needs t = 2p - 1
    t = 2 * p - 1 if z >= p - 1 else 2 * p - 2 + int(rng.integers(0, 2))
    if z < 1 or t - z < 0:
        return None
    for _ in range(20):
        ma = int(rng.integers(2 ** (p - 1), 2 ** p))
        lo_b = max(-(-(2 ** t + 1) // ma), 2 ** (p - 1))
        hi_b = min((2 ** t + 2 ** (t - z) - 1) // ma, 2 ** p - 1)
        if lo_b <= hi_b:
            break
    else:
        return None
    mb = int(rng.integers(lo_b, hi_b + 1))
    xa, xb, ea, eb, E = _random_product(rng, fin)
    x_sign = -1.0 if rng.random() < 0.5 else 1.0
    t_sign = -1.0 if rng.random() < 0.5 else 1.0
    if not fout.emin + fout.p < E < fout.emax:
        return None
    eT = E - fout.p - t                                # T = ma * mb * 2^eT
    e1 = eT // 2 + p - 1
    vals = np.array([x_sign * xa * 2.0 ** ea, xb * 2.0 ** eb, t_sign * ma * 2.0 ** (e1 - p + 1),
                     mb * 2.0 ** (eT - e1 + p - 1)])
    if not _formats.is_representable(vals, fin).all():
        return None
    return (float(vals[0]), float(vals[1])), (float(vals[2]), float(vals[3]))


def _short_significand(rng: np.random.Generator, p: int) -> float:
    """A significand in [1.5, 2) of q <= p bits, q drawn from 2..p: short significands keep
    a sum of such products few bits wide, so that c can cancel it exactly."""
    q = int(rng.integers(2, p + 1))
    return float(rng.integers(3 * 2 ** (q - 2), 2 ** q)) * 2.0 ** (1 - q)


def window_edges(rng: np.random.Generator, fin: _formats.FloatFormat, fout: _formats.FloatFormat,
                 windows: Sequence[int], rows: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dot products (``rows`` of length ``K``, with c) that part alignment windows of
    the widths ``windows`` from one bit more: a large term X (c; or, for units that
    add c late or re-align sums, one product or two halves of it in random places, so
    that sums of groups carry into X's binade), often a product at X's half ulp (a tie
    of the output), and a tiny product of either sign at ``2^(E - w - 1 + j)``, j in
    -2..1, E the exponent of X, w a width drawn from ``windows``: a window of w
    fractional bits drops it where one of w + 1 keeps it, and it decides the rounding
    of the tie (or, without the half-ulp product, of the exact X in a directed mode); in
    a quarter of the rows with a product ``2^(E - w)`` of the other sign beside it (a
    narrower window with a sticky bit then rounds the other way).
    A fifth of the rows hold one product exactly at an output tie and the tiny term in c
    (units with one product per block see a tiny term only there) or, half of them, in a
    product beside it in a block of two (units with two products per block and c late);
    where no product of the input format lies at an output tie, one product X and the
    tie and the tiny term both in c (:func:`_tie_in_c_row`);
    about a seventh of the rest hold, in the first two places, X and a tie product whose
    own tail falls below the window (:func:`_tail_tie_row`: units with two products per
    block and c late see a window's edge only there; where the formats cannot build it,
    another kind of row); a fifth of the rest fill the row with one large product of one
    sign and put the edge bit in c or, with c 0, in a product in the first place (the sum
    carries binades past the output's precision, so a window narrower than the output, or finer by a bit, shows its final
    rounding there).
    Half the rows with X in c instead cancel it with n equal products P, s binades below
    c, down to a small R whose last bits are the tiny term's (TR-/GTR-FDPA re-align the
    products' sum to c's exponent with F2 + 1 bits, the window :func:`windows_of` gives:
    F2 = F + s - 2 and F + s - 1 part only after such a cancellation).
    Units whose F (or F2, or the groups' F) differ by one part there and, rarely,
    anywhere else (fp8 -> fp16, one block of two products, F = 30 against 31: about
    one random input in 20,000).  Rows that the formats' ranges cannot build are left
    zero."""
    a, b, c = np.zeros((rows, K)), np.zeros((rows, K)), np.zeros(rows)
    if not windows or K < 2:
        return a, b, c
    lo = fin.emin - (fin.p - 1 if fin.subnormals else 0)    # the smallest power of two in fin
    e_hi = fout.emax                   # X up to the output's top binade (a product's: skipped if too large)
    for i in range(rows):
        w = int(windows[int(rng.integers(len(windows)))])
        e_lo = max(fout.emin + 1, 2 * lo + w + 1, -1074 + fout.p + 60)   # the tiny product can exist
        if e_hi < e_lo:
            continue
        if rng.random() < 0.2:          # X one product at an output tie, the tiny term c
            row = _tie_product_row(rng, fin, fout, w)
            if row is None:             # no product at a tie: X a product, the tie and the tiny term in c
                row = _tie_in_c_row(rng, fin, fout, w)
                if row is not None:
                    k = int(rng.integers(K))
                    a[i, k], b[i, k], c[i] = row
                continue
            x, y, tiny_c = row
            beside = as_product(tiny_c, fin) if rng.random() < 0.5 else None
            if beside is None:
                k = int(rng.integers(K))
                a[i, k], b[i, k], c[i] = x, y, tiny_c
            else:   # or the tiny term a product beside X in a block of two (units adding c late)
                k = 2 * int(rng.integers(K // 2))
                a[i, k], b[i, k] = x, y
                a[i, k + 1], b[i, k + 1] = beside
            continue
        if rng.random() < 0.15:         # X and a tie product whose own tail falls below the window
            pair = _tail_tie_row(rng, fin, fout, w)
            if pair is not None:
                (a[i, 0], b[i, 0]), (a[i, 1], b[i, 1]) = pair
                continue
        if K >= 3 and rng.random() < 0.2:
            # every product one large P of c's sign, c with a bit at the window's edge: the sum
            # carries log2(K + 1) binades above the window's top, so its last bits fall below
            # the output's ulp and the final rounding shows (a window narrower than the output
            # hides it everywhere else); significands in [1.75, 2), drawn where the format has
            # several, so that the sum's last bits vary (with the largest one alone an fp8_e4m3
            # block's sum is always even at the output's ulp)
            top = 2 ** fin.p
            ma, mb = (float(rng.integers(max(top // 2, 7 * top // 8), top)) * 2.0 ** (1 - fin.p) for _ in range(2))
            j = int(rng.integers(-1, 2))
            with_c = rng.random() < 0.5
            # P's exponent eP (ma * mb is in [2, 4)): the window's edge below it stays in the
            # output's range, and without c a product of the input format can hold it
            eP_lo = max(fout.emin + w + 1, 2 * fin.emin + 1)
            if not with_c:
                eP_lo = max(eP_lo, 2 * lo + 1 + w - j)
            eP_hi = min(fout.emax - 9, 2 * fin.emax + 1)
            if w - j > fout.p - 1 or eP_lo > eP_hi:
                continue
            eP = int(rng.integers(eP_lo, eP_hi + 1))
            ea = int(rng.integers(max(fin.emin, eP - 1 - fin.emax), min(fin.emax, eP - 1 - fin.emin) + 1))
            eb = eP - 1 - ea
            sign = -1.0 if rng.random() < 0.5 else 1.0
            x, y = sign * ma * 2.0 ** ea, mb * 2.0 ** eb
            if with_c:
                cv = sign * (2.0 ** eP + 2.0 ** (eP - w + j))
                if not (_formats.is_representable(np.array([x, y]), fin).all()
                        and _formats.is_representable(np.array([cv]), fout)[0]):
                    continue
                a[i, :], b[i, :], c[i] = x, y, cv
                continue
            # or c = 0 and the edge bit a product of either sign in the first place: c's exponent,
            # above the products', would move the window up by one bit, and a window one bit finer
            # than the output at the carried sum's binade shows its final rounding only without it
            edge = as_product((-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** (eP - 1 - w + j), fin)
            if edge is None or not _formats.is_representable(np.array([x, y]), fin).all():
                continue
            a[i, :], b[i, :], c[i] = x, y, 0.0
            a[i, 0], b[i, 0] = edge
            continue
        E = int(rng.integers(e_lo, e_hi + 1))
        big = 0 if K < 3 else int(rng.integers(0, 3))             # X in c, in one product, in two
        bits = fout.p if big == 0 else fin.p                       # a product holds fin.p bits
        X = float(rng.integers(2 ** (bits - 1), 2 ** bits)) * 2.0 ** (E - bits + 1)
        X = -X if rng.random() < 0.5 else X
        half = math.copysign(2.0 ** (E - fout.p), X) if rng.random() < 0.75 else 0.0
        tiny = (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** (E - w - 1 + int(rng.integers(-2, 2)))
        terms = [] if big == 0 else [X] if big == 1 else [X / 2, X / 2]
        # a quarter of the rows put a term of the other sign at the window's last bit: the
        # sum then lies just inside the window's last bit, where a sticky bit for the dropped
        # tiny term (a narrower window with sticky) moves a directed rounding
        last_bit = 2.0 ** (E - w)
        counter = -math.copysign(last_bit, tiny) if rng.random() < 0.25 and abs(tiny) < last_bit else 0.0
        terms += [t for t in (half, tiny, counter) if t != 0.0]
        pairs: list[tuple[float, float] | None]
        if big != 0 or rng.random() >= 0.5:
            pairs = [as_product(t, fin) for t in terms]
        else:
            # c = R - nP: n equal products P cancel c down to R, whose ulps reach the tiny term.
            # P's significands are both 1.5 or more, so P's unnormalised exponent E - s is s
            # below c's, with 2^s <= nP < 2^(s + 1) (n = 1 for s = 1; n <= K - 1 products,
            # so 2^s < 4 (K - 1)).  TR-/GTR-FDPA re-align the products' sum (F bits
            # below E - s) to c's exponent with w = F2 + 1 bits: a sum s binades below c parts
            # w = F + s - 1 from F + s, so s is often drawn as w - min(windows) + 1 (Xie
            # Algorithm 10 line 14, with MMA-Sim 2.1.1's F2 + 1)
            s_max = (4 * (K - 1) - 1).bit_length() - 1
            s = w - int(min(windows)) + 1
            if not 1 <= s <= s_max or rng.random() < 0.5:
                s = int(rng.integers(1, s_max + 1))
            ma, mb = (_short_significand(rng, fin.p) for _ in range(2))
            n = math.ceil(2 ** s / (ma * mb))                   # n ma mb < 2^s + 4 <= 2^(s + 1) for s >= 2
            if n > K - 1:
                continue
            ea = (E - s) // 2
            P = (-1.0 if rng.random() < 0.5 else 1.0) * ma * mb * 2.0 ** (E - s)
            base = E - s if rng.random() < 0.5 else E          # the first window's edge, or the second's
            e_tiny = base - w - 1 + int(rng.integers(-1, 3))
            tiny = (-1.0 if rng.random() < 0.5 else 1.0) * 2.0 ** e_tiny
            eR = base - w - 1 + int(rng.integers(-1, 3)) + fout.p - 2
            if eR >= E:                       # R would not be below P (a window narrower than the output)
                continue
            X = float(rng.integers(8, 16)) * 2.0 ** (eR - 3) - n * P
            big_pair = (math.copysign(ma, P) * 2.0 ** ea, mb * 2.0 ** (E - s - ea))
            pairs = [*([big_pair] * n), as_product(tiny, fin)]
            if (pairs[-1] is None or not _formats.is_representable(np.array(big_pair), fin).all()
                    or not _formats.is_representable(np.array([X]), fout)[0]):
                continue
        placed = [q for q in pairs if q is not None]
        if len(placed) < len(pairs) or len(placed) > K:
            continue
        for k, (x, y) in zip(rng.permutation(len(placed)), placed):
            a[i, k], b[i, k] = x, y
        c[i] = X if big == 0 else 0.0
    return a, b, c


def windows_of(params: Sequence[dict[str, Any]]) -> list[int]:
    """The alignment windows (F, the groups' F, and F2 + 1: the fractional bits TR-/GTR-FDPA
    keep of the products' sum at c's exponent, MMA-Sim 2.1.1's ``floor(s_dot * 2**(F2 + 1))``)
    of models' parameters, each once (none for the kinds whose operation has no window:
    FMA chains, E-FDPA, FTZ-AddMul)."""
    from ..engine.model import operation   # the registry, filled when the engine loads

    return sorted({int(p[k]) + (1 if k == "F2" else 0) for p in params if operation(p["kind"]).windowed
                   for k in ("F", "F2", "group_F") if p.get(k) is not None})


DISTRIBUTIONS = ("normal", "log-uniform", "bits", "cancellation", "sparse-tiny", "sparse", "carry", "ties",
                 "subnormal-products")


__all__ = ["same_outputs", "random_inputs", "window_edges", "windows_of", "as_product",
           "DISTRIBUTIONS"]
