"""Library probes (issue 40, item 2): a library GEMM on this machine as a unit plus a schedule.

:func:`probe_library` takes one of :data:`LIBRARIES` (``numpy-fp64``, ``numpy-fp32``,
``torch-cpu-fp32``, ``torch-cpu-bf16``) and reports, with the evidence:

1. the library and kernel it runs (threadpoolctl: OpenBLAS' core and thread count; torch's
   build), and whether its results repeat across runs and across thread counts (1 against
   the default) on the same products - where they do not, the report says so;
2. FPRev's summation tree (Xie et al., USENIX ATC'25) for one shape: the counts
   ``K - |leaves under LCA(0, j)|`` of every output row, whether all rows share one tree
   and the K blocks the first row shows;
3. the candidate model (a unit preset plus a :class:`~workbench.schedules.Schedule`, the
   K blocking read from the library's parameters and checked against FPRev's blocks) run
   through :func:`workbench.gemm` against the library, bit for bit, on random and
   adversarial products (cancelling pairs, a wide exponent range) over many shapes, K well
   past the blocking, odd M and N.  "verified" only when every output of every shape
   matches; otherwise the shapes and rows that differ are listed and nothing is claimed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import schedules as _schedules
from ..engine.model import Model

__all__ = ["LIBRARIES", "LibraryCandidate", "LibraryReport", "probe_library", "fprev_counts", "SHAPES",
           "OPENBLAS_CORES", "TORCH_CPU_CAPABILITY", "TORCH_FP32", "TORCH_BF16"]

#: shapes (M, N, K) of the verification: K from below to well past each blocking, odd M and N;
#: 25 x 24 and 13 x 32 give OpenBLAS' SGEMM 12-row blocks over an odd and an even number of
#: 8-column tiles (the two-accumulator tiles of :data:`_OPENBLAS_REGIONS`)
SHAPES = ((2, 2, 1), (4, 8, 16), (3, 5, 100), (8, 7, 255), (16, 9, 256), (6, 13, 257), (12, 4, 511),
          (4, 6, 512), (10, 11, 513), (8, 16, 700), (2, 3, 1000), (14, 6, 1500), (4, 5, 2049), (6, 2, 4000),
          (25, 24, 700), (13, 32, 1000))


@dataclass(frozen=True)
class LibraryCandidate:
    """A library's GEMM as a unit and a schedule, with where they come from; ``gap``
    says what of the library the schedule is known not to model (empty: nothing)."""

    unit: Callable[[], Model]
    schedule: _schedules.Schedule
    source: str
    gap: str = ""


def _fma(fmt: str) -> Model:
    from ..catalogue import custom_model

    return custom_model(fmt, fmt, kind="fma")


#: the outputs OpenBLAS' Haswell kernels sum with several accumulators, found with FPRev per
#: output (one fixed position, every other position in every column: a two-accumulator output
#: of 4 x 8 x 40 joins every odd position at the root) and read in the kernels' source.
#: numpy's row-major C = A @ B is OpenBLAS' column-major C^T = B^T A^T: the kernel's m runs
#: over numpy's columns (N), its n over numpy's rows (M).
#:
#: DGEMM (``dgemm_kernel_4x8_haswell.S``): the 1 x 4 edge kernel (the last row when M is
#: odd, the columns of whole 4-column groups) keeps four accumulators over k % 4, unrolls K
#: by 8 and finishes the block's K % 8 tail on accumulator 0.
#:
#: SGEMM (``sgemm_kernel_8x4_haswell_2.c``, SGEMM_UNROLL_M = 8, SGEMM_UNROLL_N = 4): the
#: level-3 driver (``driver/level3/level3.c``) hands the kernel numpy's rows in blocks of
#: 3 * UNROLL_N = 12 while 12 remain, then of 4 while more than 4 remain, then the rest.  A
#: 12-row block with N >= 16 runs ``COMPUTE_n12``: its rows are two halves of 6 (L, R) over
#: 8-column tiles; the first tile's L half (``COMPUTE_H_m8n6``) and the last tile's half that
#: the staggered m16n6 loop (R over tiles 0-1, L over 1-2, R over 2-3, ...) leaves
#: (``COMPUTE_T_m8n6``: L when the number of tiles is even, R when it is odd) keep two
#: accumulators, k even and k odd, with K unrolled by 8 and the K % 8 tail on the even one,
#: added (``vaddps``) before C.  A 4-row block runs ``COMPUTE_m8n4`` on whole 8-column tiles
#: with the same two accumulators.  Everything else (m16n6, the m8n12 of 8 <= N < 16, the
#: 4/2/1-column remainders, blocks of 1-3 rows) is one vfmadd231ps chain per output.  Each
#: output's block sum is added to C with one vfmadd213ps (alpha = 1: one rounding).
_OPENBLAS_REGIONS = {
    "fp64": (_schedules.Region(rows=(2, 1), cols=(0, 4), lanes=4, lane_block=8),),
    "fp32": (_schedules.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 0, 6),
                               col_panel=0, panels=(2, 1, 0)),
             _schedules.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 0, 6),
                               col_panel=-1, panels=(2, 2, 0)),
             _schedules.Region(rows=(0, 12), cols=(0, 8), lanes=2, lane_block=8, row_phase=(12, 6, 12),
                               col_panel=-1, panels=(3, 2, 1)),
             _schedules.Region(rows=(12, 4), cols=(0, 8), lanes=2, lane_block=8)),
}

#: GEMM_UNROLL_M of param.h's HASWELL section: the driver rounds the halved last K blocks to it
_OPENBLAS_UNROLL_M = {"fp64": 4, "fp32": 8}
#: the cores (threadpoolctl's ``architecture``) whose kernels these schedules describe: DYNAMIC_ARCH
#: runs the Haswell kernels on Haswell and, with the same kernel files (kernel/x86_64/KERNEL.ZEN)
#: and GEMM parameters (param.h), on Zen; other cores (SkylakeX's AVX-512 kernels, ...) differ
OPENBLAS_CORES = ("Haswell", "Zen")


def _openblas(fmt: str, q: int) -> LibraryCandidate:
    name = "dgemm" if fmt == "fp64" else "sgemm"
    u = _OPENBLAS_UNROLL_M[fmt]
    return LibraryCandidate(lambda: _fma(fmt), _schedules.Schedule(
        name=f"openblas-haswell-{name}",
        rules=(_schedules.KRule(1, None, _schedules.Split(block=q, block_unroll=u)),),
        c_position="combine", combine_format=fmt, regions=_OPENBLAS_REGIONS[fmt],
        shapes=f"M, N >= 2 (numpy's gemm path), OpenBLAS' Haswell kernels (DYNAMIC_ARCH picks them on the "
               f"{' and '.join(OPENBLAS_CORES)} cores; other cores run other kernels, which this schedule does not "
               f"describe)", threads=1,
        evidence=f"OpenBLAS Haswell kernels ({name.upper()}_DEFAULT_Q = {q}; driver/level3 halves the last two "
                 f"blocks, rounded up to {name.upper()}_UNROLL_M = {u}), each block an FMA chain (vfmadd231) "
                 f"from zero added to C in order; the edge/tile kernels' accumulators as the regions say (FPRev "
                 f"per output, kernel source)"),
        f"OpenBLAS {name} for the Haswell core: GEMM_Q = {q}, the driver's K blocking; FPRev's blocks and "
        f"per-output accumulators")


#: torch's CPU builds these schedules were verified with (``torch.backends.cpu.get_cpu_capability()``):
#: float32 goes to MKL's SGEMM (its AVX2 code paths), bfloat16 to ATen's own loop
TORCH_CPU_CAPABILITY = "AVX2"
#: MKL SGEMM's K block (FPRev on the real sgemm through torch.matmul, 1 thread)
_MKL_SGEMM_KB = 192

#: torch.matmul float32 on the CPU: MKL SGEMM (``MKL_VERBOSE=1`` shows SGEMM(N,N,N,M,K) for
#: numpy's row-major C = A @ B: MKL's m is numpy's N, its n numpy's M).  MKL picks one of two
#: code paths by shape, found by FPRev per output and by fresh random products:
#: m >= 12 and n >= 4 run an FMA kernel with K blocked by 192, other shapes a kernel without
#: FMA (each product rounded to fp32, then added) over the whole K.
#: MKL SGEMM's small-matrix path (M < 4 or N < 12) runs the first (-r * N) % 4 columns of row r
#: - the outputs before C's row reaches 16-byte alignment, where at least 4 columns remain after
#: them - through a peel loop: per 8 elements of K the first four rounded products are added to
#: the sum one by one, the other four summed from zero ((p4 + p5) + p6) + p7 and that sum added,
#: the K % 8 tail one by one (FPRev per output on 4 x 5 x 24 and 4 x 9 x 16; fresh products of
#: 4 x 6 x 512, 8 x 7 x 255, 16 x 9 x 256, 10 x 11 x 513, 14 x 6 x 1500, 4 x 5 x 2049).  One
#: region per residue of N modulo 4 and row phase r % 4 whose peel is not empty.
_MKL_PEEL = _schedules.Split(cycle=(1, 1, 1, 1, 4), lanes=4, lane_block=4, lane_combine="in-order")
_MKL_PEEL_REGIONS = tuple(
    _schedules.Region(rows=(0, 1), cols=(0, peel), lanes=1, lane_block=1, row_phase=(4, phase, phase + 1),
                      col_panel=0, n_mod=(4, n4, peel + 4), below=(4, 12), split=_MKL_PEEL)
    for n4 in (1, 2, 3) for phase in (1, 2, 3) for peel in ((-phase * n4) % 4,) if peel)

#: torch.matmul float32 on the CPU: MKL SGEMM (``MKL_VERBOSE=1`` shows SGEMM(N,N,N,M,K) for
#: numpy's row-major C = A @ B: MKL's m is numpy's N, its n numpy's M).  MKL picks one of two
#: code paths by shape, found by FPRev per output and by fresh random products:
#: m >= 12 and n >= 4 run an FMA kernel with K blocked by 192, other shapes a kernel without
#: FMA (each product rounded to fp32, then added) over the whole K, with the peel loop above.
TORCH_FP32 = LibraryCandidate(lambda: _fma("fp32"), _schedules.Schedule(
    name="mkl-sgemm-avx2",
    rules=(_schedules.KRule(1, None, _schedules.Split(part_size=_MKL_SGEMM_KB, halve=True), m_min=4, n_min=12),
           _schedules.KRule(1, None, _schedules.Split(part_size=1), n_min=2)),
    c_position="combine", combine_format="fp32", regions=_MKL_PEEL_REGIONS,
    shapes=f"torch.matmul of contiguous float32 matrices with N >= 2 (N = 1 runs a matrix-vector kernel, not "
           f"described), beta = 0 (torch.matmul: C is not read, so where C enters is not verified), C's rows "
           f"starting 64-byte aligned (torch's CPU allocator); torch CPU capability {TORCH_CPU_CAPABILITY} with "
           f"MKL 2024.2 on an AMD Zen 3 (no AVX-512), 1 thread",
    threads=1,
    evidence=f"M >= 4 and N >= 12: one vfmadd-style FMA chain per K block, blocks of {_MKL_SGEMM_KB} (K < "
             f"{2 * _MKL_SGEMM_KB}: halves of K // 2, the odd element last), each from zero, added in order in fp32 "
             f"(FPRev per output: 300 = 150 + 150, 700 = 192 * 3 + 124, 193 = 96 + 96 + 1); other shapes: every "
             f"product rounded to fp32 and added in order (parts of one element), K not blocked (2 x 3 x 1000 "
             f"bit-identical), except the peel loop's outputs (the first (-r * N) % 4 columns of row r where at "
             f"least 4 columns follow: per 8 elements four products added one by one, then the other four "
             f"summed from zero and added; FPRev per output on 4 x 5 x 24 and 4 x 9 x 16)"),
    "MKL SGEMM's two code paths and the small path's peel loop (FPRev per output; fresh random and "
    "adversarial products)")

#: torch.matmul bfloat16 on a CPU without AVX-512 BF16/AMX: oneDNN's bf16 matmul is not used
#: (torch's mkldnn_bf16_device_check needs AVX-512; ONEDNN_VERBOSE=all prints nothing) and MKL
#: is not called (MKL_VERBOSE=1 prints nothing): ATen's own gemm (aten/src/ATen/native/
#: BlasKernel.cpp) sums each output with its ``sum`` helper - four fp32 partial sums over
#: k % 4 (K unrolled by 4, the K % 4 tail on the first), added in order ((s0 + s1) + s2) + s3,
#: each bf16 x bf16 product exact in fp32 - and rounds the fp32 result to bf16 (RNE).
TORCH_BF16 = LibraryCandidate(lambda: _fma("fp32"), _schedules.Schedule(
    name="aten-bf16-gemm",
    rules=(_schedules.KRule(1, None, _schedules.Split(lanes=4, lane_block=4, lane_combine="in-order"), m_min=2,
                            n_min=2),),
    output="bf16",
    shapes=f"torch.matmul of contiguous bfloat16 matrices with M, N >= 2 (one row or column runs ATen's "
           f"matrix-vector kernels, not described), beta = 0; torch CPU capability {TORCH_CPU_CAPABILITY} without "
           f"AVX-512 BF16 (an AVX-512 CPU runs oneDNN's bf16 gemm instead), any thread count",
    evidence="four fp32 accumulators over k % 4, the K % 4 tail on the first, summed in order, then rounded to "
             "bf16 (ATen's BlasKernel.cpp sum(); fresh random and adversarial products, the tail of K = 2049 "
             "included, bit-identical; one fp32 chain misses up to 45 % of the adversarial outputs)"),
    "ATen's bf16 gemm loop (MKL and oneDNN not called on this CPU)")


@dataclass(frozen=True)
class _Library:
    fmt: str                       # input/output format of the call
    dtype: str                     # numpy dtype the inputs are drawn in
    call: Callable[[np.ndarray, np.ndarray], np.ndarray]
    set_threads: Callable[[int], Any]
    describe: Callable[[], str]
    candidate: LibraryCandidate


def _np_call(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.asarray(A @ B, dtype=np.float64)


def _np_threads(n: int) -> Any:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(n, user_api="blas")


def _np_describe() -> str:
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} core {i.get('architecture')}, "
                     f"{i.get('num_threads')} threads" for i in blas) or "no BLAS found by threadpoolctl"


def _torch_call(dt: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def call(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        torch = importlib.import_module("torch")
        d = getattr(torch, dt)
        return (torch.from_numpy(np.ascontiguousarray(A)).to(d) @ torch.from_numpy(np.ascontiguousarray(B)).to(d)
                ).to(torch.float64).numpy()
    return call


class _TorchThreads:
    def __init__(self, n: int) -> None:
        self.torch = importlib.import_module("torch")
        self.n, self.old = n, self.torch.get_num_threads()

    def __enter__(self) -> None:
        self.torch.set_num_threads(self.n)

    def __exit__(self, *exc: Any) -> None:
        self.torch.set_num_threads(self.old)


def _torch_describe() -> str:
    torch = importlib.import_module("torch")
    return (f"torch {torch.__version__} CPU ({torch.backends.cpu.get_cpu_capability()}), "
            f"{torch.get_num_threads()} threads, mkldnn {torch.backends.mkldnn.is_available()}")


#: the library targets of :func:`probe_library`
LIBRARIES: dict[str, _Library] = {
    "numpy-fp64": _Library("fp64", "float64", _np_call, _np_threads, _np_describe, _openblas("fp64", 256)),
    "numpy-fp32": _Library("fp32", "float32", _np_call, _np_threads, _np_describe, _openblas("fp32", 320)),
    "torch-cpu-fp32": _Library("fp32", "float32", _torch_call("float32"), _TorchThreads, _torch_describe,
                               TORCH_FP32),
    "torch-cpu-bf16": _Library("bf16", "float32", _torch_call("bfloat16"), _TorchThreads, _torch_describe,
                               TORCH_BF16),
}


@dataclass
class LibraryReport:
    """What :func:`probe_library` found; :meth:`sheet` prints it."""

    name: str
    library: str
    repeatable: bool
    thread_independent: bool
    thread_evidence: str
    fprev: str
    candidate: str
    results: list[tuple[tuple[int, int, int], str, int, int, list[int]]] = field(default_factory=list)
    gap: str = ""

    @property
    def verified(self) -> bool:
        """Every output of every verification product matched, run after run."""
        return self.repeatable and bool(self.results) and all(r[2] == 0 for r in self.results)

    def sheet(self) -> str:
        lines = [f"Library probe: {self.name}", f"  library                  {self.library}",
                 f"  repeatable across runs   {'yes' if self.repeatable else 'NO'}",
                 f"  same for 1 and n threads {'yes' if self.thread_independent else 'NO'} ({self.thread_evidence})",
                 f"  FPRev tree               {self.fprev}", f"  candidate                {self.candidate}"]
        if self.gap:
            lines.append(f"  not modelled             {self.gap}")
        for shape, kind, bad, total, rows in self.results:
            where = f" (rows {rows[:8]}{'...' if len(rows) > 8 else ''})" if bad else ""
            lines.append(f"    {'x'.join(map(str, shape)):<12} {kind:<12} {bad:>6} of {total:<6} outputs differ{where}")
        n_bad = sum(r[2] for r in self.results)
        n_all = sum(r[3] for r in self.results)
        if not self.repeatable:
            verdict = "NOT verified: the library is not deterministic across runs (no model proposed)"
        elif self.verified:
            verdict = (f"verified: bit-identical on all {n_all} outputs of {len(self.results)} products "
                       f"(random and adversarial) at 1 thread")
        else:
            verdict = (f"NOT verified: {n_bad} of {n_all} outputs differ from the candidate (listed above); "
                       f"the library's schedule is not the candidate's")
        lines.append(f"  verification: {verdict}")
        return "\n".join(lines)


def _draw(rng: np.random.Generator, kind: str, M: int, N: int, K: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Random inputs representable in ``fmt``: ``random`` (standard normal), ``adversarial``
    (exponents over 2^-20..2^20 and cancelling pairs: each product x*y followed by -x*y)."""
    from .. import formats as _formats

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


