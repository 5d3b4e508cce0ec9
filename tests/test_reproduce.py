"""workbench reproduce: the notebooks run under papermill, write their files, and the
tables they generate agree with the papers' published values (transcribed in
tests/paper_cases.py and below, not computed by the code under test)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_cases import KM_TABLE2, TABLE8  # noqa: E402

from workbench.units import catalogue  # noqa: E402
from workbench.cli import reproduce as reproduce_cli  # noqa: E402
from workbench.studies.reproduce import NOTEBOOKS, notebooks_dir, reproduce  # noqa: E402

EXPECTED_FILES = {
    "feature_table": ["feature_table.png", "feature_table.pdf", "feature_table_km_table2.csv",
                      "feature_table_km_table2.md", "feature_table_mmasim_table4.csv",
                      "feature_table_mmasim_table4.md", "feature_table_all_presets.csv"],
    "discrepancy_table": ["table8_discrepancy.csv", "table8_discrepancy.md", "table8_layout.csv",
                          "preset_discrepancy.png", "preset_discrepancy.pdf", "preset_discrepancy.csv",
                          "discriminating_inputs.csv"],
    "non_monotonicity": ["non_monotonicity.png", "non_monotonicity.pdf", "non_monotonicity.csv",
                         "non_monotonicity.md"],
    "cdna3_rounding_bias": ["cdna3_rounding_bias.png", "cdna3_rounding_bias.pdf", "cdna3_rounding_bias.csv"],
    "fig7_multiword": ["fig7_multiword.png", "fig7_multiword.pdf", "fig7_multiword.csv", "fig7_summary.csv",
                       "fig7_summary.md"],
    "markidis_vs_ootomo": ["markidis_vs_ootomo.png", "markidis_vs_ootomo.pdf", "markidis_vs_ootomo.csv"],
    "explore": ["explore.png", "explore.pdf", "explore.csv"],
    "solvers_ir": ["solvers_ir.png", "solvers_ir.pdf", "solvers_ir.csv", "solvers_ir.md"],
    "emulation_safety": ["emulation_safety.png", "emulation_safety.pdf", "emulation_safety.csv",
                         "emulation_safety_summary.csv", "emulation_safety_summary.md",
                         "emulation_safety_gemmul8.csv"],
}

# MMA-Sim (Xie et al. 2025) Table 4 as published: (architecture, input, output) -> (L_max, F, rho)
XIE_TABLE4 = {
    ("volta", "FP16", "FP32"): (4, 23, "RZ-FP32"), ("volta", "FP16", "FP16"): (4, 23, "RNE-FP16"),
    ("turing", "FP16", "FP32"): (8, 24, "RZ-FP32"), ("turing", "FP16", "FP16"): (8, 24, "RNE-FP16"),
    ("ampere", "TF32", "FP32"): (4, 24, "RZ-FP32"), ("ampere", "BF16", "FP32"): (8, 24, "RZ-FP32"),
    ("ampere", "FP16", "FP32"): (8, 24, "RZ-FP32"), ("ampere", "FP16", "FP16"): (8, 24, "RNE-FP16"),
    ("ada", "TF32", "FP32"): (4, 24, "RZ-FP32"), ("ada", "FP8", "FP32"): (16, 13, "RZ-E8M13"),
    ("ada", "FP8", "FP16"): (16, 13, "RNE-FP16"), ("hopper", "TF32", "FP32"): (8, 25, "RZ-FP32"),
    ("hopper", "BF16", "FP32"): (16, 25, "RZ-FP32"), ("hopper", "FP16", "FP16"): (16, 25, "RNE-FP16"),
    ("hopper", "FP8", "FP32"): (32, 13, "RZ-E8M13"), ("hopper", "FP8", "FP16"): (32, 13, "RNE-FP16"),
    ("blackwell", "TF32", "FP32"): (8, 25, "RZ-FP32"), ("blackwell", "FP16", "FP32"): (16, 25, "RZ-FP32"),
    ("blackwell", "FP8", "FP32"): (32, 25, "RZ-FP32"), ("blackwell", "FP8", "FP16"): (32, 25, "RNE-FP16"),
    ("blackwell", "MXFP8", "FP32"): (32, 25, "RZ-FP32"), ("rtx-blackwell", "BF16", "FP32"): (16, 25, "RZ-FP32"),
}

_ARCH = {"Volta": "volta", "Turing": "turing", "Ampere": "ampere", "Ada": "ada", "Hopper": "hopper",
         "Blackwell": "blackwell", "RTX Blackwell": "rtx-blackwell", "CDNA1": "cdna1", "CDNA2": "cdna2",
         "CDNA3": "cdna3"}


@pytest.fixture(scope="module")
def feature_run(tmp_path_factory):
    """The feature-table notebook alone (seconds: no sweep), for the default run; its relative
    folders are taken under ``out`` (``workbench reproduce --out``), not the working directory."""
    out = tmp_path_factory.mktemp("reproduce-features")
    files = reproduce(quick=True, only="feature_table", figures_dir="figures", log=False, out=out)
    return out, files


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """Every notebook with its quick sizes (minutes: behind the slow marker).  The claims
    on its tables that matter most are also checked without notebooks: MMA-Sim Table 8
    in tests/test_engine_papers.py, the Figure 7 bound in tests/test_algorithms_multiword.py."""
    out = tmp_path_factory.mktemp("reproduce")
    files = reproduce(quick=True, results_dir=out / "results",
                      figures_dir=out / "figures", log=False,
                      parameters={"discriminate_presets": ["V100:fp16:fp32", "H100:fp16:fp32"],
                                  "discriminate_budget": 500})
    return out, files


def _check_files(figures: Path, names: list[str]) -> None:
    for name in names:
        f = figures / name
        assert f.is_file() and f.stat().st_size > 0, f"{name} missing or empty"


@pytest.mark.slow
def test_quick_reproduction_writes_every_file(quick_run):
    out, files = quick_run
    for name, expected in EXPECTED_FILES.items():
        _check_files(out / "figures", expected)
        assert (out / "results" / "notebooks" / f"{name}.ipynb") in files
    assert (out / "figures" / "table8_discrepancy.csv") in files


@pytest.mark.slow
def test_fig7_errors_below_the_published_bound(quick_run):
    out, _ = quick_run
    fig7 = pd.read_csv(out / "figures" / "fig7_multiword.csv")
    # Khattak & Mikaitis Fig. 7: every error lies below bound (3.26), which matches the published bound
    assert fig7["below_bound"].all()
    assert ((fig7["bound_ours"] - fig7["bound_paper"]).abs() <= 1e-6 * fig7["bound_paper"]).all()


def test_feature_table_matches_khattak_mikaitis_table2(feature_run):
    out, _ = feature_run
    t = pd.read_csv(out / "figures" / "feature_table_km_table2.csv")
    for row in KM_TABLE2:
        first_in = row.input.split(",")[0].strip()
        outs = set(row.output.split("/"))
        cand = t[t["devices"].str.contains(row.gpus[0], regex=False)
                 & t["input"].map(lambda s: first_in in [x.strip() for x in s.split(",")])
                 & t["output"].map(lambda s: outs <= set(s.split("/")))]
        assert len(cand) == 1, (row, cand)
        r = cand.iloc[0]
        got = (r["prd_align"], int(r["acc_out_prec"]), int(r["NFMA"]), r["final_rounding"], r["c_order"],
               r["interleaving"] == "yes")
        assert got == (f"({row.align[0]},{row.align[1]})", row.acc_out_bits, row.n_fma, row.final_rounding,
                       row.c_order, row.interleaving), row


def test_feature_table_matches_mmasim_table4(feature_run):
    out, _ = feature_run
    t = pd.read_csv(out / "figures" / "feature_table_mmasim_table4.csv")
    for (arch, fin, fout), expected in XIE_TABLE4.items():
        cand = t[(t["architecture"] == arch) & (t["output"] == fout)
                 & t["input"].map(lambda s: fin in s.replace("FP8/6/4", "FP8").replace("MXFP8/6/4", "MXFP8")
                                  .split("/") or (fin == "FP8" and s.startswith("FP8")))]
        cand = cand[cand["input"].str.startswith("MX") == fin.startswith("MX")]
        assert len(cand) == 1, (arch, fin, fout, t[t["architecture"] == arch])
        r = cand.iloc[0]
        assert (int(r["L_max"]), int(r["F"]), r["rho"]) == expected, (arch, fin, fout)


@pytest.mark.slow
def test_table8_cells_match_mmasim(quick_run):
    out, _ = quick_run
    t = pd.read_csv(out / "figures" / "table8_discrepancy.csv")
    checked = 0
    for (arch, fin), d00 in TABLE8.items():
        if arch == "NVIDIA":
            continue
        a = _ARCH[arch]
        variant_1k = fin.endswith("_1k")
        fin = fin.removesuffix("_1k")
        if fin == "fp8_e5m2" and a == "cdna3":
            fin = "fp8_e5m2fnuz"
        out_fmt = fin if fin in ("fp32", "fp64") else "fp32"
        rec = catalogue.preset(a, fin, out_fmt, variant="1k" if variant_1k else None)
        sel = t[t["preset"] == rec.name]
        assert len(sel) == 1, (arch, fin)
        assert float(sel.iloc[0]["d00"]) == float(d00), (arch, fin, sel.iloc[0]["d00"], d00)
        checked += 1
    assert checked >= 30


def test_feature_notebook_writes_its_files(feature_run):
    out, files = feature_run
    _check_files(out / "figures", EXPECTED_FILES["feature_table"])
    assert out / "results" / "notebooks" / "feature_table.ipynb" in files
    assert all(f.is_relative_to(out) for f in files), files


def test_notebooks_have_a_parameters_cell_and_no_outputs():
    import nbformat
    for name in NOTEBOOKS:
        nb = nbformat.read(notebooks_dir() / f"{name}.ipynb", as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and "quick: bool = True" in tagged[0].source, name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), name


def test_cli_arguments_and_unknown_notebook():
    p = argparse.ArgumentParser()
    reproduce_cli.add_arguments(p)
    a = p.parse_args(["--full", "--only", "fig7_multiword"])
    assert a.quick is False and a.only == ["fig7_multiword"]
    assert p.parse_args([]).quick is True
    with pytest.raises(SystemExit):
        p.parse_args(["--quick", "--full"])
    with pytest.raises(ValueError, match="unknown notebook 'fig8'"):
        reproduce(only="fig8")


def test_quick_runs_default_to_an_ignored_folder():
    from workbench.studies.reproduce import default_figures_dir

    assert default_figures_dir(True) == Path("figures") / "quick" and default_figures_dir(False) == Path("figures")
    root = notebooks_dir().parent
    try:
        ignored = subprocess.run(["git", "check-ignore", "-q", "figures/quick/fig7_multiword.png"], cwd=root)
        kept = subprocess.run(["git", "check-ignore", "-q", "figures/fig7_multiword.png"], cwd=root)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if kept.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0 and kept.returncode == 1


@pytest.mark.slow
def test_emulation_safety_quick_run_finds_the_hopper_break(tmp_path):
    """The study's quick set (about 1.5 min): its files, and the finding - FP8 Ozaki-II is wrong
    on H100 wgmma at K = 4096 and safe on B200, H100 mma.sync and MI300X."""
    reproduce(quick=True, only="emulation_safety", figures_dir="figures", log=False, out=tmp_path)
    _check_files(tmp_path / "figures", EXPECTED_FILES["emulation_safety"])
    s = pd.read_csv(tmp_path / "figures" / "emulation_safety_summary.csv").set_index("pair")
    assert s.loc["FP8 Ozaki-II / H100 wgmma", "wrong"] > 0
    for unit in ("B200", "H100 mma.sync", "MI300X", "exact FP8"):
        assert s.loc[f"FP8 Ozaki-II / {unit}", "wrong"] == 0 and s.loc[f"FP8 Ozaki-II / {unit}", "degraded"] == 0
