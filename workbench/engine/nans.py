"""Which NaN comes out of the AMD kinds: the payload rules of ``mmasim`` 2.1.1.

NVIDIA's tensor cores return one canonical NaN (0x7FFFFFFF / 0x7FFF, Xie et al. 2025
Section 4.2) and so do MMA-Sim's T-FDPA, TR-FDPA and GTR-FDPA models, which end in
``ldexp_and_normalize`` (``mmasim/arithmetic/fdpa.py``: ``res[nans] = 0x7FFFFFFF``).
The AMD kinds that MMA-Sim evaluates with ordinary floating-point operations instead
propagate an operand's NaN; this module states those rules, read from the MMA-Sim
2.1.1 source and confirmed operand by operand against the package on x86-64
(torch 2.13 CPU kernels):

* **Quieting and widening.**  A NaN operand comes out with its sign and payload, the
  payload widened to the output format (fp16's 10 and bf16's 7 fraction bits move to
  the top of fp32's 23) and the quiet bit set (``c.double()``, ``a.double()``).
* **Default NaN.**  An invalid operation (Inf * 0, Inf - Inf) with no NaN operand gives
  the x86 "QNaN floating-point indefinite": sign set, quiet bit only (0xFFC00000 in
  fp32, 0xFFF8000000000000 in fp64).
* **FMA chain** (``arithmetic/fma.py``, ``std::fma``): in ``fma(a, b, c)`` the first NaN
  of (a, b, c) wins; Inf * 0 + NaN gives that NaN.
* **FTZ-AddMul** (``arithmetic/ftz_mul_add.py``: ``x.float() * y.float()`` and
  ``x + y`` on CPU tensors): when both operands are NaN the *second* one wins.  (torch's
  vectorised Half -> float conversion keeps an fp16 payload; its scalar tail, the last
  ``numel % 8`` elements of a tensor, writes 0x7FFFFFFF instead.  That is an artefact
  of the tensor's length, not of the unit, and is not modelled: the differential test
  uses shapes whose operand tensors have no tail.)
* **E-FDPA** (``arithmetic/fdpa.py: e_fdpa``): ``a.double() * b.double()`` (b's NaN
  wins in torch's vectorised loop; its scalar tail lets a's win, an artefact of the
  tensor's length as above), then ``summands.sum(-1)`` over the n = (products in the block) + 1 summands
  ``[p_0, ..., p_{n-2}, c]``.  torch's reduction visits them as a left fold whose
  order and winner depend on n: n <= 3: ``p_0, ..., c`` with the first NaN kept;
  n = 4: ``p_0, p_1, p_2, c`` with the newest NaN kept; n >= 5: ``c, p_0, ..., p_{n-2}``
  with the newest NaN kept (measured for n <= 5, which covers every E-FDPA preset:
  L = 2 and 4).  An Inf - Inf met during the fold is a default NaN at that point.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

_QUIET64 = np.int64(1) << 51
DEFAULT_NAN_BITS = np.int64(-(1 << 51))     # 0xFFF8000000000000: sign, all-ones exponent, quiet bit


@intrinsic
def _f64_from_bits(typingctx, b):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@intrinsic
def _bits_from_f64(typingctx, x):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@numba.njit(cache=True, inline="always")
def default_nan():
    """The x86 default NaN (0xFFF8000000000000; 0xFFC00000 once narrowed to fp32)."""
    return _f64_from_bits(DEFAULT_NAN_BITS)


#: The float64 fraction bits below binary32's 23.
_BELOW_FP32 = np.int64((1 << 29) - 1)


@numba.njit(cache=True, inline="always")
def narrow_nan32(x):
    """NaN ``x`` rounded to binary32 and widened back, as x86-64's ``cvtsd2ss`` does it:
    sign and the leading 23 fraction bits kept, the rest dropped, the quiet bit set (a
    signaling NaN comes out quiet).  Written with bit operations because the CUDA
    kernels run this same function and PTX does not promise that its conversion keeps
    a NaN's payload."""
    return _f64_from_bits((_bits_from_f64(x) | _QUIET64) & ~_BELOW_FP32)


@numba.njit(cache=True, inline="always")
def quiet(x):
    """NaN ``x`` with its quiet bit set (sign and payload kept)."""
    return _f64_from_bits(_bits_from_f64(x) | _QUIET64)


@numba.njit(cache=True, inline="always")
def _invalid_add(x, y):
    return math.isinf(x) and math.isinf(y) and (x > 0) != (y > 0)


@numba.njit(cache=True, inline="always")
def _invalid_mul(x, y):
    return (math.isinf(x) and y == 0.0) or (x == 0.0 and math.isinf(y))


@numba.njit(cache=True)
def nan_mul(x, y, second_wins):
    """NaN of ``x * y`` by the rules above, or 0.0 when the product is not NaN
    (callers test ``x * y != x * y`` first)."""
    if y != y and (second_wins or x == x):
        return quiet(y)
    if x != x:
        return quiet(x)
    return default_nan() if _invalid_mul(x, y) else 0.0


@numba.njit(cache=True)
def nan_add(x, y, second_wins):
    """NaN of ``x + y`` by the rules above (0.0 when the sum is not NaN)."""
    if y != y and (second_wins or x == x):
        return quiet(y)
    if x != x:
        return quiet(x)
    return default_nan() if _invalid_add(x, y) else 0.0


@numba.njit(cache=True)
def fma_nan(a, b, c):
    """NaN of ``fma(a, b, c)`` (std::fma on x86-64): the first NaN of (a, b, c), else
    the default NaN for Inf * 0 or an Inf product meeting the opposite Inf."""
    if a != a:
        return quiet(a)
    if b != b:
        return quiet(b)
    if c != c:
        return quiet(c)
    return default_nan()


@numba.njit(cache=True)
def efdpa_nan(A, BT, i, j, k0, n_products, c):
    """NaN of one E-FDPA (row i of A, row j of ``BT``, products k0 .. k0+n_products-1,
    accumulator c) when the block's result is NaN: torch's fold of the summands
    (module docstring)."""
    n = n_products + 1
    last_wins = n >= 4
    c_first = n >= 5
    acc = 0.0
    for t in range(n):
        k = t - 1 if c_first else t
        if k < 0 or k == n_products:
            v = c
        else:
            a = A[i, k0 + k]
            b = BT[j, k0 + k]
            v = a * b
            if v != v:
                v = nan_mul(a, b, True)
        if t == 0:
            acc = v
        elif v != v:
            if last_wins or acc == acc:
                acc = v
        elif acc == acc:
            acc = default_nan() if _invalid_add(acc, v) else acc + v
    return quiet(acc) if acc != acc else acc
