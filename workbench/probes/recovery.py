"""Recovery of a library's GEMM schedule from the black box alone (issue 54, item 1).

:func:`recover_schedule` asks a library's ``A @ B`` (at one thread) for products of the
shapes (M, N) a user cares about and K from 1 to ``k_max``, and returns a
:class:`~workbench.units.schedules.Schedule` over the library's unit that reproduces every
output it saw, with the queries and the time it took.  Nobody writes a candidate: the
schedule is assembled from what the library answers.

1. **Per output, the split.**  For each probe product (M, N, K) the library runs on
   random and adversarial inputs (cancelling pairs over a wide exponent range,
   :func:`draw_inputs`), and so does the unit under every
   :class:`~workbench.units.schedules.Split` of :func:`candidate_splits` - one FMA chain;
   ``lanes`` accumulators fed round-robin (a masked tail) or by unrolled blocks, summed in
   order, pairwise or by halving (a vector register's horizontal reduction); and the K
   blocks (GEMM_Q with halved last blocks) that FPRev's tree shows (Xie et al., USENIX
   ATC'25: :func:`fprev_counts`, leaf 0's joins).  Each output
   keeps the set of splits that give its bits on every input.
2. **Outputs to kernels.**  A BLAS cuts C into tiles of powers of two and its remainder
   into smaller ones, each run by another micro-kernel.  The outputs are grouped by the
   tile of that greedy cut their row and column fall in (:func:`tile_of`), coarsest
   first - one group, then by column tile, by row tile, by both - and the first grouping
   in which every group has a split common to all its outputs is kept.
3. **K ranges.**  Along the probed K a group keeps one split while the common set stays
   non-empty; where it changes, bisection on K finds the first K of the next split.
4. **The schedule.**  The group holding output (0, 0) gives the schedule's rules, every
   other group a :class:`~workbench.units.schedules.Region` over its tile band with its own
   rules, each naming its (M, N): a product of another shape has no rule, and
   :func:`workbench.gemm` refuses it rather than guess.

Where no grouping explains a product, :attr:`Recovery.unexplained` says which outputs
and K, and no schedule is claimed for that (M, N).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..numbers import formats as _formats
from ..units import schedules as _schedules
from ..engine.model import Model

__all__ = ["candidate_splits", "tile_of", "recover_schedule", "Recovery", "PROBE_KS", "draw_inputs", "fprev_counts",
           "NARROW_OUTPUT_CHUNKS"]

#: the K of every probe product: small K (one element per lane), both sides of the vector
#: widths (16, 32) and of the K blocks BLASes use (GEMM_Q 256-512 and their halves), and
#: long K; :func:`recover_schedule` adds ``k_max``
PROBE_KS = (1, 2, 3, 5, 8, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100, 128, 129, 192, 193, 256, 257,
            320, 384, 385, 448, 449, 512, 513, 640, 769, 896, 897, 1000, 1024, 1025, 1344, 2000, 2049, 3000, 4096)
#: the smallest K block taken from FPRev's joins: BLAS drivers block K by 128-512 (GEMM_Q); a
#: shorter run of consecutive joins is a kernel's lanes or unrolled loop, not the driver's block
MIN_BLOCK = 32
#: K chunks tried where FPRev cannot show the blocks: the library rounds its result to a format
#: narrower than its sum (torch's bf16 matmul sums in fp32), so counts above 2^p come back
#: rounded; oneDNN's brgemm cuts K into chunks of 512 and 1024 there
NARROW_OUTPUT_CHUNKS = (64, 128, 256, 512, 1024, 2048, 4096)
#: the tiles of a greedy cut of rows and columns (powers of two, largest first)
TILES = (64, 32, 16, 8, 4, 2, 1)
#: the input kinds every probe product is drawn in (a split must give the bits on each)
_DRAWS = ("random", "adversarial", "adversarial")


def draw_inputs(rng: np.random.Generator, kind: str, M: int, N: int, K: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Random inputs representable in ``fmt``: ``random`` (standard normal), ``adversarial``
    (exponents over 2^-20..2^20 and cancelling pairs: each product x*y followed by -x*y)."""
    A = rng.standard_normal((M, K))
    B = rng.standard_normal((K, N))
    if kind == "adversarial":
        A = A * np.exp2(rng.integers(-20, 21, (M, K)))
        B = B * np.exp2(rng.integers(-20, 21, (K, N)))
        h = K // 2
        A[:, 1:2 * h:2] = -A[:, 0:2 * h:2]
        B[1:2 * h:2] = B[0:2 * h:2]
        B[1:2 * h:4] *= 1 + 2.0 ** -10
    return _formats.round(A, fmt, "rne"), _formats.round(B, fmt, "rne")


