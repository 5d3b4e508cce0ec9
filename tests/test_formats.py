"""Number formats: registry, encodings, and rounding against independent references.

References used here, none of them the code under test:
- numpy's float16/float32 casts and ml_dtypes' casts (round to nearest even);
- the bit-pattern views of numpy and ml_dtypes dtypes (decoding);
- an exact rounding written below with fractions.Fraction, for every mode;
- the published format tables (Khattak & Mikaitis 2025 Table I, Fasi et al. 2021 Table 3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import workbench
from workbench.numbers.formats import FloatFormat, ROUNDING_MODES

ML = {
    "bf16": ml_dtypes.bfloat16,
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "fp8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}
NATIVE = {"fp16": np.float16, "fp32": np.float32}
#: the formats of 16 bits or fewer that numpy or ml_dtypes decode independently (the registry may
#: also hold custom formats another test module registered in the same worker, e.g. e6m9)
REFERENCED = {"fp16", "e8m0", "ue4m3", *ML}
SMALL = [f.name for f in workbench.list_formats() if f.width <= 16 and f.name in REFERENCED]
MODES = list(ROUNDING_MODES)
DETERMINISTIC = [m for m in MODES if m != "sr"]


# ---------------------------------------------------------------- the tables
@pytest.mark.parametrize(
    "name, p, emin, emax, largest",
    [  # Khattak & Mikaitis 2025, Table I; Fasi et al. 2021, Table 3
        ("fp64", 53, -1022, 1023, 1.7976931348623157e308),
        ("fp32", 24, -126, 127, 3.4028234663852886e38),
        ("tf32", 11, -126, 127, 3.4011621342146535e38),
        ("bf16", 8, -126, 127, 3.3895313892515355e38),
        ("fp16", 11, -14, 15, 65504.0),
        ("fp8_e4m3", 4, -6, 8, 448.0),
        ("fp8_e5m2", 3, -14, 15, 57344.0),
        ("fp6_e2m3", 4, 0, 2, 7.5),
        ("fp6_e3m2", 3, -2, 4, 28.0),
        ("fp4_e2m1", 2, 0, 2, 6.0),
        # AMD fnuz fp8 (bias 8 and 16): largest 240 and 57344
        ("fp8_e4m3fnuz", 4, -7, 7, 240.0),
        ("fp8_e5m2fnuz", 3, -15, 15, 57344.0),
        # OCP MX scale E8M0: 2^-127 .. 2^127; NVFP4 scale UE4M3 as E4M3 without sign
        ("e8m0", 1, -127, 127, 2.0**127),
        ("ue4m3", 4, -6, 8, 448.0),
        ("e8m13", 14, -126, 127, (2 - 2.0**-13) * 2.0**127),
    ],
)
def test_published_format_parameters(name, p, emin, emax, largest):
    f = workbench.format(name)
    assert (f.p, f.emin, f.emax, f.max) == (p, emin, emax, largest)
    assert f.min_normal == 2.0**emin


@pytest.mark.parametrize(
    "name, smin", [("fp16", 2.0**-24), ("bf16", 2.0**-133), ("tf32", 2.0**-136), ("fp32", 2.0**-149),
                   ("fp64", 2.0**-1074)]
)
def test_smallest_subnormal_fasi_table3(name, smin):
    assert workbench.format(name).min_subnormal == smin


@pytest.mark.parametrize(
    "alias, canonical",
    [("binary16", "fp16"), ("half", "fp16"), ("binary32", "fp32"), ("single", "fp32"),
     ("bfloat16", "bf16"), ("tf19", "tf32"), ("e4m3", "fp8_e4m3"), ("E5M2", "fp8_e5m2"),
     ("fp8-e5m2", "fp8_e5m2"), ("fp8-E4M3", "fp8_e4m3"), ("double", "fp64"), ("e2m1", "fp4_e2m1"),
     ("ue8m0", "e8m0")],
)
def test_aliases(alias, canonical):
    assert workbench.format(alias) is workbench.format(canonical)


def test_unknown_format_lists_known_names():
    with pytest.raises(ValueError) as err:
        workbench.format("fp7")
    assert "'fp7'" in str(err.value) and "fp8_e4m3" in str(err.value) and "bf16" in str(err.value)


def test_custom_formats():
    e6m9 = FloatFormat.custom("e6m9", exp_bits=6, man_bits=9)
    assert (e6m9.p, e6m9.emin, e6m9.emax, e6m9.bias) == (10, -30, 31, 31)
    assert FloatFormat.custom(p=11, emin=-14, emax=15) == FloatFormat.custom(exp_bits=5, man_bits=10)
    with pytest.raises(ValueError, match="emax=20"):
        FloatFormat.custom(p=11, emin=-14, emax=20)
    with pytest.raises(ValueError, match="special="):
        FloatFormat.custom(exp_bits=4, man_bits=3, special="ocp")
    x = np.array([1 + 2.0**-10, 1 + 2.0**-9 + 2.0**-10])
    assert workbench.round(x, e6m9).tolist() == [1.0, 1 + 2.0**-8]


# ------------------------------------------------------------------ encodings
def _decode_reference(name: str, bits: np.ndarray) -> np.ndarray:
    """Decode bit patterns with numpy/ml_dtypes views (independent of workbench)."""
    if name == "fp16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if name in ML and ML[name](0).itemsize * 8 >= 8 and name not in ("fp6_e2m3", "fp6_e3m2", "fp4_e2m1"):
        dt = ML[name]
        width = np.dtype(dt).itemsize * 8
        return bits.astype(np.uint8 if width == 8 else np.uint16).view(dt).astype(np.float64)
    if name == "e8m0":
        return bits.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    if name == "ue4m3":  # the E4M3 pattern with a zero sign bit
        return bits.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    # sub-byte formats: ml_dtypes stores one value per byte in the low bits
    return bits.astype(np.uint8).view(ML[name]).astype(np.float64)


def test_every_built_in_small_format_has_an_independent_decoder():
    """A fresh interpreter's registry (no test module's custom formats): every built-in
    format of 16 bits or fewer is in SMALL, decoded exhaustively below."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import workbench; print(*[f.name for f in workbench.list_formats() "
                          "if f.width <= 16])"], capture_output=True, text=True, check=True).stdout.split()
    assert out and set(out) <= REFERENCED, set(out) - REFERENCED


