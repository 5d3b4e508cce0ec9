"""CDNA3's internal round-down vs its round-toward-zero twin (``alignment_rounding``).

Xie et al. 2025 (MMA-Sim), Algorithms 10-11 round T and c *down* when they are
re-aligned at E (Alg. 10 lines 14-15; Alg. 11 lines 15-16 and 22-23), which makes the
CDNA3 matrix cores' errors skew negative (Section 6.2.4, Figure 3).  Their hypothetical
``v_mfma_f32_32x32x8_f16_rz`` replaces those RD steps by RZ and is sign-symmetric.

Expected values here are worked out by hand with exact fractions (each case's
docstring) and cross-checked with the independent reference tests/reference_mma.py;
nothing is computed with the engine under test.
"""
from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import workbench as wb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_mma as ref  # noqa: E402
from test_engine_reference import _random_model, check_model, draw  # noqa: E402

F2 = Fraction(2)
RD16 = wb.preset("MI300X", "fp16", "fp32")
RZ16 = wb.preset("MI300X", "fp16", "fp32", variant="rz")
RD8 = wb.preset("MI300X", "fp8_e5m2", "fp32")
RZ8 = wb.custom_model("fp8_e5m2fnuz", "fp32", kind="gtr-fdpa", L=16, F=24, F2=31, rounding="rne",
                      alignment_rounding="rz")


def d_of(model, a, b, c) -> Fraction:
    return Fraction(float(wb.gemm(np.array([a], float), np.array([b], float).T, np.array([[float(c)]]),
                                  model=model)[0, 0]))


def ref_of(model, a, b, c) -> Fraction:
    op = ref.tr_fdpa if model.kind == "tr-fdpa" else ref.gtr_fdpa
    pad = (-len(a)) % model.L
    return Fraction(op(list(a) + [0.0] * pad, list(b) + [0.0] * pad, float(c), F=model.F, F2=model.F2,
                       rounding=model.rounding, in_format=model.in_format,
                       alignment_rounding=model.alignment_rounding))


