"""Library probes (issue 40, item 2): a library GEMM on this machine as a unit plus a schedule.

:func:`probe_library` takes one of :data:`LIBRARIES` (``numpy-fp64``, ``numpy-fp32``,
``torch-cpu-fp32``, ``torch-cpu-bf16``) and reports, with the evidence:

1. the library and kernel it runs - a :class:`LibraryEnvironment`: the library and its
   version, the kernel (OpenBLAS' core from threadpoolctl, for the OpenBLAS numpy's matmul
   calls; torch's CPU capability with its MKL and oneDNN), the thread count of the
   verification and the default - and whether its results repeat across runs and across
   thread counts (1 against the default) on the same products - where they do not, the
   report says so;
2. FPRev's summation tree (Xie et al., USENIX ATC'25) for one shape: the counts
   ``K - |leaves under LCA(0, j)|`` of every output row, whether all rows share one tree
   and the K blocks the first row shows;
3. the candidate model (a unit preset plus a :class:`~workbench.units.schedules.Schedule`, the
   K blocking read from the library's parameters and checked against FPRev's blocks) run
   through :func:`workbench.gemm` against the library, bit for bit, on random and
   adversarial products (cancelling pairs, a wide exponent range) over many shapes, K well
   past the blocking, odd M and N.  "verified" only when every output of every shape
   matches; otherwise the shapes and rows that differ are listed and nothing is claimed -
   and where the kernel that ran is not one the candidate was written for, the report
   says so and what to do.

Where the model holds at one thread but the library's default thread count gives other bits,
the cut of a product over the threads is recovered from the black box
(:func:`recover_threading`: a :class:`~workbench.units.schedules.Threading` record, OpenBLAS'
threaded driver's layout searched over its parameters) and verified at that thread count; the
report then stands for, and saves, the model with its threads (:attr:`LibraryReport.model`).

A report saves as a library model (:func:`save_library_model`: the unit file's
``[schedule]``, its ``[library]`` table with the environment and the verdict, the counts
in ``[provenance.verification]``), verified or not; :func:`verify_saved` re-checks such
a file against this machine's library on the same products (:func:`verify_model`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import itertools
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..numbers import formats as _formats
from ..units import schedules as _schedules
from ..engine.model import Model
from .recovery import Recovery, draw_inputs, fprev_counts

__all__ = ["LIBRARIES", "Library", "LibraryCandidate", "LibraryEnvironment", "LibraryReport", "SavedModelCheck",
           "probe_library", "verify_model", "verify_saved", "save_library_model", "numpy_environment",
           "torch_environment", "onednn_matmul_implementation", "mkl_dispatch", "fprev_counts", "SHAPES", "VERIFY_THREADS",
           "OPENBLAS_CORES", "TORCH_CPU_CAPABILITY", "TORCH_MKL_SGEMM", "TORCH_FP32", "TORCH_BF16", "TORCH_BF16_ONEDNN",
           "TORCH_ATEN_BF16", "ONEDNN_AVX512_BF16", "TORCH_ONEDNN_MIN_WORK", "THREADING_SHAPES",
           "THREADING_SPACE", "ThreadingRecovery", "recover_threading"]

#: shapes (M, N, K) of the verification: K from below to well past each blocking, odd M and N;
#: 25 x 24 and 13 x 32 give OpenBLAS' SGEMM 12-row blocks over an odd and an even number of
#: 8-column tiles (the two-accumulator tiles of :data:`_OPENBLAS_REGIONS`)
SHAPES = ((2, 2, 1), (4, 8, 16), (3, 5, 100), (8, 7, 255), (16, 9, 256), (6, 13, 257), (12, 4, 511),
          (4, 6, 512), (10, 11, 513), (8, 16, 700), (2, 3, 1000), (14, 6, 1500), (4, 5, 2049), (6, 2, 4000),
          (25, 24, 700), (13, 32, 1000), (3, 5, 8192))
#: products run at one thread and at the default, adversarial inputs: the second is large
#: enough that OpenBLAS and MKL split it over their threads
THREAD_SHAPES = ((33, 31, 600), (160, 150, 2000))
#: the thread count the candidate is verified at
VERIFY_THREADS = 1
#: one verification product: its shape, the input kind, the outputs that differ, the outputs, the rows that differ
Result = tuple[tuple[int, int, int], str, int, int, list[int]]


@dataclass(frozen=True)
class LibraryCandidate:
    """A library's GEMM as a unit and a schedule, with where they come from; ``gap``
    says what of the library the schedule is known not to model (empty: nothing);
    ``kernels`` the kernels it was written for (:attr:`LibraryEnvironment.kernel`;
    empty: not tied to one)."""

    unit: Callable[[], Model]
    schedule: _schedules.Schedule
    source: str
    gap: str = ""
    kernels: tuple[str, ...] = ()


@dataclass(frozen=True)
class LibraryEnvironment:
    """What a library model holds for: the ``library`` that runs the GEMM and its
    ``version``, the ``kernel`` it picked on this machine (OpenBLAS' core, torch's CPU
    capability), the thread count of the verification (``threads``) and the library's
    default (``default_threads``; 0 where it is not known), and ``details`` (where the
    library was loaded from, the versions of what it calls).  The fields are the
    ``[library]`` table of a saved model (:func:`save_library_model`)."""

    library: str
    version: str
    kernel: str
    threads: int
    default_threads: int
    details: str = ""

    def describe(self) -> str:
        """One line: library, version, kernel, threads, details."""
        default = self.default_threads or "not known"
        return (f"{self.library} {self.version}, kernel {self.kernel}, {self.threads} thread"
                f"{'s' if self.threads != 1 else ''} in the verification (default {default})"
                + (f"; {self.details}" if self.details else ""))

    def to_dict(self) -> dict[str, str | int]:
        """The fields by name (a saved model's ``[library]`` table)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, table: dict[str, str | int]) -> LibraryEnvironment:
        """The environment a ``[library]`` table records (its other keys left out)."""
        return cls(str(table["library"]), str(table["version"]), str(table["kernel"]), int(table["threads"]),
                   int(table["default_threads"]), str(table["details"]))

    def differences(self, other: LibraryEnvironment) -> list[str]:
        """Where ``other`` (this machine) differs from this (saved) environment, but for
        ``details`` (paths): ``"kernel: saved Haswell, here SkylakeX"``, one per field."""
        return [f"{f.name}: saved {getattr(self, f.name)}, here {getattr(other, f.name)}"
                for f in dataclasses.fields(self) if f.name != "details"
                and getattr(self, f.name) != getattr(other, f.name)]


def _fma(fmt: str) -> Model:
    from ..units.catalogue import custom_model

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
    return LibraryCandidate(lambda: _fma(fmt), kernels=OPENBLAS_CORES, schedule=_schedules.Schedule(
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
        source=f"OpenBLAS {name} for the Haswell core: GEMM_Q = {q}, the driver's K blocking; FPRev's blocks and "
               f"per-output accumulators")


#: torch's CPU capability (``torch.backends.cpu.get_cpu_capability()``) the bf16 schedule of
#: ATen's own loop was verified with (a CPU without AVX-512)
TORCH_CPU_CAPABILITY = "AVX2"
#: MKL's SGEMM as MKL's verbose mode names the code it dispatched to on the AMD CPUs the float32
#: schedule was verified on: the generic "Intel(R) Architecture processors" branch, whatever
#: MKL_ENABLE_INSTRUCTIONS says (default, AVX2, SSE4_2 and AVX512_E1 gave the same bits on a Zen 4)
TORCH_MKL_SGEMM = "MKL sgemm (Intel(R) Architecture processors)"
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
           f"starting 64-byte aligned (torch's CPU allocator); {TORCH_MKL_SGEMM} (oneMKL 2024 on AMD Zen 3 "
           f"and Zen 4), 1 thread",
    threads=1,
    evidence=f"M >= 4 and N >= 12: one vfmadd-style FMA chain per K block, blocks of {_MKL_SGEMM_KB} (K < "
             f"{2 * _MKL_SGEMM_KB}: halves of K // 2, the odd element last), each from zero, added in order in fp32 "
             f"(FPRev per output: 300 = 150 + 150, 700 = 192 * 3 + 124, 193 = 96 + 96 + 1); other shapes: every "
             f"product rounded to fp32 and added in order (parts of one element), K not blocked (2 x 3 x 1000 "
             f"bit-identical), except the peel loop's outputs (the first (-r * N) % 4 columns of row r where at "
             f"least 4 columns follow: per 8 elements four products added one by one, then the other four "
             f"summed from zero and added; FPRev per output on 4 x 5 x 24 and 4 x 9 x 16)"),
    "MKL SGEMM's two code paths and the small path's peel loop (FPRev per output; fresh random and "
    "adversarial products)", kernels=(TORCH_MKL_SGEMM,))

