"""Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.

The top level re-exports the public API, imported explicitly: number formats and
rounding (:mod:`workbench.formats`), the engine's :class:`Model`, its elementary
operations and their parameter classes (:mod:`workbench.engine`), the presets
(:mod:`workbench.catalogue`), :func:`gemm` and :func:`explain`, and the exact
references, metrics and bounds.  Four parts load on first use so that ``import
workbench`` pulls in no optional back end and no higher layer: ``discriminate`` and
``find_worse`` (:mod:`workbench.discrimination`, which uses the ``algorithms``
package), and the submodules ``sweep``, ``probes``, ``cli`` and ``torch``.  Type
checkers and IDEs see them through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import bounds, engine, exact, formats, inputs, metrics
from .catalogue import Preset, custom_model, preset, presets
from .engine import (
    EFDPA,
    GSTFDPA,
    GTRFDPA,
    STFDPA,
    TFDPA,
    TRFDPA,
    EFDPAParams,
    FMAChain,
    FMAParams,
    FTZAddMul,
    FTZAddMulParams,
    GSTFDPAParams,
    GTRFDPAParams,
    Model,
    Operation,
    STFDPAParams,
    TFDPAParams,
    Trace,
    TRFDPAParams,
    explain,
    register,
)
from .formats import (
    ROUNDING_MODES,
    FloatFormat,
    check_representable,
    format,
    format_table,
    from_bits,
    is_representable,
    list_formats,
    round,
    to_bits,
)
from .matmul import gemm

if TYPE_CHECKING:
    from . import cli, probes, sweep, torch
    from .discrimination import discriminate, find_worse

__version__ = "0.1.0"

# Loaded on first use (see the module docstring): name -> module.  The modules are not
# named after the functions (``workbench.gemm`` is a function, its module is
# ``workbench.matmul``): importing a submodule binds its name on the package.
_ON_FIRST_USE: dict[str, str] = {
    "discriminate": "workbench.discrimination",
    "find_worse": "workbench.discrimination",
}
_SUBMODULES_ON_FIRST_USE = ("sweep", "probes", "cli", "torch")

__all__ = [
    # formats
    "ROUNDING_MODES", "FloatFormat", "check_representable", "format", "format_table", "list_formats",
    "from_bits", "is_representable", "round", "to_bits",
    # the engine: models, operations, traces
    "Model", "Operation", "register", "explain", "Trace",
    "TFDPA", "TFDPAParams", "FMAChain", "FMAParams", "EFDPA", "EFDPAParams", "FTZAddMul", "FTZAddMulParams",
    "TRFDPA", "TRFDPAParams", "GTRFDPA", "GTRFDPAParams", "STFDPA", "STFDPAParams", "GSTFDPA", "GSTFDPAParams",
    # presets and products
    "Preset", "preset", "presets", "custom_model", "gemm",
    # loaded on first use
    "discriminate", "find_worse",
    # submodules
    "bounds", "engine", "exact", "formats", "inputs", "metrics", "sweep", "probes", "cli", "torch",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES_ON_FIRST_USE:
        return importlib.import_module(f"workbench.{name}")
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
