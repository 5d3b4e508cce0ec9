"""What an experiment file runs (issue 55, items 4-5): ``workbench sweep FILE --dry-run``
lists every ``module:function`` the file would import before it imports any, and
``preset = "file.toml"`` is the task ``unit = "file.toml"``."""
from __future__ import annotations

import sys
import uuid

import pytest

import workbench
from workbench import sweep
from workbench.cli import main
from workbench.sweep import spec

TASK = 'm = 2\nk = 8\nn = 2\nseed = 0\ninput = {generator = "uniform"}\n'


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's that says when it is imported and when its algorithm runs."""
    name = f"dry_run_user_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(
        "import pathlib\n"
        "print('USER MODULE IMPORTED')\n"
        "def alg(A, B, C=None, *, model=None):\n"
        f"    pathlib.Path({str(tmp_path / 'ran')!r}).touch()\n"
        "    return A @ B\n"
        "quick_alg = alg\n"
        "def metric(ctx):\n    return 0.0\n"
        "def ref(A, B, C=None, *, alpha=1.0, beta=1.0):\n    return A @ B\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _user_experiment(tmp_path, mod: str):
    path = tmp_path / "user.toml"
    path.write_text(f'name = "user"\nreference = "{mod}:ref"\nmetrics = ["normwise_inf", "{mod}:metric"]\n'
                    f'[defaults]\n{TASK}preset = "H100:fp16:fp32"\n'
                    f'[[grid]]\nalgorithm = ["{mod}:alg", "gemm"]\n'
                    f'[[grid]]\nalgorithm = "{mod}:alg"\nk = 16\n'
                    f'[quick]\nalgorithm = "{mod}:quick_alg"\n')
    return path


def test_dry_run_lists_the_code_a_file_names_before_importing_it(tmp_path, user_module, capsys):
    path = _user_experiment(tmp_path, user_module)
    assert user_module not in sys.modules
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    listing = ["imports (the file runs this code, like a script: trust it as you would these modules):",
               f"  reference  {user_module}:ref", f"  metric     {user_module}:metric",
               f"  algorithm  {user_module}:alg", f"  algorithm  {user_module}:quick_alg"]   # both sizes
    lines = out.splitlines()
    start = lines.index(listing[0])
    assert lines[start:start + len(listing)] == listing
    # listed first; resolving the tasks then imports the module; no task ran
    assert lines.index("USER MODULE IMPORTED") > start + len(listing) - 1
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()


def test_imports_in_first_use_order_each_once(tmp_path, user_module):
    path = _user_experiment(tmp_path, user_module)
    full = spec.parse(path)
    assert spec.imports(path, full) == [("reference", f"{user_module}:ref"), ("metric", f"{user_module}:metric"),
                                        ("algorithm", f"{user_module}:alg"),
                                        ("algorithm", f"{user_module}:quick_alg")]
    assert user_module not in sys.modules                       # listing imports nothing


def test_a_file_of_built_ins_imports_nothing(tmp_path, capsys):
    assert main(["sweep", "smoke", "--quick", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "imports: none (built-in algorithms, metrics and reference only)" in capsys.readouterr().out.splitlines()
    assert spec.imports("solvers_ir", spec.parse("solvers_ir")) == [
        ("algorithm", "algorithms.refinement:solve_system")]


def _unit_file(tmp_path):
    unit = workbench.custom_model("fp16", "fp32", kind="t-fdpa", L=4, F=22, rounding="rne")
    return workbench.save_unit(unit, tmp_path / "mine.toml"), unit


def test_a_unit_file_as_preset_is_the_unit_task(tmp_path):
    path, unit = _unit_file(tmp_path)
    as_preset = tmp_path / "preset.toml"
    as_preset.write_text(f'name = "p"\n[defaults]\n{TASK}algorithm = "gemm"\n[[grid]]\npreset = "mine.toml"\n')
    as_unit = tmp_path / "unit.toml"
    as_unit.write_text(f'name = "p"\n[defaults]\n{TASK}algorithm = "gemm"\n[[grid]]\nunit = "mine.toml"\n')
    (a,), (b,) = spec.parse(as_preset).tasks, spec.parse(as_unit).tasks
    assert a.spec == b.spec and a.hash == b.hash
    assert "preset" not in a.spec and a.spec["unit"] == str(path.resolve())
    assert (a.spec["in_format"], a.spec["out_format"], a.spec["model"]["F"]) == ("fp16", "fp32", 22)
    table = sweep.run(as_preset, out=tmp_path / "r", workers=1, progress=False)
    assert table["error"].isna().all()
    assert table["unit"].iloc[0] == workbench.units.unit_name(unit)


def test_a_unit_file_named_twice_or_a_preset_without_formats_says_what_to_write(tmp_path):
    _unit_file(tmp_path)
    both = tmp_path / "both.toml"
    both.write_text(f'name = "p"\n[defaults]\n{TASK}algorithm = "gemm"\n[[grid]]\npreset = "mine.toml"\n'
                    'unit = "mine.toml"\n')
    with pytest.raises(ValueError, match=r"grid\[0\]: preset='mine.toml' is a unit file and unit='mine.toml' "
                                         r"is given too; give the file once"):
        spec.parse(both)
    with pytest.raises(ValueError, match=r"grid\[0\]: unit='missing.toml': no such file"):
        spec.parse({"name": "p", "grid": {"algorithm": "gemm", "preset": "missing.toml", "m": 2, "k": 8, "n": 2,
                                          "seed": 0, "input": {"generator": "uniform"}}})
    with pytest.raises(ValueError, match=r"needs in_format and out_format \(or name a whole unit: "
                                         r"preset = \"H100:fp16:fp32\", or a unit file: unit = \"file.toml\"\)"):
        spec.parse({"name": "p", "grid": {"algorithm": "gemm", "preset": "H100", "m": 2, "k": 8, "n": 2,
                                          "seed": 0, "input": {"generator": "uniform"}}})
