"""bf16x3 / bf16x6 / bf16x9: fp32 GEMM emulated with three bfloat16 words.

G. Henry, P. T. P. Tang, A. Heinecke, "Leveraging the bfloat16 Artificial
Intelligence Datatype For Higher-Precision Computations", ARITH 2019, Section III:
x = b_1 + b_2 + b_3 with b_1 = bf16(x), b_2 = bf16(x - b_1), b_3 = bf16(x - b_1 - b_2)
(round to nearest even), and the product A B ~= sum of b^A_j b^B_k over

* bf16x3: (j, k) in {(1,1), (1,2), (2,1)};
* bf16x6: j + k <= 4;
* bf16x9: all nine;

accumulated in fp32, smallest products first (Henry et al.: "the smaller terms are
computed first").  Here the accumulation is the matrix unit's fp32 accumulator.

The paper's words are bf16, the unit's format; on a unit of another format the same
three-word split rounds to the unit's own input format (fp16, tf32, a custom
format), unless ``word_format`` fixes the words' format.
"""

from __future__ import annotations

import numpy as np

from workbench.numbers import formats
from workbench.units import UnitSpec

from ._common import ORDERS, as_matrices, chain, check_model, resolve_word_format, split, to_fp32

PRODUCT_SETS: dict[int, tuple[tuple[int, int], ...]] = {
    3: ((1, 1), (1, 2), (2, 1)),
    6: ((1, 1), (1, 2), (2, 1), (1, 3), (2, 2), (3, 1)),
    9: tuple((j, k) for j in (1, 2, 3) for k in (1, 2, 3)),
}


def bf16xn(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
           model: UnitSpec, word_format: str | formats.FloatFormat | None = None, products: int = 3,
           order: str = "sequential",
           return_words: bool = False, input_rounding: str | None = None, device: str = "cpu") -> np.ndarray | tuple[np.ndarray, dict[str, object]]:
    """D = A B + C by Henry et al.'s bf16x3 / bf16x6 / bf16x9 scheme.

    Parameters
    ----------
    A, B, C:
        Cast to fp32 (RNE) first (the scheme emulates an SGEMM).
    model:
        A preset with fp32 output whose input format holds the words: bf16 in the
        paper; by default the words are in the unit's input format.
    word_format:
        The format of the words b_1, b_2, b_3: ``None`` (default) = the unit's input
        format (bf16 on the paper's units); a name or a
        :class:`~workbench.numbers.formats.FloatFormat` fixes it (``"bf16"``: the paper's
        words) and must be signed and held by the unit's input format (else a
        ValueError names both formats).
    products:
        3 (default), 6 or 9.
    order:
        ``"sequential"`` (default: one product over all of K after another, smallest
        words' products first: (j, k) sorted by decreasing j + k) or ``"interleaved"``.
    input_rounding, device:
        Passed to the unit's :func:`workbench.gemm` calls (``algorithms``, "Unit
        calls"): ``None`` (default), ``"rz"``, ``"rne"``, ``"rna"``; ``"cpu"`` (default)
        or ``"cuda"``.
    return_words:
        Also return ``{"A": [b_1, b_2, b_3], "B": [...], "pairs": [...]}``.

    Returns
    -------
    float64 array holding fp32 values, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    model = check_model(model, "bf16xn")
    fmt = resolve_word_format(model, word_format, "bf16xn")
    if products not in PRODUCT_SETS:
        raise ValueError(f"products={products!r}: expected 3, 6 or 9 (bf16x3, bf16x6, bf16x9)")
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {ORDERS}")
    Aw = split(to_fp32(A64), fmt, 3, name="A")
    Bw = split(to_fp32(B64), fmt, 3, name="B")
    idx = sorted(PRODUCT_SETS[products], key=lambda jk: (-(jk[0] + jk[1]), jk))
    pairs = [(Aw[j - 1], Bw[k - 1]) for j, k in idx]
    D = chain(model, pairs, None if C64 is None else to_fp32(C64), order=order, input_rounding=input_rounding, device=device)
    if return_words:
        words: dict[str, object] = {"A": Aw, "B": Bw, "pairs": idx}
        return D, words
    return D
