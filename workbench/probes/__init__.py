"""Black-box probing: recover a matrix unit's arithmetic from its outputs alone.

The probes of three papers, generic in the formats, on any black box ``f(A, B, C) -> D``:

* Fasi et al. 2021 (PeerJ CS 7:e330) - :mod:`workbench.probes.fasi`;
* Khattak & Mikaitis 2025 - generalised vectors (:mod:`~workbench.probes.vectors`), block
  size, neab, c early/late, interleaving, test-vector authentication (Section V-A,
  :mod:`~workbench.probes.authentication`);
* Xie et al. 2025 (MMA-Sim) - CLFP: FPRev summation trees, fused-sum precision,
  rounding and tie rule, zero-operand exponent, randomised verification
  (:mod:`~workbench.probes.features`, :mod:`~workbench.probes.inference`).

``infer(black_box, in_format, out_format)`` runs them and returns an
:class:`InferenceResult` with ``.params`` (the names of :func:`workbench.custom_model`),
``.model``, ``.verified`` and ``.counterexample``.  Real targets (numpy, torch, ml_dtypes,
cupy) are in :mod:`~workbench.probes.targets`; nothing optional is imported here.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs read; the names load on first use below
    from .authentication import authenticate
    from .blackbox import BlackBox, as_black_box, from_model
    from .fasi import fasi_suite
    from .inference import Counterexample, InferenceResult, infer, verify
    from .targets import target

# name -> submodule; loaded on first use so that ``workbench.cli.probe`` (imported when
# the command line is built) pulls in neither the engine nor numba
_LAZY = {
    "BlackBox": "blackbox", "as_black_box": "blackbox", "from_model": "blackbox",
    "infer": "inference", "verify": "inference", "InferenceResult": "inference", "Counterexample": "inference",
    "fasi_suite": "fasi", "authenticate": "authentication", "target": "targets",
}
__all__ = ["BlackBox", "as_black_box", "from_model", "infer", "verify", "InferenceResult", "Counterexample",
           "fasi_suite", "authenticate", "target"]


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'workbench.probes' has no attribute {name!r}")
    return getattr(importlib.import_module(f"workbench.probes.{mod}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
