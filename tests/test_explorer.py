"""The explorer's widget callbacks driven headless: change a control as a person would and
check every panel against an oracle - the independent Fraction models of
tests/reference_mma.py (through test_engine_reference.reference_dot), exact rational
arithmetic for the error and the bound (Blanchard et al. 2020, written out here), and
Khattak & Mikaitis 2025 Table II for the feature sheet."""
from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_reference import reference_dot  # noqa: E402

from workbench.units import catalogue  # noqa: E402
from workbench.studies.explorer import Explorer, dot_trace_length  # noqa: E402

SMALL = {"k_range": (16, 32), "m": 4, "n": 4}


@pytest.fixture(scope="module")
def default():
    return Explorer(**SMALL)


def _normwise_exact(D: np.ndarray, A: np.ndarray, B: np.ndarray) -> Fraction:
    """||D - AB||_inf / (||A||_inf ||B||_inf) in exact rational arithmetic."""
    Af = [[Fraction(x) for x in row] for row in A]
    Bf = [[Fraction(x) for x in row] for row in B]
    AB = [[sum(Af[i][k] * Bf[k][j] for k in range(len(Bf))) for j in range(len(Bf[0]))] for i in range(len(Af))]
    num = max(sum(abs(Fraction(D[i][j]) - AB[i][j]) for j in range(len(AB[0]))) for i in range(len(AB)))
    na = max(sum(abs(x) for x in row) for row in Af)
    nb = max(sum(abs(x) for x in row) for row in Bf)
    return num / (na * nb)


def test_default_unit_stands_apart_from_every_compared_preset():
    ex = Explorer()  # the notebook's starting state: K = 16 ... 1024
    unit = ex.model()
    res = ex.curves()
    ours = res[res["unit"] == "this unit"].set_index("k")["normwise_inf"]
    for device, p in ex.presets().items():
        assert p.params != unit.params, device
        theirs = res[res["unit"] == device].set_index("k")["normwise_inf"]
        # visibly apart on a log plot: below every preset by a factor of more than 1.25 on average
        assert np.exp(np.mean(np.log(ours / theirs))) < 0.8, (device, ours, theirs)


def test_errors_match_the_reference_model_and_exact_arithmetic(default):
    from workbench.studies.explorer import _inputs

    res = default.curves()
    unit = default.model()
    for k in (16, 32):
        A, B = _inputs("normal", unit.in_format, 4, k, 4, 0)
        D = np.array([[reference_dot(unit, A[i], B[:, j], 0.0) for j in range(4)] for i in range(4)])
        want = float(_normwise_exact(D, A, B))
        got = float(res[(res["unit"] == "this unit") & (res["k"] == k)]["normwise_inf"].iloc[0])
        assert got == pytest.approx(want, rel=1e-12)


