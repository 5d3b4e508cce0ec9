"""Studies: what the notebooks share (:mod:`~workbench.studies.notebook_support`), ``workbench
reproduce`` (:mod:`~workbench.studies.reproduce`) and the interactive explorer - the top
layer, which nothing else in the package imports."""
