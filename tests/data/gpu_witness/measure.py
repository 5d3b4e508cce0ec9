"""Measure a real NVIDIA tensor core through PyTorch (issue 21, item 4: the real unit as a witness).

    python tests/data/gpu_witness/measure.py OUTDIR [--m 64] [--n 64]

Needs only PyTorch with CUDA and numpy (it does not import ``workbench``, so that it runs on
any GPU machine as it is).  For each input format, input kind and K it draws A (M x K) and
B (K x N) as bit patterns of the format from a fixed seed, runs the library's product on
the GPU, and writes one ``<format>.npz`` per format to OUTDIR with the input and output
bits, plus ``meta.json`` (GPU, driver, torch/CUDA/cuBLAS versions, flags, every call made,
whether two runs of it agreed).  ``tests/test_gpu_witness.py`` compares the stored
results with the Hopper presets on the CPU; README.md beside this file says what was
measured and what the comparison found.

Calls (``torch`` 2.11 API):

* fp16 / bf16: ``torch.mm(a, b)`` (output in the input format) and
  ``torch.mm(a, b, out_dtype=torch.float32)`` (fp32 output), and
  ``torch.addmm(c, a, b, out_dtype=torch.float32)`` with an fp32 C;
* tf32: ``torch.mm`` of float32 tensors with ``torch.backends.cuda.matmul.allow_tf32 =
  True``, on values exactly in tf32 and (kind ``fp32``) on full fp32 values, which shows
  what the library does with the 13 low bits; ``torch.addmm`` with C;
* fp8 (e4m3fn, e5m2): ``torch._scaled_mm(a, b, scale_a=1, scale_b=1,
  out_dtype=float32 | bfloat16, use_fast_accum=False | True)`` (B column-major, as cuBLASLt
  needs).

Input kinds: ``normal`` (standard normal, rounded to nearest), ``wide`` (finite random bit
patterns: every exponent, subnormals), ``bits`` (uniform random bit patterns, NaN and Inf
included), ``cancel`` (groups of four products ``x*y - x*y + s1*t1 + s2*t2`` with the
small terms 2^-6 (fp8: 2^-3) of the large: the alignment window decides what survives).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import platform
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch

#: name: (torch dtype, numpy storage of the bits, exponent bits, fraction bits)
FORMATS = {
    "fp16": (torch.float16, np.uint16, 5, 10),
    "bf16": (torch.bfloat16, np.uint16, 8, 7),
    "tf32": (torch.float32, np.uint32, 8, 10),       # stored as binary32 bits, the 13 low bits zero
    "fp8_e4m3": (torch.float8_e4m3fn, np.uint8, 4, 3),
    "fp8_e5m2": (torch.float8_e5m2, np.uint8, 5, 2),
}
KS = (16, 32, 64, 256, 1024)
LONG_K = 8192
KINDS = ("normal", "wide", "bits", "cancel")
DEVICE = "cuda"


def _to_bits(x: torch.Tensor, store: type) -> np.ndarray:
    """The bit patterns of a CPU tensor."""
    width = np.dtype(store).itemsize
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[width]
    return x.contiguous().view(view).numpy().view(store).copy()


def _from_bits(bits: np.ndarray, fmt: str) -> torch.Tensor:
    dt, store, _, _ = FORMATS[fmt]
    width = np.dtype(store).itemsize
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[width]
    signed = {1: np.uint8, 2: np.int16, 4: np.int32}[width]
    return torch.from_numpy(np.ascontiguousarray(bits).view(signed)).view(view).view(dt)


def _round_to(x: np.ndarray, fmt: str) -> np.ndarray:
    """Bits of x (float64) rounded to nearest in the format (tf32: to float32, then to
    nearest-even at bit 13 of its bits, the 13 low bits cleared; finite values only)."""
    dt, store, _, _ = FORMATS[fmt]
    if fmt == "tf32":
        t = torch.from_numpy(x.astype(np.float32))
        bits = _to_bits(t, np.uint32)
        # round to nearest even at bit 13 on the integer bits (finite values only here)
        lsb = (bits >> 13) & 1
        bits = ((bits.astype(np.uint64) + 0xFFF + lsb) & ~np.uint64(0x1FFF)).astype(np.uint32)
        return bits
    t = torch.from_numpy(x).to(dt)
    return _to_bits(t, store)


def _random_bits(rng: np.random.Generator, shape: tuple[int, int], fmt: str, finite: bool) -> np.ndarray:
    dt, store, e, f = FORMATS[fmt]
    width = 19 if fmt == "tf32" else 8 * np.dtype(store).itemsize
    raw = rng.integers(0, 2 ** width, size=shape, dtype=np.uint64)
    if finite:
        sign = raw >> (width - 1)
        exp = (raw >> f) & ((1 << e) - 1)
        frac = raw & ((1 << f) - 1)
        if fmt in ("bf16", "tf32"):     # every exponent would overflow fp32 sums at once
            exp = rng.integers(127 - 40, 127 + 40, size=shape, dtype=np.uint64)
            exp[rng.random(shape) < 0.05] = 0                       # some subnormals
        elif fmt == "fp8_e4m3":        # e4m3fn: only S.1111.111 is NaN
            frac = np.where((exp == 15) & (frac == 7), np.uint64(6), frac)
        else:
            exp = np.where(exp == (1 << e) - 1, np.uint64((1 << e) - 2), exp)
        raw = (sign << (width - 1)) | (exp << f) | frac
    if fmt == "tf32":
        raw = raw << 13
    return raw.astype(store)


def draw(kind: str, fmt: str, M: int, K: int, N: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bits of A (M, K) and B (K, N)."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return _round_to(rng.standard_normal((M, K)), fmt), _round_to(rng.standard_normal((K, N)), fmt)
    if kind in ("wide", "bits"):
        fin = kind == "wide"
        return _random_bits(rng, (M, K), fmt, fin), _random_bits(rng, (K, N), fmt, fin)
    if kind == "cancel":
        small = 2.0 ** (-3 if fmt.startswith("fp8") else -6)
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((K, N))
        A = _as_values(_round_to(A, fmt), fmt)
        B = _as_values(_round_to(B, fmt), fmt)
        A[:, 1::4] = A[:, 0::4]
        B[1::4, :] = -B[0::4, :]
        A[:, 2::4] *= small
        A[:, 3::4] *= small
        return _round_to(A, fmt), _round_to(B, fmt)
    raise ValueError(kind)


def _as_values(bits: np.ndarray, fmt: str) -> np.ndarray:
    return _from_bits(bits, fmt).to(torch.float64).numpy()


def _run_twice(fn) -> tuple[np.ndarray, bool]:
    d1 = fn()
    d2 = fn()
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    b1 = _to_bits(d1.cpu(), np.uint32 if d1.dtype == torch.float32 else np.uint16)
    b2 = _to_bits(d2.cpu(), np.uint32 if d2.dtype == torch.float32 else np.uint16)
    return b1, bool(np.array_equal(b1, b2))


def calls(fmt: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict:
    """name -> a function computing the library's product on the GPU."""
    if fmt in ("fp16", "bf16"):
        return {"mm": lambda: torch.mm(a, b),
                "mm_fp32": lambda: torch.mm(a, b, out_dtype=torch.float32),
                "addmm_fp32": lambda: torch.addmm(c, a, b, out_dtype=torch.float32)}
    if fmt == "tf32":
        return {"mm_fp32": lambda: torch.mm(a, b), "addmm_fp32": lambda: torch.addmm(c, a, b)}
    one = torch.ones((), device=DEVICE, dtype=torch.float32)
    bt = b.t().contiguous().t()                       # column-major B
    out = {}
    for fast in (False, True):
        tag = "fast" if fast else "slow"
        out[f"scaled_fp32_{tag}"] = (lambda fast=fast: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,
                                                                          out_dtype=torch.float32, use_fast_accum=fast))
        out[f"scaled_bf16_{tag}"] = (lambda fast=fast: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,
                                                                          out_dtype=torch.bfloat16, use_fast_accum=fast))
    return out


