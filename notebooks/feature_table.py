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
# # Feature tables from the presets: Khattak & Mikaitis Table II, MMA-Sim Table 4

# %% tags=["parameters"]
quick: bool = True  # no sizes here: quick and full are the same
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (none here), relative to the repository root
workers: int = 2  # local worker processes of the sweeps (none here)

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.units import catalogue
from workbench.studies.notebook_support import Report, feature_row

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)

# %% [markdown]
# ## Khattak & Mikaitis Table II, generated from the presets
#
# Product alignment (2, F); accumulator output precision 2 + F + ceil(log2(N_FMA + 1))
# (the carry bits of N_FMA + 1 addends); N_FMA = L / interleave; final rounding
# (RZ = Trunc; with c added late, the rounding of that addition); c order; interleaving.

# %%
KM_IN = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf19", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}
NVIDIA = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "rtx-blackwell")
rows = []
for r in catalogue.records():
    if r.architecture not in NVIDIA or r.kind != "t-fdpa" or r.in_format not in KM_IN or r.variant == "rn":
        continue
    if r.instruction == "mma.m8n8k4" and r.architecture == "turing":
        continue
    fin = KM_IN[r.in_format] + ("*" if r.instruction == "mma.sync" and r.in_format.startswith("fp8") else "")
    if fin in ("fp16", "bf16", "tf19") and r.out_format != "fp32":
        continue  # Table II lists fp32 output for these (fp16 output: RNE, in its note)
    rows.append({"input": fin, "output": r.out_format, "architecture": r.architecture, "devices": ", ".join(r.devices),
                 **feature_row(r), "instruction": r.instruction})
t = pd.DataFrame(rows)
feat = ["architecture", "devices", "prd_align", "acc_out_prec", "NFMA", "final_rounding", "c_order", "interleaving",
        "instruction"]
# merge input formats with identical features (fp16, bf16; fp8 E4M3/E5M2) and fp8* outputs (fp16/fp32)
PREF = ["fp8", "fp8*", "fp16", "bf16", "tf19"]
t = (t.groupby(["output"] + feat, sort=False)["input"]
     .agg(lambda s: ", ".join(sorted(set(s), key=PREF.index))).reset_index())
t = (t.groupby(["input"] + feat, sort=False)["output"].agg(lambda s: "/".join(sorted(set(s))))
     .reset_index())
order = {"fp8": 0, "fp8*": 1, "fp16, bf16": 2, "fp16": 2, "bf16": 2, "tf19": 3}
t = t.sort_values(["input", "architecture"], key=lambda s: s.map(order).fillna(9) if s.name == "input"
                  else s.map({a: -i for i, a in enumerate(NVIDIA)})).reset_index(drop=True)
km = t[["input", "output", "devices", "prd_align", "acc_out_prec", "NFMA", "final_rounding", "c_order",
        "interleaving", "architecture", "instruction"]]
rep.save_table(km, "feature_table_km_table2", "Khattak & Mikaitis 2025 Table II, generated from the workbench presets")
print(km.to_string())

# %% [markdown]
# ## MMA-Sim Table 4 (T-FDPA / ST-FDPA parameters) and the AMD Tables 6-7

# %%
XIE_IN = {"tf32": "TF32", "bf16": "BF16", "fp16": "FP16", "fp8_e4m3": "FP8", "fp8_e5m2": "FP8", "fp6_e2m3": "FP6",
          "fp6_e3m2": "FP6", "fp4_e2m1": "FP4"}
rows = []
for r in catalogue.records():
    if r.architecture not in NVIDIA or r.kind not in ("t-fdpa", "st-fdpa") or not r.default and r.variant != "mx":
        continue
    if r.in_format not in XIE_IN:
        continue
    rho = f"{r.rounding.upper()}-{(r.result_format or r.out_format).upper()}"
    name = ("MX" if r.kind == "st-fdpa" else "") + XIE_IN[r.in_format]
    rows.append({"architecture": r.architecture, "input": name, "output": r.out_format.upper(), "L_max": r.L,
                 "F": r.F, "rho": rho, "kind": r.kind})
x = pd.DataFrame(rows).drop_duplicates()
x = (x.groupby(["architecture", "kind", "output", "L_max", "F", "rho"], sort=False)["input"]
     .agg(lambda s: "/".join(dict.fromkeys(s)).replace("FP8/FP6/FP4", "FP8/6/4").replace("MXFP8/MXFP6/MXFP4",
                                                                                        "MXFP8/6/4"))
     .reset_index())[["architecture", "input", "output", "L_max", "F", "rho"]]
