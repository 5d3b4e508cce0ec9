"""Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.

The top level re-exports the public API.  Number formats and rounding
(:mod:`workbench.numbers.formats`) load at import; every other name loads from its module on
first use (``_ON_FIRST_USE`` below), so that ``import workbench`` and the command line
stay light and pull in no optional back end.  Type checkers and IDEs read the same
names from the ``TYPE_CHECKING`` imports, which a test keeps equal to that table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__  # set in workbench/_version.py only

from ._runtime import compile_cache, cpu_target

cpu_target.configure()     # before numba loads (formats imports it): 512-bit vectors where the CPU has them
compile_cache.install()    # before any kernel is defined: compiled code keyed by content, not path

from .numbers.formats import (  # noqa: E402
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
    from .matmul import bounds
    from . import cli, engine, probes, sweep, torch, units
    from .numbers import exact, inputs, metrics
    from .units import schedules
    from .units.catalogue import Preset, custom_model, preset, presets
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
    from .matmul.product import explain, gemm
    from .units.unitfile import load_unit, save_unit
    from .units.schedules import Schedule

_ENGINE_NAMES = ("Model", "Operation", "register", "Trace", "TFDPA", "TFDPAParams", "FMAChain", "FMAParams",
                 "EFDPA", "EFDPAParams", "FTZAddMul", "FTZAddMulParams", "TRFDPA", "TRFDPAParams", "GTRFDPA",
                 "GTRFDPAParams", "STFDPA", "STFDPAParams", "GSTFDPA", "GSTFDPAParams", "PairDot", "PairDotParams",
                 "IntMMA", "IntMMAParams")
# Public names defined in submodules that load on first use: name -> module.  The
# modules are not named after the functions (``workbench.gemm`` is a function, so
# its module is ``workbench.matmul.product``): importing a submodule binds its name on the
# package and would shadow a function of the same name.
_ON_FIRST_USE: dict[str, str] = {
    **{name: "workbench.engine" for name in _ENGINE_NAMES},
    "explain": "workbench.matmul.product",
    "Preset": "workbench.units.catalogue",
    "preset": "workbench.units.catalogue",
    "presets": "workbench.units.catalogue",
    "custom_model": "workbench.units.catalogue",
    "gemm": "workbench.matmul.product",
    "Schedule": "workbench.units.schedules",
    "discriminate": "workbench.discrimination",
    "find_worse": "workbench.discrimination",
    "save_unit": "workbench.units.unitfile",
    "load_unit": "workbench.units.unitfile",
}
#: the submodules the top level names (``workbench.exact``), each with the module it is
_SUBMODULES: dict[str, str] = {
    **{name: f"workbench.{name}" for name in ("cli", "engine", "probes", "sweep", "torch", "units")},
    **{name: f"workbench.numbers.{name}" for name in ("exact", "inputs", "metrics")},
    "bounds": "workbench.matmul.bounds",
    "schedules": "workbench.units.schedules",
}

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
        return importlib.import_module(_SUBMODULES[name])
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(module), name)   # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
