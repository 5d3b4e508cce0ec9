"""The operation protocol and the registry of elementary operations.

An *elementary operation* is the arithmetic a matrix unit applies to one block of
products and an accumulator (Xie et al. 2025, Section 4.1, Table 1: T-FDPA, FMA
chain, E-FDPA, FTZ-AddMul, TR-/GTR-FDPA, ST-/GST-FDPA).  Each lives in one module of
:mod:`workbench.engine.operations` as an :class:`Operation` subclass that holds

* ``params``: its parameter dataclass - only the parameters it reads, with the
  papers' names, validated on construction;
* ``run``: its dispatch to the compiled kernels (and ``prepare`` when it wants its
  operands in another form than float64 ``A`` and ``B^T``);
* ``explain_block``: its step of :func:`workbench.engine.explain.explain`;
* ``error_terms``: its error sources of Xie et al. Table 9 (read by
  :mod:`workbench.bounds`) and ``bound_shape``: the block-FMA bound it obeys;
* probing hints (``windowed``, ``has_zero_exponent``), read by :mod:`workbench.probes`.

The engine core, ``explain``, ``bounds``, the probes and the catalogue find an
operation by its ``kind`` in :data:`OPERATIONS`; :func:`register` adds one (the
built-in ones register when :mod:`workbench.engine` is imported).  See
``docs/architecture.md`` for the protocol with a worked example.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from ..gate import unknown_name
from .operands import float_operands

if TYPE_CHECKING:
    from .explain import Block
    from .model import Model
    from .operands import Operands


@dataclass(frozen=True)
class BoundShape:
    """The block-FMA bound an operation obeys (:func:`workbench.bounds.block_fma_bound`):
    ``block`` products per fused step, ``F`` fractional bits of the alignment (None: the
    block is summed exactly), ``rounding`` of the block result."""

    block: int
    F: int | None
    rounding: str


@dataclass(frozen=True)
class ErrorTerm:
    """One error source of Xie et al. Table 9 without the operation's name:
    ``coefficient x 2^(reference + offset)``, ``reference`` one of ``"e_max"``,
    ``"e_result"`` or ``"absolute"`` (2^offset), as :class:`workbench.bounds.ErrorSource`."""

    source: str
    expression: str
    coefficient: float
    reference: Literal["e_max", "e_result", "absolute"]
    offset: int


class Operation:
    """The protocol of an elementary operation; subclasses set the class attributes
    and override what they do differently.  Instances are stateless."""

    #: Name of the operation as ``Model.kind`` spells it.
    kind: ClassVar[str] = ""
    #: Where the papers define it.
    citation: ClassVar[str] = ""
    #: Parameter dataclass: fields named as :class:`~workbench.engine.model.Model`'s.
    params: ClassVar[type]
    #: NaN results carry an operand's payload (ordinary float arithmetic, MMA-Sim 2.1.1)
    #: instead of the canonical NaN of the fused operations (Xie Section 4.2).
    propagates_nan: ClassVar[bool] = False
    #: Takes block scale factors (``scale_a``/``scale_b`` of ``gemm``).
    scaled: ClassVar[bool] = False
    #: Probing hints: the result depends on an alignment window of F bits (F can be
    #: refined by verification, Xie Section 3.1.4) ...
    windowed: ClassVar[bool] = False
    #: ... and zero terms carry an exponent into it (``zero_exponent`` can be searched).
    has_zero_exponent: ClassVar[bool] = False
    #: Has a row kernel for batches of independent dot products (:meth:`dots`).
    has_row_kernel: ClassVar[bool] = False
    #: The compiled kernels it shares with others (``"t-fdpa"``: kernels.py; ``"amd"``:
    #: fdpa_amd.py and FTZ-AddMul), so that both families can compile in parallel
    #: (:mod:`workbench.sweep.warmup`).
    kernel_family: ClassVar[str] = "t-fdpa"
    #: Accumulations (:data:`workbench.engine.core.ACCUMULATIONS`) it implements.
    accumulations: ClassVar[tuple[str, ...]] = ("chain",)

    # ------------------------------------------------------------ parameters
    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the parameters the operation reads (its dataclass's fields)."""
        return tuple(f.name for f in fields(self.params))

    def make_params(self, model: "Model") -> Any:
        """The operation's parameter dataclass built from the model's fields (validated)."""
        return self.params(**{f.name: getattr(model, f.name) for f in fields(self.params)})

    def check_formats(self, model: "Model") -> None:
        """Raise ValueError when the formats of ``model`` do not suit the operation."""

    def block_size(self, model: "Model") -> int:
        """Elements consumed by one operation (one block of a trace)."""
        return int(model.L)

    def late_c(self, model: "Model") -> bool:
        """Whether c is added once after all the blocks (not inside each block's
        operation); :func:`~workbench.engine.explain.explain` shows that addition."""
        return False

    # ------------------------------------------------------------ arithmetic
    def prepare(self, model: "Model", A: np.ndarray, B: np.ndarray) -> "Operands":
        """A and B checked against the input format, as float64 ``A`` and ``B^T``."""
        return float_operands(model, A, B)

    def run(self, model: "Model", ops: "Operands", acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """D = unit(A, B, C) on ``acc`` (C on entry); returns D (``acc`` or a new array)."""
        raise NotImplementedError(f"{type(self).__name__}.run")

    def dots(self, model: "Model", a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """``acc[r] <- unit(a[r, :], b[r, :], acc[r])`` on the row kernel (operations with
        :attr:`has_row_kernel`; :func:`workbench.engine.core.dots` runs the others one
        1 x K x 1 product per row)."""
        raise NotImplementedError(f"{type(self).__name__} has no row kernel")

    def check_run(self, accumulation: str, promote_every: int | None,
                  scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> None:
        """The checks every operation shares: scale factors only for scaled ones, an
        accumulation it implements, ``promote_every`` only with ``"promote"``."""
        if not self.scaled and (scale_a is not None or scale_b is not None):
            raise ValueError(f"scale_a/scale_b are only used by scaled models (st-fdpa, gst-fdpa), not {self.kind!r}")
        if self.scaled and (scale_a is None or scale_b is None):
            raise ValueError("scaled models need scale_a and scale_b")
        if accumulation not in self.accumulations:
            raise ValueError(f"accumulation={accumulation!r} is not implemented for {self.kind!r} models "
                             f"(expected one of {self.accumulations})")
        if accumulation != "promote" and promote_every is not None:
            raise ValueError("promote_every is only used with accumulation='promote'")

    # ------------------------------------------------------------ explanation and bounds
    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: "Model", scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> "Block":
        """The trace of block ``index``: elements ``start ...`` (``a``, ``b``) of the
        zero-padded row of K values, accumulator ``d``; the scale factors of the whole
        row for scaled operations."""
        raise NotImplementedError(f"{type(self).__name__}.explain_block")

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...] | None:
        """Error sources of Xie et al. Table 9 besides the output rounding; None when
        the table has no row for the operation."""
        return None

    def includes_output_rounding(self) -> bool:
        """Whether the output rounding is one of the Table 9 sources."""
        return True

    def bound_shape(self, model: "Model") -> BoundShape | None:
        """The block-FMA bound of the operation, None when it has none here."""
        return None


#: The registered operations, by ``kind``.
OPERATIONS: dict[str, Operation] = {}


def register(op: Operation, *, replace: bool = False) -> Operation:
    """Add ``op`` to :data:`OPERATIONS` under ``op.kind``; a kind already registered is
    refused unless ``replace``.  Returns ``op``."""
    if not isinstance(op, Operation) or not op.kind:
        raise TypeError(f"{op!r}: expected an Operation instance with a kind")
    if op.kind in OPERATIONS and not replace:
        raise ValueError(f"kind={op.kind!r} is already registered ({type(OPERATIONS[op.kind]).__name__})")
    OPERATIONS[op.kind] = op
    return op


def unregister(kind: str) -> None:
    """Remove a registered operation (tests that register their own)."""
    OPERATIONS.pop(kind, None)


def operation(kind: str) -> Operation:
    """The registered operation of ``kind``; a ValueError lists the known ones."""
    try:
        return OPERATIONS[kind]
    except (KeyError, TypeError):
        raise unknown_name("kind", kind, tuple(OPERATIONS),
                           extra=" (the elementary operations of Xie et al.)") from None


def kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order."""
    return tuple(OPERATIONS)


__all__ = ["Operation", "BoundShape", "ErrorTerm", "OPERATIONS", "register", "unregister", "operation", "kinds"]
