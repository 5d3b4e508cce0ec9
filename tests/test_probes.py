"""Tests of workbench.probes: inference on presets (closed loop), the Fasi et al. suite,
Khattak-Mikaitis authentication, real CPU targets, the CLI entry point.

Expected parameters are written out from the papers (Xie et al. 2025 Tables 3-7 and
the MMA-Sim 2.1.1 zero exponents; Khattak & Mikaitis 2025 Table II and Section IV),
not read from the code under test.  The full sweep over every preset is marked slow.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.probes import BlackBox, from_model, infer, verify
from workbench.probes.authentication import authenticate
from workbench.probes.fasi import fasi_suite
from workbench.probes.targets import target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inference_checks import assert_strongly_honest  # noqa: E402

N = 4000  # verification outputs per inference in the default run

# (device, in, out, instruction, expected parameters from the papers)
PAPER_CASES = [
    # Volta: NFMA 4, neab 0 (F 23), RZ (Fasi et al.; Khattak Table II; Xie Table 4)
    ("V100", "fp16", "fp32", None, dict(kind="t-fdpa", L=4, F=23, rounding="rz", c_position="early", sticky=False)),
    # Turing m16n8k8, fp16 output: L 8, F 24, RNE to fp16, MMA-Sim zero exponent -20
    ("T4", "fp16", "fp16", None, dict(kind="t-fdpa", L=8, F=24, rounding="rne", zero_exponent=-20)),
    # Ampere bf16: L 8, F 24 (neab 1), RZ (Khattak Table II; Xie Table 4)
    ("A100", "bf16", "fp32", None, dict(kind="t-fdpa", L=8, F=24, rounding="rz", c_position="early")),
    # Ada fp8: L 16, F 13, RZ to E8M13 (Xie Table 4 / Table 2; Khattak Section IV-A4)
    ("L40S", "fp8_e4m3", "fp32", None, dict(kind="t-fdpa", L=16, F=13, rounding="rz", result_format="e8m13")),
    # Hopper fp8 through mma.sync: two interleaved groups of 16, c late with RNE, F 25
    # (Khattak Section IV-A5, Fig. 5c)
    ("H100", "fp8_e5m2", "fp16", "mma.sync", dict(kind="t-fdpa", L=32, F=25, interleave=2, c_position="late",
                                                 late_rounding="rne", rounding="rne")),
    # Blackwell fp4 (tcgen05): L 32, F 25, RZ (Xie Table 4) - a narrow format
    ("B200", "fp4_e2m1", "fp32", None, dict(kind="t-fdpa", L=32, F=25, rounding="rz")),
    # CDNA2 fp16: FTZ-AddMul with P = 4, subnormals flushed (Xie Table 6, Algorithm 2)
    ("MI250X", "fp16", "fp32", None, dict(kind="ftz-addmul", L=4, P=4, flush_subnormals=True)),
    # CDNA1 fp32: a chain of FMAs (Xie Table 6)
    ("MI100", "fp32", "fp32", None, dict(kind="fma", L=1)),
    # CDNA1 bf16: E-FDPA with L = 2, the exact sum rounded once RNE-FP32 (Xie Table 6, Algorithm 6)
    ("MI100", "bf16", "fp32", None, dict(kind="e-fdpa", L=2, rounding="rne", result_format=None)),
    # CDNA3 fp16: TR-FDPA, L 8, F 24, F2 31, RNE-FP32 (Xie Tables 6-7, Algorithm 10)
    ("MI300X", "fp16", "fp32", None, dict(kind="tr-fdpa", L=8, F=24, F2=31, rounding="rne", result_format=None)),
    # CDNA3 fp8: GTR-FDPA (even/odd groups), L 16, F 24, F2 31, RNE-FP32 (Xie Tables 6-7, Algorithm 11)
    ("MI300X", "fp8_e4m3fnuz", "fp32", None, dict(kind="gtr-fdpa", L=16, F=24, F2=31, rounding="rne")),
]


@pytest.mark.parametrize("dev,fin,fout,instr,expected", PAPER_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in PAPER_CASES])
def test_infer_recovers_paper_parameters(dev, fin, fout, instr, expected):
    p = wb.preset(dev, fin, fout, instruction=instr)
    res = infer(from_model(p), n_verify=N)
    for k, v in expected.items():
        assert res.params[k] == v, (k, res.params[k], v, res.sheet())
    assert res.verified, res.sheet()
    assert res.counterexample is None and res.n_verified >= N
    D = wb.gemm(np.ones((2, 64)), np.ones((64, 2)), model=res.model)  # the model is usable in gemm
    assert D.shape == (2, 2)


def test_zero_exponent_unobservable_with_rz_fp32_output():
    """With RZ to fp32 the zeros' exponent moves only bits below fp32's smallest
    subnormal: every candidate, and none, explain the outputs."""
    res = infer(from_model(wb.preset("A100", "fp16", "fp32")), n_verify=1000)
    assert "zero_exponent" in res.unobservable
    assert -132 in res.consistent["zero_exponent"] and None in res.consistent["zero_exponent"]


def test_fixed_shape_black_box():
    p = wb.preset("A100", "fp16", "fp32")

    def mma(A, B, C):
        assert A.shape == (16, 16) and B.shape == (16, 8)  # m16n8k16 only
        return wb.gemm(A, B, C, model=p)

    res = infer(BlackBox(mma, "fp16", "fp32", shape=(16, 8, 16), name="mma.m16n8k16"), n_verify=1000)
    assert (res.params["L"], res.params["F"], res.params["rounding"]) == (8, 24, "rz")
    assert res.verified


def test_verify_finds_and_shrinks_a_counterexample():
    truth = from_model(wb.preset("V100", "fp16", "fp32"))
    wrong = wb.custom_model("fp16", "fp32", L=4, F=24, rounding="rz", zero_exponent=-131)
    n, cex = verify(truth, wrong, n=4000)
    assert cex is not None
    assert cex.black_box != cex.model
    assert np.count_nonzero(cex.a * cex.b) + (cex.c != 0) <= 3  # shrunk to a handful of terms
    again = truth.dots(cex.a[None], cex.b[None], np.array([cex.c]))[0]
    assert again == cex.black_box


# ---------------------------------------------------- AMD: E-, TR-, GTR-FDPA probes
def test_efdpa_told_from_tfdpa_at_l2():
    """FPRev alone cannot separate E-FDPA from a T-FDPA chain by block size; the exact sum
    keeps eps far below any window (Xie Algorithm 6 vs 7) and keeps the running sum
    when U and -U cancel inside one block."""
    from workbench.probes import features as pf

    e = from_model(wb.preset("MI100", "bf16", "fp32"))
    t = from_model(wb.custom_model("bf16", "fp32", L=2, F=24, rounding="rne"))
    st_e, st_t = pf.probe_structure(e).structure, pf.probe_structure(t).structure
    assert (st_e.shape, st_e.L) == ("exact", 2) and (st_t.shape, st_t.L) == ("chain", 2)
    assert pf.probe_exact(e, st_e).value is None          # every eps survives
    assert pf.probe_exact(t, st_t).value is not None
    res = infer(t, n_verify=1000)
    assert (res.params["kind"], res.params["L"], res.params["F"]) == ("t-fdpa", 2, 24) and res.verified


def test_round_down_alignment_is_sign_asymmetric():
    """Xie Section 6.2.4: CDNA3 rounds c down when aligning it, so d(-a, b, -c) differs from
    -d(a, b, c) when c falls below the window; NVIDIA's truncation is symmetric."""
    U, eps = 2.0 ** 14, 2.0 ** (14 - 26)        # eps two binades below F = 24
    a = np.array([[1.0, 1.0, 0, 0]])
    b = np.array([[U, -U, 0, 0]])
    for dev, asym in (("MI300X", True), ("A100", False)):
        bb = from_model(wb.preset(dev, "fp16", "fp32"))
        d_pos = bb.dots(a, b, np.array([eps]))[0]
        d_neg = bb.dots(-a, b, np.array([-eps]))[0]
        assert bool(d_neg != -d_pos) is asym, dev
    from workbench.probes import features as pf

    bb = from_model(wb.preset("MI300X", "fp16", "fp32"))
    al = pf.probe_alignment(bb, pf.Structure("chain", 8), 24)
    assert (al.products, al.c, al.c_dropped_from) == ("rz", "rd", None)
    g = from_model(wb.preset("MI300X", "fp8_e5m2fnuz", "fp32"))
    al = pf.probe_alignment(g, pf.Structure("chain", 16), 24)
    assert (al.c, al.c_dropped_from) == ("rd", 26)       # GTR drops c below E - F - 1
    assert pf.probe_groups(g, pf.Structure("chain", 16), 24).labels == [k % 2 for k in range(16)]