@pytest.mark.parametrize("name", SMALL)
def test_exhaustive_decode_matches_numpy_and_ml_dtypes(name):
    f = workbench.format(name)
    bits = np.arange(1 << f.width, dtype=np.uint64)
    ours = workbench.from_bits(bits, f)
    ref = _decode_reference(name, bits)
    same = (ours == ref) | (np.isnan(ours) & np.isnan(ref))
    assert same.all(), f"{name}: bits {bits[~same][:5]} decode to {ours[~same][:5]}, reference {ref[~same][:5]}"
    # the sign of zeros is part of the value
    assert (np.signbit(ours) == np.signbit(ref))[~np.isnan(ref)].all()


@pytest.mark.parametrize("name", SMALL)
def test_exhaustive_encode_decode_round_trip(name):
    f = workbench.format(name)
    bits = np.arange(1 << f.width, dtype=np.uint64)
    vals = workbench.from_bits(bits, f)
    nan = np.isnan(vals)
    back = workbench.to_bits(vals[~nan], f)
    assert back.dtype == f.bits_dtype
    assert (back == bits[~nan]).all()
    # every NaN pattern decodes to NaN and re-encodes to one canonical NaN of the format
    if f.has_nan:
        canonical = workbench.to_bits(np.array([np.nan]), f)[0]
        assert np.isnan(workbench.from_bits(np.array([canonical]), f)[0])
    else:
        with pytest.raises(ValueError, match="has no Inf or NaN"):
            workbench.to_bits(np.array([np.nan]), f)
    expected_nans = {"ieee": 2 * ((1 << f.man_bits) - 1), "fn": 2 if f.signed else 1, "fnuz": 1, "none": 0}[f.special]
    assert nan.sum() == expected_nans
    assert workbench.is_representable(vals, f).all()


