"""Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.

The top level re-exports the public API.  Number formats and rounding
(:mod:`workbench.formats`) load at import; everything else (the engine, presets,
exact references, sweeps, probes) loads on first use, so ``import workbench`` stays
light and pulls in no optional back end.
"""

from __future__ import annotations

import importlib
from typing import Any

from .formats import (
    ROUNDING_MODES,
    FloatFormat,
    check_representable,
    format,
    format_table,
    list_formats,
    from_bits,
    is_representable,
    round,
    to_bits,
)

__version__ = "0.1.0"

# Public names defined in submodules that load on first use: name -> module.  The
# modules are not named after the functions (``workbench.gemm`` is a function, so
# its module is ``workbench.matmul``): importing a submodule binds its name on the
# package and would shadow a function of the same name.
_LAZY_ATTRIBUTES: dict[str, str] = {
    "preset": "workbench.catalogue",
    "presets": "workbench.catalogue",
    "custom_model": "workbench.catalogue",
    "gemm": "workbench.matmul",
    "explain": "workbench.engine",
    "discriminate": "workbench.discrimination",
    "find_worse": "workbench.discrimination",
}
_LAZY_SUBMODULES = {"exact", "metrics", "bounds", "engine", "sweep", "probes", "cli", "torch"}

__all__ = [
    "ROUNDING_MODES",
    "FloatFormat",
    "check_representable",
    "format",
    "format_table",
    "list_formats",
    "from_bits",
    "is_representable",
    "round",
    "to_bits",
    *_LAZY_ATTRIBUTES,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"workbench.{name}")
    module = _LAZY_ATTRIBUTES.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