@pytest.mark.parametrize("kind,fin,L,F,F2", [("tr-fdpa", "bf16", 8, 26, 33), ("gtr-fdpa", "fp8_e5m2", 16, 25, 40)])
def test_custom_tr_gtr_parameters_recovered(kind, fin, L, F, F2):
    """The probes derive their constants from the formats: other F, F2 than CDNA3's."""
    m = wb.custom_model(fin, "fp32", kind=kind, L=L, F=F, F2=F2, rounding="rne")
    res = infer(from_model(m), n_verify=1000)
    assert {k: res.params[k] for k in ("kind", "L", "F", "F2", "rounding")} == dict(
        kind=kind, L=L, F=F, F2=F2, rounding="rne"), res.sheet()
    assert res.verified, res.sheet()


def test_tr_fdpa_round_toward_zero_twin_recovered():
    """The hypothetical RZ twin of CDNA3's TR-FDPA (Xie Section 6.2.4, Figure 3): the
    alignment is sign-symmetric as in T-FDPA, but the products' sum keeps F2 = 31 bits
    next to a larger c (Table 7: F 24, F2 31, RNE-FP32), which one F-bit window cannot."""
    res = infer(from_model(wb.preset("MI300X", "fp16", "fp32", variant="rz")), n_verify=1000)
    assert {k: res.params[k] for k in ("kind", "L", "F", "F2", "alignment_rounding", "rounding")} == dict(
        kind="tr-fdpa", L=8, F=24, F2=31, alignment_rounding="rz", rounding="rne"), res.sheet()
    assert res.verified, res.sheet()


