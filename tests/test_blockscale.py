"""The recipes' quantisers (workbench.numbers.blockscale) bit for bit against torchao and pychop.

torchao (``torchao.prototype.mx_formats``: ``to_mx`` for MX under each
``ScaleCalculationMode``, ``nvfp4_quantize`` for NVFP4) and pychop (``pychop.np.mx_formats``,
the OCP floor rule) are independent implementations of the same specifications.  Drawn
tensors cover shapes that are not a multiple of the block (torchao needs whole blocks: it
gets the tensor zero-padded, which changes no block maximum), zeros, float32 subnormals,
amax at and around powers of two (and around the element maximum times a power of two,
where the rounding-up rules turn), Inf and NaN.  Where the libraries made different
choices the choice is pinned by a test of its own (``test_torchao_*_pinned``,
``test_pychop_*_pinned``) and excluded from the drawn comparison.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from workbench.numbers import blockscale as bs

ELEMENTS = ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1")
EMAX = {"fp8_e4m3": 8, "fp8_e5m2": 15, "fp6_e2m3": 2, "fp6_e3m2": 4, "fp4_e2m1": 2}
MAXV = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "fp6_e2m3": 7.5, "fp6_e3m2": 28.0, "fp4_e2m1": 6.0}


def _f32(v: float) -> float:
    return float(np.float32(v))


def _near_pow2() -> st.SearchStrategy[float]:
    """Powers of two, element maxima times powers of two, and their float32 neighbours."""
    base = st.sampled_from([1.0, 448.0, 57344.0, 7.5, 28.0, 6.0, 0.75, 1.5])
    return st.builds(lambda b, e, step, s: s * float(np.float32(b * 2.0 ** e) + step * np.spacing(np.float32(b * 2.0 ** e))),
                     base, st.integers(-135, 110), st.integers(-2, 2), st.sampled_from([1.0, -1.0]))


def _values(special: bool) -> st.SearchStrategy[float]:
    parts = [st.just(0.0), st.just(-0.0), _near_pow2(),
             st.floats(width=32, allow_nan=False, allow_infinity=False),
             st.floats(min_value=-2.0 ** -127, max_value=2.0 ** -127, width=32),  # float32 subnormals
             st.floats(min_value=-8.0, max_value=8.0, width=32)]
    if special:
        parts.append(st.sampled_from([np.inf, -np.inf, np.nan]))
    return st.one_of(*parts).map(_f32)


def _tensors(special: bool = False, max_cols: int = 80) -> st.SearchStrategy[np.ndarray]:
    shapes = st.tuples(st.integers(1, 3), st.integers(1, max_cols))
    return shapes.flatmap(lambda sh: hnp.arrays(np.float64, sh, elements=_values(special)))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN where NaN, and the same signs of zeros."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b)))


# ------------------------------------------------------------------ torchao
@pytest.fixture(scope="module")
def tao():
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mx = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor",
                                 reason="torchao is not installed: pip install -e '.[dev]' brings it")
        from torchao.prototype.mx_formats import kernels
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    dtypes = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2, "fp6_e2m3": DTYPE_FP6_E2M3,
              "fp6_e3m2": DTYPE_FP6_E3M2, "fp4_e2m1": torch.float4_e2m1fn_x2}

    class T:
        @staticmethod
        def mx(x: np.ndarray, element: str, rule: str) -> tuple[np.ndarray, np.ndarray]:
            """(scale exponents, NaN for 0xFF; elements) of torchao's to_mx on x zero-padded."""
            m, n = x.shape
            pad = np.zeros((m, -(-n // 32) * 32))
            pad[:, :n] = x
            sc, d = mx.to_mx(torch.tensor(pad, dtype=torch.float32), dtypes[element], 32,
                             getattr(ScaleCalculationMode, rule.upper()))
            bits = sc.view(torch.uint8).numpy().astype(np.float64).reshape(m, -1)
            e = np.where(bits == 255, np.nan, bits - 127)
            if element.startswith("fp8"):
                el = d.float().numpy()
            elif element == "fp6_e2m3":
                el = kernels.f6_e2m3_unpacked_to_f32(d).numpy()
            elif element == "fp6_e3m2":
                el = kernels.f6_e3m2_unpacked_to_f32(d).numpy()
            else:
                el = kernels.f4_unpacked_to_f32(kernels.unpack_uint4(d)).numpy()
            return e, el.reshape(m, -1)[:, :n]

        @staticmethod
        def nvfp4(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            """(tensor scale, UE4M3 block scales, elements) of torchao's two-level NVFP4 on x zero-padded."""
            m, n = x.shape
            pad = np.zeros((m, -(-n // 16) * 16))
            pad[:, :n] = x
            t = torch.tensor(pad, dtype=torch.float32)
            pts = per_tensor_amax_to_scale(t.abs().max())
            s, d = nvfp4_quantize(t, 16, pts)
            el = kernels.f4_unpacked_to_f32(kernels.unpack_uint4(d)).numpy().reshape(m, -1)[:, :n]
            return float(pts), s.float().numpy().reshape(m, -1), el

    return T


def _fp32_log2_rounds_onto(descale: float) -> bool:
    """torchao's eager RCEIL takes ceil(log2) of the float32 quotient in float32: true when
    that log2 rounds to an integer although the quotient is above the power of two."""
    import torch
    lg = float(torch.log2(torch.tensor(descale, dtype=torch.float32)))
    return lg == np.floor(lg) and descale > 2.0 ** lg


@settings(max_examples=60, deadline=None)
@given(x=_tensors(special=True), element=st.sampled_from(ELEMENTS), rule=st.sampled_from(sorted(bs.MX_SCALE_RULES)))
def test_mx_equals_torchao(tao, x, element, rule):
    ours = bs.quantize_mx(x, element, rule, (1, 32))
    te, tel = tao.mx(x, element, rule)
    amax = bs.block_amax(x, 1, 32)
    e = np.log2(ours.scales)
    compare = np.ones_like(amax, dtype=bool)
    if rule != "rceil":
        compare &= ~np.isinf(amax)                     # pinned: torchao takes 128 - emax from Inf's exponent field
    else:
        quirk = np.zeros_like(compare)
        for idx in zip(*np.nonzero(np.isfinite(amax) & (amax > 0) & ~np.isnan(te))):
            if e[idx] != te[idx]:                       # pinned: fp32 log2 of a quotient just above 2**k
                assert e[idx] == te[idx] + 1 and _fp32_log2_rounds_onto(_f32(amax[idx] / MAXV[element])), idx
                quirk[idx] = True
        compare &= ~quirk
    assert _same(e[compare], te[compare])
    # elements: not where the scale is 2**-127, which torchao stores but does not apply (pinned:
    # FLOOR/CEIL/EVEN divide by 2**-126; RCEIL multiplies by 1.0, its "exponent == 0" case after
    # Transformer Engine's ptx.cuh, so a block of fp32 subnormals gives zeros where x * 2**127 would
    # not: found by this test with a block amax of 2.4e-39),
    # and not in NaN blocks: floor/ceil/even give x / Inf, rceil x * NaN, fp6/fp4 the NaN's bits (pinned)
    keep = compare & ~(e == -127) & ~np.isnan(amax)
    cols = np.repeat(keep, 32, axis=1)[:, :x.shape[1]]
    assert _same(ours.elements[cols], tel[cols])


@settings(max_examples=60, deadline=None)
@given(x=_tensors(special=False))
def test_nvfp4_equals_torchao(tao, x):
    assume(np.max(np.abs(x)) > 0)                      # pinned below: torchao divides by a zero tensor scale
    ours = bs.quantize_nvfp4(x, (1, 16))
    ts, ts_scales, tel = tao.nvfp4(x)
    assume(np.float32(1) / np.float32(ts) < np.inf)    # torchao multiplies zeros by Inf there (module docstring)
    assert ours.tensor_scale == ts
    assert _same(ours.scales, ts_scales)
    assert _same(ours.elements, tel)


@settings(max_examples=30, deadline=None)
@given(x=_tensors(special=False, max_cols=40))
def test_nvfp4_16x16_weight_blocks_equal_torchao_rows_holding_the_block_amax(tao, x):
    """A 16x16 block's scale comes from the block's amax: on a tensor where every row of
    every 16x16 block holds that amax, torchao's 1x16 rows must give the same result."""
    m = 32
    w = np.resize(x, (m, x.shape[1] + 16))
    blk = bs.block_amax(w, 16, 16)
    for i in range(m):
        for j in range(blk.shape[1]):
            col = j * 16 + (i % 16)
            if col < w.shape[1]:
                w[i, col] = blk[i // 16, j]
    w = w[:, : (w.shape[1] // 16) * 16]               # every row of a block holds the amax
    assume(np.max(np.abs(w)) > 0)
    ours = bs.quantize_nvfp4(w, (16, 16))
    ts, ts_scales, tel = tao.nvfp4(w)
    assume(np.float32(1) / np.float32(ts) < np.inf)    # torchao multiplies zeros by Inf there (module docstring)
    assert ours.tensor_scale == ts
    assert _same(np.repeat(ours.scales, 16, axis=0), ts_scales)
    assert _same(ours.elements, tel)
    # the weight quantises the same as W (dgrad) and as W^T (forward)
    assert _same(bs.quantize_nvfp4(w.T, (16, 16)).elements, ours.elements.T)


def test_torchao_floor_inf_amax_pinned(tao):
    x = np.zeros((1, 32))
    x[0, :2] = [np.inf, 1.0]
    te, tel = tao.mx(x, "fp8_e4m3", "floor")
    assert te[0, 0] == 128 - 8 and tel[0, 0] == 448.0          # torchao: exponent field of Inf minus emax
    ours = bs.quantize_mx(x, "fp8_e4m3", "floor")
    assert ours.scales[0, 0] == 2.0 ** 127 and ours.elements[0, 0] == 448.0   # E8M0's largest (pychop too)


def test_torchao_smallest_scale_divides_by_2_pow_minus_126_pinned(tao):
    x = np.zeros((1, 32))
    x[0, 0] = 2.0 ** -120
    te, tel = tao.mx(x, "fp8_e4m3", "floor")
    assert te[0, 0] == -127 and tel[0, 0] == 64.0               # stores 2**-127, divides by 2**-126
    ours = bs.quantize_mx(x, "fp8_e4m3", "floor")
    assert ours.scales[0, 0] == 2.0 ** -127 and ours.elements[0, 0] == 128.0  # elements * scale = x


def test_torchao_rceil_fp32_log2_pinned(tao):
    x = np.zeros((1, 32))
    x[0, 0] = _f32(448 * 2.0 ** 10 * (1 + 2.0 ** -23))
    te, tel = tao.mx(x, "fp8_e4m3", "rceil")
    assert te[0, 0] == 10 and tel[0, 0] == 448.0                # saturates: the scale is one binade low
    ours = bs.quantize_mx(x, "fp8_e4m3", "rceil")
    assert ours.scales[0, 0] == 2.0 ** 11 and ours.elements[0, 0] == 224.0


def test_torchao_nan_block_pinned(tao):
    x = np.zeros((1, 32))
    x[0, :2] = [np.nan, 1.0]
    te, tel = tao.mx(x, "fp8_e4m3", "floor")
    ours = bs.quantize_mx(x, "fp8_e4m3", "floor")
    assert np.isnan(te[0, 0]) and np.isnan(ours.scales[0, 0])
    assert _same(ours.elements, tel)                           # x / Inf: NaN, then zeros
    _, tel4 = tao.mx(x, "fp4_e2m1", "floor")
    assert tel4[0, 0] == 1.5                                   # torchao converts the NaN's bits
    assert bs.quantize_mx(x, "fp4_e2m1", "floor").elements[0, 0] == 0.0


def test_torchao_nvfp4_zero_and_inf_tensors_pinned(tao):
    ts, s, el = tao.nvfp4(np.zeros((1, 32)))
    assert ts == 0.0 and np.isnan(s).all()                     # 0 / 0
    ours = bs.quantize_nvfp4(np.zeros((1, 32)))
    assert ours.tensor_scale == 1.0 and (ours.scales == 2.0 ** -6).all() and (ours.elements == 0).all()
    x = np.ones((1, 32))
    x[0, 0] = np.inf
    ts, s, _ = tao.nvfp4(x)
    assert ts == np.inf and np.isnan(s[0, 0]) and s[0, 1] == 2.0 ** -6
    ours = bs.quantize_nvfp4(x)
    assert np.isnan(ours.scales[0, 0]) and ours.tensor_scale == _f32(1.0 / 2688.0) and ours.scales[0, 1] == 448.0


# ------------------------------------------------------------------- pychop
@pytest.fixture(scope="module")
def pychop_mx():
    return pytest.importorskip("pychop.np.mx_formats", reason="pychop is not installed (pip install -e '.[dev]')")


def _pychop(mod, v: np.ndarray, element: str) -> tuple[np.ndarray, np.ndarray]:
    name = {"fp8_e4m3": "mxfp8_e4m3", "fp8_e5m2": "mxfp8_e5m2", "fp6_e2m3": "mxfp6_e2m3", "fp6_e3m2": "mxfp6_e3m2",
            "fp4_e2m1": "mxfp4_e2m1"}[element]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = mod.MXTensor_(v, name, 32)
    scales = np.array([b.shared_scale for b in t.blocks])
    elements = np.concatenate([b.quantized_elements for b in t.blocks]).astype(np.float64)[:v.size]
    return scales, elements


@settings(max_examples=40, deadline=None)
@given(x=_tensors(special=False, max_cols=70), element=st.sampled_from(ELEMENTS), inf=st.booleans())
def test_mx_floor_equals_pychop(pychop_mx, x, element, inf):
    v = x[:1].copy()
    if inf:
        v[0, 0] = np.inf
    ours = bs.quantize_mx(v, element, "floor", (1, 32))
    scales, elements = _pychop(pychop_mx, v.ravel(), element)
    assert np.array_equal(ours.scales.ravel(), scales)
    q = ours.elements.ravel()
    assert np.array_equal(q, elements)                   # values; pychop's zeros are unsigned


def test_pychop_nan_pinned(pychop_mx):
    v = np.zeros(32)
    v[:2] = [np.nan, 3.0]
    scales, elements = _pychop(pychop_mx, v, "fp8_e4m3")
    assert scales[0] == 2.0 ** (1 - 8) and elements[1] == 3.0 / 2.0 ** -7   # pychop ignores the NaN
    assert np.isnan(bs.quantize_mx(v[None], "fp8_e4m3").scales[0, 0])      # the recipe (and torchao): NaN scale


# ----------------------------------------------------- rules without a library
def test_mx_rules_at_powers_of_two_exact():
    """The four rules on amax = 2**k and its float32 neighbours (e4m3: emax 8, max 448)."""
    k = 5
    lo, at, hi = _f32(np.nextafter(np.float32(32.0), np.float32(0))), 32.0, _f32(np.nextafter(np.float32(32.0), np.float32(64)))
    e = {r: bs.mx_scale_exponents([lo, at, hi], "fp8_e4m3", r).tolist() for r in bs.MX_SCALE_RULES}
    assert e["floor"] == [k - 1 - 8, k - 8, k - 8]
    assert e["ceil"] == [k - 8, k - 8, k + 1 - 8]
    assert e["even"] == [k - 8, k - 8, k - 8]            # lo rounds up to 2**5 at 3 fraction bits
    # rceil: smallest 2**e with amax / 2**e <= 448: 32/448 -> 2**-3.8.. -> e = -3
    assert e["rceil"] == [-3, -3, -3]
    assert bs.mx_scale_exponents([0.0, np.inf, np.nan], "fp8_e4m3", "floor")[:2].tolist() == [-127, 127]


def test_random_hadamard_is_orthogonal_and_seeded():
    h = bs.random_hadamard(16, 3)
    assert np.array_equal(h @ h.T, np.eye(16))            # entries +-1/4: exact
    assert np.array_equal(h, bs.random_hadamard(16, 3)) and not np.array_equal(h, bs.random_hadamard(16, 4))
    with pytest.raises(ValueError, match="12 is not a power of two"):
        bs.random_hadamard(12)


def test_stochastic_rounding_picks_a_neighbour_and_is_seeded():
    x = np.random.default_rng(1).standard_normal((4, 64))
    a = bs.quantize_nvfp4(x, mode="sr", rng=np.random.default_rng(0))
    b = bs.quantize_nvfp4(x, mode="sr", rng=np.random.default_rng(0))
    near = bs.quantize_nvfp4(x)
    assert _same(a.elements, b.elements) and _same(a.scales, near.scales)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    s = np.clip(np.abs(a.scaled), 0, 6)
    below = grid[np.searchsorted(grid, s, side="right") - 1]
    above = grid[np.minimum(np.searchsorted(grid, s, side="left"), 7)]
    assert np.all((np.abs(a.elements) == below) | (np.abs(a.elements) == above))
    assert not _same(a.elements, near.elements)


def test_recipe_bad_input():
    with pytest.raises(ValueError, match="weight_block=24 does not divide"):
        bs.Recipe("nvfp4", "fp4_e2m1", "two-level", 16, 24)
    with pytest.raises(ValueError, match="not a power of two"):
        bs.nvfp4(hadamard=12)
    with pytest.raises(ValueError, match="scale_rule='round'"):
        bs.mxfp8("round")
    with pytest.raises(ValueError, match="NVFP4 has fp4_e2m1 elements"):
        bs.Recipe("nvfp4", "fp8_e4m3", "two-level", 16, 16)
