"""Sweeps: experiment parsing and validation, end-to-end runs, errors, reference reuse, CLI."""

import argparse
import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sweep_helpers

import workbench.sweep as sweep
from workbench.numbers import formats, inputs
from workbench.cli import sweep as sweep_cli
from workbench.sweep import measures

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
FIG7 = ROOT / "paper_data" / "khattak2025_fig7"


def _comparable(df):
    return df.drop(columns=[c for c in sweep.TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


# ------------------------------------------------------------------ parsing
def test_expansion_counts_and_rules():
    exp = sweep.parse({
        "name": "x", "reference": "none", "metrics": ["nonfinite"],
        "defaults": {"algorithm": "numpy", "m": 2, "n": 2, "seed": {"start": 0, "stop": 3}},
        "grid": [
            {"k": [4, 8], "params": {"dtype": ["float32", "float16"]},
             "input": [{"generator": "exponent_range", "emin": -3, "emax": 3, "round_to": "none"},
                       {"generator": "exponent_range", "emin": -9, "emax": -5, "round_to": "none"}]},
            {"cases": [{"params": {"dtype": "float64"}, "k": 4}, {"params": {"dtype": "float32"}, "k": 5}],
             "input": {"generator": "normal", "round_to": "none"}},
        ],
    })
    # grid 0: 3 seeds x 2 k x 2 dtypes x 2 (paired, not crossed) ranges = 24; grid 1: 3 seeds x 2 cases
    assert len(exp) == 30
    specs = [t.spec for t in exp.tasks]
    ranges = {(s["input"]["emin"], s["input"]["emax"]) for s in specs if s["input"]["generator"] == "exponent_range"}
    assert ranges == {(-3, 3), (-9, -5)}  # paired, not crossed
    assert sum(s["input"]["generator"] == "exponent_range" for s in specs) == 24
    assert {s["seed"] for s in specs} == {0, 1, 2}
    assert {(s["params"]["dtype"], s["k"]) for s in specs if s["input"]["generator"] == "normal"} == {
        ("float64", 4), ("float32", 5)}
    assert [s["seed"] for s in specs[:8]] == [0] * 8  # first key varies slowest


def test_cases_clash_with_grid_key_is_an_error():
    with pytest.raises(ValueError, match="key 'seed' is set both in cases and in the grid"):
        sweep.parse({"name": "x", "reference": "none", "metrics": ["nonfinite"],
                     "grid": {"algorithm": "numpy", "m": 1, "k": 1, "n": 1, "seed": 1,
                              "input": {"generator": "normal", "round_to": "none"},
                              "cases": [{"seed": 2}]}})


def test_hashes_are_stable_and_distinct():
    a = sweep.parse(sweep_helpers.experiment())
    b = sweep.parse(sweep_helpers.experiment(name="other"))
    assert [t.hash for t in a.tasks] == [t.hash for t in b.tasks]  # the name is not a parameter
    assert len({t.hash for t in a.tasks}) == len(a) == 8
    assert len({t.input_hash for t in a.tasks}) == 4  # 2 k x 2 seeds, shared by both shifts
    c = sweep.parse(sweep_helpers.experiment(reference="float64"))
    assert not {t.hash for t in a.tasks} & {t.hash for t in c.tasks}


@pytest.mark.parametrize("change, message", [
    ({"bogus": 1}, "unknown top-level key 'bogus'"),
    ({"name": "a b"}, "name='a b'"),
    ({"reference": "magic"}, "reference='magic'"),
    ({"metrics": ["normwise_infinity"]}, r"unknown metric 'normwise_infinity' \(did you mean 'normwise_inf'"),
    ({"grid": []}, "grid must be a table or an array of tables"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0,
               "input": {"generator": "normal", "round_to": "none"}, "colour": "red"}}, "unknown key 'colour'"),
    ({"grid": {"algorithm": "numpy", "m": 0, "k": 2, "n": 2, "seed": 0,
               "input": {"generator": "normal", "round_to": "none"}}}, r"m=0 must be a positive integer"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": [], "n": 2, "seed": 0,
               "input": {"generator": "normal", "round_to": "none"}}}, "k is an empty list"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0,
               "input": {"generator": "gaussian"}}}, "unknown input.generator 'gaussian'"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0,
               "input": {"generator": "normal", "stdev": 2, "round_to": "none"}}},
     "input.stdev: unknown parameter of generator 'normal'"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0, "out_format": "fp32",
               "input": {"generator": "normal", "round_to": "none", "c": {"generator": "uniform", "lo": 0}}}},
     "input.c.lo: unknown parameter of generator 'uniform'"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0, "in_format": "fp17",
               "input": {"generator": "normal"}}}, "in_format='fp17'"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0,
               "input": {"generator": "normal"}}}, "round_to='input' needs in_format"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": -1,
               "input": {"generator": "normal", "round_to": "none"}}}, "seed=-1"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": {"stop": 0},
               "input": {"generator": "normal", "round_to": "none"}}}, "empty range"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0, "preset": "A100",
               "input": {"generator": "normal", "round_to": "none"}}}, "needs in_format and out_format"),
    ({"grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2,
               "input": {"generator": "normal", "round_to": "none"}}}, "missing required key 'seed'"),
    ({"quick": {"kk": 1}}, "quick: unknown key 'kk'"),
])
def test_validation_errors_name_the_key(change, message):
    raw = {"name": "v", "reference": "none", "metrics": ["nonfinite"],
           "grid": {"algorithm": "numpy", "m": 2, "k": 2, "n": 2, "seed": 0,
                    "input": {"generator": "normal", "round_to": "none"}}}
    raw.update(change)
    with pytest.raises(ValueError, match=message):
        sweep.parse(raw)


