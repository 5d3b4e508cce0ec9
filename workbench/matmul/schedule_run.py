"""Running a :class:`~workbench.units.schedules.Schedule`: how :func:`workbench.gemm` executes
the record a library's GEMM is described by (the record itself is unit data, in
:mod:`workbench.units.schedules`, which unit files save).

* :func:`unit_accumulation` turns the ``accumulation=`` shorthand into chains where the
  unit's operation has no kernel of its own for it;
* :class:`Parts` is a product's K cut into parts and each part into its accumulators
  (``Split``), :func:`part_scales` the block scale factors of a part;
* :func:`run_parts` runs every accumulator on the unit (or, for ``Split.fused=False``, as
  products rounded then added: :func:`unfused_chain`) and sums each part's accumulators;
* :func:`promoted` scales each promoted part by its factors (DeepSeek-V3's promotion);
* :func:`combine` sums the parts as the schedule says, each addition rounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from ..engine import core as _core
from ..engine.model import Model
from ..numbers import formats as _formats
from ..units import schedules as _schedules


@dataclass(frozen=True)
class Parts:
    """A product's K as the schedule's split cuts it: ``lanes[p]`` the positions of K each
    accumulator of part p consumes, ``tails[p]`` those added one by one after them
    (``Split.tail``; empty for ``"first"``), ``positions`` every accumulator's and tail's
    in the order they run, ``whole`` when K is one uncut chain (no positions to gather)."""

    split: _schedules.Split
    lanes: list[list[np.ndarray]]
    tails: list[np.ndarray]
    positions: list[np.ndarray]
    whole: bool

    @classmethod
    def of(cls, split: _schedules.Split, K: int) -> Parts:
        if split.whole:
            lanes, tails, whole = [[np.arange(0)]], [np.arange(0)], True
        else:
            cut = split.indices(K)
            lanes, tails = [split.lanes_of(p) for p in cut], [split.tail_of(p) for p in cut]
            whole = len(lanes) == 1 and len(lanes[0]) == 1 and not tails[0].size
        positions = [q for ls, t in zip(lanes, tails) for q in (*ls, *((t,) if t.size else ()))]
        return cls(split, lanes, tails, positions, whole)

    def sizes(self) -> list[int] | None:
        """Each accumulator's number of positions (None for an uncut K), for the workspace estimate."""
        return None if self.whole else [q.size for q in self.positions]


def unit_accumulation(sched: _schedules.Schedule, model: Model, *, compose: bool = False) -> _schedules.Schedule:
    """``sched``, or - where the unit's operation has no kernel of its own for the
    schedule's ``inner`` accumulation (``"outside"``/``"promote"`` on the AMD kinds,
    GST-FDPA, the FMA chain, operations users register), or where ``compose`` asks for
    the parts one by one (scale factors applied at promotion: :func:`promoted`) - the same arithmetic as a
    schedule of chains: K cut into parts of one block (``"outside"``) or of
    ``promote_every`` elements (``"promote"``), each consumed as a chain from c = 0,
    the parts' results added in order to an fp32 accumulator that starts at C, with
    round-to-nearest (the fp32 accumulator of ordinary cores, as the T-FDPA kernels
    keep it in registers).  Bit for bit what those kernels compute
    (``tests/test_accumulation_composed.py`` compares both, and every kind with a
    per-block Fraction reference)."""
    op = model.operation
    if sched.inner == "chain" or (sched.inner in op.accumulations and not compose):
        return sched
    if "chain" not in op.accumulations:
        raise ValueError(f"accumulation={sched.inner!r} is not implemented for {model.kind!r} models, and neither "
                         f"is the chained accumulation it is built from (they implement {op.accumulations})")
    if sched.rules or sched.regions or sched.c_position != "unit":
        raise ValueError(f"schedule {sched.name!r} consumes each part with accumulation={sched.inner!r}, which "
                         f"{model.kind!r} units compose from chains of one-part products only: give a schedule "
                         f"without rules and regions (or inner='chain') for this unit")
    L = op.block_size(model)
    size = L if sched.inner == "outside" else cast(int, sched.promote_every)
    if size % L:
        raise ValueError(f"promote_every={size!r}: expected a positive multiple of the block size L={L}")
    return replace(sched, rules=(_schedules.KRule(0, None, _schedules.Split(part_size=size)),), inner="chain",
                   promote_every=None, c_position="combine", combine="in-order", combine_format="fp32",
                   combine_rounding="rne")