@pytest.mark.parametrize("name", ["fp32", "e8m13", "tf32", "fp64"])
def test_wide_formats_round_trip_on_random_patterns(name):
    f = workbench.format(name)
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << min(f.width, 63), size=200_000, dtype=np.uint64)
    if f.width == 64:
        bits |= rng.integers(0, 2, size=bits.size, dtype=np.uint64) << np.uint64(63)
    vals = workbench.from_bits(bits, f)
    ok = ~np.isnan(vals)
    assert (workbench.to_bits(vals[ok], f) == bits[ok]).all()
    if name == "fp32":
        assert np.array_equal(vals[ok], bits[ok].astype(np.uint32).view(np.float32).astype(np.float64))


def test_native_dtype_bits_keep_nan_payloads():
    x = np.array([0x7FC00001, 0xFFFFFFFF, 0x3F800000], dtype=np.uint32).view(np.float32)
    assert workbench.to_bits(x, "fp32").tolist() == [0x7FC00001, 0xFFFFFFFF, 0x3F800000]


def test_canonical_nans():
    assert workbench.to_bits(np.array([np.nan]), "fp16")[0] == 0x7E00
    assert workbench.to_bits(np.array([np.nan]), "fp32")[0] == 0x7FC00000
    assert workbench.to_bits(np.array([np.nan]), "fp8_e4m3")[0] == 0x7F
    assert workbench.to_bits(np.array([np.nan]), "fp8_e4m3fnuz")[0] == 0x80
    assert workbench.to_bits(np.array([np.nan]), "e8m0")[0] == 0xFF


def test_bad_bit_patterns_are_named():
    with pytest.raises(ValueError, match=r"bits\[1\] = 0x100 is not a 8-bit pattern of fp8_e4m3"):
        workbench.from_bits(np.array([1, 256]), "fp8_e4m3")
    with pytest.raises(TypeError, match="integer array"):
        workbench.from_bits(np.array([1.0]), "fp16")


