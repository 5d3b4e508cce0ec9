"""E-FDPA (Xie et al. 2025 Algorithm 6, AMD CDNA1): its operation (:mod:`.operation`:
parameters, validation, dispatch, bound terms, probing hints).  Its kernels, trace step
and CUDA kernel are the AMD family's (:mod:`workbench.engine.operations.amd_fdpa`, kind
code ``KIND_E``); its NaN rule is :func:`workbench.engine.nans.efdpa_nan`."""
from .operation import EFDPA, EFDPA_OPERATION, EFDPAParams

__all__ = ["EFDPA", "EFDPAParams", "EFDPA_OPERATION"]
