"""The FMA chain (Xie et al. 2025 Algorithm 4), all of it in this folder:
:mod:`.operation` (parameters, validation, dispatch, bound terms, probing hints),
:mod:`.kernels` (the compiled CPU kernels), :mod:`.explain` (its trace step) and
:mod:`.cuda` (its CUDA kernel, loaded on first use).  Its NaN rule is
:func:`workbench.engine.nans.fma_nan` (MMA-Sim's ``std::fma``, beside the other NaN
rules it builds on); a late c goes through the shared IEEE adder
(:func:`workbench.engine.kernels.add_late`)."""
from .operation import FMA_OPERATION, FMAChain, FMAParams

__all__ = ["FMAChain", "FMAParams", "FMA_OPERATION"]