def _cublas_version() -> str:
    """The version of the cuBLAS library this process loaded (after one product)."""
    try:
        torch.mm(torch.ones(16, 16, device=DEVICE), torch.ones(16, 16, device=DEVICE))
        libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcublas.so" in line})
        if not libs:
            return "libcublas not loaded"
        lib = ctypes.CDLL(libs[0])
        parts = []
        for prop in (0, 1, 2):                          # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int()
            lib.cublasGetProperty(prop, ctypes.byref(v))
            parts.append(str(v.value))
        return ".".join(parts) + f" ({libs[0]})"
    except Exception as exc:  # noqa: BLE001 - recorded, not needed
        return f"unknown ({exc})"


def main() -> int:
    global DEVICE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--device", default="cuda", help="cpu: a dry run of the drawing and bookkeeping")
    args = p.parse_args()
    DEVICE = args.device
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    gpu = DEVICE == "cuda"
    props = torch.cuda.get_device_properties(0) if gpu else None
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        smi = repr(exc)
    meta = {"gpu": torch.cuda.get_device_name(0) if gpu else "none (dry run)",
            "capability": list(torch.cuda.get_device_capability(0)) if gpu else None,
            "multiprocessors": props.multi_processor_count if props else None, "nvidia_smi": smi, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cublas": _cublas_version(),
            "python": platform.python_version(), "numpy": np.__version__,
            "allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
            "allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "M": args.m, "N": args.n, "runs": [], "errors": []}
    M, N = args.m, args.n
    t0 = time.time()
    for fi, fmt in enumerate(FORMATS):
        arrays: dict[str, np.ndarray] = {}
        kinds = KINDS + (("fp32",) if fmt == "tf32" else ())
        plan = [(kind, K) for kind in kinds for K in KS]
        if fmt in ("fp16", "bf16", "fp8_e4m3"):
            plan.append(("normal", LONG_K))
        for kind, K in plan:
            seed = zlib.crc32(f"{fmt}/{kind}/{K}".encode())
            if kind == "fp32":                      # full binary32 values into the tf32 path
                rng = np.random.default_rng(seed)
                a_bits = _to_bits(torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)), np.uint32)
                b_bits = _to_bits(torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)), np.uint32)
            else:
                a_bits, b_bits = draw(kind, fmt, M, K, N, seed)
            c_np = np.random.default_rng(seed + 7).standard_normal((M, N)).astype(np.float32)
            key = f"{kind}__K{K}"
            arrays[f"{key}__a"], arrays[f"{key}__b"] = a_bits, b_bits
            arrays[f"{key}__c"] = c_np.view(np.uint32)
            a = _from_bits(a_bits, fmt).to(DEVICE)
            b = _from_bits(b_bits, fmt).to(DEVICE)
            c = torch.from_numpy(c_np).to(DEVICE)
            torch.backends.cuda.matmul.allow_tf32 = fmt == "tf32"
            for name, fn in calls(fmt, a, b, c).items():
                if K == LONG_K and name.startswith(("addmm", "scaled_bf16")):
                    continue
                try:
                    d, same = _run_twice(fn)
                except Exception as exc:  # noqa: BLE001 - recorded: what the library refused
                    meta["errors"].append({"format": fmt, "kind": kind, "K": K, "call": name,
                                           "error": " ".join(str(exc).split())[:300]})
                    continue
                arrays[f"{key}__{name}"] = d
                meta["runs"].append({"format": fmt, "kind": kind, "K": K, "call": name, "deterministic": same})
            torch.backends.cuda.matmul.allow_tf32 = False
        np.savez_compressed(out / f"{fmt}.npz", **arrays)
        print(f"{fmt}: {len(arrays)} arrays, {time.time() - t0:.1f} s", flush=True)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"{len(meta['runs'])} calls recorded, {len(meta['errors'])} refused", flush=True)
    for e in meta["errors"][:20]:
        print("  refused:", e, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
