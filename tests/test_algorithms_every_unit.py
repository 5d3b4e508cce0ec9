"""Every GEMM algorithm, with its defaults, on every default preset that writes binary32
(issue 39 item 1; issue 55 item 6): it runs on every unit - AMD units (whose kinds
compose ``accumulation="outside"``/``"promote"`` from chains), FMA chains, FNUZ fp8
words, block-scaled MX/NVFP4 units (given scale factors of 1) - because its words are,
by default, in the unit's own input format.  The papers' word formats (Markidis'
fp16, Ootomo-Yokota's halfhalf, CUTLASS' tf32, bf16xN's bf16), fixed explicitly, are
refused, with a message naming both formats, where the unit cannot hold them.
``ozaki`` runs on an integer unit (``algorithms.INT8_UNIT``), ``ozaki1_fp8``/``ozaki2_fp8`` on units
whose input format holds their integer digits (tests/test_ozaki_fp8.py), not on all of these presets."""
from __future__ import annotations

import numpy as np
import pytest

import algorithms
import workbench as wb
from workbench import units

GEMM_ALGORITHMS = [name for name in algorithms.available() if name not in ("ozaki", "ozaki1_fp8", "ozaki2_fp8")]
#: each algorithm's keyword fixing the papers' word format, and that format
PAPER_WORDS = {"markidis": ("word_format", "fp16"), "ootomo_yokota": ("variant", "halfhalf"),
               "cutlass_xtf32": ("word_format", "tf32"), "bf16xn": ("word_format", "bf16"),
               "multiword": ("word_format", "fp16")}
#: the default preset of each (device, formats) and every block-scaled one (MX, NVFP4: not
#: the defaults of their formats), binary32 output
UNITS = [p["name"] for p in wb.presets() if (p["default"] or p["scale_format"]) and p["out_format"] == "fp32"]


def test_the_table_names_every_gemm_algorithm():
    assert sorted(PAPER_WORDS) == GEMM_ALGORITHMS
    assert len(UNITS) >= 30 and {units.resolve(u).kind for u in UNITS} >= {
        "t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa"}


@pytest.mark.parametrize("name", GEMM_ALGORITHMS)
def test_every_gemm_algorithm_runs_on_every_unit(name):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((3, 40))
    B = rng.standard_normal((40, 2))
    exact = wb.exact.gemm(A, B)
    f = algorithms.get(name)
    for unit in UNITS:
        D = f(A, B, model=units.resolve(unit))
        assert D.shape == (3, 2) and np.isfinite(D).all(), unit
        # the words carry at least the unit's input precision: a 2-word split of fp4 still has 4 bits
        assert np.abs(D - exact).max() <= 0.25 * np.abs(exact).max(), (unit, D, exact)


@pytest.mark.parametrize("name", GEMM_ALGORITHMS)
def test_the_papers_words_are_refused_where_the_unit_cannot_hold_them(name):
    """The paper's format on a unit of that format runs; on a unit of lower precision it is
    refused, and the message names the words' format and the unit's."""
    keyword, value = PAPER_WORDS[name]
    words = {"halfhalf": "fp16"}.get(value, value)
    f = algorithms.get(name)
    A, B = np.ones((2, 8)), np.ones((8, 2))
    refused = ran = 0
    for unit in UNITS:
        model = units.resolve(unit)
        fin = wb.format(model.in_format)
        if fin.name == words:
            np.testing.assert_array_equal(f(A, B, model=model, **{keyword: value}), np.full((2, 2), 8.0))
            ran += 1
        elif fin.p < wb.format(words).p:
            with pytest.raises(ValueError, match=f"{words} words are not all representable in the preset's "
                                                 f"input format {fin.name}"):
                f(A, B, model=model, **{keyword: value})
            refused += 1
    assert ran and refused, name