#: torch hands bfloat16 products of more multiply-adds than this to oneDNN where its bf16 device
#: check passes (an AVX-512 CPU), smaller ones to ATen's own loop (ATen's mkldnn matmul
#: ``checksize``: M * K * N > 16 * 16 * 16; ONEDNN_VERBOSE shows no oneDNN call up to 16 x 16 x 16
#: and a brg_matmul call from 16 x 16 x 17 and 2 x 2 x 1025)
TORCH_ONEDNN_MIN_WORK = 16 ** 3
#: ATen's bf16 loop (aten/src/ATen/native/BlasKernel.cpp): each output summed by its ``sum``
#: helper - four fp32 partial sums over k % 4 (K unrolled by 4, the K % 4 tail on the first),
#: added in order ((s0 + s1) + s2) + s3, each bf16 x bf16 product exact in fp32
_ATEN_BF16_SPLIT = _schedules.Split(lanes=4, lane_block=4, lane_combine="in-order")
#: the bf16 kernel a CPU without AVX-512 runs (:func:`torch_environment`'s kernel name)
TORCH_ATEN_BF16 = f"ATen gemm ({TORCH_CPU_CAPABILITY})"

#: torch.matmul bfloat16 on a CPU without AVX-512: oneDNN's bf16 matmul is not used
#: (torch's mkldnn_bf16_device_check needs AVX-512; ONEDNN_VERBOSE=all prints nothing) and MKL
#: is not called (MKL_VERBOSE=1 prints nothing): ATen's loop for every shape, rounded to bf16 (RNE).
TORCH_BF16 = LibraryCandidate(lambda: _fma("fp32"), _schedules.Schedule(
    name="aten-bf16-gemm",
    rules=(_schedules.KRule(1, None, _ATEN_BF16_SPLIT, m_min=2, n_min=2),),
    output="bf16",
    shapes=f"torch.matmul of contiguous bfloat16 matrices with M, N >= 2 (one row or column runs ATen's "
           f"matrix-vector kernels, not described), beta = 0; torch CPU capability {TORCH_CPU_CAPABILITY} without "
           f"AVX-512 (an AVX-512 CPU runs oneDNN's bf16 gemm above 16^3 multiply-adds instead), any thread count",
    evidence="four fp32 accumulators over k % 4, the K % 4 tail on the first, summed in order, then rounded to "
             "bf16 (ATen's BlasKernel.cpp sum(); fresh random and adversarial products, the tail of K = 2049 "
             "included, bit-identical; one fp32 chain misses up to 45 % of the adversarial outputs)"),
    "ATen's bf16 gemm loop (MKL and oneDNN not called on this CPU)", kernels=(TORCH_ATEN_BF16,))

#: oneDNN's bf16 matmul on AVX512-BF16 (ONEDNN_VERBOSE: ``brg_matmul:avx512_core_bf16``)
ONEDNN_AVX512_BF16 = "oneDNN brg_matmul:avx512_core_bf16"
#: the brgemm kernel's K chunks: K up to 512 one chunk, up to 1024 chunks of 512, beyond chunks of 1024
_ONEDNN_BF16_CHUNKS = ((1, 512, _schedules.Split()), (513, 1024, _schedules.Split(part_size=512)),
                       (1025, None, _schedules.Split(part_size=1024)))