def test_scaled_preset_probed_with_unit_scales():
    """f(A, B, C) has no scale inputs: from_model ties an MX unit's scales to 1, and the
    probes recover the T-FDPA core of ST-FDPA (Xie Algorithm 8; Table 4: Blackwell MXFP8
    L 32, F 25, RZ-FP32); k_block and the scale format stay unobservable."""
    bb = from_model(wb.preset("B200", "fp8_e4m3", "fp32", variant="mx"))
    assert "scales = 1" in bb.name
    res = infer(bb, n_verify=1000)
    assert {k: res.params[k] for k in ("kind", "L", "F", "rounding")} == dict(kind="t-fdpa", L=32, F=25, rounding="rz")
    assert res.verified and res.params["k_block"] is None


# ------------------------------------------------ GST-FDPA: exactly summed groups
def test_gst_fdpa_nvfp4_recovered_with_unit_scales():
    """Xie Table 5 / Algorithm 9: Blackwell NVFP4 (k64) is GST-FDPA with L 64, G 16, F 35,
    RZ-FP32 - groups of 16 fp4 products summed exactly, the group sums and c truncated
    to 35 fractional bits.  The scales are tied to 1 by from_model: the scale format is
    unobservable, and the proposed model still runs in gemm with scales."""
    bb = from_model(wb.preset("B200", "fp4_e2m1", "fp32", variant="nvfp4"))
    res = infer(bb, n_verify=N)
    assert {k: res.params[k] for k in ("kind", "L", "G", "F", "rounding", "c_position")} == dict(
        kind="gst-fdpa", L=64, G=16, F=35, rounding="rz", c_position="early"), res.sheet()
    assert res.verified and res.counterexample is None and res.n_verified >= N, res.sheet()
    assert "k_block/scale_format" in res.unobservable and "group_F" in res.unobservable
    nb = 64 // res.model.k_block
    D = wb.gemm(np.ones((2, 64)), np.ones((64, 2)), model=res.model, scale_a=np.ones((2, nb)),
                scale_b=np.ones((nb, 2)))
    assert (D == 64).all()


