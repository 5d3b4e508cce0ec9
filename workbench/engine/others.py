"""Kernels of the elementary operations other than T-FDPA and the FMA chain.

* FTZ-AddMul (Xie et al. 2025 Algorithms 1-2, AMD CDNA2): products and sums in fp32
  with round-to-nearest-even, subnormal inputs flushed to +0, subnormal results
  flushed to zero with their sign; P consecutive products summed pairwise, then added
  to the running c.  NaN payloads follow MMA-Sim 2.1.1 (:mod:`workbench.engine.nans`).
* ST-FDPA (Xie Algorithm 8, MX formats): T-FDPA whose product exponents also carry
  the exponents of the two E8M0 block scales; implemented by adding the scales'
  exponents to the decomposed operands and running the T-FDPA kernel.
* E-FDPA, TR-FDPA, GTR-FDPA and GST-FDPA (Xie Algorithms 6, 10, 11 and 9) live in
  :mod:`workbench.engine.fdpa_amd` and :mod:`workbench.engine.gst`; this module
  dispatches to them.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from . import kernels as _k
from .nans import nan_add, nan_mul

_MIN_NORMAL32 = 2.0 ** -126


@numba.njit(cache=True, inline="always")
def _ftz(x, keep_sign):
    if abs(x) < _MIN_NORMAL32:
        return x * 0.0 if keep_sign else 0.0
    return x


@numba.njit(cache=True, inline="always")
def ftz_mul(x, y):
    """FTZ-Mul: RNE-FP32(x * y), subnormal result flushed to zero keeping the sign;
    a NaN product is :func:`~workbench.engine.nans.nan_mul`'s (y's NaN wins)."""
    p = x * y
    if p != p:
        p = nan_mul(x, y, True)
    return _ftz(float(np.float32(p)), True)


@numba.njit(cache=True, inline="always")
def ftz_add(x, y):
    """FTZ-Add: RNE-FP32(x + y) of two fp32 values (float64 sum rounded once more is
    correctly rounded: 53 >= 2*24 + 2), subnormal result flushed keeping the sign;
    a NaN sum is :func:`~workbench.engine.nans.nan_add`'s (y's NaN wins)."""
    s = x + y
    if s != s:
        s = nan_add(x, y, True)
    return _ftz(float(np.float32(s)), True)


@numba.njit(cache=True, parallel=True)
def ftz_addmul_gemm(A, BT, acc, P, in_min_normal):
    """FTZ-AddMul chains (Xie Algorithms 1-2) for every output."""
    M, K = A.shape
    N = BT.shape[0]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        d = acc[i, j]
        if d != 0.0 and abs(d) < _MIN_NORMAL32:  # subnormal c -> +0 (a signed zero stays)
            d = 0.0
        for k0 in range(0, K, P):
            p0 = 0.0
            p1 = 0.0
            p2 = 0.0
            p3 = 0.0
            for l in range(P):
                a = A[i, k0 + l]
                b = BT[j, k0 + l]
                if a != 0.0 and abs(a) < in_min_normal:  # subnormal inputs -> +0 (Alg. 2 lines 1-2)
                    a = 0.0
                if b != 0.0 and abs(b) < in_min_normal:
                    b = 0.0
                p = ftz_mul(a, b)
                if l == 0:
                    p0 = p
                elif l == 1:
                    p1 = p
                elif l == 2:
                    p2 = p
                else:
                    p3 = p
            s = ftz_add(p0, p1)
            if P == 4:
                s = ftz_add(s, ftz_add(p2, p3))
            d = ftz_add(d, s)
        acc[i, j] = d


def run_other(model, A, BT, acc):
    """Dispatch the non-T-FDPA, unscaled kinds (Xie et al. 2025 Section 4.1)."""
    from .core import _pad_k
    from .fdpa_amd import run_amd

    if model.kind == "ftz-addmul":
        A2, BT2 = _pad_k(np.asarray(A, dtype=np.float64), np.asarray(BT, dtype=np.float64), model.P)
        fin = model.in_fmt
        ftz_addmul_gemm(np.ascontiguousarray(A2), np.ascontiguousarray(BT2), acc, model.P,
                        fin.min_normal if model.flush_subnormals else 0.0)
        return acc
    if model.kind in ("e-fdpa", "tr-fdpa", "gtr-fdpa"):
        return run_amd(model, A, BT, acc)
    raise ValueError(f"kind={model.kind!r} is not an unscaled elementary operation of the engine")


def run_scaled(model, A, BT, acc, scale_a, scale_b, accumulation):
    """ST-FDPA: scale exponents added to the decomposed operands, then T-FDPA;
    GST-FDPA: :func:`workbench.engine.gst.run_gst`."""
    from .core import _pad_k, _tfdpa_params, decompose, run_tfdpa

    if scale_a is None or scale_b is None:
        raise ValueError("scaled models need scale_a and scale_b")
    if model.kind == "gst-fdpa":
        from .gst import run_gst

        return run_gst(model, A, BT, acc, scale_a, scale_b, accumulation)
    if model.kind != "st-fdpa":
        raise ValueError(f"kind={model.kind!r} is not a scaled elementary operation (st-fdpa, gst-fdpa)")
    M, K = A.shape
    N = BT.shape[0]
    kb = model.k_block
    cols = np.arange(K) // kb
    ex_a = np.log2(scale_a)[:, cols]            # powers of two (E8M0): exact
    ex_b = np.log2(scale_b.T)[:, cols]
    nan_a = np.isnan(ex_a)
    nan_b = np.isnan(ex_b)
    A, BT = _pad_k(A, BT, model.L)
    fin = model.in_fmt
    sa, ea = decompose(A, fin.man_bits, fin.emin, model.flush_subnormals)
    sb, eb = decompose(BT, fin.man_bits, fin.emin, model.flush_subnormals)
    ea[:, :K] += np.where(nan_a, 0, ex_a).astype(np.int32) * (ea[:, :K] < (1 << 24))
    eb[:, :K] += np.where(nan_b, 0, ex_b).astype(np.int32) * (eb[:, :K] < (1 << 24))
    # a NaN scale makes every product of its block NaN (Xie Section 4.2)
    for s, e, nmask in ((sa, ea, nan_a), (sb, eb, nan_b)):
        if nmask.any():
            sub_s = s[:, :K]
            sub_e = e[:, :K]
            sub_s[nmask] = 2
            sub_e[nmask] = 1 << 24
    params = _tfdpa_params(model)
    params[_k.P_ACCMODE] = {"chain": 0, "outside": 1}.get(accumulation, -1)
    if params[_k.P_ACCMODE] < 0:
        raise ValueError(f"accumulation={accumulation!r} is not available for scaled models")
    prm = _k.pack_tfdpa(params, M, N, numba.get_num_threads())
    run_tfdpa(model, sa, ea, sb.T, eb.T, acc, prm)
    return acc


__all__ = ["run_other", "run_scaled", "ftz_mul", "ftz_add", "math"]
