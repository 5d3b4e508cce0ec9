# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Khattak & Mikaitis (2025) Figure 7: multi-word GEMM on tensor-core models
#
# Each curve is a sweep of `experiments/fig7_multiword.toml` (resumed from `sweep_dir` when
# already run) beside the published data of the paper.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # small sizes, minutes on 2 cores; False: the full set (see the next cell)
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (resumable), relative to the repository root
workers: int = 2  # local worker processes of the sweeps
paper_data: str = "paper_data/khattak2025_fig7"  # the published data (repository root, else the package's copy)
k_values: Optional[list[int]] = None  # None: the experiment file ([quick] k, or the 20 values of n)

# %%
# full: quick = False runs the 20 values of n = floor(logspace(1, 6, 20)) up to 10^6 (minutes on 2 cores)
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from workbench.studies.notebook_support import Report, parameter_list

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)
k_values = parameter_list("k_values", k_values)
print("quick" if quick else "full", "set; k_values =", k_values)

# %% [markdown]
# Read the sweep and the published data.

# %%
spec = rep.load_experiment("fig7_multiword")
spec.setdefault("quick", {})
if k_values is not None:
    spec["defaults"]["k"] = list(k_values)
    spec["quick"]["k"] = list(k_values)
df = rep.run_sweep("fig7_multiword", spec)
errs = df[df["error"].notna()]
if len(errs):
    raise RuntimeError(f"{len(errs)} sweep tasks failed:\n{errs[['preset', 'in_format', 'k', 'error']].head()}")
variant = df["variant"] if "variant" in df else pd.Series(None, index=df.index, dtype=object)
df["model"] = np.where(variant == "rn", "b200rn", df["preset"].str.lower())  # B200-RN: the B200 "rn" variant
df["words"] = df["param.words"].astype(int)
PAPER = rep.paper_data(paper_data)
if not PAPER.is_dir():
    raise FileNotFoundError(f"published Figure 7 data folder {PAPER} not found")
PAPER_FMT = {"fp16": "binary16", "bf16": "bfloat16", "fp8_e5m2": "fp8-e5m2"}


def paper_curve(fmt: str, words: int, model: str) -> pd.DataFrame | None:
    """The published curve of one panel and model (None where the paper has none)."""
    f = PAPER / f"matmul_test_{PAPER_FMT[fmt]}_binary32_words_{words}_model_{model}.csv"
    return pd.read_csv(f) if f.exists() else None


# %% [markdown]
# ## Figure 7: 3x3 panels (rows: input format; columns: number of words)
#
# Solid lines and filled markers: this workbench; dotted lines with open markers: the
# published data (Khattak & Mikaitis 2025, MATLAB models); dashed black: bound (3.26) of
# Mary & Mikaitis.

# %%
ROWS = [("fp8_e5m2", "fp8 E5M2", (1, 4, 6)), ("fp16", "fp16", (1, 2, 3)), ("bf16", "bf16", (1, 2, 3))]
LABEL = {"v100": "V100", "a100": "A100", "h100": "H100/H200", "l40s": "L40S", "b200": "B200", "b200rn": "B200-RN"}
COLOUR = {"v100": "tab:purple", "a100": "tab:blue", "h100": "tab:orange", "l40s": "tab:green",
          "b200": "tab:red", "b200rn": "tab:brown"}
MARKER = {"v100": "v", "a100": "o", "h100": "s", "l40s": "D", "b200": "^", "b200rn": "x"}
fig, axes = plt.subplots(3, 3, figsize=(12.5, 10.5), sharex=True)
rows = []
for i, (fmt, fmt_label, word_list) in enumerate(ROWS):
    for j, p in enumerate(word_list):
        ax = axes[i, j]
        sub = df[(df["in_format"] == fmt) & (df["words"] == p)]
        for model in [m for m in LABEL if m in set(sub["model"])]:
            ours = sub[sub["model"] == model].sort_values("k")
            ax.loglog(ours["k"], ours["normwise_inf"], "-", marker=MARKER[model], ms=4, color=COLOUR[model])
            pub = paper_curve(fmt, p, model)
            if pub is not None:
                ax.loglog(pub["n"], pub["error"], ":", marker=MARKER[model], ms=4, mfc="none", color=COLOUR[model],
                          alpha=0.8)
                merged = ours.merge(pub, left_on="k", right_on="n", how="left")
            else:
                merged = ours.assign(error_y=np.nan, bound=np.nan)
            for r in merged.itertuples(index=False):
                rows.append({"in_format": fmt, "words": p, "model": LABEL[model], "n": int(r.k),
                             "error_ours": r.normwise_inf, "error_paper": getattr(r, "error_y", np.nan),
                             "bound_ours": r.multiword_bound, "bound_paper": r.bound})
        bound = sub.drop_duplicates("k").sort_values("k")
        ax.loglog(bound["k"], bound["multiword_bound"], "k--", lw=1.2)
        ax.set_title(f"({'abcdefghi'[3 * i + j]}) {fmt_label}, {p} word{'s' if p > 1 else ''}")
        if i == 2:
            ax.set_xlabel("n (inner dimension)")
        if j == 0:
            ax.set_ylabel(r"$\|C-\widehat{C}\|_\infty / (\|A\|_\infty\|B\|_\infty)$")
handles = [Line2D([], [], color=COLOUR[m], marker=MARKER[m], label=LABEL[m]) for m in LABEL]
handles += [Line2D([], [], color="gray", ls="-", marker="o", label="this workbench"),
            Line2D([], [], color="gray", ls=":", marker="o", mfc="none", label="Khattak & Mikaitis (published)"),
            Line2D([], [], color="k", ls="--", label="bound (3.26)")]
fig.legend(handles=handles, loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.04))
fig.suptitle("Multi-word matrix products on tensor-core models (Khattak & Mikaitis 2025, Figure 7)")
fig.tight_layout()
rep.save_fig(fig, "fig7_multiword")
plt.show()

# %%
table = pd.DataFrame(rows)
table["ratio_ours_to_paper"] = table["error_ours"] / table["error_paper"]
table["below_bound"] = table["error_ours"] <= table["bound_ours"]
rep.save_table(table, "fig7_multiword",
               "Figure 7 (Khattak & Mikaitis 2025): normwise errors, ours vs published, and bound (3.26)")


def geometric_mean(r: pd.Series) -> float:
    """Geometric mean of the ratios present (NaN when none)."""
    r = r.dropna()
    return float(np.exp(np.log(r).mean())) if len(r) else np.nan


summary = (table.groupby(["in_format", "words", "model"], sort=False)
           .agg(points=("n", "size"), geomean_ratio=("ratio_ours_to_paper", geometric_mean),
                max_error=("error_ours", "max"), all_below_bound=("below_bound", "all"))
           .reset_index())
bd = table.dropna(subset=["bound_paper"])
rel = (bd["bound_ours"] - bd["bound_paper"]).abs() / bd["bound_paper"]
summary["max_bound_rel_diff"] = float(rel.max()) if len(rel) else np.nan
rep.save_table(summary, "fig7_summary", "Figure 7 summary: geometric mean of ours/published errors per curve")
print(summary.to_string())

# %%
print(rep.summary())
