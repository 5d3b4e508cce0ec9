"""The bit-accurate engine: operand decomposition, elementary operations, kernels.

Knows no device and no preset (those live in :mod:`workbench.units.catalogue`); it runs a
:class:`Model` - the arithmetic parameters of one matrix instruction - with the
elementary operation registered for its ``kind`` (:mod:`workbench.engine.model`,
one module per operation in :mod:`workbench.engine.operations`).
"""
from __future__ import annotations

from .model import ALIGNMENT_ROUNDINGS, KINDS, PARAM_NAMES, ROUNDINGS, Model
from .model import OPERATIONS, BoundShape, ErrorTerm, Operation, kinds, operation, register, unregister
from .core import ACCUMULATIONS, decompose, dots, run
from .explain import EXPLAINED_KINDS, Trace, explain
from .operations import (
    EFDPA,
    GSTFDPA,
    GTRFDPA,
    STFDPA,
    TFDPA,
    TRFDPA,
    EFDPAParams,
    FMAChain,
    FMAParams,
    FTZAddMul,
    FTZAddMulParams,
    GSTFDPAParams,
    GTRFDPAParams,
    IntMMA,
    IntMMAParams,
    PairDot,
    PairDotParams,
    STFDPAParams,
    TFDPAParams,
    TRFDPAParams,
)

__all__ = ["Model", "KINDS", "PARAM_NAMES", "ROUNDINGS", "ALIGNMENT_ROUNDINGS", "ACCUMULATIONS", "run", "dots",
           "decompose", "explain", "Trace", "EXPLAINED_KINDS", "Operation", "BoundShape", "ErrorTerm", "OPERATIONS",
           "register", "unregister", "operation", "kinds", "TFDPA", "TFDPAParams", "FMAChain", "FMAParams", "EFDPA",
           "EFDPAParams", "FTZAddMul", "FTZAddMulParams", "TRFDPA", "GTRFDPA", "TRFDPAParams", "GTRFDPAParams",
           "STFDPA", "STFDPAParams", "GSTFDPA", "GSTFDPAParams", "PairDot", "PairDotParams", "IntMMA",
           "IntMMAParams"]
