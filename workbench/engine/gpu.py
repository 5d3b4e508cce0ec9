"""Where a product runs: ``device="cpu"`` (the compiled CPU kernels) or ``device="cuda"``
(the same arithmetic as CUDA kernels on an NVIDIA GPU), bit for bit the same result.

Why numba-cuda (not CuPy or Triton): the engine's arithmetic is numba ``@njit``
functions, and numba-cuda compiles a CPU ``@njit`` function that a CUDA kernel calls
as a device function from the same Python source, with the engine's LLVM intrinsics
(``llvm.ctlz``, ``llvm.fma``) and ``math`` functions (libdevice) mapped by NVVM.  The
GPU kernels (:mod:`workbench.engine.cuda_kernels`) are therefore thin launchers around
the CPU engine's per-output functions: one source of each operation's arithmetic, no
second implementation to keep equal.  CuPy raw kernels or Triton would need the
arithmetic rewritten in CUDA C++ or Triton's tile language.  numba-cuda also ships
a CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) that runs the kernels on the CPU, which
the tests use where no GPU is present.

Install: ``pip install 'mixed-precision-workbench[gpu]'`` (numba-cuda; a CUDA driver
is needed to run on a GPU, not to import this module).  ``device="cuda"`` without a
usable GPU raises :class:`GPUUnavailableError` - never a silent CPU run - and a kind
the kernels do not cover raises :class:`NotImplementedError` naming it
(:data:`GPU_KINDS` lists those covered).
"""
from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .ops import MODE_CODES
from . import fdpa_amd as _amd
from . import kernels as _k
from . import core as _core
from .core import ACCUMULATIONS
from .gst import gst_params, scale_operands
from .layout import P_K, P_NLIMBS
from .operations.efdpa import EFDPA
from .operations.ftz_addmul import FTZAddMul
from .operations.scaled import STFDPA
from .operations.tfdpa import accumulation_params
from .operations.trfdpa import TRFDPA
from .operands import Operands, pad_k, padded_decomposed
from .operation import operation

if TYPE_CHECKING:
    from .model import Model

#: Values of the ``device`` keyword: where the simulated unit's arithmetic runs (the
#: unit itself is the ``model``; ``workbench.preset("H100", ...)`` names a GPU's unit).
DEVICES = ("cpu", "cuda")


class GPUUnavailableError(RuntimeError):
    """``device="cuda"`` was asked for but numba-cuda or a usable CUDA GPU is missing."""


def check_device(device: Any) -> str:
    """``device`` if it is one of :data:`DEVICES`; otherwise a ValueError naming it."""
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError(f"device={device!r}: expected one of {DEVICES} (where the arithmetic runs; the simulated "
                         f"unit is chosen by model=, e.g. workbench.preset('H100', 'fp16', 'fp32'))")
    return device


@functools.cache
def cuda_module() -> ModuleType:
    """``numba.cuda`` once a usable GPU (or numba's CUDA simulator) is there; otherwise
    :class:`GPUUnavailableError` saying what is missing."""
    try:
        from numba import cuda
    except ImportError as exc:
        raise GPUUnavailableError(f"device='cuda' needs numba-cuda ({exc}): pip install "
                                  "'mixed-precision-workbench[gpu]'") from None
    from numba.cuda import config as cuda_config

    if not getattr(cuda_config, "ENABLE_CUDASIM") and not _numpy_supported():
        raise GPUUnavailableError(f"device='cuda': numba-cuda's kernel compiler needs numpy.row_stack, which numpy "
                                  f"{np.__version__} removed (numpy 2.5); install numpy<2.5 (the project's own pin)")
    if not cuda.is_available():
        try:
            cuda.current_context()
            reason = "numba.cuda.is_available() is False"
        except Exception as exc:  # noqa: BLE001 - the driver's own reason, reported
            reason = " ".join(str(exc).split()) or type(exc).__name__
        raise GPUUnavailableError(f"device='cuda': no usable CUDA GPU ({reason}); use device='cpu'")
    return cuda