#: torch.matmul bfloat16 on an AVX512-BF16 CPU (AMD Zen 4): products of at most 16^3
#: multiply-adds run ATen's loop above with the products rounded then added (Split.fused=False:
#: the fp32 additions of ATen's sum, not the instruction); larger ones oneDNN's brgemm matmul,
#: whose kernel keeps each output in one fp32 lane of a zmm register fed by VDPBF16PS (a pair of
#: K per instruction, K padded with a zero to even) from zero over a chunk of K, stores the
#: chunk's sum and adds the next chunk's to it in fp32 (RNE), and converts the result to bf16 (RNE).
TORCH_BF16_ONEDNN = LibraryCandidate(
    lambda: _resolve_unit("x86-avx512-bf16/vdpbf16ps/bf16->fp32"), _schedules.Schedule(
        name="onednn-brgemm-avx512-bf16",
        rules=(_schedules.KRule(1, None, replace(_ATEN_BF16_SPLIT, fused=False), m_min=2, n_min=2,
                                mnk_max=TORCH_ONEDNN_MIN_WORK),
               *(_schedules.KRule(k0, k1, split, m_min=2, n_min=2) for k0, k1, split in _ONEDNN_BF16_CHUNKS)),
        c_position="combine", combine_format="fp32", output="bf16",
        shapes="torch.matmul of contiguous bfloat16 matrices with M, N >= 2, beta = 0 (where C enters is not "
               "verified); torch 2.13 with oneDNN v3.12 on an AMD EPYC Zen 4 (AVX512-BF16), 1 and 2 threads; "
               "products up to 1000 x 2, 256 x 256 x 1024, 17 x 300 x 5000 and 2 x 2 x 16384",
        evidence="ONEDNN_VERBOSE names brg_matmul:avx512_core_bf16 for products above 16^3 multiply-adds and no "
                 "oneDNN call below; FPRev per output of 4 x 8 x 16 and 4 x 8 x 40 (ATen's four partial sums); "
                 "for 2 x 3, 4 x 5 and 33 x 31 at 40 values of K from 210 to 8192, every part size from 2 to "
                 "1098 tried on adversarial products: K <= 512 one chain, 513-1024 only parts of 512 (with "
                 "neighbours that no input tells apart), from 1025 only parts of 1024 (benchmarks/"
                 "measured/library_kernels.md)"),
    "ATen's loop below 16^3 multiply-adds, oneDNN's brgemm over VDPBF16PS (the x86-avx512-bf16 preset) above",
    kernels=(ONEDNN_AVX512_BF16,))


def _resolve_unit(name: str) -> Model:
    from ..units import resolve

    return resolve(name)


@dataclass(frozen=True)
class Library:
    """A library target: its GEMM ``call`` (``A @ B`` of two float64 arrays holding
    values of ``fmt``, run on inputs of the numpy ``dtype``; float64 back),
    ``set_threads(n)`` (a context manager running the call on n threads), the
    ``environment`` it runs in and the hand-written ``candidates`` (:attr:`candidate`:
    the one written for the kernel that runs here).  :data:`LIBRARIES` holds them by name."""

    fmt: str                       # input/output format of the call
    dtype: str                     # numpy dtype the inputs are drawn in
    call: Callable[[np.ndarray, np.ndarray], np.ndarray]
    set_threads: Callable[[int], Any]
    environment: Callable[[], LibraryEnvironment]
    candidates: tuple[LibraryCandidate, ...]

    def candidate_for(self, kernel: str) -> LibraryCandidate:
        """The candidate written for ``kernel`` (:attr:`LibraryEnvironment.kernel`), else the
        first: a first guess that the verification may refute."""
        return next((c for c in self.candidates if kernel in c.kernels), self.candidates[0])

    @property
    def candidate(self) -> LibraryCandidate:
        """The candidate for the kernel this machine runs (:meth:`candidate_for`)."""
        return self.candidate_for(self.environment().kernel)

    @property
    def precision(self) -> int:
        """The accumulation's precision FPRev swamps (bf16 inputs are summed in fp32)."""
        return _formats.format(self.fmt).man_bits + 1 if self.fmt != "bf16" else 24


