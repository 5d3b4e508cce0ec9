"""Every GEMM algorithm, with its defaults, on every default preset that writes binary32
(issue 39 item 1): it runs wherever its words fit the unit's input format - AMD units
(whose kinds compose ``accumulation="outside"``/``"promote"`` from chains), FMA
chains, FNUZ fp8 words, block-scaled MX/NVFP4 units (given scale factors of 1) - and
is refused, with a message naming the input format, only where the words cannot be
the unit's operands (Markidis' fp16/bf16/tf32 words, Ootomo-Yokota's fp16 halves,
CUTLASS' tf32 words, bf16xN's bf16 words).  ``ozaki`` runs on an integer unit
(``algorithms.INT8_UNIT``), not on these presets."""
from __future__ import annotations

import numpy as np
import pytest

import algorithms
import workbench as wb
from workbench import units

GEMM_ALGORITHMS = [name for name in algorithms.available() if name != "ozaki"]
#: the input formats each algorithm's words are (None: any, the unit's own)
WORDS = {"markidis": ("fp16", "bf16", "tf32"), "ootomo_yokota": ("fp16",), "cutlass_xtf32": ("tf32",),
         "bf16xn": ("bf16",), "multiword": None}
#: the default preset of each (device, formats) and every block-scaled one (MX, NVFP4: not
#: the defaults of their formats), binary32 output
UNITS = [p["name"] for p in wb.presets() if (p["default"] or p["scale_format"]) and p["out_format"] == "fp32"]


def test_the_table_names_every_gemm_algorithm():
    assert sorted(WORDS) == GEMM_ALGORITHMS
    assert len(UNITS) >= 30 and {units.resolve(u).kind for u in UNITS} >= {
        "t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa"}


@pytest.mark.parametrize("name", GEMM_ALGORITHMS)
def test_every_gemm_algorithm_runs_on_every_unit_its_words_fit(name):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((3, 40))
    B = rng.standard_normal((40, 2))
    exact = wb.exact.gemm(A, B)
    f = algorithms.get(name)
    ran = []
    for unit in UNITS:
        model = units.resolve(unit)
        fin = wb.format(model.in_format).name
        words = WORDS[name]
        if words is not None and fin not in words:
            with pytest.raises(ValueError, match=f"input format is {fin}"):
                f(A, B, model=model)
            continue
        D = f(A, B, model=model)
        assert D.shape == (3, 2) and np.isfinite(D).all(), unit
        # the words carry at least the unit's input precision: a 2-word split of fp4 still has 4 bits
        assert np.abs(D - exact).max() <= 0.25 * np.abs(exact).max(), (unit, D, exact)
        ran.append(unit)
    assert ran, name