def test_exact_groups_probe_is_generic_and_silent_on_tfdpa():
    """The group probe derives its constants from the formats: a custom fp8 GST-FDPA with
    other G and F is recovered; per-product truncation (T-FDPA, fp4 on Blackwell,
    Xie Table 4: L 32, F 25) shows no groups."""
    from workbench.probes import features as pf

    m = wb.custom_model("fp8_e4m3", "fp32", kind="gst-fdpa", L=32, G=8, F=31, rounding="rz", k_block=32,
                        scale_format="e8m0")
    g = pf.probe_exact_groups(from_model(m), 32)
    assert (g.F, g.G, g.group_lost_from) == (31, 8, None), g
    t = pf.probe_exact_groups(from_model(wb.preset("B200", "fp4_e2m1", "fp32")), 32)
    assert (t.F, t.G) == (25, None), t
    res = infer(from_model(m), n_verify=1000)
    assert {k: res.params[k] for k in ("kind", "L", "G", "F")} == dict(kind="gst-fdpa", L=32, G=8, F=31)
    assert res.verified, res.sheet()


@pytest.mark.parametrize("G", [8, 16])
@pytest.mark.parametrize("F", [30, 32, 34])
def test_exact_groups_seen_through_round_to_nearest_on_fp4(F, G):
    """fp4 products (powers of two 2^-2 .. 2^4) cannot reach half an ulp of an fp32 c
    that sits F + 1 binades above a window bit: with round to nearest the pairs of half
    window bits showed nothing, and the slow suite's GST-FDPA fp4 G 8 F 30 RNE came out
    as an unverified T-FDPA.  The tie is now made of 2^m equal products (up to half the
    block); F and G are read exactly up to F = 34 (32 products of 16)."""
    from workbench.probes import features as pf

    m = wb.custom_model("fp4_e2m1", "fp32", kind="gst-fdpa", L=64, G=G, F=F, rounding="rne", k_block=G,
                        scale_format="ue4m3")
    g = pf.probe_exact_groups(from_model(m), 64)
    assert (g.F, g.G) == (F, G), g


def test_tie_family_products_sum_to_half_an_ulp():
    """The tie family's products add up to exactly half an ulp of c (independent of the
    split: Fraction arithmetic), in distinct positions ending at hpos."""
    from fractions import Fraction

    from workbench.probes import features as pf

    bb = from_model(wb.custom_model("fp4_e2m1", "fp32", kind="gst-fdpa", L=64, G=8, F=30, rounding="rne",
                                    k_block=8, scale_format="ue4m3"))
    for E in range(18, 38):
        fam = pf._c_families(bb, E, 64, 63, True)
        # products of fp4 powers of two: 2^-2 (subnormals) .. 2^4; at most 32 of them
        assert ("tie" in fam) == (-2 <= E - 24 <= 4 + 5), E
        if "tie" not in fam:
            continue
        c, prods = fam["tie"]
        assert c == 2.0 ** E and max(prods) == 63 and len(prods) <= 32
        assert sum(Fraction(v) for v in prods.values()) == Fraction(2) ** (E - 24), (E, prods)


# ----------------------------------------------------------------- Fasi et al.
def _conclusions(dev: str, n: int) -> dict:
    return {k: t.conclusion for k, t in fasi_suite(wb.preset(dev, "fp16", "fp32"), n=n).items()}


def test_fasi_suite_v100_gives_the_papers_conclusions():
    c = _conclusions("V100", 4)
    # Fasi et al. 2021, Conclusions: exact products, RZ, subnormals supported, largest
    # first, final-only normalisation, carry bits, non-monotonic; no extra bit (V100)
    assert c["subnormal_inputs"] and c["subnormal_c"] and c["subnormal_from_normal"]
    assert c["exact_products"] and c["exact_products_sum"]
    assert c["extra_alignment_bits"] == 0
    assert c["largest_first"] is True
    assert c["rounding"] == "rz"
    assert c["normalisation_in_addition"] == "final only"
    assert c["normalisation_in_subtraction"] == "not normalised"
    assert c["carry_bits_2"] and c["carry_bits_3"]
    assert c["monotonicity"] == "non-monotonic"


@pytest.mark.parametrize("dev", ["T4", "A100"])
def test_fasi_suite_turing_ampere_one_extra_bit(dev):
    """Fasi et al.: T4 and A100 (fp16/fp32) behave as V100 but for one extra bit at the
    bottom of the accumulator; the constants move down one bit.  n = 8: their fused
    block size (Khattak Table II)."""
    c = _conclusions(dev, 8)
    assert c["extra_alignment_bits"] == 1
    assert c["rounding"] == "rz" and c["largest_first"] is True
    assert c["normalisation_in_addition"] == "final only"
    assert c["carry_bits_2"] and c["carry_bits_3"]
    assert c["monotonicity"] == "non-monotonic"


