"""Engine entry point: run a :class:`~workbench.engine.model.Model` on whole matrices.

:func:`prepare` checks A and B against the model's input format; for T-FDPA models
it also decomposes them, in one compiled (parallel) pass over both operands that
reads A in its (M, K) and B in its (K, N) layout, writes B^T and zero-pads K to a
multiple of the block size.  :func:`run_prepared` calls the compiled kernel;
:func:`run` does both.  Small work runs on one thread (:func:`threads_for`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numba
import numpy as np

from .. import formats as _formats
from ..gate import real_array
from . import kernels as _k
from . import ops as _ops
from . import others as _others
from .model import Model

ACCUMULATIONS = ("chain", "outside", "promote")
#: Work (multiply-adds, or values checked) below which the compiled passes run on the
#: calling thread alone: starting a parallel region wakes the other threads.
PARALLEL_MIN_WORK = 1 << 18
#: The same when the machine is busy (one-minute load average at least the number of
#: CPUs plus one, i.e. a runnable task per CPU besides the caller): a woken thread
#: then often waits for a time slice, measured at 4-8 ms per region at load 3 on the
#: 2-core development machine.  With the lane kernel a serial 16x4096x16 product takes
#: 1.2 ms and 64x1024x64 3.5 ms (2^22 multiply-adds), both below that wait; from 2^23
#: (about 7 ms serial) a second thread can pay for its wake-up.
PARALLEL_MIN_WORK_BUSY = 1 << 23
_ACC_MODES = {"chain": 0, "outside": 1, "promote": 2}


def _tfdpa_params(model: Model) -> dict[int, int]:
    fin = model.in_fmt
    res = model.res_fmt
    out = model.out_fmt
    return {
        _k.P_L: model.L,
        _k.P_F: model.F,
        _k.P_FP: 2 * fin.man_bits,
        _k.P_EZ: 0 if model.zero_exponent is None else model.zero_exponent,
        _k.P_USE_EZ: model.zero_exponent is not None,
        _k.P_MODE: _ops.MODE_CODES[model.rounding],
        _k.P_PRES: res.p,
        _k.P_EMINRES: res.emin,
        _k.P_EMAXRES: res.emax,
        _k.P_MC: out.man_bits,
        _k.P_EMINC: out.emin,
        _k.P_STICKY: model.sticky,
        _k.P_CLATE: model.c_position == "late",
        _k.P_LATEMODE: _ops.MODE_CODES[model.late_rounding],
        _k.P_NG: model.interleave,
        _k.P_GF: model.F if model.group_F is None else model.group_F,
        _k.P_FLUSHOUT: model.flush_output_subnormals,
    }


def decompose(x: np.ndarray, man_bits: int, emin: int, flush: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(significands int32, exponents int32) of a 2-D float64 array (one compiled pass)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    sig = np.empty(x.shape, dtype=np.int32)
    exp = np.empty(x.shape, dtype=np.int32)
    _ops.decompose(x, sig, exp, man_bits, emin, flush)
    return sig, exp


def _pad_k(A: np.ndarray, BT: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    K = A.shape[1]
    pad = (-K) % L
    if K == 0:
        pad = L
    if pad:
        A = np.concatenate([A, np.zeros((A.shape[0], pad))], axis=1)
        BT = np.concatenate([BT, np.zeros((BT.shape[0], pad))], axis=1)
    return A, BT


def _machine_busy() -> bool:
    """Whether the one-minute load average has reached the number of CPUs plus one."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1) + 1
    except OSError:  # no load average on this platform
        return False


@contextmanager
def threads_for(work: int) -> Iterator[None]:
    """Run the compiled passes inside on one thread when ``work`` is below
    :data:`PARALLEL_MIN_WORK` (:data:`PARALLEL_MIN_WORK_BUSY` on a busy machine), on
    numba's current number of threads otherwise.  Results do not depend on it."""
    if work >= PARALLEL_MIN_WORK_BUSY or (work >= PARALLEL_MIN_WORK and not _machine_busy()):
        yield
        return
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(n)


class Operands(NamedTuple):
    """A and B of one product, checked against the model's input format.

    T-FDPA models carry them decomposed and ``A = BT = None``: ``sa, ea`` are the
    (M, Kp) significands and exponents of A, ``sb, eb`` the (Kp, N) ones of B,
    indexed ``[k, j]`` (Kp = K zero-padded to a multiple of L).  B is stored in its
    own C-ordered layout when the lane kernel will read it (:func:`lane_layout`;
    then with zero columns padding N to a multiple of 8), otherwise as a C-ordered
    B^T of which ``sb, eb`` are the transposed views (so that one output's walk
    down K is contiguous).  ``special``: whether A or B may
    hold Inf/NaN.  Other kinds carry float64 ``A`` (M, K) and ``BT`` (N, K) and
    ``sa = ea = sb = eb = None``."""

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


