"""Compile the engine's kernel families before the tests, in two processes at once.

Numba compiles each kernel on its first call and caches the machine code on disk
(``cache=True``); on a cold cache the default test run spends most of its time in that
compilation, one kernel after another on one core.  ``tests/conftest.py`` runs this
module twice in parallel at the start of a session (``python tests/warm_kernels.py 1``
and ``... 2``), each calling :func:`workbench.gemm` (a small product, which takes the
one-call path, and one past ``SMALL_WORK``, which takes the lane kernels) and the
dot-product path on one preset per kind, so the machine's two cores compile at once and
the tests then load the kernels from the cache (compiled once, not once per xdist
worker).  On a warm cache it costs the two imports.  The results are not checked here:
the tests check them.
"""
from __future__ import annotations

import sys
from pathlib import Path

# the checkout's own package, as the tests import it (pytest's pythonpath = ["."]), not whichever
# one an editable install points to (the compiled code is shared by content either way:
# workbench/_runtime/compile_cache.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from compile_log import install_from_env  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.numbers import exact  # noqa: E402
from workbench.engine import core  # noqa: E402

#: Presets whose kernels each half compiles: the halves' compile times are about equal
#: (measured with ``benchmarks/bench_first_run.py --tests``, which logs every compilation;
#: the TR-/GTR-FDPA kernels of CDNA3 are the costliest).
GROUPS = {
    "1": [("volta", "fp16", "fp32"), ("hopper", "fp8_e4m3", "fp32"), ("ampere", "fp64", "fp64"),
          ("cdna1", "fp32", "fp32"), ("blackwell", "fp4_e2m1", "fp32", "mx"),
          ("blackwell", "fp4_e2m1", "fp32", "nvfp4"), ("cdna1", "fp16", "fp32"),
          # an E-FDPA unit off the binary64 lanes (fp16 output, RZ): the integer lane kernels
          # the probes' searches and the custom-unit tests reach
          {"kind": "e-fdpa", "in_format": "fp16", "out_format": "fp16", "L": 4, "rounding": "rz"}],
    "2": [("cdna2", "fp16", "fp32"), ("cdna3", "fp16", "fp32"), ("cdna3", "fp8_e4m3fnuz", "fp32")],
}


def _shapes(model) -> list[tuple[int, int, int]]:
    L = getattr(model, "k_block", None) or model.L
    # the one-call path of small products, then past SMALL_WORK and the lane kernels' width
    return [(3, 2 * L + 1, 5), (24, max(3 * L, 40), 48)]


def warm(group: str) -> None:
    rng = np.random.default_rng(0)
    for spec in GROUPS[group]:
        model = wb.Model(**spec) if isinstance(spec, dict) else wb.preset(*spec)
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
    if group == "1":
        exact.gemm(rng.standard_normal((8, 40)), rng.standard_normal((40, 8)))


if __name__ == "__main__":
    install_from_env(f"warm-up {sys.argv[1]}")
    warm(sys.argv[1])