def test_fasi_fp16_output_is_rounded_to_nearest():
    """Fasi et al.: 2^-25 + 2^-26 returns 2^-24 with binary16 output (not RZ)."""
    c = {k: t.conclusion for k, t in fasi_suite(wb.preset("V100", "fp16", "fp16")).items()}
    assert c["output_rounding"] == "rn or ru"


# ------------------------------------------------------------- authentication
def test_authentication_reproduces_khattak_mikaitis_section_5a():
    """CustomTC(fp16->fp32, neab 0, NFMA 8, RNE): the fixed vectors call the rounding RZ;
    with neab 1 and RU they get the rounding right (Section V-A)."""
    rows = authenticate([("fp16", "fp32", {"neab": 0, "fma": 8, "frmode": "rne"}),
                         ("fp16", "fp32", {"neab": 1, "fma": 8, "frmode": "ru"})], n_verify=1000)
    assert rows[0]["fasi_rounding"] == "rz"
    assert any("rounding" in f for f in rows[0]["fooled"])
    assert rows[1]["fasi_rounding"] == "ru" and rows[1]["fasi_neab"] == 1
    for r in rows:  # the generalised probes are not fooled
        assert not [f for f in r["fooled"] if f.startswith("infer")], r
        assert r["verified"]


# --------------------------------------------------------------- real targets
def test_torch_cpu_bf16_reports_honestly():
    pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    res = infer(target("torch-cpu-bf16"), n_verify=2000)
    assert "summation tree" in res.features
    assert res.verified or res.counterexample is not None or res.notes


def test_target_errors():
    with pytest.raises(ValueError, match="unknown probe target"):
        target("abacus")
    with pytest.raises(ValueError, match="preset"):
        target("preset:H100")
    with pytest.raises(ValueError, match="in_format and out_format"):
        infer(lambda A, B, C: A @ B + C)
    with pytest.raises(ValueError, match="at most K"):
        BlackBox(lambda A, B, C: A @ B + C, "fp16", "fp32", shape=(4, 4, 4)).dots(np.ones((1, 8)), np.ones((1, 8)))


def test_cli_probe_preset(capsys):
    from workbench.cli import probe as cli

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    rc = cli.run_command(p.parse_args(["preset:H100:fp16:fp32", "--verify", "1000"]))
    out = capsys.readouterr().out
    assert rc == 0
    assert "bit-exact on" in out and "L                      16" in out


