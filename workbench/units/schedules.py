"""Schedules as data: how a library composes a matrix unit's operations into a GEMM.

A library's GEMM is a unit (a :class:`~workbench.engine.Model`) plus a schedule: how K
is cut into parts and each part consumed by the unit, how the parts' results are
combined (in order or pairwise, in which format and rounding), where C enters (in the
unit, at the start of the combination, or in an epilogue), and how the result is
converted at the end.  A :class:`Schedule` says all of that as data and
:func:`workbench.gemm` (``schedule=``) runs it, so a schedule goes wherever a unit
goes: ``gemm``, the algorithms, sweep specs (by name or as :meth:`Schedule.to_dict`),
:class:`workbench.torch.Policy`.

What a library does often depends on the shape and the thread count (cuBLAS picks
its split of K per (M, N, K)).  A schedule states this in its data: ``rules`` give the
split per K and a K no rule covers is refused with a ValueError naming the K values
the schedule holds for; ``shapes`` and ``threads`` say for which products and thread
counts it was verified.  Nothing is guessed silently.

The named schedules of :data:`SCHEDULES`:

* ``"chain"``, ``"outside"``, ``"promote-128"``: :func:`workbench.gemm`'s
  ``accumulation`` options as schedules (``accumulation="promote", promote_every=128``
  is DeepSeek-V3's fp32 promotion every 128 elements; DeepSeek-AI 2024, Section 3.3.2);
* ``"cublas-h100-*"``: cuBLAS 13.1 through PyTorch 2.11 on an H100 for 64 x 64
  products, recovered from the products measured on a real H100
  (``tests/data/gpu_witness``) and, for fp16, the summation tree revealed there with
  FPRev (Xie et al., USENIX ATC'25; ``benchmarks/fprev_cublas.py``).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping

import numpy as np

from ..numbers import formats as _formats
from ..numbers.validation import unknown_name

__all__ = ["Split", "KRule", "Region", "Threading", "Schedule", "SCHEDULES", "get", "from_accumulation",
           "INNER", "C_POSITIONS", "COMBINES", "TAILS"]

#: how the unit consumes one part (:func:`workbench.gemm`'s ``accumulation``)
INNER = ("chain", "outside", "promote")
#: where C (times beta) enters
C_POSITIONS = ("unit", "combine", "epilogue")
#: where a part's elements after the unrolled loop go: to accumulator 0, added one by one to
#: the accumulators' sum, or to the first term after the first halving step (:attr:`Split.tail`)
TAILS = ("first", "after", "half")
#: how the parts' results are summed: one after another, in neighbouring pairs ((t0 + t1) +
#: (t2 + t3)), or by halving (t_i + t_{i+h}, h = ceil(n / 2), then again: a vector register's
#: horizontal reduction, upper half onto lower half, as AVX-512 kernels end a K loop)
COMBINES = ("in-order", "pairwise", "halving", "evens-odds")


@dataclass(frozen=True)
class Split:
    """How K is cut into parts, each consumed by the unit from a zero accumulator
    (the first part's from C where ``Schedule.c_position == "unit"``).

    ``parts``: that many parts of equal length (K must be a multiple), or
    ``part_size``: parts of that many elements, the last one shorter (cuBLAS'
    split-K: whole k-tiles per part).  ``interleave``: the parts are not contiguous
    but interleaved by tiles of that many elements (part p holds tiles p, p + parts,
    ...): several accumulators per output, each a chain over its tiles.  ``block``:
    a BLAS driver's K blocking (GEMM_Q): parts of ``block`` elements, the last two
    halved (each half rounded up to ``block_unroll``) when less than two blocks remain;
    ``block_half_up``: the first half is ceil(rest / 2) instead (OpenBLAS' threaded driver,
    ``driver/level3/level3_thread.c``: ``min_l = (min_l + 1) / 2``, where the one-thread
    ``level3.c`` rounds ``min_l / 2`` up to GEMM_UNROLL_M).

    ``cycle``: K in whole cycles of parts of these sizes, the remainder (K modulo the
    cycle's length) in parts of one element, and a part shorter than ``lane_block``
    consumed by one accumulator (MKL SGEMM's peel loop, ``(1, 1, 1, 1, 4)`` with four
    lanes: per 8 elements four products added one by one, then the other four summed
    from zero and added).

    ``halve`` (with ``part_size``): where part_size < K < 2 * part_size, the parts are
    two of K // 2 elements and, for odd K, a last one of one element (MKL's SGEMM K
    blocking: 300 = 150 + 150, 193 = 96 + 96 + 1, 700 = 192 + 192 + 192 + 124).

    ``lanes``: each part is itself consumed by that many accumulators (vector
    registers of a micro-kernel whose K loop is unrolled by ``lane_block``): of a part's
    n elements the first n - n % lane_block go to accumulator k % lanes, the rest to
    accumulator 0 after them (``lane_block=1``: a masked tail, every element to accumulator
    k % lanes); each accumulator is a chain from zero, and they are summed as
    ``lane_combine`` says - ``"pairwise"`` ((l_0 + l_1) + (l_2 + l_3)), ``"in-order"``
    (((l_0 + l_1) + l_2) + l_3), ``"halving"`` ((l_0 + l_2) + (l_1 + l_3): a vector's
    upper half added onto its lower half, then again) or ``"evens-odds"`` (the
    even-numbered accumulators summed pairwise, the odd-numbered likewise, then the two:
    ((l_0 + l_2) + (l_4 + l_6)) + ((l_1 + l_3) + (l_5 + l_7)), OpenBLAS' Prescott SGEMM
    one-row edge, ``gemm_kernel_8x4_sse3.S``) - each addition rounded like the parts'
    combination, before the part joins the others.

    ``tail="after"``: the part's elements after the unrolled loop's whole rounds are not
    fed to accumulator 0 but added one by one to the accumulators' sum, after
    ``lane_combine``; ``held``: the loop's last ``held`` products (of its last round, where
    it ran at all) join that tail - a software-pipelined loop whose last product is still
    pending when the accumulators are summed (OpenBLAS' Nehalem SGEMM, the one-column edge
    of its 2- and 4-row tiles, ``kernel/x86_64/gemm_kernel_4x8_nehalem.S``: even k on one
    accumulator, odd k on another, K unrolled by 4, ``addps`` of the two after the loop,
    then the pending product and the K % 4 tail).  ``tail="half"`` (with ``"halving"``):
    the tail goes onto the first term after the first halving step, before the rest -
    ((l_0 + l_2) + tail) + (l_1 + l_3): two vector registers of two lanes added, the
    tail on the low lane, then the horizontal sum (OpenBLAS' Nehalem DGEMM one-row,
    one-column corner, ``gemm_kernel_4x4_core2.S``).

    ``fused=False``: the accumulators take no fused multiply-add - each product is rounded
    to the unit's output format, then added to the accumulator and rounded again (a kernel
    for a CPU without FMA: SSE/AVX ``mulps`` then ``addps``, OpenBLAS' Sandybridge,
    Nehalem and Prescott kernels); the unit's own arithmetic is not used."""

    parts: int = 1
    part_size: int | None = None
    interleave: int | None = None
    block: int | None = None
    block_unroll: int = 1
    block_half_up: bool = False
    lanes: int = 1
    lane_block: int = 1
    lane_combine: str = "pairwise"
    halve: bool = False
    cycle: tuple[int, ...] | None = None
    fused: bool = True
    tail: str = "first"
    held: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.cycle, list):                 # read back from JSON (to_dict)
            object.__setattr__(self, "cycle", tuple(self.cycle))
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"Split.parts={self.parts!r}: expected a positive integer")
        for name in ("part_size", "interleave"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"Split.{name}={v!r}: expected None or a positive integer")
        if self.block is not None and (not isinstance(self.block, int) or self.block < 1 or self.parts != 1
                                       or self.part_size is not None or self.interleave is not None):
            raise ValueError(f"Split.block={self.block!r}: expected a positive integer, alone")
        for name in ("block_unroll", "lanes", "lane_block"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"Split.{name}={v!r}: expected a positive integer")
        if self.lane_block % self.lanes and self.lane_block != 1:
            raise ValueError(f"Split.lane_block={self.lane_block} must be 1 or a multiple of lanes={self.lanes} "
                             f"(the unrolled K loop feeds every accumulator alike; 1: a masked tail, every "
                             f"element to accumulator k % lanes)")
        if self.part_size is not None and self.parts != 1:
            raise ValueError(f"Split: give parts ({self.parts}) or part_size ({self.part_size}), not both")
        if self.part_size is not None and self.interleave is not None:
            raise ValueError("Split: interleave goes with parts (that many accumulators), not part_size")
        if self.lane_combine not in COMBINES:
            raise ValueError(f"Split.lane_combine={self.lane_combine!r}: expected one of {COMBINES}")
        if not isinstance(self.halve, bool) or (self.halve and self.part_size is None):
            raise ValueError(f"Split.halve={self.halve!r}: expected a bool, True only with part_size")
        if not isinstance(self.block_half_up, bool) or (self.block_half_up and self.block is None):
            raise ValueError(f"Split.block_half_up={self.block_half_up!r}: expected a bool, True only with block")
        if not isinstance(self.fused, bool):
            raise ValueError(f"Split.fused={self.fused!r}: expected a bool")
        if self.tail not in TAILS:
            raise ValueError(f"Split.tail={self.tail!r}: expected one of {TAILS}")
        if self.tail == "half" and (self.lane_combine != "halving" or self.lanes < 2):
            raise ValueError(f"Split.tail='half' goes with lane_combine='halving' and lanes > 1 (got "
                             f"{self.lane_combine!r}, lanes={self.lanes})")
        if (not isinstance(self.held, int) or isinstance(self.held, bool) or self.held < 0
                or (self.held and (self.lanes == 1 or self.held >= self.lane_block or self.tail == "first"))):
            raise ValueError(f"Split.held={self.held!r}: expected 0, or fewer than lane_block={self.lane_block} "
                             f"products with lanes > 1 and a tail after the loop (a pipelined loop's pending products)")
        if self.cycle is not None and (not _ints(self.cycle, len(self.cycle)) or not self.cycle
                                       or min(self.cycle) < 1 or self.parts != 1 or self.part_size is not None
                                       or self.interleave is not None or self.block is not None):
            raise ValueError(f"Split.cycle={self.cycle!r}: expected a tuple of positive part sizes, alone")

    @property
    def whole(self) -> bool:
        """Whether K is one part consumed by one accumulator of the unit (no cut at all)."""
        return (self.parts == 1 and self.part_size is None and self.block is None and self.interleave is None
                and self.lanes == 1 and self.cycle is None and self.fused)

    def lanes_of(self, part: np.ndarray) -> list[np.ndarray]:
        """The positions each of the ``lanes`` accumulators consumes of one part, in
        order (one list holding the part itself where ``lanes == 1``)."""
        if self.lanes == 1 or (self.cycle is not None and len(part) < self.lane_block):
            return [part]
        main = self._loop_end(len(part))
        out = [part[lane:main:self.lanes] for lane in range(self.lanes)]
        if self.tail == "first":
            out[0] = np.concatenate([out[0], part[main:]])
        return out

    def tail_of(self, part: np.ndarray) -> np.ndarray:
        """The positions of one part added one by one after its accumulators (to their sum,
        or after the first halving step: ``tail``; empty for ``"first"``)."""
        if self.tail == "first" or self.lanes == 1:
            return part[:0]
        return part[self._loop_end(len(part)):]

    def _loop_end(self, n: int) -> int:
        """Where the unrolled loop's accumulators stop in a part of n elements: its whole
        rounds of ``lane_block``, less the ``held`` products still pending at its end."""
        main = n - n % self.lane_block
        return main - self.held if main else 0

    def indices(self, K: int) -> list[np.ndarray]:
        """The positions of K in each part, in the order the unit consumes them."""
        if self.cycle is not None:
            out, s, n = [], 0, sum(self.cycle)
            while s + n <= K:
                for size in self.cycle:
                    out.append(np.arange(s, s + size))
                    s += size
            out += [np.arange(k, k + 1) for k in range(s, K)]
            return out or [np.arange(0)]
        if self.block is not None:
            out, s, u = [], 0, self.block_unroll
            while s < K:
                rest = K - s
                half = (rest + 1) // 2 if self.block_half_up else (rest // 2 + u - 1) // u * u
                n = self.block if rest >= 2 * self.block else (half if rest > self.block else rest)
                out.append(np.arange(s, s + n))
                s += n
            return out or [np.arange(0)]
        if self.part_size is not None:
            n = K // 2 if self.halve and self.part_size < K < 2 * self.part_size else self.part_size
            return [np.arange(s, min(s + n, K)) for s in range(0, K, n)] or [np.arange(0)]
        if self.interleave is not None:
            tile = np.arange(K) // self.interleave % self.parts
            return [np.flatnonzero(tile == p) for p in range(self.parts)]
        if K % self.parts:
            raise ValueError(f"Split into {self.parts} equal parts needs K a multiple of {self.parts}; got K={K}")
        step = K // self.parts
        return [np.arange(p * step, (p + 1) * step) for p in range(self.parts)]


