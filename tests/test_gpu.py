"""The GPU back end (issue 21, item 3): ``device=`` of ``workbench.gemm``.

* the keyword: bad values, no GPU - clear errors, never a silent CPU run; every kind of
  the catalogue has kernels (a user's kind without them: tests/test_extensibility.py);
* the kernels' logic in numba's CUDA simulator (``tests/gpu_simulator_cases.py`` in a
  subprocess with ``NUMBA_ENABLE_CUDASIM=1``): device="cuda" against device="cpu", bit
  for bit, over presets, custom units, shapes and values drawn by hypothesis;
* the kernels type and lower for the CUDA target (NVVM IR for sm_90) on a machine
  without a GPU: the engine's shared functions compile as device functions and need
  nothing but LLVM intrinsics NVVM implements and libdevice;
* on a real GPU (skipped without one): the differential test against the CPU path on
  every covered preset at sizes the simulator cannot reach.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench.engine import gpu

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from gpu_simulator_cases import SCALE_KINDS, check, custom_amd, custom_tfdpa, operands  # noqa: E402
HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
needs_numba_cuda = pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed "
                                      "(pip install -e '.[dev]' or '.[gpu]')")


def _real_gpu() -> tuple[bool, str]:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False, "NUMBA_ENABLE_CUDASIM=1: numba.cuda is the simulator, not a GPU"
    try:
        gpu.cuda_module()
    except gpu.GPUUnavailableError as exc:
        return False, str(exc)
    return True, ""


@pytest.mark.parametrize("device", ["H100", "gpu", "CUDA", "", None, 0])
def test_bad_device_names_the_value_and_the_allowed_ones(device):
    with pytest.raises(ValueError) as err:
        wb.gemm(np.ones((2, 2)), np.ones((2, 2)), model=wb.preset("H100", "fp16", "fp32"), device=device)
    assert repr(device) in str(err.value) and "'cpu', 'cuda'" in str(err.value)


def test_torch_policy_checks_its_device():
    pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    from workbench.torch import Policy

    with pytest.raises(ValueError, match="device='gpu'"):
        Policy(forward=wb.preset("H100", "fp16", "fp32"), device="gpu")


def test_every_preset_has_gpu_kernels():
    """Issue 21 item 3: device="cuda" on every preset (a kind registered by a user and
    without CUDA kernels is named instead: tests/test_extensibility.py)."""
    assert {r.kind for r in catalogue.records()} <= set(gpu.gpu_kinds())


def test_cuda_without_a_gpu_is_an_error_not_a_cpu_run():
    ok, _ = _real_gpu()
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(gpu.GPUUnavailableError, match="numba-cuda|no usable CUDA GPU"):
        wb.gemm(np.ones((2, 2)), np.ones((2, 2)), model=wb.preset("H100", "fp16", "fp32"), device="cuda")


# numba-cuda 0.30.4's warning on a grid of fewer than 128 blocks, as it reached the user on an H100
# (a terminal colour code first): one per call of a Figure 7 sweep task, thousands in a grid
LOW_OCCUPANCY = "\x1b[1mGrid size 1 will likely result in GPU under-utilization due to low occupancy.\x1b[0m"


def test_the_low_occupancy_warning_is_not_repeated_but_others_pass(monkeypatch):
    model = wb.preset("H100", "fp16", "fp32")
    seen = []

    def runner(model, ops, acc, *rest):
        warnings.warn(LOW_OCCUPANCY, RuntimeWarning)
        warnings.warn("another warning", RuntimeWarning)
        seen.append(acc.shape)
        return acc

    monkeypatch.setattr(type(model.operation), "run_cuda", lambda self, *args: runner(*args))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        D = gpu.run_prepared(model, None, np.ones((10, 10)))
    assert seen == [(10, 10)] and np.array_equal(D, np.ones((10, 10)))
    assert [str(w.message) for w in caught] == ["another warning"]


def _simulator(examples: int) -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", GPU_SIM_EXAMPLES=str(examples))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "",
                           str(ROOT / "tests" / "gpu_simulator_cases.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert re.search(r"\b22 passed\b", proc.stdout), proc.stdout[-2000:]


@needs_numba_cuda
def test_kernels_in_the_cuda_simulator_match_the_cpu_bit_for_bit():
    _simulator(40)


@needs_numba_cuda
@pytest.mark.slow
def test_kernels_in_the_cuda_simulator_many_examples():
    _simulator(400)


@needs_numba_cuda
def test_kernels_lower_for_the_cuda_target_without_a_gpu(monkeypatch):
    """The CUDA target types and lowers every kernel with the engine's functions as
    device functions (cc 9.0, as for an H100); nothing is declared but NVVM's LLVM
    intrinsics, libdevice and the engine's own functions compiled for the GPU (a CPU
    helper left in would fail to link on the device)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("numba.cuda is the simulator in this process")
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda import types
    from numba.cuda.compiler import compile_cuda

    from workbench.engine import cuda_kernels as ck
    from workbench.engine.operations.amd_fdpa.cuda import amd_kernel
    from workbench.engine.operations.fma.cuda import fma_kernel
    from workbench.engine.operations.ftz_addmul.cuda import ftz_kernel
    from workbench.engine.operations.tfdpa.cuda import tfdpa_kernel
    from workbench.engine.operations.gstfdpa.cuda import gst_kernel
    from workbench.engine.operations.pair_dot.cuda import pair_kernel

    sm90 = type("SM90", (), {"compute_capability": (9, 0)})()
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: sm90)  # no driver asked for one
    i32, f64 = types.Array(types.int32, 2, "C"), types.Array(types.float64, 2, "C")
    i32f = types.Array(types.int32, 2, "F")     # B and its scales as gst_kernel reads them: [j, k] of (K, N)
    kernels = {
        "tfdpa": (tfdpa_kernel, (i32, i32, i32, i32, f64, types.Array(types.int64, 1, "C"), types.boolean),
                  {"llvm.ctlz.i64", "__nv_ldexp", "__nv_frexp"}),
        "gst": (gst_kernel, (i32, i32, i32f, i32f, i32, i32, i32f, i32f, f64, types.Array(types.int64, 1, "C")),
                {"llvm.ctlz.i64", "__nv_frexp"}),
        "fma": (fma_kernel, (f64, f64, f64) + (types.int64,) * 4, {"llvm.fma.f64", "llvm.fma.f32"}),
        "amd": (amd_kernel, (f64, f64, i32, i32, i32, i32, f64, types.Array(types.int64, 1, "C")),
                {"llvm.ctlz.i64", "__nv_ldexp", "__nv_frexp", "__nv_isinfd"}),
        "ftz": (ftz_kernel, (f64, types.Array(types.float64, 2, "F"), f64, types.int64, types.float64),
                {"__nv_isinfd"}),
        "pair": (pair_kernel, (f64, f64, f64, types.int64, types.int64), set()),
        "add_late": (ck.add_late_kernel, (f64, f64) + (types.int64,) * 4 + (types.boolean,), {"__nv_frexp"}),
    }
    for name, (kernel, argtypes, needed) in kernels.items():
        ir = compile_cuda(kernel.py_func, types.void, argtypes, cc=(9, 0)).library.get_llvm_str()
        declared = set(re.findall(r'^declare [^@\n]*@"?([\w.$]+)', ir, flags=re.M))
        assert needed <= declared, (name, sorted(declared))
        foreign = {d for d in declared if not d.startswith(("llvm.", "__nv_", "_ZN9workbench"))}
        assert not foreign, (name, sorted(foreign))