def test_unknown_algorithm_fails_before_running(tmp_path):
    raw = sweep_helpers.experiment()
    raw["defaults"]["algorithm"] = "no_such_algorithm"
    with pytest.raises(ValueError, match="unknown algorithm 'no_such_algorithm'"):
        sweep.run(raw, out=tmp_path, workers=1, progress=False)
    assert not list(tmp_path.glob("parts/*.parquet"))


@pytest.mark.parametrize("change, message", [
    ({"preset": "H10"}, r"task 1 .*unknown device or architecture 'H10' \(did you mean 'H100'"),
    ({"preset": "V100", "in_format": "bf16"}, r"no preset for 'V100' \(volta\) with 'bf16'"),
    ({"algorithm": "multiword", "params": {"wrods": 3}},
     r"unknown params key of algorithm 'multiword' 'wrods' \(did you mean 'words'"),
    ({"algorithm": "multiwrod"}, r"unknown algorithm 'multiwrod' \(did you mean 'multiword'"),
    ({"preset": None, "model": {"kind": "t-fdpa", "L": True}}, "L=True"),
])
def test_the_whole_file_is_validated_before_anything_runs(tmp_path, change, message):
    """A bad preset, model, algorithm or params key in any task (here the last of the grid)
    fails before the first task runs: nothing is stored."""
    good = {"algorithm": "gemm", "preset": "A100"}
    bad = {k: v for k, v in {**good, **change}.items() if v is not None}
    raw = {"name": "v", "reference": "none", "metrics": ["nonfinite"],
           "defaults": {"m": 2, "k": 4, "n": 2, "seed": 0, "in_format": "fp16", "out_format": "fp32",
                        "input": {"generator": "normal"}},
           "grid": [good, bad]}
    with pytest.raises(ValueError, match=message):
        sweep.run(raw, out=tmp_path, workers=1, progress=False)
    assert not list(tmp_path.glob("parts/*.parquet"))


