"""The small-product path (issue 41, item 1): ``workbench.gemm`` on a product of at most
``engine.core.SMALL_WORK`` multiply-adds goes through ``Operation.run_small``, one compiled
call straight from the float64 operands.  It must give the general path's bits
(``engine.core.run``: prepare, then the lane/vector/scalar kernels), zeros' signs and NaN
encodings included, keep every input check with the same error, and leave everything it
does not compute to the general path.  The general path is itself held against the
Fraction reference, MMA-Sim and the hardware vectors by other files; those files' small
products now run here too (test_engine_reference's ``check_model`` calls gemm on up to
20 x K x 20)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench.numbers import formats
from workbench import units
from workbench.engine import core

sys.path.insert(0, str(Path(__file__).parent))
from operand_values import values  # noqa: E402

#: every preset whose operation has a small path, by catalogue name
SMALL_KINDS = ("t-fdpa", "fma", "e-fdpa", "tr-fdpa", "gtr-fdpa", "ftz-addmul", "st-fdpa", "gst-fdpa", "pair-dot")
PRESETS = [r.name for r in catalogue.records() if r.kind in SMALL_KINDS]


def _bits(x: np.ndarray) -> np.ndarray:
    """float64 patterns: signs of zeros and NaN payloads compared too."""
    return np.asarray(x, dtype=np.float64).view(np.uint64)


def _shapes(rng: np.random.Generator, L: int) -> list[tuple[int, int, int]]:
    return [(1, 1, 1), (4, 16, 4), (3, L + 1, 5), (2, 3 * L, 7), (int(rng.integers(1, 9)), int(rng.integers(1, 70)),
                                                                  int(rng.integers(1, 9)))]


def _scales(m: wb.Model, rng: np.random.Generator, M: int, K: int, N: int, specials: bool) -> dict[str, np.ndarray]:
    """Block scale factors of a scaled unit (none for the others): values of the scale
    format over its whole range (E8M0: 2**-127 .. 2**127; UE4M3: its grid up to 448,
    subnormals included), a NaN among them with ``specials``."""
    if not m.operation.scaled:
        return {}
    sf = formats.format(m.scale_format)
    nb = -(-K // m.k_block)
    out = {}
    for name, shape in (("scale_a", (M, nb)), ("scale_b", (nb, N))):
        if sf.man_bits == 0:
            x = np.exp2(rng.integers(sf.emin, sf.emax + 1, shape) if rng.random() < 0.3
                        else rng.integers(-12, 13, shape)).astype(np.float64)
        else:
            x = formats.round(np.exp2(rng.uniform(np.log2(sf.min_subnormal), np.log2(sf.max), shape)), sf)
        if specials and sf.has_nan and rng.random() < 0.5:
            x.flat[rng.integers(x.size)] = np.nan
        out[name] = x
    return out


def _check(m: wb.Model, rng: np.random.Generator, accumulation: str = "chain", promote_every: int | None = None,
           specials: bool = True) -> None:
    for M, K, N in _shapes(rng, m.L):
        A = values(rng, (M, K), m.in_format, specials)
        B = values(rng, (K, N), m.in_format, specials)
        C = values(rng, (M, N), m.out_format, specials)
        scales = _scales(m, rng, M, K, N, specials)
        small = core.run_small(m, A, B, C, accumulation=accumulation, promote_every=promote_every, **scales)
        assert small is not None, (m.describe(), M, K, N)
        general = core.run(m, A, B, C, accumulation=accumulation, promote_every=promote_every, **scales)
        assert np.array_equal(_bits(small), _bits(general)), (m.describe(), accumulation, M, K, N)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_gives_the_general_paths_bits(name):
    m = units.resolve(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    _check(m, rng)


@pytest.mark.parametrize("variant", [{"rounding": "rne"}, {"rounding": "rd", "zero_exponent": None},
                                     {"rounding": "ru"}, {"sticky": True}, {"flush_output_subnormals": True},
                                     {"c_position": "late"}, {"c_position": "late", "interleave": 2},
                                     {"flush_subnormals": True}])
def test_custom_t_fdpa_units_give_the_general_paths_bits(variant):
    m = wb.preset("H100", "fp16", "fp32").with_params(**variant)
    _check(m, np.random.default_rng(len(repr(variant))))


@pytest.mark.parametrize("kind, variant", [
    ("fma", {"c_position": "late"}), ("fma", {"c_position": "late", "late_rounding": "rz"}),
    ("e-fdpa", {"L": 1}), ("e-fdpa", {"rounding": "rz", "flush_output_subnormals": True}),
    ("tr-fdpa", {"F2": 40, "rounding": "rne"}), ("gtr-fdpa", {"zero_exponent": None}),
    ("ftz-addmul", {"P": 2}), ("ftz-addmul", {"flush_subnormals": False})])
def test_custom_units_of_every_other_kind_give_the_general_paths_bits(kind, variant):
    base = {"e-fdpa": ("MI100", "fp16", "fp32"), "tr-fdpa": ("MI300X", "fp16", "fp32"),
            "gtr-fdpa": ("MI300X", "fp8_e4m3fnuz", "fp32"), "ftz-addmul": ("MI250X", "bf16", "fp32")}.get(kind)
    m = wb.preset(*base) if base else wb.custom_model("fp32", "fp32", kind="fma")
    assert m.kind == kind
    _check(m.with_params(**variant), np.random.default_rng(len(repr(variant))))


@pytest.mark.parametrize("accumulation, every", [("outside", None), ("promote", 32)])
def test_outside_and_promote_give_the_general_paths_bits(accumulation, every):
    for m in (wb.preset("H100", "fp8_e4m3", "fp32"), wb.preset("A100", "bf16", "fp32")):
        _check(m, np.random.default_rng(5), accumulation, every)


@pytest.mark.parametrize("name", ["H100:fp16:fp32", "blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx",
                                  "blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4"])
def test_gemm_takes_the_small_path_and_gives_its_output(monkeypatch, name):
    """A tiny gemm never reaches prepare (the general path's first step), and its output
    (dtype, canonical NaN 0x7FFFFFFF) is what the general path gives the same operands."""
    m = units.resolve(name)
    rng = np.random.default_rng(11)
    K = 16 if m.k_block is None else 2 * m.L
    A, B = values(rng, (4, K), m.in_format, True), values(rng, (K, 4), m.in_format, True)
    C = values(rng, (4, 4), "fp32", True)
    scales = _scales(m, rng, 4, K, 4, True)
    want = core.run(m, A, B, C, **scales).astype(np.float32)
    want.view(np.uint32)[np.isnan(want)] = 0x7FFFFFFF
    monkeypatch.setattr(core, "prepare", lambda *a, **k: pytest.fail("the general path ran"))
    got = wb.gemm(A, B, C, model=m, **scales)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("kw", [dict(alpha=2.0), dict(beta=0.0), dict(accumulation="promote", promote_every=32),
                                dict(schedule="cublas-h100-fp16-fp32"), dict(input_rounding="rne")])
def test_what_the_small_path_does_not_compute_goes_the_general_way(monkeypatch, kw):
    """alpha/beta epilogues, a library schedule (rules per K), input rounding, and an fp32
    accumulator of promote that must be rounded to an fp16 output: the general path."""
    m = wb.preset("H100", "fp16", "fp16") if "accumulation" in kw else wb.preset("H100", "fp16", "fp32")
    ran = []
    real = core.prepare
    monkeypatch.setattr(core, "prepare", lambda *a, **k: ran.append(1) or real(*a, **k))
    wb.gemm(np.ones((2, 32)), np.ones((32, 2)), np.ones((2, 2)), model=m, **kw)
    assert ran


def test_large_products_go_the_general_way(monkeypatch):
    m = wb.preset("H100", "fp16", "fp32")
    assert core.run_small(m, np.ones((64, 64)), np.ones((64, 64)), np.zeros((64, 64))) is None
    assert core.run_small(m, np.ones((2, 0)), np.ones((0, 2)), np.zeros((2, 2))) is None   # K = 0


@pytest.mark.parametrize("where", ["A", "B", "C"])
def test_a_value_that_is_not_representable_gives_the_general_paths_error(where):
    m = wb.preset("H100", "fp16", "fp32")
    A, B, C = np.ones((3, 8)), np.ones((8, 2)), np.ones((3, 2))
    bad = {"A": (A, (2, 5), 1 + 2.0**-11), "B": (B, (7, 1), 1e-9), "C": (C, (1, 1), 1 + 2.0**-30)}[where]
    bad[0][bad[1]] = bad[2]
    with pytest.raises(ValueError) as err:
        wb.gemm(A, B, C, model=m)
    index = f"{where}[{bad[1][0]}, {bad[1][1]}]"
    assert str(err.value).startswith(f"{index} = {bad[2]!r} is not representable in "), str(err.value)
    assert ("input_rounding=" in str(err.value)) == (where != "C")          # gemm's hint for A and B only
    with pytest.raises(ValueError) as direct:   # core.run_small itself: check_representable's message
        core.run_small(m, A, B, C)
    fmt = m.out_fmt if where == "C" else m.in_fmt
    with pytest.raises(ValueError) as reference:
        formats.check_representable(bad[0], fmt, where)
    assert str(direct.value) == str(reference.value)


def test_scale_factors_missing_or_given_to_an_unscaled_unit_go_the_general_way():
    """A scaled unit without its scale factors, and an unscaled one given some: the
    small path answers None, and gemm's general path says what is wrong."""
    mx = units.resolve("blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx")
    A, B, C = np.ones((1, 32)), np.ones((32, 1)), np.zeros((1, 1))
    assert core.run_small(mx, A, B, C) is None
    assert core.run_small(mx, A, B, C, scale_a=np.ones((1, 1))) is None
    h100 = wb.preset("H100", "fp16", "fp32")
    assert core.run_small(h100, A, B, C, scale_a=np.ones((1, 1)), scale_b=np.ones((1, 1))) is None
    with pytest.raises(ValueError, match="needs scale_a and scale_b"):
        wb.gemm(A, B, C, model=mx)
    with pytest.raises(ValueError, match="must have shape"):
        wb.gemm(A, B, C, model=mx, scale_a=np.ones((1, 2)), scale_b=np.ones((2, 1)))
    with pytest.raises(ValueError, match="takes no scale factors"):
        wb.gemm(A, B, C, model=h100, scale_a=np.ones((1, 1)), scale_b=np.ones((1, 1)))


@pytest.mark.parametrize("name, where, bad", [
    ("blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx", "scale_a", 3.0),      # E8M0: powers of two only
    ("blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx", "scale_b", 0.0),      # E8M0 has no zero
    ("blackwell/tcgen05.mma.block_scale/fp8_e4m3->fp32/mx", "scale_a", 2.0**-128),
    ("blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4", "scale_b", -1.0),   # UE4M3: unsigned
    ("blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4", "scale_a", 1.0625),
    ("blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4", "scale_b", 480.0)])
def test_a_scale_factor_that_is_not_representable_gives_the_general_paths_error(name, where, bad):
    """The small path's check of the scale factors: the first one outside the scale
    format is named, with check_representable's words, by core.run_small and by gemm."""
    m = units.resolve(name)
    K = 2 * m.L
    nb = K // m.k_block
    A, B, C = np.ones((2, K)), np.ones((K, 3)), np.zeros((2, 3))
    scales = {"scale_a": np.ones((2, nb)), "scale_b": np.ones((nb, 3))}
    scales[where].flat[3] = bad
    with pytest.raises(ValueError) as reference:
        formats.check_representable(scales[where], m.scale_format, where)
    with pytest.raises(ValueError) as direct:
        core.run_small(m, A, B, C, **scales)
    with pytest.raises(ValueError) as via_gemm:
        wb.gemm(A, B, C, model=m, **scales)
    assert str(direct.value) == str(reference.value) == str(via_gemm.value)
    assert str(direct.value).startswith(f"{where}[")


@pytest.mark.parametrize("flush", [False, True])
def test_subnormal_inputs_are_flushed_only_where_the_unit_flushes(flush):
    """Large A times subnormal B (and subnormal A times large B), C = 0: a unit that
    flushes subnormal inputs (``flush_subnormals``) gives +0 everywhere (its products are
    zero); one that does not gives the general path's non-zero bits."""
    m = wb.preset("H100", "fp16", "fp32").with_params(flush_subnormals=flush)
    rng = np.random.default_rng(3)
    big = np.exp2(rng.integers(8, 16, (3, 16))) * rng.choice([-1.0, 1.0], (3, 16))
    tiny = rng.integers(1, 1024, (16, 2)) * 2.0**-24 * rng.choice([-1.0, 1.0], (16, 2))    # fp16 subnormals
    for A, B in ((big, tiny), (tiny.T.copy(), big.T.copy())):
        C = np.zeros((A.shape[0], B.shape[1]))
        small = core.run_small(m, A, B, C)
        assert np.array_equal(_bits(small), _bits(core.run(m, A, B, C)))
        if flush:
            assert np.array_equal(_bits(small), _bits(np.zeros_like(C)))
        else:
            assert np.all(small != 0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=st.sampled_from(PRESETS), M=st.integers(1, 6), K=st.integers(1, 80), N=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1), specials=st.booleans())
def test_drawn_units_shapes_and_values_give_the_general_paths_bits(name, M, K, N, seed, specials):
    """Hypothesis over the presets of every kind with a small path, shapes (K past several
    blocks and not a multiple of L) and operands (zeros of both signs, subnormals, the
    largest values, NaN payloads and +-Inf where the formats have them)."""
    m = units.resolve(name)
    rng = np.random.default_rng(seed)
    A, B, C = values(rng, (M, K), m.in_format, specials), values(rng, (K, N), m.in_format, specials), \
        values(rng, (M, N), m.out_format, specials)
    scales = _scales(m, rng, M, K, N, specials)
    small = core.run_small(m, A, B, C, **scales)
    assert small is not None
    assert np.array_equal(_bits(small), _bits(core.run(m, A, B, C, **scales))), (name, M, K, N, seed)
