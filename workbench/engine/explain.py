"""``explain(a, b, c, model)``: one dot product, step by step.

A :class:`Trace` of what the modelled unit does to one row of A, one column of B and
one accumulator c, in the words of the papers: the exact unnormalised products
(significand and exponent, Xie et al. 2025 Algorithm 7 lines 2-4), the largest
exponent of the block (noting when a zero operand's fixed exponent set it), every
term aligned at it with the bits it lost (line 10, RZ_F), the exact fixed-point sum
(line 11), its normalisation and the final rounding rho (line 13); one such record
per block of L when K > L, each block's result feeding the next as c (Algorithm 5).
``str(trace)`` prints the walk-through in the style of the one under Table 5 of
Valpey et al. 2025.

Every number is computed with the compiled primitives the kernels use
(:func:`~workbench.engine.ops.decompose_one`, :func:`~workbench.engine.ops.align_term`,
:func:`~workbench.engine.ops.round_fixed`, and for the AMD operations
:func:`~workbench.engine.operations.amd_fdpa.kernels.tr_parts` / :func:`~workbench.engine.operations.amd_fdpa.kernels.efdpa_step`),
so the trace's value is the kernel's value bit for bit (tested on random inputs).

Supported kinds: ``t-fdpa`` (c early or late, sticky bit, and the interleaved
two-group pattern of fp8 through ``mma.sync`` on H100/H200/B200 - Khattak & Mikaitis
2025 Section IV-A5, Fig. 5c: each group is a fused sum of its own, chained from 0
when c is added late with its own rounding, with ``group_F`` fractional bits),
``e-fdpa``, ``tr-fdpa``, ``gtr-fdpa``, ``fma`` and ``ftz-addmul`` (AMD CDNA2, Xie
Algorithms 1-2: each block of P products shows the input flushes, every FTZ-Mul and
pairwise FTZ-Add with its RNE-FP32 rounding and any flush of a subnormal result to
zero, then the FTZ-Add into the running c; computed with the kernel's own
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_mul` /
:func:`~workbench.engine.operations.ftz_addmul.kernels.ftz_add`),
``st-fdpa`` (MX formats, Xie Algorithm 8: the E8M0 scale exponents of each block of
``k_block`` elements are shown added to the products' exponents, then the T-FDPA
steps) and ``gst-fdpa`` (NVFP4/MXFP4 k64, Algorithm 9: each group's exact dot product
p_g, its scaling by the two scales' significands and exponent e_g, then the
truncated fused sum of the group terms and c; the groups come from the kernel's
:func:`~workbench.engine.operations.gstfdpa.kernels.gst_group`).  The scaled kinds take keyword arguments
``scale_a``/``scale_b`` (the scales of the one row and column, as ``workbench.gemm``
takes them); a NaN scale gives NaN.  That is every kind of
:data:`workbench.engine.model.KINDS`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import numpy as np

from ..numbers import formats as _formats
from . import ops as _ops
from .kernels import exact_add
from .model import KINDS, OPERATIONS, Model, operation
from .trace import Block, Term


def explained_kinds() -> tuple[str, ...]:
    """The kinds :func:`explain` traces: every registered operation."""
    return tuple(OPERATIONS)


#: The built-in kinds (Xie et al. Table 1), all traced: every operation has its trace
#: step (:meth:`~workbench.engine.model.Operation.explain_block`).
EXPLAINED_KINDS = KINDS


def _val(sig: int, exp: int, frac: int) -> Fraction:
    return Fraction(int(sig)) * Fraction(2) ** (int(exp) - int(frac))


def _p2(x: Fraction) -> str:
    """A value as the papers write it: 2^k, or a decimal with its exact dyadic form."""
    if x == 0:
        return "0"
    ax = abs(x)
    n, d = ax.numerator, ax.denominator
    if n & (n - 1) == 0 and d & (d - 1) == 0:
        k = n.bit_length() - d.bit_length()
        return f"{'-' if x < 0 else ''}2^{k}"
    return f"{float(x):.17g}"


@dataclass
class Trace:
    model: Model
    a: tuple
    b: tuple
    c: float
    blocks: list[Block]
    value: float
    scale_a: tuple | None = None   # scaled kinds: the block scale factors of the row of A
    scale_b: tuple | None = None   # ... and of the column of B

    def __str__(self) -> str:
        m = self.model
        lines = [f"{m.kind} ({m.describe()})", f"a = {list(self.a)}", f"b = {list(self.b)}", f"c = {self.c!r}"]
        if self.scale_a is not None:
            lines += [f"scale_a = {list(self.scale_a)}", f"scale_b = {list(self.scale_b or ())}"]
        L = operation(m.kind).block_size(m)
        n = 1
        for blk in self.blocks:
            if blk.label:
                lines.append(f"-- {blk.label}, chain result d = {blk.c_in!r}")
            elif len(self.blocks) > 1:
                lines.append(f"-- block {blk.index} (elements {blk.index * L}..{(blk.index + 1) * L - 1}), "
                             f"c = {blk.c_in!r}")
            if blk.special:
                lines.append(f"{n}. special operands: {blk.special}; result {blk.result!r}")
                n += 1
                continue
            for s in blk.pre:
                lines.append(f"{n}. {s}")
                n += 1
            if blk.groups:
                for g in blk.groups:
                    lines.append(f"-- {g.label}, c = {g.c_in!r}")
                    if g.special:
                        lines.append(f"{n}. special operands: {g.special}; {g.label.split(' (')[0]} result "
                                     f"{g.result!r}")
                        n += 1
                        continue
                    n = _fused_lines(g, n, lines)
                    if g.normalised:
                        lines.append(f"{n}. normalised: {g.normalised}")
                        n += 1
                    lines.append(f"{n}. {g.label.split(' (')[0]} rounded {g.rounding}: {g.result!r}")
                    n += 1
            else:
                n = _fused_lines(blk, n, lines)
            for s in blk.stages:
                lines.append(f"{n}. {s}")
                n += 1
            if blk.normalised:
                lines.append(f"{n}. normalised: {blk.normalised}")
                n += 1
            lines.append(f"{n}. final rounding {blk.rounding}: {blk.result!r}")
            n += 1
        lines.append(f"result d = {self.value!r}")
        return "\n".join(lines)


def _fused_lines(blk: Block, n: int, lines: list[str]) -> int:
    """The exact products, the largest exponent, the aligned terms and their exact sum
    of one fused sum (a block, or one interleaved group of it)."""
    prods = [t for t in blk.terms if t.role == "product"]
    if prods:
        lines.append(f"{n}. a and b are multiplied exactly (products not normalised):")
        for t in prods:
            ex = "zero (no exponent)" if t.exponent is None else f"{_p2(t.significand)} * 2^{t.exponent}"
            note = f" ({t.note})" if t.note else ""
            lines.append(f"     {t.label} = {ex}{note} = {_p2(t.value)}")
        n += 1
    if blk.e_max is not None:
        note = " (set by a zero operand's fixed exponent)" if blk.zero_exponent_set_max else ""
        lines.append(f"{n}. largest exponent of all terms is {blk.e_max}{note}")
        n += 1
        lines.append(f"{n}. each term is shifted to align it at 2^{blk.e_max} and truncated to "
                     f"{blk.F} fractional bits:")
        for t in blk.terms:
            lost = f", lost {_p2(t.lost)}" if t.lost else ", exact"
            lines.append(f"     {t.label}: {_p2(t.value)} -> {_p2(t.aligned)}{lost}")
        n += 1
        lines.append(f"{n}. the aligned terms are added exactly: {_p2(blk.fixed_sum or Fraction(0))} "
                     f"(not normalised)")
        n += 1
    return n


def _norm(x: Fraction) -> str:
    if x == 0:
        return "0"
    ax = abs(x)
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    if Fraction(2) ** e > ax:
        e -= 1
    return f"{'-' if x < 0 else ''}{float(ax / Fraction(2) ** e):.17g} * 2^{e}"


def _decomp(v: float, fmt) -> tuple[int, int]:
    s, e = _ops.decompose_one(float(v), fmt.man_bits, fmt.emin, False)
    return int(s), int(e)


def explain(a, b, c: float = 0.0, model: Model | None = None, *, scale_a=None, scale_b=None) -> Trace:
    """Step-by-step trace of d = unit(a, b, c) for a :class:`Model` (Xie et al. 2025
    Algorithms 2-11; walk-through style of Valpey et al. 2025, under Table 5).

    ``a``, ``b``: equal-length sequences of values of ``model.in_format``; ``c`` a
    value of ``model.out_format``.  K is consumed in blocks of L, zero-padded.

    ``scale_a``, ``scale_b``: only for the scaled kinds (``st-fdpa``, ``gst-fdpa``),
    the block scale factors of this row of A and this column of B, as
    ``workbench.gemm`` takes them for a 1 x K by K x 1 product: ceil(K / k_block)
    values each (a sequence, or ``gemm``'s (1, nb) / (nb, 1) arrays), representable
    in ``model.scale_format``; element k is scaled by ``scale_a[k // k_block]`` and
    ``scale_b[k // k_block]``."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a workbench Model/Preset, got {type(model).__name__}")
    op = operation(model.kind)
    a = np.asarray(a, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.size} and {b.size}")
    _formats.check_representable(a, model.in_fmt, "a")
    _formats.check_representable(b, model.formats[1], "b")    # B's own format where the kind reads one
    c = float(_formats.check_representable(np.array([c], float), model.out_fmt, "c")[0])
    scaled = op.scaled
    sa = sb = None
    if scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"model kind {model.kind!r} needs scale_a and scale_b (block scale factors)")
        nb = -(-a.size // model.k_block)
        sa = np.asarray(scale_a, dtype=float).reshape(-1)
        sb = np.asarray(scale_b, dtype=float).reshape(-1)
        if sa.size != nb or sb.size != nb:
            raise ValueError(f"scale_a and scale_b must each hold ceil(K / k_block) = {nb} values "
                             f"(K={a.size}, k_block={model.k_block}); got {sa.size} and {sb.size}")
        sf = cast(str, model.scale_format)  # scaled parameter classes require it
        sa = _formats.check_representable(sa, sf, "scale_a")
        sb = _formats.check_representable(sb, sf, "scale_b")
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"scale_a/scale_b given but model kind {model.kind!r} takes no scale factors")
    L = op.block_size(model)
    K = max(1, a.size)
    pad = (-K) % L
    ap = np.concatenate([a, np.zeros(pad + (K - a.size))])
    bp = np.concatenate([b, np.zeros(pad + (K - b.size))])
    late_c = op.late_c(model)
    d = 0.0 if late_c else c     # a late c waits until the chain is done
    blocks = []
    for i in range(0, ap.size, L):
        blk = op.explain_block(i // L, i, a.size, ap[i:i + L], bp[i:i + L], d, model, sa, sb)
        blocks.append(blk)
        d = blk.result
    if late_c:
        out = model.out_fmt
        r = float(exact_add(d, c, out.p, out.emin, out.emax, _ops.MODE_CODES[model.late_rounding],
                            model.flush_output_subnormals))
        blocks.append(Block(index=ap.size, c_in=d, result=r, label="c added late",
                            rounding=f"d + c, {model.late_rounding.upper()} to {out.name}"))
        d = r
    d = float(op.finish(model, np.array([d]))[0])     # the unit's sign rule for zeros, as gemm's outputs get it
    scales = {"scale_a": tuple(sa.tolist()), "scale_b": tuple(sb.tolist())} if sa is not None and sb is not None else {}
    return Trace(model=model, a=tuple(a.tolist()), b=tuple(b.tolist()), c=c, blocks=blocks, value=d, **scales)


__all__ = ["explain", "Trace", "Block", "Term", "EXPLAINED_KINDS", "explained_kinds"]
