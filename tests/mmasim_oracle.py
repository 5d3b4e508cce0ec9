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
from benchmarks._mmasim import bits_of, mmasim_op, paired_presets, torch_tensor, values
from workbench import formats as _formats
from workbench import inputs as _inputs
from workbench.catalogue import Preset

__all__ = ["INPUT_KINDS", "bits_of", "compare", "draw", "mmasim_op", "operands", "paired_presets",
           "torch_tensor", "values"]

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


def compare(p: Preset, A: np.ndarray, B: np.ndarray, C: np.ndarray,
            op: Callable | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(workbench bits, mmasim bits) of D = A @ B + C for operand bit patterns."""
    fin, fout = p.in_format, p.out_format
    D = wb.gemm(values(A, fin), values(B, fin), values(C, fout), model=p)
    op = op if op is not None else mmasim_op(p)
    Dm = op(torch_tensor(A, fin), torch_tensor(B, fin), torch_tensor(C, fout)).numpy()
    ut = _formats.format(fout).bits_dtype
    return D.view(ut), Dm.view(ut)
