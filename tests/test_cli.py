"""The command line: help, and the formats table against Khattak-Mikaitis Table I."""

import subprocess
import sys

from workbench.cli import main


def test_help_lists_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "formats" in out


def test_formats_table_has_published_values(capsys):
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:]}
    # Khattak & Mikaitis Table I: max positive values and smallest normals
    assert rows["fp16"][5] == "65504" and rows["fp16"][6] == "2^-14"
    assert rows["fp8_e4m3"][5] == "448" and rows["fp8_e4m3"][6] == "2^-6"
    assert rows["fp8_e5m2"][5] == "57344"
    assert rows["fp6_e2m3"][5] == "7.5" and rows["fp6_e3m2"][5] == "28" and rows["fp4_e2m1"][5] == "6"
    assert rows["fp32"][5] == "3.40282e+38" and rows["tf32"][5] == "3.40116e+38" and rows["bf16"][5] == "3.38953e+38"
    # Fasi et al. Table 3: smallest subnormals
    assert rows["bf16"][7] == "2^-133" and rows["tf32"][7] == "2^-136" and rows["fp32"][7] == "2^-149"


def test_console_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "workbench", "formats"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "fp8_e4m3fnuz" in done.stdout


def test_presets_format_family_and_device(capsys):
    assert main(["presets", "--device", "H100", "--format", "fp8"]) == 0
    names = [t for line in capsys.readouterr().out.splitlines() for t in line.split()[:2] if "->" in t]
    # Xie et al. Table 4 / Khattak-Mikaitis Table II: Hopper fp8 E4M3 and E5M2, wgmma and mma.sync, fp32 and fp16 out
    assert len(names) == 8 and all(n.startswith("hopper/") for n in names)
    assert {n.split("/")[2].split("->")[0] for n in names} == {"fp8_e4m3", "fp8_e5m2"}
    assert main(["presets", "--device", "MI300X", "--format", "e4m3"]) == 0
    assert "cdna3/mfma/fp8_e4m3fnuz->fp32" in capsys.readouterr().out
    assert main(["presets", "--format", "fp9"]) == 2
    assert "unknown format or format family 'fp9'; families: fp4, fp6, fp8" in capsys.readouterr().err


def test_explain_takes_the_input_format_of_a_variant(capsys):
    # Xie et al. 2025 Algorithm 9 (NVFP4, GST-FDPA): one UE4M3 scale per 16 fp4 elements;
    # (1 + 0.5 + 1.5 + 6) * 2 * 0.5 = 9, exact in fp32
    assert main(["explain", "--device", "B200", "--variant", "nvfp4", "--a", "1,0.5,1.5,6", "--b", "1,1,1,1",
                 "--scale-a", "2", "--scale-b", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "fp4_e2m1->fp32/nvfp4" in out and out.rstrip().endswith("result d = 9.0")
