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
"""

from __future__ import annotations

import numpy as np

from ..gate import real_matrix
from .model import Model
from .operands import Operands, decompose, decompose_checked, plus_zeros, recycle, release_workspace, threads_for
from .model import Operation, operation

ACCUMULATIONS = ("chain", "outside", "promote")


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
    acc = np.array(C, dtype=np.float64, copy=True, order="C")
    with threads_for(ops.M * ops.N * max(ops.K, 1)):
        op = operation(model.kind)
        D = op.run(model, ops, acc, accumulation, promote_every, scale_a, scale_b)
        return plus_zeros(D) if op.positive_zero(model) else D


#: Multiply-adds up to which :func:`run_small` takes a product (every stage on the
#: calling thread, far below :data:`~workbench.threads.PARALLEL_MIN_WORK`).
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
    op = operation(model.kind)
    scaled = scale_a is not None
    if scaled != (scale_b is not None) or scaled != op.scaled:
        return None
    D = op.run_small(model, A, B, C, accumulation, promote_every, scale_a, scale_b)
    if D is None:
        return None
    return plus_zeros(D) if op.positive_zero(model) else D


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
    if op.has_row_kernel:
        with threads_for(a.size):
            D = op.dots(model, a, b, acc)
        return plus_zeros(D) if op.positive_zero(model) else D
    out = np.empty_like(acc)
    float_layout = type(op).prepare is Operation.prepare     # float64 A and B^T: no per-row checks
    K = a.shape[1]
    with threads_for(K):
        for r in range(a.shape[0]):
            ops = (Operands(1, K, 1, a[r:r + 1], b[r:r + 1], None, None, None, None) if float_layout
                   else op.prepare(model, a[r:r + 1], b[r:r + 1].T))
            out[r] = op.run(model, ops, acc[r:r + 1].reshape(1, 1), "chain", None, None, None)[0, 0]
    return plus_zeros(out) if op.positive_zero(model) else out


__all__ = ["ACCUMULATIONS", "SMALL_WORK", "prepare", "run", "run_prepared", "run_small", "dots", "Operands", "decompose", "decompose_checked",
           "recycle", "release_workspace", "threads_for"]
