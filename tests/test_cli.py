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
