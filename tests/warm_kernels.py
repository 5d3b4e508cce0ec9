"""Compile the engine's kernel families before the tests, in two processes at once.

Numba compiles each kernel on its first call and caches the machine code on disk
(``cache=True``); on a cold cache the default test run spends most of its time in that
compilation, one kernel after another on one core.  ``tests/conftest.py`` runs this
module twice in parallel at the start of a session (``python tests/warm_kernels.py
nvidia`` and ``... amd``), each calling :func:`workbench.gemm` and the dot-product path
on one preset per kind, so the machine's two cores compile at once and the tests then
load the kernels from the cache.  On a warm cache it costs the two imports.  The
results are not checked here: the tests check them.
"""
from __future__ import annotations

import sys

import numpy as np
from compile_log import install_from_env

import workbench as wb
from workbench import exact
from workbench.engine import core

#: Presets whose kernels each half compiles (the split roughly halves compile time).
GROUPS = {
    "nvidia": [("volta", "fp16", "fp32"), ("hopper", "fp8_e4m3", "fp32"), ("ampere", "fp64", "fp64"),
               ("cdna1", "fp32", "fp32"), ("blackwell", "fp4_e2m1", "fp32", "mx"),
               ("blackwell", "fp4_e2m1", "fp32", "nvfp4")],
    "amd": [("cdna1", "fp16", "fp32"), ("cdna2", "fp16", "fp32"), ("cdna3", "fp16", "fp32"),
            ("cdna3", "fp8_e4m3fnuz", "fp32")],
}


def _shapes(model) -> list[tuple[int, int, int]]:
    L = getattr(model, "k_block", None) or model.L
    return [(3, 2 * L + 1, 5), (8, 3 * L, 40)]     # below and above the lane kernels' width


def warm(group: str) -> None:
    rng = np.random.default_rng(0)
    for spec in GROUPS[group]:
        model = wb.preset(*spec)
        for M, K, N in _shapes(model):
            A = wb.round(rng.standard_normal((M, K)), model.in_format)
            B = wb.round(rng.standard_normal((K, N)), model.in_format)
            C = wb.round(rng.standard_normal((M, N)), model.out_format)
            scales = {}
            if getattr(model, "k_block", None):
                nb = -(-K // model.k_block)
                scales = {"scale_a": np.ones((M, nb)), "scale_b": np.ones((nb, N))}
            wb.gemm(A, B, C, model=model, **scales)
            if not scales:
                wb.gemm(A, B, model=model)
                A[0, 0] = np.nan     # the special-value paths
                wb.gemm(A, B, C, model=model)
                n = max(M, N)
                a = wb.round(rng.standard_normal((n, K)), model.in_format)
                core.dots(model, a, a, np.zeros(n))
    if group == "nvidia":
        exact.gemm(rng.standard_normal((8, 40)), rng.standard_normal((40, 8)))


if __name__ == "__main__":
    install_from_env(f"warm-up {sys.argv[1]}")
    warm(sys.argv[1])
