"""The elementary operations of the engine, one folder each (its parameters, kernels,
trace step and CUDA kernel), registered in :data:`workbench.engine.model.OPERATIONS`
when imported (Xie et al. 2025, Section 4.1, Table 1); ``amd_fdpa/`` is the base that
E-FDPA and TR-/GTR-FDPA share.  See ``docs/architecture.md`` ("One folder per
operation") for the layout and how to add one."""
from __future__ import annotations

from .efdpa import EFDPA, EFDPAParams
from .fma import FMAChain, FMAParams
from .ftz_addmul import FTZAddMul, FTZAddMulParams
from .stfdpa import STFDPA, STFDPAParams  # registered before GST-FDPA, as the kinds were listed
from .gstfdpa import GSTFDPA, GSTFDPAParams
from .tfdpa import TFDPA, TFDPAParams
from .trfdpa import GTRFDPA, TRFDPA, GTRFDPAParams, TRFDPAParams
from .pair_dot import PairDot, PairDotParams
from .int_mma import IntMMA, IntMMAParams

__all__ = ["TFDPA", "TFDPAParams", "FMAChain", "FMAParams", "EFDPA", "EFDPAParams", "FTZAddMul",
           "FTZAddMulParams", "TRFDPA", "GTRFDPA", "TRFDPAParams", "GTRFDPAParams", "STFDPA", "STFDPAParams", "GSTFDPA",
           "GSTFDPAParams", "PairDot", "PairDotParams", "IntMMA", "IntMMAParams"]
