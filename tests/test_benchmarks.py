"""The benchmarks run to the end (issue 21): bench_sweep on the quick Figure 7 grid,
whose summary compares every curve with the published data."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

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


def test_bench_engine_records_every_kind_and_the_readme_renders_it(tmp_path, capsys, monkeypatch):
    """bench_engine on small shapes (the module's SHAPES swapped; mmasim's ratio needs the
    oracle extra and takes minutes, so not here): one row per case and shape, every kind of
    unit, the machine described, and readme_speed turns the record into the README table."""
    import json

    from benchmarks import bench_engine, readme_speed

    monkeypatch.setattr(bench_engine, "SHAPES", [(4, 64, 8), (2, 96, 2)])
    monkeypatch.setattr(bench_engine, "SHORT_MAX", 3)         # short calls: 3 timed calls, not 200
    record = tmp_path / "engine.json"
    assert bench_engine.main(["--repeat", "2", "--no-mmasim", "--record", str(record)]) == 0
    data = json.loads(record.read_text())
    assert len(data["rows"]) == 2 * len(bench_engine.CASES)
    assert {r["kind"] for r in data["rows"]} == {"t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa",
                                                 "st-fdpa", "gst-fdpa"}
    for r in data["rows"]:
        assert r["min_s"] <= r["median_s"] <= r["max_s"] and r["threads"] == 1
        assert len(r["seconds"]) == r["repeat"] >= 2
        # numpy's own A @ B + C in the same run, in the output's dtype
        assert r["numpy"]["dtype"] == ("float64" if r["preset"].endswith("fp64") else "float32")
        assert r["numpy"]["min_s"] <= r["numpy"]["median_s"] <= r["numpy"]["max_s"]
        assert r["numpy_ratio"] == r["median_s"] / r["numpy"]["median_s"]
    # short calls are timed more than --repeat times (a row whose first timed call stalled past SHORT_S is not)
    assert sum(r["repeat"] == 3 for r in data["rows"]) > len(data["rows"]) // 2
    assert data["machine"]["cores"] >= 1 and data["machine"]["versions"]["numba"]
    table = readme_speed.render(data, None)
    assert table.count("\n| ") == 1 + len(bench_engine.CASES) and "4x64x8 | 2x96x2 |" in table


def test_bench_engine_runs_the_cases_and_shapes_asked_for(capsys, monkeypatch):
    """--case and --shape: one row per chosen case and shape, nothing recorded; unknown
    families and malformed shapes are refused with what was expected."""
    from benchmarks import bench_engine

    monkeypatch.setattr(bench_engine, "SHORT_MAX", 3)
    monkeypatch.setattr(bench_engine._machine, "write", lambda *a: pytest.fail("a subset must record nothing"))
    assert bench_engine.main(["--case", "FMA chain fp64", "--shape", "4x64x8", "--shape", "2x32x2", "--repeat", "2",
                              "--no-mmasim"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FMA chain fp64")]
    assert len(rows) == 2 and "4x64x8" in rows[0] and "2x32x2" in rows[1]
    for argv, message in ((["--case", "FMA chain fp128"], "expected one of"), (["--shape", "4x64"], "three positive"),
                          (["--shape", "4xKx8"], "three positive")):
        with pytest.raises(SystemExit):
            bench_engine.main(argv + ["--no-mmasim"])
        assert message in capsys.readouterr().err


def test_bench_ab_times_every_fp16_bf16_preset_by_name():
    """bench_ab --fp16-bf16 (the 10 x 10^6 x 10 target's command) on a tiny shape: one
    row per preset with fp16 or bf16 inputs (read from each name), fp16-output ones and
    variants included, none of another input format; each with min <= median <= max
    and its MAC/s.  Naming presets beside the option is an error."""
    import subprocess

    script = [sys.executable, str(ROOT / "benchmarks" / "bench_ab.py")]
    out = subprocess.run(script + ["--fp16-bf16", "--shape", "2x40x3", "--rounds", "1", "--repeat", "2"],
                         capture_output=True, text=True, check=True, timeout=900).stdout
    rows = {line.split()[0]: line.split()[2:] for line in out.splitlines() if line.split()[1:2] == ["this"]}
    assert {"volta/mma.m8n8k4/fp16->fp16", "cdna3/mfma_rz/fp16->fp32/rz", "cdna2/mfma_1k/bf16->fp32/1k",
            "blackwell/tcgen05.mma/bf16->fp32/rn", "cdna1/mfma/bf16->fp32"} <= set(rows)
    assert all(name.split("/")[2].split("->")[0] in ("fp16", "bf16") for name in rows), sorted(rows)
    assert len(rows) >= 31
    for cells in rows.values():
        lo, med, hi, rate, at_median = (float(x) for x in cells[:5])
        assert 0 < lo <= med <= hi and rate > 0 and at_median > 0
    bad = subprocess.run(script + ["--fp16-bf16", "volta:fp16"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "drop volta:fp16" in bad.stderr