def _joins(row: np.ndarray, K: int) -> str:
    """FPRev's first row as runs of LCA sizes: a chain shows a run (2-256), a join of whole
    blocks one size each (428, 600)."""
    sizes = np.unique(K - row[1:])
    runs: list[list[int]] = []
    for x in sizes.tolist():
        if runs and x == runs[-1][-1] + 1:
            runs[-1].append(x)
        else:
            runs.append([x])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def probe_library(name: str, *, seed: int = 0, shapes: tuple[tuple[int, int, int], ...] = SHAPES,
                  fprev_shape: tuple[int, int, int] = (8, 8, 700)) -> LibraryReport:
    """Probe one of :data:`LIBRARIES` (module docstring)."""
    from .. import formats as _formats
    from ..gate import unknown_name
    from ..matmul import gemm

    if name not in LIBRARIES:
        raise ValueError(unknown_name("library target", name, LIBRARIES))
    lib = LIBRARIES[name]
    rng = np.random.default_rng(seed)
    prec = _formats.format(lib.fmt).man_bits + 1 if lib.fmt != "bf16" else 24
    # 1. repeatability across runs and thread counts
    A, B = _draw(rng, "random", 33, 31, 600, lib.fmt)
    A, B = A.astype(lib.dtype), B.astype(lib.dtype)
    first = lib.call(A, B)
    repeatable = all(np.array_equal(first, lib.call(A, B), equal_nan=True) for _ in range(3))
    with lib.set_threads(1):
        one = lib.call(A, B)
    differ = int((one != first).sum())
    thread_evidence = (f"33x31x600: {differ} of {one.size} outputs differ between 1 thread and the default"
                       if differ else "33x31x600: identical")
    # 2. FPRev at one thread
    M, N, K = fprev_shape
    with lib.set_threads(1):
        counts = fprev_counts(lib.call, M, N, K, 0, prec, lib.dtype)
    rows = len(np.unique(counts, axis=0))
    fprev = (f"{M}x{N}x{K}: {'one tree for every row' if rows == 1 else f'{rows} different trees over {M} rows'}; "
             f"position 0 joins subtrees of {_joins(counts[0], K)} leaves")
    # 3. the candidate, verified at one thread
    cand = lib.candidate
    unit = cand.unit()
    results = []
    with lib.set_threads(1):
        for shape in shapes:
            for kind in ("random", "adversarial"):
                A, B = _draw(rng, kind, *shape, lib.fmt)
                want = lib.call(A.astype(lib.dtype), B.astype(lib.dtype))
                got = np.asarray(gemm(A, B, model=unit, schedule=cand.schedule), dtype=np.float64)
                bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
                results.append((shape, kind, int(bad.sum()), int(bad.size), sorted(set(np.argwhere(bad)[:, 0].tolist()))))
    return LibraryReport(name, lib.describe(), repeatable, differ == 0, thread_evidence, fprev,
                         f"{cand.schedule.name}: {cand.source}", results, cand.gap)
