"""The algorithms package API: registry, validation, term orders, C, import hygiene (issue 5 item 5)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import algorithms
import workbench
from workbench.numbers import exact as _exact
from algorithms._common import chain

FP16 = workbench.preset("V100", "fp16", "fp32")
NAMES = ["bf16xn", "cutlass_xtf32", "markidis", "multiword", "ootomo_yokota", "ozaki", "ozaki1_fp8", "ozaki2_fp8"]
MODEL_FOR = {
    "markidis": FP16, "ootomo_yokota": FP16, "multiword": FP16,
    "cutlass_xtf32": workbench.preset("A100", "tf32", "fp32"),
    "bf16xn": workbench.preset("A100", "bf16", "fp32"), "ozaki": algorithms.INT8_UNIT,
    "ozaki1_fp8": workbench.preset("H100", "fp8_e4m3", "fp32"), "ozaki2_fp8": workbench.preset("B200", "fp8_e4m3", "fp32"),
}


def test_registry_lists_and_returns_every_algorithm():
    assert algorithms.available() == NAMES
    assert sorted(algorithms.ALGORITHMS) == NAMES
    for name in NAMES:
        assert algorithms.get(name) is getattr(algorithms, name) is algorithms.ALGORITHMS[name]
    with pytest.raises(ValueError, match="available: bf16xn"):
        algorithms.get("strassen")


@pytest.mark.parametrize("name", NAMES)
def test_every_algorithm_returns_float64_and_words(name):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 9)).astype(np.float32)
    B = rng.standard_normal((9, 2)).astype(np.float32)
    f = algorithms.get(name)
    D = f(A, B, model=MODEL_FOR[name])
    assert D.dtype == np.float64 and D.shape == (3, 2)
    D2, words = f(A, B, model=MODEL_FOR[name], return_words=True)
    np.testing.assert_array_equal(D, D2)
    assert isinstance(words, dict) and words
    exact = _exact.gemm(A, B)
    np.testing.assert_allclose(D, exact, rtol=0, atol=1e-5 * np.abs(exact).max())


@pytest.mark.parametrize("name", NAMES)
def test_shape_mismatch_and_bad_inputs_raise_valueerror(name):
    f = algorithms.get(name)
    with pytest.raises(ValueError, match="number of columns of A"):
        f(np.ones((2, 3)), np.ones((4, 2)), model=MODEL_FOR[name])
    with pytest.raises(ValueError, match="C has shape"):
        f(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 3)), model=MODEL_FOR[name])
    with pytest.raises(ValueError, match="NaN or Inf"):
        f(np.full((2, 3), np.nan), np.ones((3, 2)), model=MODEL_FOR[name])


@pytest.mark.parametrize("name,model,kw,needle", [
    ("markidis", workbench.preset("H100", "fp8_e4m3", "fp32"), {"word_format": "fp16"},
     "markidis: fp16 words are not all representable in the preset's input format fp8_e4m3"),
    ("ootomo_yokota", workbench.preset("A100", "bf16", "fp32"), {"variant": "halfhalf"},
     "fp16 words are not all representable in the preset's input format bf16; choose a preset with "
     "in_format='fp16', or leave variant at its default"),
    ("ootomo_yokota", FP16, {"variant": "tf32tf32"}, "tf32 words .* input format fp16"),
    ("cutlass_xtf32", FP16, {"word_format": "tf32"}, "tf32 words .* input format fp16"),
    ("bf16xn", FP16, {"word_format": "bf16"}, "bf16 words .* input format fp16"),
    ("markidis", FP16, {"word_format": "e8m0"}, "word_format='e8m0' is unsigned"),
    ("bf16xn", FP16, {"word_format": "fp99"}, "bf16xn: word_format='fp99'"),
    ("markidis", workbench.preset("V100", "fp16", "fp16"), {}, "out_format='fp32'"),
    ("ootomo_yokota", FP16, {"variant": "fp16"}, "variant='fp16': expected one of \\('halfhalf', 'tf32tf32'\\)"),
    ("ozaki", FP16, {}, "INT8_UNIT"),
    ("ozaki2_fp8", workbench.preset("H100", "fp8_e5m2", "fp32"), {}, "input format fp8_e5m2 .* -16..16"),
    ("ozaki1_fp8", workbench.preset("H100", "fp8_e5m2", "fp32"), {}, "input format fp8_e5m2 .* -15..15"),
])
def test_preset_that_cannot_hold_the_words_is_refused(name, model, kw, needle):
    with pytest.raises(ValueError, match=needle):
        algorithms.get(name)(np.ones((2, 3)), np.ones((3, 2)), model=model, **kw)


def test_multiword_word_format_must_fit_the_unit():
    with pytest.raises(ValueError, match="not all representable"):
        algorithms.multiword(np.ones((2, 3)), np.ones((3, 2)), model=FP16, word_format="bf16")
    # fp8 e4m3 words are fp16 values: allowed on an fp16 unit
    D = algorithms.multiword(np.ones((2, 3)), np.ones((3, 2)), model=FP16, word_format="fp8_e4m3", words=3)
    np.testing.assert_array_equal(D, np.full((2, 2), 3.0))
    with pytest.raises(ValueError, match="words=0"):
        algorithms.multiword(np.ones((2, 3)), np.ones((3, 2)), model=FP16, words=0)


@pytest.mark.parametrize("device,fmt", [("V100", "fp16"), ("B200", "fp16"), ("MI250X", "bf16")])
@pytest.mark.parametrize("order", ["sequential", "interleaved"])
def test_chain_is_bitwise_the_unit_chaining_products(device, fmt, order):
    """One gemm on K-concatenated operands == the products issued one by one with a shared accumulator."""
    model = workbench.preset(device, fmt, "fp32")
    rng = np.random.default_rng(1)
    K = 3 * model.L + 1  # not a multiple of L: every product zero-padded separately
    pairs = [(workbench.round(rng.standard_normal((4, K)) * 2.0**s, fmt), workbench.round(rng.standard_normal((K, 3)), fmt))
             for s in (0, -12, -24)]
    C = workbench.round(rng.standard_normal((4, 3)), "fp32")
    got = chain(model, pairs, C, order=order)
    D = C.astype(np.float32)
    if order == "sequential":
        for X, Y in pairs:
            D = workbench.gemm(X, Y, D, model=model)
    else:
        L = model.L
        for k0 in range(0, K, L):
            for X, Y in pairs:
                D = workbench.gemm(X[:, k0:k0 + L], Y[k0:k0 + L], D, model=model)
    np.testing.assert_array_equal(got, D.astype(np.float64))


def test_c_is_accumulated():
    A = np.eye(2, 8, dtype=np.float32)
    B = np.ones((8, 2), dtype=np.float32)
    C = np.array([[0.5, 0.25], [2.0, -1.0]])
    for name in NAMES:
        D = algorithms.get(name)(A, B, C, model=MODEL_FOR[name])
        np.testing.assert_array_equal(D, A @ B + C, err_msg=name)


def test_algorithms_import_no_sweep_or_probes():
    code = ("import sys, algorithms; bad = [m for m in sys.modules if m.startswith(('workbench.sweep', "
            "'workbench.probes', 'dask', 'torch'))]; print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ootomo_yokota_hi_block_spanning_k_equals_the_in_unit_variant():
    """hi_block >= K: one in-unit chain from 0, added once to C = 0 (exact) = the "rz" variant's D_hi."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((5, 4 * FP16.L)).astype(np.float32)
    B = rng.standard_normal((4 * FP16.L, 3)).astype(np.float32)
    whole = algorithms.ootomo_yokota(A, B, model=FP16, hi_block=4 * FP16.L)
    np.testing.assert_array_equal(whole, algorithms.ootomo_yokota(A, B, model=FP16, accumulation="rz"))
    per_block = algorithms.ootomo_yokota(A, B, model=FP16, hi_block=FP16.L)
    np.testing.assert_array_equal(per_block, algorithms.ootomo_yokota(A, B, model=FP16))
    with pytest.raises(ValueError, match="multiple of the unit's block size"):
        algorithms.ootomo_yokota(A, B, model=FP16, hi_block=FP16.L + 1)


def test_multiword_without_scaling_one_word_is_the_plain_unit_product():
    """scaling=False, p = 1: A_1 = fl(A), B_1 = fl(B), one product from a zero accumulator."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 40))
    B = rng.standard_normal((40, 3))
    got = algorithms.multiword(A, B, model=FP16, words=1, scaling=False)
    want = workbench.gemm(workbench.round(A, "fp16"), workbench.round(B, "fp16"), model=FP16)
    np.testing.assert_array_equal(got, want.astype(np.float64))
