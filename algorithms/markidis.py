"""Markidis et al. (2018) precision refinement on a half-precision matrix unit.

S. Markidis, S. W. D. Chien, E. Laure, I. B. Peng, J. S. Vetter, "NVIDIA Tensor Core
Programmability, Performance & Precision", IPDPSW 2018, Section V; written as
Valpey et al. (2025), Section 6 (and Ootomo & Yokota 2022, eq. (6)) quote it::

    A16 = fp16(A),  R_A = fp16(A - A16)          (no scaling of the residual)
    A B ~= A16 B16 + R_A B16 + A16 R_B [+ R_A R_B]

All products are accumulated in the matrix unit's accumulator (round-toward-zero
on NVIDIA parts), with C as the accumulator's initial value.  The paper's words are
fp16, the format of the V100's unit; on any other unit the same split rounds to
the unit's own input format (bf16, tf32, fp8, a custom format), unless
``word_format`` fixes the words' format.
"""

from __future__ import annotations

import numpy as np

from workbench.numbers import formats
from workbench.units import UnitSpec

from ._common import as_matrices, chain, check_model, resolve_word_format, split

#: Default term order (smallest products first, the large product last, so that the
#: corrections enter the block that also holds A16 B16; see :func:`markidis`).
SMALL_FIRST = "small_first"
ORDERINGS = ("small_first", "large_first")


def markidis(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
             model: UnitSpec, word_format: str | formats.FloatFormat | None = None, terms: int = 3,
             ordering: str = SMALL_FIRST, order: str = "sequential",
             return_words: bool = False, input_rounding: str | None = None, device: str = "cpu") -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]:
    """D = A B + C by Markidis et al.'s split into a word of the unit's input format and its residual.

    Parameters
    ----------
    A, B, C:
        float32/float64 data; the split is formed in float64 (exact for fp32 data).
        C is rounded to fp32 (RNE) and is the accumulator's initial value.
    model:
        A preset with fp32 output whose input format holds the words (the unit's
        input format by default).
    word_format:
        The format of the words A16 = fl(A) and R_A = fl(A - A16) (round to nearest
        even): ``None`` (default) = the unit's input format (fp16 on the paper's
        V100; bf16, tf32, fp8 or a custom format on other units); a name or a
        :class:`~workbench.numbers.formats.FloatFormat` fixes it, e.g. ``"fp16"`` for the
        paper's words, and must be signed and held by the unit's input format
        (else a ValueError names both formats).
    terms:
        3 (default; R_A R_B dropped, Markidis et al. Section V) or 4 (all products,
        the form Valpey et al. Section 6 analyse).
    ordering:
        ``"small_first"`` (default): R_A R_B (if kept), R_A B16, A16 R_B, then A16 B16;
        ``"large_first"``: the reverse.  The paper does not fix the order; the
        default lets the final block hold the large products with the corrections
        as its addend, the accumulation Valpey et al. Section 6 (steps 5-7) model.
    order:
        ``"sequential"`` (default: each product over all of K, one GEMM call after
        another sharing the accumulator) or ``"interleaved"`` (per K-block of
        ``model.L``, all products in turn), see :func:`algorithms._common.chain`.
    input_rounding, device:
        Passed to the unit's :func:`workbench.gemm` calls (``algorithms``, "Unit
        calls"): ``None`` (default), ``"rz"``, ``"rne"``, ``"rna"``; ``"cpu"`` (default)
        or ``"cuda"``.
    return_words:
        Also return ``{"A16", "R_A", "B16", "R_B"}`` (``A16`` the high word, in
        the word format: fp16 in the paper).

    Returns
    -------
    float64 array (fp32 values, the unit's output), or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    model = check_model(model, "markidis")
    fmt = resolve_word_format(model, word_format, "markidis")
    if terms not in (3, 4):
        raise ValueError(f"terms={terms!r}: Markidis et al. use 3 products (R_A R_B dropped) or 4")
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering={ordering!r}: expected one of {ORDERINGS}")
    A16, RA = split(A64, fmt, 2, name="A")
    B16, RB = split(B64, fmt, 2, name="B")
    pairs = [(RA, B16), (A16, RB), (A16, B16)]
    if terms == 4:
        pairs.insert(0, (RA, RB))
    if ordering == "large_first":
        pairs.reverse()
    C32 = None if C64 is None else C64.astype(np.float32).astype(np.float64)
    D = chain(model, pairs, C32, order=order, input_rounding=input_rounding, device=device)
    if return_words:
        return D, {"A16": A16, "R_A": RA, "B16": B16, "R_B": RB}
    return D
