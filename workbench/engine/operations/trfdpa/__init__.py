"""TR-FDPA and GTR-FDPA (Xie et al. 2025 Algorithms 10-11, Table 7, AMD CDNA3): their
operations (:mod:`.operation`: parameters, validation, dispatch, bound terms, probing
hints).  Their kernels, trace step and CUDA kernel are the AMD family's
(:mod:`workbench.engine.operations.amd_fdpa`, kind codes ``KIND_TR`` and ``KIND_GTR``);
their NaN is canonical."""
from .operation import GTRFDPA, GTRFDPA_OPERATION, TRFDPA, TRFDPA_OPERATION, GTRFDPAParams, TRFDPAParams

__all__ = ["TRFDPA", "GTRFDPA", "TRFDPAParams", "GTRFDPAParams", "TRFDPA_OPERATION", "GTRFDPA_OPERATION"]
