"""Conformance vectors: bit-exact reference data other simulators and libraries check themselves against.

* :mod:`~workbench.conformance.layout` - the on-disk layout (``.npz`` files of bit patterns and a
  JSON manifest with the SHA-256 of every file), written and read back with its checks;
* :mod:`~workbench.conformance.unitvectors` - dot products of a matrix unit (a catalogue preset, a
  unit file) on the input kinds that find differences, exported and re-run (``workbench vectors``);
* :mod:`~workbench.conformance.scales` - the scale-rounding suite: MX E8M0 scale rules x element
  formats and NVFP4's two-level scales on blocks at every edge;
* :mod:`~workbench.conformance.libraries` - the same quantisation by torchao, pychop, ml_dtypes and
  MMA-Sim's scale decoding, for the quantisers' discrepancy table.

The layout is documented in docs/guide/vectors.md, with a reader in plain numpy.
"""
