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
read, the parameters they pass, the accumulation modes, late c and the block scales
of ST-FDPA and GST-FDPA.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench.numbers import formats as F
from workbench.engine import gpu

sys.path.insert(0, str(Path(__file__).parent))
from operand_values import values  # noqa: E402 - shared with test_small_path

EXAMPLES = int(os.environ.get("GPU_SIM_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PRESETS = [r for r in catalogue.records() if r.kind in gpu.gpu_kinds()]


def test_simulator_when_asked() -> None:
    from workbench.engine import cuda_kernels

    assert cuda_kernels.SIMULATED == (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and bool(np.array_equal(x.view(np.uint8), y.view(np.uint8)))


SCALE_KINDS = ("near", "wide", "nan")


def scales(rng: np.random.Generator, shape: tuple[int, int], fmt: str, kind: str) -> np.ndarray:
    """Block scale factors of ``fmt``: within 2**+-4 of 1 ("near"), over the format's
    whole range, subnormals included where it has them ("wide"), or "near" ones with
    NaN among them ("nan", where the format has NaN)."""
    f = F.format(fmt)
    lo, hi = (f.emin - f.man_bits, f.emax) if kind == "wide" else (-4, 4)
    x = np.exp2(rng.integers(lo, hi + 1, shape).astype(float)) * (1 + rng.integers(0, 8, shape) / 8)
    x = wb.round(np.minimum(x, f.max), fmt)
    if kind == "nan" and f.has_nan:
        x[rng.random(shape) < 0.1] = np.nan
    return x


def operands(model: wb.Model, rng: np.random.Generator, m: int, k: int, n: int, specials: bool,
             scale_kind: str = "near") -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A, B, C and, for block-scaled models, their scale factors (``scale_a``/``scale_b``)."""
    A = values(rng, (m, k), model.in_format, specials)
    B = values(rng, (k, n), model.formats[1].name, specials)     # B's own format (int-mma: s8 x u8)
    C = values(rng, (m, n), model.out_format, specials)
    if not model.operation.scaled:
        return A, B, C, {}
    nb = -(-k // model.k_block)
    sf = str(model.scale_format)
    return A, B, C, {"scale_a": scales(rng, (m, nb), sf, scale_kind), "scale_b": scales(rng, (nb, n), sf, scale_kind)}


def check(model: wb.Model, seed: int, m: int, k: int, n: int, specials: bool, scale_kind: str = "near",
          **kw: object) -> None:
    A, B, C, sc = operands(model, np.random.default_rng(seed), m, k, n, specials, scale_kind)
    want = wb.gemm(A, B, C, model=model, **sc, **kw)
    got = wb.gemm(A, B, C, model=model, device="cuda", **sc, **kw)
    assert same_bits(got, want), (model.describe(), kw, A, B, C, sc, got, want)


shapes = st.tuples(st.integers(1, 9), st.integers(0, 70), st.integers(1, 7))


@SETTINGS
@given(st.sampled_from([r for r in PRESETS if not r.operation.scaled]), st.integers(0, 2**32 - 1), shapes,
       st.booleans())
def test_presets(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    """Every T-FDPA and FMA-chain preset (interleaved fp8 mma.sync and c-late ones included)."""
    check(model, seed, *shape, specials)


SCALED = [r for r in PRESETS if r.operation.scaled]
scaled_shapes = st.tuples(st.integers(1, 6), st.integers(0, 140), st.integers(1, 6))


@SETTINGS
@given(st.sampled_from(SCALED), st.integers(0, 2**32 - 1), scaled_shapes, st.booleans(),
       st.sampled_from(SCALE_KINDS), st.sampled_from(["chain", "outside"]))
def test_block_scaled_presets(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool,
                              scale_kind: str, accumulation: str) -> None:
    """Every ST-FDPA (MX, chain and outside) and GST-FDPA (NVFP4/MXFP4 k64) preset:
    K over several scale blocks and not a multiple of one, scales near 1, over their
    format's whole range, or NaN."""
    if model.kind == "gst-fdpa":
        accumulation = "chain"
    check(model, seed, *shape, specials, scale_kind, accumulation=accumulation)


@SETTINGS
@given(st.sampled_from([("fp6_e2m3", 32, 8, 16, "ue4m3"), ("fp8_e4m3", 64, 16, 32, "e8m0"),
                        ("fp4_e2m1", 64, 4, 16, "ue4m3")]),
       st.integers(0, 2**32 - 1), scaled_shapes, st.booleans(), st.sampled_from(SCALE_KINDS))
def test_custom_gst_units(unit: tuple[str, int, int, int, str], seed: int, shape: tuple[int, int, int],
                          specials: bool, scale_kind: str) -> None:
    """User-defined GST-FDPA units (other input and scale formats, groups, blocks and
    roundings; 16 groups per block: the kernel's most)."""
    fmt, L, G, kb, sf = unit
    model = wb.custom_model(fmt, "fp32", kind="gst-fdpa", L=L, F=30, G=G, k_block=kb, scale_format=sf,
                            rounding="rne" if seed % 2 else "rz", zero_exponent=-139 if seed % 3 else None)
    check(model, seed, *shape, specials, scale_kind)


def test_gst_units_with_more_groups_than_the_kernel_holds() -> None:
    from workbench.engine.operations.gstfdpa.cuda import MAX_GROUPS

    G = 64 // (2 * MAX_GROUPS)
    model = wb.custom_model("fp4_e2m1", "fp32", kind="gst-fdpa", L=64, F=35, G=G, k_block=16, scale_format="ue4m3")
    with pytest.raises(NotImplementedError, match=f"L/G={64 // G} groups"):
        wb.gemm(np.zeros((2, 64)), np.zeros((64, 2)), model=model, device="cuda", scale_a=np.ones((2, 4)),
                scale_b=np.ones((4, 2)))


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


AMD_KINDS = ("e-fdpa", "tr-fdpa", "gtr-fdpa", "ftz-addmul")


@SETTINGS
@given(st.sampled_from([r for r in PRESETS if r.kind in AMD_KINDS]), st.integers(0, 2**32 - 1), shapes,
       st.booleans())
def test_amd_presets(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    """Every AMD preset (CDNA1 E-FDPA, CDNA2 FTZ-AddMul, CDNA3 TR-/GTR-FDPA), with NaN
    operands of random payloads (:func:`nans`): E-FDPA's and FTZ-AddMul's NaN results
    carry an operand's."""
    check(model, seed, *shape, specials)


@st.composite
def custom_amd(draw: st.DrawFn) -> wb.Model:
    """User-defined units of the AMD kinds: TR-/GTR-FDPA over F, F2, L, rho, the
    alignment direction and zero exponents; E-FDPA over L, rho, formats (fp32 inputs into
    an fp64 output: the widest exact sum the kernel's limbs hold); FTZ-AddMul over P and
    flushed inputs."""
    kind = draw(st.sampled_from(AMD_KINDS))
    flush = {"flush_subnormals": draw(st.booleans())}
    if kind == "ftz-addmul":
        return wb.custom_model(draw(st.sampled_from(["fp16", "bf16"])), "fp32", kind=kind,
                               P=draw(st.sampled_from([2, 4])), **flush)
    flush["flush_output_subnormals"] = draw(st.booleans())
    rounding = draw(st.sampled_from(["rz", "rne", "rd", "ru"]))
    result_format = draw(st.sampled_from([None, None, "fp16", "bf16"]))
    if kind == "e-fdpa":
        fin, fout = draw(st.sampled_from([("fp16", "fp32"), ("bf16", "fp32"), ("fp8_e4m3", "fp16"), ("tf32", "fp32"),
                                          ("fp32", "fp64")]))
        return wb.custom_model(fin, fout, kind=kind, L=draw(st.sampled_from([1, 2, 3, 4, 8, 16])), rounding=rounding,
                               result_format=result_format if fout == "fp32" else None, **flush)
    fin = draw(st.sampled_from(["fp16", "bf16", "tf32", "fp8_e4m3fnuz", "fp8_e5m2"]))
    F = draw(st.integers(3, 30))
    return wb.custom_model(fin, "fp32", kind=kind, L=draw(st.sampled_from([2, 4, 8, 16])), F=F,
                           F2=draw(st.integers(max(3, F - 6), 34)), rounding=rounding, result_format=result_format,
                           alignment_rounding=draw(st.sampled_from(["rd", "rz"])),
                           zero_exponent=draw(st.sampled_from([None, -999, -20])), **flush)


@SETTINGS
@given(custom_amd(), st.integers(0, 2**32 - 1), shapes, st.booleans())
def test_custom_amd_units(model: wb.Model, seed: int, shape: tuple[int, int, int], specials: bool) -> None:
    check(model, seed, *shape, specials)


@pytest.mark.parametrize("shape", [(0, 5, 3), (3, 5, 0), (0, 0, 0), (2, 0, 3)])
def test_empty_products(shape: tuple[int, int, int]) -> None:
    """No rows, no columns or K = 0, one preset of every kind: the CPU's result (C, or
    an empty D), with no kernel launched on an empty output."""
    kinds: dict[str, wb.Model] = {}
    for r in PRESETS:
        kinds.setdefault(r.kind, r)
    for model in kinds.values():
        check(model, 1, *shape, False, "near")
    A, B = np.zeros(shape[:2]), np.zeros(shape[1:])
    h100 = wb.preset("H100", "fp16", "fp32")
    wide_tr = wb.custom_model("fp16", "fp32", kind="tr-fdpa", L=8, F=40, F2=45)
    for model, kw, message in ((h100, {"accumulation": "promote", "promote_every": 3}, "promote_every=3"),
                               (wide_tr, {}, "62")):
        for device in ("cpu", "cuda"):   # the same error on both, though there is nothing to compute
            with pytest.raises(ValueError, match=message):
                wb.gemm(A, B, model=model, device=device, **kw)


def test_an_efdpa_sum_wider_than_the_kernels_limbs_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.engine.operations.amd_fdpa import cuda

    monkeypatch.setattr(cuda, "MAX_LIMBS", 8)
    model = wb.custom_model("fp32", "fp64", kind="e-fdpa", L=4, rounding="rne")
    with pytest.raises(NotImplementedError, match=r"needs \d+ limbs of 30 bits; .* holds 8"):
        wb.gemm(np.ones((2, 4)), np.ones((4, 2)), model=model, device="cuda")


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
