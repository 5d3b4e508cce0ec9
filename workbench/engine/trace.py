"""The records of a step-by-step trace: :class:`Term` (one addend of a fused sum) and
:class:`Block` (one elementary operation).  Each operation builds its blocks
(:meth:`Operation.explain_block <workbench.engine.model.Operation.explain_block>`);
:func:`workbench.engine.explain.explain` strings them into a
:class:`~workbench.engine.explain.Trace`.  Plain data: this module imports nothing of
the engine."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction


@dataclass
class Term:
    """One addend of a fused sum: a product a_k*b_k (or c)."""
    label: str
    significand: Fraction      # unnormalised: in [1, 4) for normal products
    exponent: int | None       # None: a zero that takes no part in the maximum
    value: Fraction
    aligned: Fraction = Fraction(0)   # the term after alignment at e_max (with its sign)
    lost: Fraction = Fraction(0)      # value - aligned (bits shifted out)
    role: str = "product"             # "product", "c" (the accumulator term) or "group" (GST-FDPA)
    note: str = ""                    # printed after the product (e.g. the scale exponents it carries)


@dataclass
class Block:
    """One elementary operation (one block of L products and its c)."""
    index: int
    c_in: float
    terms: list[Term] = field(default_factory=list)
    e_max: int | None = None
    zero_exponent_set_max: bool = False
    F: int | None = None
    fixed_sum: Fraction | None = None
    stages: list[str] = field(default_factory=list)  # extra stages (TR/GTR, late c)
    normalised: str = ""
    rounding: str = ""
    result: float = 0.0
    special: str = ""
    pre: list[str] = field(default_factory=list)        # stages before the fused sum (flushes, scales)
    groups: list["Block"] = field(default_factory=list)  # interleaved groups, each a fused sum of its own
    label: str = ""                                      # of a group: which elements it takes


__all__ = ["Term", "Block"]