# ------------------------------------------------------------------ the parameter
def test_parameter_is_data_on_the_model():
    assert RD16.alignment_rounding == "rd" and RD16.default
    assert RZ16.alignment_rounding == "rz" and not RZ16.default and RZ16.variant == "rz"
    assert "hypothetical" in RZ16.source and "Figure 3" in RZ16.source and "not a real device" in RZ16.source
    # the twin differs from the CDNA3 unit in that one parameter only
    diff = {k for k in RD16.params if RD16.params[k] != RZ16.params[k]}
    assert diff == {"alignment_rounding"}
    # TR/GTR default to CDNA3's round-down; custom_model takes the name
    m = wb.custom_model("bf16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31, rounding="rne")
    assert m.alignment_rounding == "rd"
    assert wb.custom_model("bf16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31,
                           alignment_rounding="rz").params["alignment_rounding"] == "rz"
    assert "alignment_rounding" in wb.engine.PARAM_NAMES
    assert wb.preset("A100", "fp16", "fp32").alignment_rounding is None
    # the default preset keeps being what default lookup returns
    assert wb.preset("cdna3", "fp16", "fp32").name == "cdna3/mfma/fp16->fp32"


def test_parameter_validation():
    with pytest.raises(ValueError, match="alignment_rounding"):
        wb.custom_model("fp16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31, alignment_rounding="rne")
    with pytest.raises(ValueError, match="only TR-FDPA and GTR-FDPA"):
        wb.custom_model("fp16", "fp32", kind="t-fdpa", L=8, F=24, alignment_rounding="rz")


# ------------------------------------------------------------- hand-computed cases
def test_tr_f2_step_differs():
    """Alg. 10 line 14.  a*b = -(1 + 2^-9) 2^-25 (e_max = -25, kept whole by RZ_24),
    c = 1, E = 0: T at E is -(2^-25 + 2^-34).
    RD_31: -(2^-25 + 2^-31); S = 1 - 2^-25 - 2^-31, below the midpoint 1 - 2^-25 of
    1 - 2^-24 and 1: RNE-FP32 gives 1 - 2^-24.
    RZ_31: -2^-25; S = 1 - 2^-25, the midpoint: ties-to-even gives 1.
    Negated (a*b > 0, c = -1): T' = 2^-25 either way, S = -1 + 2^-25 ties to -1."""
    a, b = [-(1 + 2.0**-9) * 2.0**-12], [2.0**-13]
    cases = [(RD16, a, 1, 1 - F2**-24), (RZ16, a, 1, Fraction(1)),
             (RD16, [-a[0]], -1, Fraction(-1)), (RZ16, [-a[0]], -1, Fraction(-1))]
    for m, x, c, want in cases:
        assert ref_of(m, x, b, c) == want, (m.name, x, c)
        assert d_of(m, x, b, c) == want, (m.name, x, c)


def test_tr_c_step_differs():
    """Alg. 10 line 15.  a*b = 1 (e_max = E = 0), c = -2^-30: s_c at E is -2^-30.
    RD_24 gives -2^-24, S = 1 - 2^-24 (an fp32 value); RZ_24 gives 0, S = 1.
    The exact 1 - 2^-30 rounds (RNE) to 1: RD is one ulp low, RZ exact.
    Negated (a*b = -1, c = 2^-30): both cut 2^-30 to 0, d = -1."""
    cases = [(RD16, 1.0, -(2.0**-30), 1 - F2**-24), (RZ16, 1.0, -(2.0**-30), Fraction(1)),
             (RD16, -1.0, 2.0**-30, Fraction(-1)), (RZ16, -1.0, 2.0**-30, Fraction(-1))]
    for m, x, c, want in cases:
        assert ref_of(m, [x], [1.0], c) == want, (m.name, x, c)
        assert d_of(m, [x], [1.0], c) == want, (m.name, x, c)


def test_gtr_group_merge_differs():
    """Alg. 11 lines 15-16, on MMA-Sim Table 8's input (Eq. 10): a = [-2^13, -0.5, -0.25,
    -0.125], b = [2^10, 1, 1, 1], c = 2^23 in FP8 E5M2.  Even group: -2^23 - 0.25 with
    RZ_24 at e = 23 -> -2^23; odd group: -0.5 - 0.125 = -0.625 exactly (e = -1).
    Merged at e_max = 23 with F = 24 (quantum 2^-1): RD gives -1 (the paper's -1),
    RZ gives -0.5.  Then + 2^23: d_RD = -1, d_RZ = -0.5."""
    a, b, c = [-2.0**13, -0.5, -0.25, -0.125], [2.0**10, 1, 1, 1], 2.0**23
    for m, want in ((RD8, Fraction(-1)), (RZ8, Fraction(-1, 2))):
        assert ref_of(m, a, b, c) == want, m.describe()
        assert d_of(m, a, b, c) == want, m.describe()


def test_gtr_c_step_differs():
    """Alg. 11 line 23.  a*b = 1 (E = 0), c = -(1 + 2^-23) 2^-20 (e_c = -20 is not below
    E - F - 1 = -25, so c is kept): s_c at E is -(2^-20 + 2^-43).
    RD_24: -(2^-20 + 2^-24), d = 1 - 2^-20 - 2^-24; RZ_24: -2^-20, d = 1 - 2^-20."""
    c = -(1 + 2.0**-23) * 2.0**-20
    for m, want in ((RD8, 1 - F2**-20 - F2**-24), (RZ8, 1 - F2**-20)):
        assert ref_of(m, [1.0], [1.0], c) == want, m.describe()
        assert d_of(m, [1.0], [1.0], c) == want, m.describe()


def test_explain_names_the_rounding():
    a, b = [-(1 + 2.0**-9) * 2.0**-12], [2.0**-13]
    assert "RD_(F2+1)" in str(wb.explain(a, b, 1.0, RD16))
    tr = wb.explain(a, b, 1.0, RZ16)
    assert "RZ_(F2+1)" in str(tr) and "RZ to F2 + 1" in str(tr) and tr.value == 1.0


# ------------------------------------------------------------------ sign symmetry
TWINS = [RZ16, RZ8,
         wb.custom_model("bf16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31, rounding="rne", alignment_rounding="rz"),
         wb.custom_model("tf32", "fp32", kind="tr-fdpa", L=4, F=24, F2=31, rounding="rne", alignment_rounding="rz")]


@pytest.mark.parametrize("m", TWINS, ids=lambda m: f"{m.kind}-{m.in_format}")
def test_rz_twin_is_sign_symmetric(m):
    """D(-A, B, -C) == -D(A, B, C) entry by entry: every step of the twin (RZ_F, RZ, RNE)
    commutes with negation (Xie Sec. 6.2.4)."""
    rng = np.random.default_rng(17)
    K = 3 * m.L + 1
    A = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(8)])
    B = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(6)]).T
    C = np.stack([draw(rng, m.out_format, 6, specials=False) for _ in range(8)])
    D = wb.gemm(A, B, C, model=m).astype(float)
    E = wb.gemm(-A, B, -C, model=m).astype(float)
    fin = np.isfinite(D)
    assert np.array_equal(E[fin], -D[fin])
    assert np.array_equal(np.isnan(D), np.isnan(E))


