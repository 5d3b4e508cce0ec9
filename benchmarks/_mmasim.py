"""The ``mmasim`` package (MMA-Sim 2.1.1, Xie et al. 2025) beside the workbench's presets.

Maps every preset that has a counterpart in ``mmasim`` to the ``mmasim`` operation
of the same instruction (:func:`mmasim_op`), and moves operands between the two as
bit patterns (:func:`values`, :func:`bits_of`, :func:`torch_tensor`), so that NaN
payloads, signed zeros and subnormals reach both sides unchanged.  Used by
``benchmarks/bench_engine.py`` (speed ratios) and, through ``tests/mmasim_oracle.py``,
by ``tests/test_mmasim_differential.py`` (bit-for-bit agreement); imports ``torch``
and ``mmasim`` lazily, so listing the pairs needs neither.
"""

from __future__ import annotations

import numpy as np

from workbench.numbers import formats as _formats
from workbench.units.catalogue import Preset, records

NV_ARCH = {"volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace", "hopper": "Hopper",
           "blackwell": "Blackwell", "rtx-blackwell": "RTX Blackwell"}
PTX_TYPE = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp8_e4m3": "e4m3", "fp8_e5m2": "e5m2",
            "fp6_e2m3": "e2m3", "fp6_e3m2": "e3m2", "fp4_e2m1": "e2m1", "fp32": "f32", "fp64": "f64"}
# CDNA instruction suffixes (mmasim.amd.isa_mfma) per (architecture, instruction, input format)
AMD_SUFFIX = {
    ("cdna1", "mfma", "fp32"): "f32_32x32x2f32", ("cdna2", "mfma", "fp32"): "f32_32x32x2f32",
    ("cdna3", "mfma", "fp32"): "f32_32x32x2_f32", ("cdna2", "mfma", "fp64"): "f64_16x16x4f64",
    ("cdna3", "mfma", "fp64"): "f64_16x16x4_f64", ("cdna1", "mfma", "bf16"): "f32_32x32x4bf16",
    ("cdna1", "mfma", "fp16"): "f32_32x32x8f16", ("cdna2", "mfma", "bf16"): "f32_32x32x4bf16",
    ("cdna2", "mfma_1k", "bf16"): "f32_32x32x8bf16_1k", ("cdna2", "mfma", "fp16"): "f32_32x32x8f16",
    ("cdna3", "mfma", "tf32"): "f32_16x16x8_xf32", ("cdna3", "mfma", "bf16"): "f32_32x32x8_bf16",
    ("cdna3", "mfma", "fp16"): "f32_32x32x8_f16", ("cdna3", "mfma", "fp8_e4m3fnuz"): "f32_32x32x16_fp8_fp8",
    ("cdna3", "mfma", "fp8_e5m2fnuz"): "f32_32x32x16_bf8_bf8",
}


def _nv_op(p: Preset):
    """The mmasim operation of an NVIDIA preset, or None when mmasim has no such
    instruction (Hopper/Blackwell fp8 through mma.sync, the hypothetical B200-RN)."""
    from mmasim import nv_ptx

    arch = NV_ARCH[p.architecture]
    a, d = PTX_TYPE[p.in_format], PTX_TYPE[p.out_format]
    if p.variant == "rn" or p.instruction == "mma.sync":
        return None
    if p.in_format == "fp64":
        shape = "m16n8k16" if arch == "Hopper" else "m8n8k4"
        return nv_ptx.MMA(arch, f"{shape}.f64.f64.f64.f64")
    if p.instruction == "wgmma":
        k = {"tf32": 8, "fp16": 16, "bf16": 16}.get(p.in_format, 32)
        return nv_ptx.WGMMA(arch, f"m64n8k{k}.{d}.{a}.{a}")
    if p.instruction == "tcgen05.mma":
        kind, k = {"tf32": ("tf32", 8), "fp16": ("f16", 16), "bf16": ("f16", 16)}.get(p.in_format, ("f8f6f4", 32))
        return nv_ptx.TCGen05MMA(arch, f"m64n8k{k}.kind::{kind}.{d}.{a}.{a}")
    if p.in_format in ("fp6_e2m3", "fp6_e3m2", "fp4_e2m1") or (arch == "RTX Blackwell" and p.in_format.startswith("fp8")):
        return nv_ptx.MMA(arch, f"m16n8k32.kind::f8f6f4.{d}.{a}.{a}.{d}")
    shape = {"mma.m8n8k4": "m8n8k4", "mma.m16n8k8": "m16n8k8"}.get(p.instruction)
    if shape is None:
        shape = {"tf32": "m16n8k8", "fp16": "m16n8k16", "bf16": "m16n8k16"}.get(p.in_format, "m16n8k32")
    c = d if not (shape == "m8n8k4" and d == "f32") else "f32"
    return nv_ptx.MMA(arch, f"{shape}.{d}.{a}.{a}.{c}")


def _block_scale_op(p: Preset):
    """The mmasim block-scale instruction of a scaled preset (MMA-Sim 2.1.1:
    ``MMABlockScale`` on RTX Blackwell, ``TCGen05MMABlockScale`` on Blackwell, whose
    arithmetic is ``MMA_ST_FDPA`` for k32 (MXFP8/6/4) and ``MMA_GST_FDPA`` for k64
    (MXFP4, NVFP4)), or None."""
    from mmasim import nv_ptx

    a = PTX_TYPE[p.in_format]
    s = {"e8m0": "ue8m0", "ue4m3": "ue4m3"}[str(p.scale_format)]
    if p.kind == "st-fdpa":
        kind, k = "mxf8f6f4", 32
    else:
        kind, k = ("mxf4nvf4" if p.k_block == 16 else "mxf4"), 64
    tail = f"kind::{kind}.block{p.k_block}.f32.{a}.{a}"
    if p.architecture == "blackwell":
        return nv_ptx.TCGen05MMABlockScale("Blackwell", f"m128n8k{k}.{tail}.{s}")
    if p.architecture == "rtx-blackwell":
        return nv_ptx.MMABlockScale("RTX Blackwell", f"m16n8k{k}.{tail}.f32.{s}")
    return None