# --------------------------------------------------- rounding: exact reference
def _floor_log2(a: Fraction) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def reference_round(x: float, f: FloatFormat, mode: str, subnormals: bool = True, saturate: bool = False,
                    u: float | None = None) -> float:
    """Round with exact rational arithmetic: pick the representable neighbours of |x|
    and choose between them as the mode says (IEEE 754-2019 Section 4.3)."""
    if math.isnan(x):
        return math.nan
    neg = math.copysign(1.0, x) < 0
    a = Fraction(abs(x)) if math.isfinite(x) else None
    largest = Fraction(f.max)
    if a is None or a == 0:
        r = a
    else:
        e = _floor_log2(a)
        if e >= f.emin:
            quantum = Fraction(2) ** (e - f.p + 1)
        else:
            quantum = Fraction(2) ** ((f.emin - f.p + 1) if subnormals and f.subnormals else f.emin)
        below = (a // quantum) * quantum
        above = below if below == a else below + quantum
        if below == a:
            r = a
        else:
            mid = (below + above) / 2
            below_even = (below / quantum) % 2 == 0
            choose_above = {
                "rne": a > mid or (a == mid and not below_even),
                "rna": a >= mid,
                "rnz": a > mid,
                "rz": False,
                "rd": neg,
                "ru": not neg,
                "ra": True,
                "ro": below_even,
                "sr": Fraction(u) < (a - below) / quantum if u is not None else None,
            }[mode]
            r = above if choose_above else below
        if r == 0 and not f.has_zero:
            r = Fraction(f.min_normal)
    if r is None or r > largest:  # infinity or overflow
        toward_zero = mode in ("rz", "ro") or (mode == "rd" and not neg) or (mode == "ru" and neg)
        if r is not None and (toward_zero or saturate or f.special == "none"):
            r = largest
        elif r is None and (saturate or f.special == "none"):
            r = largest
        elif f.has_inf:
            return -math.inf if neg else math.inf
        else:
            return math.nan
    val = float(r)
    if neg and (f.has_negative_zero or val != 0):
        val = -val
    return val


def _neighbours_and_ties(f: FloatFormat, rng: np.random.Generator, n: int) -> np.ndarray:
    """Representable values, exact midpoints between neighbours, and points just off them."""
    if f.width <= 16:
        vals = workbench.from_bits(np.arange(1 << f.width, dtype=np.uint64), f)
    else:
        vals = workbench.from_bits(rng.integers(0, 1 << (f.width - 1), size=n, dtype=np.uint64), f)
    vals = np.unique(vals[np.isfinite(vals)])
    mids = (vals[:-1] + vals[1:]) / 2  # exact: both have at most p <= 52 significant bits
    gaps = vals[1:] - vals[:-1]
    pts = np.concatenate([vals, mids, mids + gaps / 8, mids - gaps / 8, vals[:-1] + gaps / 3])
    above = vals.max() * np.array([1.0, 1 + 2.0**-f.p, 1 + 2.0**(1 - f.p), 1 + 2.0**(-f.p) * 3, 2.0])
    pts = np.concatenate([pts, above, -above, [0.0, -0.0, f.min_subnormal / 2, f.min_subnormal / 4]])
    if not f.signed:
        pts = pts[pts > 0]
    if not f.has_zero:
        pts = pts[pts != 0]
    if pts.size > n:
        pts = rng.choice(pts, size=n, replace=False)
    return pts


@pytest.mark.parametrize("mode", DETERMINISTIC)
@pytest.mark.parametrize("name", ["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz",
                                  "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "e8m0", "ue4m3", "e8m13", "fp32"])
def test_every_mode_matches_fraction_reference_on_ties_and_edges(name, mode):
    f = workbench.format(name)
    rng = np.random.default_rng(abs(hash((name, mode))) % 2**32)
    x = _neighbours_and_ties(f, rng, 3000)
    kwargs = {"saturate": False}
    if f.special == "none":
        x = x[np.isfinite(x)]
    got = workbench.round(x, f, mode, **kwargs)
    want = np.array([reference_round(v, f, mode) for v in x])
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{name}/{mode}: x={x[~same][:4]} got {got[~same][:4]} want {want[~same][:4]}"


@pytest.mark.parametrize("mode", DETERMINISTIC)
@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8_e5m2", "fp6_e3m2"])
def test_every_mode_matches_fraction_reference_on_random_values(name, mode):
    f = workbench.format(name)
    rng = np.random.default_rng(7)
    mag = np.exp2(rng.uniform(f.emin - f.p - 2, f.emax + 2, size=1500))
    x = mag * rng.choice([-1.0, 1.0], size=mag.size)
    for subnormals in (True, False):
        got = workbench.round(x, f, mode, subnormals=subnormals)
        want = np.array([reference_round(v, f, mode, subnormals=subnormals) for v in x])
        same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{name}/{mode}/subnormals={subnormals}: x={x[~same][:3]} got {got[~same][:3]} want {want[~same][:3]}"


def test_saturate_clamps_overflow_and_infinities():
    x = np.array([1e6, -1e6, np.inf, -np.inf])
    for name in ("fp16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1"):
        f = workbench.format(name)
        assert workbench.round(x, f, saturate=True).tolist() == [f.max, -f.max, f.max, -f.max]
    assert workbench.round(x, "fp16").tolist() == [np.inf, -np.inf, np.inf, -np.inf]
    assert np.isnan(workbench.round(x, "fp8_e4m3")).all()


def test_overflow_in_directed_modes_follows_ieee():
    big = np.array([1e6, -1e6])
    assert workbench.round(big, "fp16", "rz").tolist() == [65504.0, -65504.0]
    assert workbench.round(big, "fp16", "rd").tolist() == [65504.0, -np.inf]
    assert workbench.round(big, "fp16", "ru").tolist() == [np.inf, -65504.0]


# --------------------------------------------------- rounding: library casts
def _random_doubles(rng, n, lo, hi):
    x = np.exp2(rng.uniform(lo, hi, size=n)) * rng.choice([-1.0, 1.0], size=n)
    # add full-precision noise so most values are far from ties, plus exact ties
    return x


@pytest.mark.parametrize("name", ["fp16", "fp32"])
def test_rne_equals_numpy_cast(name):
    f = workbench.format(name)
    rng = np.random.default_rng(3)
    x = np.concatenate([
        _random_doubles(rng, 200_000, f.emin - f.p - 3, f.emax + 2),
        _neighbours_and_ties(f, rng, 200_000),
        [np.inf, -np.inf, 0.0, -0.0],
    ])
    ref = x.astype(NATIVE[name]).astype(np.float64)
    got = workbench.round(x, f)
    assert np.array_equal(got, ref) and np.array_equal(np.signbit(got), np.signbit(ref))
    assert np.isnan(workbench.round(np.array([np.nan]), f)).all()


@pytest.mark.parametrize("name", list(ML))
def test_rne_equals_ml_dtypes_cast(name):
    f = workbench.format(name)
    rng = np.random.default_rng(5)
    x = np.concatenate([
        _random_doubles(rng, 100_000, f.emin - f.p - 3, f.emax + 1),
        _neighbours_and_ties(f, rng, 100_000),
        np.array([0.0, -0.0]),
    ])
    if name == "bf16":
        # ml_dtypes casts float64 to bfloat16 through float32, which double-rounds
        # (e.g. -0x1.c6ffff76a3844p-97 goes to ...c8p-97, the exact RNE is ...c6p-97,
        # as the Fraction reference above confirms).  Compare on float32 inputs, where
        # its cast is a single rounding, over bfloat16's whole range.
        x = np.concatenate([x, _random_doubles(rng, 50_000, -140, 128)])
        x = x[np.abs(x) < np.finfo(np.float32).max].astype(np.float32).astype(np.float64)
    ref = x.astype(ML[name]).astype(np.float64)
    got = workbench.round(x, f)
    same = ((got == ref) & (np.signbit(got) == np.signbit(ref))) | (np.isnan(got) & np.isnan(ref))
    assert same.all(), f"{name}: x={x[~same][:4]} got {got[~same][:4]} ml_dtypes {ref[~same][:4]}"


def test_e8m0_rounds_to_powers_of_two():
    # E8M0 holds 2^k only: round to nearest picks the nearer power (ties of the
    # one-bit significand, 1.5 * 2^k, go to the even significand, i.e. up).
    x = np.array([3.0, 2.9, 3.1, 0.75, 1e-40, 2.0**127 * 1.4])
    assert workbench.round(x, "e8m0").tolist() == [4.0, 2.0, 4.0, 1.0, 2.0**-127, 2.0**127]
    assert workbench.round(x, "e8m0", "rd").tolist() == [2.0, 2.0, 2.0, 0.5, 2.0**-127, 2.0**127]
    with pytest.raises(ValueError, match="no zero"):
        workbench.round(np.array([1.0, 0.0]), "e8m0")
    with pytest.raises(ValueError, match="unsigned"):
        workbench.round(np.array([-1.0]), "ue4m3")


# -------------------------------------------------------- stochastic rounding
def test_stochastic_rounding_is_unbiased_and_between_neighbours():
    rng = np.random.default_rng(11)
    x = np.full(200_000, 1 + 2.0**-12 + 2.0**-13)  # 3/4 of the way from 1 to 1 + 2^-10 ... in fp16 units: 0.375 ulp
    r = workbench.round(x, "fp16", "sr", rng=rng)
    lo, hi = 1.0, 1 + 2.0**-10
    assert set(np.unique(r)) <= {lo, hi}
    p_up = (x[0] - lo) / (hi - lo)
    frac_up = np.mean(r == hi)
    assert abs(frac_up - p_up) < 5 * math.sqrt(p_up * (1 - p_up) / x.size)
    exact = np.array([1.0, 0.5, -2.0])
    assert workbench.round(exact, "fp16", "sr", rng=rng).tolist() == exact.tolist()


def test_stochastic_rounding_matches_reference_given_the_same_uniforms():
    f = workbench.format("bf16")
    x = _random_doubles(np.random.default_rng(2), 2000, -130, 10)
    got = workbench.round(x, f, "sr", rng=np.random.default_rng(99))
    u = np.random.default_rng(99).random(x.size)
    want = np.array([reference_round(v, f, "sr", u=ui) for v, ui in zip(x, u)])
    assert np.array_equal(got, want)


def test_mode_argument_errors():
    with pytest.raises(ValueError, match="rng="):
        workbench.round([1.0], "fp16", "sr")
    with pytest.raises(ValueError, match="only used by mode='sr'"):
        workbench.round([1.0], "fp16", "rne", rng=np.random.default_rng())
    with pytest.raises(ValueError, match="unknown rounding mode 'nearest'"):
        workbench.round([1.0], "fp16", "nearest")
    with pytest.raises(ValueError, match="no Inf or NaN"):
        workbench.round([1.0, np.nan], "fp4_e2m1")


def test_round_keeps_shape_and_accepts_lists_and_ints():
    out = workbench.round([[1, 2], [3, 2049]], "fp16")
    assert out.shape == (2, 2) and out.dtype == np.float64 and out[1, 1] == 2048.0
    with pytest.raises(ValueError, match="not exactly a float64"):
        workbench.round(np.array([2**53 + 1], dtype=np.int64), "fp64")


# ------------------------------------------------------ representability API
def test_check_representable_names_array_index_value_and_format():
    a = np.array([[1.0, 0.5], [1 + 2.0**-12, 3.0]])
    with pytest.raises(ValueError) as err:
        workbench.check_representable(a, "fp16", "A")
    msg = str(err.value)
    assert "A[1, 0]" in msg and "1.000244140625" in msg and "fp16" in msg
    assert np.array_equal(workbench.check_representable(a[0], "fp16", "A"), a[0])


def test_is_representable_special_values():
    x = np.array([np.nan, np.inf, -0.0, 448.0, 480.0, 240.0])
    assert workbench.is_representable(x, "fp8_e4m3").tolist() == [True, False, True, True, False, True]
    assert workbench.is_representable(x, "fp16").tolist() == [True, True, True, True, True, True]
    assert workbench.is_representable(x, "fp8_e4m3fnuz").tolist() == [True, False, True, False, False, True]
    assert workbench.is_representable(x, "fp4_e2m1").tolist() == [False, False, True, False, False, False]


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp6_e2m3",
                             "fp4_e2m1", "fp32"]),
       mode=st.sampled_from(DETERMINISTIC), below=st.integers(-3, 80), frac=st.floats(0.0, 1.0),
       negative=st.booleans())