def fprev_counts(call: Callable[[np.ndarray, np.ndarray], np.ndarray], M: int, N: int, K: int, i: int,
                 precision: int, dtype: str) -> np.ndarray:
    """FPRev (Xie et al., USENIX ATC'25) for fixed position i: (M, K) counts, row r column j
    = K - |leaves under LCA(i, j)| in output row r's tree (A = 1; B's column holds +big at i,
    -big at j and 1 elsewhere; big = 2^(p + ceil(log2 K) + 1) swamps every partial sum of
    ones).  j = i holds K - 1 (the pair left out)."""
    big = 2.0 ** (precision + int(np.ceil(np.log2(max(K, 2)))) + 1)
    out = np.zeros((M, K))
    A = np.ones((M, K), dtype=dtype)
    for j0 in range(0, K, N):
        js = np.arange(j0, min(j0 + N, K))
        B = np.ones((K, N), dtype=dtype)
        B[i, :] = big
        B[js, np.arange(len(js))] = -big
        B[i, np.flatnonzero(js == i)] = 0
        out[:, j0:j0 + len(js)] = call(A, B)[:, :len(js)]
    return np.rint(out).astype(np.int64)


def candidate_splits(blocks: Sequence[int] = (), chunks: Sequence[int] = ()) -> tuple[_schedules.Split, ...]:
    """The splits recovery tries, simplest first (each also without FMA, ``fused=False``,
    after all of them): the whole K as one chain; ``lanes``
    of 2-32 accumulators fed round-robin (``lane_block=1``) or by an unrolled loop of
    one or two rounds (two accumulators also over a loop unrolled by 8: OpenBLAS' Prescott
    DGEMM, ``gemm_kernel_4x4_sse3.S``, on its 2 x 2 and one-row tiles), summed in order,
    pairwise or by halving (eight also evens then odds: its SGEMM's one-row edge); two
    accumulators over a loop unrolled by 4 whose tail (and pending last product) is added after their sum
    (``Split.tail="after"``, ``held``: OpenBLAS' Nehalem SGEMM edge), or four summed by
    halving with the tail on the first term after the first step (``tail="half"``: its
    DGEMM corner); and for each K block
    in ``blocks`` the BLAS driver's blocking (halved last blocks, rounded up to 1-16)
    with one accumulator per block, or with each block summed by an edge kernel's 2-8
    accumulators (fed by unrolled blocks, summed in order or pairwise, four also by halving:
    OpenBLAS' Haswell DGEMM 1 x 4 kernel and its Prescott DGEMM corner inside the driver's
    K loop); and for each of ``chunks`` parts of that many elements, the last shorter
    (oneDNN's brgemm K chunks)."""
    lanes = [_schedules.Split(lanes=n, lane_block=b, lane_combine=c)
             for n in (2, 4, 8, 16, 32) for b in (1, n, 2 * n) for c in ("in-order", "pairwise", "halving")]
    lanes += [_schedules.Split(lanes=2, lane_block=8, lane_combine="in-order")]
    lanes += [_schedules.Split(lanes=8, lane_block=b, lane_combine="evens-odds") for b in (8, 16)]
    lanes += [_schedules.Split(lanes=2, lane_block=4, lane_combine="in-order", tail="after", held=h) for h in (0, 1)]
    lanes += [_schedules.Split(lanes=4, lane_block=4, lane_combine="halving", tail="half")]
    edge = [s for s in lanes if s.lanes <= 8 and s.lane_block > 1 and (s.lane_combine != "halving" or s.lanes == 4)]
    fused = [_schedules.Split(), *lanes]
    for q in sorted(set(blocks)):
        for u in (1, 2, 4, 8, 16):
            if u <= q:
                fused.append(_schedules.Split(block=q, block_unroll=u))
                fused += [replace(s, block=q, block_unroll=u) for s in edge]
        fused.append(_schedules.Split(part_size=q))
    fused += [_schedules.Split(part_size=q) for q in sorted(set(chunks) - set(blocks))]
    return (*fused, *(replace(s, fused=False) for s in fused))


