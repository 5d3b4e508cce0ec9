"""Real targets: black-box adapters for libraries on this machine and for GPUs.

``target(name)`` builds a :class:`~workbench.probes.blackbox.BlackBox` from a name:

=====================  =============================================================
``numpy-fp64``         ``A @ B + C`` in float64 (numpy -> OpenBLAS dgemm, then one add)
``numpy-fp32``         ``A @ B + C`` in float32 (numpy -> OpenBLAS sgemm, then one add)
``numpy-fp16``         ``A @ B + C`` in float16 (numpy's own half loops)
``torch-cpu-bf16``     ``torch.addmm(C, A, B)`` on bfloat16 CPU tensors (needs torch)
``torch-cpu-fp16``     ``torch.addmm(C, A, B)`` on float16 CPU tensors (needs torch)
``torch-cpu-fp32``     ``torch.addmm(C, A, B)`` on float32 CPU tensors (needs torch)
``mldtypes-bf16``      ``A @ B + C`` on ml_dtypes.bfloat16 arrays (the product comes back as float32)
``cpu-vdpbf16ps``      this CPU's AVX512-BF16 ``VDPBF16PS`` (:mod:`workbench.probes.cpu_bf16`): D = C, then
                       one instruction per pair of K (bf16 in, fp32 out); needs the instruction
``preset:DEV:IN:OUT``  a workbench preset through ``workbench.gemm`` (optional
                       ``:INSTRUCTION`` and ``:VARIANT``), e.g. ``preset:H100:fp16:fp32``
``torch-cuda-IN-OUT``  the GPU adapter below, e.g. ``torch-cuda-fp16-fp32``
``cupy-IN-OUT``        the GPU adapter below with cupy, e.g. ``cupy-fp16-fp32``
=====================  =============================================================

GPU adapters (a user with a GPU probes it this way; nothing here imports torch or
cupy until called)::

    from workbench.probes import infer
    from workbench.probes.targets import torch_cuda
    res = infer(torch_cuda("fp16", "fp32"))      # torch.addmm on the GPU, fp32 out
    print(res.sheet())

``torch_cuda(in, out)`` converts A and B to the input dtype on the GPU and computes
``torch.addmm(C, A, B, out_dtype=...)``: with fp16/bf16 inputs and fp32 output cuBLAS
uses the tensor cores (set ``torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction``
as you need).  The probed unit is then cuBLAS's kernel, i.e. the MMA instruction
*plus* the library's blocking over K (Xie et al. Section 3.1.5: API-level models may
conflate software and hardware).  ``cupy_matmul`` does the same with cupy.
"""

from __future__ import annotations

import importlib
from typing import Any
from collections.abc import Callable

import numpy as np

from ..numbers import formats as _formats
from .blackbox import BlackBox, from_model

__all__ = ["target", "TARGETS", "torch_cuda", "cupy_matmul", "numpy_target", "torch_cpu", "mldtypes_target", "vdpbf16ps_target", "pairs_gemm"]


def _need(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{what} needs the Python package {module!r}, which is not installed") from exc


def numpy_target(fmt: str) -> BlackBox:
    """numpy ``A @ B + C`` in float32 or float16: the product is one library call and C
    is added afterwards with one more rounding (numpy has no fused beta*C)."""
    dt = {"fp32": np.float32, "fp16": np.float16, "fp64": np.float64}.get(_formats.format(fmt).name)
    if dt is None:
        raise ValueError(f"numpy target: fmt={fmt!r}; expected fp64, fp32 or fp16")

    def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        return (A.astype(dt) @ B.astype(dt)) + C.astype(dt)

    return BlackBox(fn, fmt, fmt, name=f"numpy {np.dtype(dt).name} matmul + C")


def torch_cpu(fmt: str) -> BlackBox:
    """``torch.addmm(C, A, B)`` on CPU tensors of the format's dtype."""
    torch = _need("torch", "the torch CPU target")
    name = _formats.format(fmt).name
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}.get(name)
    if dt is None:
        raise ValueError(f"torch CPU target: fmt={fmt!r}; expected bf16, fp16 or fp32")

    def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        t = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(dt)  # noqa: E731
        return torch.addmm(t(C), t(A), t(B)).to(torch.float64).numpy()

    return BlackBox(fn, name, name, name=f"torch {torch.__version__} CPU addmm {name}")


