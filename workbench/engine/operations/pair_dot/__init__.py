"""The CPU bf16 pair units (x86 VDPBF16PS/TDPBF16PS, Arm BFDOT/BFMMLA): one folder, as
every operation (:mod:`workbench.engine.operations`)."""
from __future__ import annotations

from .operation import PAIR_DOT_OPERATION, PAIR_RULES, PairDot, PairDotParams

__all__ = ["PairDot", "PairDotParams", "PAIR_RULES", "PAIR_DOT_OPERATION"]