def lane_layout(model: Model, N: int) -> bool:
    """Whether products with this model and N columns run on the lane kernel
    (:func:`workbench.engine.kernels.tfdpa_gemm_lanes`): T-FDPA and ST-FDPA models
    it computes (:func:`~workbench.engine.kernels.lane_eligible`) with at least
    :data:`~workbench.engine.kernels.LANES_MIN_N` columns."""
    return (model.kind in ("t-fdpa", "st-fdpa") and N >= _k.LANES_MIN_N
            and bool(_k.lane_eligible(_k.pack_tfdpa(_tfdpa_params(model), 1, 1, 1))))


def decompose_checked(A: np.ndarray, B: np.ndarray, fmt: _formats.FloatFormat, flush: bool,
                      k_padded: int, transpose_b: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """(sa, ea, sb, eb, special): int32 significands and exponents of A (M, K) and of
    B (K, N), K zero-padded to ``k_padded``, after checking that every value is
    representable in ``fmt``.  B is returned as (Kp, Np) arrays indexed ``[k, j]``:
    C-ordered with zero columns padding N to Np, a multiple of
    :data:`~workbench.engine.kernels.LANE_PAD` (the lane kernel's layout), or, with
    ``transpose_b``, the transposed views of C-ordered (N, Kp) arrays.  ``special``
    is False only when neither operand holds Inf/NaN.  For signed formats with
    subnormals this is one compiled pass over both operands
    (:func:`ops.decompose_checked`), B read in its (K, N) layout.  The first value
    that is not representable (A before B, C order) raises the ValueError of
    :func:`workbench.formats.check_representable` (``A[i, j] = v is not
    representable in ...``)."""
    A = real_array(A, "A")
    B = real_array(B, "B")
    (M, K), N = A.shape, B.shape[1]
    if B.shape[0] != K or k_padded < K:
        raise ValueError(f"A {A.shape} and B {B.shape} do not make a product padded to K={k_padded}")
    sa = np.empty((M, k_padded), dtype=np.int32)
    ea = np.empty((M, k_padded), dtype=np.int32)
    b_shape = (N, k_padded) if transpose_b else (k_padded, -(-N // _k.LANE_PAD) * _k.LANE_PAD)
    sb = np.empty(b_shape, dtype=np.int32)
    eb = np.empty(b_shape, dtype=np.int32)
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
        bad_a, bad_b, special = _ops.decompose_checked(A.view(np.int64), sa, ea, B.view(np.int64), sb, eb,
                                                       transpose_b, fmt.man_bits, fmt.emin, flush, vmax_bits,
                                                       fmt.has_nan, fmt.has_inf)
        if bad_a >= 0:
            raise _formats.not_representable_error(A, bad_a, fmt, "A")
        if bad_b >= 0:
            raise _formats.not_representable_error(B, bad_b, fmt, "B")
    if transpose_b:
        sb, eb = sb.T, eb.T
    return sa, ea, sb, eb, bool(special)


def _as_matrix(x: np.typing.ArrayLike) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {arr.shape}")
    return arr


def prepare(model: Model, A: np.typing.ArrayLike, B: np.typing.ArrayLike) -> Operands:
    """Check A (M, K) and B (K, N) against ``model.in_fmt`` (a ValueError names the first
    value that is not representable, A before B) and put them in the form the model's
    kernel reads (see :class:`Operands`)."""
    A = _as_matrix(A)
    B = _as_matrix(B)
    M, K = A.shape
    N = B.shape[1]
    if B.shape[0] != K:
        raise ValueError(f"A is {M}x{K} and B is {B.shape[0]}x{N}: inner dimensions differ")
    fin = model.in_fmt
    with threads_for(A.size + B.size):
        if model.kind != "t-fdpa":
            A64 = _formats.check_representable(A, fin, "A")
            BT = np.ascontiguousarray(_formats.check_representable(B, fin, "B").T)
            return Operands(M, K, N, A64, BT, None, None, None, None)
        L = model.L
        Kp = K + (-K) % L if K else L
        sa, ea, sb, eb, special = decompose_checked(A, B, fin, model.flush_subnormals, Kp,
                                                    not lane_layout(model, N))
    return Operands(M, K, N, None, None, sa, ea, sb, eb, special)


def run(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, *,
        accumulation: str = "chain", promote_every: int | None = None,
        scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None) -> np.ndarray:
    """D = the unit's A @ B + C as float64 (values exactly in the output format):
    :func:`prepare` then :func:`run_prepared`."""
    return run_prepared(model, prepare(model, A, B), C, accumulation=accumulation,
                        promote_every=promote_every, scale_a=scale_a, scale_b=scale_b)


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
        return _dispatch(model, ops, acc, accumulation, promote_every, scale_a, scale_b)


def _dispatch(model: Model, ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
              scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """The kernel of the model's kind on ``acc`` (C on entry, D on exit)."""
    M, N = ops.M, ops.N
    kind = model.kind
    if kind == "fma":
        if accumulation != "chain":
            raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
        out = model.out_fmt
        if model.c_position == "early":
            _k.fma_gemm(np.ascontiguousarray(ops.A), ops.BT, acc, out.name == "fp32")
            return acc
        # c late: the chain starts from 0 and c is added once at the end, rounded on its own
        d = np.zeros_like(acc)
        _k.fma_gemm(np.ascontiguousarray(ops.A), ops.BT, d, out.name == "fp32")
        _k.add_late(d, acc, out.p, out.emin, out.emax, _ops.MODE_CODES[model.late_rounding],
                    model.flush_output_subnormals)
        return d
    if kind in ("st-fdpa", "gst-fdpa"):
        return _others.run_scaled(model, ops.A, ops.BT, acc, scale_a, scale_b, accumulation)
    if scale_a is not None or scale_b is not None:
        raise ValueError(f"scale_a/scale_b are only used by scaled models (st-fdpa, gst-fdpa), not {kind!r}")
    if kind != "t-fdpa":
        if accumulation != "chain":
            raise ValueError(f"accumulation={accumulation!r} is implemented for T-FDPA models only")
        return _others.run_other(model, ops.A, ops.BT, acc)
    L = model.L
    params = _tfdpa_params(model)
    params[_k.P_ACCMODE] = _ACC_MODES[accumulation]
    if accumulation == "promote":
        if promote_every is None or promote_every <= 0 or promote_every % L:
            raise ValueError(f"promote_every={promote_every!r}: expected a positive multiple of the block size L={L}")
        params[_k.P_PROMOTE] = promote_every // L
    elif promote_every is not None:
        raise ValueError("promote_every is only used with accumulation='promote'")
    prm = _k.pack_tfdpa(params, M, N, numba.get_num_threads())
    run_tfdpa(model, ops.sa, ops.ea, ops.sb, ops.eb, acc, prm, ops.special)
    return acc


def run_tfdpa(model: Model, sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, acc: np.ndarray,
              prm: np.ndarray, special: bool = True) -> None:
    """The T-FDPA kernel for decomposed operands (``sa, ea`` (M, Kp); ``sb, eb``
    (Kp, N) indexed ``[k, j]``, any layout) on ``acc`` (C on entry, D on exit): the
    lane kernel when :func:`lane_layout` says so (B copied into its layout unless it
    is there already), the scalar kernel otherwise.  ``special=False`` promises that
    no operand is Inf/NaN."""
    M, N = acc.shape
    if not lane_layout(model, N):
        _k.tfdpa_gemm(sa, ea, sb, eb, acc, prm)
        return
    sb, eb, row_special, col_special = _k.lane_operands(sa, ea, sb, eb, N, model.in_fmt.emin, special)
    _k.tfdpa_gemm_lanes(sa, ea, sb, eb, row_special, col_special, acc, prm)


def dots(model: Model, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Batched dot products ``d[r] = unit(a[r, :], b[r, :], c[r])`` (float64, values
    exactly in the output format): one independent accumulation per row, K consumed
    in blocks of L exactly as :func:`run` does for one output.  Inputs must already be
    representable (no checks here; ``workbench.gemm`` is the checked entry point)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    acc = np.array(c, dtype=np.float64, copy=True).reshape(-1)
    if a.shape != b.shape or a.ndim != 2 or acc.shape[0] != a.shape[0]:
        raise ValueError(f"dots needs a, b of equal shape (n, K) and c of length n; got {a.shape}, {b.shape}, {acc.shape}")
    if model.kind != "t-fdpa":
        out = np.empty_like(acc)
        K = a.shape[1]
        for r in range(a.shape[0]):
            ops = Operands(1, K, 1, a[r:r + 1], b[r:r + 1], None, None, None, None)
            out[r] = run_prepared(model, ops, acc[r:r + 1].reshape(1, 1))[0, 0]
        return out
    a, b = _pad_k(a, b, model.L)
    fin = model.in_fmt
    sa, ea = decompose(a, fin.man_bits, fin.emin, model.flush_subnormals)
    sb, eb = decompose(b, fin.man_bits, fin.emin, model.flush_subnormals)
    prm = _k.pack_tfdpa(_tfdpa_params(model), a.shape[0], 1, 1)
    _k.tfdpa_rows(sa, ea, sb.T, eb.T, acc, prm)
    return acc
