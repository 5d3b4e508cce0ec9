"""T-FDPA (Xie et al. 2025 Algorithm 7; Khattak & Mikaitis 2025, Section IV-C: every
NVIDIA preset), all of it in this folder: :mod:`.operation` (parameters, validation,
dispatch, bound terms, probing hints), :mod:`.kernels` (the compiled CPU kernels: one
output at a time, lanes, rows), :mod:`.vector_chain` (its driver of the shared
explicit-vector chain), :mod:`.explain` (its trace step) and :mod:`.cuda` (its CUDA
kernel, loaded on first use).  ST-FDPA (:mod:`workbench.engine.operations.stfdpa`)
runs on these kernels."""
from .operation import (TFDPA, TFDPA_OPERATION, TFDPAParams, accumulation_params, b_padded, fused_sum_terms,
                        kernel_params, lane_layout, run_tfdpa)

__all__ = ["TFDPA", "TFDPAParams", "TFDPA_OPERATION", "kernel_params", "accumulation_params", "lane_layout", "b_padded",
           "run_tfdpa", "fused_sum_terms"]