def test_import_is_lazy():
    code = ("import sys, workbench; assert 'workbench.probes' not in sys.modules; "
            "workbench.probes.infer; assert 'torch' not in sys.modules and 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- every preset
def _records():
    import workbench.units.catalogue as cat

    return list(cat.records())


OBSERVABLE = ("kind", "L", "F", "rounding", "result_format", "sticky", "c_position", "interleave", "P",
              "flush_subnormals", "F2", "G")


def _check_outside_the_search(rec, res):
    """The CPU pair units (kind ``pair-dot``) lie outside the probes' search space (T-FDPA,
    E-FDPA, FMA chains, FTZ-AddMul, TR-/GTR-FDPA).  ``infer`` must then either say NOT
    verified, or return a model of another kind that is the same arithmetic: Arm's
    FEAT_EBF16 BFDOT/BFMMLA (both products summed and rounded once, then c added) is a T-FDPA
    of L = 2 with c late.  A verified answer is checked here on inputs the probes never
    saw: 30 x K x 30 products of bf16 values spread over 2^-60..2^60, K up to 1000, against
    the preset's own products, bit for bit."""
    if not res.verified:
        assert "verification: NOT verified" in res.sheet(), res.sheet()
        return
    rng = np.random.default_rng(7)
    for K in (2, 3, 16, 333, 1000):
        A = wb.round(rng.standard_normal((30, K)) * 2.0 ** rng.integers(-60, 60, (30, K)), "bf16")
        B = wb.round(rng.standard_normal((K, 30)) * 2.0 ** rng.integers(-60, 60, (K, 30)), "bf16")
        C = wb.round(rng.standard_normal((30, 30)), "fp32")
        want = wb.gemm(A, B, C, model=rec)
        got = wb.gemm(A, B, C, model=res.model)
        assert (want.view(np.uint32) == got.view(np.uint32)).all(), (K, res.sheet())


@pytest.mark.slow
@pytest.mark.parametrize("rec", [r for r in _records() if not r.operation.integer], ids=lambda r: r.name)
def test_infer_every_preset(rec):
    """Every floating-point preset (integer units are refused by the probes:
    tests/test_int_units.py::test_the_probes_refuse_an_integer_unit)."""
    from workbench.probes.blackbox import from_model as fm

    res = infer(fm(rec), n_verify=10000)
    if rec.kind == "pair-dot":
        _check_outside_the_search(rec, res)
        return
    # ST-FDPA with every scale 1 is T-FDPA (Xie Algorithm 8: the scales only add exponents)
    expected = {**rec.params, "kind": "t-fdpa"} if rec.kind == "st-fdpa" else rec.params
    for k in OBSERVABLE:
        if k in res.unobservable or (k == "P" and rec.kind != "ftz-addmul"):
            continue
        assert res.params[k] == expected[k], (k, res.sheet())
    if rec.c_position == "late":
        assert res.params["late_rounding"] == rec.late_rounding
    if rec.kind in ("t-fdpa", "st-fdpa", "tr-fdpa", "gtr-fdpa", "gst-fdpa"):
        ok = res.consistent.get("zero_exponent", [])
        assert rec.zero_exponent in ok or None in ok, res.sheet()
    assert res.verified, res.sheet()


def test_probe_cli_module_is_light():
    code = ("import sys, argparse; import workbench.cli.probe as c; c.add_arguments(argparse.ArgumentParser()); "
            "assert 'workbench.engine' not in sys.modules and 'workbench.probes.inference' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_mldtypes_bf16_dot_products():
    """The host's ml_dtypes/BLAS matmul: its summation order is the BLAS's (not an FMA
    chain on the project's machines), so which answer comes depends on the host; whatever
    it is, it is checked against the black box itself (inference_checks.assert_strongly_honest:
    a verified model replayed on fresh products with K up to 513, a counterexample rerun,
    a 'no model' checked against the FMA chain it rules out).  The parameters are asserted
    on the deterministic chain of the next test."""
    pytest.importorskip("ml_dtypes")
    bb = target("mldtypes-bf16")
    assert (bb.in_format, bb.out_format) == ("bf16", "fp32")  # ml_dtypes returns float32 products
    assert_strongly_honest(bb, infer(bb, n_verify=1000))


def test_bf16_products_in_an_fp32_fma_chain_are_recovered():
    """What the mldtypes-bf16 target computes where its BLAS is one FMA chain, as a black
    box whose arithmetic is the same on every machine: bf16 products (exact in fp32)
    accumulated by fp32 FMAs in K order, then + C (tests/reference_mma.py's
    fp32_fma_chain_matmul: exact float64/integer numpy arithmetic, no BLAS)."""
    import reference_mma as ref

    bb = BlackBox(ref.fp32_fma_chain_matmul, "bf16", "fp32", name="bf16 products, fp32 FMA chain + C")
    res = infer(bb, n_verify=1000)
    assert res.params["L"] == 1, res.sheet()          # one product per step: the chain is read
    assert_strongly_honest(bb, res)   # not verified on this box: its counterexample must be real


def test_a_group_structure_the_engine_cannot_hold_is_searched_around_not_a_crash(monkeypatch):
    """Seen on an H100 (cuBLAS bf16 -> fp32, `workbench probe torch-cuda-bf16-fp32`): the
    group probe read GST-FDPA groups of G = 8 with F = 47, which no fixed point of the
    engine holds (gst_params refuses it), and the probe ended in that ValueError.  Now
    the proposal counts as having no model, and the search of the model space runs."""
    from workbench.probes import features

    def misread(bb, L, allow_sub):
        return features.ExactGroups(F=47, G=8, labels=[k // 8 for k in range(L)])

    monkeypatch.setattr(features, "probe_exact_groups", misread)
    res = infer(wb.preset("A100", "bf16", "fp32"), n_verify=2000)
    assert any("no model" in n and "527 bits" in n for n in res.notes), res.notes
    assert res.verified and res.params["kind"] == "t-fdpa" and res.params["F"] == 24, res.sheet()
