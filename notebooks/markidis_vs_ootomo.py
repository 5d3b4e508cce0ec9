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
# # Markidis vs Ootomo-Yokota on Volta/Ampere/Hopper tensor-core models
#
# fp32 matrix products recovered from fp16 tensor cores: Markidis et al. (2018) split each
# fp32 input into two fp16 words and multiply them on the unit; Ootomo & Yokota (2022) scale
# the low word by 2^11 and accumulate outside the unit.  Errors are against the exact
# product.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # small sizes, minutes on 2 cores; False: the full set (see the next cell)
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (resumable), relative to the repository root
workers: int = 2  # local worker processes of the sweeps
presets: Optional[list[str]] = None  # devices (their fp16 -> fp32 presets); None: set below
k_values: Optional[list[int]] = None  # None: the experiment file (quick: k in 16, 256, 4096; full: up to 16384)
worse_preset: str = "A100"  # unit of the Table 5-style search
worse_budget: Optional[int] = None  # candidate dot products of find_worse; None: set below

# %%
import json
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import algorithms
import workbench as wb
from workbench.studies.notebook_support import Report, parameter_list

QUICK = {"presets": ["V100", "A100", "H100"], "worse_budget": 5000}
FULL = {"presets": ["V100", "T4", "A100", "L40S", "H100", "B200"], "worse_budget": 200000}
S = QUICK if quick else FULL
presets = parameter_list("presets", presets, str) or S["presets"]
k_values = parameter_list("k_values", k_values)
worse_budget = int(worse_budget or S["worse_budget"])
rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)

# %% [markdown]
# ## Errors over n and exponent ranges (sweep `markidis_vs_ootomo`, extended to several presets)
#
# `native fp16`: the fp32 inputs rounded to fp16 and one tensor-core product (the one-word
# `multiword` without scaling); `numpy fp32`: an SGEMM stand-in.  The error drawn is the
# **max relative error** `max_ij |D_ij - C_ij| / |C_ij|` of the computed D against the exact
# product C (0/0 counts as 0), the median over the seeds.

# %%
spec = rep.load_experiment("markidis_vs_ootomo")
base = dict(spec["grid"][0])
# The experiment file names the algorithms "ootomo" and "native"; the registry knows "ootomo_yokota", and
# the native product is the unscaled one-word multiword.  Map them (and extend to the chosen presets).
ALG = {"markidis": ("markidis", {}), "ootomo": ("ootomo_yokota", {}),
       "native": ("multiword", {"words": 1, "scaling": False})}
grids = []
for name in base["algorithm"] if isinstance(base["algorithm"], list) else [base["algorithm"]]:
    alg, params = ALG.get(name, (name, {}))
    if alg not in algorithms.ALGORITHMS:
        raise KeyError(f"algorithm {alg!r} of experiments/markidis_vs_ootomo.toml is not in algorithms.ALGORITHMS")
    g = {k: v for k, v in base.items() if k not in ("algorithm", "preset")}
    g.update(algorithm=alg, preset=list(presets))
    if params:
        g["params"] = params
    grids.append(g)
spec["grid"] = grids + spec["grid"][1:]
if k_values is not None:
    spec["defaults"]["k"] = list(k_values)
    spec.setdefault("quick", {})["k"] = list(k_values)
df = rep.run_sweep("markidis_vs_ootomo", spec)
ok = df[df["error"].isna()].copy()
ok["label"] = ok["algorithm"].map({"markidis": "Markidis", "ootomo_yokota": "Ootomo-Yokota",
                                   "multiword": "native fp16", "numpy": "numpy fp32"})


def range_label(spec_: str | dict) -> str:
    """The exponent range of an input generator's spec, as a panel title."""
    d = json.loads(spec_) if isinstance(spec_, str) else spec_
    return d.get("type") or f"e in [{d['emin']}, {d['emax']}]"


def range_emax(spec_: str | dict) -> int:
    """Largest input exponent of a generator's spec (Ootomo-Yokota's type1: -15..14)."""
    d = json.loads(spec_) if isinstance(spec_, str) else spec_
    return 14 if d.get("type") == "type1" else int(d["emax"])


ok["range"] = ok["input"].map(range_label)
EMAX = dict(zip(ok["range"], ok["input"].map(range_emax)))

# %%
ranges = list(dict.fromkeys(ok["range"]))
pres = [p for p in presets if p in set(ok["preset"].dropna())]
STYLE = {"Markidis": ("tab:blue", "o"), "Ootomo-Yokota": ("tab:red", "s"), "native fp16": ("tab:gray", "^"),
         "numpy fp32": ("k", "x")}