def _np_call(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.asarray(A @ B, dtype=np.float64)


def _np_threads(n: int) -> Any:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(n, user_api="blas")


def _numpy_folders() -> tuple[Path, ...]:
    """Where numpy's wheels keep the BLAS they load: numpy.libs beside the package
    (Linux wheels) or numpy/.libs inside it (older and Windows wheels)."""
    root = Path(np.__file__).resolve().parent
    return root, root.parent / "numpy.libs"


def numpy_environment() -> LibraryEnvironment:
    """numpy's BLAS as threadpoolctl sees it.  Several BLAS libraries may be loaded in one
    process (scipy's wheels bring their own OpenBLAS, with another version and maybe
    another core); numpy's matmul calls the one numpy loads: the BLAS whose file lies
    under numpy's folders (:func:`_numpy_folders`), else - numpy linked against a BLAS
    outside them (a distribution's numpy) - the only BLAS loaded.  Where neither picks
    one, the library and kernel are "unknown" and ``details`` lists what is loaded."""
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    folders = _numpy_folders()
    own = [i for i in blas if any(Path(str(i.get("filepath"))).resolve().is_relative_to(d) for d in folders)]
    pick = own or blas
    if len(pick) == 1:
        i = pick[0]
        return LibraryEnvironment(str(i.get("internal_api")), str(i.get("version")),
                                  str(i.get("architecture") or "unknown"), VERIFY_THREADS, int(i["num_threads"]),
                                  f"numpy {np.__version__}, {i.get('filepath')}")
    found = "; ".join(f"{i.get('internal_api')} {i.get('version')} at {i.get('filepath')}" for i in blas) or "none"
    return LibraryEnvironment("unknown", "unknown", "unknown", VERIFY_THREADS, 0,
                              f"numpy {np.__version__}; which BLAS numpy calls is not known (threadpoolctl finds "
                              f"{found}, none under {', '.join(map(str, folders))})")


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


#: CPU features torch's bf16 dispatch looks at (oneDNN's bf16 kernels need them), by torch.cpu's query
_TORCH_CPU_FEATURES = (("AVX-512 BF16", "_is_avx512_bf16_supported"), ("AMX", "_is_amx_tile_supported"))


def _stdout_during(call: Callable[[], Any]) -> str:
    """What the process writes to its standard output (file descriptor 1, where MKL's and
    oneDNN's verbose modes print) while ``call()`` runs, redirected to a file meanwhile."""
    import sys
    import tempfile

    sys.stdout.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            call()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return log.read().decode("utf-8", "replace")


def onednn_matmul_implementation(dtype: str) -> str:
    """The oneDNN matmul implementation torch runs for a ``dtype`` product above
    :data:`TORCH_ONEDNN_MIN_WORK` (17 x 17 x 17), as oneDNN's verbose mode names it
    (``brg_matmul:avx512_core_bf16``); "" where oneDNN is not called."""
    torch = importlib.import_module("torch")
    if not torch.backends.mkldnn.is_available():
        return ""
    x = torch.ones((17, 17), dtype=getattr(torch, dtype))

    def product() -> None:
        with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            x @ x
    found = re.search(r"primitive,exec,cpu,matmul,([^,]+),", _stdout_during(product))
    return found.group(1) if found else ""


@functools.cache
def mkl_dispatch() -> str:
    """The code MKL dispatched a float32 product of torch to, as MKL's verbose mode names it
    in its first line ("... for Intel(R) 64 architecture <this>, Lnx ..."): "Intel(R)
    Architecture processors" on AMD CPUs, "Intel(R) Advanced Vector Extensions 2 (Intel(R)
    AVX2) enabled processors" and the like on Intel's; "" where torch has no MKL.  MKL prints
    that line once per process, at its first verbose call, so the answer is kept; where
    something else of the process turned MKL's verbose mode on first, it is "not reported"."""
    torch = importlib.import_module("torch")
    if not torch.backends.mkl.is_available():
        return ""
    x = torch.ones((16, 16))

    def product() -> None:
        with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON):
            x @ x
    found = re.search(r"architecture (.+?), \w+ [0-9.]+GHz", _stdout_during(product))
    return found.group(1) if found else "dispatch not reported"


def torch_environment(dtype: str = "float32") -> LibraryEnvironment:
    """torch's CPU GEMM of ``dtype`` matrices.  float32: MKL's SGEMM with the code MKL says it
    dispatched to (:func:`mkl_dispatch`, "MKL sgemm (Intel(R) Architecture processors)"), or
    ATen's with torch's CPU capability where torch has no MKL, and, where
    ``MKL_ENABLE_INSTRUCTIONS`` limits MKL's dispatch, that limit.  bfloat16: oneDNN's
    implementation where torch calls oneDNN (:func:`onednn_matmul_implementation`, "oneDNN
    brg_matmul:avx512_core_bf16"), else ATen's loop with the capability ("ATen gemm (AVX2)").  ``details``
    has MKL's and oneDNN's versions from ``torch.__config__.show()`` and the CPU features
    that decide oneDNN's bf16 kernels (``torch.cpu``'s queries, where this torch has them)."""
    torch = importlib.import_module("torch")
    config = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([0-9.]+)", config)
    dnn = re.search(r"MKL-DNN (v[0-9.]+)", config)
    mkl_text = f"MKL {mkl.group(1)}" if mkl and torch.backends.mkl.is_available() else "no MKL"
    dnn_text = f"oneDNN {dnn.group(1)}" if dnn and torch.backends.mkldnn.is_available() else "no oneDNN"
    features = [f"{label} {'yes' if query() else 'no'}" for label, attr in _TORCH_CPU_FEATURES
                if (query := getattr(torch.cpu, attr, None)) is not None]
    # MKL's own dispatch, where the user's environment limits it (read, never set here)
    limit = os.environ.get("MKL_ENABLE_INSTRUCTIONS")
    capability = torch.backends.cpu.get_cpu_capability()
    if dtype == "bfloat16":
        onednn = onednn_matmul_implementation(dtype)
        kernel = f"oneDNN {onednn}" if onednn else f"ATen gemm ({capability})"
    else:
        dispatch = mkl_dispatch()
        kernel = (f"MKL sgemm ({dispatch})" if dispatch else f"ATen gemm ({capability})") + (
            f" (MKL limited to {limit})" if limit else "")
    return LibraryEnvironment("torch", torch.__version__, kernel, VERIFY_THREADS,
                              torch.get_num_threads(),
                              ", ".join([mkl_text, dnn_text] + ([f"CPU: {', '.join(features)}"] if features else [])))


#: the library targets of :func:`probe_library`
LIBRARIES: dict[str, Library] = {
    "numpy-fp64": Library("fp64", "float64", _np_call, _np_threads, numpy_environment, (_openblas("fp64", 256),)),
    "numpy-fp32": Library("fp32", "float32", _np_call, _np_threads, numpy_environment, (_openblas("fp32", 320),)),
    "torch-cpu-fp32": Library("fp32", "float32", _torch_call("float32"), _TorchThreads, torch_environment,
                              (TORCH_FP32,)),
    "torch-cpu-bf16": Library("bf16", "float32", _torch_call("bfloat16"), _TorchThreads,
                              lambda: torch_environment("bfloat16"), (TORCH_BF16, TORCH_BF16_ONEDNN)),
}


def _tally(results: list[Result]) -> tuple[int, int]:
    """(outputs that differ, outputs) over all products."""
    return sum(r[2] for r in results), sum(r[3] for r in results)


def _all_match(results: list[Result]) -> bool:
    """Some products were checked and every output of every one matched."""
    return bool(results) and all(r[2] == 0 for r in results)


