"""``gemm(..., input_rounding=...)``: the conversion a unit or library applies to data
wider than the unit's input format, and Fasi et al.'s A100 tf32 tests through it.

Expected values: the pass conditions of Fasi et al.'s A100 TensorFloat-32 suite
(tc_test_numerics-A100-tf32.cu in github.com/north-numerical-computing/
tensor-cores-numerical-behavior), which the paper reports the A100 passes ("the
TensorFloat-32/binary32 mode exhibits the same features as the binary16/binary32
configuration in the T4 GPU", Fasi et al. 2021, Section "NVIDIA Ampere tensor cores");
the conversions are written in the test on the bits (tf32 truncation and
cvt.rna.tf32.f32 as integer operations on the fp32 encoding) or taken from numpy's
float16 and ml_dtypes' bfloat16 casts (round to nearest even).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import workbench as wb
from workbench.units.catalogue import records
from workbench.matmul import product as matmul

A100_TF32 = wb.preset("A100", "tf32", "fp32")
BELOW_ONE = 1.0 - 2.0**-24          # nextafterf(1, 0): an fp32 value tf32 cannot hold
K = 8                               # wmma m16n16k8 tf32: the suite sets the first terms, the rest 0


def _dot(a, b, c, rounding="rz"):
    A = np.zeros((1, K))
    B = np.zeros((K, 1))
    A[0, :len(a)] = a
    B[:len(b), 0] = b
    return float(wb.gemm(A, B, np.array([[c]]), model=A100_TF32, input_rounding=rounding)[0, 0])


def _fasi_cases():
    """(test name, a, b, c, expected d) as the suite sets and checks them."""
    u = 2.0**-24
    cases = [
        ("tf32 subnormals in input", [2.0**-136], [2.0**10], 0.0, 2.0**-126),
        ("binary32 subnormals in input", [], [], 2.0**-149, 2.0**-149),
        ("subnormals in output", [2.0**-126], [0.5], 0.0, 2.0**-127),
        ("subnormals in output (c)", [2.0**-126], [1.0], -(2.0**-127), 2.0**-127),
        ("products are computed exactly", [BELOW_ONE], [BELOW_ONE], 0.0, 1 - 2.0**-10 + 2.0**-22),
        ("products are computed exactly (4)", [BELOW_ONE] * 4, [BELOW_ONE] * 4, 0.0, 4 * (1 - 2.0**-10 + 2.0**-22)),
        ("products are accumulated in binary32", [0.5] * 4, [u] * 4, 1.0, 1.0),
        ("round-down for positive values", [1.0] * 4, [2.0, 2.0**-23 + u], 0.0, 2.0),
        ("round-up for negative values", [1.0] * 4, [-2.0, -(2.0**-23) - u], 0.0, -2.0),
        ("extra bits in the significand alignment", [1.0], [1.0], -BELOW_ONE, u),
        ("normalization in addition", [1.0] * 4, [u] * 4, 1 - u, 1 + 2.0**-23),
        ("normalization in subtraction", [1.0, 1.0], [1.0, -u], -1 + u, 0.0),
        ("extra bits for carry out: third bit", [1.0] * 4, [1.0, 1.5, 1.75, 1.875], 1.875, 8.0),
        ("round-down in normalization", [1.0] * 4, [1.0] * 4, 1 + 2.0**-22 + 2.0**-23, 5.0),
        ("round-up in normalization", [1.0] * 4, [-1.0] * 4, -1 - 2.0**-22 - 2.0**-23, -5.0),
    ]
    for j in range(4):   # "sum starts from the largest element": 1 * 1 among 0.5 * 2^-24
        a, b = [0.5] * 4, [u] * 4
        a[j] = b[j] = 1.0
        cases.append((f"sum starts from largest element (j={j})", a, b, u, 1.0))
    for i in range(4):   # "extra bits for carry out": one b is 2^-23, the others 1
        b = [1.0] * 4
        b[i] = 2.0**-23
        cases.append((f"extra bits for carry out (i={i})", [1.0] * 4, b, 1 + 2.0**-22 + 2.0**-23, 4 + 2.0**-21))
    return cases


@pytest.mark.parametrize("name,a,b,c,expected", _fasi_cases(), ids=[c[0] for c in _fasi_cases()])
def test_fasi_a100_tf32_suite_passes_through_input_rounding(name, a, b, c, expected):
    got = _dot(a, b, c)
    assert got == expected and np.signbit(got) == np.signbit(expected), (name, got, expected)


def test_fasi_a100_tf32_monotonicity_case():
    a, b = [0.5] * 4, [2.0**-24] * 3 + [2.0**-23 + 2.0**-24]
    assert _dot(a, b, 1.0) < _dot(a, b, 1 - 2.0**-24)


def test_the_a100_truncates_fp32_data_rather_than_rounding_it():
    # (1 - 2^-24) rounds to 1 to nearest: only the unit's truncation gives the published product
    assert _dot([BELOW_ONE], [BELOW_ONE], 0.0, "rne") == 1.0
    assert _dot([BELOW_ONE], [BELOW_ONE], 0.0, "rna") == 1.0
    assert _dot([BELOW_ONE], [BELOW_ONE], 0.0, "rz") == 1 - 2.0**-10 + 2.0**-22


def test_default_stays_strict_and_says_how_to_convert():
    with pytest.raises(ValueError, match=r"A\[0, 0\] = 0\.99999994.*not representable in tf32.*input_rounding"):
        wb.gemm([[BELOW_ONE]], [[1.0]], model=A100_TF32)
    with pytest.raises(ValueError, match=r"input_rounding='rd'.*'rz', 'rne', 'rna'"):
        wb.gemm([[1.0]], [[1.0]], model=A100_TF32, input_rounding="rd")
    with pytest.raises(TypeError, match="real numbers"):   # the input gate (workbench.numbers.validation) refuses the dtype
        wb.gemm(np.array([["x"]]), [[1.0]], model=A100_TF32, input_rounding="rz")


# ------------------------------------------------- conversions written in the test
def _tf32_bits(x: np.ndarray, mode: str) -> np.ndarray:
    """fp32 -> tf32 on the encoding: rz clears the low 13 bits; rna adds half of the
    dropped unit to the magnitude first (cvt.rna.tf32.f32: ties away from zero)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if mode == "rna":
        u = u + 0x1000
    return (u & 0xFFFFE000).astype(np.uint32).view(np.float32).astype(np.float64)


