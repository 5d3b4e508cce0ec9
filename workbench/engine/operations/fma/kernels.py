"""The compiled kernels of the FMA chain (Xie et al. 2025 Algorithm 4; dispatched by
:mod:`workbench.engine.operations.fma`): one IEEE fused multiply-add per product, k in
order.  :func:`fma_gemm` walks one output at a time (every format);
:func:`fma_gemm_lanes` runs binary64/binary32 chains side by side like a BLAS
micro-kernel (benchmarks/README.md, "The performance diary"); :func:`fma_rows` is the row
kernel of ``dots``.  A late c is added by the shared IEEE adder
(:func:`workbench.engine.kernels.add_late`)."""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ....numbers.formats import FloatFormat, RNE
from ...kernels import _loop, _splat, exact_add
from ...nans import fma_nan


@intrinsic
def _fma(typingctx, a, b, c):
    """LLVM ``fma`` on three floats of one type: the IEEE fused multiply-add of
    binary32 or binary64, rounded once to nearest even (one ``vfmadd`` per lane when
    LLVM vectorises it; never reassociated)."""
    if not (isinstance(a, types.Float) and a == b and b == c):
        return None
    sig = a(a, b, c)

    def codegen(context, builder, signature, args):
        t = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)

    return sig, codegen


#: How an FMA chain rounds each step (:func:`fma_step`): the hardware FMA of binary64
#: or binary32, or - for the narrower formats, whose products are exact in binary64 -
#: the exact product plus the accumulator correctly rounded to the format (RNE).
FMA_FP64, FMA_FP32, FMA_ROUNDED = 0, 1, 2


def fma_code(fmt: FloatFormat) -> tuple[int, int, int, int]:
    """``(how, p, emin, emax)`` of an FMA chain computing in the format ``fmt``
    (:data:`FMA_FP64`, :data:`FMA_FP32` or :data:`FMA_ROUNDED`)."""
    how = FMA_FP64 if fmt.name == "fp64" else FMA_FP32 if fmt.name == "fp32" else FMA_ROUNDED
    if how == FMA_ROUNDED and 2 * fmt.p > 53:
        raise ValueError(f"an FMA chain in {fmt.name} (p = {fmt.p}) needs products exact in binary64 (2p <= 53)")
    return how, fmt.p, fmt.emin, fmt.emax


@numba.njit(cache=True, inline="always")
def fma_step(a, b, d, how, p, emin, emax):
    """One step of an FMA chain: ``RNE(a * b + d)`` in the chain's format (float64
    operands exactly in it, float64 result).  A NaN result carries the NaN
    :func:`~workbench.engine.nans.fma_nan` picks (MMA-Sim's ``std::fma``)."""
    x = np.float64(a)
    y = np.float64(b)
    z = np.float64(d)
    if how == FMA_FP64:
        r = _fma(x, y, z)
    elif how == FMA_FP32:
        r = np.float64(_fma(np.float32(x), np.float32(y), np.float32(z)))
    else:
        r = exact_add(x * y, z, p, emin, emax, RNE, False)   # x * y exact: 2p <= 53 bits
    if r != r:
        r = fma_nan(x, y, z)
        if how == FMA_FP32:
            r = np.float64(np.float32(r))
    return r


@numba.njit(cache=True, parallel=True)
def copy_exact(x, out):
    """``out <- x`` (float64 (R, C) into float64 or float32 ``out`` of the same shape)
    in one compiled pass; returns the C-order index of the first value of ``x`` the
    cast changes (NaN is kept), or -1.  Each row is cast and checked branch-free (one
    flag per row, vector instructions); only a row that fails is searched."""
    R, C = x.shape
    first = np.full(R, -1, dtype=np.int64)
    for i in numba.prange(R):
        changed = False
        for k in range(C):
            v = x[i, k]
            out[i, k] = v
            w = float(out[i, k])
            changed |= (w != v) & (v == v)
        if changed:
            for k in range(C):
                v = x[i, k]
                if float(out[i, k]) != v and v == v:
                    first[i] = np.int64(i) * C + k
                    break
    for i in range(R):
        if first[i] >= 0:
            return first[i]
    return np.int64(-1)


@numba.njit(cache=True)
def fma_chain(A, B, i, j, d, how, p, emin, emax):
    """The FMA chain of output (i, j) from ``d``: row i of ``A`` (M, K), column j of
    ``B`` (K, N) (any layout), k in order (Xie et al. Algorithm 4)."""
    for k in range(A.shape[1]):
        d = fma_step(A[i, k], B[k, j], d, how, p, emin, emax)
    return d