def _result_lines(results: list[Result]) -> list[str]:
    """One line per verification product (the first rows that differ listed)."""
    lines = []
    for shape, kind, bad, total, rows in results:
        where = f" (rows {rows[:8]}{'...' if len(rows) > 8 else ''})" if bad else ""
        lines.append(f"    {'x'.join(map(str, shape)):<12} {kind:<12} {bad:>6} of {total:<6} outputs differ{where}")
    return lines


@dataclass
class LibraryReport:
    """What :func:`probe_library` found; :meth:`sheet` prints it, :func:`save_library_model`
    saves it."""

    name: str
    environment: LibraryEnvironment
    repeatable: bool
    thread_independent: bool
    thread_evidence: str
    fprev: str
    candidate: LibraryCandidate
    results: list[Result] = field(default_factory=list)
    recovery: Recovery | None = None
    first_guess: str = ""
    at_default_threads: tuple[int, int] | None = None
    threading: ThreadingRecovery | None = None

    @property
    def model(self) -> tuple[LibraryCandidate, list[Result], int]:
        """What the report stands for and saves: the candidate with the threads recovered
        (:attr:`threading`) where that verified at the library's default thread count, its
        results and that thread count; else the one-thread candidate, its results and 1."""
        t = self.threading
        if t is not None and t.candidate is not None and t.verified:
            return t.candidate, t.results, t.threads
        return self.candidate, self.results, self.environment.threads

    @property
    def verified(self) -> bool:
        """Every output of every verification product matched, run after run."""
        return self.repeatable and _all_match(self.results)

    @property
    def other_kernel(self) -> bool:
        """The kernel that ran is not one the candidate was written for."""
        return bool(self.candidate.kernels) and self.environment.kernel not in self.candidate.kernels

    @property
    def counts(self) -> tuple[int, int]:
        """(outputs that differ, outputs) over every verification product."""
        return _tally(self.results)

    @property
    def verdict(self) -> str:
        """The verification's outcome in one sentence, with its counts."""
        n_bad, n_all = self.counts
        if not self.repeatable:
            return "NOT verified: the library is not deterministic across runs (no model proposed)"
        if self.verified:
            return (f"verified: bit-identical on all {n_all} outputs of {len(self.results)} products "
                    f"(random and adversarial) at {self.environment.threads} thread"
                    f"{'s' if self.environment.threads != 1 else ''}")
        return (f"NOT verified: {n_bad} of {n_all} outputs differ from the candidate (listed above); "
                f"the library's schedule is not the candidate's")

    def sheet(self) -> str:
        """The report as text; where the result is not verified and another kernel ran
        than the candidate's, which one and what to do."""
        env = self.environment
        lines = [f"Library probe: {self.name}", f"  library                  {env.library} {env.version}"
                 + (f" ({env.details})" if env.details else ""),
                 f"  kernel                   {env.kernel}",
                 f"  threads                  {env.threads} for the verification (default "
                 f"{env.default_threads or 'not known'})",
                 f"  repeatable across runs   {'yes' if self.repeatable else 'NO'}",
                 f"  same for 1 and n threads {'yes' if self.thread_independent else 'NO'} ({self.thread_evidence})",
                 f"  FPRev tree               {self.fprev}",
                 f"  candidate                {self.candidate.schedule.name}: {self.candidate.source}"]
        if self.first_guess:
            lines.append(f"  first guess              {self.first_guess}")
        if self.at_default_threads is not None:
            bad, total = self.at_default_threads
            lines.append(f"  at the default threads   {self.environment.default_threads or 'unknown'}: "
                         + (f"the same {total} outputs, bit for bit" if not bad else
                            f"{bad} of {total} outputs differ from the model (it holds at 1 thread)"))
        if self.threading is not None:
            lines.append(self.threading.sheet())
        if self.recovery is not None:
            lines.append(self.recovery.sheet())
        if self.candidate.gap:
            lines.append(f"  not modelled             {self.candidate.gap}")
        lines += _result_lines(self.results)
        lines.append(f"  verification: {self.verdict}")
        if not self.verified and self.other_kernel and self.recovery is None:
            lines += [f"  kernel: this machine ran the {env.kernel} kernel of {env.library} {env.version}; the "
                      f"candidate ({self.candidate.schedule.name}) describes the {', '.join(self.candidate.kernels)} "
                      f"kernels, not this one",
                      f"  to do: recover this kernel's schedule: workbench probe {self.name} --recover"]
        return "\n".join(lines)


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


def _library(name: str) -> Library:
    from ..numbers.validation import unknown_name

    if name not in LIBRARIES:
        raise ValueError(unknown_name("library target", name, LIBRARIES))
    return LIBRARIES[name]


#: products whose outputs tell OpenBLAS' threaded cuts apart (:func:`recover_threading`): rows cut
#: alone (N small) and with the columns (N large), odd pieces that put the edge kernels mid-matrix,
#: K past the blocking; the thread-count thresholds are probed on 33 x 31 x K around W = 2 x min_work
THREADING_SHAPES = ((33, 31, 600), (41, 29, 700), (35, 9, 2000), (31, 9, 2000), (37, 200, 400), (25, 200, 400),
                    (13, 96, 700), (9, 100, 900), (31, 33, 600), (49, 101, 600), (45, 45, 259), (57, 43, 1500),
                    (17, 200, 400), (200, 17, 401), (33, 250, 300), (250, 33, 300))
#: the :class:`~workbench.units.schedules.Threading` fields searched (each tuple's first value is
#: OpenBLAS' default; DIVIDE_RATE 2, GEMM_MULTITHREAD_THRESHOLD 4, SMP_THRESHOLD_MIN 65536)
THREADING_SPACE: dict[str, tuple[Any, ...]] = {
    "min_work": tuple(65536 * g for g in (4, 1, 2, 8, 16, 32, 64)), "pieces": (2, 1, 4), "k_half_up": (True, False),
    "switch_ratio": (2, 4, 8, 16, 32), "row_multiple": (1, 2, 4, 8, 16, 32), "col_multiple": (1, 2, 4, 8, 16, 32)}


def _holds(schedule: _schedules.Schedule, M: int, N: int, K: int) -> bool:
    """Whether ``schedule`` holds a rule for an M x N x K product (a recovered schedule
    holds for the (M, N) it was recovered on)."""
    try:
        schedule.split(K, M, N)
    except ValueError:
        return False
    return True


