"""Task functions for the sweep tests (importable by worker processes as ``sweep_helpers``).

The inputs the tests use are fp8_e4m3 values with k <= 64, so ``A @ B`` in float64
is exact and the errors the sweep records are known in closed form.
"""

import os
import time

import numpy as np


def _log(kind: str) -> None:
    path = os.environ.get("SWEEP_TEST_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{kind} {os.getpid()}\n")


def shifted(A, B, C=None, *, model=None, shift=0.0, delay=0.0, fail=False):
    """A @ B + shift (exact for the tests' inputs); sleeps ``delay``; raises if ``fail``."""
    _log("task")
    if delay:
        time.sleep(delay)
    if fail:
        raise RuntimeError(f"asked to fail (shift={shift})")
    D = A @ B + shift
    return D if C is None else D + C


def counting_reference(A, B, C=None, *, alpha=1.0, beta=1.0):
    """float64 reference (exact for the tests' inputs) that logs each call."""
    _log("reference")
    D = alpha * (A @ B)
    return D if C is None else D + beta * C


def experiment(name="t", shifts=(0.0, 2.0**-10), ks=(8, 32), seeds=(0, 1), delay=0.0, fail_shift=None,
               reference="sweep_helpers:counting_reference"):
    """A small experiment dict: |shifts| x |ks| x |seeds| tasks on |ks| x |seeds| inputs."""
    grids = [{"params": {"shift": list(shifts), "delay": delay}}]
    if fail_shift is not None:
        grids.append({"params": {"shift": fail_shift, "delay": delay, "fail": True}})
    return {
        "name": name,
        "reference": reference,
        "metrics": ["max_abs_error", "normwise_inf", "signed_errors"],
        "defaults": {"algorithm": "sweep_helpers:shifted", "m": 3, "n": 2, "k": list(ks), "seed": list(seeds),
                     "input": {"generator": "uniform", "round_to": "fp8_e4m3"}},
        "grid": grids,
    }