@example(name="fp8_e4m3fnuz", mode="rd", below=30, frac=0.0, negative=True)
@example(name="fp16", mode="rne", below=1, frac=0.0, negative=False)   # exactly half the smallest quantum
def test_values_at_and_far_below_the_smallest_subnormal_match_the_fraction_reference(name, mode, below, frac,
                                                                                      negative):
    # |x| = 2**(q - below) * (1 + frac), q the exponent of the smallest subnormal: the fast
    # path rounds values a whole quantum or more below it to 0 or the quantum directly
    f = workbench.format(name)
    x = math.ldexp(1.0 + frac, f.emin - f.p + 1 - below)
    x = -x if negative and f.signed else x
    got = float(workbench.round(np.array([x]), f, mode)[0])
    want = reference_round(x, f, mode)
    assert got == want and np.signbit(got) == np.signbit(want), (x, got, want)


_any_float = st.one_of(
    st.floats(width=64),                                               # anything, NaN and Inf included
    st.floats(min_value=-1e6, max_value=1e6),                          # the formats' normal range
    st.floats(min_value=-1e-30, max_value=1e-30),                      # subnormals and far below
    st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 448.0, 464.0, 57344.0]),
)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz",
                             "fp6_e3m2", "fp4_e2m1", "e8m13", "fp32"]),
       mode=st.sampled_from(DETERMINISTIC), subnormals=st.booleans(), saturate=st.booleans(),
       xs=st.lists(_any_float, min_size=1, max_size=40))
def test_arrays_of_mixed_values_match_the_fraction_reference(name, mode, subnormals, saturate, xs):
    # the rounding runs a vectorised pass and then handles what it left element by element:
    # a mixed array takes both, in one call
    f = workbench.format(name)
    x = np.array(xs)
    if f.special == "none":
        x = x[~np.isnan(x)]
        if not saturate:
            x = x[np.isfinite(x)]
    got = workbench.round(x, f, mode, subnormals=subnormals, saturate=saturate)
    want = np.array([reference_round(v, f, mode, subnormals=subnormals, saturate=saturate) for v in x])
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"x={x[~same][:4]} got {got[~same][:4]} want {want[~same][:4]}"
