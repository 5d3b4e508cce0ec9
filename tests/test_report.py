"""workbench.studies.notebook_support: the notebooks' shared set-up, writers and parameter parsing.

Expected values are written out here (Markdown text, parsed lists) or come from
Khattak & Mikaitis 2025 Table II (tests/paper_cases.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_cases import KM_TABLE2  # noqa: E402

from workbench.units import catalogue  # noqa: E402
from workbench.studies.notebook_support import Report, feature_row, markdown_table, parameter_list, repository_root  # noqa: E402


def test_markdown_table_formats_numbers_and_escapes():
    df = pd.DataFrame({"name": ["a|b", "two\nlines", None], "x": [1 / 3, 2.0**-24, np.nan], "n": [1, 20, 300]})
    assert markdown_table(df) == (
        "| name | x | n |\n"
        "|---|---|---|\n"
        "| a\\|b | 0.3333 | 1 |\n"
        "| two lines | 5.96e-08 | 20 |\n"
        "|  |  | 300 |"
    )


@given(st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=8))
def test_parameter_list_reads_what_papermill_passes(xs):
    assert parameter_list("ks", xs) == xs                      # -y "ks: [...]" or the notebook's default
    assert parameter_list("ks", str(xs)) == xs                 # -p ks "[16, 256]"
    assert parameter_list("ks", ",".join(map(str, xs))) == xs  # -p ks 16,256


def test_parameter_list_strings_none_and_errors():
    assert parameter_list("p", None) is None
    assert parameter_list("p", '["V100", "A100"]', str) == ["V100", "A100"]
    assert parameter_list("p", "V100, A100", str) == ["V100", "A100"]
    assert parameter_list("ks", "16") == [16]
    assert parameter_list("ks", 16) == [16]
    with pytest.raises(ValueError, match=r"ks='\[16, 2.5\]': 2.5 is not an integer"):
        parameter_list("ks", "[16, 2.5]")
    with pytest.raises(ValueError, match="ks='\\[16,': expected a list"):
        parameter_list("ks", "[16,")
    with pytest.raises(ValueError, match="expected a non-empty list"):
        parameter_list("ks", [])
    with pytest.raises(ValueError, match="True is not an integer"):
        parameter_list("ks", [True])


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "experiments").mkdir(parents=True)
    (root / "workbench").mkdir()
    (root / "experiments" / "tiny.toml").write_text('name = "tiny"\n[defaults]\nk = [4, 8]\n')
    return root


def test_repository_root_is_found_from_a_subfolder(tmp_path, monkeypatch):
    root = _checkout(tmp_path)
    (root / "notebooks").mkdir()
    monkeypatch.chdir(root / "notebooks")
    assert repository_root() == root
    assert repository_root(root / "notebooks") == root


def test_report_writes_figures_tables_and_text(tmp_path):
    import matplotlib.pyplot as plt

    root = _checkout(tmp_path)
    rep = Report("out/figs", "out/sweeps", quick=True, workers=1, root=root)
    assert rep.out == root / "out" / "figs" and rep.out.is_dir()
    assert rep.sweep_dir == root / "out" / "sweeps"
    assert rep.load_experiment("tiny") == {"name": "tiny", "defaults": {"k": [4, 8]}}
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    rep.save_fig(fig, "f")
    plt.close(fig)
    rep.save_table(pd.DataFrame({"k": [4, 8], "err": [0.5, 0.25]}), "t", "A title")
    rep.save_text("note.md", "hello\n")
    assert rep.written == ["f.png", "f.pdf", "t.csv", "t.md", "note.md"]
    assert (rep.out / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = (rep.out / "f.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf
    assert (rep.out / "t.md").read_text() == "A title\n\n| k | err |\n|---|---|\n| 4 | 0.5 |\n| 8 | 0.25 |\n"
    assert pd.read_csv(rep.out / "t.csv")["err"].tolist() == [0.5, 0.25]
    assert (rep.out / "note.md").read_text() == "hello\n"
    assert rep.summary() == f"written to {rep.out}: f.png, f.pdf, t.csv, t.md, note.md"
    absolute = Report(tmp_path / "abs", root=root)
    assert absolute.out == tmp_path / "abs"


@pytest.mark.parametrize("kw, match", [({"quick": "yes"}, "quick='yes'"), ({"workers": 0}, "workers=0"),
                                       ({"workers": True}, "workers=True")])
def test_report_rejects_bad_parameters(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        Report(tmp_path / "o", root=_checkout(tmp_path), **kw)


def _km_preset(row):
    gpu = row.gpus[0]
    out = row.output.split("/")[-1]
    if row.input == "fp8*":
        return catalogue.preset(gpu, "fp8_e4m3", out, instruction="mma.sync")
    fmt = {"fp8": "fp8_e4m3", "fp16, bf16": "fp16", "tf19": "tf32"}[row.input]
    return catalogue.preset(gpu, fmt, out)


@pytest.mark.parametrize("row", KM_TABLE2, ids=lambda r: f"{r.input}-{r.output}-{r.gpus[0]}")
def test_feature_row_matches_khattak_mikaitis_table2(row):
    got = feature_row(_km_preset(row))
    assert got == {"prd_align": f"({row.align[0]},{row.align[1]})", "acc_out_prec": row.acc_out_bits,
                   "NFMA": row.n_fma, "final_rounding": row.final_rounding, "c_order": row.c_order,
                   "interleaving": "yes" if row.interleaving else "no"}


def test_feature_row_of_a_kind_without_alignment_window():
    assert feature_row(catalogue.preset("MI100", "fp16", "fp32")) == {
        "Table II features": "none: kind e-fdpa has no alignment window of F bits"}
