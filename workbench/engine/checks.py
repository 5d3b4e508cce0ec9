"""Validators shared by the operations' parameter dataclasses (and the flat
:class:`~workbench.engine.model.Model`): each raises a ValueError naming the value
and what was expected."""
from __future__ import annotations

import numpy as np

from ..numbers import formats as _formats
from ..numbers.validation import unknown_name

#: Rounding directions of the engine (Khattak-Mikaitis' ``frmode``; Xie's rho).
ROUNDINGS = ("rne", "rz", "rd", "ru")


def check_block(name: str, v: int) -> None:
    """A positive number of products (L, P, G, k_block)."""
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"{name}={v!r}: expected a positive block size")


def positive_int(name: str, v: object) -> int:
    """``v`` as an int when it is a positive integer (numpy ints too, not bool)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive integer; got {v!r}")
    return int(v)


def check_F(name: str, v: int) -> None:
    """Fractional bits of an alignment window: 0 <= F <= 56 (the kernels' 64-bit sums)."""
    if not isinstance(v, int) or not 0 <= v <= 56:
        raise ValueError(f"{name}={v!r}: expected 0 <= {name} <= 56 fractional bits")


def check_rounding(name: str, v: str) -> None:
    """One of :data:`ROUNDINGS`."""
    if v not in ROUNDINGS:
        raise unknown_name(f"{name} mode", v, ROUNDINGS)


def check_c_position(v: str) -> None:
    if v not in ("early", "late"):
        raise ValueError(f"c_position={v!r}: expected 'early' or 'late'")


def check_format(name: str, v: str | None) -> None:
    """A format name of :mod:`workbench.numbers.formats` (None allowed: the default)."""
    if v is not None:
        _formats.format(v)


def check_fused_window(L: int, F: int, rounding: str, result_format: str | None) -> None:
    """The parameters every fused dot-product operation has (T-FDPA, TR/GTR-FDPA,
    ST/GST-FDPA): block size L, window F, final rounding and result format."""
    check_block("L", L)
    check_F("F", F)
    check_rounding("rounding", rounding)
    check_format("result_format", result_format)


def check_scales(L: int, k_block: int | None, scale_format: str | None) -> None:
    """Scaled operations' scale block: ``k_block`` elements share one scale of
    ``scale_format``, both given, and a block of L holds whole scale blocks (Xie et al.
    2025 Table 5)."""
    if k_block is None or scale_format is None:
        raise ValueError(f"k_block={k_block!r}, scale_format={scale_format!r}: scaled operations need both "
                         "(Xie et al. Table 5)")
    check_block("k_block", k_block)
    check_format("scale_format", scale_format)
    if L % k_block:
        raise ValueError(f"L={L} must be a multiple of k_block={k_block}")


__all__ = ["ROUNDINGS", "check_block", "positive_int", "check_F", "check_rounding", "check_c_position", "check_format",
           "check_fused_window"]
