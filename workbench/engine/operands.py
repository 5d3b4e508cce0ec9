"""Operands of the engine's kernels.

:func:`decompose` splits float64 values into integer significands and exponents
(the unnormalised form the fused operations align, Xie et al. 2025 Algorithm 7
lines 2-4); :func:`decompose_checked` does it for A and B in one compiled pass while
checking that every value is representable; :func:`pad_k` zero-pads K to whole
blocks.  :class:`Operands` is what :func:`workbench.engine.core.prepare` hands to an
operation's ``run``: float64 ``A``/``B^T`` (:func:`float_operands`) or decomposed.

:func:`threads_for` (from :mod:`workbench._runtime.threads`, the only place that decides whether
a compiled pass runs on one thread or on numba's thread pool) is re-exported here.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..numbers import formats as _formats
from ..numbers.validation import real_array
from .._runtime.threads import PARALLEL_MIN_WORK, threads_for, threads_used
from . import kernels as _k
from . import ops as _ops



class InputSide(Protocol):
    """What the decomposition reads of a model (:class:`workbench.engine.model.Model` has
    it): the input format and whether its subnormals are flushed.  A protocol, so that
    this module - below the model - imports no model."""

    @property
    def in_fmt(self) -> _formats.FloatFormat: ...

    @property
    def flush_subnormals(self) -> bool: ...


class ScaledSide(InputSide, Protocol):
    """What the small-product checks read of a scaled model: the input side, the
    output format and the scale factors' format."""

    @property
    def out_fmt(self) -> _formats.FloatFormat: ...

    @property
    def scale_format(self) -> str | None: ...

#: Most bytes of decomposed operands kept for reuse between products (:func:`workspace_array`).
WORKSPACE_BYTES = 512 << 20
#: Smallest array the workspace keeps: below it allocation costs little.
WORKSPACE_MIN_BYTES = 1 << 20