def mldtypes_target(fmt: str = "bf16") -> BlackBox:
    """numpy ``A @ B + C`` on ml_dtypes arrays (numpy's generic loops in that dtype)."""
    ml = _need("ml_dtypes", "the ml_dtypes target")
    name = _formats.format(fmt).name
    dt = {"bf16": ml.bfloat16}.get(name)
    if dt is None:
        raise ValueError(f"ml_dtypes target: fmt={fmt!r}; only bf16 can also be a model's output format")

    def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        D = A.astype(dt) @ B.astype(dt)     # ml_dtypes' matmul of bfloat16 returns float32
        return (D.astype(np.float32) + C.astype(np.float32)).astype(np.float64)

    return BlackBox(fn, name, "fp32", name=f"ml_dtypes {ml.__version__} {name} matmul (float32 result) + C")


#: (input, output) formats of :func:`torch_cuda`: the products cuBLAS computes on the tensor cores.
_TORCH_CUDA_PAIRS = {("fp16", "fp16"), ("fp16", "fp32"), ("bf16", "bf16"), ("bf16", "fp32"), ("tf32", "fp32"),
                     ("fp32", "fp32")}


def torch_cuda(in_format: str, out_format: str = "fp32", device: str = "cuda") -> BlackBox:
    """GPU adapter: ``torch.addmm(C, A, B)`` on ``device`` with A and B in ``in_format``
    (fp16, bf16, fp32, tf32) and C and D in ``out_format``; a wider output than the
    input (fp16/bf16 -> fp32) is ``torch.addmm(C, A, B, out_dtype=torch.float32)``
    (torch >= 2.8), the cuBLAS GEMM with fp32 output on the tensor cores.  tf32 sets
    ``torch.backends.cuda.matmul.allow_tf32`` for the call and restores it.  Raises
    ValueError without a GPU, for other formats, or where the torch build has no such
    call (never a silent fp32 product in place of the tensor core's)."""
    torch = _need("torch", "the torch CUDA adapter")
    if not torch.cuda.is_available():
        raise ValueError("torch reports no CUDA device: the torch CUDA adapter needs a GPU")
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "tf32": torch.float32}
    fin, fout = _formats.format(in_format).name, _formats.format(out_format).name
    if (fin, fout) not in _TORCH_CUDA_PAIRS:
        raise ValueError(f"torch CUDA adapter: formats {in_format!r} -> {out_format!r} not supported (fp16->fp16, "
                         "fp16->fp32, bf16->bf16, bf16->fp32, tf32->fp32, fp32->fp32)")
    widen = dts[fin] != dts[fout]

    def addmm(c: Any, a: Any, b: Any) -> Any:
        return torch.addmm(c, a, b, out_dtype=dts[fout]) if widen else torch.addmm(c, a, b)

    if widen:
        one = torch.ones((16, 16), device=device, dtype=dts[fin])
        try:
            addmm(torch.zeros((16, 16), device=device, dtype=dts[fout]), one, one)
        except (TypeError, RuntimeError) as exc:
            raise ValueError(f"torch {torch.__version__}: torch.addmm(..., out_dtype={dts[fout]}) is not available "
                             f"({' '.join(str(exc).split())[:160]}); fp16/bf16 -> fp32 needs torch >= 2.8") from None

    def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = fin == "tf32"
        try:
            a = torch.from_numpy(A).to(device=device, dtype=dts[fin])
            b = torch.from_numpy(B).to(device=device, dtype=dts[fin])
            c = torch.from_numpy(C).to(device=device, dtype=dts[fout])
            d = addmm(c, a, b)
            return d.to(torch.float64).cpu().numpy()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous

    call = f"torch.addmm(C, A, B{', out_dtype=' + fout if widen else ''})"
    return BlackBox(fn, fin, fout, name=f"torch {torch.__version__} CUDA {fin}->{fout}: {call}")


def cupy_matmul(in_format: str, out_format: str = "fp32") -> BlackBox:
    """GPU adapter with cupy: ``cupy.matmul`` on inputs in ``in_format``, then + C in
    ``out_format`` (fp16 inputs with fp32 output use ``cupy.matmul(..., dtype=float32)``)."""
    cp = _need("cupy", "the cupy adapter")
    dts = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
    fin, fout = _formats.format(in_format).name, _formats.format(out_format).name
    if fin not in dts or fout not in dts:
        raise ValueError(f"cupy adapter: formats {in_format!r} -> {out_format!r} not supported")

    def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        a = cp.asarray(A, dtype=dts[fin])
        b = cp.asarray(B, dtype=dts[fin])
        d = cp.matmul(a, b, dtype=dts[fout]) + cp.asarray(C, dtype=dts[fout])
        return cp.asnumpy(d).astype(np.float64)

    return BlackBox(fn, fin, fout, name=f"cupy {fin}->{fout}")


