"""The ``mmasim`` package (MMA-Sim 2.1.1, Xie et al. 2025) as an independent oracle.

The preset -> ``mmasim`` operation mapping and the bit-pattern converters live in
``benchmarks/_mmasim.py`` (the engine benchmark uses them too); this module adds the
test inputs (:data:`INPUT_KINDS`, :func:`draw`, :func:`operands`) and :func:`compare`.
Used by ``tests/test_mmasim_differential.py``; imports ``torch`` and ``mmasim`` lazily.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import workbench as wb
from benchmarks._mmasim import bits_of, mmasim_op, paired_presets, run, scale_tensor, torch_tensor, values
from workbench.numbers import formats as _formats
from workbench.numbers import inputs as _inputs
from workbench.units.catalogue import Preset

__all__ = ["INPUT_KINDS", "SCALE_KINDS", "bits_of", "compare", "draw", "draw_scales", "mmasim_op", "operands",
           "paired_presets", "torch_tensor", "values"]

INPUT_KINDS = ("normal", "wide", "dnn", "bits", "cancel")


def draw(kind: str, fmt: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Bit patterns of ``fmt`` drawn as one of :data:`INPUT_KINDS` (MMA-Sim Section
    3.1.4's input types, plus a wide exponent range)."""
    f = _formats.format(fmt)
    if kind == "bits":
        if fmt == "tf32":       # tf32 patterns in fp32 registers: the low 13 bits are 0
            return rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32) & np.uint32(0xFFFFE000)
        return rng.integers(0, (1 << f.width) - 1, size=shape, dtype=np.uint64, endpoint=True).astype(f.bits_dtype)
    seed = int(rng.integers(1 << 62))
    if kind == "normal":
        x = _inputs.normal(shape, seed)
    elif kind == "wide":
        x = _inputs.exponent_range(shape, seed, emin=max(f.emin - f.man_bits, -1022), emax=min(f.emax, 1022))
    elif kind == "dnn":
        x = _inputs.dnn_like(shape, seed, outlier_probability=0.05)
    else:
        raise ValueError(f"kind={kind!r}: expected one of {INPUT_KINDS} ('cancel' is built from pairs)")
    with np.errstate(over="ignore"):
        x = _formats.round(x, f, "rne", saturate=True) if not f.has_inf else _formats.round(x, f, "rne")
    return bits_of(x, fmt)


def operands(kind: str, p: Preset, M: int, K: int, N: int, rng: np.random.Generator):
    """(A bits, B bits, C bits) of one input kind for preset ``p``."""
    fin, fout = p.in_format, p.out_format
    if kind == "cancel":    # pairs of products that cancel exactly: a_{2i+1} = a_{2i}, b_{2i+1} = -b_{2i}
        A = draw("normal", fin, (M, K), rng)
        B = draw("normal", fin, (K, N), rng)
        Av, Bv = values(A, fin), values(B, fin)
        Av[:, 1::2] = Av[:, 0:K - K % 2:2]
        Bv[1::2, :] = -Bv[0:K - K % 2:2, :]
        A, B = bits_of(Av, fin), bits_of(Bv, fin)
        C = draw("normal", fout, (M, N), rng)
        return A, B, C
    return draw(kind, fin, (M, K), rng), draw(kind, fin, (K, N), rng), draw(kind, fout, (M, N), rng)


#: Block-scale draws: "unit" (every scale 1), "narrow" (2^-8..2^8 / UE4M3 values
#: near 1), "random" (any finite pattern: E8M0 2^-127..2^127, UE4M3 0 and
#: subnormals to 448), "edge" (the extremes only: E8M0 2^-127, 2^-126, 2^126,
#: 2^127; UE4M3 0, its smallest subnormal, 1 and 448), "nan" (random with 5% NaN).
SCALE_KINDS = ("unit", "narrow", "random", "edge", "nan")


def draw_scales(kind: str, scale_format: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Bit patterns of block scales (E8M0: 2^(bits - 127), 0xFF NaN; UE4M3: the
    positive half of E4M3, 0x7F NaN)."""
    e8 = scale_format == "e8m0"
    one = 127 if e8 else 0x38
    if kind == "unit":
        return np.full(shape, one, dtype=np.uint8)
    if kind == "narrow":
        return (one + rng.integers(-8, 9, shape)).astype(np.uint8)
    if kind == "edge":
        return rng.choice(np.array([0, 1, 253, 254] if e8 else [0, 1, 0x38, 0x7E], dtype=np.uint8), shape)
    bits = rng.integers(0, 255 if e8 else 0x7F, shape).astype(np.uint8)     # every finite pattern
    if kind == "nan":
        bits[rng.random(shape) < 0.05] = 0xFF if e8 else 0x7F
    elif kind != "random":
        raise ValueError(f"kind={kind!r}: expected one of {SCALE_KINDS}")
    return bits


def compare(p: Preset, A: np.ndarray, B: np.ndarray, C: np.ndarray,
            op: Callable | None = None, SA: np.ndarray | None = None,
            SB: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(workbench bits, mmasim bits) of D = A @ B + C for operand bit patterns (a
    scaled preset's block scales ``SA`` (M, K / k_block), ``SB`` (K / k_block, N) as
    bit patterns; all 1 when not given)."""
    fin, fout = p.in_format, p.out_format
    op = op if op is not None else mmasim_op(p)
    if p.kind in ("st-fdpa", "gst-fdpa"):
        nb = A.shape[1] // int(p.k_block)
        sf = str(p.scale_format)
        SA = draw_scales("unit", sf, (A.shape[0], nb), np.random.default_rng(0)) if SA is None else SA
        SB = draw_scales("unit", sf, (nb, B.shape[1]), np.random.default_rng(0)) if SB is None else SB
        D = wb.gemm(values(A, fin), values(B, fin), values(C, fout), model=p, scale_a=values(SA, sf),
                    scale_b=values(SB, sf))
        Dm = run(p, op, torch_tensor(A, fin), torch_tensor(B, fin), torch_tensor(C, fout), scale_tensor(SA, sf),
                 scale_tensor(SB, sf)).numpy()
    else:
        D = wb.gemm(values(A, fin), values(B, fin), values(C, fout), model=p)
        Dm = op(torch_tensor(A, fin), torch_tensor(B, fin), torch_tensor(C, fout)).numpy()
    ut = _formats.format(fout).bits_dtype
    return D.view(ut), Dm.view(ut)