def mmasim_op(p: Preset):
    """The mmasim operation computing what preset ``p`` models, or None."""
    if p.kind in ("st-fdpa", "gst-fdpa"):
        return _block_scale_op(p)
    if p.architecture in NV_ARCH:
        return _nv_op(p)
    suffix = AMD_SUFFIX.get((p.architecture, p.instruction, p.in_format))
    if suffix is None:
        return None
    from mmasim import amd

    return amd.MFMA(p.architecture.upper(), suffix)


def paired_presets() -> list[Preset]:
    """Every preset that mmasim also models (no torch needed to list them)."""
    return [p for p in records() if _has_counterpart(p)]


def _has_counterpart(p: Preset) -> bool:
    if p.operation.integer:      # MMA-Sim 2.1.1 models no integer unit
        return False
    if p.kind in ("st-fdpa", "gst-fdpa"):
        return p.architecture in ("blackwell", "rtx-blackwell")
    if p.architecture in NV_ARCH:
        return not (p.variant == "rn" or p.instruction == "mma.sync")
    return (p.architecture, p.instruction, p.in_format) in AMD_SUFFIX


# ------------------------------------------------------------ bit patterns
def values(bits: np.ndarray, fmt: str) -> np.ndarray:
    """float64 values of bit patterns of ``fmt`` keeping NaN payloads where the
    format has them (IEEE widening of fp16/bf16/tf32/fp32 is exact)."""
    if fmt == "fp16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if fmt in ("tf32", "fp32"):
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt == "fp64":
        return bits.astype(np.uint64).view(np.float64).copy()
    return _formats.from_bits(bits, fmt)


def bits_of(x: np.ndarray, fmt: str) -> np.ndarray:
    """Bit patterns of representable values (tf32 in the fp32 register layout, its
    low 13 bits zero, as both tensor-core APIs and mmasim hold it)."""
    if fmt == "tf32":
        return x.astype(np.float32).view(np.uint32)
    return _formats.to_bits(x, fmt)


def torch_tensor(bits: np.ndarray, fmt: str):
    """The mmasim operand holding bit patterns ``bits`` of ``fmt``."""
    import torch

    if fmt in ("fp16", "bf16"):
        t = torch.from_numpy(bits.astype(np.uint16).view(np.int16).copy())
        return t.view(torch.float16 if fmt == "fp16" else torch.bfloat16)
    if fmt in ("tf32", "fp32"):
        return torch.from_numpy(bits.astype(np.uint32).view(np.float32).copy())
    if fmt == "fp64":
        return torch.from_numpy(bits.astype(np.uint64).view(np.float64).copy())
    u8 = torch.from_numpy(bits.astype(np.uint8).copy())
    if fmt.startswith("fp6"):
        return u8                               # mmasim: fp6 in bits 5:0 of a uint8
    if fmt == "fp4_e2m1":
        return u8 << 2                          # mmasim: fp4 in bits 5:2 of a uint8
    return u8.view({"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
                    "fp8_e4m3fnuz": torch.float8_e4m3fnuz, "fp8_e5m2fnuz": torch.float8_e5m2fnuz}[fmt])


def scale_tensor(bits: np.ndarray, scale_format: str):
    """The mmasim block-scale operand holding bit patterns ``bits`` (E8M0 as
    ``torch.float8_e8m0fnu``; UE4M3 as ``torch.float8_e4m3fn``, whose sign bit mmasim
    clears)."""
    import torch

    u8 = torch.from_numpy(bits.astype(np.uint8).copy())
    return u8.view(torch.float8_e8m0fnu if scale_format == "e8m0" else torch.float8_e4m3fn)


def run(p: Preset, op, A, B, C, alpha=None, beta=None):
    """D = op(A, B, C[, alpha, beta]) on mmasim tensors.  A scaled preset's K is
    consumed as the unit does, one instruction (k32 ST-FDPA, k64 GST-FDPA) after the
    other with D fed back as C: MMA-Sim 2.1.1's ``MMA_ST_FDPA`` applies its scale
    operand to every product of the call (one scale block per call), so its calls
    take one block of k_block = L = 32 each; GST-FDPA slices its scales itself."""
    if alpha is None:
        return op(A, B, C)
    import torch

    if p.kind != "st-fdpa":
        if A.dtype == torch.uint8:     # fp4 held one value per element
            A, B = _fp4_values(A), _fp4_values(B)
        return op(A, B, C, alpha, beta)
    L = int(p.L)
    D = C
    for i, k in enumerate(range(0, A.shape[1], L)):
        D = op(A[:, k:k + L].contiguous(), B[k:k + L, :].contiguous(), D, alpha[:, i:i + 1].contiguous(),
               beta[i:i + 1, :].contiguous())
    return D


def _fp4_values(t):
    """fp4 operands (bits 5:2 of a uint8, :func:`torch_tensor`) as float16 values:
    ``MMA_GST_FDPA`` reads a uint8 operand as two packed fp4 values per byte."""
    import torch

    from mmasim.arithmetic.helper import decode_uint8_to_fp6_fp4

    return decode_uint8_to_fp6_fp4(t, "e2m1").to(torch.float16)