class _Workspace:
    """Buffers of operands (decomposed, or a kernel's float32 copies) that finished
    products hand back (:func:`recycle`), so that the next product of the same shape
    writes into memory already mapped: a fresh array of 10 x 1,000,000 int32 is first
    touched page by page, the kernel zeroing each page, which for the 160 MB of a
    10 x 1,000,000 x 10 product costs as much as decomposing it.  Only arrays that
    :func:`workspace_array` handed out come back, and only through :func:`recycle`,
    which callers use on operands no one else holds (:func:`workbench.engine.core.run`,
    :func:`workbench.gemm`) or :func:`recycle_arrays` on a kernel's own scratch; at
    most :data:`WORKSPACE_BYTES` are kept, the least recently returned dropped first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: list[np.ndarray] = []
        self.handed: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()

    def take(self, shape: tuple[int, ...], dtype: np.typing.DTypeLike) -> np.ndarray:
        dt = np.dtype(dtype)
        if math.prod(shape) * dt.itemsize < WORKSPACE_MIN_BYTES:
            return np.empty(shape, dtype=dt)
        with self.lock:
            for n, a in enumerate(self.free):
                if a.shape == shape and a.dtype == dt:
                    del self.free[n]
                    break
            else:
                a = np.empty(shape, dtype=dt)
            self.handed[id(a)] = a
        return a

    def give_back(self, arrays: tuple[np.ndarray | None, ...]) -> None:
        with self.lock:
            for x in arrays:
                while x is not None and x.base is not None:
                    x = x.base if isinstance(x.base, np.ndarray) else None
                if x is None or self.handed.get(id(x)) is not x:
                    continue
                del self.handed[id(x)]
                self.free.append(x)
            total = sum(a.nbytes for a in self.free)
            while self.free and total > WORKSPACE_BYTES:
                total -= self.free.pop(0).nbytes

    def clear(self) -> None:
        with self.lock:
            self.free.clear()


_WORKSPACE = _Workspace()


def workspace_array(shape: tuple[int, ...], dtype: np.typing.DTypeLike) -> np.ndarray:
    """An uninitialised C-ordered array, one a finished product handed back when
    one of this shape and type is free (see :class:`_Workspace`)."""
    return _WORKSPACE.take(shape, dtype)


def recycle(ops: "Operands") -> None:
    """Hand the decomposed arrays of ``ops`` back to the workspace: the caller
    promises that nothing uses them any more (arrays the workspace did not hand
    out, such as the caller's own, are left alone)."""
    recycle_arrays(ops.sa, ops.ea, ops.sb, ops.eb)


def recycle_arrays(*arrays: np.ndarray | None) -> None:
    """:func:`recycle` for a kernel's own scratch arrays from :func:`workspace_array`."""
    _WORKSPACE.give_back(arrays)


def release_workspace() -> None:
    """Free the memory the workspace keeps for reuse."""
    _WORKSPACE.clear()


def decompose(x: np.ndarray, man_bits: int, emin: int, flush: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(significands int32, exponents int32) of a 2-D float64 array (one compiled pass)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    sig = np.empty(x.shape, dtype=np.int32)
    exp = np.empty(x.shape, dtype=np.int32)
    _ops.decompose(x, sig, exp, man_bits, emin, flush)
    return sig, exp


def pad_k(A: np.ndarray, BT: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """A (M, K) and B^T (N, K) with K zero-padded to a multiple of L (one block when K = 0)."""
    K = A.shape[1]
    pad = (-K) % L
    if K == 0:
        pad = L
    if pad:
        A = np.concatenate([A, np.zeros((A.shape[0], pad))], axis=1)
        BT = np.concatenate([BT, np.zeros((BT.shape[0], pad))], axis=1)
    return A, BT


class Operands(NamedTuple):
    """A and B of one product, checked against the model's input format.

    T-FDPA models carry them decomposed and ``A = BT = None``: ``sa, ea`` are the
    (M, Kp) significands and exponents of A, ``sb, eb`` the (Kp, N) ones of B,
    indexed ``[k, j]`` (Kp = K zero-padded to a multiple of L).  B is stored in its
    own C-ordered layout when a lane kernel will read it (:func:`lane_layout`;
    then with zero columns padding N to a multiple of 8, except for the vector chain,
    :func:`~workbench.engine.operations.tfdpa.b_padded`), otherwise as a C-ordered
    B^T of which ``sb, eb`` are the transposed views (so that one output's walk
    down K is contiguous).  ``special``: whether A or B may
    hold Inf/NaN.  Other kinds carry float64 ``A`` (M, K) and ``BT`` (N, K) and
    ``sa = ea = sb = eb = None``; E-FDPA carries both forms (the float64 ones for
    NaN payloads)."""

    M: int
    K: int
    N: int
    A: np.ndarray | None
    BT: np.ndarray | None
    sa: np.ndarray | None
    ea: np.ndarray | None
    sb: np.ndarray | None
    eb: np.ndarray | None
    special: bool = True


def decompose_checked(A: np.ndarray, B: np.ndarray, fmt: _formats.FloatFormat, flush: bool,
                      k_padded: int, transpose_b: bool, pad_b: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """(sa, ea, sb, eb, special): int32 significands and exponents of A (M, K) and of
    B (K, N), K zero-padded to ``k_padded``, after checking that every value is
    representable in ``fmt``.  B is returned as (Kp, Np) arrays indexed ``[k, j]``:
    C-ordered with zero columns padding N to Np, a multiple of
    :data:`~workbench.engine.kernels.LANE_PAD` (the lane kernel's layout; Np = N with
    ``pad_b=False``, the vector chain's, whose masked loads need no padding), or, with
    ``transpose_b``, the transposed views of C-ordered (N, Kp) arrays.  ``special``
    is False only when neither operand holds Inf/NaN.  For signed formats with
    subnormals this is one compiled pass over both operands
    (:func:`ops.decompose_checked`), B read in its (K, N) layout (unpadded, as one
    run of K * N values: rows of a few columns cost the pass twice its time).  The first value
    that is not representable (A before B, C order) raises the ValueError of
    :func:`workbench.numbers.formats.check_representable` (``A[i, j] = v is not
    representable in ...``)."""
    A = real_array(A, "A")
    B = real_array(B, "B")
    (M, K), N = A.shape, B.shape[1]
    if B.shape[0] != K or k_padded < K:
        raise ValueError(f"A {A.shape} and B {B.shape} do not make a product padded to K={k_padded}")
    sa = workspace_array((M, k_padded), np.int32)
    ea = workspace_array((M, k_padded), np.int32)
    b_shape = (N, k_padded) if transpose_b else (k_padded, -(-N // _k.LANE_PAD) * _k.LANE_PAD if pad_b else N)
    sb = workspace_array(b_shape, np.int32)
    eb = workspace_array(b_shape, np.int32)
    if not (fmt.signed and fmt.subnormals):
        Ap = np.zeros(sa.shape)
        Ap[:, :K] = _formats.check_representable(A, fmt, "A")
        Bp = np.zeros(sb.shape)
        B = _formats.check_representable(B, fmt, "B")
        if transpose_b:
            Bp[:, :K] = B.T
        else:
            Bp[:K, :N] = B
        _ops.decompose(Ap, sa, ea, fmt.man_bits, fmt.emin, flush)
        _ops.decompose(Bp, sb, eb, fmt.man_bits, fmt.emin, flush)
        special = bool((ea >= _ops.SPECIAL).any() or (eb >= _ops.SPECIAL).any())
    else:
        vmax_bits = int(np.float64(fmt.max).view(np.int64))
        xb, sbd, ebd = B, sb, eb
        if not transpose_b and sb.shape[1] == N:       # one flat run (C order: the same indices)
            xb = np.ascontiguousarray(B).reshape(1, K * N)
            sbd, ebd = sb[:K].reshape(1, K * N), eb[:K].reshape(1, K * N)
            sb[K:] = 0
            eb[K:] = fmt.emin
        bad_a, bad_b, special = _ops.decompose_checked(A.view(np.int64), sa, ea, xb.view(np.int64), sbd, ebd,
                                                       transpose_b, fmt.man_bits, fmt.emin, flush, vmax_bits,
                                                       fmt.has_nan, fmt.has_inf)
        if bad_a >= 0:
            raise _formats.not_representable_error(A, bad_a, fmt, "A")
        if bad_b >= 0:
            raise _formats.not_representable_error(B, bad_b, fmt, "B")
    if transpose_b:
        sb, eb = sb.T, eb.T
    return sa, ea, sb, eb, bool(special)


def small_check_args(fin: _formats.FloatFormat, fout: _formats.FloatFormat, flush: bool) -> tuple[Any, ...] | None:
    """The scalar arguments of the small-product kernels' input checks
    (:func:`~workbench.engine.ops.decompose_small`, C against the output format): the
    input format's significand bits, emin, ``flush``, the bit pattern of its largest
    value and whether it has NaN and Inf, then the output format's significand bits,
    emin and largest pattern; ``None`` for input formats those checks do not cover
    (unsigned formats or formats without subnormals: they take the general path)."""
    if not (fin.signed and fin.subnormals):
        return None
    return (fin.man_bits, fin.emin, flush, int(np.float64(fin.max).view(np.int64)), fin.has_nan, fin.has_inf,
            fout.man_bits, fout.emin, int(np.float64(fout.max).view(np.int64)))


def small_scale_args(sf: _formats.FloatFormat) -> tuple[Any, ...] | None:
    """The scalar arguments of the small-product kernels' check of block scale factors
    (:func:`~workbench.engine.ops.first_bad_scale_small`): the scale format's
    significand bits, emin, the pattern of its largest value, whether it has NaN and
    Inf, whether it is unsigned and whether it has a zero; ``None`` for a format with
    significand bits but no subnormals, which that check does not cover (E8M0 has no
    significand bits, so no values below 2**emin either way)."""
    if not (sf.subnormals or sf.man_bits == 0):
        return None
    return (sf.man_bits, sf.emin, int(np.float64(sf.max).view(np.int64)), sf.has_nan, sf.has_inf, not sf.signed,
            sf.has_zero)


def scaled_small_check_args(model: ScaledSide) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The format arguments of a scaled unit's small-product kernel: those of its
    operands' checks (:func:`small_check_args`), then of its scales'
    (:func:`small_scale_args`); None where either does not cover the formats."""
    check = small_check_args(model.in_fmt, model.out_fmt, model.flush_subnormals)
    scale_check = None if model.scale_format is None else small_scale_args(_formats.format(model.scale_format))
    return None if check is None or scale_check is None else (check, scale_check)


def raise_unrepresentable(bad: tuple[int, int, int], A: np.ndarray, B: np.ndarray, C: np.ndarray,
                          fin: _formats.FloatFormat, fout: _formats.FloatFormat) -> None:
    """The ValueError of :func:`workbench.numbers.formats.check_representable` for the first of
    A, B (``fin``) and C (``fout``) whose index in ``bad`` (a small-product kernel's
    answer: C-order index or -1) says it holds a value that is not representable."""
    for index, x, fmt, name in zip(bad, (A, B, C), (fin, fin, fout), "ABC"):
        if index >= 0:
            raise _formats.not_representable_error(x, int(index), fmt, name)


def raise_unrepresentable_scales(bad: tuple[int, int], scale_a: np.ndarray, scale_b: np.ndarray,
                                 scale_format: str) -> None:
    """:func:`raise_unrepresentable` for the block scale factors (``bad``: the indices a
    scaled small-product kernel gives for ``scale_a`` and ``scale_b``)."""
    for index, x, name in zip(bad, (scale_a, scale_b), ("scale_a", "scale_b")):
        if index >= 0:
            raise _formats.not_representable_error(x, int(index), _formats.format(scale_format), name)


@functools.lru_cache(maxsize=256)
def _value_check_args(fin: _formats.FloatFormat, fout: _formats.FloatFormat) -> tuple[Any, ...] | None:
    check = small_check_args(fin, fout, False)
    return None if check is None else check[:2] + check[3:]     # a value check reads no flush


def check_small_values(fin: _formats.FloatFormat, fout: _formats.FloatFormat, A: np.ndarray, B: np.ndarray,
                       C: np.ndarray) -> bool:
    """The input checks of a small product for operations that read float64 values (FMA
    chains, FTZ-AddMul): A and B (C-ordered float64) against ``fin`` and C against
    ``fout`` in one compiled call (:func:`~workbench.engine.ops.check_small`); the
    ValueError of :func:`raise_unrepresentable` for the first value that is not
    representable.  False, checking nothing, for input formats the call does not cover
    (:func:`small_check_args`): the caller takes the general path."""
    args = _value_check_args(fin, fout)
    if args is None:
        return False
    bad = _ops.check_small(A.view(np.int64), B.view(np.int64), C.view(np.int64), *args)
    if bad[0] >= 0 or bad[1] >= 0 or bad[2] >= 0:
        raise_unrepresentable(bad, A, B, C, fin, fout)
    return True


def float_operands(model: InputSide, A: np.ndarray, B: np.ndarray) -> Operands:
    """A (M, K) and B (K, N) checked against ``model.in_fmt``, as float64 ``A`` and a
    C-ordered ``B^T`` (the form of the operations that do not decompose)."""
    M, K = A.shape
    N = B.shape[1]
    fin = model.in_fmt
    A64 = _formats.check_representable(A, fin, "A")
    BT = np.ascontiguousarray(_formats.check_representable(B, fin, "B").T)
    return Operands(M, K, N, A64, BT, None, None, None, None)


def padded_decomposed(model: InputSide, A: np.ndarray, BT: np.ndarray, L: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, B^T zero-padded to whole blocks of L, then the significands and exponents of
    each in ``model``'s input format, subnormals flushed when the model says so)."""
    A2, BT2 = pad_k(np.asarray(A, dtype=np.float64), np.asarray(BT, dtype=np.float64), L)
    fin = model.in_fmt
    sa, ea = decompose(A2, fin.man_bits, fin.emin, model.flush_subnormals)
    sb, eb = decompose(BT2, fin.man_bits, fin.emin, model.flush_subnormals)
    return A2, BT2, sa, ea, sb, eb


def plus_zeros(x: np.ndarray) -> np.ndarray:
    """``x`` with every zero made +0, in place: the outputs of operations whose zero
    results are always +0 (:attr:`workbench.engine.model.Operation.positive_zero`)."""
    np.add(x, 0.0, out=x)          # IEEE 754: -0 + +0 = +0 (RNE); every other value, NaN included, unchanged
    return x


class RowBattery:
    """A battery of independent dot products ``d[r] = unit(a[r, :], b[r, :], c[r])`` that
    many candidate models run in turn (the probes' consistency search,
    :mod:`workbench.probes.search`): the zero padding and decomposition of each block
    size and input handling are computed once (:meth:`decomposed`), and each operation
    keeps what else it reuses across candidates in :meth:`cache` (its key).  Read by
    :meth:`workbench.engine.model.Operation.screen_rows`."""

    def __init__(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        self.a = np.ascontiguousarray(a, dtype=np.float64)
        self.b = np.ascontiguousarray(b, dtype=np.float64)
        self.c = np.asarray(c, dtype=np.float64).reshape(-1)
        if self.a.shape != self.b.shape or self.a.ndim != 2 or self.c.shape[0] != self.a.shape[0]:
            raise ValueError(f"a battery needs a, b of equal shape (n, K) and c of length n; got {self.a.shape}, "
                             f"{self.b.shape}, {self.c.shape}")
        self._decomposed: dict[tuple[object, ...], tuple[np.ndarray, ...]] = {}
        self._caches: dict[object, dict[object, object]] = {}

    def decomposed(self, model: InputSide, L: int) -> tuple[np.ndarray, ...]:
        """(A, B^T zero-padded to whole blocks of ``L``, then the significands and
        exponents of A (n, Kp) and of B^T transposed (Kp, n): the row kernels' layout),
        computed once per block size and input handling."""
        key = (L, model.in_fmt, model.flush_subnormals)
        if key not in self._decomposed:
            A2, BT2, sa, ea, sb, eb = padded_decomposed(model, self.a, self.b, L)
            self._decomposed[key] = (A2, BT2, sa, ea, sb.T, eb.T)
        return self._decomposed[key]

    def cache(self, owner: object) -> dict[object, object]:
        """A dictionary for ``owner`` (an operation's kind) to keep what it reuses across
        the candidates it runs on this battery."""
        return self._caches.setdefault(owner, {})


def checked_inputs(fin: _formats.FloatFormat, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """A and B as C-ordered float64 after :func:`~workbench.engine.ops.first_unrepresentable` checked each
    against ``fin`` (a signed format with subnormals), and whether either holds Inf or
    NaN; the first value that is not representable (A before B, C order) raises
    :func:`~workbench.numbers.formats.not_representable_error`'s ValueError."""
    checked = []
    special = False
    vmax_bits = int(np.float64(fin.max).view(np.int64))
    for name, x in (("A", A), ("B", B)):
        x = np.ascontiguousarray(real_array(x, name), dtype=np.float64)
        bad, spec = _ops.first_unrepresentable(x.view(np.int64), fin.man_bits, fin.emin, vmax_bits, fin.has_nan,
                                          fin.has_inf)
        if bad >= 0:
            raise _formats.not_representable_error(x, bad, fin, name)
        checked.append(x)
        special |= bool(spec)
    return checked[0], checked[1], special


__all__ = ["Operands", "RowBattery", "plus_zeros", "workspace_array", "recycle", "recycle_arrays", "release_workspace", "WORKSPACE_BYTES",
           "decompose", "decompose_checked", "pad_k", "float_operands", "padded_decomposed", "threads_for",
           "threads_used", "PARALLEL_MIN_WORK", "InputSide", "checked_inputs", "small_check_args", "small_scale_args",
           "scaled_small_check_args", "ScaledSide", "raise_unrepresentable_scales",
           "raise_unrepresentable",
           "check_small_values"]
