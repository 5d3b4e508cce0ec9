"""Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.

The top level re-exports the public API.  Number formats and rounding
(:mod:`workbench.formats`) load at import; every other name loads from its module on
first use (``_ON_FIRST_USE`` below), so that ``import workbench`` and the command line
stay light and pull in no optional back end.  Type checkers and IDEs read the same
names from the ``TYPE_CHECKING`` imports, which a test keeps equal to that table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__  # set in workbench/_version.py only

from . import cpu_target

cpu_target.configure()     # before numba loads (formats imports it): 512-bit vectors where the CPU has them

from .formats import (  # noqa: E402
    ROUNDING_MODES,
    FloatFormat,
    IntFormat,
    check_representable,
    format,
    format_table,
    from_bits,
    is_representable,
    list_formats,
    round,
    to_bits,
)

if TYPE_CHECKING:
    from . import bounds, cli, engine, exact, inputs, metrics, probes, schedules, sweep, torch, units
    from .catalogue import Preset, custom_model, preset, presets
    from .discrimination import discriminate, find_worse
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
        IntMMA,
        IntMMAParams,
        Model,
        Operation,
        PairDot,
        PairDotParams,
        STFDPAParams,
        TFDPAParams,
        Trace,
        TRFDPAParams,
        register,
    )
    from .matmul import explain, gemm
    from .unitfile import load_unit, save_unit
    from .schedules import Schedule

_ENGINE_NAMES = ("Model", "Operation", "register", "Trace", "TFDPA", "TFDPAParams", "FMAChain", "FMAParams",
                 "EFDPA", "EFDPAParams", "FTZAddMul", "FTZAddMulParams", "TRFDPA", "TRFDPAParams", "GTRFDPA",
                 "GTRFDPAParams", "STFDPA", "STFDPAParams", "GSTFDPA", "GSTFDPAParams", "PairDot", "PairDotParams",
                 "IntMMA", "IntMMAParams")
# Public names defined in submodules that load on first use: name -> module.  The
# modules are not named after the functions (``workbench.gemm`` is a function, so
# its module is ``workbench.matmul``): importing a submodule binds its name on the
# package and would shadow a function of the same name.
_ON_FIRST_USE: dict[str, str] = {
    **{name: "workbench.engine" for name in _ENGINE_NAMES},
    "explain": "workbench.matmul",
    "Preset": "workbench.catalogue",
    "preset": "workbench.catalogue",
    "presets": "workbench.catalogue",
    "custom_model": "workbench.catalogue",
    "gemm": "workbench.matmul",
    "Schedule": "workbench.schedules",
    "discriminate": "workbench.discrimination",
    "find_worse": "workbench.discrimination",
    "save_unit": "workbench.unitfile",
    "load_unit": "workbench.unitfile",
}
_SUBMODULES = ("bounds", "cli", "engine", "exact", "inputs", "metrics", "probes", "schedules", "sweep", "torch",
               "units")

__all__ = [
    # formats (loaded at import)
    "ROUNDING_MODES", "FloatFormat", "IntFormat", "check_representable", "format", "format_table", "list_formats",
    "from_bits", "is_representable", "round", "to_bits",
    # the engine: models, elementary operations and their parameters, traces
    "Model", "Operation", "register", "explain", "Trace", "TFDPA", "TFDPAParams", "FMAChain", "FMAParams",
    "EFDPA", "EFDPAParams", "FTZAddMul", "FTZAddMulParams", "TRFDPA", "TRFDPAParams", "GTRFDPA", "GTRFDPAParams",
    "STFDPA", "STFDPAParams", "GSTFDPA", "GSTFDPAParams", "PairDot", "PairDotParams", "IntMMA", "IntMMAParams",
    # presets, products, discrimination
    "Preset", "preset", "presets", "custom_model", "gemm", "Schedule", "discriminate", "find_worse",
    # units saved as files
    "save_unit", "load_unit",
    # submodules
    "bounds", "cli", "engine", "exact", "inputs", "metrics", "probes", "schedules", "sweep", "torch", "units",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"workbench.{name}")
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(module), name)   # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