FP16_EMAX = wb.format("fp16").emax
fig, axes = plt.subplots(len(pres), len(ranges), figsize=(3.3 * len(ranges), 2.9 * len(pres)), sharex=True,
                         squeeze=False)
for i, p in enumerate(pres):
    for j, rg in enumerate(ranges):
        ax = axes[i, j]
        sub = ok[(ok["range"] == rg) & ((ok["preset"] == p) | (ok["algorithm"] == "numpy"))]
        lost = []
        for lab, (col, mk) in STYLE.items():
            if lab not in set(sub["label"]):
                continue
            s = sub[sub["label"] == lab].groupby("k")["max_relative_error"].median()
            s = s[np.isfinite(s) & (s > 0)]
            if len(s):
                ax.loglog(s.index, s.values, "-", color=col, marker=mk, ms=4, label=lab)
            else:
                lost.append(lab)
        if lost:
            why = (f"fp16 words overflow:\ninputs up to 2^{EMAX[rg]}, fp16 max < 2^{FP16_EMAX + 1}"
                   if EMAX[rg] > FP16_EMAX else "no finite error")
            ax.text(0.5, 0.5, f"{' and '.join(lost)}:\nno curve ({why})", transform=ax.transAxes, ha="center",
                    va="center", fontsize=7, color="tab:red", bbox={"fc": "w", "ec": "tab:red", "alpha": 0.9})
        ax.axhline(2.0**-24, color="k", ls="--", lw=1, label="u fp32 = 2^-24")
        ax.set_title(f"({chr(97 + i * len(ranges) + j)}) {p}, {rg}", fontsize=8)
        if i == len(pres) - 1:
            ax.set_xlabel("k (inner dimension)")
        if j == 0:
            ax.set_ylabel(r"max relative error $\max_{ij} |D-C|_{ij}/|C_{ij}|$")
handles, labels_ = [], []
for ax in axes.ravel():
    for h, lab in zip(*ax.get_legend_handles_labels()):
        if lab not in labels_:
            handles.append(h)
            labels_.append(lab)
fig.legend(handles, labels_, loc="lower center", ncol=len(labels_), bbox_to_anchor=(0.5, -0.03))
fig.suptitle("fp32 GEMM emulated on fp16 tensor cores: Markidis vs Ootomo-Yokota (median over seeds)")
fig.tight_layout()
rep.save_fig(fig, "markidis_vs_ootomo")
plt.show()
tab = (ok.groupby(["preset", "range", "label", "k"], dropna=False)[["max_relative_error", "mean_relative_error",
                                                                   "normwise_inf"]].median().reset_index())
rep.save_table(tab, "markidis_vs_ootomo", "Markidis vs Ootomo-Yokota: median errors over seeds (max relative error: "
               "max_ij |D - C|_ij / |C_ij| against the exact product C)")

# %% [markdown]
# ## A Table 5-style input where Ootomo-Yokota loses (Valpey et al. 2025), step by step

# %%
model = wb.preset(worse_preset, "fp16", "fp32")
t0 = time.time()
worse = wb.find_worse("ootomo_yokota", "markidis", model, budget=worse_budget, seed=0)
print(f"find_worse: {time.time() - t0:.1f} s")
print(worse if worse is not None else "no input found within the budget")
if worse is not None:
    rep.save_table(pd.DataFrame({"k": range(len(worse.a)), "a": worse.a, "b": worse.b}), "table5_input",
                   f"Input where Ootomo-Yokota ({worse.out_x!r}, error {float(worse.err_x):.3g}) is less accurate "
                   f"than Markidis ({worse.out_y!r}, error {float(worse.err_y):.3g}); c = {worse.c!r}, exact = "
                   f"{float(worse.exact)!r}, on {worse_preset}")

# %%
if worse is not None:
    # the O-Y large product A_hi B_hi of this dot product inside the unit
    a_hi = np.asarray(wb.round(worse.a, "fp16"), dtype=np.float64)
    b_hi = np.asarray(wb.round(worse.b, "fp16"), dtype=np.float64)
    text = str(wb.explain(a_hi, b_hi, 0.0, model))
    print(text)
    rep.save_text("table5_explanation.md", "Step-by-step trace of the unit on A_hi B_hi of the Table 5-style "
                  "input (workbench.explain)\n\n```\n" + text + "\n```\n")

# %%
print(rep.summary())
