"""What the package carries beside its code (issue 36): the folders the wheel bundles and how
the code finds them (workbench.sweep.resources), the build step that copies them (setup.py), and
the files a package ships (LICENSE, CITATION.cff, py.typed, CHANGELOG.md, the version).

The wheel itself is built, installed into a fresh virtual environment and run from a
temporary folder by .ci/run (minutes: too slow for the default run)."""
from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

import workbench
from workbench.sweep import resources
from workbench.studies.notebook_support import Report
from workbench.studies.reproduce import EXPERIMENTS, NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]


def _setup_module():
    spec = importlib.util.spec_from_file_location("workbench_setup", ROOT / "setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # the guard keeps setup() from running
    return mod


def test_data_dir_is_the_checkouts_folder_here():
    for name in resources.BUNDLED:
        assert resources.data_dir(name) == ROOT / name
    with pytest.raises(ValueError, match="unknown data folder 'figures'; expected one of notebooks"):
        resources.data_dir("figures")


def test_experiments_by_name_and_by_path(tmp_path, monkeypatch):
    names = resources.experiment_files()
    assert set(names) == {p.stem for p in (ROOT / "experiments").glob("*.toml")}
    assert {e for n in EXPERIMENTS.values() for e in n} <= set(names)
    assert resources.experiment_path("fig7_multiword") == ROOT / "experiments" / "fig7_multiword.toml"
    assert resources.experiment_path("smoke.toml") == ROOT / "experiments" / "smoke.toml"
    # an existing file wins over a bundled name, from any working directory
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smoke.toml").write_text('name = "mine"\n')
    assert resources.experiment_path("smoke.toml") == Path("smoke.toml")
    assert resources.experiment_path("smoke") == ROOT / "experiments" / "smoke.toml"
    with pytest.raises(FileNotFoundError, match="'fig8' is neither a file nor a bundled experiment; .* smoke"):
        resources.experiment_path("fig8")
    with pytest.raises(FileNotFoundError, match="experiment file 'sub/fig7_multiword.toml' does not exist"):
        resources.experiment_path("sub/fig7_multiword.toml")


def test_a_missing_path_named_after_a_bundled_experiment_names_the_bundled_one(tmp_path, monkeypatch, capsys):
    """From a wheel, ``experiments/fig7_multiword.toml`` (a checkout's path) is not there: the
    error says which name runs the experiment the package carries."""
    from workbench.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="experiment file 'experiments/fig7_multiword.toml' does not exist "
                                                "here; the bundled experiment of that name runs as 'fig7_multiword'"):
        resources.experiment_path("experiments/fig7_multiword.toml")
    with pytest.raises(FileNotFoundError, match="'sub/fig8.toml' does not exist$"):
        resources.experiment_path("sub/fig8.toml")
    assert main(["sweep", "experiments/smoke.toml", "--dry-run"]) == 2
    assert "the bundled experiment of that name runs as 'smoke'" in capsys.readouterr().err