def pairs_gemm(A: np.ndarray, B: np.ndarray, C: np.ndarray, op: Callable) -> np.ndarray:
    """D = A @ B + C on a 16-lane bf16 pair instruction ``op(c, a, b)`` (the signature of
    :func:`workbench.probes.cpu_bf16.dpbf16ps`): the M * N outputs are lanes, K (padded with
    zeros to even) is consumed one pair per instruction, in order, from d = C."""
    M, K = A.shape
    N = B.shape[1]
    Kp = K + K % 2
    A2 = np.zeros((M, Kp), np.float32)
    B2 = np.zeros((Kp, N), np.float32)
    A2[:, :K], B2[:K] = A, B
    abits = (A2.view(np.uint32) >> 16).astype(np.uint16)
    bbits = (B2.view(np.uint32) >> 16).astype(np.uint16)
    n = M * N
    lanes = -(-n // 16) * 16
    rows, cols = np.divmod(np.arange(lanes) % n, N)
    d = np.asarray(C, np.float32).reshape(-1)[np.arange(lanes) % n].reshape(-1, 16)
    for t in range(0, Kp, 2):
        a = np.stack([abits[rows, t], abits[rows, t + 1]], axis=1).reshape(-1, 32)
        b = np.stack([bbits[t, cols], bbits[t + 1, cols]], axis=1).reshape(-1, 32)
        d = op(a, b, d)
    return d.reshape(-1)[:n].reshape(M, N).astype(np.float64)


def vdpbf16ps_target() -> BlackBox:
    """This CPU's ``VDPBF16PS`` as a black box (:func:`pairs_gemm`); ValueError naming
    the reason where the CPU lacks AVX512-BF16."""
    from . import cpu_bf16

    ok, why = cpu_bf16.unit_available()
    if not ok:
        raise ValueError(f"cpu-vdpbf16ps: {why}")
    return BlackBox(lambda A, B, C: pairs_gemm(A, B, C, cpu_bf16.dpbf16ps), "bf16", "fp32",
                    name=f"VDPBF16PS on {why}")


TARGETS: dict[str, Callable[[], BlackBox]] = {
    "numpy-fp64": lambda: numpy_target("fp64"),
    "numpy-fp32": lambda: numpy_target("fp32"),
    "cpu-vdpbf16ps": vdpbf16ps_target,
    "numpy-fp16": lambda: numpy_target("fp16"),
    "torch-cpu-bf16": lambda: torch_cpu("bf16"),
    "torch-cpu-fp16": lambda: torch_cpu("fp16"),
    "torch-cpu-fp32": lambda: torch_cpu("fp32"),
    "mldtypes-bf16": lambda: mldtypes_target("bf16"),
}


def target(name: str) -> BlackBox:
    """A black box by name (see the module docstring)."""
    if not isinstance(name, str):
        raise TypeError(f"target name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    if key in TARGETS:
        return TARGETS[key]()
    if key.startswith("preset:") or ":" in key or "->" in key or key.endswith(".toml"):
        from ..units import resolve, unit_name

        m = resolve(name, what="target")
        return from_model(m, name=f"preset {unit_name(m)}" if getattr(m, "name", "") else f"unit {name.strip()}")
    for prefix, make in (("torch-cuda-", torch_cuda), ("cupy-", cupy_matmul)):
        if key.startswith(prefix):
            fmts = key[len(prefix):].split("-")
            if len(fmts) != 2:
                raise ValueError(f"{name!r}: expected {prefix}IN-OUT, e.g. {prefix}fp16-fp32")
            return make(fmts[0], fmts[1])
    raise ValueError(f"unknown probe target {name!r}; known: {', '.join(TARGETS)}, "
                     "DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] or a catalogue name such as 'hopper/wgmma/fp16->fp32' "
                     "or a unit file (.toml), torch-cuda-IN-OUT, cupy-IN-OUT")
