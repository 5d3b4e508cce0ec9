"""The real H100 and H200 tensor cores as witnesses (issue 21, item 4): products measured
through PyTorch 2.11 / cuBLAS 13.1 on an H100 and an H200 (``tests/data/gpu_witness``, made by
its ``measure.py`` and ``pack.py``; README.md there says how) against the Hopper presets, bit
for bit.  The H200 was measured on the same inputs (fixed seeds); its file holds the outputs
and the CRC-32 of each input slice, checked here against the H100 file's inputs.

The oracle is the hardware's output bits.  What the library adds around the unit is
modelled here, in the test, from what the data show (README.md, "Findings"):

* C of ``addmm`` is added after the product, in fp32 with round-to-nearest-even (the
  cuBLAS epilogue), not fed to the first MMA;
* an fp16/bf16 output is the fp32 result rounded to nearest-even;
* tf32 GEMMs of these shapes split K into S equal parts (S from the data: K = 16 -> 4,
  32 -> 1, 64 -> 2, 256 -> 8, 1024 -> 16), each a chain of the unit from zero, summed in
  order in fp32 with round-to-nearest-even; fp32 data is rounded to tf32 to nearest;
* fp8 ``torch._scaled_mm``: ``use_fast_accum=True`` is one chain of the unit;
  ``use_fast_accum=False`` promotes to an fp32 accumulator every 128 elements of K
  (``accumulation="promote", promote_every=128``).

The products that no such schedule reproduced (K = 8192 with fp16 inputs, and with fp8
and fast accumulation) are listed in :data:`UNEXPLAINED`, and a test keeps them there
until a model explains them.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import workbench as wb

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

DATA = Path(__file__).parent / "data" / "gpu_witness"
#: inputs and outputs measured on the H100
STORED = np.load(DATA / "H100_cublas.npz")
#: outputs of each GPU measured, on the inputs of STORED
MEASURED = {"H100": STORED, "H200": np.load(DATA / "H200_cublas.npz")}
GPUS = sorted(MEASURED)


def _is_input(key: str) -> bool:
    """Whether a stored key holds an input (rows of A, columns of B, the block of C)."""
    return key.split("__")[-1] in ("a", "b", "c")

#: number of equal parts cuBLAS split K into for the tf32 GEMMs measured (found in the data)
TF32_SPLIT = {16: 4, 32: 1, 64: 2, 256: 8, 1024: 16}
#: the elements of K after which cuBLAS' fp8 kernels without fast accumulation promote
FP8_PROMOTE = 128
#: measured products that no schedule of the preset reproduces (README.md, "Findings")
UNEXPLAINED = {("fp16", "normal", 8192, "mm_fp32"), ("fp16", "normal", 8192, "mm"),
               ("fp8_e4m3", "normal", 8192, "scaled_fp32_fast")}

_FP8 = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}


def _cases() -> list[tuple[str, str, int, str]]:
    out = []
    for key in STORED.files:
        if not _is_input(key):
            fmt, kind, k, what = key.split("__")
            out.append((fmt, kind, int(k[1:]), what))
    return sorted(out)


CASES = _cases()


def _decode(bits: np.ndarray, fmt: str) -> np.ndarray:
    """float64 values of stored bit patterns (an independent decoding: numpy and ml_dtypes)."""
    if fmt == "fp16":
        return bits.view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return bits.view(ml_dtypes.bfloat16).astype(np.float64)
    if fmt in ("tf32", "fp32"):
        return bits.view(np.float32).astype(np.float64)
    return bits.view(_FP8[fmt]).astype(np.float64)


def _load(fmt: str, kind: str, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key = f"{fmt}__{kind}__K{K}"
    A = _decode(STORED[key + "__a"], fmt)
    B = _decode(STORED[key + "__b"], fmt)
    C = _decode(STORED[key + "__c"], "fp32")
    return A, B, C


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


def _cuda_core(x: np.ndarray) -> np.ndarray:
    """An fp32 add on the GPU's ordinary cores (the cuBLAS epilogue and split-K
    reduction): a NaN result is the canonical 0x7FFFFFFF (seen in the data: Inf - Inf
    and NaN operands alike), where numpy on x86 gives 0xFFC00000 or the operand's NaN."""
    bits = x.astype(np.float32).view(np.uint32).copy()
    bits[np.isnan(x)] = 0x7FFFFFFF
    return bits.view(np.float32)


