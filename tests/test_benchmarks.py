"""The benchmarks run to the end (issue 21): bench_sweep on the quick Figure 7 grid,
whose summary compares every curve with the published data."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_sweep_quick_grid_runs_to_its_summary(capsys, monkeypatch):
    module = runpy.run_path(str(ROOT / "benchmarks" / "bench_sweep.py"))
    monkeypatch.setattr(sys, "argv", ["bench_sweep.py"])
    assert module["main"](["--quick", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "0 task errors" in out
    summary = out.split("max ours/bound")[1].strip().splitlines()
    assert len(summary) == 33  # one line per published curve: 3 formats x words x models of Figure 7
    assert all("nan" not in line for line in summary)
