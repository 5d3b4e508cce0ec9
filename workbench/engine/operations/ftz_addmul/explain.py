"""FTZ-AddMul's step of :func:`workbench.engine.explain.explain` (Xie et al. 2025
Algorithms 1-2, AMD CDNA2): each block of P products shows the input flushes, every
FTZ-Mul and pairwise FTZ-Add with its RNE-FP32 rounding and any flush of a subnormal
result to zero, then the FTZ-Add into the running c, computed with the kernel's own
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_mul` /
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_add`."""
from __future__ import annotations

import math
from fractions import Fraction

from ...explain import _p2
from ...trace import Block
from .kernels import ftz_add, ftz_mul

_MIN_NORMAL32 = Fraction(1, 2 ** 126)


def _fr(x: float) -> Fraction:
    return Fraction(x)


def _ftz_note(exact: Fraction | None, r: float) -> str:
    """How RNE-FP32 and the output flush treated an exact value."""
    if exact is None:
        return f"= {r!r}"
    if r == 0.0 and exact != 0:
        return f"= RNE-FP32({_p2(exact)}) = {r!r}: below 2^-126, flushed to zero keeping its sign"
    if math.isfinite(r) and exact == Fraction(r):
        return f"= {r!r} (exact)"
    return f"= RNE-FP32({_p2(exact)}) = {r!r}"


def ftz_block(idx, a, b, d, m) -> Block:
    """One step of FTZ-AddMul (Xie et al. Algorithms 1-2, AMD CDNA2), as
    :func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_addmul_gemm`: P products by FTZ-Mul, summed
    pairwise by FTZ-Add, the sum added to the running c by FTZ-Add."""

    P = int(m.P)
    k0 = idx * P
    blk = Block(index=idx, c_in=d)
    in_min = m.in_fmt.min_normal if m.flush_subnormals else 0.0
    if idx == 0 and d != 0.0 and abs(d) < float(_MIN_NORMAL32):  # Alg. 2 line 3
        blk.pre.append(f"c = {d!r} is subnormal in fp32: flushed to +0")
        d = 0.0
    xs = []
    for name, v in (("a", a), ("b", b)):
        vv = []
        for k, x in enumerate(v):
            x = float(x)
            if x != 0.0 and abs(x) < in_min:  # Alg. 2 lines 1-2
                blk.pre.append(f"{name}{k0 + k} = {x!r} is subnormal in {m.in_format}: flushed to +0")
                x = 0.0
            vv.append(x)
        xs.append(vv)
    ps = []
    for k in range(P):
        x, y = xs[0][k], xs[1][k]
        p = float(ftz_mul(x, y))
        ex = _fr(x) * _fr(y) if math.isfinite(x) and math.isfinite(y) else None
        blk.stages.append(f"p{k} = FTZ-Mul(a{k0 + k}, b{k0 + k}) = FTZ-Mul({x!r}, {y!r}) {_ftz_note(ex, p)}")
        ps.append(p)

    def add(name, x, y, lx, ly):
        r = float(ftz_add(x, y))
        ex = _fr(x) + _fr(y) if math.isfinite(x) and math.isfinite(y) else None
        blk.stages.append(f"{name} = FTZ-Add({lx}, {ly}) = FTZ-Add({x!r}, {y!r}) {_ftz_note(ex, r)}")
        return r

    sm = add("s", ps[0], ps[1], "p0", "p1")
    if P == 4:
        s2 = add("s'", ps[2], ps[3], "p2", "p3")
        sm = add("s", sm, s2, "s", "s'")
    r = float(ftz_add(d, sm))
    ex = _fr(d) + _fr(sm) if math.isfinite(d) and math.isfinite(sm) else None
    blk.rounding = f"d = FTZ-Add(c, s) = FTZ-Add({d!r}, {sm!r}) {_ftz_note(ex, r)}"
    blk.result = r
    return blk


__all__ = ["ftz_block"]