# ------------------------------------------------------------------ on a real GPU
REAL_GPU, NO_GPU_REASON = _real_gpu() if HAS_NUMBA_CUDA else (False, "numba-cuda is not installed")
on_gpu = pytest.mark.skipif(not REAL_GPU, reason=f"no GPU for the differential test: {NO_GPU_REASON}")
GPU_PRESETS = [r for r in catalogue.records() if r.kind in gpu.gpu_kinds()]


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and bool(np.array_equal(x.view(np.uint8), y.view(np.uint8)))


@on_gpu
@pytest.mark.parametrize("name", [r.name for r in GPU_PRESETS])
def test_gpu_matches_cpu_on_every_covered_preset(name):
    model = next(r for r in GPU_PRESETS if r.name == name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shapes = ((67, 301, 45, False), (33, 129, 70, True), (1, 1000, 1, True))
    for (m, k, n, specials), scale_kind in zip(shapes, SCALE_KINDS):
        A, B, C, sc = operands(model, rng, m, k, n, specials, scale_kind)
        assert _same_bits(wb.gemm(A, B, C, model=model, device="cuda", **sc),
                          wb.gemm(A, B, C, model=model, **sc)), (m, k, n, scale_kind)
    modes = {"t-fdpa": ({"accumulation": "outside"}, {"accumulation": "promote", "promote_every": 4 * model.L}),
             "st-fdpa": ({"accumulation": "outside"},)}
    for kw in modes.get(model.kind, ()):
        assert _same_bits(wb.gemm(A, B, C, model=model, device="cuda", **sc, **kw),
                          wb.gemm(A, B, C, model=model, **sc, **kw)), kw


@on_gpu
@pytest.mark.parametrize("units, mn, k", [(custom_tfdpa, 80, 400), (custom_amd, 60, 300)], ids=["t-fdpa", "amd"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_gpu_matches_cpu_on_custom_units(units, mn, k, data):
    """User-defined T-FDPA units, and units of the AMD kinds (the AMD ones on smaller
    shapes: E-FDPA's limbs make each output slower)."""
    check(data.draw(units()), data.draw(st.integers(0, 2**32 - 1)), data.draw(st.integers(1, mn)),
          data.draw(st.integers(0, k)), data.draw(st.integers(1, mn)), data.draw(st.booleans()))


@on_gpu
def test_gpu_matches_cpu_on_a_large_product():
    model = wb.preset("H100", "fp16", "fp32")
    rng = np.random.default_rng(3)
    A = wb.round(rng.standard_normal((512, 2048)), "fp16")
    B = wb.round(rng.standard_normal((2048, 384)), "fp16")
    assert _same_bits(wb.gemm(A, B, model=model, device="cuda"), wb.gemm(A, B, model=model))


@on_gpu
def test_gpu_matches_cpu_quietly_on_a_skinny_product():
    """Figure 7's shape: 100 outputs launch one block, and numba-cuda's low-occupancy
    warning is not repeated to the user on every such call."""
    model = wb.preset("B200", "fp8_e5m2", "fp32")
    rng = np.random.default_rng(4)
    A = wb.round(rng.standard_normal((10, 5000)), "fp8_e5m2")
    B = wb.round(rng.standard_normal((5000, 10)), "fp8_e5m2")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*under-utilization")
        D = wb.gemm(A, B, model=model, device="cuda")
    assert _same_bits(D, wb.gemm(A, B, model=model))
