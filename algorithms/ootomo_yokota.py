"""Ootomo & Yokota (2022): single-precision accuracy from half-precision matrix units.

H. Ootomo, R. Yokota, "Recovering single precision accuracy from Tensor Cores while
surpassing the FP32 theoretical peak performance", IJHPCA 36(4), 2022, eq. (24),
as Valpey et al. (2025), Section 6 restate it::

    A_hi = fp16(A),  R_A = fp16((A - A_hi) * 2^11)      (halfhalf)
    A_hi = tf32_rna(A), R_A = tf32_rna(A - A_hi)        (tf32tf32, no scaling)
    D = RN( A_hi B_hi + (A_hi R_B + R_A B_hi) / 2^11 + C )   (R_A R_B dropped)

The improvement over Markidis et al. is that the large product is not accumulated
with the unit's round-toward-zero: each k-block's A_hi B_hi is computed by the unit
from a zero accumulator and added to an fp32 accumulator (initially C) outside the
unit with round-to-nearest; the two correction products are chained in the unit;
``D = fl32(D_hi + D_lo / 2^11)`` at the end.  The ``accumulation="rz"`` variant keeps
the large product's accumulation in the unit as well.  Valpey et al. Section 6,
Property 5 / Table 5: because the unit does not normalise its partial sums, the
"rn" variant can be *less* accurate than Markidis' method on some inputs.

On units of other formats.  The residual A - A_hi is about 2^-p times A (p = 11,
fp16's precision with the implicit bit), so in fp16's narrow exponent range it
underflows where A is small; Ootomo & Yokota scale it by 2^11 = 2^p to bring it
back to A's exponents, and leave tf32 residuals unscaled (tf32 has fp32's exponent
range).  By default (``variant=None``) the words are in the unit's own input format:
the paper's variant of that format where there is one (fp16: halfhalf, tf32:
tf32tf32), otherwise the halfhalf recipe in that format, RNE split with the residual
scaled by 2^p of the format (2^8 for bf16, 2^10 for a custom e6m9, 2^4 for fp8 e4m3).
"""

from __future__ import annotations

import numpy as np

from workbench.numbers import formats
from workbench.units import UnitSpec

from ._common import ORDERS, as_matrices, chain, check_model, fp32_add, resolve_word_format, split, unit_gemm

#: the paper's variants: name -> (word format, rounding of the split, whether the
#: residual is scaled by 2^p of the word format: 2^11 for fp16)
VARIANTS: dict[str, tuple[str, str, bool]] = {
    "halfhalf": ("fp16", "rne", True),
    "tf32tf32": ("tf32", "rna", False),
}
#: the recipe of the words in a format no variant of the paper uses: halfhalf's
GENERAL_RECIPE = ("rne", True)
ACCUMULATIONS = ("rn", "rz")


def ootomo_yokota(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
                  model: UnitSpec, variant: str | None = None, accumulation: str = "rn",
                  hi_block: int | None = None, order: str = "interleaved",
                  return_words: bool = False, input_rounding: str | None = None, device: str = "cpu") -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]:
    """D = A B + C by Ootomo & Yokota's error-corrected split (R_A R_B dropped).

    Parameters
    ----------
    A, B, C:
        float32/float64 data (split in float64, exact for fp32 data); C is rounded to
        fp32 (RNE) as an SGEMM's C would be.
    model:
        A preset with fp32 output whose input format holds the words (the unit's
        input format by default).
    variant:
        The format and recipe of the words.  ``None`` (default): the unit's input
        format, split as the paper's variant of that format (halfhalf on an fp16
        unit, tf32tf32 on a tf32 unit) or, for any other format, RNE with the
        residual scaled by 2^p of the format (see the module docstring).
        ``"halfhalf"``: fp16 words, RNE split, residual scaled by 2^11;
        ``"tf32tf32"``: tf32 words, split rounded to nearest ties away, no scaling.
        A named variant's words must be held by the unit's input format (else a
        ValueError names both formats).
    accumulation:
        ``"rn"`` (default, the paper's method): each chain of ``hi_block`` products
        of A_hi B_hi starts from 0 in the unit and is added to the fp32 accumulator
        (initially C) with round-to-nearest outside the unit.  ``"rz"``: A_hi B_hi is
        chained in the unit from C like every other product.
    hi_block:
        Length of K per in-unit chain of the large product before it leaves the unit
        (a multiple of ``model.L``); ``None`` (default) = one block of ``model.L``,
        i.e. one MMA instruction per outside addition.
    order:
        Order of the two correction products A_hi R_B, R_A B_hi in their in-unit
        chain: ``"interleaved"`` (default, both per k-tile as the paper's fused
        kernel does) or ``"sequential"``.
    input_rounding, device:
        Passed to the unit's :func:`workbench.gemm` calls (``algorithms``, "Unit
        calls"): ``None`` (default), ``"rz"``, ``"rne"``, ``"rna"``; ``"cpu"`` (default)
        or ``"cuda"``.
    return_words:
        Also return ``{"A_hi", "R_A", "B_hi", "R_B", "D_hi", "D_lo"}``.

    Returns
    -------
    float64 array holding fp32 values, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: expected one of {tuple(VARIANTS)}, or None (the unit's input format)")
    name = "ootomo_yokota" if variant is None else f"ootomo_yokota(variant={variant!r})"
    model = check_model(model, name)
    fmt = resolve_word_format(model, None if variant is None else VARIANTS[variant][0], name, keyword="variant")
    recipes = {f: (m, scaled) for f, m, scaled in VARIANTS.values()}
    mode, scaled = recipes.get(fmt.name, GENERAL_RECIPE)
    scale = 2.0**fmt.p if scaled else 1.0
    if accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation={accumulation!r}: expected 'rn' (outside the unit) or 'rz' (in the unit)")
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {ORDERS}")
    block = model.operation.block_size(model)     # L (P for FTZ-AddMul, 1 for an FMA chain)
    if hi_block is not None and (not isinstance(hi_block, (int, np.integer)) or hi_block < block
                                 or hi_block % block):
        raise ValueError(f"hi_block={hi_block!r}: expected a positive multiple of the unit's block size "
                         f"{block}, or None")
    A_hi, RA = split(A64, fmt, 2, mode=mode, scale=scale, name="A")
    B_hi, RB = split(B64, fmt, 2, mode=mode, scale=scale, name="B")
    C32 = np.zeros((A64.shape[0], B64.shape[1])) if C64 is None else C64.astype(np.float32).astype(np.float64)
    if accumulation == "rz":
        D_hi = unit_gemm(A_hi, B_hi, C32, model=model, input_rounding=input_rounding, device=device)
    elif hi_block is None or hi_block == block:
        D_hi = unit_gemm(A_hi, B_hi, C32, model=model, accumulation="outside", input_rounding=input_rounding, device=device)
    else:
        D_hi = unit_gemm(A_hi, B_hi, C32, model=model, accumulation="promote", promote_every=int(hi_block),
                              input_rounding=input_rounding, device=device)
    D_hi = D_hi.astype(np.float64)
    D_lo = chain(model, [(A_hi, RB), (RA, B_hi)], order=order, input_rounding=input_rounding, device=device)
    D = fp32_add(D_hi, formats.round(D_lo / scale, "fp32", "rne"))
    if return_words:
        return D, {"A_hi": A_hi, "R_A": RA, "B_hi": B_hi, "R_B": RB, "D_hi": D_hi, "D_lo": D_lo}
    return D
