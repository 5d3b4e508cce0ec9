"""Registry: algorithms by name, so sweeps and notebooks can name them as strings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from typing import Any

import numpy as np

from .bf16xn import bf16xn
from .cutlass import cutlass_xtf32
from .markidis import markidis
from .multiword import multiword
from .ootomo_yokota import ootomo_yokota
from .ozaki import ozaki
from .ozaki_fp8 import ozaki1_fp8, ozaki2_fp8
from .refinement import RefinementResult, gmres_ir, lu_ir

#: name -> f(A, B, C=None, *, model, **params) -> float64 ndarray
#: (with ``return_words=True`` they return (D, words) instead; the Ozaki FP8 schemes' words
#: include what they decided: moduli/slices, scalings, fallback, unit exactness)
ALGORITHMS: Mapping[str, Callable[..., Any]] = MappingProxyType({
    "markidis": markidis,
    "ootomo_yokota": ootomo_yokota,
    "multiword": multiword,
    "cutlass_xtf32": cutlass_xtf32,
    "bf16xn": bf16xn,
    "ozaki": ozaki,
    "ozaki1_fp8": ozaki1_fp8,
    "ozaki2_fp8": ozaki2_fp8,
})

#: Linear solvers by name: f(A, b, *, model, **params) -> RefinementResult.
SOLVERS: Mapping[str, Callable[..., RefinementResult]] = MappingProxyType({
    "lu_ir": lu_ir,
    "gmres_ir": gmres_ir,
})


def available() -> list[str]:
    """The registered algorithm names, sorted."""
    return sorted(ALGORITHMS)


def get(name: str) -> Callable[..., np.ndarray]:
    """The algorithm called ``name`` (see :func:`available`); ValueError lists the names."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown algorithm {name!r}; available: {', '.join(available())}") from None