def tile_of(n: int, tiles: Sequence[int] = TILES) -> np.ndarray:
    """For each of n rows (columns), the tile of the greedy cut it falls in: whole tiles
    of ``tiles[0]`` first, then at most one of each smaller size (n = 27: 16 + 8 + 2 + 1
    with tiles (16, 8, 4, 2, 1))."""
    out = np.empty(n, dtype=np.int64)
    start = 0
    for i, t in enumerate(tiles):
        end = n - n % t if i == 0 else start + ((n - start) // t) * t
        out[start:end] = t
        start = end
    return out


def _band(t: int, tiles: Sequence[int] = TILES) -> tuple[int, int]:
    """The (a, b) of :class:`~workbench.units.schedules.Region` selecting the rows of tile t of
    :func:`tile_of`'s cut (n - n % a .. n - n % b); t = 0: every row."""
    return (0, 1) if t == 0 else (0, t) if t == tiles[0] else (2 * t, t)


@dataclass
class Recovery:
    """What :func:`recover_schedule` found: the schedule (None where nothing was
    explained), the library queries and seconds it took, the FPRev blocks it tried,
    and the products it could not explain."""

    schedule: _schedules.Schedule | None
    queries: int
    seconds: float
    blocks: tuple[int, ...]
    groups: dict[tuple[int, int], str] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)

    def sheet(self) -> str:
        """The recovery as text: per (M, N), how its outputs are grouped and each group's
        splits by K; then what was not explained."""
        lines = [f"  recovery                 {self.queries} library calls, {self.seconds:.1f} s; FPRev K blocks tried: "
                 f"{', '.join(map(str, self.blocks)) or 'none'}"]
        for (M, N), text in sorted(self.groups.items()):
            lines.append(f"    {M}x{N}: {text}")
        lines += [f"    not explained: {u}" for u in self.unexplained]
        return "\n".join(lines)


def _describe(split: _schedules.Split) -> str:
    if not split.fused:
        return _describe(replace(split, fused=True)) + " without FMA (products rounded, then added)"
    if split.whole:
        return "one chain"
    if split.block is not None:
        inner = f", each by {_describe(replace(split, block=None, block_unroll=1))}" if split.lanes > 1 else ""
        return f"K blocks of {split.block} (last halved, unroll {split.block_unroll}){inner}"
    if split.part_size is not None:
        return f"K parts of {split.part_size}"
    feed = "round-robin" if split.lane_block == 1 else f"by {split.lane_block}"
    tail = {"first": "", "half": ", tail added after the first halving step",
            "after": ", tail added after their sum"}[split.tail]
    if split.held:
        tail += f" with the loop's last {split.held} product{'s' if split.held > 1 else ''}"
    return f"{split.lanes} lanes {feed}, {split.lane_combine}{tail}"