@numba.njit(cache=True, parallel=True)
def fma_gemm(A, B, acc, how, p, emin, emax):
    """Chain of FMAs over k for every output (Xie et al. Algorithm 4), one output
    at a time: ``A`` (M, K), ``B`` (K, N) in any layout (the transpose of a C-ordered
    B^T walks each chain contiguously), ``acc`` (M, N) float64, C on entry.  NaN
    passes through the rest of a chain unchanged."""
    M = A.shape[0]
    N = acc.shape[1]
    for t in numba.prange(M * N):
        i = t // N
        j = t - i * N
        acc[i, j] = fma_chain(A, B, i, j, acc[i, j], how, p, emin, emax)


@numba.njit(cache=True)
def fma_small(A, B, acc, late, late_mode, flush_out, how, p, emin, emax):
    """A small product on the calling thread (:meth:`~workbench.engine.model.Operation.run_small`,
    inputs already checked): every output's chain (:func:`fma_chain`, Xie Algorithm 4)
    from C in ``acc`` (c early), or from 0 with C added once at the end, rounded in
    ``late_mode`` (c late: :func:`~workbench.engine.kernels.add_late`'s step)."""
    M = A.shape[0]
    N = acc.shape[1]
    for i in range(M):
        for j in range(N):
            if late:
                d = fma_chain(A, B, i, j, 0.0, how, p, emin, emax)
                acc[i, j] = exact_add(d, acc[i, j], p, emin, emax, late_mode, flush_out)
            else:
                acc[i, j] = fma_chain(A, B, i, j, acc[i, j], how, p, emin, emax)


#: Rows of A in one register block of :func:`fma_gemm_lanes`, and elements of K one
#: pass over a panel of B covers (kept in L1 cache while every row block uses it).
FMA_MR = 4
FMA_KC = 64
#: Bytes ahead of the row of B in use that :func:`_fma_block` asks the cache for (one
#: prefetch per vector and step; the hardware's own prefetcher fell behind on long K:
#: 10 x 1,000,000 x 10 ran at 15 GB/s without, 26-40 GB/s with).
FMA_PREFETCH = 4096


