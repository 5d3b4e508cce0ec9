"""ST-FDPA (Xie et al. 2025 Algorithm 8, the MX instructions), all of it in this folder:
:mod:`.operation` (parameters, validation, dispatch, bound terms, probing hints),
:mod:`.kernels` (the scale exponents added to the decomposed operands) and
:mod:`.explain` (its trace step).  Its arithmetic is T-FDPA's: it runs on the T-FDPA
kernels, CPU and CUDA, of :mod:`workbench.engine.operations.tfdpa`, the one operation
folder it imports."""
from .operation import STFDPA, STFDPA_OPERATION, STFDPAParams

__all__ = ["STFDPA", "STFDPAParams", "STFDPA_OPERATION"]