def _threshold_shapes() -> tuple[tuple[int, int, int], ...]:
    """33 x 31 x K just below and at 2 x min_work multiply-adds for every min_work searched."""
    out = []
    for w in THREADING_SPACE["min_work"]:
        k = (2 * w - 1) // (33 * 31)
        out += [(33, 31, k), (33, 31, k + 1)]
    return tuple(out)


@dataclass
class ThreadingRecovery:
    """What :func:`recover_threading` found: the thread count, the records of
    :data:`THREADING_SPACE` that reproduce every one of ``probes`` products (``consistent``,
    out of ``searched``), the candidate with the first of them (None: none does), its results at
    that thread count on the verification products, the library calls and seconds."""

    threads: int
    searched: int
    probes: int
    consistent: list[_schedules.Threading]
    candidate: LibraryCandidate | None
    results: list[Result]
    calls: int
    seconds: float

    @property
    def verified(self) -> bool:
        """Every output of every verification product at ``threads`` threads matched."""
        return _all_match(self.results)

    @property
    def counts(self) -> tuple[int, int]:
        """(outputs that differ, outputs) over the verification products at ``threads`` threads."""
        return _tally(self.results)

    def sheet(self) -> str:
        """The recovery as report lines."""
        head = (f"  threads recovered        {self.threads} threads: {len(self.consistent)} of {self.searched} "
                f"cuts reproduce all {self.probes} probes ({self.calls} "
                f"library calls, {self.seconds:.0f} s)")
        if self.candidate is None:
            return head + "; none does, so the model holds at 1 thread only"
        t = self.consistent[0]
        bad, total = self.counts
        return (head + f"\n                           {t}\n                           at {self.threads} threads: "
                + (f"verified, all {total} outputs of {len(self.results)} products" if not bad
                   else f"NOT verified, {bad} of {total} outputs differ"))


def recover_threading(name: str, unit: Model, schedule: _schedules.Schedule, *, threads: int, seed: int = 0,
                      shapes: tuple[tuple[int, int, int], ...] = SHAPES) -> ThreadingRecovery:
    """How the library target ``name`` cuts a product over ``threads`` threads, recovered
    from the black box given its one-thread model (``unit``, ``schedule``): every
    :class:`~workbench.units.schedules.Threading` of :data:`THREADING_SPACE` is run against
    the library's products at ``threads`` threads on :data:`THREADING_SHAPES` and the
    thread-count thresholds, and :data:`THREAD_SHAPES` (those the one-thread schedule holds
    a rule for), shape by shape (each distinct cut of a shape run once); the first record
    that reproduces them all is verified at ``threads`` threads on fresh
    products of ``shapes`` and :data:`THREAD_SHAPES`."""
    from ..matmul.product import gemm

    lib = _library(name)
    t0 = time.perf_counter()
    keys = list(THREADING_SPACE)
    alive = [_schedules.Threading(threads, **dict(zip(keys, values)))
             for values in itertools.product(*THREADING_SPACE.values())]
    searched = len(alive)
    rng = np.random.default_rng((seed, 7))
    calls = 0
    probes = [s for s in THREAD_SHAPES + THREADING_SHAPES + _threshold_shapes() if _holds(schedule, *s)]
    with lib.set_threads(threads):
        for shape in probes:
            A, B = draw_inputs(rng, "adversarial", *shape, lib.fmt)
            want = lib.call(A.astype(lib.dtype), B.astype(lib.dtype))
            calls += 1
            seen: dict[Any, bool] = {}
            kept = []
            for t in alive:
                cut = t.cut(*shape)
                key = None if cut is None else (tuple(cut[0]), tuple(cut[1]), t.k_half_up)   # one thread: uncut
                if key not in seen:
                    got = np.asarray(gemm(A, B, model=unit, schedule=replace(schedule, threading=t)), dtype=np.float64)
                    seen[key] = bool(np.array_equal(got, want, equal_nan=True))
                if seen[key]:
                    kept.append(t)
            alive = kept
            if not alive:
                break
    if not alive:
        return ThreadingRecovery(threads, searched, len(probes), [], None, [], calls, time.perf_counter() - t0)
    env = lib.environment()
    sched = replace(schedule, threading=alive[0], threads=threads, name=f"{schedule.name}-{threads}-threads",
                    evidence=schedule.evidence + f"; the cut over {threads} threads recovered from the library at "
                                                 f"{threads} threads ({alive[0]})")
    cand = LibraryCandidate(unit=lambda: unit, schedule=sched, source=f"{threads}-thread cut recovered on this machine "
                            f"({env.kernel}) over the one-thread model", kernels=(env.kernel,))
    results = verify_model(name, unit, sched, seed=seed + 1, shapes=tuple(shapes) + THREAD_SHAPES, threads=threads)
    calls += len(results)
    return ThreadingRecovery(threads, searched, len(probes), alive, cand, results, calls, time.perf_counter() - t0)


def verify_model(name: str, unit: Model, schedule: _schedules.Schedule, *, seed: int = 0,
                 shapes: tuple[tuple[int, int, int], ...] = SHAPES, threads: int | None = VERIFY_THREADS) -> list[Result]:
    """Run ``unit`` with ``schedule`` through :func:`workbench.gemm` against the library
    target ``name`` at ``threads`` (None: the library's default), bit for bit, on a random
    and an adversarial product of each shape (inputs from ``seed``: the same products for
    the same seed and shapes); one :data:`Result` per product."""
    from contextlib import nullcontext

    from ..matmul.product import gemm

    lib = _library(name)
    rng = np.random.default_rng((seed, 1))
    results: list[Result] = []
    with lib.set_threads(threads) if threads is not None else nullcontext():
        for shape in shapes:
            for kind in ("random", "adversarial"):
                A, B = draw_inputs(rng, kind, *shape, lib.fmt)
                want = lib.call(A.astype(lib.dtype), B.astype(lib.dtype))
                try:
                    got = np.asarray(gemm(A, B, model=unit, schedule=schedule), dtype=np.float64)
                    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
                except ValueError:         # the schedule holds no rule for this product: no output is modelled
                    bad = np.ones(want.shape, dtype=bool)
                results.append((shape, kind, int(bad.sum()), int(bad.size), sorted(set(np.argwhere(bad)[:, 0].tolist()))))
    return results


