"""The processor target of the compiled kernels: 512-bit vectors where the CPU has them.

LLVM tunes Intel's AVX-512 server cores (Skylake-SP through Emerald Rapids) to prefer 256-bit
vectors (its ``prefer-256-bit`` tuning, chosen for the clock drop of 512-bit instructions on
Skylake-SP), so numba's loops over lanes use half the vector width the CPU offers.  The
engine's lane kernels are integer code that runs whole vectors (32-bit terms, 16 lanes to a
512-bit vector), and with the preference removed whole GEMMs ran 1.2-1.5x faster on an
Emerald Rapids machine (``benchmarks/README.md``, "The performance diary: facts measured on the 2-core development
machine").  :func:`configure`, called by
``import workbench`` before numba loads, sets ``NUMBA_CPU_FEATURES`` to the host's features
without that preference.  It changes no result (the kernels' arithmetic is integer and
exact; floating-point loops are not reordered without ``fastmath``), only code generation,
and numba keys its cache by these features.

It leaves the choice to the user when ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES`` is set,
and does nothing when ``WORKBENCH_VECTOR_WIDTH=256`` is set or the CPU has no AVX-512.  It
also reaches the user's own numba code in the same process, and child processes inherit it
(sweep workers).  Where numba was imported first (it reads its settings at import), numba's
settings are read again.  Where numba built its code generator before ``import workbench`` (it
does so at the first ``@njit`` decoration, in any module), that generator keeps the features it
started with, and :func:`configure` leaves everything as it is.
"""
from __future__ import annotations

import os
import sys

#: The tuning feature that keeps LLVM's vectoriser at 256 bits on AVX-512 cores.
PREFER_256 = "prefer-256-bit"


def wide_features(host_features: str) -> str | None:
    """``host_features`` (LLVM's ``+feat,-feat`` list) with 512-bit vectors preferred, or None
    when the host has no AVX-512 (nothing to gain)."""
    features = [f for f in host_features.split(",") if f and f[1:] != PREFER_256]
    if "+avx512f" not in features:
        return None
    return ",".join(features + ["-" + PREFER_256])


def configure() -> str | None:
    """Set ``NUMBA_CPU_FEATURES`` for 512-bit vectors (see the module docstring); returns the
    features set, or None where it left numba's choice alone."""
    env = os.environ
    if "NUMBA_CPU_NAME" in env or "NUMBA_CPU_FEATURES" in env or env.get("WORKBENCH_VECTOR_WIDTH") == "256":
        return None
    if numba_codegen_built():
        return None
    try:
        from llvmlite import binding
        host = binding.get_host_cpu_features().flatten()
    except (ImportError, RuntimeError):     # no llvmlite, or a host LLVM cannot describe
        return None
    features = wide_features(host)
    if features is not None:
        env["NUMBA_CPU_FEATURES"] = features
        config = sys.modules.get("numba.core.config")
        if config is not None:      # numba imported first read its settings then: read them again
            config.reload_config()
    return features


def numba_codegen_built() -> bool:
    """Whether numba's CPU target already holds its code generator (built at the first
    ``@njit`` decoration of the process), whose features no setting changes any more."""
    registry = sys.modules.get("numba.core.registry")
    target = getattr(registry, "cpu_target", None)
    return target is not None and "_toplevel_target_context" in vars(target)


__all__ = ["PREFER_256", "wide_features", "configure", "numba_codegen_built"]
