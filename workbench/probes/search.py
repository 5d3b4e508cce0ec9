"""The models that explain what a black box returned: a consistency search over the
T-FDPA / FMA-chain part of the engine's model space.

The probes (:mod:`~workbench.probes.features`) read each parameter from vectors built
for it, under the assumption that the others are what they measured; on units no
preset resembles (a narrow window, one product per block, c added late with a
directed rounding) one misread parameter misleads the next.  Xie et al. 2025 Section
3.1.4 revise a model that fails randomised testing by re-examining its features;
this module does that exhaustively: every T-FDPA with L in {1, 2, 4, ..., 64}, F in
0..56, each final rounding the engine models, sticky bit or not, c early or late
with each late rounding (and E-FDPA, and the FMA chains when the formats allow one;
around a TR-/GTR-FDPA proposal every L, F within one bit, every F2 and final rounding)
is run on a battery of random dot products and kept only if it reproduces every
output, the probes' counterexample included.  The battery holds, besides normal,
log-uniform and cancelling data, a few products next to a larger c and sums that carry
into the next binade (:func:`~workbench.probes.differential.random_inputs`): a window
narrower than the output shows its final rounding only there.  Stages keep it cheap:
a few rows reject most candidates, larger batteries the rest; every candidate runs
as one row-kernel call per battery (its operation's
:meth:`~workbench.engine.model.Operation.screen_rows`).
What survives is the set of models the outputs cannot separate (issue 14: report them
all, never one confident guess).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..engine import core as _core
from ..engine.model import LARGEST_KNOWN_L, OPERATIONS, PARAM_BOUNDS, ROUNDINGS, Model, Operation, operation
from ..engine.operands import RowBattery
from .blackbox import BlackBox
from .differential import DISTRIBUTIONS, random_inputs, same_outputs, window_edges, windows_of

__all__ = ["consistent_models", "reproduce", "agree_on_random_inputs", "separate_windows", "SEARCHED"]

#: the parameters the search varies (the others are the probes' values); TR-/GTR-FDPA
#: proposals are searched around their structure instead (F, F2, final rounding)
SEARCHED = ("kind", "L", "F", "rounding", "sticky", "c_position", "late_rounding", "F2", "G")
#: block sizes L (and GST-FDPA's groups G) searched: the powers of two up to the largest known block (64)
_BLOCKS = tuple(2 ** i for i in range(LARGEST_KNOWN_L.bit_length()))
#: alignment windows F searched: every one a Model takes (0 .. 56, the bound of :data:`PARAM_BOUNDS`)
_WINDOWS = range(PARAM_BOUNDS["F"].low, PARAM_BOUNDS["F"].high + 1)
#: TR-/GTR-FDPA's F2 is searched from F up to its bound
_F2_MAX = PARAM_BOUNDS["F2"].high
_STAGES = (8, 64, 480, 3000)                   # battery rows of the stages
_DISTRIBUTIONS = ("normal", "log-uniform", "cancellation", "sparse", "carry", "sparse-tiny")
_TERMS = 230_000                               # terms per K in agree_on_random_inputs' batteries
_CHUNK = 128                                   # battery rows drawn at once
_KEPT = ("in_format", "out_format", "zero_exponent", "flush_subnormals", "flush_output_subnormals")


def _realigns(op: Operation) -> bool:
    """Whether the operation re-aligns its fused sums (TR-/GTR-FDPA: it reads
    ``alignment_rounding``, Xie et al. Algorithms 10-11)."""
    return "alignment_rounding" in op.param_names


def _rounded_operations() -> list[Operation]:
    """The registered operations that re-align their fused sums, in registration order."""
    return [op for op in OPERATIONS.values() if _realigns(op)]


def _rounded_candidates(base: dict[str, Any], probed: dict[str, Any], Ls: tuple[int, ...]) -> Iterator[dict[str, Any]]:
    """TR-/GTR-FDPA around the probes' proposal: both kinds (GTR-FDPA's even/odd groups
    show only where a group's products span more than F binades, which narrow inputs
    rarely build: an fp8 GTR-FDPA unit with F 30 probes as one group), their alignment
    rounding, every L (GTR-FDPA: two or more), F within one bit of theirs, every F2 >= F
    and every final rounding (a window narrower than the output hides the final rounding
    from the probes' ties)."""
    for op in _rounded_operations():
        kind = op.kind
        for L in (L for L in Ls if L >= op.min_search_L):
            for F in range(max(probed["F"] - 1, _WINDOWS.start), min(probed["F"] + 1, _WINDOWS.stop - 1) + 1):
                for F2 in range(F, _F2_MAX + 1):
                    for rounding in ROUNDINGS:
                        yield {**base, "kind": kind, "L": L, "F": F, "F2": F2, "rounding": rounding,
                               "alignment_rounding": probed.get("alignment_rounding")}


def _gst_candidates(base: dict[str, Any], Ls: tuple[int, ...]) -> Iterator[dict[str, Any]]:
    """GST-FDPA (Xie Algorithm 9) for narrow inputs: every L, every group size G that
    divides it, every F the engine's fixed point holds and every final rounding.  Its
    groups show only through ties the narrow products cannot always build (fp4's span
    six binades: with round to nearest and F above about 31 the probes cannot see G),
    so they are searched.  The scales are tied to 1 (``from_model``): NVFP4's UE4M3
    convention where the fixed point holds it, else E8M0."""
    for L in Ls:
        for G in (g for g in _BLOCKS if 2 <= g <= L):
            for F in _WINDOWS:
                for sf in ("ue4m3", "e8m0"):
                    p = {**base, "kind": "gst-fdpa", "L": L, "G": G, "k_block": G, "scale_format": sf, "F": F,
                         "c_position": "early", "sticky": False}
                    try:
                        operation("gst-fdpa").check_kernel(Model(**{**p, "rounding": "rz"}))
                    except ValueError:
                        continue
                    for rounding in ROUNDINGS:
                        yield {**p, "rounding": rounding}
                    break


def _gst_inputs(bb: BlackBox) -> bool:
    """Whether the inputs are narrow enough (8 bits or fewer: fp4, fp6, fp8) for the
    block-scaled units GST-FDPA models."""
    return bb.in_fmt.exp_bits + bb.in_fmt.man_bits + int(bb.in_fmt.signed) <= 8


def _candidates(base: dict[str, Any], Ls: tuple[int, ...], fma: bool, gst: bool) -> Iterator[dict[str, Any]]:
    if gst:
        yield from _gst_candidates(base, Ls)
    lates = [("early", "rne")] + [("late", r) for r in ROUNDINGS]
    for L in Ls:   # E-FDPA: the exact sum rounded once (with L = 1 an FMA in any rounding)
        for rounding in ROUNDINGS:
            yield {**base, "kind": "e-fdpa", "L": L, "rounding": rounding}
    if fma:
        for cpos, late in lates:
            yield {**base, "kind": "fma", "L": 1, "c_position": cpos, "late_rounding": late,
                   "sticky": False}
    for L in Ls:
        for cpos, late in lates:
            for F in _WINDOWS:
                for rounding in ROUNDINGS:
                    for sticky in (False, True):
                        yield {**base, "kind": "t-fdpa", "L": L, "F": F, "rounding": rounding, "sticky": sticky,
                               "c_position": cpos, "late_rounding": late}


def _battery(bb: BlackBox, rows: int, K: int, rng: np.random.Generator,
             extra: list[tuple[np.ndarray, np.ndarray, float]],
             distributions: tuple[str, ...] = _DISTRIBUTIONS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, c = [], [], []
    for x, y, z in extra:
        a.append(np.pad(x, (0, K - x.size)))
        b.append(np.pad(y, (0, K - y.size)))
        c.append(z)
    per = -(-max(rows - len(extra), 1) // len(distributions))
    for dist in distributions:
        for start in range(0, per, _CHUNK):   # row i with column i: C is m x m, so draw in chunks
            m = min(_CHUNK, per - start)
            A, B, C = random_inputs(dist, rng, bb.in_fmt, bb.out_fmt, m, K, m)
            a.extend(A)
            b.extend(B.T)
            c.extend(np.diagonal(C))
    return np.array(a[:rows]), np.array(b[:rows]), np.array(c[:rows])


def _survivors(cands: list[dict[str, Any]], a: np.ndarray, b: np.ndarray, c: np.ndarray,
               d: np.ndarray) -> list[dict[str, Any]]:
    """The candidates that reproduce every output ``d`` of the battery (a, b, c), each run
    by its operation's :meth:`~workbench.engine.model.Operation.screen_rows` on one
    :class:`~workbench.engine.operands.RowBattery` (decomposed once per block size);
    candidates the kernels cannot hold (a ValueError) are dropped."""
    keep: list[dict[str, Any]] = []
    battery = RowBattery(a, b, c)
    with _core.threads_for(a.size):   # thousands of small calls: one thread each
        for p in cands:
            acc = battery.c.copy()
            try:
                acc = OPERATIONS[p["kind"]].screen_rows(p, battery, acc)
            except ValueError:   # a model the engine cannot run (e.g. sums wider than its 62 bits)
                continue
            if same_outputs(acc, d).all():
                keep.append(p)
    return keep


def consistent_models(bb: BlackBox, base: dict[str, Any], *, seed: int = 0,
                      extra: Sequence[tuple[np.ndarray, np.ndarray, float]] = ()) -> list[dict[str, Any]]:
    """Every model of the searched space (:data:`SEARCHED`; formats, subnormal
    handling and zero exponent from ``base``; for a TR-/GTR-FDPA ``base`` the models
    around it) that reproduces the black box on two
    batteries of random dot products (normal, log-uniform, cancelling data) and on
    ``extra`` cases ``(a, b, c)``; ordered by how few parameters differ from ``base``."""
    Ls = tuple(L for L in _BLOCKS if bb.max_k is None or L <= bb.max_k)
    K = max([min(2 * max(Ls) + 3, bb.max_k or 131)] + [x.size for x, _, _ in extra])
    # what the probes measured that the searched kinds read: formats, subnormal handling, zero exponent
    fixed = {k: base[k] for k in _KEPT if k in base}
    if base.get("kind") in OPERATIONS and _realigns(OPERATIONS[base["kind"]]):
        cands = list(_rounded_candidates(fixed, base, Ls))
    else:
        cands = list(_candidates(fixed, Ls, bb.in_format == bb.out_format, _gst_inputs(bb)))
    rng = np.random.default_rng(seed + 17)
    for rows in _STAGES:
        a, b, c = _battery(bb, rows, K, rng, list(extra))
        cands = _survivors(cands, a, b, c, bb.dots(a, b, c))
        if not cands:
            break
    return sorted(cands, key=lambda p: sum(p.get(k) != base.get(k) for k in SEARCHED))


def agree_on_random_inputs(bb: BlackBox, cands: list[dict[str, Any]], *, rows: int = 4000,
                           seed: int = 0) -> list[dict[str, Any]]:
    """The candidates (in order) that reproduce the black box on ``rows`` random dot
    products for each K (fewer for long ones: :data:`_TERMS` terms at most) of every distribution of the randomised verification
    (:data:`~workbench.probes.differential.DISTRIBUTIONS`: random bit patterns and sparse
    tiny products included) and of several K: short ones (a lone product far below the
    output's range is common only there) and those of the verification, 2L and 2L + 3
    for each candidate's L (two full blocks, the running sum of the first next to the
    second's products: TR-FDPA's F2 shows there: one in a few thousand random bit
    patterns parts F2 from F2 + 1)."""
    Ls = tuple(L for L in _BLOCKS if bb.max_k is None or L <= bb.max_k)
    Ks = sorted({min(K, bb.max_k or K) for K in (2, 5, 64, 2 * max(Ls) + 3)}
                | {min(K, bb.max_k or K) for p in cands for K in (2 * p["L"], 2 * p["L"] + 3)})
    rng = np.random.default_rng(seed + 29)
    for K in Ks:
        if not cands:
            break
        a, b, c = _battery(bb, min(rows, _TERMS // K), K, rng, [], DISTRIBUTIONS)
        cands = _survivors(cands, a, b, c, bb.dots(a, b, c))
    return cands


def separate_windows(bb: BlackBox, cands: list[dict[str, Any]], *, rows: int = 4000,
                     seed: int = 0) -> list[dict[str, Any]]:
    """The candidates (in order) that reproduce the black box on
    :func:`~workbench.probes.differential.window_edges` at every alignment window (F,
    F2, the groups' F) any of them has: candidates whose windows differ by one bit part
    there, and only rarely on random inputs; so do candidates of one window that differ
    in the final rounding (a whole block of large products carries its sum past the
    output's precision, a product at the window's last bit decides the rounding).  K =
    2, 4, and L, 2L and 2L + 3 for each candidate's L (the terms in one block - the
    whole block's rows need K = L - or across blocks of a chain)."""
    windows = windows_of(cands)
    if len(cands) < 2 or not windows:
        return cands
    Ls = {int(p.get("L") or 1) for p in cands}
    Ks = sorted({min(K, bb.max_k or K) for K in [2, 4] + [L for L in Ls if L > 2] + [2 * L for L in Ls]
                 + [2 * L + 3 for L in Ls]})
    rng = np.random.default_rng(seed + 31)
    for K in Ks:
        if K < 2 or len(cands) < 2:
            break
        a, b, c = window_edges(rng, bb.in_fmt, bb.out_fmt, windows, -(-rows // len(Ks)), K)
        cands = _survivors(cands, a, b, c, bb.dots(a, b, c))
    return cands


def reproduce(bb: BlackBox, cands: list[dict[str, Any]],
              cases: list[tuple[np.ndarray, np.ndarray, float]]) -> list[dict[str, Any]]:
    """The candidates (in order) that reproduce the black box on the dot products ``cases``."""
    K = max(x.size for x, _, _ in cases)
    a = np.array([np.pad(x, (0, K - x.size)) for x, _, _ in cases])
    b = np.array([np.pad(y, (0, K - y.size)) for _, y, _ in cases])
    c = np.array([z for _, _, z in cases], dtype=np.float64)
    return _survivors(cands, a, b, c, bb.dots(a, b, c))
