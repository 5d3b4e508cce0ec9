"""FTZ-AddMul (Xie et al. 2025 Algorithms 1-2, AMD CDNA2), all of it in this folder:
:mod:`.operation` (parameters, validation, dispatch, bound terms, probing hints),
:mod:`.kernels` (the compiled CPU kernels), :mod:`.explain` (its trace step) and
:mod:`.cuda` (its CUDA kernel, loaded on first use).  Its NaN rules are the ordinary
float operations' (:mod:`workbench.engine.nans`, shared with E-FDPA)."""
from .operation import FTZ_ADDMUL_OPERATION, FTZAddMul, FTZAddMulParams, lanes_exact, run_lanes

__all__ = ["FTZAddMul", "FTZAddMulParams", "FTZ_ADDMUL_OPERATION", "lanes_exact", "run_lanes"]