def _convert(x: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    if fmt == "tf32":
        return _tf32_bits(x, mode)
    if fmt == "fp16":
        return x.astype(np.float16).astype(np.float64)
    ml = pytest.importorskip("ml_dtypes")
    return x.astype(ml.bfloat16).astype(np.float64)


_finite32 = st.floats(-2.0**100, 2.0**100, allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), case=st.sampled_from([("A100", "tf32", "rz"), ("A100", "tf32", "rna"),
                                             ("H100", "tf32", "rz"), ("A100", "fp16", "rne"),
                                             ("H100", "bf16", "rne")]),
       M=st.integers(1, 4), Kd=st.integers(1, 12), N=st.integers(1, 4))
def test_input_rounding_is_the_conversion_then_the_strict_product(data, case, M, Kd, N):
    dev, fmt, mode = case
    model = wb.preset(dev, fmt, "fp32")
    scale = 2.0**-88 if fmt == "fp16" else 1.0      # fp16 data from its subnormals to 2^12
    A = data.draw(arrays(np.float32, (M, Kd), elements=_finite32)).astype(np.float64) * scale
    B = data.draw(arrays(np.float32, (Kd, N), elements=_finite32)).astype(np.float64) * scale
    A, B = A.astype(np.float32).astype(np.float64), B.astype(np.float32).astype(np.float64)
    Ac, Bc = _convert(A, fmt, mode), _convert(B, fmt, mode)
    got = wb.gemm(A, B, model=model, input_rounding=mode)
    want = wb.gemm(Ac, Bc, model=model)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_every_preset_says_what_its_hardware_does_with_wider_data():
    for rec in records():
        text = rec.wider_inputs
        assert text, rec.name
        assert "nothing wider" in text or "input_rounding" in text, (rec.name, text)
        if rec.in_format == "tf32" and rec.architecture != "cdna3":
            assert "input_rounding='rz'" in text and "Fasi et al. 2021" in text and "cvt.rna.tf32.f32" in text


# ------------------------------------------------------------------ algorithms
_UNIT_ALGORITHMS = {   # the algorithms that issue their products to workbench.gemm (ozaki uses its INT8 unit)
    "markidis": {"model": wb.preset("V100", "fp16", "fp32")},
    "ootomo_yokota": {"model": wb.preset("V100", "fp16", "fp32")},
    "multiword": {"model": wb.preset("V100", "fp16", "fp32"), "words": 3},
    "cutlass_xtf32": {"model": A100_TF32},
    "bf16xn": {"model": wb.preset("A100", "bf16", "fp32")},
}


@pytest.mark.parametrize("name", sorted(_UNIT_ALGORITHMS))
@pytest.mark.parametrize("mode", ["rz", "rne", "rna"])
def test_algorithms_pass_input_rounding_to_every_unit_call(name, mode, monkeypatch):
    import algorithms

    rng = np.random.default_rng(2)
    A = rng.standard_normal((3, 9)).astype(np.float32)
    B = rng.standard_normal((9, 4)).astype(np.float32)
    f = algorithms.get(name)
    plain = f(A, B, **_UNIT_ALGORITHMS[name])
    seen = []
    real_gemm = matmul.gemm   # the algorithms call workbench.matmul.product.gemm

    def spy(*args, **kw):
        seen.append(kw.get("input_rounding"))
        return real_gemm(*args, **kw)

    monkeypatch.setattr(matmul, "gemm", spy)
    got = f(A, B, input_rounding=mode, **_UNIT_ALGORITHMS[name])
    assert seen and set(seen) == {mode}
    # the words are formed in the unit's format, so the conversion leaves them as they are
    np.testing.assert_array_equal(got, plain)
    with pytest.raises(ValueError, match="input_rounding='rd'"):
        f(A, B, input_rounding="rd", **_UNIT_ALGORITHMS[name])
