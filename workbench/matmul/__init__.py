"""Products on a unit: :func:`~workbench.matmul.product.gemm` and
:func:`~workbench.matmul.product.explain` (a unit, or a library's schedule over one, on
whole matrices), and the a-priori error bounds of :mod:`workbench.matmul.bounds`."""
