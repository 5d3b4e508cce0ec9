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
# # MMA-Sim Figure 3: CDNA3 round-down bias vs a round-to-zero twin
#
# delta = D - D_exact over 32x32x8 instructions with A, B ~ 1000 N(0,1) (fp16) and C ~ N(0,1)
# (fp32); left: MI300X (RD inside), right: the same unit with RZ inside - the preset variant
# `workbench.preset("MI300X", "fp16", "fp32", variant="rz")` (engine parameter
# `alignment_rounding="rz"`), a hypothetical unit, not a real device.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # small sizes, minutes on 2 cores; False: 200 instructions per unit
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (resumable), relative to the repository root
workers: int = 2  # local worker processes of the sweeps
seeds: Optional[int] = None  # instructions per unit; None: the experiment file (quick 10, full 200)

# %%
# full: quick = False runs 200 instructions per unit (MMA-Sim used many more; 200 x 1024 errors)
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.studies.notebook_support import Report

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)

# %%
spec = rep.load_experiment("cdna3_rounding_bias")
if seeds is not None:
    spec["defaults"]["seed"] = {"start": 0, "stop": int(seeds)}
    spec.setdefault("quick", {})["seed"] = {"start": 0, "stop": int(seeds)}
df = rep.run_sweep("cdna3_rounding_bias", spec)
bad = df[df["error"].notna()]
if len(bad):
    raise RuntimeError(f"{len(bad)} of {len(df)} tasks failed: {bad['error'].iloc[0].splitlines()[0][:300]}")
# the CDNA3 preset and its round-toward-zero twin (variant "rz": alignment_rounding = "rz")
UNITS = ["MI300X (RD inside)", "hypothetical RZ inside"]
df["unit"] = np.where(df["variant"] == "rz", UNITS[1], UNITS[0])
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
stats = []
for panel, (ax, unit, col) in enumerate(zip(axes, UNITS, ["tab:red", "tab:blue"])):
    sub = df[df["unit"] == unit]
    d = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in sub["signed_errors"]])
    lim = np.quantile(np.abs(d), 0.995)
    ax.hist(d, bins=61, range=(-lim, lim), color=col, alpha=0.8, label=f"{d.size} errors")
    ax.axvline(0, color="k", lw=0.8, label="no error")
    ax.axvline(d.mean(), color="k", ls="--", lw=1.2, label=f"mean {d.mean():.3g}")
    ax.set_title(f"({'ab'[panel]}) {unit}")
    ax.set_xlabel(r"$\delta = D - D_{exact}$")
    ax.legend()
    stats.append({"unit": unit, "instructions": len(sub), "errors": d.size, "mean": d.mean(), "median": np.median(d),
                  "std": d.std(), "share_negative": float((d < 0).mean()), "share_positive": float((d > 0).mean())})
axes[0].set_ylabel("count")
fig.suptitle("Rounding bias of CDNA3 v_mfma_f32_32x32x8_f16 (MMA-Sim Figure 3)")
fig.tight_layout()
rep.save_fig(fig, "cdna3_rounding_bias")
plt.show()
st = pd.DataFrame(stats)
rep.save_table(st, "cdna3_rounding_bias", "Signed errors of CDNA3 fp16 MFMA (RD inside) and its RZ twin")
print(st.to_string())

# %%
print(rep.summary())
