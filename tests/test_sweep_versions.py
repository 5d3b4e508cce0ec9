"""Sweeps say what ran (issue 39, item 4): rows carry the resolved unit and the
experiment's digest, a folder of another experiment version is refused with a way
forward, --dry-run lists every invalid task, and ``exclude`` leaves combinations out.
Expected values come from the catalogue's records and from counting the grid by hand."""
from __future__ import annotations

import json

import pytest

from workbench.units import catalogue
from workbench import sweep
from workbench.cli import main
from workbench.sweep import spec as sweep_spec
from workbench.sweep.store import StaleResultsError, save_experiment


def _exp(**grid) -> dict:
    return {"name": "versions", "metrics": ["normwise_inf"],
            "defaults": {"algorithm": "gemm", "m": 2, "n": 2, "seed": 0, "input": {"generator": "uniform"},
                         "out_format": "fp32"},
            "grid": [{"preset": "H100", "in_format": "half", "k": [4, 8], **grid}]}


def test_rows_name_the_resolved_unit_and_the_digest(tmp_path):
    exp = _exp()
    table = sweep.run(exp, out=tmp_path / "r", workers=1, progress=False)
    rec = catalogue.by_name("hopper/wgmma/fp16->fp32")
    assert len(table) == 2 and table["error"].isna().all()
    assert set(table["unit"]) == {rec.name}
    assert set(table["in_format"]) == {"fp16"}                    # what ran, not the alias typed
    assert [json.loads(p) == rec.params for p in table["unit_params"]] == [True, True]
    assert set(table["experiment_digest"]) == {sweep_spec.experiment_digest(exp)}


def test_another_version_is_refused_a_grown_grid_and_a_description_are_not(tmp_path):
    out = tmp_path / "r"
    first = sweep.run(_exp(), out=out, workers=1, progress=False)
    edited = _exp()
    edited["defaults"]["input"] = {"generator": "normal"}          # the same preset/k rows, other inputs
    with pytest.raises(StaleResultsError, match=r"holds 2 results of another version of experiment 'versions' "
                                                 r"\(digest [0-9a-f]+\).*--out .*delete"):
        sweep.run(edited, out=out, workers=1, progress=False)
    assert len(sweep.load(out)) == 2                               # nothing was added
    same = {**_exp(), "description": "the same grid, described"}
    assert len(sweep.run(same, out=out, workers=1, progress=False)) == 2
    grown = sweep.run(_exp(k=[4, 8, 16]), out=out, workers=1, progress=False)   # old tasks kept: resumed
    assert len(grown) == 3 and set(first["task_hash"]) <= set(grown["task_hash"])


def test_a_folder_written_before_versions_were_recorded_is_checked_by_its_definition(tmp_path):
    out = tmp_path / "r"
    sweep.run(_exp(), out=out, workers=1, progress=False)
    save_experiment(out, _exp())                                   # as an older workbench wrote it
    table = sweep.load(out)
    table.drop(columns=["experiment_digest"]).to_parquet(out / "results-old.parquet")
    for f in (out / "parts").glob("*.parquet"):
        f.unlink()
    for f in out.glob("results-*.parquet"):
        if f.name != "results-old.parquet":
            f.unlink()
    with pytest.raises(StaleResultsError):
        sweep.run(_exp(k=[4]), out=out, workers=1, progress=False)


def _bad_grid(exclude=None) -> dict:
    grid = {"algorithm": "multiword", "preset": ["V100", "A100"], "in_format": ["fp16", "bf16"], "k": [4, 8],
            "params": {"word": 2}}
    if exclude is not None:
        grid["exclude"] = exclude
    return {"name": "bad", "metrics": ["normwise_inf"],
            "defaults": {"m": 2, "n": 2, "seed": 0, "out_format": "fp32", "input": {"generator": "uniform"}},
            "grid": [grid]}


def test_dry_run_lists_every_invalid_task(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(_toml(_bad_grid()))
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "o")]) == 1
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("task ")]
    # 8 tasks, every one with the misspelt params key; the 2 V100 x bf16 tasks also have no unit
    assert len([ln for ln in lines if "'word'" in ln]) == 8
    assert len([ln for ln in lines if "no preset for 'V100'" in ln]) == 2
    with pytest.raises(ValueError, match=r"8 of 8 tasks are invalid .*exclude table"):
        sweep.run(_bad_grid(), out=tmp_path / "o", workers=1, progress=False)


def test_exclude_leaves_out_combinations_that_do_not_exist(tmp_path, capsys):
    exp = _bad_grid(exclude=[{"preset": "v100", "in_format": "bf16"}])
    exp["grid"][0]["params"] = {"words": 2}
    parsed = sweep_spec.parse(exp)
    assert len(parsed.tasks) == 6 and parsed.excluded == 2
    assert not any(t.spec["preset"] == "V100" and t.spec["in_format"] == "bf16" for t in parsed.tasks)
    path = tmp_path / "ok.toml"
    path.write_text(_toml(exp))
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "2 left out by exclude" in capsys.readouterr().out
    with pytest.raises(ValueError, match="exclude: unknown key 'presett'"):
        sweep_spec.parse({**exp, "exclude": [{"presett": "V100"}]})


def _toml(exp: dict) -> str:
    """The experiment as TOML (the few shapes these tests use)."""
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + "}"
        return str(v)
    lines = [f"{k} = {val(v)}" for k, v in exp.items() if k not in ("defaults", "grid")]
    lines.append("[defaults]")
    lines += [f"{k} = {val(v)}" for k, v in exp["defaults"].items()]
    for g in exp["grid"]:
        lines.append("[[grid]]")
        lines += [f"{k} = {val(v)}" for k, v in g.items()]
    return "\n".join(lines) + "\n"
