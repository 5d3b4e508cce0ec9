"""The bit-accurate engine: operand decomposition, elementary operations, kernels.

Knows no device and no preset (those live in :mod:`workbench.catalogue`); it runs a
:class:`Model` - the arithmetic parameters of one matrix instruction.
"""
from __future__ import annotations

from .model import KINDS, PARAM_NAMES, ROUNDINGS, Model
from .core import ACCUMULATIONS, decompose, dots, run
from .explain import EXPLAINED_KINDS, Trace, explain

__all__ = ["Model", "KINDS", "PARAM_NAMES", "ROUNDINGS", "ACCUMULATIONS", "run", "dots", "decompose",
           "explain", "Trace", "EXPLAINED_KINDS"]
