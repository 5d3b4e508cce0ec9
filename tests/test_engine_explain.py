"""workbench.explain: the trace's value is workbench.gemm's output bit for bit (random
inputs, every traced kind), and its text walks through the steps of Valpey et al.
2025 (under Table 5) / Xie et al. 2025 Algorithm 7."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench import catalogue
from workbench.engine import EXPLAINED_KINDS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_reference import bits, draw  # noqa: E402

MODELS = [r for r in catalogue.records() if r.kind in EXPLAINED_KINDS and r.interleave == 1]
MODELS += [wb.custom_model("fp16", "fp32", L=8, neab=2, sticky=True, rounding="rne"),
           wb.custom_model("bf16", "fp32", L=4, F=24, c_position="late", rounding="rz"),
           wb.custom_model("fp16", "fp32", kind="tr-fdpa", L=4, F=20, F2=26, zero_exponent=-60),
           wb.custom_model("fp8_e4m3", "fp16", kind="e-fdpa", L=8, rounding="rd")]


@pytest.mark.parametrize("m", MODELS, ids=lambda m: getattr(m, "name", "") or m.describe())
def test_trace_value_is_the_kernel_value(m):
    rng = np.random.default_rng(11)
    L = 1 if m.kind == "fma" else m.L
    for t in range(5):
        K = int(rng.choice([L, 2 * L + 1]))
        a = draw(rng, m.in_format, K, specials=t == 4)
        b = draw(rng, m.in_format, K, specials=t == 4)
        c = float(draw(rng, m.out_format, 1, specials=False)[0])
        d = float(wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=m)[0, 0])
        tr = wb.explain(a, b, c, m)
        assert bits(tr.value, m.out_format) == bits(d, m.out_format), (m.describe(), a, b, c, tr.value, d)
        assert len(tr.blocks) == (1 if m.kind == "fma" and K == 0 else -(-K // L))


def test_walkthrough_text_fasi_normalisation_example():
    """Fasi et al. / Valpey et al. Sec. 6: 1 - 2^-24 plus four 2^-24 on Volta gives
    1 + 2^-23 because the sum is not normalised before the final rounding."""
    tr = wb.explain([1, 1, 1, 1], [2.0**-24] * 4, 1 - 2.0**-24, wb.preset("V100", "fp16", "fp32"))
    s = str(tr)
    assert tr.value == 1 + 2.0**-23
    assert "largest exponent of all terms is -1" in s
    assert "a0*b0 = 2^-10 * 2^-14 = 2^-24" in s
    assert "not normalised" in s and "final rounding RZ to fp32" in s
    assert tr.blocks[0].e_max == -1 and not tr.blocks[0].zero_exponent_set_max


def test_zero_exponent_and_lost_bits_are_reported():
    m = wb.preset("H100", "fp16", "fp32")  # zero exponent -133
    tr = wb.explain([2.0**-14, 0.0], [2.0**-14, 1.0], 0.0, m)
    assert tr.blocks[0].zero_exponent_set_max is False and tr.blocks[0].e_max == -28
    tr = wb.explain([1.0, 2.0**-14], [1.0, 2.0**-14], 0.0, wb.preset("V100", "fp16", "fp32"))
    lost = [t.lost for t in tr.blocks[0].terms if t.label == "a1*b1"][0]
    assert lost == 2.0**-28 and tr.value == 1.0  # 2^-28 is below the 23 bits kept at 2^0


def test_cdna3_fp8_table8_trace():
    tr = wb.explain([-2.0**13, -0.5, -0.25, -0.125], [2.0**10, 1, 1, 1], 2.0**23, wb.preset("cdna3", "fp8_e5m2"))
    assert tr.value == -1.0  # Xie et al. Table 8
    assert "rounded down" in str(tr)


def test_unsupported_kind_and_bad_values():
    with pytest.raises(ValueError, match="gst-fdpa"):
        wb.explain([1.0] * 64, [1.0] * 64, 0.0, wb.preset("blackwell", "fp4_e2m1", variant="nvfp4"))
    with pytest.raises(ValueError, match="not representable"):
        wb.explain([0.1], [1.0], 0.0, wb.preset("A100", "fp16"))
    assert math.isnan(wb.explain([np.inf], [0.0], 0.0, wb.preset("A100", "fp16")).value)
