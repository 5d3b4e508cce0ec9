"""Other libraries' block quantisers on the scale-rounding suite, for the discrepancy table.

Each adapter takes MX blocks (float64 arrays of float32 values, n x 32) and returns
``(scale exponents (n,), NaN for a NaN scale; element values (n, 32))``, so that they compare
with :func:`workbench.conformance.scales.mx_expected` value for value:

* :func:`torchao_mx`: torchao's ``to_mx`` under ``ScaleCalculationMode`` FLOOR/CEIL/EVEN/RCEIL;
* :func:`pychop_mx`: pychop's ``MXTensor_`` (the OCP floor rule only);
* :func:`ml_dtypes_mx`: what a numpy user gets with ml_dtypes' casts: the E8M0 scale as
  ``float8_e8m0fnu(fl32(amax / max_elem))`` (round to nearest; ml_dtypes has no rule
  argument, so the same scales are compared with every rule) and the elements as
  ``(x / scale).astype(element)`` (ml_dtypes' casts do not saturate);
* :func:`mmasim_scale_values`: MMA-Sim 2.1.1's reading of scale bytes (torch's
  ``float8_e8m0fnu`` for UE8M0, ``truncate_e4m3_to_ue4m3`` for UE4M3): where MMA-Sim
  applies, it takes scales, it does not compute them.

NVFP4: :func:`torchao_nvfp4` (``nvfp4_quantize`` with ``per_tensor_amax_to_scale``, 1x16
blocks only).  Every adapter imports its library when called; a missing one raises
ImportError naming the package.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..numbers import formats as _formats

__all__ = ["torchao_mx", "pychop_mx", "ml_dtypes_mx", "mmasim_scale_values", "torchao_nvfp4", "MAXV", "same_values",
           "e8m0_values"]

#: OCP MX v1.0 Table 1: the elements' largest values
MAXV = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "fp6_e2m3": 7.5, "fp6_e3m2": 28.0, "fp4_e2m1": 6.0}


def _torchao() -> Any:
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.prototype.mx_formats import kernels, mx_tensor
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    return torch, kernels, mx_tensor, ScaleCalculationMode, DTYPE_FP6_E2M3, DTYPE_FP6_E3M2, nvfp4_quantize, \
        per_tensor_amax_to_scale


def torchao_mx(x: np.ndarray, element: str, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """torchao's ``to_mx`` (block 32) under ``ScaleCalculationMode[rule.upper()]``."""
    torch, kernels, mx, mode, e2m3, e3m2, _, _ = _torchao()
    dtypes = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2, "fp6_e2m3": e2m3, "fp6_e3m2": e3m2,
              "fp4_e2m1": torch.float4_e2m1fn_x2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc, d = mx.to_mx(torch.tensor(x, dtype=torch.float32), dtypes[element], 32, getattr(mode, rule.upper()))
    bits = sc.view(torch.uint8).numpy().astype(np.float64).reshape(-1)
    e = np.where(bits == 255, np.nan, bits - 127)
    if element.startswith("fp8"):
        el = d.float().numpy()
    elif element == "fp6_e2m3":
        el = kernels.f6_e2m3_unpacked_to_f32(d).numpy()
    elif element == "fp6_e3m2":
        el = kernels.f6_e3m2_unpacked_to_f32(d).numpy()
    else:
        el = kernels.f4_unpacked_to_f32(kernels.unpack_uint4(d)).numpy()
    return e, el.astype(np.float64).reshape(x.shape)


def pychop_mx(x: np.ndarray, element: str) -> tuple[np.ndarray, np.ndarray]:
    """pychop's ``MXTensor_`` (OCP floor rule; NaN ignored in the block maximum)."""
    import pychop.np.mx_formats as mod

    name = {"fp8_e4m3": "mxfp8_e4m3", "fp8_e5m2": "mxfp8_e5m2", "fp6_e2m3": "mxfp6_e2m3", "fp6_e3m2": "mxfp6_e3m2",
            "fp4_e2m1": "mxfp4_e2m1"}[element]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        t = mod.MXTensor_(x.reshape(-1), name, 32)
    scales = np.array([b.shared_scale for b in t.blocks], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(scales > 0, np.log2(np.where(scales > 0, scales, 1.0)), np.nan)
    el = np.concatenate([b.quantized_elements for b in t.blocks]).astype(np.float64)
    return e, el.reshape(x.shape)


def ml_dtypes_mx(x: np.ndarray, element: str) -> tuple[np.ndarray, np.ndarray]:
    """The E8M0 scale by ml_dtypes' round-to-nearest cast of ``fl32(amax / max_elem)``, elements
    by ml_dtypes' casts of ``x / scale`` (no saturation)."""
    import ml_dtypes

    dt = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2,
          "fp6_e2m3": ml_dtypes.float6_e2m3fn, "fp6_e3m2": ml_dtypes.float6_e3m2fn,
          "fp4_e2m1": ml_dtypes.float4_e2m1fn}[element]
    with np.errstate(all="ignore"):
        amax = np.max(np.abs(x), axis=1).astype(np.float32)
        q = amax / np.float32(MAXV[element])
        s = q.astype(ml_dtypes.float8_e8m0fnu)
        bits = s.view(np.uint8).astype(np.float64)
        e = np.where(bits == 255, np.nan, bits - 127)
        scale = s.astype(np.float64)
        el = (x / scale[:, None]).astype(dt).astype(np.float64)
    return e, el


def mmasim_scale_values(bits: np.ndarray, scale_format: str) -> np.ndarray:
    """The values MMA-Sim 2.1.1 gives scale bytes: torch ``float8_e8m0fnu`` (UE8M0) or its
    ``truncate_e4m3_to_ue4m3`` (UE4M3, sign bit dropped)."""
    import torch
    from mmasim.arithmetic.helper import truncate_e4m3_to_ue4m3

    t = torch.tensor(np.asarray(bits, dtype=np.uint8))
    if scale_format == "e8m0":
        return t.view(torch.float8_e8m0fnu).float().numpy().astype(np.float64)
    return truncate_e4m3_to_ue4m3(t.view(torch.float8_e4m3fn)).float().numpy().astype(np.float64)


def torchao_nvfp4(x: np.ndarray, tensor_amax: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torchao's NVFP4 (1x16 blocks) of each row of ``x`` (n, 16) under its tensor amax:
    (tensor scales, UE4M3 block scales (NaN where torchao's is NaN), elements)."""
    torch, kernels, _, _, _, _, nvfp4_quantize, per_tensor_amax_to_scale = _torchao()
    n = x.shape[0]
    ts, sb, el = np.empty(n), np.empty(n), np.empty(x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            t = torch.tensor(x[i:i + 1], dtype=torch.float32)
            pts = per_tensor_amax_to_scale(torch.tensor(tensor_amax[i], dtype=torch.float32))
            s, d = nvfp4_quantize(t, 16, pts)
            ts[i] = float(pts)
            sb[i] = float(s.float().reshape(-1)[0])
            el[i] = kernels.f4_unpacked_to_f32(kernels.unpack_uint4(d)).numpy().reshape(-1)
    return ts, sb, el


def same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: equal values (NaN equal to NaN; +0 equal to -0: pychop's zeros are unsigned)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    eq = (a == b) | (np.isnan(a) & np.isnan(b))
    return eq.reshape(eq.shape[0], -1).all(axis=1)


def e8m0_values(bits: np.ndarray) -> np.ndarray:
    """OCP E8M0 values of scale bytes (0xFF NaN, 0x00 = 2**-127)."""
    return _formats.from_bits(np.asarray(bits, dtype=np.uint8), "e8m0")