def test_bad_toml_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("name = 'x'\ngrid = [\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        sweep.parse(f)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        sweep.parse(tmp_path / "missing.toml")


# ------------------------------------------------------------------ shipped experiments
@pytest.mark.parametrize("name, tasks, inputs_, quick", [
    ("smoke", 18, 10, 9),
    # 20 sizes x (fp16: 4 models x 3 words + bf16: 3 x 3 + fp8: 4 x 3); one input per size
    ("fig7_multiword", 660, 20, 132),
    # 6 k x 3 seeds x 4 ranges inputs; 2 algorithms on A100 + numpy float32
    ("markidis_vs_ootomo", 216, 72, 36),
    # 200 seeds x (CDNA3 + RZ twin)
    ("cdna3_rounding_bias", 400, 200, 20),
    # 4 k x 3 seeds x 4 kinds of input, rounded to fp16 or bf16; 8 fp16 and 7 bf16 presets
    ("preset_discrepancy", 720, 96, 120),
    # 13 kappa x 2 solvers x (7 fp16 + 6 bf16 presets + 2 idealised) + 3 kappa x 10 custom units;
    # the custom units' kappa 5e3 is the 14th input
    ("solvers_ir", 420, 14, 420),
    # every emulation x unit pair (12 pairs and native FP64) at its automatic and largest count on
    # 21 inputs x K = 1024, 4096, 16384, plus the count axis on GEMMul8's matrices at K = 1024
    ("emulation_safety", 2252, 84, 584),
])
def test_shipped_experiments_expand(name, tasks, inputs_, quick):
    exp = sweep.parse(EXPERIMENTS / f"{name}.toml")
    assert exp.name == name
    assert len(exp) == tasks
    assert len({t.input_hash for t in exp.tasks}) == inputs_
    assert len(sweep.parse(EXPERIMENTS / f"{name}.toml", quick=True)) == quick


def test_every_shipped_experiment_is_tested():
    shipped = {Path(f).stem for f in glob.glob(str(EXPERIMENTS / "*.toml"))}
    assert shipped == {"smoke", "fig7_multiword", "markidis_vs_ootomo", "cdna3_rounding_bias", "preset_discrepancy",
                       "solvers_ir", "emulation_safety"}


def test_fig7_grid_matches_the_published_files():
    exp = sweep.parse(EXPERIMENTS / "fig7_multiword.toml")
    names = {"fp16": "binary16", "bf16": "bfloat16", "fp8_e5m2": "fp8-e5m2"}
    models = {("V100", None, None): "v100", ("A100", None, None): "a100", ("H100", None, None): "h100",
              ("L40S", None, None): "l40s", ("B200", None, None): "b200", ("B200", "mma.sync", None): "b200",
              ("B200", None, "rn"): "b200rn"}
    ours = {(names[t.spec["in_format"]], t.spec["params"]["words"],
             models[(t.spec["preset"], t.spec.get("instruction"), t.spec.get("variant"))], t.spec["k"])
            for t in exp.tasks}
    published = set()
    for f in FIG7.glob("matmul_test_*_binary32_words_*_model_*.csv"):
        parts = f.stem.split("_")
        fmt, words, model = parts[2], int(parts[5]), parts[7]
        if model.startswith("mi"):
            continue  # the AMD runs come from experiments_CDNA.m, not Figure 7
        for n in pd.read_csv(f)["n"]:
            published.add((fmt, words, model, int(n)))
    assert ours == published


@pytest.mark.parametrize("fmt, file_fmt", [("fp16", "binary16"), ("bf16", "bfloat16"), ("fp8_e5m2", "fp8-e5m2")])
def test_multiword_bound_metric_matches_published_bound(fmt, file_fmt):
    data = pd.read_csv(FIG7 / f"matmul_test_{file_fmt}_binary32_words_1_model_b200.csv")
    for n, bound in zip(data["n"], data["bound"]):
        ctx = measures.Context(D=np.zeros((1, 1)), reference=None, A=np.zeros((1, 1)), B=np.zeros((1, 1)),
                               C=None, task={"in_format": fmt, "out_format": "fp32", "k": int(n)})
        assert measures.multiword_bound(ctx) == pytest.approx(bound, rel=6e-7)


# ------------------------------------------------------------------ running
def _expected_normwise(k, seed, shift):
    A, B, _ = inputs.matrices("uniform", 3, k, 2, [seed, 3, k, 2])
    A, B = formats.round(A, "fp8_e4m3"), formats.round(B, "fp8_e4m3")
    inf = lambda X: np.abs(X).sum(axis=1).max()  # noqa: E731
    return 2 * shift / (inf(A) * inf(B))


def test_small_grid_end_to_end(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SWEEP_TEST_LOG", str(log))
    df = sweep.run(sweep_helpers.experiment(fail_shift=0.5), out=tmp_path / "out", workers=1, progress=False)
    assert len(df) == 12  # (2 shifts + 1 failing) x 2 k x 2 seeds
    assert list(df["task_index"]) == list(range(12))
    ok = df[df["error"].isna()]
    failed = df[df["error"].notna()]
    assert len(ok) == 8 and len(failed) == 4
    assert all(failed["error"].str.contains("RuntimeError: asked to fail"))
    assert all(failed["traceback"].str.contains("sweep_helpers.py"))
    np.testing.assert_array_equal(ok["max_abs_error"], ok["param.shift"])
    for _, row in ok.iterrows():
        assert row["normwise_inf"] == pytest.approx(_expected_normwise(row["k"], row["seed"], row["param.shift"]),
                                                    rel=1e-15, abs=0)
        assert list(row["signed_errors"]) == [row["param.shift"]] * 6
    # one reference per input (4), shared by the 3 algorithms' tasks on it
    calls = log.read_text().split()
    assert calls.count("reference") == 4 and calls.count("task") == 12
    # a re-run computes nothing and returns the same table
    again = sweep.run(sweep_helpers.experiment(fail_shift=0.5), out=tmp_path / "out", workers=1, progress=False)
    assert log.read_text().split().count("task") == 12
    pd.testing.assert_frame_equal(_comparable(df), _comparable(again))
    pd.testing.assert_frame_equal(sweep.load(tmp_path / "out"), df)
    # retrying errors re-runs exactly the failed tasks
    sweep.run(sweep_helpers.experiment(fail_shift=0.5), out=tmp_path / "out", workers=1, progress=False,
              retry_errors=True)
    assert log.read_text().split().count("task") == 16


def test_process_pool_gives_the_same_table(tmp_path):
    serial = sweep.run(sweep_helpers.experiment(), out=tmp_path / "a", workers=1, progress=False)
    pool = sweep.run(sweep_helpers.experiment(), out=tmp_path / "b", workers=2, progress=False)
    pd.testing.assert_frame_equal(_comparable(serial), _comparable(pool))
    # the cheapest task of each kernel group ran here (numba compiles once), the others on the workers
    here = pool["worker"].str.endswith(f":{__import__('os').getpid()}")
    groups = pool.groupby(["algorithm", "params"])
    assert groups.size().gt(1).all()
    assert set(pool.loc[here, "task_hash"]) == {g.loc[(g["m"] * g["k"] * g["n"]).idxmin(), "task_hash"]
                                                for _, g in groups}
    assert pool.loc[~here, "worker"].nunique() >= 1


def test_grown_grid_runs_only_new_tasks(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SWEEP_TEST_LOG", str(log))
    sweep.run(sweep_helpers.experiment(seeds=(0,)), out=tmp_path / "o", workers=1, progress=False)
    assert log.read_text().split().count("task") == 4
    df = sweep.run(sweep_helpers.experiment(seeds=(0, 1)), out=tmp_path / "o", workers=1, progress=False)
    assert len(df) == 8 and log.read_text().split().count("task") == 8


def test_reference_failure_is_recorded_for_its_tasks(tmp_path):
    raw = sweep_helpers.experiment(ks=(8,), seeds=(0,), reference="exact")
    raw["defaults"]["input"] = {"generator": "random_bits", "fmt": "fp8_e5m2", "round_to": "none"}
    raw["defaults"]["m"] = 30  # 480 random fp8 patterns: Inf/NaN certainly among them
    df = sweep.run(raw, out=tmp_path, workers=1, progress=False)
    assert len(df) == 2
    assert all(df["error"].str.startswith("RuntimeError: reference failed: ValueError"))


def test_smoke_file_runs_against_the_exact_reference(tmp_path):
    df = sweep.run(EXPERIMENTS / "smoke.toml", out=tmp_path, workers=1, progress=False, quick=True)
    assert len(df) == 9 and df["error"].isna().all()
    f32 = df[df["param.dtype"] == "float32"]
    f16 = df[df["param.dtype"] == "float16"]
    # float32 sums of fp16 products lose little; float16 matmul of the same inputs loses more
    assert (f32["normwise_inf"] < 2.0 ** -20).all()
    assert f16["normwise_inf"].min() > 2.0 ** -17


def test_cli_runs_and_dry_runs(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    sweep_cli.add_arguments(parser)
    args = parser.parse_args([str(EXPERIMENTS / "smoke.toml"), "--out", str(tmp_path), "--quick", "--dry-run"])
    assert sweep_cli.run_command(args) == 0
    assert "smoke: 9 tasks on 5 inputs, 9 pending" in capsys.readouterr().out
    args = parser.parse_args([str(EXPERIMENTS / "smoke.toml"), "--out", str(tmp_path), "--quick",
                              "--workers", "1", "--no-progress"])
    assert sweep_cli.run_command(args) == 0
    assert "smoke: 9 tasks stored" in capsys.readouterr().out
    args = parser.parse_args([str(EXPERIMENTS / "smoke.toml"), "--out", str(tmp_path), "--quick", "--dry-run"])
    sweep_cli.run_command(args)
    assert "9 pending" not in capsys.readouterr().out and len(sweep.load(tmp_path)) == 9


def test_import_workbench_stays_light():
    code = ("import sys, workbench; "
            "print([m for m in ('pandas', 'pyarrow', 'dask', 'distributed', 'tqdm', 'workbench.sweep') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys, workbench.sweep; print([m for m in ('dask', 'distributed') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # the command-line module (imported by workbench.cli) loads nothing heavy either
    code = ("import sys, workbench.cli.sweep; "
            "print([m for m in ('pandas', 'pyarrow', 'dask', 'tqdm', 'workbench.sweep.runner') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_store_ignores_temporaries_and_duplicates(tmp_path):
    from workbench.sweep import store

    df = sweep.run(sweep_helpers.experiment(seeds=(0,), ks=(8,)), out=tmp_path, workers=1, progress=False)
    assert len(df) == 2 and len(list(tmp_path.glob("results-*.parquet"))) == 1
    # a half-written temporary from a killed writer, and a part duplicating a compacted row
    (tmp_path / "parts").mkdir(exist_ok=True)
    (tmp_path / "parts" / f".{df['task_hash'][0]}.parquet.dead.tmp").write_bytes(b"PAR1 truncated")
    row = df.iloc[0].to_dict()
    row["signed_errors"] = list(row["signed_errors"])
    store.write_row(tmp_path, row)
    again = sweep.load(tmp_path)
    pd.testing.assert_frame_equal(again, df)
    sweep.run(sweep_helpers.experiment(seeds=(0,), ks=(8,)), out=tmp_path, workers=1, progress=False)
    assert not list(tmp_path.rglob("*.tmp")) and not list((tmp_path / "parts").glob("*.parquet"))
    pd.testing.assert_frame_equal(sweep.load(tmp_path), df)


def test_results_folder_reads_with_pandas_and_records_progress(tmp_path):
    out = tmp_path / "smoke"
    df = sweep.run(EXPERIMENTS / "smoke.toml", out=out, workers=1, progress=False, quick=True)
    # metadata is named so that pyarrow skips it: the folder is a plain Parquet dataset
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("_")) == ["_experiment.json", "_progress.json"]
    plain = pd.read_parquet(out)
    pd.testing.assert_frame_equal(plain.reset_index(drop=True), sweep.load(out))
    assert set(plain["task_hash"]) == set(df["task_hash"])
    progress = json.loads((out / "_progress.json").read_text())
    assert (progress["phase"], progress["done"], progress["total"]) == ("done", 9, 9)
    assert json.loads((out / "_experiment.json").read_text())["name"] == "smoke"


def test_legacy_metadata_file_is_renamed_on_resume(tmp_path):
    out = tmp_path / "smoke"
    sweep.run(EXPERIMENTS / "smoke.toml", out=out, workers=1, progress=False, quick=True)
    (out / "experiment.json").write_text("{}")   # the name older versions wrote
    df = sweep.run(EXPERIMENTS / "smoke.toml", out=out, workers=1, progress=False, quick=True)
    assert not (out / "experiment.json").exists() and len(pd.read_parquet(out)) == len(df) == 9
    assert json.loads((out / "_progress.json").read_text())["total"] == 0   # nothing was left to run


def test_first_tasks_are_the_cheapest_of_each_kernel_group():
    from workbench.sweep import warmup

    exp = sweep.parse(EXPERIMENTS / "preset_discrepancy.toml", quick=True)
    first = warmup.first_tasks(exp.tasks)
    groups: dict = {}
    for t in exp.tasks:   # same preset and formats (algorithm "gemm" everywhere): same kernels
        groups.setdefault((t.spec["preset"], t.spec["in_format"], t.spec["out_format"]), []).append(t)
    assert len(first) == len(groups) == 15   # 8 fp16 + 7 bf16 presets
    for t in first:
        mates = groups[(t.spec["preset"], t.spec["in_format"], t.spec["out_format"])]
        assert t.spec["m"] * t.spec["k"] * t.spec["n"] == min(u.spec["m"] * u.spec["k"] * u.spec["n"] for u in mates)
    tour = sweep.parse(warmup.KERNEL_TOUR)
    assert len(warmup.first_tasks(tour.tasks)) == len(tour.tasks) == 5


def test_progress_bar_count_and_percentage_agree(tmp_path, capsys):
    sweep.run(EXPERIMENTS / "smoke.toml", out=tmp_path, workers=1, progress=True, quick=True)
    states = [s for s in capsys.readouterr().err.replace("\r", "\n").splitlines() if "task" in s]
    counts = [re.search(r"(\d+)%\|.*\| (\d+)/(\d+)", s) for s in states]
    counts = [(int(m[1]), int(m[2]), int(m[3])) for m in counts if m]
    assert counts and counts[-1] == (100, 9, 9)
    assert all(pct == round(100 * done / total) for pct, done, total in counts), counts
