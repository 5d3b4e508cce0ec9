"""Formats as first class (issue 39, item 3; item 1's multiword part): a format that
does not exist yet - a FloatFormat object or a registered name - drives a custom unit,
an algorithm's words, a sweep and explain; multiword takes FNUZ fp8 words.  Expected
values are exact arithmetic worked out here (integers and powers of two)."""
from __future__ import annotations

import numpy as np
import pytest

import algorithms
import workbench as wb
from workbench.numbers import formats

# IEEE-style E6M9: p = 10, bias 31, emin = -30 (outside fp16's range, inside fp32's)
E6M9 = wb.FloatFormat.custom("e6m9", exp_bits=6, man_bits=9)


def test_the_format_object_drives_a_custom_unit():
    m = wb.custom_model(E6M9, "fp32", L=4, F=24, rounding="rz")
    assert m.in_format == "e6m9" and wb.format("e6m9") == E6M9
    # 2^-30 is a normal e6m9 value (emin = 1 - 31); the product 2^-60 is exact in fp32
    D = wb.gemm(np.array([[2.0 ** -30, 1.0]]), np.array([[2.0 ** -30], [0.0]]), model=m)
    assert D[0, 0] == 2.0 ** -60
    # 1 + 2^-9 has 10 significant bits: an e6m9 value; 1 + 2^-10 is not
    D = wb.gemm(np.array([[1.0, 2.0 ** -9]]), np.array([[1.0], [1.0]]), model=m)
    assert D[0, 0] == 1.0 + 2.0 ** -9
    with pytest.raises(ValueError, match="not representable in e6m9"):
        wb.gemm(np.array([[1.0 + 2.0 ** -10]]), np.array([[1.0]]), model=m)


def test_a_registered_name_works_and_an_unknown_one_says_how():
    formats.register_format(wb.FloatFormat.custom("e5m6", exp_bits=5, man_bits=6))
    assert wb.custom_model("e5m6", "fp32", L=2, F=20, rounding="rne").in_format == "e5m6"
    with pytest.raises(ValueError, match=r"in_format='e7m1x'.*FloatFormat.custom"):
        wb.custom_model("e7m1x", "fp32")


def test_a_name_taken_by_another_encoding_is_refused():
    with pytest.raises(ValueError, match="'fp16' is registered with another encoding"):
        wb.custom_model(wb.FloatFormat.custom("fp16", exp_bits=6, man_bits=9), "fp32")


def test_multiword_with_custom_format_words_on_a_custom_unit():
    m = wb.custom_model(E6M9, "fp32", L=4, F=24, rounding="rz")
    rng = np.random.default_rng(3)
    # A = integer + j * 2^-15: two e6m9 words (the second 2^-15 * j / u = j * 2^-5, u = 2^-10)
    A = rng.integers(-3, 4, (3, 4)) + rng.integers(0, 2, (3, 4)) * 2.0 ** -15
    B = rng.integers(-3, 4, (4, 2)).astype(float)
    want = A @ B            # exact in float64 (at most 20 significant bits) and in the unit's 24-bit window
    for wf in (E6M9, "e6m9"):
        D = algorithms.multiword(A, B, model=m, words=2, word_format=wf, scaling=False)
        assert np.array_equal(D, want)


def test_multiword_with_fnuz_fp8_words_on_cdna3():
    rng = np.random.default_rng(5)
    A = rng.integers(-3, 4, (4, 16)).astype(float)      # integers up to 3: e5m2 values, FNUZ or not
    B = rng.integers(-3, 4, (16, 3)).astype(float)
    for fin in ("fp8_e5m2", "fp8_e4m3"):
        D = algorithms.multiword(A, B, model=wb.preset("MI300X", fin, "fp32"), words=6)
        assert np.array_equal(D, A @ B), fin            # |sums| <= 144: exact in GTR-FDPA's F = 24
    # OCP e4m3 words hold 448 and 2^-9, which the FNUZ unit does not: refused, saying why
    with pytest.raises(ValueError, match="fp8_e4m3 words are not all representable in the preset's input format "
                                         "fp8_e4m3fnuz"):
        algorithms.multiword(A, B, model=wb.preset("MI300X", "fp8_e4m3", "fp32"), word_format="fp8_e4m3")
    with pytest.raises(ValueError, match="word_format='e8m0' is unsigned"):
        algorithms.multiword(A, B, model=wb.preset("MI300X", "fp8_e4m3", "fp32"), word_format="e8m0")


def test_a_sweep_names_a_custom_format_it_defines(tmp_path):
    from workbench import sweep

    exp = {"name": "custom_fmt", "metrics": ["normwise_inf"],
           "defaults": {"formats": {"e4m9": {"exp_bits": 4, "man_bits": 9}},
                        "model": {"kind": "t-fdpa", "L": 4, "F": 24, "rounding": "rz"},
                        "in_format": "e4m9", "out_format": "fp32", "m": 2, "n": 2, "k": 8, "seed": [0, 1],
                        "input": {"generator": "uniform"}},
           "grid": [{"algorithm": "gemm"},
                    {"algorithm": "multiword", "params": {"words": 1, "word_format": "e4m9"}}]}
    table = sweep.run(exp, out=tmp_path / "r", workers=1, progress=False)
    assert len(table) == 4 and table["error"].isna().all(), table["error"].tolist()
    assert set(table["in_format"]) == {"e4m9"}


def test_explain_traces_a_custom_format_unit():
    m = wb.custom_model(E6M9, "fp32", L=2, F=24, rounding="rz")
    text = str(wb.explain([2.0 ** -30, 1.0], [1.0, 1.0], 0.0, m))
    assert "in_format=e6m9" in text and "result d = 1.0" in text
