"""Engine entry point: run a :class:`~workbench.engine.model.Model` on whole matrices.

:func:`prepare` checks A and B against the model's input format and puts them in
the form its operation's kernel reads (:meth:`Operation.prepare
<workbench.engine.model.Operation.prepare>`: T-FDPA decomposes them in one
compiled pass, the others keep float64 ``A`` and ``B^T``); :func:`run_prepared`
calls the operation's ``run``; :func:`run` does both; :func:`run_small` does both in one
compiled call for small products, where the operation has such a path.  The operation is found by
``model.kind`` in the registry (:mod:`workbench.engine.model`); this module
knows no operation by name.  Small work runs on one thread
(:func:`~workbench.engine.operands.threads_for`).

Every entry estimates the memory a product will allocate (:func:`workspace_bytes`)
and refuses, before allocating, one that would not fit in the memory available
(:func:`check_workspace` raises :class:`WorkspaceError`, a MemoryError that gives
the estimate and what to make smaller).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..numbers.validation import real_matrix
from .kernels import LANE_PAD, LANES_MIN_N
from .model import Model
from .operands import Operands, decompose, decompose_checked, recycle, release_workspace, threads_for
from .model import Operation, operation

ACCUMULATIONS = ("chain", "outside", "promote")

#: Bytes a product allocates per element of its operands - A's M x Kp and B's Kp x N
#: (N padded to whole lanes where the lane kernels read it), K zero-padded to whole
#: blocks of the unit - on the kinds that return the canonical NaN (T-FDPA, ST-/GST-FDPA,
#: TR-/GTR-FDPA): int32 significands and exponents (8), the lane kernels' copy of B and
#: the scaled kinds' scaled copies.  Peaks measured: 8 (T-FDPA) to 12 (ST-FDPA).
DECOMPOSED_BYTES = 16
#: The same on the kinds that propagate NaN payloads (FMA chains, E-FDPA, FTZ-AddMul,
#: the pair units), which read the operands' float64 values (the payloads are theirs):
#: float64 or float32 copies and the input checks' temporaries.  Peaks measured: 4
#: (FMA chains, FTZ-AddMul) to 27 (the pair units, B of many columns).
FLOAT_OPERAND_BYTES = 32
#: Bytes per output: C and the accumulator in float64, D and its conversion to the
#: output's dtype, the epilogue's temporaries (alpha, beta): measured 12 to 39.
OUTPUT_BYTES = 48
#: Bytes per output and per chain where a schedule cuts K into several: each part's
#: result, kept until the parts are combined, and its copy rounded to the combining
#: format (measured 15 to 16, the outputs' own bytes besides).
CHAIN_BYTES = 24
#: Products estimated below this are not checked against the memory available (a
#: question to the operating system that small products, issue 41, should not pay).
UNCHECKED_BYTES = 64 << 20


class WorkspaceError(MemoryError):
    """A product whose estimated workspace (:func:`workspace_bytes`) is larger than the
    memory available, refused before anything was allocated; the message gives the
    estimate and what to make smaller."""


def available_memory() -> int:
    """Bytes of memory available to new allocations without swapping: psutil's
    ``virtual_memory().available`` (free memory plus what the system can reclaim)."""
    import psutil

    return int(psutil.virtual_memory().available)


def _padded(k: int, block: int) -> int:
    """``k`` elements zero-padded to whole blocks (one block when ``k`` is 0), as the
    operations pad K."""
    return k + (-k) % block if k else block


def _estimate(op: Operation, a_rows: int, b_columns: int, padded_k: int, outputs: int,
              chains: int) -> tuple[int, int, int]:
    """(operand, output, chain) bytes of :func:`workspace_bytes`."""
    per_element = FLOAT_OPERAND_BYTES if op.propagates_nan else DECOMPOSED_BYTES
    return (per_element * (a_rows + b_columns) * padded_k, OUTPUT_BYTES * outputs,
            CHAIN_BYTES * outputs * chains if chains > 1 else 0)


def _workspace_terms(model: Model, M: int, K: int, N: int, parts: Sequence[int] | None) -> tuple[int, int, int]:
    """(operand, output, chain) bytes of :func:`workspace_bytes`."""
    op = operation(model.kind)
    block = op.block_size(model)
    padded = _padded(K, block) if parts is None else sum(_padded(k, block) for k in parts)
    columns = -(-N // LANE_PAD) * LANE_PAD if N >= LANES_MIN_N else N
    return _estimate(op, M, columns, padded, M * N, 1 if parts is None else len(parts))


def workspace_bytes(model: Model, M: int, K: int, N: int, *, parts: Sequence[int] | None = None) -> int:
    """An estimate of the most memory an (M, K) x (K, N) product on ``model`` allocates
    beyond its arguments: the operands with K zero-padded to whole blocks of the
    unit's block size (:meth:`Operation.block_size <workbench.engine.model.Operation.block_size>`,
    L for the fused kinds) and N to whole lanes, at :data:`DECOMPOSED_BYTES` or
    :data:`FLOAT_OPERAND_BYTES` per element, and the M x N outputs at
    :data:`OUTPUT_BYTES` each.  ``parts``: the lengths of the
    chains a schedule cuts K into (each padded on its own; :data:`CHAIN_BYTES` per
    output and chain where there are several); None is one chain of K.  Above the
    peaks measured on every built-in kind, by up to about 2 times for T-FDPA (and 8 for
    the FMA chains, whose float32 operands take 4 bytes an element)."""
    return sum(_workspace_terms(model, M, K, N, parts))


def check_workspace(model: Model, M: int, K: int, N: int, *, parts: Sequence[int] | None = None) -> None:
    """Refuse an (M, K) x (K, N) product whose :func:`workspace_bytes` exceeds
    :func:`available_memory` (estimates below :data:`UNCHECKED_BYTES` are not
    checked): a :class:`WorkspaceError` gives the estimate, the memory available and
    what to make smaller, before anything is allocated."""
    terms = _workspace_terms(model, M, K, N, parts)
    if sum(terms) >= UNCHECKED_BYTES:
        chains = f", {len(parts)} chains" if parts is not None and len(parts) > 1 else ""
        _refuse_beyond_memory(terms, f"a {M} x {K} x {N} product on this {model.kind} unit (blocks of "
                                     f"{operation(model.kind).block_size(model)}{chains})")


def _size(n: float) -> str:
    """``n`` bytes for a reader: GiB, MiB or KiB with one decimal, or bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{int(n)} bytes"