def test_bound_is_blanchards_block_fma_constant_and_holds(default):
    res = default.curves()
    ours = res[res["unit"] == "this unit"]
    L, F = 16, 26
    for k, err, bound in zip(ours["k"], ours["normwise_inf"], ours["bound"]):
        q = -(-k // L)
        rho = (1 + Fraction(L + 1, 2**F)) * (1 + Fraction(1, 2**24))  # RNE to fp32: u = 2^-24
        assert bound == pytest.approx(float(rho**q - 1), rel=1e-12)
        assert err <= bound


def test_changing_a_control_updates_every_panel():
    ex = Explorer(**SMALL)
    plot, trace, disc = ex.plot.value, ex.trace.value, ex.discrimination.value
    ex.L.value = 4  # the observer runs the update, as a click in the browser does
    assert ex.model().L == 4
    assert ex.error is None and "updated in" in ex.status.value
    assert set(ex.timings) == {"a", "b", "c", "d", "total"}
    assert ex.plot.value != plot and ex.trace.value != trace and ex.discrimination.value != disc
    assert "L=4" in ex.trace.value
    assert "K = 16" in ex.trace_text()  # dot_trace_length(16, 4)
    assert dot_trace_length(1024, 4) == 16 and dot_trace_length(8, 16) == 8


def test_neab_and_F_are_one_parameter():
    ex = Explorer(**SMALL)
    # Khattak & Mikaitis Sec. IV-C: F = (output precision - 1) + neab; fp32: p = 24
    assert ex.neab.value == 26 - 23
    ex.neab.value = 0
    assert ex.F.value == 23 and ex.model().F == 23
    ex.out_format.value = "fp16"  # p = 11: the same F is neab 13
    assert ex.neab.value == 23 - 10


def test_discriminating_input_differs_on_the_reference_models(default):
    out = default.discrimination_outcome()
    r = out.result
    assert out.status == "found" and r is not None
    h100 = catalogue.preset("H100", "fp16", "fp32")
    assert r.model_b.params == h100.params
    ours = reference_dot(default.model(), r.a, r.b, r.c)
    theirs = reference_dot(h100, r.a, r.b, r.c)
    assert ours != theirs
    assert (ours, theirs) == (r.out_a, r.out_b)
    text = default.discrimination_text()
    assert repr(r.out_a) in text and repr(r.out_b) in text


def test_feature_sheet_of_a100_is_table2s_row():
    ex = Explorer(preset="A100", **SMALL)
    assert ex.source.value == "preset" and ex.kind.disabled and not ex.preset.disabled
    sheet = ex.feature_sheet().set_index("feature")["value"]
    # Khattak & Mikaitis 2025 Table II, fp16/bf16 -> fp32, A100: (2,24), 30 bits, NFMA 8, Trunc, early, no
    assert (sheet["prd_align"], sheet["acc_out_prec"], sheet["NFMA"], sheet["final_rounding"], sheet["c_order"],
            sheet["interleaving"]) == ("(2,24)", 30, 8, "Trunc", "early", "no")
    # Fasi et al. 2021: the A100 keeps 1 extra alignment bit (F = 24 = 23 + 1) and truncates
    assert sheet["extra_alignment_bits"] == 1


def test_an_impossible_unit_is_reported_and_the_panels_stay():
    ex = Explorer(**SMALL)
    plot = ex.plot.value
    ex.kind.value = "fma"  # an FMA chain computes in one format: fp16 in, fp32 out is impossible
    assert ex.L.disabled and ex.F.disabled and ex.rounding.disabled
    assert "in_format must equal out_format" in ex.status.value and ex.error is not None
    assert ex.plot.value == plot
    ex.in_format.value = "fp32"
    assert ex.error is None and ex.model().kind == "fma" and ex.plot.value != plot


def test_a_device_without_the_formats_is_named():
    ex = Explorer(in_format="fp8_e4m3", compare_with=("V100", "H100"), discriminate_with="V100", **SMALL)
    assert "V100 has no fp8_e4m3 -&gt; fp32 preset" in ex.status.value  # HTML-escaped
    assert ex.discrimination_text() == "V100 has no fp8_e4m3 -> fp32 preset to compare with"
    assert set(ex.curves()["unit"]) == {"this unit", "H100"}
    sheet = ex.feature_sheet().set_index("feature")
    assert sheet.loc["Fasi et al. tests", "value"] == "not run"  # its constants do not fit in fp8_e4m3


@pytest.mark.parametrize("kw, match", [({"kind": "t-fdpb"}, "kind='t-fdpb'"), ({"k_range": (16, 100)}, "100"),
                                       ({"k_range": (64, 16)}, "k_range"), ({"m": 0}, "m=0"),
                                       ({"compare_with": ("V100", "X1")}, "compare_with='X1'")])
def test_bad_starting_values_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        Explorer(**{**SMALL, **kw})


def test_a_schedule_composes_this_units_gemms():
    """schedule="outside": each block of L from zero, added to an fp32 accumulator (the
    reference's blocks summed in float32 here); the compared presets stay on their units
    alone, the bound is left out, and a schedule without a rule for the K range says so."""
    from workbench.studies.explorer import _inputs

    ex = Explorer(**SMALL, schedule="outside")
    unit = ex.model()
    res = ex.curves()
    A, B = _inputs("normal", unit.in_format, 4, 32, 4, 0)
    D = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            blocks = [reference_dot(unit, A[i, s:s + 16], B[s:s + 16, j], 0.0) for s in (0, 16)]
            D[i, j] = float(np.float32(np.float32(blocks[0]) + np.float32(blocks[1])))
    ours = res[res["unit"] == "this unit"].set_index("k")
    assert float(ours.loc[32, "normwise_inf"]) == pytest.approx(float(_normwise_exact(D, A, B)), rel=1e-12)
    assert ours["bound"].isna().all()
    chain = Explorer(**SMALL).curves()
    assert (chain[chain["unit"] != "this unit"]["normwise_inf"].to_numpy()
            == res[res["unit"] != "this unit"]["normwise_inf"].to_numpy()).all()
    ex.schedule.value = "cublas-h100-fp16-fp32"     # measured on the H100 at K = 16, 32, 64, 256, ...
    assert ex.error is None
    ex.k_range.value = (16, 128)
    assert ex.error is not None and "no rule for K=128" in ex.error
    with pytest.raises(ValueError, match="schedule='cublas'"):
        Explorer(**SMALL, schedule="cublas")
