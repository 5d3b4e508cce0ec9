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
(:func:`gpu_kinds` lists those covered).
Each operation launches its own kernel (:meth:`Operation.run_cuda
<workbench.engine.model.Operation.run_cuda>`); this module holds what they share.
"""
from __future__ import annotations

import functools
import importlib
import warnings
from types import ModuleType
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import core as _core
from .core import ACCUMULATIONS
from .model import OPERATIONS
from .operands import Operands

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


def runner(device: Any, model: "Model") -> Callable[..., np.ndarray]:
    """The one place that picks where a unit's prepared operands run: ``device``
    checked (:func:`check_device`), then :func:`workbench.engine.core.run_prepared` for
    ``"cpu"``, or this module's :func:`run_prepared` for ``"cuda"`` once ``model``'s kind
    is known to have GPU kernels and a GPU (or numba's simulator) is there."""
    if check_device(device) == "cuda":
        check_supported(model)
        cuda_module()
        return run_prepared
    return _core.run_prepared


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


def kernels_module() -> ModuleType:
    """:mod:`workbench.engine.cuda_kernels`, once a GPU (or the simulator) is there."""
    cuda_module()
    from . import cuda_kernels

    return cuda_kernels


def to_device(x: np.ndarray) -> Any:
    """A C-ordered copy of ``x`` on the GPU."""
    return cuda_module().to_device(np.ascontiguousarray(x))


def launch_per_output(kernel: Any, ops: Operands, acc: np.ndarray, *args: Any) -> np.ndarray:
    """``kernel(A, BT, acc, *args)`` with one GPU thread per output (the launch shape of
    :mod:`workbench.engine.cuda_kernels`) on the operands' A and B^T, and ``acc`` back from
    the device: the launch of the operations whose kernel runs one chain per output."""
    ck = kernels_module()
    assert ops.A is not None and ops.BT is not None
    d_acc = cuda_module().to_device(acc)
    kernel[ck.blocks(acc.size), ck.THREADS](to_device(ops.A), to_device(ops.BT), d_acc, *args)
    return np.asarray(d_acc.copy_to_host())


def gpu_kinds() -> tuple[str, ...]:
    """The registered kinds the CUDA kernels compute (operations with
    :attr:`~workbench.engine.model.Operation.has_cuda_kernel`)."""
    return tuple(kind for kind, op in OPERATIONS.items() if op.has_cuda_kernel)


def check_supported(model: "Model") -> None:
    """NotImplementedError naming ``model.kind`` when the CUDA kernels do not compute it."""
    if not model.operation.has_cuda_kernel:
        raise NotImplementedError(f"device='cuda' does not compute kind={model.kind!r} models yet (GPU kinds: "
                                  f"{gpu_kinds()}); use device='cpu'")


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
        D = model.operation.run_cuda(model, ops, acc, accumulation, promote_every, scale_a, scale_b)
    return model.operation.finish(model, D)


__all__ = ["DEVICES", "gpu_kinds", "GPUUnavailableError", "check_device", "check_supported", "cuda_module",
           "gpu_available", "launch_per_output", "run_prepared", "runner"]