def _fma_block(nv: int):  # type: ignore[no-untyped-def]
    """The register block of :func:`fma_gemm_lanes` with ``nv`` vectors of B (one vector:
    64 bytes, 8 binary64 or 16 binary32 lanes), as an LLVM-level intrinsic:
    ``fma_block(A, B, T, i0, t0, j0, k0, k1)`` runs, for k = k0 .. k1-1 in order,
    ``T[t0 + r, u] <- fma(A[i0 + r, k], B[k, j0 + u], T[t0 + r, u])`` for the
    :data:`FMA_MR` rows r and the ``nv`` vectors of lanes u, all FMA_MR x nv
    accumulators held in vector registers through the whole pass (one ``vfmadd`` per
    vector and step: ``llvm.fma`` on vectors, one rounding per step, never reassociated).
    ``A`` (M, K), ``B`` (K, N) and ``T`` are C-ordered of one float dtype; rows of A
    beyond M read row M-1 and lanes of B beyond N read 0 (masked loads), so their
    lanes of T are computed but mean nothing."""
    MR = FMA_MR

    @intrinsic
    def fma_block(typingctx, A, B, T, i0, t0, j0, k0, k1):  # type: ignore[no-untyped-def]
        if not all(isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C" and x.dtype == A.dtype
                   for x in (A, B, T)) or not isinstance(A.dtype, types.Float):
            return None
        sig = types.void(A, B, T, types.int64, types.int64, types.int64, types.int64, types.int64)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            A_, B_, T_ = (context.make_array(t)(context, builder, v) for t, v in zip(signature.args[:3], args[:3]))
            i0v, t0v, j0v, k0v, k1v = args[3:]
            i64 = ir.IntType(64)
            M, K = (builder.extract_value(A_.shape, d) for d in (0, 1))
            N = builder.extract_value(B_.shape, 1)
            NT = builder.extract_value(T_.shape, 1)
            ft = context.get_value_type(signature.args[0].dtype)
            W = 512 // signature.args[0].dtype.bitwidth
            vt = ir.VectorType(ft, W)
            mt = ir.VectorType(ir.IntType(1), W)
            bits = signature.args[0].dtype.bitwidth

            def declare(name, fnty):  # type: ignore[no-untyped-def]
                fn = builder.module.globals.get(name)
                return fn if fn is not None else ir.Function(builder.module, fnty, name)

            fma = declare(f"llvm.fma.v{W}f{bits}", ir.FunctionType(vt, [vt, vt, vt]))
            mload = declare(f"llvm.masked.load.v{W}f{bits}.p0",
                            ir.FunctionType(vt, [vt.as_pointer(), ir.IntType(32), mt, vt]))
            const = lambda v: ir.Constant(i64, v)  # noqa: E731
            last = builder.sub(M, const(1))
            rows = []
            for r in range(MR):
                i = builder.add(i0v, const(r))
                rows.append(builder.gep(A_.data, [builder.mul(builder.select(builder.icmp_signed("<", i, M), i, last),
                                                             K)]))
            vi64 = ir.VectorType(i64, W)

            def splat(x, t):  # type: ignore[no-untyped-def]
                return _splat(builder, x, t)

            lanes = builder.add(splat(j0v, vi64), ir.Constant(vi64, list(range(W))))
            n_vec = splat(N, vi64)
            masks = [builder.icmp_signed("<", builder.add(lanes, ir.Constant(vi64, [v * W] * W)), n_vec)
                     for v in range(nv)]
            tptr = [[builder.bitcast(builder.gep(T_.data, [builder.add(builder.mul(builder.add(t0v, const(r)), NT),
                                                                      const(v * W))]), vt.as_pointer())
                     for v in range(nv)] for r in range(MR)]
            init = [builder.load(tptr[r][v], align=1) for r in range(MR) for v in range(nv)]
            k, accs, close = _loop(builder, "fma_block", k0v, k1v, init)
            brow = builder.gep(B_.data, [builder.add(builder.mul(k, N), j0v)])
            zero = ir.Constant(vt, [0.0] * W)
            i8p = ir.IntType(8).as_pointer()
            i32 = lambda v: ir.Constant(ir.IntType(32), v)  # noqa: E731
            prefetch = declare("llvm.prefetch.p0", ir.FunctionType(ir.VoidType(), [i8p, i32(0).type, i32(0).type,
                                                                                 i32(0).type]))
            for v in range(nv):     # read, keep in all caches, data
                builder.call(prefetch, [builder.gep(builder.bitcast(brow, i8p), [const(FMA_PREFETCH + 64 * v)]),
                                        i32(0), i32(3), i32(1)])
            bv = [builder.call(mload, [builder.bitcast(builder.gep(brow, [const(v * W)]), vt.as_pointer()),
                                       ir.Constant(ir.IntType(32), 1), masks[v], zero]) for v in range(nv)]
            new = []
            for r in range(MR):
                a = splat(builder.load(builder.gep(rows[r], [k])), vt)
                new += [builder.call(fma, [a, bv[v], accs[r * nv + v]]) for v in range(nv)]
            accs = close(new)
            for r in range(MR):
                for v in range(nv):
                    builder.store(accs[r * nv + v], tptr[r][v], align=1)
            return context.get_dummy_value()

        return sig, codegen

    return fma_block


_fma_block1, _fma_block2, _fma_block4 = _fma_block(1), _fma_block(2), _fma_block(4)


@numba.njit(cache=True, inline="always")
def fma_panel(p, nvec):
    """Panel ``p`` of :func:`fma_gemm_lanes` over ``nvec`` vectors of columns:
    ``(first vector, vectors)`` - panels of 4 vectors, then one of 2 and one of 1 for
    the rest, so that no vector is wholly beyond N."""
    n4 = nvec // 4
    if p < n4:
        return 4 * p, 4
    if p == n4 and nvec % 4 >= 2:
        return 4 * n4, 2
    return nvec - 1, 1