def _figure3_inputs(seed: int):
    """MMA-Sim Figure 3's inputs: A (32x8), B (8x32) ~ 1000 N(0,1) in fp16, C ~ N(0,1) in fp32."""
    rng = np.random.default_rng(seed)
    A = wb.round(1000 * rng.standard_normal((32, 8)), "fp16")
    B = wb.round(1000 * rng.standard_normal((8, 32)), "fp16")
    C = wb.round(rng.standard_normal((32, 32)), "fp32")
    return A, B, C


def test_rd_default_is_not_sign_symmetric_and_rz_is():
    """On Figure 3's inputs, the CDNA3 unit breaks D(-A, B, -C) = -D(A, B, C) for many
    entries, its twin for none."""
    A, B, C = _figure3_inputs(3)
    Drd, Erd = wb.gemm(A, B, C, model=RD16), wb.gemm(-A, B, -C, model=RD16)
    Drz, Erz = wb.gemm(A, B, C, model=RZ16), wb.gemm(-A, B, -C, model=RZ16)
    assert np.array_equal(Erz, -Drz)
    assert int((Erd != -Drd).sum()) > 50


def test_figure3_bias_sign():
    """Signed errors against the exact A B + C (Fractions): CDNA3's mean is negative and
    most errors are negative; the twin's are balanced (Xie Figure 3)."""
    A, B, C = _figure3_inputs(0)
    exact = [[sum((Fraction(float(A[i, k])) * Fraction(float(B[k, j])) for k in range(8)), Fraction(float(C[i, j])))
              for j in range(32)] for i in range(32)]
    err = {}
    for m in (RD16, RZ16):
        D = wb.gemm(A, B, C, model=m)
        err[m.alignment_rounding] = np.array([float(Fraction(float(D[i, j])) - exact[i][j])
                                              for i in range(32) for j in range(32)])
    rd, rz = err["rd"], err["rz"]
    scale = np.abs(rd).mean()
    assert rd.mean() < -0.2 * scale
    assert (rd < 0).mean() > 0.6
    assert abs(rz.mean()) < 0.1 * np.abs(rz).mean() + 0.05 * scale
    assert 0.35 < (rz < 0).mean() / max((rz != 0).mean(), 1e-9) < 0.65


# ------------------------------------------------------------ against the reference
@pytest.mark.parametrize("kind", ["tr-fdpa", "gtr-fdpa"])
def test_random_rz_models_against_reference(kind):
    """Random TR/GTR parameter sets with alignment_rounding="rz", bit for bit against
    the reference (specials, ties, cancellation, chained blocks)."""
    rng = np.random.default_rng(2024 + len(kind))
    for _ in range(5):
        m = _random_model(rng, kind).with_params(alignment_rounding="rz")
        check_model(m, rng, 12, [m.L, 2 * m.L + 1])


# ------------------------------------------------------------------- the experiment
def test_experiment_builds_both_units():
    """experiments/cdna3_rounding_bias.toml runs the CDNA3 preset and its RZ twin on the
    same inputs (one input per seed, two units)."""
    import workbench.sweep as sweep
    from workbench.sweep.tasks import build_model

    exp = sweep.parse(Path(__file__).resolve().parents[1] / "experiments" / "cdna3_rounding_bias.toml", quick=True)
    models = {}
    for t in exp.tasks:
        m = build_model(t.spec)
        models.setdefault(m.alignment_rounding, set()).add(t.input_hash)
    assert set(models) == {"rd", "rz"}
    assert models["rd"] == models["rz"]