rep.save_table(x, "feature_table_mmasim_table4", "MMA-Sim (Xie et al. 2025) Table 4, generated from the presets")
print(x.to_string())
allp = pd.DataFrame(list(catalogue.presets()))
# each preset's parameters as its kind reads them (catalogue.read_parameters); the others left blank
read = {r.name: catalogue.read_parameters(r) for r in catalogue.records()}
params = ["L", "F", "F2", "P", "G", "rounding", "result_format", "c_position", "late_rounding", "interleave",
          "zero_exponent", "flush_subnormals", "pair_rule"]
for c in params:
    if c in allp:
        allp[c] = [v if c in read[n] else None for n, v in zip(allp["name"], allp[c])]
cols = [c for c in ["name", "devices", "kind", *params, "default"] if c in allp]
rep.save_table(allp[cols], "feature_table_all_presets", "Every preset of the workbench (architecture parameters)")

# %% [markdown]
# ## The fp16 -> fp32 units by generation
#
# (a) the fraction bits F kept when the products are aligned to the largest exponent (T-FDPA;
# CDNA3's TR-FDPA also re-aligns the group sums with F2 bits); CDNA1's E-FDPA adds its
# products exactly and CDNA2's FTZ-AddMul adds pairs in fp32, so neither has an F.
# (b) the block size L: products fused in one step before the accumulator is rounded
# (FTZ-AddMul has none: it adds P = 4 products in a tree of fp32 additions).

# %%
units = [catalogue.preset(d, "fp16", "fp32")
         for d in ("V100", "T4", "A100", "L40S", "H100", "B200", "MI100", "MI250X", "MI300X")]
labels = [f"{r.devices[0]}\n{r.kind}" for r in units]
x = np.arange(len(units))
HAS_F = ("t-fdpa", "tr-fdpa", "gtr-fdpa")
NO_F = {"e-fdpa": "no F:\nexact\nsum", "ftz-addmul": "no F:\nfp32\nadds"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
for xi, r in zip(x, units):
    two = r.kind in ("tr-fdpa", "gtr-fdpa")
    if r.kind in HAS_F:
        xf = xi - 0.2 if two else xi
        ax1.bar(xf, r.F, width=0.4 if two else 0.6, color="tab:blue", label="F: product alignment" if xi == 0 else None)
        ax1.text(xf, r.F + 0.4, str(r.F), ha="center", fontsize=7)
    if two:
        ax1.bar(xi + 0.2, r.F2, width=0.4, color="tab:cyan", label="F2: group-sum re-alignment (TR-FDPA)")
        ax1.text(xi + 0.2, r.F2 + 0.4, str(r.F2), ha="center", fontsize=7)
    if r.kind in NO_F:
        ax1.text(xi, 1, NO_F[r.kind], ha="center", va="bottom", fontsize=7, color="dimgray")
ax1.set_ylim(0, 36)
ax1.set_ylabel("fraction bits")
ax1.set_title("(a) alignment precision F (fraction bits kept)")
ax1.legend(loc="upper left")
L = np.array([r.L if r.kind != "ftz-addmul" else np.nan for r in units], dtype=float)
ax2.bar(x, L, color="tab:orange", label="L: products per fused step")
for xi, r in zip(x, units):
    if r.kind == "ftz-addmul":
        ax2.text(xi, 0.3, f"no L:\ntree of\nP = {r.P}", ha="center", va="bottom", fontsize=7, color="dimgray")
    else:
        ax2.text(xi, r.L + 0.2, str(r.L), ha="center", fontsize=7)
ax2.set_ylim(0, 18)
ax2.set_ylabel("products per fused step")
ax2.set_title("(b) block size L")
ax2.legend(loc="upper left")
for ax in (ax1, ax2):
    ax.set_xticks(x, labels)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("device (fp16 inputs, fp32 output) and its elementary operation")
    ax.grid(axis="x", visible=False)
fig.suptitle("fp16 -> fp32 matrix units by generation (presets; Xie et al. 2025 Tables 4, 6-7)")
fig.tight_layout()
rep.save_fig(fig, "feature_table")
plt.show()

# %%
print(rep.summary())