def _refuse_beyond_memory(terms: tuple[int, int, int], what: str) -> None:
    """The :class:`WorkspaceError` of :func:`check_workspace` for the estimate ``terms``
    (operands, outputs, chains) of ``what``, when it exceeds :func:`available_memory`."""
    need = sum(terms)
    available = available_memory()
    if need <= available:
        return
    advice = {0: "a smaller K, M or N, or a unit with a smaller block size L (K is padded to whole blocks)",
              1: "a smaller M or N (the M x N outputs)", 2: "fewer schedule parts (each part's result is kept)"}
    large = sorted((i for i in range(3) if terms[i] * 10 >= need), key=lambda i: -terms[i])   # a tenth or more
    raise WorkspaceError(f"{what} needs about {_size(need)} of workspace (operands {_size(terms[0])}, outputs "
                         f"{_size(terms[1])}" + (f", parts {_size(terms[2])}" if terms[2] else "") + ") but "
                         f"{_size(available)} of memory is available: use " + "; or ".join(advice[i] for i in large))


def prepare(model: Model, A: np.typing.ArrayLike, B: np.typing.ArrayLike) -> Operands:
    """Check A (M, K) and B (K, N) against ``model.in_fmt`` (a ValueError names the first
    value that is not representable, A before B) and put them in the form the model's
    kernel reads (see :class:`~workbench.engine.operands.Operands`)."""
    A = real_matrix(A, "A")
    B = real_matrix(B, "B")
    M, K = A.shape
    N = B.shape[1]
    if B.shape[0] != K:
        raise ValueError(f"A is {M}x{K} and B is {B.shape[0]}x{N}: inner dimensions differ")
    check_workspace(model, M, K, N)
    with threads_for(A.size + B.size):
        return operation(model.kind).prepare(model, A, B)


def run(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, *,
        accumulation: str = "chain", promote_every: int | None = None,
        scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None) -> np.ndarray:
    """D = the unit's A @ B + C as float64 (values exactly in the output format):
    :func:`prepare` then :func:`run_prepared`, the operands' buffers then handed back
    for the next product (:func:`~workbench.engine.operands.recycle`)."""
    A = real_matrix(A, "A")
    B = real_matrix(B, "B")
    with threads_for(A.shape[0] * B.shape[1] * max(A.shape[1], 1)):    # one thread count for every stage
        ops = prepare(model, A, B)
        D = run_prepared(model, ops, C, accumulation=accumulation, promote_every=promote_every, scale_a=scale_a,
                         scale_b=scale_b)
    recycle(ops)
    return D


def run_prepared(model: Model, ops: Operands, C: np.ndarray, *,
                 accumulation: str = "chain", promote_every: int | None = None,
                 scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None) -> np.ndarray:
    """D = the unit's A @ B + C as float64 (values exactly in the output format), for
    operands from :func:`prepare` and a float64 (M, N) ``C`` (not modified).

    ``accumulation``: ``"chain"`` (each block's result is the next block's c),
    ``"outside"`` (each block from c = 0, added to an fp32 accumulator holding C with
    round-to-nearest on ordinary cores), ``"promote"`` (chains of ``promote_every``
    elements from c = 0, each added to the fp32 accumulator with round-to-nearest).
    """
    if accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation={accumulation!r}: expected one of {ACCUMULATIONS}")
    check_workspace(model, ops.M, ops.K, ops.N)
    acc = np.array(C, dtype=np.float64, copy=True, order="C")
    with threads_for(ops.M * ops.N * max(ops.K, 1)):
        op = operation(model.kind)
        D = op.run(model, ops, acc, accumulation, promote_every, scale_a, scale_b)
        return op.finish(model, D)


