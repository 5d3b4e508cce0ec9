"""device="cuda" against device="cpu", bit for bit, in numba's CUDA simulator.

Not collected by the default run (the file name does not start with ``test_``):
``tests/test_gpu.py`` runs it with pytest in a subprocess whose environment sets
``NUMBA_ENABLE_CUDASIM=1`` before numba.cuda is first imported, so the rest of the
suite never sees the simulator.  ``GPU_SIM_EXAMPLES`` sets hypothesis' examples per
test (the simulator runs every CUDA thread as a Python thread: tiny shapes only).

The oracle is the CPU path (``workbench.gemm(..., device="cpu")``), itself held to
the papers, the GPU vectors and MMA-Sim by the rest of the suite; what this checks is
the GPU kernels' own logic: the launch shape and thread -> output mapping (shapes
spanning several blocks, none a multiple of the block), the operand layouts they
read, the parameters they pass, the accumulation modes and late c.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench import catalogue
from workbench import formats as F
from workbench.engine import gpu

EXAMPLES = int(os.environ.get("GPU_SIM_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PRESETS = [r for r in catalogue.records() if r.kind in gpu.GPU_KINDS]


def test_simulator_when_asked() -> None:
    from workbench.engine import cuda_kernels

    assert cuda_kernels.SIMULATED == (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")


def values(rng: np.random.Generator, shape: tuple[int, int], fmt: str, specials: bool) -> np.ndarray:
    """Values of ``fmt``: zeros of both signs, subnormals, the largest finite values,
    ties, wide exponent spreads, and with ``specials`` NaN and +-Inf where ``fmt`` has them."""
    f = F.format(fmt)
    n = int(np.prod(shape))
    kind = rng.integers(0, 100, n)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-20, 21, n).astype(float))
    x[kind < 10] = 0.0
    x[(kind >= 10) & (kind < 13)] = -0.0
    sub = (kind >= 13) & (kind < 20)
    x[sub] = rng.integers(-8, 9, sub.sum()) * f.min_normal * 2.0 ** (1 - f.p)
    big = (kind >= 20) & (kind < 24)
    x[big] = rng.choice([-1.0, 1.0], big.sum()) * f.max
    ties = (kind >= 24) & (kind < 32)
    x[ties] = rng.choice([-1.0, 1.0], ties.sum()) * (1 + rng.integers(0, 4, ties.sum()) / 4)
    x = wb.round(x, fmt)
    if specials:
        if f.has_nan:
            x[kind == 99] = np.nan
        if f.has_inf:
            x[kind == 98] = np.inf
            x[kind == 97] = -np.inf
    return x.reshape(shape)


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and bool(np.array_equal(x.view(np.uint8), y.view(np.uint8)))


def check(model: wb.Model, seed: int, m: int, k: int, n: int, specials: bool, **kw: object) -> None:
    rng = np.random.default_rng(seed)
    A = values(rng, (m, k), model.in_format, specials)
    B = values(rng, (k, n), model.in_format, specials)
    C = values(rng, (m, n), model.out_format, specials)
    want = wb.gemm(A, B, C, model=model, **kw)
    got = wb.gemm(A, B, C, model=model, device="cuda", **kw)
    assert same_bits(got, want), (model.describe(), kw, A, B, C, got, want)


shapes = st.tuples(st.integers(1, 9), st.integers(0, 70), st.integers(1, 7))


@SETTINGS
@given(st.sampled_from(PRESETS), st.integers(0, 2**32 - 1), shapes, st.booleans())
def test_presets(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    """Every T-FDPA and FMA-chain preset (interleaved fp8 mma.sync and c-late ones included)."""
    check(model, seed, *shape, specials)


@st.composite
def custom_tfdpa(draw: st.DrawFn) -> wb.Model:
    in_format = draw(st.sampled_from(["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2"]))
    out_format = draw(st.sampled_from(["fp32", "fp16"])) if in_format == "fp16" else "fp32"
    interleave = draw(st.sampled_from([1, 1, 2]))
    L = draw(st.sampled_from([2, 4, 8, 16] if interleave == 1 else [4, 8, 16, 32]))
    return wb.custom_model(in_format, out_format, kind="t-fdpa", L=L, F=draw(st.integers(3, 56)),
                           rounding=draw(st.sampled_from(["rz", "rne", "rd", "ru"])), sticky=draw(st.booleans()),
                           c_position=draw(st.sampled_from(["early", "late"])),
                           zero_exponent=draw(st.sampled_from([None, -133, -21, 0])), interleave=interleave,
                           flush_output_subnormals=draw(st.booleans()))


@SETTINGS
@given(custom_tfdpa(), st.integers(0, 2**32 - 1), shapes, st.booleans())
def test_custom_tfdpa_units(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    """User-defined T-FDPA units over the parameter space (windows beyond the lane
    kernel's, so the general per-block path runs too)."""
    check(model, seed, *shape, specials)


@SETTINGS
@given(st.sampled_from([r for r in PRESETS if r.kind == "t-fdpa"]), st.integers(0, 2**32 - 1), shapes,
       st.sampled_from(["outside", "promote"]), st.integers(1, 3))
def test_accumulation_modes(model: wb.Model, seed: int, shape: tuple[int, int, int], accumulation: str,
                            every: int) -> None:
    kw: dict[str, object] = {"accumulation": accumulation}
    if accumulation == "promote":
        kw["promote_every"] = every * model.L
    check(model, seed, *shape, False, **kw)


@SETTINGS
@given(st.sampled_from(["fp32", "fp64"]), st.integers(0, 2**32 - 1), shapes, st.booleans())
def test_fma_chain_with_late_c(fmt: str, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    model = wb.custom_model(fmt, fmt, kind="fma", c_position="late",
                            late_rounding="rz" if seed % 2 else "rne")
    check(model, seed, *shape, specials)


def test_epilogue_and_input_rounding() -> None:
    """alpha/beta outside the unit and input_rounding run around the GPU product as around the CPU's."""
    model = wb.preset("H100", "fp16", "fp32")
    rng = np.random.default_rng(7)
    A, B, C = rng.standard_normal((5, 33)), rng.standard_normal((33, 6)), wb.round(rng.standard_normal((5, 6)), "fp32")
    kw = dict(alpha=0.75, beta=-1.5, input_rounding="rne")
    assert same_bits(wb.gemm(A, B, C, model=model, device="cuda", **kw), wb.gemm(A, B, C, model=model, **kw))


@pytest.mark.parametrize("name", ["markidis", "ootomo_yokota", "multiword", "cutlass_xtf32", "bf16xn"])
def test_algorithms_pass_the_device_through(name: str) -> None:
    """The algorithms' unit GEMMs on device="cuda" give the CPU's bits."""
    import algorithms

    fn = algorithms.ALGORITHMS[name]
    model = wb.preset("A100", {"cutlass_xtf32": "tf32", "bf16xn": "bf16"}.get(name, "fp16"), "fp32")
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((6, 40)), rng.standard_normal((40, 5))
    assert same_bits(np.asarray(fn(A, B, model=model, device="cuda")), np.asarray(fn(A, B, model=model)))


def test_lu_trailing_updates_on_the_device() -> None:
    import algorithms

    A = np.random.default_rng(6).standard_normal((20, 20))
    model = wb.preset("A100", "fp16", "fp32")
    got, want = algorithms.lu(A, model=model, block=8, device="cuda"), algorithms.lu(A, model=model, block=8)
    assert same_bits(got.L, want.L) and same_bits(got.U, want.U)