def part_scales(sa: np.ndarray, sb: np.ndarray, q: np.ndarray, K: int, k_block: int,
                 name: str) -> tuple[np.ndarray, np.ndarray]:
    """The block scale factors of the part of K at positions ``q``: a run of whole scale
    blocks (the last may end at K), so that each element keeps its own factor."""
    start, stop = (int(q[0]), int(q[-1]) + 1) if q.size else (0, 0)
    if q.size and (stop - start != q.size or start % k_block or (stop % k_block and stop != K)):
        raise ValueError(f"schedule {name!r} cuts K into parts that split the scale blocks of k_block={k_block} "
                         f"(a part holds elements {start}..{stop - 1}{'' if stop - start == q.size else ', not contiguous'}): "
                         f"a scaled model needs parts of whole scale blocks")
    blocks = slice(start // k_block, -(-stop // k_block))
    return sa[:, blocks], sb[blocks]


def unfused_chain(A: np.ndarray, B: np.ndarray, positions: np.ndarray, start: np.ndarray,
                   fmt: _formats.FloatFormat) -> np.ndarray:
    """One accumulator without FMA (``Split.fused=False``): from ``start``, each product
    A[:, k] B[k] of ``positions`` rounded to ``fmt`` (RNE; exact in float64 before that for
    formats of at most 26 bits, IEEE-rounded float64 for fp64), then added and rounded."""
    if fmt.p > 26 and fmt.name != "fp64":
        raise ValueError(f"Split.fused=False: products in {fmt.name} are not exact in float64 before rounding; "
                         f"expected an output format of at most 26 bits or fp64")
    # numpy's own dtype of fmt (fp64, fp32, fp16): a product and a sum in it are the exact float64
    # product (operands of fmt) rounded to fmt, and the float64 sum rounded (double rounding is
    # innocuous, 53 >= 2p + 2: Figueroa 1995; numpy's float16 ufuncs compute in float32, 24 >=
    # 2 * 11 + 2); operands that are not values of fmt take the general loop
    native = fmt.numpy_dtype
    with np.errstate(all="ignore"):               # Inf - Inf gives NaN, as mulps/addps do
        if native is not None:
            a, b, acc = A[:, positions].astype(native), B[positions].astype(native), start.astype(native)
            if all(np.array_equal(x, y, equal_nan=True) for x, y in ((a, A[:, positions]), (b, B[positions]),
                                                                      (acc, start))):
                for k in range(len(positions)):        # IEEE operations in fmt itself: the same bits
                    acc = acc + np.multiply.outer(a[:, k], b[k])
                return acc.astype(np.float64)
        acc = start
        for k in positions.tolist():
            acc = _formats.round(acc + _formats.round(np.multiply.outer(A[:, k], B[k]), fmt, "rne"), fmt, "rne")
    return acc



def promoted(results: list[np.ndarray], scale_a: np.ndarray, scale_b: np.ndarray) -> list[np.ndarray]:
    """Each promoted part's fp32 sum multiplied by its scale factors, as DeepSeek-V3's
    fine-grained quantisation promotes on CUDA cores (DeepSeek-AI 2024, Section 3.3.2):
    part c of output (i, j) times fl(scale_a[i, c] * scale_b[c, j]), rounded to fp32 (RNE);
    with power-of-two factors one rounding of the exact scaled sum."""
    f32 = np.float32                               # IEEE binary32 multiplications, rounded to nearest even
    with np.errstate(over="ignore"):               # an overflowing term is Inf, as the fp32 multiply gives
        return [(r.astype(f32) * (scale_a[:, c:c + 1].astype(f32) * scale_b[c:c + 1, :].astype(f32))).astype(np.float64)
                for c, r in enumerate(results)]


def combine(terms: list[np.ndarray], sched: _schedules.Schedule) -> np.ndarray:
    """The parts' results summed as ``sched.combine`` says, each addition rounded to
    ``sched.combine_format`` with ``sched.combine_rounding``."""
    to, add = arithmetic(_formats.format(sched.combine_format), sched.combine_rounding)

    def pairwise(ts: list[np.ndarray]) -> np.ndarray:
        while len(ts) > 1:
            ts = [add(ts[i], ts[i + 1]) if i + 1 < len(ts) else ts[i] for i in range(0, len(ts), 2)]
        return ts[0]

    with np.errstate(invalid="ignore", over="ignore"):     # Inf - Inf gives NaN and overflow Inf, as in hardware
        terms = [to(t) for t in terms]
        if sched.combine == "in-order":
            acc = terms[0]
            for t in terms[1:]:
                acc = add(acc, t)
        elif sched.combine == "evens-odds":
            acc = add(pairwise(terms[0::2]), pairwise(terms[1::2])) if len(terms) > 1 else terms[0]
        elif sched.combine == "halving":           # t_i + t_{i+h}: upper half onto lower half
            while len(terms) > 1:
                terms = halving_step(terms, add)
            acc = terms[0]
        else:
            acc = pairwise(terms)
    return np.asarray(acc, dtype=np.float64)


Adder = Callable[[np.ndarray, np.ndarray], np.ndarray]


def arithmetic(fmt: _formats.FloatFormat, rounding: str) -> tuple[Callable[[np.ndarray], np.ndarray], Adder]:
    """``(to, add)``: a float64 value rounded to ``fmt`` with ``rounding``, and the
    addition of two such values rounded alike.  Where numpy has the format's own dtype
    (fp64, fp32, fp16) and the rounding is RNE, both are that dtype's IEEE operations
    (fp16 sums are computed in float32 and rounded, which is the same: 24 >= 2 * 11 + 2,
    Figueroa 1995), and the values stay in it; otherwise :func:`workbench.round` after each
    float64 operation (exact for the formats this is used with: at most 26 bits)."""
    native = fmt.numpy_dtype if rounding == "rne" else None
    if native is not None:
        return (lambda t: np.asarray(t).astype(native)), (lambda x, y: x + y)
    return ((lambda t: _formats.round(t, fmt, rounding)),
            (lambda x, y: _formats.round(x + y, fmt, rounding)))


def halving_step(terms: list[np.ndarray], add: Adder) -> list[np.ndarray]:
    """One step of the ``"halving"`` combination of terms already in the format of
    ``add`` (:func:`arithmetic`): t_i + t_{i+h}, h = ceil(n / 2)."""
    h = (len(terms) + 1) // 2
    with np.errstate(invalid="ignore", over="ignore"):    # Inf - Inf gives NaN and overflow Inf, as in hardware
        return [add(terms[i], terms[i + h]) if i + h < len(terms) else terms[i] for i in range(h)]


def run_parts(model: Model, A: np.ndarray, B: np.ndarray, ops: list[_core.Operands],
              scales: list[tuple[np.ndarray | None, np.ndarray | None]], parts: Parts, C_unit: np.ndarray,
              sched: _schedules.Schedule, run_prepared: Callable[..., np.ndarray]) -> list[np.ndarray]:
    """Each part's result: its accumulators run on the unit (``run_prepared``: the device's
    runner), the first from ``C_unit`` and the others from zero, summed as
    ``Split.lane_combine`` says, then its tail (if any) added one by one to that sum; the
    operands are recycled as they are used."""
    M, N = A.shape[0], B.shape[1]
    by_lane = replace(sched, combine=parts.split.lane_combine) if parts.split.lanes > 1 else sched
    n = 0

    def chain(start: np.ndarray) -> np.ndarray:
        """Accumulator n of :attr:`Parts.positions` from ``start``."""
        nonlocal n
        part, (part_sa, part_sb) = ops[n], scales[n]
        if parts.split.fused:
            out = run_prepared(model, part, start, accumulation=sched.inner, promote_every=sched.promote_every,
                               scale_a=part_sa, scale_b=part_sb)
        else:
            out = unfused_chain(A, B, parts.positions[n], start, model.out_fmt)
        _core.recycle(part)
        n += 1
        return out

    to, add = arithmetic(_formats.format(sched.combine_format), sched.combine_rounding)
    results = []
    for lanes, tail in zip(parts.lanes, parts.tails):
        sums = [chain(C_unit if n == 0 else np.zeros((M, N))) for _ in lanes]
        half = tail.size and parts.split.tail == "half"
        if half:                                   # the tail onto the first term after one halving step
            with _core.threads_for(M * N), np.errstate(over="ignore"):
                sums = [np.asarray(t, dtype=np.float64) for t in halving_step([to(t) for t in sums], add)]
            sums[0] = chain(sums[0])
        with _core.threads_for(M * N):
            total = sums[0] if len(sums) == 1 else combine(sums, by_lane)
        results.append(chain(total) if tail.size and not half else total)
    return results