#: the split of a schedule without rules: K whole, one accumulator
_WHOLE = Split()


@dataclass(frozen=True)
class KRule:
    """``split`` applies to every K with ``k_min <= K <= k_max`` (``k_max`` None: no bound)
    and, where ``mn`` is given, only to products of that (M, N); where ``m_min`` or
    ``n_min`` is given, only to products with M >= m_min and N >= n_min (a library that
    picks another kernel for small matrices); where ``mnk_max`` is given, only to products
    of at most that many multiply-adds, M * N * K <= mnk_max (torch hands bfloat16
    products of at most 16^3 to ATen's loop and larger ones to oneDNN).  A rule with an
    ``mn`` goes before the rules without one; otherwise the first rule that covers a
    product wins.  ``split=None``
    marks products measured whose split is not known: the schedule refuses them
    (ValueError) instead of guessing."""

    k_min: int
    k_max: int | None
    split: Split | None
    mn: tuple[int, int] | None = None
    m_min: int = 1
    n_min: int = 1
    mnk_max: int | None = None

    def __post_init__(self) -> None:
        for name in ("m_min", "n_min"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"KRule.{name}={v!r}: expected a positive integer")
        v = self.mnk_max
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise ValueError(f"KRule.mnk_max={v!r}: expected None or a positive integer (a bound on M * N * K)")

    def covers(self, K: int, M: int | None = None, N: int | None = None) -> bool:
        """Whether the rule holds for K (and, if it names one, for the product's (M, N);
        an M or N not given counts as large enough for ``m_min``/``n_min`` and too large
        for ``mnk_max``)."""
        if self.mn is not None and (M, N) != tuple(self.mn):
            return False
        if (M is not None and M < self.m_min) or (N is not None and N < self.n_min):
            return False
        if self.mnk_max is not None and (M is None or N is None or M * N * K > self.mnk_max):
            return False
        return self.k_min <= K and (self.k_max is None or K <= self.k_max)


