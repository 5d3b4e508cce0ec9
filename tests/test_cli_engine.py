"""CLI: `workbench presets` and `workbench explain` (thin wrappers over the library)."""
from __future__ import annotations

import workbench as wb
from workbench.cli import main


def test_presets_table_with_sources(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "hopper/wgmma/fp16->fp32" in out and "cdna3/mfma/fp8_e5m2fnuz->fp32" in out
    assert len(out.splitlines()) >= len(wb.presets()) + 2
    assert main(["presets", "--wide"]) == 0          # the sources are in the wide table
    assert "Xie et al. 2025 Table 4" in capsys.readouterr().out


def test_presets_filtered(capsys):
    assert main(["presets", "--device", "MI300X", "--format", "fp8_e4m3"]) == 0
    out = capsys.readouterr().out
    assert "cdna3/mfma/fp8_e4m3fnuz->fp32" in out and "hopper" not in out and "bf16" not in out


def test_explain_table8_volta_and_hex_literals(capsys):
    argv = ["explain", "--device", "V100", "--in-format", "fp16", "--out-format", "fp32",
            "--a=-0x1p13,-0.5,-0.25,-0.125", "--b", "1024,1,1,1", "--c", "0x1p23"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "volta/mma.m8n8k4/fp16->fp32" in out
    assert "largest exponent of all terms is 23" in out
    assert out.rstrip().endswith("result d = 0.0")  # Xie et al. Table 8, Volta


def test_explain_instruction_variant(capsys):
    argv = ["explain", "--device", "hopper", "--in-format", "fp8_e5m2", "--instruction", "wgmma",
            "--a", "1,0x1p-7,0x1p-7", "--b", "1,0x1p-7,0x1p-7", "--c", "0"]
    assert main(argv) == 0
    assert capsys.readouterr().out.rstrip().endswith("result d = 1.0")  # F = 13: the 2^-14 products are truncated away


def test_explain_errors_name_the_value(capsys):
    assert main(["explain", "--device", "A100", "--a", "1,zz", "--b", "1,1"]) == 2
    assert "'zz'" in capsys.readouterr().err
    assert main(["explain", "--device", "A100", "--a", "0.1", "--b", "1"]) == 2
    assert "0.1" in capsys.readouterr().err


def test_explain_scaled_preset_takes_scale_arguments(capsys):
    """NVFP4 (GST-FDPA): group 0 = 1 * 1.5 scaled by 2 * 2^-1 = 1.5; group 1 = 1 * 2
    scaled by 1 * 1 = 2; d = 3.5 + c (0.5) = 4."""
    argv = ["explain", "--device", "B200", "--in-format", "fp4_e2m1", "--variant", "nvfp4",
            "--a", ",".join(["1"] + ["0"] * 15 + ["1"]), "--b", ",".join(["1.5"] + ["0"] * 15 + ["2"]),
            "--c", "0.5", "--scale-a", "2,1", "--scale-b", "0x1p-1,1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "scale_a = [2.0, 1.0]" in out and "s_0 = p_0 * SignedSig(alpha) * SignedSig(beta)" in out
    assert out.rstrip().endswith("result d = 4.0")
    assert main(argv[:-4]) == 2
    assert "needs scale_a and scale_b" in capsys.readouterr().err