def _numpy_supported() -> bool:
    """Whether numba-cuda's array typing imports with this numpy: numba-cuda 0.30 registers
    ``np.row_stack`` at its first kernel compilation, and numpy 2.5 removed it (an
    AttributeError deep in the first ``device="cuda"`` call, seen on an H100 machine with
    numpy 2.5.2)."""
    try:
        importlib.import_module("numba.cuda.np.arrayobj")
    except AttributeError:
        return False
    except ImportError:
        return True      # a numba-cuda without that module: nothing to check
    return True


def gpu_available() -> bool:
    """Whether ``device="cuda"`` can run here (numba-cuda and a GPU, or the simulator)."""
    try:
        cuda_module()
    except GPUUnavailableError:
        return False
    return True


def _kernels() -> ModuleType:
    cuda_module()
    from . import cuda_kernels

    return cuda_kernels


def _device(x: np.ndarray) -> Any:
    """A C-ordered copy of ``x`` on the GPU."""
    return cuda_module().to_device(np.ascontiguousarray(x))


def _launch_tfdpa(ops: Operands, acc: np.ndarray, prm: np.ndarray) -> np.ndarray:
    """The T-FDPA kernel on decomposed operands (``sa, ea`` (M, Kp), ``sb, eb`` (Kp, N')
    indexed ``[k, j]``, any layout) from C in ``acc``; D."""
    ck = _kernels()
    sa, ea = cast(np.ndarray, ops.sa), cast(np.ndarray, ops.ea)
    sb, eb = cast(np.ndarray, ops.sb), cast(np.ndarray, ops.eb)
    fast = bool(_k.fast_eligible(prm))
    d_acc = _device(acc)
    ck.tfdpa_kernel[ck.blocks(acc.size), ck.THREADS](_device(sa), _device(ea), _device(sb[:, :ops.N]),
                                                     _device(eb[:, :ops.N]), d_acc, _device(prm), fast)
    return np.asarray(d_acc.copy_to_host())


