"""GST-FDPA (Xie et al. 2025 Algorithm 9, the NVFP4/MXFP4 k64 instructions), all of it
in this folder: :mod:`.operation` (parameters, validation, dispatch, bound terms,
probing hints), :mod:`.kernels` (the compiled CPU kernels), :mod:`.explain` (its trace
step) and :mod:`.cuda` (its CUDA kernel, loaded on first use).  Its bound terms are
the fused sum's of :mod:`workbench.engine.operations.tfdpa`."""
from .operation import GSTFDPA, GSTFDPA_OPERATION, GSTFDPAParams

__all__ = ["GSTFDPA", "GSTFDPAParams", "GSTFDPA_OPERATION"]
