"""The elementary operations of the engine, one module each, registered in
:data:`workbench.engine.model.OPERATIONS` when imported (Xie et al. 2025,
Section 4.1, Table 1).  See ``docs/architecture.md`` for how to add one."""
from __future__ import annotations

from .efdpa import EFDPA, EFDPAParams
from .fma import FMAChain, FMAParams
from .ftz_addmul import FTZAddMul, FTZAddMulParams
from .scaled import GSTFDPA, GSTFDPAParams, STFDPA, STFDPAParams
from .tfdpa import TFDPA, TFDPAParams
from .trfdpa import GTRFDPA, TRFDPA, GTRFDPAParams, TRFDPAParams

__all__ = ["TFDPA", "TFDPAParams", "FMAChain", "FMAParams", "EFDPA", "EFDPAParams", "FTZAddMul",
           "FTZAddMulParams", "TRFDPA", "GTRFDPA", "TRFDPAParams", "GTRFDPAParams", "STFDPA", "STFDPAParams", "GSTFDPA",
           "GSTFDPAParams"]