def _band(n: int, t: int) -> int:
    """The end of the rows (columns) that full tiles of t cover: n - n % t (0 for t = 0)."""
    return 0 if t == 0 else n - n % t


@dataclass(frozen=True)
class Region:
    """Outputs that a library computes with another micro-kernel: their parts are
    consumed by ``lanes`` accumulators (``Split.lanes``, ``lane_block``) instead of
    one.  ``rows=(a, b)`` selects rows i with M - M % a <= i < M - M % b (a = 0: from the
    first row; b = 1: to the last), the way a BLAS cuts M into tiles and its remainder
    into smaller kernels; ``cols`` likewise over N.  ``(0, 4)``: the rows of whole
    4-row tiles; ``(2, 1)``: the last row when M is odd (the 1-row kernel after the
    2-row one).

    Three optional narrowings, for kernels that treat parts of a tile differently
    (OpenBLAS' Haswell SGEMM, ``kernel/x86_64/sgemm_kernel_8x4_haswell_2.c``: in each
    block of 12 rows of numpy's row-major C - 12 columns of the column-major C the
    kernel sees - the first or last 8 columns of 6 of those rows keep two accumulators,
    depending on how many 8-column tiles there are):

    ``row_phase=(period, lo, hi)``
        only the band's rows whose offset from the band's first row, modulo
        ``period``, lies in ``lo .. hi - 1`` (``(12, 0, 6)``: the first 6 rows of
        every 12);
    ``col_panel=p``
        only tile ``p`` of the cols band's tiles of ``cols[1]`` columns (negative:
        counted from the band's end, -1 the last);
    ``panels=(at_least, modulus, residue)``
        the region applies only where the cols band holds n tiles of ``cols[1]`` with
        n >= at_least and n % modulus == residue (a kernel whose path depends on how
        many tiles there are, and on their parity).

    Three more, for MKL SGEMM's peel loop (the first columns of a row before C reaches
    16-byte alignment, in the small-matrix path only):

    ``n_mod=(modulus, residue, at_least)``
        the region applies only where N % modulus == residue and N >= at_least;
    ``below=(m, n)``
        only to products with M < m or N < n (the kernel of small matrices);
    ``split``
        the region's outputs consume K as this :class:`Split` says (its own loop),
        instead of the schedule's split with the region's ``lanes``;
    ``rules``
        or as these :class:`KRule` s say per K and per product (M, N) - a kernel that
        changes its loop with K or with the product's shape, as a recovered library
        schedule finds (:mod:`workbench.probes.recovery`); where no rule covers the
        product the region does not apply."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    lanes: int
    lane_block: int
    row_phase: tuple[int, int, int] | None = None
    col_panel: int | None = None
    panels: tuple[int, int, int] | None = None
    n_mod: tuple[int, int, int] | None = None
    below: tuple[int, int] | None = None
    split: Split | None = None
    rules: tuple[KRule, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.rules, list):                 # read back from JSON (to_dict)
            object.__setattr__(self, "rules", tuple(self.rules))
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if (not isinstance(v, tuple) or len(v) != 2 or not all(isinstance(t, int) and t >= 0 for t in v)
                    or v[1] < 1 or (v[0] != 0 and v[0] <= v[1])):
                raise ValueError(f"Region.{name}={v!r}: expected (a, b) with a = 0 or a > b >= 1 "
                                 f"(rows M - M % a .. M - M % b)")
        Split(lanes=self.lanes, lane_block=self.lane_block)     # the same checks as a Split's
        ph = self.row_phase
        if ph is not None and (not _ints(ph, 3) or not 0 <= ph[1] < ph[2] <= ph[0]):
            raise ValueError(f"Region.row_phase={ph!r}: expected None or (period, lo, hi) with "
                             f"0 <= lo < hi <= period")
        if self.col_panel is not None and not _ints((self.col_panel,), 1, signed=True):
            raise ValueError(f"Region.col_panel={self.col_panel!r}: expected None or an integer tile index")
        pn = self.panels
        if pn is not None and (not _ints(pn, 3) or pn[1] < 1 or pn[2] >= pn[1]):
            raise ValueError(f"Region.panels={pn!r}: expected None or (at_least, modulus, residue) with "
                             f"modulus >= 1 and 0 <= residue < modulus")
        nm = self.n_mod
        if nm is not None and (not _ints(nm, 3) or nm[0] < 1 or nm[1] >= nm[0]):
            raise ValueError(f"Region.n_mod={nm!r}: expected None or (modulus, residue, at_least) with "
                             f"modulus >= 1 and 0 <= residue < modulus")
        if self.below is not None and (not _ints(self.below, 2) or min(self.below) < 1):
            raise ValueError(f"Region.below={self.below!r}: expected None or (m, n), positive integers")
        if self.split is not None and not isinstance(self.split, Split):
            raise TypeError(f"Region.split={self.split!r}: expected None or a Split")
        if not all(isinstance(r, KRule) and r.split is not None for r in self.rules):
            raise TypeError(f"Region.rules={self.rules!r}: expected KRule records, each with a split")
        if self.rules and self.split is not None:
            raise ValueError("Region: give split (one loop for every K) or rules (per K and product), not both")

    def split_for(self, K: int, M: int, N: int) -> Split | None:
        """The region's own split of an M x N x K product: ``split``, or the first of
        ``rules`` that covers it (those naming an (M, N) first, as :meth:`Schedule.split`);
        None where the region's outputs take the schedule's split with its ``lanes``,
        or where no rule covers the product."""
        for r in sorted(self.rules, key=lambda r: r.mn is None):
            if r.covers(K, M, N):
                return r.split
        return self.split

    def span(self, M: int, N: int) -> tuple[slice, slice]:
        """The bands of rows and columns of an M x N product (``rows``, ``cols``; possibly empty)."""
        return (slice(_band(M, self.rows[0]), _band(M, self.rows[1])),
                slice(_band(N, self.cols[0]), _band(N, self.cols[1])))

    def outputs(self, M: int, N: int, K: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The rows and the columns of an M x N product this region covers: :meth:`span`'s
        bands narrowed by ``row_phase``, ``col_panel``, ``panels``, ``n_mod`` and
        ``below`` (possibly empty; empty too where ``rules`` hold none for K, M, N)."""
        rs, cs = self.span(M, N)
        if ((self.n_mod is not None and (N % self.n_mod[0] != self.n_mod[1] or N < self.n_mod[2]))
                or (self.below is not None and M >= self.below[0] and N >= self.below[1])
                or (self.rules and (K is None or self.split_for(K, M, N) is None))):
            return np.arange(0), np.arange(0)
        rows, cols = np.arange(rs.start, max(rs.start, rs.stop)), np.arange(cs.start, max(cs.start, cs.stop))
        if self.row_phase is not None:
            period, lo, hi = self.row_phase
            phase = (rows - rs.start) % period
            rows = rows[(lo <= phase) & (phase < hi)]
        t = self.cols[1]
        n = len(cols) // t
        if self.panels is not None:
            at_least, modulus, residue = self.panels
            if n < at_least or n % modulus != residue:
                cols = cols[:0]
        if self.col_panel is not None:
            p = self.col_panel + n if self.col_panel < 0 else self.col_panel
            cols = cols[p * t:(p + 1) * t] if 0 <= p < n else cols[:0]
        return rows, cols


