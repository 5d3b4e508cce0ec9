"""Black-box probing: recover a matrix unit's arithmetic from its outputs alone.

The probes of three papers, generic in the formats, on any black box ``f(A, B, C) -> D``:

* Fasi et al. 2021 (PeerJ CS 7:e330) - :mod:`workbench.probes.fasi`;
* Khattak & Mikaitis 2025 - generalised vectors (:mod:`~workbench.probes.vectors`), block
  size, neab, c early/late, interleaving, test-vector authentication (Section V-A,
  :mod:`~workbench.probes.authenticate`);
* Xie et al. 2025 (MMA-Sim) - CLFP: FPRev summation trees, fused-sum precision,
  rounding and tie rule, zero-operand exponent, randomised verification
  (:mod:`~workbench.probes.features`, :mod:`~workbench.probes.infer`).

``infer(black_box, in_format, out_format)`` runs them and returns an
:class:`InferenceResult` with ``.params`` (the names of :func:`workbench.custom_model`),
``.model``, ``.verified`` and ``.counterexample``.  Real targets (numpy, torch, ml_dtypes,
cupy) are in :mod:`~workbench.probes.targets`; nothing optional is imported here.
"""
from __future__ import annotations

from .blackbox import BlackBox, as_black_box, from_model
from .infer import Counterexample, InferenceResult, infer, verify

__all__ = ["BlackBox", "as_black_box", "from_model", "infer", "verify", "InferenceResult", "Counterexample",
           "fasi_suite", "authenticate", "target"]


def __getattr__(name: str):  # lazily: these modules pull in more of the package
    if name == "fasi_suite":
        from .fasi import fasi_suite
        return fasi_suite
    if name == "authenticate":
        from .authenticate import authenticate
        return authenticate
    if name == "target":
        from .targets import target
        return target
    raise AttributeError(f"module 'workbench.probes' has no attribute {name!r}")