class _Prober:
    """The library and the unit on the same inputs: each product's outputs against every
    candidate split, counting the library's calls."""

    def __init__(self, call: Callable[[np.ndarray, np.ndarray], np.ndarray], unit: Model,
                 template: _schedules.Schedule, fmt: str, dtype: str, seed: int) -> None:
        self.call, self.unit, self.template, self.fmt, self.dtype = call, unit, template, fmt, dtype
        self.rng = np.random.default_rng(seed)
        self.queries = 0

    def schedule(self, split: _schedules.Split) -> _schedules.Schedule:
        return replace(self.template, rules=(_schedules.KRule(1, None, split),), regions=())

    def matches(self, M: int, N: int, K: int, splits: Sequence[_schedules.Split],
                only: np.ndarray | None = None) -> np.ndarray:
        """(M, N, len(splits)) booleans: the split gives the output's bits on every draw
        (only the splits ``only`` marks are run; the others are False)."""
        from ..matmul.product import gemm

        ok = np.ones((M, N, len(splits)), dtype=bool)
        if only is not None:
            ok[:, :, ~only] = False
        for kind in _DRAWS:
            A, B = draw_inputs(self.rng, kind, M, N, K, self.fmt)
            want = np.asarray(self.call(A.astype(self.dtype), B.astype(self.dtype)), dtype=np.float64)
            self.queries += 1
            for s, split in enumerate(splits):
                if not ok[:, :, s].any():
                    continue
                got = np.asarray(gemm(A, B, model=self.unit, schedule=self.schedule(split)), dtype=np.float64)
                ok[:, :, s] &= (got == want) | (np.isnan(got) & np.isnan(want))
        return ok