#: Multiply-adds up to which :func:`run_small` takes a product (every stage on the
#: calling thread, far below :data:`~workbench._runtime.threads.PARALLEL_MIN_WORK`).
SMALL_WORK = 1 << 14


def run_small(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, *, accumulation: str = "chain",
              promote_every: int | None = None, scale_a: np.ndarray | None = None,
              scale_b: np.ndarray | None = None) -> np.ndarray | None:
    """D = the unit's A @ B + C as float64 for a product of at most :data:`SMALL_WORK`
    multiply-adds (K >= 1), straight from C-ordered float64 A (M, K), B (K, N) and C
    (M, N) (and, for scaled units, the block scale factors ``scale_a`` (M, nb) and
    ``scale_b`` (nb, N)) in one compiled call where the operation has one
    (:meth:`Operation.run_small <workbench.engine.model.Operation.run_small>`): the
    same checks and bits as :func:`prepare` then :func:`run_prepared` at a fraction of
    their per-call cost.  ``None`` where the product is larger, the operation has no
    such path, or scale factors are missing (a scaled unit) or given (another): the
    caller takes the general one, which says what is wrong."""
    M, K = A.shape
    if not 0 < M * B.shape[1] * K <= SMALL_WORK:
        return None
    check_workspace(model, M, K, B.shape[1])    # K padded to blocks of L: a few outputs can need much
    op = operation(model.kind)
    scaled = scale_a is not None
    if scaled != (scale_b is not None) or scaled != op.scaled:
        return None
    D = op.run_small(model, A, B, C, accumulation, promote_every, scale_a, scale_b)
    if D is None:
        return None
    return op.finish(model, D)


def dots(model: Model, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Batched dot products ``d[r] = unit(a[r, :], b[r, :], c[r])`` (float64, values
    exactly in the output format): one independent accumulation per row, K consumed
    in blocks of L exactly as :func:`run` does for one output.  Inputs must already be
    representable (``workbench.gemm`` is the checked entry point).

    Operations with a row kernel (:attr:`~workbench.engine.model.Operation.has_row_kernel`:
    every built-in unscaled kind) run every row in one compiled call, vectorised across
    rows or parallel over them.  Others (registered by users) run one 1 x K x 1 product
    per row (float64 rows
    as they are, or through the operation's own ``prepare`` when it has one, so any
    operand layout works; routing chunks of rows
    through the lane kernels as diagonals of square products was measured slower).
    Scaled operations (ST/GST-FDPA) need block scale factors, which ``dots`` does not
    take: a ValueError sends them to ``workbench.gemm``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    acc = np.array(c, dtype=np.float64, copy=True).reshape(-1)
    if a.shape != b.shape or a.ndim != 2 or acc.shape[0] != a.shape[0]:
        raise ValueError(f"dots needs a, b of equal shape (n, K) and c of length n; got {a.shape}, {b.shape}, {acc.shape}")
    op = operation(model.kind)
    if op.scaled:
        raise ValueError(f"dots takes no block scale factors, which {model.kind!r} models need: use "
                         "workbench.gemm(..., scale_a=..., scale_b=...)")
    n, K = a.shape
    block = op.block_size(model)
    terms = _estimate(op, n, n, _padded(K, block), n, 1)
    if sum(terms) >= UNCHECKED_BYTES:
        _refuse_beyond_memory(terms, f"{n} dot products of {K} elements on this {model.kind} unit (blocks of "
                                     f"{block})")
    if op.has_row_kernel:
        with threads_for(a.size):
            D = op.dots(model, a, b, acc)
        return op.finish(model, D)
    out = np.empty_like(acc)
    float_layout = type(op).prepare is Operation.prepare     # float64 A and B^T: no per-row checks
    with threads_for(K):
        for r in range(n):
            ops = (Operands(1, K, 1, a[r:r + 1], b[r:r + 1], None, None, None, None) if float_layout
                   else op.prepare(model, a[r:r + 1], b[r:r + 1].T))
            out[r] = op.run(model, ops, acc[r:r + 1].reshape(1, 1), "chain", None, None, None)[0, 0]
    return op.finish(model, out)


__all__ = ["ACCUMULATIONS", "SMALL_WORK", "WorkspaceError", "available_memory", "workspace_bytes", "check_workspace",
           "DECOMPOSED_BYTES", "FLOAT_OPERAND_BYTES", "OUTPUT_BYTES", "CHAIN_BYTES", "UNCHECKED_BYTES", "prepare",
           "run", "run_prepared", "run_small", "dots", "Operands", "decompose", "decompose_checked",
           "recycle", "release_workspace", "threads_for"]