def recover_library(name: str, *, shapes: Sequence[tuple[int, int]], k_max: int = 8192, seed: int = 0,
                    progress: Callable[[str], Any] | None = None) -> tuple[LibraryCandidate | None, Recovery]:
    """The library target ``name``'s schedule recovered from the black box at one thread
    (:func:`workbench.probes.recovery.recover_schedule`) for products of the (M, N) in
    ``shapes`` and K up to ``k_max`` (and past it: the last split probed), over the hand
    candidate's unit and fixed fields (where C enters, the output conversion): a candidate
    tied to the kernel that ran (None where nothing was explained), and the recovery."""
    from .recovery import recover_schedule

    lib = _library(name)
    env = lib.environment()
    hand = lib.candidate_for(env.kernel)
    prec = lib.precision
    template = replace(hand.schedule, rules=(), regions=())
    with lib.set_threads(1):
        rec = recover_schedule(lib.call, hand.unit(), lib.fmt, lib.dtype, prec, shapes, k_max=k_max,
                               template=template, name=f"{name}-{env.kernel.lower()}-recovered", seed=seed,
                               progress=progress)
    if rec.schedule is None:
        return None, rec
    sched = replace(rec.schedule, shapes=f"{rec.schedule.shapes}; {env.describe()}")
    return LibraryCandidate(hand.unit, sched, f"recovered on this machine ({env.kernel}) from the library alone",
                            kernels=(env.kernel,)), rec


def probe_library(name: str, *, seed: int = 0, shapes: tuple[tuple[int, int, int], ...] = SHAPES,
                  fprev_shape: tuple[int, int, int] = (8, 8, 700), recover: bool = False, k_max: int = 8192,
                  progress: Callable[[str], Any] | None = None) -> LibraryReport:
    """Probe one of :data:`LIBRARIES` (module docstring): the candidate verified on
    ``shapes`` (:func:`verify_model`), FPRev on ``fprev_shape``.  ``recover``: the
    hand-written candidate is only a first guess; the schedule is recovered
    (:func:`recover_library`, for the (M, N) of ``shapes`` and K up to ``k_max``) and
    the recovered one is verified and reported.  The model is verified at one thread and
    replayed at the library's default thread count too."""
    report = _probe_library(name, seed=seed, shapes=shapes, fprev_shape=fprev_shape, recover=recover, k_max=k_max,
                            progress=progress)
    if report.repeatable:
        report.at_default_threads = _tally(verify_model(name, report.candidate.unit(), report.candidate.schedule,
                                                        seed=seed, shapes=shapes, threads=None))
        default = report.environment.default_threads
        if report.verified and default > 1 and (report.at_default_threads[0] or not report.thread_independent):
            report.threading = recover_threading(name, report.candidate.unit(), report.candidate.schedule,
                                                 threads=default, seed=seed, shapes=shapes)
    return report


def _probe_library(name: str, *, seed: int, shapes: tuple[tuple[int, int, int], ...],
                   fprev_shape: tuple[int, int, int], recover: bool, k_max: int,
                   progress: Callable[[str], Any] | None) -> LibraryReport:
    """The body of :func:`probe_library` (everything but the replay at the default threads)."""

    lib = _library(name)
    rng = np.random.default_rng(seed)
    prec = lib.precision
    # 1. repeatability across runs and thread counts: a small product and one large enough that a
    #    BLAS splits it over its threads (OpenBLAS and MKL thread products past about 10^6 MACs)
    repeatable, differ, evidence = True, 0, []
    for shape in THREAD_SHAPES:
        A, B = draw_inputs(rng, "adversarial", *shape, lib.fmt)
        A, B = A.astype(lib.dtype), B.astype(lib.dtype)
        first = lib.call(A, B)
        repeatable &= all(np.array_equal(first, lib.call(A, B), equal_nan=True) for _ in range(3))
        with lib.set_threads(1):
            one = lib.call(A, B)
        bad = int(((one != first) & ~(np.isnan(one) & np.isnan(first))).sum())
        differ += bad
        text = "x".join(map(str, shape))
        if not bad:
            evidence.append(f"{text}: identical")
            continue
        # the split of K at each thread count, as FPRev's first-row joins show it
        joins = []
        for threads in (1, None):
            if threads is None:
                counts = fprev_counts(lib.call, *shape, 0, prec, lib.dtype)
            else:
                with lib.set_threads(threads):
                    counts = fprev_counts(lib.call, *shape, 0, prec, lib.dtype)
            joins.append(_joins(counts[0], shape[2]))
        evidence.append(f"{text}: {bad} of {one.size} outputs differ between 1 thread and the default; FPRev's "
                        f"joins of position 0 at 1 thread {joins[0]}, at the default {joins[1]}")
    env = lib.environment()
    thread_evidence = "; ".join(evidence) + f" (default {env.default_threads or 'unknown'} threads)"
    # 2. FPRev at one thread
    M, N, K = fprev_shape
    with lib.set_threads(1):
        counts = fprev_counts(lib.call, M, N, K, 0, prec, lib.dtype)
    rows = len(np.unique(counts, axis=0))
    fprev = (f"{M}x{N}x{K}: {'one tree for every row' if rows == 1 else f'{rows} different trees over {M} rows'}; "
             f"position 0 joins subtrees of {_joins(counts[0], K)} leaves")
    out_p = _formats.format(lib.fmt).p
    if out_p < prec and K > 2 ** out_p:
        fprev += (f" (the {lib.fmt} result rounds counts above 2^{out_p}: the sizes below {K - 2 ** out_p} are "
                  f"approximate)")
    # 3. the candidate, verified at one thread
    cand = lib.candidate_for(env.kernel)
    results = verify_model(name, cand.unit(), cand.schedule, seed=seed, shapes=shapes)
    if not recover:
        return LibraryReport(name, env, repeatable, differ == 0, thread_evidence, fprev, cand, results)
    bad, total = _tally(results)
    guess = (f"{cand.schedule.name} ({', '.join(cand.kernels) or 'any kernel'}): "
             + ("verified" if bad == 0 else f"{bad} of {total} outputs differ"))
    # the products split over the threads too: the threads' cut is recovered on them (:func:`recover_threading`)
    mn = sorted({(M, N) for M, N, _ in shapes + THREAD_SHAPES if M >= 2 and N >= 2})
    recovered, rec = recover_library(name, shapes=mn, k_max=max(k_max, *(K for _, _, K in shapes)), seed=seed,
                                     progress=progress)
    if recovered is None:
        return LibraryReport(name, env, repeatable, differ == 0, thread_evidence, fprev, cand, results, rec, guess)
    rec_results = verify_model(name, recovered.unit(), recovered.schedule, seed=seed, shapes=shapes)
    if bad == 0 and _tally(rec_results)[0]:    # the first guess holds where the recovery does not: keep it
        return LibraryReport(name, env, repeatable, differ == 0, thread_evidence, fprev, cand, results, rec,
                             guess + f"; the recovered schedule was not ({_tally(rec_results)[0]} outputs differ), "
                                     f"so the first guess is the model")
    return LibraryReport(name, env, repeatable, differ == 0, thread_evidence, fprev, recovered, rec_results, rec,
                         guess)