def _groupings(M: int, N: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Ways to group an M x N product's outputs, coarsest first: (name, row key, column key)."""
    one_r, one_c = np.zeros(M, dtype=np.int64), np.zeros(N, dtype=np.int64)       # 0: every row (column)
    rows, cols = tile_of(M), tile_of(N)
    return [("one kernel", one_r, one_c), ("by column tile", one_r, cols), ("by row tile", rows, one_c),
            ("by row and column tile", rows, cols)]


def _group_sets(ok: np.ndarray, rk: np.ndarray, ck: np.ndarray) -> dict[tuple[int, int], np.ndarray] | None:
    """Each group's splits common to all its outputs, or None where a group has none."""
    out: dict[tuple[int, int], np.ndarray] = {}
    for r in np.unique(rk):
        for c in np.unique(ck):
            common = np.asarray(ok[np.ix_(rk == r, ck == c)].all(axis=(0, 1)))
            if not common.any():
                return None
            out[(int(r), int(c))] = common
    return out


def _runs(prober: _Prober, M: int, N: int, rows: np.ndarray, cols: np.ndarray, Ks: Sequence[int],
          sets: list[np.ndarray], splits: Sequence[_schedules.Split]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """One group's K ranges: (k_min, k_max, split index).  Along the probed K a run keeps
    the splits common to all its K; between two runs bisection on the group's outputs
    (``rows`` x ``cols``) finds the first K of the next run, narrowing each run's splits
    to those that also hold at the K it tried.  Also the K of the bisection where no
    split of either run gave the group's bits (a third split between probes)."""
    runs: list[list[Any]] = []                         # [k_min, k_max, common splits]
    for K, s in zip(Ks, sets):
        if runs and (runs[-1][2] & s).any():
            runs[-1][1:] = [K, runs[-1][2] & s]
        else:
            runs.append([K, K, s.copy()])
    missed = []
    for left, right in zip(runs, runs[1:]):            # bisection between left's last and right's first K
        lo, hi = left[1], right[0]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok = prober.matches(M, N, mid, splits, left[2] | right[2])[np.ix_(rows, cols)].all(axis=(0, 1))
            if (left[2] & ok).any():
                lo, left[2] = mid, left[2] & ok
            elif (right[2] & ok).any():
                hi, right[2] = mid, right[2] & ok
            else:
                missed.append(mid)
                lo = mid
        left[1], right[0] = lo, hi
    for run in runs:                                   # splits alike at every K probed may part elsewhere
        k_hi = run[1] if run is not runs[-1] else 2 * run[1]
        for K in _parting_ks([splits[i] for i in np.flatnonzero(run[2]).tolist()], run[0], k_hi):
            ok = prober.matches(M, N, K, splits, run[2])[np.ix_(rows, cols)].all(axis=(0, 1))
            if (run[2] & ok).any():
                run[2] = run[2] & ok
            else:
                missed.append(K)
    return [(k0, k1, int(np.flatnonzero(s)[0])) for k0, k1, s in runs], missed


def _layout(split: _schedules.Split, K: int) -> tuple[Any, ...]:
    """What a split does with K: each part's accumulators' positions and how they are summed."""
    return (split.lane_combine if split.lanes > 1 else "",
            tuple((tuple(tuple(lane.tolist()) for lane in split.lanes_of(p)), tuple(split.tail_of(p).tolist()))
                  for p in split.indices(K)))


def _parting_ks(splits: Sequence[_schedules.Split], k_lo: int, k_hi: int, tries: int = 48) -> list[int]:
    """K in k_lo..k_hi (the first of ``tries`` spread over the range, seeded) at which the
    splits do not all lay K out alike - one K per pair of layouts that part: where a run
    keeps several splits (a K block's halves rounded to 4 or to 8, say), the K that can
    tell them apart."""
    if len(splits) < 2 or k_hi <= k_lo:
        return []
    ks = np.unique(np.random.default_rng(k_lo).integers(k_lo, k_hi + 1, tries))
    out, classes = [], {0}
    for K in ks.tolist():
        layouts = [_layout(s, K) for s in splits]
        kinds = len(set(layouts))
        if kinds > max(classes):
            out.append(K)
            classes.add(kinds)
    return out


def _fprev_blocks(call: Callable[[np.ndarray, np.ndarray], np.ndarray], M: int, N: int, K: int,
                  precision: int, dtype: str) -> tuple[set[int], int]:
    """K blocks FPRev shows at one product: where leaf 0's chain of consecutive LCA sizes
    (2, 3, ..., q) stops short of K, q is a block; with the calls it took."""
    counts = fprev_counts(call, M, N, K, 0, precision, dtype)
    blocks = set()
    for row in np.unique(counts, axis=0):
        sizes = set((K - row[1:]).tolist())
        q = 1
        while q + 1 in sizes:
            q += 1
        if MIN_BLOCK <= q < K:
            blocks.add(q)
    return blocks, -(-K // N)


def recover_schedule(call: Callable[[np.ndarray, np.ndarray], np.ndarray], unit: Model, fmt: str, dtype: str,
                     precision: int, shapes: Sequence[tuple[int, int]], *, k_max: int = 8192,
                     template: _schedules.Schedule | None = None, name: str = "recovered", seed: int = 0,
                     progress: Callable[[str], Any] | None = None) -> Recovery:
    """Recover the schedule of ``call`` (``A @ B`` of a library at one thread, inputs of
    numpy ``dtype`` holding values of ``fmt``) over ``unit`` for products of the given
    (M, N) and every K from 1 to ``k_max`` (module docstring).  ``template`` gives the
    schedule's fixed fields (where C enters, the combination's format, the output
    conversion); ``precision`` is the accumulation's (FPRev's swamping value).  Where the
    output conversion is narrower than that, FPRev's counts come back rounded and the
    chunks of :data:`NARROW_OUTPUT_CHUNKS` are tried besides the blocks it shows.
    Returns a :class:`Recovery`."""
    if k_max < 1:
        raise ValueError(f"k_max={k_max!r}: expected a positive integer")
    for shape in shapes:
        if len(shape) != 2 or min(shape) < 2:
            raise ValueError(f"shape {shape!r}: expected (M, N) with M, N >= 2 (one row or column runs a "
                             f"library's matrix-vector kernel)")
    start = time.perf_counter()
    template = template or _schedules.Schedule(c_position="combine", combine_format=fmt)
    prober = _Prober(call, unit, template, fmt, dtype, seed)
    Ks = sorted({k for k in PROBE_KS if k <= k_max} | {k_max})
    blocks: set[int] = set()
    fprev_queries = 0
    for M, N in shapes:                  # FPRev at the longest K: the blocks of the driver, if any
        b, q = _fprev_blocks(call, M, N, k_max, precision, dtype)
        blocks |= b
        fprev_queries += q
    narrow = template.output is not None and _formats.format(template.output).p < precision
    splits = candidate_splits(tuple(blocks), tuple(q for q in NARROW_OUTPUT_CHUNKS if q < k_max) if narrow else ())
    rules: list[_schedules.KRule] = []
    regions: dict[tuple[tuple[int, int], tuple[int, int]], list[_schedules.KRule]] = {}
    rec = Recovery(None, 0, 0.0, tuple(sorted(blocks)))
    for M, N in shapes:
        oks: list[np.ndarray] = []
        for K in Ks:                     # the splits that held at the previous K first, all where they fail
            ok = prober.matches(M, N, K, splits, np.asarray(oks[-1].any(axis=(0, 1))) if oks else None)
            if oks and not ok.any(axis=2).all():
                ok = prober.matches(M, N, K, splits)
            oks.append(ok)
        if progress is not None:
            progress(f"{M}x{N}: {len(Ks)} K probed")
        chosen = None
        for gname, rk, ck in _groupings(M, N):
            sets = [_group_sets(ok, rk, ck) for ok in oks]
            per_k = [p for p in sets if p is not None]
            if len(per_k) == len(sets):
                chosen = (gname, rk, ck, per_k)
                break
        if chosen is None:
            bad = [f"K={K}: outputs {np.argwhere(~ok.any(axis=2))[:4].tolist()} match no candidate split"
                   for K, ok in zip(Ks, oks) if not ok.any(axis=2).all()]
            rec.unexplained.append(f"{M}x{N}: " + ("; ".join(bad[:3]) or "no grouping of the outputs by tiles "
                                                   "has one split per group at every K"))
            continue
        gname, rk, ck, per_k = chosen
        texts = []
        for key in per_k[0]:
            rows, cols = np.flatnonzero(rk == key[0]), np.flatnonzero(ck == key[1])
            r, c = int(rows[0]), int(cols[0])
            runs, missed = _runs(prober, M, N, rows, cols, Ks, [p[key] for p in per_k], splits)
            if missed:
                rec.unexplained.append(f"{M}x{N}, rows of tile {key[0]}, columns of tile {key[1]}: at K = "
                                       f"{', '.join(map(str, missed))} neither neighbouring split gives the bits")
            krules = [_schedules.KRule(k0, k1 if i + 1 < len(runs) else None, splits[s], mn=(M, N))
                      for i, (k0, k1, s) in enumerate(runs)]
            texts.append(f"rows of tile {key[0]}, columns of tile {key[1]}: " + "; ".join(
                f"K {k0}..{k1 if i + 1 < len(runs) else ''} {_describe(splits[s])}"
                for i, (k0, k1, s) in enumerate(runs)))
            if (r, c) == (0, 0):
                rules += krules
            else:
                regions.setdefault((_band(key[0]), _band(key[1])), []).extend(krules)
        rec.groups[(M, N)] = f"{gname}; " + " | ".join(texts)
    rec.queries = prober.queries + fprev_queries
    rec.seconds = time.perf_counter() - start
    if rules:
        shapes_text = ", ".join(f"{M}x{N}" for M, N in rec.groups)
        rec.schedule = replace(
            template, name=name, rules=tuple(rules),
            regions=tuple(_schedules.Region(rows, cols, 1, 1, rules=tuple(rs)) for (rows, cols), rs in regions.items()),
            shapes=f"the products M x N in {{{shapes_text}}} with K from 1 (no bound above: the last split "
                   f"probed up to K = {k_max})", threads=1,
            evidence=f"recovered from the library alone: {rec.queries} calls (each product's outputs against "
                     f"{len(splits)} candidate splits on random and adversarial inputs, FPRev's K blocks, "
                     f"bisection of K between changes)")
    return rec