def _run_tfdpa(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
               scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """T-FDPA (every NVIDIA preset, custom T-FDPA units: sticky bit, c late, interleaved
    groups; chain, outside and promote accumulation) on the operands
    :meth:`TFDPA.prepare <workbench.engine.operations.TFDPA.prepare>` decomposed."""
    operation(model.kind).check_run(accumulation, promote_every, scale_a, scale_b)
    return _launch_tfdpa(ops, acc, accumulation_params(model, accumulation, promote_every))


def _run_stfdpa(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
                scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """ST-FDPA (Xie et al. 2025 Algorithm 8: the MX presets; chain and outside
    accumulation): the T-FDPA kernel on the operands whose exponents carry their
    block's scale exponents (:meth:`STFDPA.scaled_operands
    <workbench.engine.operations.scaled.STFDPA.scaled_operands>`, on the host), as on the CPU."""
    op = cast(STFDPA, operation(model.kind))
    op.check_run(accumulation, promote_every, scale_a, scale_b)
    assert scale_a is not None and scale_b is not None
    return _launch_tfdpa(op.scaled_operands(model, ops, scale_a, scale_b), acc,
                         accumulation_params(model, accumulation, None))


def _run_gstfdpa(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
                 scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """GST-FDPA (Xie et al. 2025 Algorithm 9: the NVFP4/MXFP4 k64 presets; chain
    accumulation): one :func:`~workbench.engine.gst.gst_chain` per thread on the
    decomposed operands and scales (:func:`~workbench.engine.gst.scale_operands`)."""
    operation(model.kind).check_run(accumulation, promote_every, scale_a, scale_b)
    assert scale_a is not None and scale_b is not None
    ck = _kernels()
    cuda = cuda_module()
    groups = model.L // cast(int, model.G)
    if groups > ck.MAX_GROUPS:
        raise NotImplementedError(f"device='cuda': GST-FDPA with L/G={groups} groups per block; the kernel's "
                                  f"per-thread group terms hold at most {ck.MAX_GROUPS} (use device='cpu')")
    r = gst_params(model)
    sa, ea = cast(np.ndarray, ops.sa), cast(np.ndarray, ops.ea)
    sb, eb = cast(np.ndarray, ops.sb), cast(np.ndarray, ops.eb)      # (Kp, Np)
    xsa, xea, xsb, xeb = scale_operands(model, sa.shape[1], sb.shape[1], scale_a, scale_b)
    N = ops.N

    def by_column(x: np.ndarray) -> Any:
        """(N, rows) on the device, stored (rows, N): gst_chain reads ``x[j, k]`` and a
        warp's threads (consecutive j) read adjacent elements."""
        return cuda.to_device(np.ascontiguousarray(x[:, :N]).T)

    d_acc = cuda.to_device(acc)
    ck.gst_kernel[ck.blocks(acc.size), ck.THREADS](
        _device(sa), _device(ea), by_column(sb),
        by_column(eb), cuda.to_device(xsa), cuda.to_device(xea), by_column(xsb), by_column(xeb), d_acc,
        cuda.to_device(r))
    return np.asarray(d_acc.copy_to_host())


def _run_fma(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
             scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """FMA chains (fp32 and fp64, c early or late) on float64 A and B."""
    if accumulation != "chain":
        raise ValueError("an FMA chain has no blocks to accumulate outside; use accumulation='chain'")
    operation(model.kind).check_run(accumulation, promote_every, scale_a, scale_b)
    ck = _kernels()
    cuda = cuda_module()
    out = model.out_fmt
    A = _device(cast(np.ndarray, ops.A))
    B = _device(cast(np.ndarray, ops.BT).T)
    grid = ck.blocks(acc.size)
    how, p, emin, emax = _k.fma_code(out)
    if model.c_position == "early":
        d_acc = cuda.to_device(acc)
        ck.fma_kernel[grid, ck.THREADS](A, B, d_acc, how, p, emin, emax)
        return np.asarray(d_acc.copy_to_host())
    # c late: the chain starts from 0 and c is added once at the end, rounded on its own
    d = cuda.to_device(np.zeros_like(acc))
    ck.fma_kernel[grid, ck.THREADS](A, B, d, how, p, emin, emax)
    ck.add_late_kernel[grid, ck.THREADS](d, cuda.to_device(acc), out.p, out.emin, out.emax,
                                         MODE_CODES[model.late_rounding], model.flush_output_subnormals)
    return np.asarray(d.copy_to_host())


def _run_amd(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
             scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """E-FDPA, TR-FDPA and GTR-FDPA (Xie et al. 2025 Algorithms 6, 10 and 11: the AMD
    CDNA1 and CDNA3 presets, and custom units of those kinds): one
    :func:`~workbench.engine.fdpa_amd.amd_chain` per thread on the operands the CPU's
    ``prepare`` decomposed (or decomposed here, where E-FDPA's ``prepare`` kept float64
    operands only for its binary64 lane kernel)."""
    op = cast("EFDPA | TRFDPA", operation(model.kind))
    op.check_run(accumulation, promote_every, scale_a, scale_b)
    ck = _kernels()
    code = op.code
    q = _amd.amd_params(model, code)
    q[P_K] = ops.K
    if q[P_NLIMBS] > ck.MAX_LIMBS:
        raise NotImplementedError(f"device='cuda': this E-FDPA unit's exact sum needs {q[P_NLIMBS]} limbs of 30 bits; "
                                  f"the kernel's per-thread accumulator holds {ck.MAX_LIMBS} (use device='cpu')")
    A, BT = cast(np.ndarray, ops.A), cast(np.ndarray, ops.BT)
    if ops.sa is None or ops.ea is None or ops.sb is None or ops.eb is None:
        _, _, sa, ea, sbt, ebt = padded_decomposed(model, A, BT, model.L)
        sb, eb = sbt.T, ebt.T
    else:
        sa, ea, sb, eb = ops.sa, ops.ea, ops.sb, ops.eb
    if code != _amd.KIND_E or ops.K == 0 or not (ops.special or np.isnan(acc).any()):
        # no NaN payload to choose from A and B (TR-/GTR-FDPA's NaN is canonical; no products; or no NaN
        # can arise: finite products never meet an infinity of the other sign), so they stay on the host
        A = BT = np.zeros((1, 1))

    d_acc = _device(acc)
    ck.amd_kernel[ck.blocks(acc.size), ck.THREADS](_device(A), _device(BT), _device(sa), _device(ea),
                                                   _device(sb[:, :ops.N]), _device(eb[:, :ops.N]), d_acc, _device(q))
    return np.asarray(d_acc.copy_to_host())


def _run_ftz_addmul(model: "Model", ops: Operands, acc: np.ndarray, accumulation: str, promote_every: int | None,
                    scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
    """FTZ-AddMul (Xie et al. 2025 Algorithms 1-2: the AMD CDNA2 presets): one
    :func:`~workbench.engine.others.ftz_chain` per thread on float64 A and B^T, K
    zero-padded to whole blocks of P."""
    op = cast(FTZAddMul, operation(model.kind))
    op.check_run(accumulation, promote_every, scale_a, scale_b)
    ck = _kernels()
    cuda = cuda_module()
    P = op.block_size(model)
    A, BT = pad_k(np.asarray(ops.A, dtype=np.float64), np.asarray(ops.BT, dtype=np.float64), P)
    min_normal = model.in_fmt.min_normal if model.flush_subnormals else 0.0
    d_acc = cuda.to_device(acc)
    ck.ftz_kernel[ck.blocks(acc.size), ck.THREADS](_device(A), cuda.to_device(np.asfortranarray(BT)), d_acc, P,
                                                   min_normal)
    return np.asarray(d_acc.copy_to_host())


Runner = Callable[["Model", Operands, np.ndarray, str, "int | None", "np.ndarray | None", "np.ndarray | None"],
                  np.ndarray]
#: The kinds the CUDA kernels compute, and how (the same arguments as
#: :meth:`Operation.run <workbench.engine.operation.Operation.run>`).
GPU_KINDS: dict[str, Runner] = {"t-fdpa": _run_tfdpa, "st-fdpa": _run_stfdpa, "gst-fdpa": _run_gstfdpa,
                                 "fma": _run_fma, "e-fdpa": _run_amd, "tr-fdpa": _run_amd, "gtr-fdpa": _run_amd,
                                 "ftz-addmul": _run_ftz_addmul}


def check_supported(model: "Model") -> None:
    """NotImplementedError naming ``model.kind`` when the CUDA kernels do not compute it."""
    if model.kind not in GPU_KINDS:
        raise NotImplementedError(f"device='cuda' does not compute kind={model.kind!r} models yet (GPU kinds: "
                                  f"{tuple(GPU_KINDS)}); use device='cpu'")


def run_prepared(model: "Model", ops: Operands, C: np.ndarray, *, accumulation: str = "chain",
                 promote_every: int | None = None, scale_a: np.ndarray | None = None,
                 scale_b: np.ndarray | None = None) -> np.ndarray:
    """:func:`workbench.engine.core.run_prepared` on the GPU: D = the unit's A @ B + C as
    float64 (values exactly in the output format), bit for bit the CPU's result."""
    if accumulation not in ACCUMULATIONS:
        raise ValueError(f"accumulation={accumulation!r}: expected one of {ACCUMULATIONS}")
    check_supported(model)
    acc = np.array(C, dtype=np.float64, copy=True, order="C")
    if acc.size == 0:        # no output, no kernel: the CPU path checks the arguments and returns it
        return _core.run_prepared(model, ops, acc, accumulation=accumulation, promote_every=promote_every,
                                  scale_a=scale_a, scale_b=scale_b)
    with warnings.catch_warnings():
        # one thread per output: a product with few outputs (Figure 7's 10 x k x 10) launches a
        # grid of one block on purpose, and numba-cuda would warn of low occupancy on every call
        # (its message starts with a terminal colour code, hence the leading .*; catch_warnings
        # swaps the process's filter list, so calls from several threads at once may see each
        # other's filters until Python 3.14's thread-safe catch_warnings)
        warnings.filterwarnings("ignore", message=r".*Grid size \d+ will likely result in GPU under-utilization")
        return GPU_KINDS[model.kind](model, ops, acc, accumulation, promote_every, scale_a, scale_b)


__all__ = ["DEVICES", "GPU_KINDS", "GPUUnavailableError", "check_device", "check_supported", "cuda_module",
           "gpu_available", "run_prepared"]
