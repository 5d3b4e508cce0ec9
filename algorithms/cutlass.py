"""CUTLASS 3xTF32 / 4xTF32: fp32 GEMM emulated on tf32 matrix units.

NVIDIA CUTLASS, ``OpMultiplyAddFastF32`` (``gemm/warp/mma_tensor_op_fast_f32.h``,
example ``27_ampere_3xtf32_fast_accurate_tensorop_gemm``): each fp32 operand is split
into ``big = tf32(x)`` rounded toward zero and ``small = tf32(x - big)`` rounded to
nearest (``round_half_ulp_truncate``: ties away from zero); the products are
issued small ones first into the same fp32 accumulator of the unit, per k-tile::

    3xTF32: small_A big_B, big_A small_B, big_A big_B
    4xTF32: small_A small_B, then the three above.

CUTLASS's words are tf32, the input format of its units; on a unit of another
format the same split (big by truncation, small to nearest) rounds to the unit's own
input format (a 3xFP16 on an fp16 unit, or a custom format), unless ``word_format``
fixes the words' format.
"""

from __future__ import annotations

import numpy as np

from workbench.numbers import formats
from workbench.units import UnitSpec

from ._common import ORDERS, as_matrices, chain, check_model, resolve_word_format, split, to_fp32

BIG_ROUNDINGS = ("rz", "rne", "rna")


def cutlass_xtf32(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
                  model: UnitSpec, word_format: str | formats.FloatFormat | None = None, products: int = 3,
                  big_rounding: str = "rz", small_rounding: str = "rna",
                  order: str = "interleaved",
                  return_words: bool = False, input_rounding: str | None = None, device: str = "cpu") -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]:
    """D = A B + C as CUTLASS's 3xTF32 (``products=3``) or 4xTF32 (``products=4``) GEMM.

    Parameters
    ----------
    A, B, C:
        Cast to fp32 (RNE) first: the emulation is an SGEMM on fp32 data.
    model:
        A preset with fp32 output whose input format holds the words: tf32 in
        CUTLASS (``workbench.preset("A100", "tf32", "fp32")``); by default the words
        are in the unit's input format.
    word_format:
        The format of the big and small words: ``None`` (default) = the unit's input
        format (tf32 on CUTLASS's units); a name or a
        :class:`~workbench.numbers.formats.FloatFormat` fixes it (``"tf32"``: CUTLASS's words)
        and must be signed and held by the unit's input format (else a ValueError
        names both formats).
    products:
        3 (default) or 4.
    big_rounding, small_rounding:
        Rounding of the big word (default ``"rz"``, CUTLASS's truncation) and of the
        small word (default ``"rna"``, CUTLASS's round-half-ulp-truncate).
    order:
        ``"interleaved"`` (default: all products of a k-tile, then the next tile, as
        the CUTLASS warp MMA does) or ``"sequential"``.
    input_rounding, device:
        Passed to the unit's :func:`workbench.gemm` calls (``algorithms``, "Unit
        calls"): ``None`` (default), ``"rz"``, ``"rne"``, ``"rna"``; ``"cpu"`` (default)
        or ``"cuda"``.
    return_words:
        Also return ``{"A_big", "A_small", "B_big", "B_small"}``.

    Returns
    -------
    float64 array holding fp32 values, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    model = check_model(model, "cutlass_xtf32")
    fmt = resolve_word_format(model, word_format, "cutlass_xtf32")
    if products not in (3, 4):
        raise ValueError(f"products={products!r}: CUTLASS offers 3xTF32 (3) and 4xTF32 (4)")
    for name, mode in (("big_rounding", big_rounding), ("small_rounding", small_rounding)):
        if mode not in BIG_ROUNDINGS:
            raise ValueError(f"{name}={mode!r}: expected one of {BIG_ROUNDINGS}")
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {ORDERS}")
    A32, B32 = to_fp32(A64), to_fp32(B64)
    Ab = split(A32, fmt, 1, mode=big_rounding, name="A")[0]
    Bb = split(B32, fmt, 1, mode=big_rounding, name="B")[0]
    As = split(A32 - Ab, fmt, 1, mode=small_rounding, name="A")[0]
    Bs = split(B32 - Bb, fmt, 1, mode=small_rounding, name="B")[0]
    pairs = [(As, Bb), (Ab, Bs), (Ab, Bb)]
    if products == 4:
        pairs.insert(0, (As, Bs))
    D = chain(model, pairs, None if C64 is None else to_fp32(C64), order=order, input_rounding=input_rounding, device=device)
    if return_words:
        return D, {"A_big": Ab, "A_small": As, "B_big": Bb, "B_small": Bs}
    return D