def test_notebooks_are_listed_and_copied_without_overwriting(tmp_path, capsys):
    from workbench.cli import main

    assert main(["notebooks"]) == 0
    listing = capsys.readouterr().out
    assert set(resources.notebook_files()) == set(NOTEBOOKS) and all(name in listing for name in NOTEBOOKS)
    dest = tmp_path / "nb"
    assert main(["notebooks", "--copy", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(f"{name}.ipynb" for name in NOTEBOOKS)
    explore = dest / "explore.ipynb"
    assert explore.read_bytes() == (ROOT / "notebooks" / "explore.ipynb").read_bytes()
    explore.write_text("mine")
    capsys.readouterr()
    assert main(["notebooks", "--copy", str(dest)]) == 2
    assert "already holds" in capsys.readouterr().err and explore.read_text() == "mine"
    assert main(["notebooks", "--copy", str(dest), "--force"]) == 0
    assert explore.read_bytes() == (ROOT / "notebooks" / "explore.ipynb").read_bytes()
    assert main(["notebooks", "--force"]) == 2


def test_sweep_parses_a_bundled_experiment_by_name(tmp_path, monkeypatch):
    import workbench.sweep as sweep

    monkeypatch.chdir(tmp_path)
    by_name = sweep.parse("fig7_multiword", quick=True)
    by_path = sweep.parse(ROOT / "experiments" / "fig7_multiword.toml", quick=True)
    assert by_name.name == "fig7_multiword"
    assert [t.hash for t in by_name.tasks] == [t.hash for t in by_path.tasks]


def test_setup_bundles_every_folder_the_code_reads():
    setup = _setup_module()
    assert set(setup.BUNDLE) == set(resources.BUNDLED)
    files = {str(p) for p in setup.bundled_files()}
    assert {f"notebooks/{n}.ipynb" for n in NOTEBOOKS} <= files
    assert not any(f.startswith("notebooks/") and f.endswith(".py") for f in files)
    assert {f"experiments/{p.name}" for p in (ROOT / "experiments").glob("*.toml")} <= files
    fig7 = {f"paper_data/khattak2025_fig7/{p.name}" for p in (ROOT / "paper_data" / "khattak2025_fig7").iterdir()}
    assert len(fig7) > 50 and fig7 <= files
    manifest = (ROOT / "MANIFEST.in").read_text()   # the sdist carries them, so a wheel built from it does
    for folder in ("experiments", "paper_data"):
        assert f"graft {folder}" in manifest
    assert "notebooks/*.ipynb" in manifest


def test_build_py_copies_the_folders_into_the_package(tmp_path):
    from setuptools.dist import Distribution

    setup = _setup_module()
    dist = Distribution({"name": "probe", "packages": [], "script_name": "setup.py"})
    cmd = setup.BuildPyWithData(dist)
    cmd.build_lib = str(tmp_path)
    cmd.ensure_finalized()
    cmd.run()
    copied = sorted(p.relative_to(tmp_path / "workbench" / "_data") for p in tmp_path.rglob("*") if p.is_file())
    assert copied == setup.bundled_files()
    src = ROOT / "notebooks" / "fig7_multiword.ipynb"
    assert (tmp_path / "workbench" / "_data" / "notebooks" / src.name).read_bytes() == src.read_bytes()


def test_report_falls_back_to_the_packages_experiments_and_paper_data(tmp_path):
    rep = Report("figs", "sweeps", root=tmp_path)     # a folder outside any checkout
    assert rep.out == tmp_path / "figs"
    with open(ROOT / "experiments" / "smoke.toml", "rb") as f:
        assert rep.load_experiment("smoke") == tomllib.load(f)
    fig7 = ROOT / "paper_data" / "khattak2025_fig7"
    assert rep.paper_data("paper_data/khattak2025_fig7") == fig7
    assert rep.paper_data("khattak2025_fig7") == fig7
    (tmp_path / "paper_data" / "khattak2025_fig7").mkdir(parents=True)    # the root's own copy wins
    assert rep.paper_data("paper_data/khattak2025_fig7") == tmp_path / "paper_data" / "khattak2025_fig7"
    assert rep.paper_data(fig7) == fig7
    with pytest.raises(FileNotFoundError, match="paper data 'nosuch'"):
        rep.paper_data("nosuch")


def test_license_citation_changelog_and_typed_marker():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "BSD-3-Clause" and meta["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "The mixed-precision workbench authors" in text
    assert "Neither the name of the copyright holder nor the names of its" in text
    assert (ROOT / "workbench" / "py.typed").is_file()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["workbench"]
    # the version is set once: pyproject reads workbench.__version__; the citation and changelog name it
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "workbench._version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", workbench.__version__)
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r'^version: "(.*)"$', cff, re.M).group(1) == workbench.__version__
    assert re.search(r"^license: BSD-3-Clause$", cff, re.M)
    assert f"## [{workbench.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def test_cli_version_experiments_and_a_sweep_by_name(tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"workbench {workbench.__version__}\n"
    monkeypatch.chdir(tmp_path)    # outside the checkout: the names still resolve
    assert main(["experiments"]) == 0
    out = capsys.readouterr().out
    for name in resources.experiment_files():
        assert re.search(rf"^{name}\s+\d+\s+\d+\s", out, re.M), name
    assert re.search(r"^fig7_multiword\s+660\s+132\s", out, re.M)   # 20 sizes x 33 curves; [quick] 4 sizes
    assert main(["sweep", "fig7_multiword", "--quick", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("fig7_multiword: 132 tasks on")
    assert main(["sweep", "fig8", "--dry-run"]) == 2
    assert "'fig8' is neither a file nor a bundled experiment" in capsys.readouterr().err