def save_library_model(report: LibraryReport, path: str | Path) -> Path:
    """Write the report's candidate as a library model (a unit file: the unit, its
    ``[schedule]``, a ``[library]`` table with the target, the verdict - "verified" or
    "not verified" - and the :class:`LibraryEnvironment`, the counts in
    ``[provenance.verification]``: outputs_checked, outputs_agreed, products_checked),
    verified or not; returns the path."""
    from ..units.unitfile import Provenance, save_unit

    candidate, results, threads = report.model
    n_bad, n_all = _tally(results)
    env = replace(report.environment, threads=threads)
    verified = report.verified and not n_bad
    prov = Provenance(origin="probed", target=f"{report.name}: {env.describe()}",
                      verification={"outputs_checked": n_all, "outputs_agreed": n_all - n_bad,
                                    "products_checked": len(results)},
                      notes=f"workbench probe {report.name}: {report.verdict}"
                            + (f"; at {threads} threads with the recovered cut: verified" if threads != 1 and verified
                               else ""))
    library: dict[str, str | int] = {"target": report.name, "verdict": "verified" if verified else "not verified",
                                     **env.to_dict()}
    return save_unit(candidate.unit(), path, provenance=prov, schedule=candidate.schedule, library=library)


@dataclass(frozen=True)
class SavedModelCheck:
    """A saved library model re-checked against this machine's library
    (:func:`verify_saved`): the file's schedule name and recorded verdict, the
    environment it was saved in (None: the file has no ``[library]`` table), this
    machine's, and the results."""

    name: str
    path: Path
    schedule: str
    saved_verdict: str
    saved: LibraryEnvironment | None
    environment: LibraryEnvironment
    results: list[Result]

    @property
    def verified(self) -> bool:
        """Every output of every product matched."""
        return _all_match(self.results)

    @property
    def differences(self) -> list[str]:
        """Where this machine's environment differs from the saved one."""
        return [] if self.saved is None else self.saved.differences(self.environment)

    def sheet(self) -> str:
        """The check as text: the file, both environments, the products, the verdict with
        its counts and a warning per environment difference."""
        n_bad, n_all = _tally(self.results)
        lines = [f"Library model check: {self.path} against {self.name} on this machine",
                 f"  schedule                 {self.schedule} (saved {self.saved_verdict})",
                 f"  saved in                 {self.saved.describe() if self.saved else 'not recorded (no [library] table)'}",
                 f"  here                     {self.environment.describe()}"]
        lines += _result_lines(self.results)
        if self.verified:
            lines.append(f"  verification: verified: bit-identical on all {n_all} outputs of {len(self.results)} "
                         f"products at {self.environment.threads} thread{'s' if self.environment.threads != 1 else ''}")
        else:
            lines.append(f"  verification: NOT verified: {n_bad} of {n_all} outputs differ from the saved model "
                         f"(listed above)")
        lines += [f"  warning: the environment differs from the saved one: {d}" for d in self.differences]
        return "\n".join(lines)


def verify_saved(name: str, path: str | Path, *, seed: int = 0,
                 shapes: tuple[tuple[int, int, int], ...] = SHAPES) -> SavedModelCheck:
    """Re-check the library model saved at ``path`` (:func:`save_library_model`) against
    the library target ``name`` on this machine: its unit and schedule through
    :func:`verify_model` on ``shapes``.  A file without a schedule, or saved for
    another target, is refused (ValueError naming both)."""
    from ..units.unitfile import read_unit

    lib = _library(name)
    uf = read_unit(path)
    if uf.schedule is None:
        raise ValueError(f"unit file {str(uf.path)!r} has no [schedule]: a library model is a unit and a schedule "
                         f"(save one with: workbench probe {name} --save FILE)")
    if uf.library is not None and uf.library["target"] != name:
        raise ValueError(f"unit file {str(uf.path)!r} models the library target {uf.library['target']!r}, not "
                         f"{name!r}: run workbench probe {uf.library['target']} --verify {uf.path}")
    threads = VERIFY_THREADS if uf.schedule.threading is None else uf.schedule.threading.threads
    results = verify_model(name, uf.model, uf.schedule, seed=seed, shapes=shapes, threads=threads)
    saved = None if uf.library is None else LibraryEnvironment.from_dict(uf.library)
    verdict = "not recorded" if uf.library is None else str(uf.library["verdict"])
    return SavedModelCheck(name, uf.path, uf.schedule.name, verdict, saved, replace(lib.environment(), threads=threads),
                           results)
