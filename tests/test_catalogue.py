"""Presets as data: lookup, variants, sources, custom models (Khattak-Mikaitis names)."""
from __future__ import annotations

import pytest

import workbench as wb
from workbench.units.catalogue import ARCHITECTURES, records


@pytest.mark.parametrize("dev,arch", [("V100", "volta"), ("T4", "turing"), ("A100", "ampere"), ("A2", "ampere"),
                                      ("A30", "ampere"), ("L40S", "ada"), ("RTX4090", "ada"), ("H100", "hopper"),
                                      ("H200", "hopper"), ("B200", "blackwell"), ("RTXPRO6000", "rtx-blackwell"),
                                      ("MI100", "cdna1"), ("MI250X", "cdna2"), ("MI300X", "cdna3")])
def test_devices_map_to_architectures(dev, arch):
    fin = {"cdna1": "fp16", "cdna2": "fp16", "cdna3": "fp16"}.get(arch, "fp16")
    p = wb.preset(dev, fin, "fp32")
    assert p.architecture == arch and p.devices[0] == dev


def test_xie_table4_parameters():
    # Xie et al. 2025 Table 4 (L_max, F, rho)
    expect = {("volta", "fp16", "fp32"): (4, 23, "rz"), ("turing", "fp16", "fp32"): (8, 24, "rz"),
              ("ampere", "tf32", "fp32"): (4, 24, "rz"), ("ampere", "bf16", "fp32"): (8, 24, "rz"),
              ("ada", "fp8_e4m3", "fp32"): (16, 13, "rz"), ("ada", "fp8_e4m3", "fp16"): (16, 13, "rne"),
              ("hopper", "tf32", "fp32"): (8, 25, "rz"), ("hopper", "fp16", "fp16"): (16, 25, "rne"),
              ("hopper", "fp8_e5m2", "fp32"): (32, 13, "rz"), ("blackwell", "fp8_e4m3", "fp32"): (32, 25, "rz"),
              ("rtx-blackwell", "fp4_e2m1", "fp16"): (32, 25, "rne")}
    for (arch, fin, fout), (L, F, r) in expect.items():
        p = wb.preset(arch, fin, fout)
        assert (p.L, p.F, p.rounding) == (L, F, r), p.name
    assert wb.preset("ada", "fp8_e4m3", "fp32").result_format == "e8m13"
    assert wb.preset("hopper", "fp8_e4m3", "fp32").result_format == "e8m13"


def test_named_variants():
    wg = wb.preset("hopper", "fp8_e4m3", "fp32")
    ms = wb.preset("hopper", "fp8_e4m3", "fp32", instruction="mma.sync")
    assert wg.instruction == "wgmma" and wg.default
    assert ms.interleave == 2 and ms.c_position == "late" and ms.late_rounding == "rne" and not ms.default
    assert wb.preset("turing", "fp16", "fp32", instruction="m8n8k4").L == 4
    assert wb.preset("B200", "fp16", "fp32", variant="rn").rounding == "rne"
    assert wb.preset("cdna2", "bf16", "fp32").P == 2
    assert wb.preset("cdna2", "bf16", "fp32", variant="1k").P == 4
    assert wb.preset("MI300X", "fp8_e4m3", "fp32").in_format == "fp8_e4m3fnuz"


def test_khattak_table2_neab():
    # Table II: alignment fraction bits 23 (V100), 24 (A100/L40S), 25 (H100/B200): neab 0, 1, 2
    assert wb.preset("V100", "fp16", "fp32").neab == 0
    assert wb.preset("A100", "bf16", "fp32").neab == 1
    assert wb.preset("H200", "fp16", "fp32").neab == 2
    assert wb.preset("L40S", "fp8_e5m2", "fp32").neab == -10


def test_every_record_has_source_and_unique_name():
    recs = records()
    names = [r.name for r in recs]
    assert len(names) == len(set(names))
    for r in recs:
        assert r.source and r.devices and r.architecture in ARCHITECTURES
    # exactly one default per (arch, in, out, instruction family)
    defaults = {}
    for r in recs:
        if r.default:
            key = (r.architecture, r.in_format, r.out_format, r.kind in ("st-fdpa", "gst-fdpa"))
            assert key not in defaults, (r.name, defaults.get(key))
            defaults[key] = r.name


def test_presets_table():
    t = wb.presets()
    assert len(t) == len(records())
    row = next(r for r in t if r["name"] == "hopper/wgmma/fp16->fp32")
    assert row["L"] == 16 and row["F"] == 25 and "Xie" in row["source"]
    assert "hopper/wgmma/fp16->fp32" in repr(t)


def test_unknown_lookups_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown device"):
        wb.preset("GTX1080", "fp16", "fp32")
    with pytest.raises(ValueError, match="no preset.*available"):
        wb.preset("V100", "bf16", "fp32")
    with pytest.raises(ValueError, match="unknown format"):
        wb.preset("H100", "fp17", "fp32")


def test_custom_model_khattak_names():
    m = wb.custom_model("fp16", "fp32", fma=8, neab=1, frmode="RNE")
    assert (m.L, m.F, m.rounding) == (8, 24, "rne")
    m2 = wb.custom_model("fp16", "fp32", L=32, F=26, rounding="ru", sticky=True, c_position="late")
    assert m2.sticky and m2.c_position == "late"
    with pytest.raises(ValueError, match="not both"):
        wb.custom_model("fp16", "fp32", L=8, fma=8)
    with pytest.raises(ValueError, match=r"unknown model parameter 'nfma' \(did you mean 'fma'"):
        wb.custom_model("fp16", "fp32", L=8, F=24, nfma=3)
    with pytest.raises(ValueError, match="rounding"):
        wb.custom_model("fp16", "fp32", L=8, F=24, rounding="nearest")
    assert set(m.params) >= {"kind", "L", "F", "rounding", "sticky", "c_position", "zero_exponent"}


def test_describe_names_only_the_parameters_the_kind_uses():
    fma = wb.custom_model("fp32", "fp32", kind="fma")
    assert fma.describe() == "kind=fma, in_format=fp32, out_format=fp32, c_position=early"
    late = fma.with_params(c_position="late", late_rounding="rz")
    assert late.describe().endswith("c_position=late, late_rounding=rz")
    tf = wb.preset("ampere", "fp16", "fp32").describe()
    assert "L=8, F=24, rounding=rz" in tf and "late_rounding" not in tf