def _ints(v: Any, n: int, signed: bool = False) -> bool:
    """Whether ``v`` is a tuple of ``n`` integers (not bools), non-negative unless ``signed``."""
    return (isinstance(v, tuple) and len(v) == n
            and all(isinstance(t, int) and not isinstance(t, bool) and (signed or t >= 0) for t in v))


def _widths(n: int, parts: int, multiple: int, at_least: int = 1) -> list[tuple[int, int]]:
    """``n`` cut into ``parts`` ranges the way OpenBLAS' threaded driver cuts M and N
    (``driver/level3/level3_thread.c``, ``gemm_driver``): each width the rest divided
    over the parts left, rounded up, raised to ``at_least`` where it is above 1 and below
    it, then rounded up to a multiple of ``multiple`` where that is not more than the rest
    (``round_up``), the last range cut at n."""
    out: list[tuple[int, int]] = []
    start, left = 0, n
    while left > 0:
        w = -(-left // (parts - len(out))) if parts > len(out) else left
        if 1 < w < at_least:
            w = at_least
        if multiple <= left and w > multiple:
            w = -(-w // multiple) * multiple
        w = min(w, left)
        out.append((start, start + w))
        start, left = start + w, left - w
    return out


@dataclass(frozen=True)
class Threading:
    """How a threaded BLAS driver cuts a product over its threads, so that each output
    is computed by the one-thread schedule on the sub-product it falls in (OpenBLAS,
    ``interface/gemm.c`` and ``driver/level3/level3_thread.c``).  numpy's row-major
    C = A @ B is OpenBLAS' column-major C^T = B^T A^T: its m is numpy's N (columns), its n
    numpy's M (rows).

    * ``threads``: the thread count the library was asked for; a product of W = M N K
      multiply-adds runs on one thread where W <= ``min_work`` and on
      min(threads, floor(W / min_work)) threads otherwise (SMP_THRESHOLD_MIN x
      GEMM_MULTITHREAD_THRESHOLD = 65536 x 4 in a default build);
    * the threads are laid out as t_m x t_n: t_m = 1 where N < 2 ``switch_ratio``, else
      the thread count, halved while N < t_m x switch_ratio; t_n = 1 where M <
      switch_ratio x t_m, else ceil(M / (switch_ratio t_m)) capped at threads / t_m; then
      t_m halved and t_n doubled while that lowers M t_m + N t_n.  t_m t_n <= 1: one
      thread after all (the one-thread driver, K halved as the schedule says);
    * numpy's columns are cut into t_m ranges rounded up to ``col_multiple``; numpy's
      rows into t_m t_n ranges (each at least ``switch_ratio`` rows), rounded up to
      ``row_multiple`` where the columns are cut too (t_m > 1) - as OpenBLAS 0.3.31 was
      found to do: its rows are not rounded where only they are cut - and each row range
      into ``pieces`` pieces of ceil(rows / pieces) (DIVIDE_RATE): the kernel tiles each
      piece from its first row, so the edge kernels run at the end of every piece;
    * ``k_half_up``: the threaded driver halves the last two K blocks as ceil(rest / 2)
      (``min_l = (min_l + 1) / 2``; ``Split.block_half_up``), where the one-thread
      driver rounds rest / 2 up to GEMM_UNROLL_M.

    ``cut`` gives the row and column ranges of a product (None: one thread)."""

    threads: int
    min_work: int = 65536 * 4
    switch_ratio: int = 2
    row_multiple: int = 1
    col_multiple: int = 1
    pieces: int = 2
    k_half_up: bool = True

    def __post_init__(self) -> None:
        for name in ("threads", "min_work", "switch_ratio", "row_multiple", "col_multiple", "pieces"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"Threading.{name}={v!r}: expected a positive integer")
        if not isinstance(self.k_half_up, bool):
            raise ValueError(f"Threading.k_half_up={self.k_half_up!r}: expected a bool")

    def layout(self, M: int, N: int, K: int) -> tuple[int, int]:
        """(t_m, t_n): the threads over numpy's columns and over its rows (class docstring)."""
        work = M * N * K
        t = 1 if work <= self.min_work else min(self.threads, work // self.min_work)
        if t <= 1:
            return 1, 1
        sr, m, n = self.switch_ratio, N, M
        tm = 1
        if m >= 2 * sr:
            tm = t
            while m < tm * sr:
                tm //= 2
        if n < sr * tm:
            tn = 1
        else:
            tn = -(-n // (sr * tm))
            if tm * tn > t:
                tn = t // tm
            while tm % 2 == 0 and n * tm + m * tn > n * (tm // 2) + m * (tn * 2):
                tm, tn = tm // 2, tn * 2
        return tm, tn

    def cut(self, M: int, N: int, K: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
        """The row ranges (every piece of every thread's rows) and the column ranges of an
        M x N x K product, each output computed by the one-thread schedule on the
        sub-product of its row and column range; None where the product runs on one thread."""
        tm, tn = self.layout(M, N, K)
        if tm * tn <= 1:
            return None
        cols = _widths(N, tm, self.col_multiple)
        rows = []
        for a, b in _widths(M, tm * tn, self.row_multiple if tm > 1 else 1, at_least=self.switch_ratio):
            d = -(-(b - a) // self.pieces)
            rows += [(s, min(b, s + d)) for s in range(a, b, d)]
        return rows, cols

    def per_thread(self, schedule: "Schedule", M: int, N: int, K: int) -> "Schedule":
        """``schedule`` as each thread runs its part of an M x N x K product: the split of K
        the library chose for the whole product (its rules, and each region's, resolved
        for M x N x K: the interface picks the kernel path and K blocking once), where
        ``k_half_up`` its K blocks halved as ceil(rest / 2), and no threading; the regions'
        outputs are those of each sub-product (the kernels tile what they are handed)."""
        def up(split: Split | None) -> Split | None:
            return (replace(split, block_unroll=1, block_half_up=True)
                    if self.k_half_up and split is not None and split.block is not None else split)

        regions = tuple(replace(g, rules=(), split=up(g.split_for(K, M, N))) if g.rules else replace(g, split=up(g.split))
                        for g in schedule.regions if not g.rules or g.split_for(K, M, N) is not None)
        rules = (KRule(0, None, up(schedule.split(K, M, N))),) if schedule.rules else ()
        return replace(schedule, threading=None, rules=rules, regions=regions)


@dataclass(frozen=True)
class Schedule:
    """How a library composes unit operations into D = alpha * A @ B + beta * C.

    Fields (all data; :func:`workbench.gemm` runs them):

    ``rules``
        :class:`KRule` s: the :class:`Split` of K per K.  Empty: one part for every K.
        A K no rule covers raises a ValueError (the schedule says where it holds).
    ``inner``, ``promote_every``
        How the unit consumes each part: ``"chain"`` (each block of L feeds the next
        as c), ``"outside"`` (each block from 0, added to an fp32 accumulator with
        round-to-nearest), ``"promote"`` (chains of ``promote_every`` elements from 0
        added to the fp32 accumulator: DeepSeek-V3's every-128).
    ``c_position``
        ``"unit"``: C is the first part's accumulator input (the first block's c, or
        the fp32 accumulator's start for ``outside``/``promote``); ``"combine"``: C
        is the first term of the combination, fl(fl(C + P_0) + P_1) ... (a BLAS that
        updates C after each K block); ``"epilogue"``: the parts' sum P is formed
        from zero and D = fl(alpha * P + beta * C) on ordinary cores (cuBLAS).
        ``"unit"`` and ``"combine"`` need alpha = 1 and beta in {0, 1}; otherwise
        the epilogue runs, as :func:`workbench.gemm` documents.
    ``combine``, ``combine_format``, ``combine_rounding``
        How the parts' results are summed: ``"in-order"`` (((P_0 + P_1) + P_2) ...)
        or ``"pairwise"`` ((P_0 + P_1) + (P_2 + P_3) ...), each addition rounded to
        ``combine_format`` with ``combine_rounding`` (default fp32, RNE).
    ``output``, ``output_rounding``
        The final conversion: the result (in the unit's output format) is rounded to
        ``output`` (None: kept) with ``output_rounding`` - cuBLAS' fp16 output of an
        fp32 computation (``CUBLAS_COMPUTE_32F``).
    ``regions``
        :class:`Region` s: outputs whose parts another micro-kernel consumes with
        several accumulators (OpenBLAS' edge kernels); a later region wins where two
        overlap.
    ``threading``
        A :class:`Threading`: how the library cuts a product over its threads, each
        output computed by this schedule (without ``threading``) on its sub-product.
        None: one thread, or a result that does not depend on the thread count.
    ``shapes``, ``threads``
        Where the schedule was verified: the products (M, N, K) in words, and the
        thread count (None: the library's result does not depend on it).
    ``evidence``
        Where the schedule comes from.
    """

    name: str = "custom"
    rules: tuple[KRule, ...] = ()
    inner: str = "chain"
    promote_every: int | None = None
    c_position: str = "unit"
    combine: str = "in-order"
    combine_format: str = "fp32"
    combine_rounding: str = "rne"
    output: str | None = None
    output_rounding: str = "rne"
    regions: tuple[Region, ...] = ()
    threading: Threading | None = None
    shapes: str = "any"
    threads: int | None = None
    evidence: str = ""

    def __post_init__(self) -> None:
        for name, allowed in (("inner", INNER), ("c_position", C_POSITIONS), ("combine", COMBINES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"Schedule.{name}={getattr(self, name)!r}: expected one of {allowed}")
        if (self.inner == "promote") != (self.promote_every is not None):
            raise ValueError(f"Schedule.promote_every={self.promote_every!r} goes with inner='promote' and only "
                             f"with it (inner={self.inner!r})")
        if self.promote_every is not None and (not isinstance(self.promote_every, int) or self.promote_every < 1):
            raise ValueError(f"Schedule.promote_every={self.promote_every!r}: expected a positive integer")
        for name in ("combine_format", "output"):
            v = getattr(self, name)
            if v is not None:
                _formats.format(v)            # a ValueError names an unknown format
        for name in ("combine_rounding", "output_rounding"):
            v = getattr(self, name)
            if v not in _formats.ROUNDING_MODES or v == "sr":
                raise ValueError(f"Schedule.{name}={v!r}: expected a deterministic rounding mode of "
                                 f"{[m for m in _formats.ROUNDING_MODES if m != 'sr']}")
        for r in self.rules:
            if not isinstance(r, KRule):
                raise TypeError(f"Schedule.rules holds {r!r}: expected KRule records")
        for g in self.regions:
            if not isinstance(g, Region):
                raise TypeError(f"Schedule.regions holds {g!r}: expected Region records")
        if self.threading is not None and not isinstance(self.threading, Threading):
            raise TypeError(f"Schedule.threading={self.threading!r}: expected None or a Threading record")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"Schedule.threads={self.threads!r}: expected None or a positive integer")

    def split(self, K: int, M: int | None = None, N: int | None = None) -> Split:
        """The :class:`Split` of K for an (M, N) product (ValueError where no rule covers it)."""
        if not self.rules:
            return _WHOLE
        for r in sorted(self.rules, key=lambda r: r.mn is None):
            if r.covers(K, M, N):
                if r.split is None:
                    raise ValueError(f"schedule {self.name!r}: the split of K={K} for {M} x {N} products is not "
                                     f"known (measured, no schedule tried reproduces it; {self.shapes})")
                return r.split
        held = ", ".join((f"{r.k_min}" if r.k_max == r.k_min else f"{r.k_min}..{r.k_max or 'inf'}")
                         + (f" with M >= {r.m_min}, N >= {r.n_min}" if r.m_min > 1 or r.n_min > 1 else "")
                         + (f" with M * N * K <= {r.mnk_max}" if r.mnk_max is not None else "")
                         for r in self.rules)
        raise ValueError(f"schedule {self.name!r} has no rule for K={K} ({M} x {N}): it holds for K in {{{held}}} "
                         f"({self.shapes}); its split of other products is not known")

    def parts(self, K: int, M: int | None = None, N: int | None = None) -> list[np.ndarray]:
        """Positions of K in each part (:meth:`Split.indices` of :meth:`split`)."""
        return self.split(K, M, N).indices(K)

    def in_region(self, region: Region, K: int, M: int, N: int) -> "Schedule":
        """This schedule as the outputs of ``region`` see in an M x N x K product: the
        region's own split (:meth:`Region.split_for`), or every split consumed by the
        region's lanes; no regions."""
        own = region.split_for(K, M, N)
        if own is not None:
            return replace(self, rules=(KRule(0, None, own),), regions=())

        def lanes(s: Split) -> Split:
            return replace(s, lanes=region.lanes, lane_block=region.lane_block)

        rules = tuple(replace(r, split=None if r.split is None else lanes(r.split)) for r in self.rules)
        return replace(self, rules=rules or (KRule(0, None, lanes(Split())),), regions=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (:func:`from_dict` reads them back): for sweep specs."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Schedule":
        """The schedule of :meth:`to_dict`'s fields (fields left out take their defaults:
        a unit file writes only those that differ)."""
        known = set(cls.__dataclass_fields__)
        extra = set(d) - known
        if extra:
            raise ValueError(f"unknown schedule fields {sorted(extra)}; expected some of {sorted(known)}")
        kw = dict(d)
        kw["rules"] = tuple(_krule(r) for r in kw.get("rules", ()))
        kw["regions"] = tuple(g if isinstance(g, Region) else Region(
            tuple(g["rows"]), tuple(g["cols"]), g.get("lanes", 1), g.get("lane_block", 1),
            None if g.get("row_phase") is None else tuple(g["row_phase"]), g.get("col_panel"),
            None if g.get("panels") is None else tuple(g["panels"]),
            None if g.get("n_mod") is None else tuple(g["n_mod"]),
            None if g.get("below") is None else tuple(g["below"]),
            None if g.get("split") is None or isinstance(g["split"], Split) else Split(**g["split"]),
            tuple(_krule(r) for r in g.get("rules", ())))
            for g in kw.get("regions", ()))
        t = kw.get("threading")
        if t is not None and not isinstance(t, Threading):
            extra = set(t) - set(Threading.__dataclass_fields__)
            if extra:
                raise ValueError(f"unknown threading fields {sorted(extra)}; expected some of "
                                 f"{sorted(Threading.__dataclass_fields__)}")
            kw["threading"] = Threading(**t)
        return cls(**kw)


def _krule(r: KRule | Mapping[str, Any]) -> KRule:
    """A :class:`KRule` from its :meth:`Schedule.to_dict` fields (or itself)."""
    if isinstance(r, KRule):
        return r
    extra = set(r) - set(KRule.__dataclass_fields__)
    if extra:
        raise ValueError(f"unknown rule fields {sorted(extra)}; expected some of {sorted(KRule.__dataclass_fields__)}")
    split = r.get("split")
    return KRule(r["k_min"], r.get("k_max"), split if split is None or isinstance(split, Split) else Split(**split),
                 None if r.get("mn") is None else tuple(r["mn"]), r.get("m_min", 1), r.get("n_min", 1),
                 r.get("mnk_max"))


def from_accumulation(accumulation: str = "chain", promote_every: int | None = None) -> Schedule:
    """:func:`workbench.gemm`'s ``accumulation`` (and ``promote_every``) as a schedule:
    one part, C in the unit, consumed as ``accumulation`` says."""
    if accumulation not in INNER:
        raise ValueError(f"accumulation={accumulation!r}: expected one of {INNER}")
    try:
        return _accumulation_schedule(accumulation, promote_every)
    except TypeError:        # an unhashable promote_every: the Schedule's own check names it
        return _accumulation_schedule.__wrapped__(accumulation, promote_every)


@functools.lru_cache(maxsize=64)
def _accumulation_schedule(accumulation: str, promote_every: int | None) -> Schedule:
    """One (frozen) schedule per option: every ``gemm`` call asks for one."""
    name = accumulation if promote_every is None else f"{accumulation}-{promote_every}"
    return Schedule(name=name, inner=accumulation, promote_every=promote_every,
                    evidence="workbench.gemm's accumulation option")


def _one(*ks: int) -> tuple[KRule, ...]:
    return tuple(KRule(k, k, Split()) for k in ks)


_H100 = ("cuBLAS 13.1.0 through PyTorch 2.11.0+cu130 on an NVIDIA H100 80GB HBM3 (also the H200's bits), "
         "tests/data/gpu_witness (README.md, Findings)")
_SHAPES = ("M = N = 64 (the measured products; also 128 x 128 at K = 8192); cuBLAS chooses its split per "
           "(M, N, K): rules without an (M, N) were measured at 64 x 64, and other shapes get them only "
           "where no rule of their own exists (33 x 65 and 256 x 256 at K = 8192 have their own)")
_FP16_SPLIT = Split(part_size=1408)
#: cuBLAS' fp16/bf16 -> fp32 GEMM on the H100 for M = N = 64: one chain of wgmma blocks up
#: to K = 2048; from K = 4096 split-K into parts of 1408 elements (11 k-tiles of 128), the
#: last shorter, each a chain from zero, summed in order in fp32 (RNE) after the parts
_FP16_RULES = (_one(16, 32, 64, 256, 1024, 2048, 2560) + tuple(KRule(k, k, _FP16_SPLIT) for k in (4096, 8192, 12288, 16384))
               + tuple(KRule(k, k, Split(part_size=1536)) for k in (3072, 6144))
               + (KRule(8192, 8192, Split(part_size=2048), (256, 256)),))
#: 33 x 65 at K = 8192: the fp32-output call splits K into parts of 192; the fp16-output call
#: (another kernel) is not reproduced by the parts tried
_FP16_FP32_RULES = (KRule(8192, 8192, Split(part_size=192), (33, 65)),) + _FP16_RULES
_FP16_FP16_RULES = (KRule(8192, 8192, None, (33, 65)),) + _FP16_RULES
_FPREV = ("; summation tree from FPRev on the H100 (tests/data/gpu_witness/fprev, benchmarks/fprev_cublas.py): "
          "K <= 2048 one chain of 16-element blocks, K = 4096/8192/16384 parts of 1408 (3/6/12 parts), each "
          "a chain of 16-element blocks from zero, the parts summed in order - every count of every fixed "
          "position reproduced; K = 2560 (one chain), 3072 and 6144 (parts of 1536) and 12288 (parts of 1408) "
          "from FPRev's first fixed position; fresh random products of 64 x 64 at every one of these K from K = "
          "2560, and of 128 x 128, 33 x 65 (parts of 192) and 256 x 256 (parts of 2048) at K = 8192, reproduced "
          "bit for bit (benchmarks/measured/cublas_h100_schedule_check.npz)")


def _cublas(fmt: str, rules: tuple[KRule, ...], output: str | None, evidence: str, **kw: Any) -> Schedule:
    return Schedule(name=f"cublas-h100-{fmt}", rules=rules, c_position="epilogue", output=output,
                    shapes=_SHAPES, evidence=evidence, **kw)


#: named schedules (:func:`get`)
SCHEDULES: dict[str, Schedule] = {s.name: s for s in (
    from_accumulation("chain"),
    from_accumulation("outside"),
    from_accumulation("promote", 128),
    _cublas("fp16-fp32", _FP16_FP32_RULES, None, _H100 + _FPREV),
    _cublas("fp16-fp16", _FP16_FP16_RULES, "fp16", _H100 + _FPREV + "; fp16 output: the fp32 result rounded to nearest"),
    _cublas("bf16-fp32", _one(16, 32, 64, 256, 1024), None, _H100),
    _cublas("bf16-bf16", _one(16, 32, 64, 256, 1024), "bf16", _H100 + "; bf16 output: the fp32 result rounded "
            "to nearest"),
    _cublas("tf32", (KRule(16, 16, Split(4)), KRule(32, 32, Split(1)), KRule(64, 64, Split(2)),
                     KRule(256, 256, Split(8)), KRule(1024, 1024, Split(16))), None,
            _H100 + "; tf32 GEMMs split K into equal parts per K (found in the data)"),
    *(_cublas(f"fp8-{acc}{suffix}", rules, out, _H100 + ev, **kw)
      for suffix, out in (("", None), ("-bf16", "bf16"))
      for acc, rules, ev, kw in (
          ("fast", _one(16, 32, 64, 256, 1024) + (KRule(8192, 8192, Split(part_size=2816)),),
           "; torch._scaled_mm(use_fast_accum=True): one chain up to K = 1024; at K = 8192 parts of 2816 (11 "
           "k-tiles of 256: 2816, 2816, 2560) summed in order in fp32 - the only part size in 128..8064 (steps "
           "of 128) that reproduces the 64 stored outputs (the others miss 61-64)", {}),
          ("slow", (KRule(16, 8192, Split()),),
           "; torch._scaled_mm(use_fast_accum=False): promotion to fp32 every 128 elements (64 and 256 do not "
           "reproduce), K = 16..8192", {"inner": "promote", "promote_every": 128}))),
)}


def get(name: str) -> Schedule:
    """The named schedule of :data:`SCHEDULES` (ValueError naming the known ones)."""
    if name not in SCHEDULES:
        raise ValueError(unknown_name("schedule", name, SCHEDULES))
    return SCHEDULES[name]
