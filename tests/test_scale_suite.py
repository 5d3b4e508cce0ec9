"""The scale-rounding suite (workbench.conformance.scales) against the rules written out here.

Expected values come from the specifications written out in this file, never from
``workbench.numbers.blockscale``: the E8M0 exponent of each rule in integer arithmetic on the
block maximum's significand (OCP MX v1.0 Section 6.3 and the named variants of
``MX_SCALE_RULES``; RCEIL's quotient rounded by numpy's float32 division), the elements by
ml_dtypes' round-to-nearest-even casts after clipping to the element's maximum; NVIDIA's NVFP4
two-level recipe in numpy float32 arithmetic with ml_dtypes' UE4M3 and E2M1 casts.

Mutations of ``blockscale`` caught here (each planted by hand, one constant at a time, the
suite run, the change reverted; docs/guide/scale-suite.md lists them with the same names):

* M1 EVEN ``man_bits + 2`` -> ``man_bits + 3``: ``test_mx_suite_matches_the_rules_written_out[even-*]``
* M2 EVEN ``1.0 - 2.0 ** -(...)`` -> ``1.0 - 2.0 ** -(... ) / 2`` (``2.0`` -> ``4.0``): the same, ``[even-*]``
* M3 FLOOR ``e = floor_log2 - fmt.emax`` -> ``floor_log2 + 1 - fmt.emax``: ``[floor-*]``
* M4 CEIL ``mant != 0.5`` -> ``mant != 0.25``: ``[ceil-*]``
* M5 RCEIL ``dm == 0.5`` -> ``dm == 0.25``: ``[rceil-*]``
* M6 RCEIL quotient not rounded to float32 (``fl32(safe / fmt.max)`` -> ``safe / fmt.max``): ``[rceil-*]``
* M7 ``_E8M0_MIN = -127`` -> ``-126``: every rule, ``[*-*]`` (zero and subnormal blocks)
* M8 ``_E8M0_MAX = 127`` -> ``126``: every rule (Inf blocks)
* M9 NVFP4 ``_E4M3_TINY = 2.0 ** -6`` -> ``2.0 ** -7``: ``test_nvfp4_suite_matches_the_recipe_written_out[*]``
* M10 NVFP4 block divisor ``bamax) / 6.0`` -> ``/ 4.0``: the same
* M11 NVFP4 block-scale clamp ``448.0`` -> ``240.0``: the same
* M12 ``NVFP4_TENSOR_DIVISOR = 448.0 * 6.0`` -> ``448.0 * 4.0``: the same
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.conformance import scales as sc

ml_dtypes = pytest.importorskip("ml_dtypes", reason="needs ml_dtypes (pip install -e '.[dev]')")

#: OCP MX v1.0 Table 1, written out: (emax, man_bits, largest value, ml_dtypes type)
OCP = {"fp8_e4m3": (8, 3, 448.0, ml_dtypes.float8_e4m3fn), "fp8_e5m2": (15, 2, 57344.0, ml_dtypes.float8_e5m2),
       "fp6_e2m3": (2, 3, 7.5, ml_dtypes.float6_e2m3fn), "fp6_e3m2": (4, 2, 28.0, ml_dtypes.float6_e3m2fn),
       "fp4_e2m1": (2, 1, 6.0, ml_dtypes.float4_e2m1fn)}


def _sig_exp(v: float) -> tuple[int, int]:
    """v > 0 (a float32 value) as M * 2**(k - 23) with M a 24-bit integer, 2**23 <= M < 2**24."""
    m, e = math.frexp(v)
    return int(m * 2 ** 24), e - 1


def ocp_exponent(amax: float, element: str, rule: str) -> float:
    """The E8M0 exponent of a block maximum under ``rule``, in integer arithmetic."""
    emax, man, maxv, _ = OCP[element]
    if math.isnan(amax):
        return math.nan
    if math.isinf(amax):
        return 127
    if amax == 0:
        return -127
    M, k = _sig_exp(amax)
    if rule == "floor":            # floor(log2(amax)) - emax
        e = k - emax
    elif rule == "ceil":           # ceil(log2(amax)) - emax
        e = k + (M != 2 ** 23) - emax
    elif rule == "even":           # amax rounded to man fraction bits, ties away; then floor
        drop = 23 - man
        R = (M + (1 << (drop - 1))) >> drop
        e = k + (R == 2 ** (man + 1)) - emax
    else:                          # rceil: ceil(log2(fl32(amax / max_elem)))
        q = float(np.float32(amax) / np.float32(maxv))
        if q == 0:
            e = -127
        else:
            Mq, kq = _sig_exp(q)
            e = kq + (Mq != 2 ** 23)
    return float(min(max(e, -127), 127))


def ocp_elements(x: np.ndarray, e: np.ndarray, element: str) -> np.ndarray:
    """Elements (ml_dtypes values) of blocks x (n, 32) under exponents e (n): x / 2**e rounded
    to nearest even, saturating; a NaN scale gives x / Inf (NaN where x is NaN or Inf; formats
    without NaN get +0 there)."""
    _, _, maxv, dt = OCP[element]
    nan_scale = np.isnan(e)[:, None]
    with np.errstate(invalid="ignore"):
        v = np.where(nan_scale, x / np.inf, np.clip(x / np.exp2(np.nan_to_num(e))[:, None], -maxv, maxv))
    if not element.startswith("fp8"):
        v = np.where(nan_scale & np.isnan(v), 0.0, v)
    return v.astype(dt)


@pytest.fixture(scope="module", params=sc.ELEMENTS)
def element(request):
    return request.param


@pytest.fixture(scope="module")
def blocks(element):
    return sc.mx_blocks(element)


@pytest.mark.parametrize("rule", sc.RULES)
def test_mx_suite_matches_the_rules_written_out(blocks, element, rule):
    x, group = blocks
    scale_bits, elem_bits = sc.mx_expected(x, element, rule)
    amax = np.where(np.isnan(x).any(axis=1), np.nan, np.max(np.abs(np.where(np.isnan(x), 0.0, x)), axis=1))
    e = np.array([ocp_exponent(float(a), element, rule) for a in amax])
    want_scale = np.where(np.isnan(e), 255, np.nan_to_num(e) + 127).astype(np.uint8)
    want = ocp_elements(x, e, element)
    same = (want.view(np.uint8) == elem_bits) | (np.isnan(want.astype(np.float64)) & np.isnan(_decode(elem_bits, element)))
    bad = np.flatnonzero((scale_bits != want_scale) | ~same.all(axis=1))
    assert not bad.size, (f"{element} {rule}: {bad.size} blocks differ; (row, group, amax, workbench scale bits, "
                          f"spec scale bits): {[(i, sc.MX_GROUPS[group[i]], amax[i], scale_bits[i], want_scale[i]) for i in bad[:5]]}")


def _decode(bits: np.ndarray, element: str) -> np.ndarray:
    dt = OCP[element][3]
    return np.asarray(bits, dtype=np.uint8).view(dt).astype(np.float64)


def test_mx_suite_has_every_edge(element):
    x, group = sc.mx_blocks(element)
    assert set(np.unique(group)) == set(range(len(sc.MX_GROUPS)))
    amax = np.max(np.abs(np.where(np.isnan(x), 0, x)), axis=1)
    _, man, maxv, _ = OCP[element]
    # the EVEN tie 2**k (2 - 2**-(man+1)) and the RCEIL quotient one ulp above 2**k are present
    assert np.any(amax == 2.0 ** 5 * (2 - 2.0 ** -(man + 1)))
    assert np.any(amax == float(np.nextafter(np.float32(maxv * 2.0 ** 3), np.float32(np.inf))))
    assert np.any(amax == 2.0 ** -149) and np.any(amax == 2.0 ** 127)


def recipe_nvfp4(x: np.ndarray, tensor_amax: float) -> tuple[int, int, np.ndarray]:
    """NVIDIA's NVFP4 two-level quantisation written out in float32 arithmetic: (tensor
    scale bits, UE4M3 block scale bits (0x7F for a block holding NaN or Inf), fp4 bits)."""
    f32 = np.float32
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ts = f32(tensor_amax) / f32(2688.0) if tensor_amax > 0 else f32(1.0)
        if ts == 0:
            ts = f32(1.0)                             # the workbench's choice: quantised as a zero tensor
        special = not np.isfinite(x).all()
        bamax = f32(0.0) if special else f32(np.max(np.abs(x)))
        sb = np.clip(f32(f32(bamax / f32(6.0)) / ts), f32(2.0 ** -6), f32(448.0))
        sb8 = np.array(sb, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn)
        rcp = f32(f32(f32(1.0) / ts) / f32(sb8.astype(np.float32)))
        x32 = x.astype(np.float32)
        scaled = np.where(x32 == 0, x32, x32 * rcp)
        scaled = np.where(np.isnan(scaled), f32(0.0), np.clip(scaled, f32(-6), f32(6)))
    el = scaled.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    sbits = 0x7F if special else int(sb8.view(np.uint8))
    return int(np.array(ts, dtype=np.float32).view(np.uint32)), sbits, el


@pytest.mark.parametrize("block", ["1x16", "16x16"])
def test_nvfp4_suite_matches_the_recipe_written_out(block):
    x, ta, group = sc.nvfp4_cases(block)
    ts, sb, el = sc.nvfp4_expected(x, ta)
    assert set(np.unique(group)) == set(range(len(sc.NVFP4_GROUPS)))
    bad = []
    for i in range(x.shape[0]):
        wts, wsb, wel = recipe_nvfp4(x[i], float(ta[i]))
        if (int(ts[i]), int(sb[i])) != (wts, wsb) or not np.array_equal(el[i], wel):
            bad.append((i, sc.NVFP4_GROUPS[group[i]], float(ta[i]), (int(ts[i]), int(sb[i])), (wts, wsb)))
            if len(bad) > 5:
                break
    assert not bad, f"NVFP4 {block}: (row, group, tensor amax, workbench (ts, sb) bits, recipe's): {bad}"


def test_suite_round_trips_and_is_refused_when_changed(tmp_path):
    man = sc.export_suite(tmp_path / "s")
    assert all(r["mismatches"] == 0 for r in sc.check_suite(tmp_path / "s"))
    f = tmp_path / "s" / "mx_fp4_e2m1.npz"
    data = bytearray(f.read_bytes())
    data[-40] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="mx_fp4_e2m1.npz was changed after export"):
        sc.check_suite(tmp_path / "s")
    assert man.name == "manifest.json"
