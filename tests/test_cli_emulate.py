"""``workbench emulate``: the emulations on a unit from the command line (issue 51, item 4)."""
from __future__ import annotations

import numpy as np

from workbench.cli import main


def test_emulate_prints_error_decisions_and_verdict(capsys):
    assert main(["emulate", "--method", "ozaki2_fp8,ozaki1_int8", "--unit", "exact-fp8", "--k", "256",
                 "--input", "phi:0.5"]) == 0
    out = capsys.readouterr().out
    assert "ozaki2_fp8 on exact FP8 unit: SAFE" in out and "moduli (automatic:" in out
    assert "ozaki1_int8 on exact-fp8: skipped" in out or "ozaki1_int8" in out


def test_emulate_default_units_and_fallback(capsys):
    assert main(["emulate", "--method", "ozaki1_fp8,ozaki1_int8,native", "--k", "64", "--input", "span:8"]) == 0
    out = capsys.readouterr().out
    # 4-bit FP8 slices cover an exponent span of 3 bits at most: this data's 10 need the fallback;
    # 7-bit INT8 slices (up to 20) cover it
    assert "ozaki1_fp8 on B200:fp8_e4m3:fp32: SAFE" in out and "fallback to native FP64" in out
    assert "ozaki1_int8 on ampere/mma.m16n8k32/s8->s32: SAFE" in out and "10 slices (automatic: 10)" in out
    assert "native on float64 (numpy): SAFE" in out


def test_emulate_reads_npy_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.standard_normal((4, 32)))
    np.save(tmp_path / "b.npy", rng.standard_normal((32, 3)))
    assert main(["emulate", "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"), "--method",
                 "ozaki2_int8", "--count", "16"]) == 0
    assert "ozaki2_int8 on ampere/mma.m16n8k32/s8->s32: SAFE" in capsys.readouterr().out


def test_emulate_refuses_bad_arguments(capsys):
    assert main(["emulate", "--input", "weird:1"]) == 2
    assert "expected one of" in capsys.readouterr().err
    assert main(["emulate", "--a", "x.npy"]) == 2
    assert main(["emulate", "--method", "ozaki2_fp8", "--unit", "H100:fp8_e5m2:fp32", "--k", "32"]) == 0
    assert "skipped" in capsys.readouterr().out
