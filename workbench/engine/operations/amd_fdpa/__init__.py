"""What E-FDPA, TR-FDPA and GTR-FDPA (Xie et al. 2025 Algorithms 6, 10 and 11: AMD CDNA1
and CDNA3) share: one compiled driver with a kind code (:mod:`.kernels`: the exact
products, the block maximum, the specials, the row and lane tiling are the same, only
the block's sum differs), one trace step (:mod:`.explain`), one CUDA kernel
(:mod:`.cuda`) and its launch (:mod:`.gpu`), and the operation base class
:class:`~.operation.AMDFused` (row kernel, the probes' screen, the CUDA launch, by kind
code).  It registers no operation: the
operations are in :mod:`workbench.engine.operations.efdpa` and
:mod:`workbench.engine.operations.trfdpa` (TR- and GTR-FDPA), which build on it
(docs/architecture.md says why the family shares a base rather than each folder a
copy)."""