def _to_bf16(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 as the GPU converts (``cvt.rn.bf16.f32``): nearest-even; a NaN keeps
    the high half of its bits (0x7FFFFFFF -> 0x7FFF, where ml_dtypes gives 0x7FC0)."""
    out = x.astype(ml_dtypes.bfloat16)
    nan = np.isnan(x)
    out.view(np.uint16)[nan] = (x.astype(np.float32).view(np.uint32)[nan] >> 16).astype(np.uint16)
    return out


def _chain(A: np.ndarray, B: np.ndarray, fmt: str, **kw) -> np.ndarray:
    """The Hopper preset's product with a zero accumulator, as fp32."""
    model = wb.preset("H100", "tf32" if fmt == "fp32" else fmt, "fp32")
    return _f32(wb.gemm(A, B, model=model, **kw))


def _split_k(A: np.ndarray, B: np.ndarray, parts: int, **kw) -> np.ndarray:
    K = A.shape[1]
    step = K // parts
    acc = np.zeros((A.shape[0], B.shape[1]), dtype=np.float32)
    for s in range(parts):
        acc = _cuda_core(acc + _chain(A[:, s * step:(s + 1) * step], B[s * step:(s + 1) * step], "tf32", **kw))
    return acc


def modelled(fmt: str, kind: str, K: int, call: str) -> np.ndarray:
    """The library call as the preset plus the schedule in the module docstring; the
    output's numpy dtype is the call's output format."""
    A, B, C = _load(fmt, kind, K)
    if fmt in ("fp16", "bf16"):
        P = _chain(A, B, fmt)
    elif fmt == "tf32":
        P = _split_k(A, B, TF32_SPLIT[K], **({"input_rounding": "rne"} if kind == "fp32" else {}))
    else:
        fast = call.endswith("_fast")
        P = _chain(A, B, fmt, **({} if fast or K <= FP8_PROMOTE else
                                 {"accumulation": "promote", "promote_every": FP8_PROMOTE}))
    if call.startswith("addmm"):
        return _cuda_core(P + _f32(C))
    if call == "mm" and fmt == "fp16":
        return P.astype(np.float16)
    if call == "mm" or call.startswith("scaled_bf16"):
        return _to_bf16(P)
    return P


def _measured(fmt: str, kind: str, K: int, call: str, gpu: str = "H100") -> np.ndarray:
    return MEASURED[gpu][f"{fmt}__{kind}__K{K}__{call}"]


def _mismatches(fmt: str, kind: str, K: int, call: str, gpu: str) -> int:
    want = _measured(fmt, kind, K, call, gpu)
    got = modelled(fmt, kind, K, call)
    assert got.dtype.itemsize == want.dtype.itemsize, (got.dtype, want.dtype)
    return int((got.view(want.dtype) != want).sum())


def test_the_stored_set_covers_what_the_issue_names():
    formats = {c[0] for c in CASES}
    assert formats == {"fp16", "bf16", "tf32", "fp8_e4m3"}       # e5m2 x e5m2: cuBLAS refuses it
    assert {c[1] for c in CASES} >= {"normal", "wide", "bits", "cancel"}
    assert {"mm", "mm_fp32", "addmm_fp32", "scaled_fp32_slow", "scaled_fp32_fast"} <= {c[3] for c in CASES}
    bits = STORED["fp16__bits__K16__mm_fp32"].view(np.float32)
    assert np.isnan(bits).any() and np.isinf(bits).any() and np.isfinite(bits).any()


def test_the_h200_was_measured_on_the_inputs_of_the_h100_file():
    """Each output of the H200 file has the rows of A, columns of B and block of C stored
    with the H100's (same CRC-32), and both files hold the same products."""
    h200 = MEASURED["H200"]
    keys = [str(k) for k in h200["inputs__keys"]]
    assert keys == sorted(k for k in STORED.files if _is_input(k))
    crcs = [zlib.crc32(STORED[k].tobytes()) for k in keys]
    assert crcs == h200["inputs__crc32"].tolist()
    assert {k for k in h200.files if not k.startswith("inputs__")} == {k for k in STORED.files if not _is_input(k)}


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("case", [c for c in CASES if c not in UNEXPLAINED], ids=lambda c: "-".join(map(str, c)))
def test_hopper_preset_reproduces_the_measured_bits(case, gpu):
    """Every output bit, NaN payloads included (NVIDIA's canonical 0x7FFFFFFF)."""
    assert _mismatches(*case, gpu) == 0


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("case", sorted(UNEXPLAINED), ids=lambda c: "-".join(map(str, c)))
def test_unexplained_products_stay_listed(case, gpu):
    """cuBLAS picks another schedule for K = 8192 (README.md): one chain of the preset
    does not give these, and the schedules tried did not either.  A model that does
    should move them into the test above."""
    assert _mismatches(*case, gpu) > 0


def test_the_fp8_promotion_interval_is_seen():
    """Fast and slow accumulation differ in the stored data, and only the interval of
    128 reproduces the slow one (64 and 256 do not)."""
    fmt, kind, K = "fp8_e4m3", "normal", 1024
    A, _, _ = _load(fmt, kind, K)
    slow = _measured(fmt, kind, K, "scaled_fp32_slow")
    assert not np.array_equal(slow, _measured(fmt, kind, K, "scaled_fp32_fast"))
    for every in (64, 256):
        other = _chain(A, _load(fmt, kind, K)[1], fmt, accumulation="promote", promote_every=every)
        assert not np.array_equal(other.view(np.uint32), slow)