@numba.njit(cache=True)
def fma_panels(N, itemsize):
    """Panels of :func:`fma_gemm_lanes` (:func:`fma_panel`) for N columns of
    ``itemsize``-byte floats, and the vectors of 64 bytes they cover."""
    nvec = (N + 64 // itemsize - 1) // (64 // itemsize)
    return nvec // 4 + (nvec % 4) // 2 + nvec % 2, nvec


@numba.njit(cache=True, parallel=True)
def fma_gemm_lanes(A, B, acc, how, groups):
    """:func:`fma_gemm` for binary64 or binary32 chains (``A`` (M, K) and ``B`` (K, N)
    C-ordered, both float64 or both float32), many outputs side by side, each chain
    still one FMA per k in order: the same bits, many times faster.

    The outputs are cut into panels of 1, 2 or 4 vectors of columns (:func:`fma_panel`)
    times ``groups`` groups of rows, one task each (``groups`` * panels >= threads keeps
    every thread busy).  A task walks K in passes of :data:`FMA_KC`; each pass runs
    every register block of :data:`FMA_MR` rows (:func:`_fma_block`) over the same
    slice of B.  Outputs whose chain ends in NaN are recomputed by :func:`fma_chain`,
    which picks MMA-Sim's NaN (the vector FMA's NaN is the processor's)."""
    M, K = A.shape
    N = acc.shape[1]
    W = 64 // A.itemsize
    n_p, nvec = fma_panels(N, A.itemsize)
    nb = (M + FMA_MR - 1) // FMA_MR
    for t in numba.prange(n_p * groups):
        g = t // n_p
        v0, nv = fma_panel(t - g * n_p, nvec)
        j0 = v0 * W
        b0 = g * nb // groups
        i0 = b0 * FMA_MR
        rows = ((g + 1) * nb // groups - b0) * FMA_MR
        ni = min(M, i0 + rows) - i0
        nl = min(N, j0 + nv * W) - j0
        T = np.zeros((rows, nv * W), dtype=A.dtype)
        for r in range(ni):
            for u in range(nl):
                T[r, u] = acc[i0 + r, j0 + u]
        for k0 in range(0, K, FMA_KC):
            k1 = min(K, k0 + FMA_KC)
            for b in range(0, rows, FMA_MR):
                if nv == 4:
                    _fma_block4(A, B, T, i0 + b, b, j0, k0, k1)
                elif nv == 2:
                    _fma_block2(A, B, T, i0 + b, b, j0, k0, k1)
                else:
                    _fma_block1(A, B, T, i0 + b, b, j0, k0, k1)
        for r in range(ni):
            for u in range(nl):
                v = float(T[r, u])
                if v != v:
                    v = fma_chain(A, B, i0 + r, j0 + u, acc[i0 + r, j0 + u], how, 0, 0, 0)
                acc[i0 + r, j0 + u] = v


#: Rows of one task of :func:`fma_rows` (its vector lanes), and elements of K it
#: transposes into a buffer at a time.
_FMA_ROWS = 64
_FMA_ROWS_KC = 64


@numba.njit(cache=True)
def _fma_rows_task(a, b, acc, r0, nr, T):
    """Rows ``r0 .. r0+nr-1`` of :func:`fma_rows` side by side in ``T`` (float64 or
    float32, length :data:`_FMA_ROWS`): chunks of a and b are transposed into
    buffers so that one step of every chain is one vector FMA over the rows."""
    K = a.shape[1]
    R = T.shape[0]
    ta = np.zeros((_FMA_ROWS_KC, R), dtype=T.dtype)
    tb = np.zeros((_FMA_ROWS_KC, R), dtype=T.dtype)
    for u in range(nr):
        T[u] = acc[r0 + u]
    for k0 in range(0, K, _FMA_ROWS_KC):
        kc = min(K, k0 + _FMA_ROWS_KC) - k0
        for u in range(nr):
            for kk in range(kc):
                ta[kk, u] = a[r0 + u, k0 + kk]
                tb[kk, u] = b[r0 + u, k0 + kk]
        for kk in range(kc):
            for u in range(R):
                T[u] = _fma(ta[kk, u], tb[kk, u], T[u])


@numba.njit(cache=True, parallel=True)
def fma_rows(a, b, acc, how, p, emin, emax):
    """Batched FMA chains: ``acc[r] <- chain(a[r, :], b[r, :], acc[r])`` for float64
    ``a``, ``b`` (n, K) exactly in the chain's format (:func:`fma_code`), k in order.
    Binary64/binary32 chains run :data:`_FMA_ROWS` rows side by side
    (:func:`_fma_rows_task`); rows ending in NaN are recomputed by :func:`fma_chain`
    (MMA-Sim's NaN)."""
    n, K = a.shape
    for t in numba.prange((n + _FMA_ROWS - 1) // _FMA_ROWS):
        r0 = t * _FMA_ROWS
        nr = min(n, r0 + _FMA_ROWS) - r0
        if how == FMA_ROUNDED:
            for r in range(r0, r0 + nr):
                acc[r] = fma_chain(a, b.T, r, r, acc[r], how, p, emin, emax)
            continue
        T = np.zeros(_FMA_ROWS)
        if how == FMA_FP64:
            _fma_rows_task(a, b, acc, r0, nr, T)
        else:
            T32 = np.zeros(_FMA_ROWS, dtype=np.float32)
            _fma_rows_task(a, b, acc, r0, nr, T32)
            for u in range(nr):
                T[u] = float(T32[u])
        for u in range(nr):
            v = T[u]
            if v != v:
                v = fma_chain(a, b.T, r0 + u, r0 + u, acc[r0 + u], how, p, emin, emax)
            acc[r0 + u] = v


__all__ = ["fma_gemm", "fma_small", "fma_gemm_lanes", "fma_panels", "fma_chain", "fma_step", "fma_code", "fma_rows", "copy_exact",
           "FMA_FP64", "FMA_FP32", "FMA_ROUNDED", "FMA_MR", "FMA_KC"]
