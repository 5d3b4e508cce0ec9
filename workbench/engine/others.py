"""Kernels of the elementary operations other than T-FDPA and FMA (placeholder module,
filled in below)."""
from __future__ import annotations


def run_other(model, A, BT, acc):
    raise ValueError(f"kind={model.kind!r} is not available yet")


def run_scaled(model, A, BT, acc, scale_a, scale_b, accumulation):
    raise ValueError(f"kind={model.kind!r} is not available yet")
