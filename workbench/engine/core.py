"""Engine entry point: run a :class:`~workbench.engine.model.Model` on whole matrices.

:func:`run` takes float64 arrays whose values are already known to be representable
(``workbench.gemm`` checks that), pads K with zeros to a multiple of the block size,
decomposes A and B^T in one compiled pass each and calls the compiled kernel.
"""

from __future__ import annotations

import numba
import numpy as np

from . import kernels as _k
from . import ops as _ops
from . import others as _others
from .model import Model

ACCUMULATIONS = ("chain", "outside", "promote")


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


def run(model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, *,
        accumulation: str = "chain", promote_every: int | None = None,
        scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None) -> np.ndarray:
    """D = the unit's A @ B + C as float64 (values exactly in the output format).

    ``accumulation``: ``"chain"`` (each block's result is the next block's c),
    ``"outside"`` (each block from c = 0, added to an fp32 accumulator holding C with
    round-to-nearest on ordinary cores), ``"promote"`` (chains of ``promote_every``
    elements from c = 0, each added to the fp32 accumulator with round-to-nearest).
    """
    if accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation={accumulation!r}: expected one of {ACCUMULATIONS}")
    M, K = A.shape
    N = B.shape[1]
    acc = np.array(C, dtype=np.float64, copy=True, order="C")
    BT = np.ascontiguousarray(B.T)
    kind = model.kind
    if kind == "fma":
        if accumulation != "chain":
            raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
        _k.fma_gemm(np.ascontiguousarray(A), BT, acc, model.out_fmt.name == "fp32")
        return acc
    if kind in ("st-fdpa", "gst-fdpa"):
        return _others.run_scaled(model, A, BT, acc, scale_a, scale_b, accumulation)
    if scale_a is not None or scale_b is not None:
        raise ValueError(f"scale_a/scale_b are only used by scaled models (st-fdpa, gst-fdpa), not {kind!r}")
    if kind != "t-fdpa":
        if accumulation != "chain":
            raise ValueError(f"accumulation={accumulation!r} is implemented for T-FDPA models only")
        return _others.run_other(model, A, BT, acc)
    L = model.L
    A, BT = _pad_k(A, BT, L)
    fin = model.in_fmt
    sa, ea = decompose(A, fin.man_bits, fin.emin, model.flush_subnormals)
    sb, eb = decompose(BT, fin.man_bits, fin.emin, model.flush_subnormals)
    params = _tfdpa_params(model)
    mode = {"chain": 0, "outside": 1, "promote": 2}[accumulation]
    params[_k.P_ACCMODE] = mode
    if accumulation == "promote":
        if promote_every is None or promote_every <= 0 or promote_every % L:
            raise ValueError(f"promote_every={promote_every!r}: expected a positive multiple of the block size L={L}")
        params[_k.P_PROMOTE] = promote_every // L
    elif promote_every is not None:
        raise ValueError("promote_every is only used with accumulation='promote'")
    prm = _k.pack_tfdpa(params, M, N, numba.get_num_threads())
    _k.tfdpa_gemm(sa, ea, sb, eb, acc, prm)
    return acc


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
        for r in range(a.shape[0]):
            out[r] = run(model, a[r:r + 1], b[r:r + 1].T, acc[r:r + 1].reshape(1, 1))[0, 0]
        return out
    a, b = _pad_k(a, b, model.L)
    fin = model.in_fmt
    sa, ea = decompose(a, fin.man_bits, fin.emin, model.flush_subnormals)
    sb, eb = decompose(b, fin.man_bits, fin.emin, model.flush_subnormals)
    prm = _k.pack_tfdpa(_tfdpa_params(model), a.shape[0], 1, 1)
    _k.tfdpa_rows(sa, ea, sb, eb, acc, prm)
    return acc
