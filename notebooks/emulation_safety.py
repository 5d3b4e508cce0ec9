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
# # Where each FP64 emulation is safe (issue 51, item 3)
#
# Every emulation x unit pair on the same data: FP8 Ozaki-II and FP8 Ozaki-I on H100 wgmma,
# H100 mma.sync, B200, MI300X (FNUZ) and an idealised exact FP8 unit; integer Ozaki-II and
# Ozaki-I on the INT8 unit; numpy float64 as native DGEMM.  Errors are against the exact
# product (`workbench.numbers.exact.gemm`: the exact sum rounded once to float64).
#
# **Classes** (the threshold is on the componentwise error
# `eta = max_ij |D - C|_ij / (|A||B|)_ij`, the quantity native DGEMM bounds by `gamma_K ~ K u`,
# so it does not punish the emulation for the data's conditioning): **safe** `eta <= K 2^-53`
# (within native FP64 DGEMM's worst-case bound) and every unit GEMM was exact; **degraded**
# `eta <= 1e-8`; **wrong** above.  A fallback (the automatic count found no count covering
# the data, so native FP64 ran) is marked.  The figure draws the forward error
# `max_ij |D - C|_ij / |C_ij|`.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # small sizes, about a minute on 2 cores; False: the full experiment file
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (resumable), relative to the repository root
workers: int = 2  # local worker processes of the sweeps
k_values: Optional[list[int]] = None  # K of the map; None: the experiment file's (quick: 1024, 4096)
map_counts: Optional[list[str]] = None  # counts of the map; None: the file's (auto, max; quick: auto)

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workbench.studies.notebook_support import Report, parameter_list

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)
spec = rep.load_experiment("emulation_safety")
if quick:
    # the notebook's quick set: the experiment's [quick] inputs and K for the map at the automatic
    # count only, and a short count axis (12..15 moduli, phi = 0.5)
    q = spec.pop("quick")
    spec["grid"] = [g for g in spec["grid"] if not isinstance(g["params"], list)]
    for g in spec["grid"]:
        fixed_k = "k" in g
        if not fixed_k:
            g["k"] = q["k"]
        if "input" not in g:
            g["input"] = q["input"]
        counts = g["params"].get("count")
        if isinstance(counts, list) and fixed_k:
            g["params"]["count"] = [c for c in counts if c in (12, 13, 14, 15)] or ["auto"]
            g["input"] = {"generator": "gemmul8", "phi": 0.5, "round_to": "none"}
        elif isinstance(counts, list):
            g["params"]["count"] = ["auto"]
k_values = parameter_list("k_values", k_values)
map_counts = parameter_list("map_counts", map_counts, str)
for g in spec["grid"]:
    if not isinstance(g["params"], dict) or g["params"].get("count") is None:
        continue
    if "k" not in g or isinstance(g["k"], list):            # a map grid (the count grids fix k = 1024)
        if k_values is not None:
            g["k"] = list(k_values)
        if map_counts is not None:
            g["params"]["count"] = list(map_counts)
if k_values is not None:
    spec["defaults"]["k"] = list(k_values)                  # the native baseline's K too
df = rep.run_sweep("emulation_safety", spec)
bad = df[df["error"].notna()]
if len(bad):
    print(bad[["param.method", "unit", "k", "error"]].drop_duplicates("error").to_string())
ok = df[df["error"].isna()].copy()

# %%
UNIT = {"hopper/wgmma/fp8_e4m3->fp32": "H100 wgmma", "hopper/mma.sync/fp8_e4m3->fp32/mma.sync": "H100 mma.sync",
        "blackwell/tcgen05.mma/fp8_e4m3->fp32": "B200", "cdna3/mfma/fp8_e4m3fnuz->fp32": "MI300X",
        "ampere/mma.m16n8k32/s8->s32": "INT8 IMMA"}


def unit_label(u: object) -> str:
    if not isinstance(u, str) or not u:
        return "float64"
    if u.startswith("custom("):
        return "exact FP8"
    return UNIT.get(u, u.split("/")[0] + " " + u.split("/")[-1])


METHOD = {"ozaki2_fp8": "FP8 Ozaki-II", "ozaki1_fp8": "FP8 Ozaki-I", "ozaki2_int8": "INT8 Ozaki-II",
          "ozaki1_int8": "INT8 Ozaki-I", "native": "native FP64"}


def family(spec_: str) -> tuple[str, float]:
    """(input family, difficulty in decades or phi) of an input spec."""
    d = json.loads(spec_)
    g = d["generator"]
    if g == "gemmul8":
        return "gemmul8 phi", float(d["phi"])
    if g == "log_uniform":
        return "exponent span", float(d["high"] - d["low"])
    if g == "adversarial":
        return "condition", float(np.log10(d["condition"]))
    return "inner scaling", float(d["decades"])


ok["pair"] = ok["param.method"].map(METHOD) + " / " + ok["unit"].map(unit_label)
ok.loc[ok["param.method"] == "native", "pair"] = "native FP64"
ok[["family", "x"]] = pd.DataFrame(ok["input"].map(family).tolist(), index=ok.index)
U = 2.0**-53
ok["safe_bound"] = ok["k"] * U
DEGRADED = 1e-8
inexact = ok["emulation.unit_inexact_gemms"] > 0


def classify(r: pd.Series) -> str:
    if r["componentwise_error"] <= r["safe_bound"] and r["emulation.unit_inexact_gemms"] == 0:
        return "safe"
    return "degraded" if r["componentwise_error"] <= DEGRADED else "wrong"


ok["class"] = ok.apply(classify, axis=1)
ok["count_label"] = ok["param.count"].astype(str)
auto = ok[(ok["param.count"].astype(str) == "auto") | (ok["param.method"] == "native")]
print(f"{len(ok)} tasks; at the automatic count: {auto['class'].value_counts().to_dict()}")

# %% [markdown]
# ## The map (automatic count)

# %%
FAMILIES = [f for f in ("gemmul8 phi", "exponent span", "condition", "inner scaling") if f in set(ok["family"])]
pairs = sorted(set(auto["pair"]) - {"native FP64"}) + ["native FP64"]
COL = {"FP8 Ozaki-II": "tab:blue", "FP8 Ozaki-I": "tab:green", "INT8 Ozaki-II": "tab:purple",
       "INT8 Ozaki-I": "tab:brown", "native FP64": "k"}
LS = {"exact FP8": "-", "B200": "--", "H100 wgmma": ":", "H100 mma.sync": "-.", "MI300X": (0, (5, 1, 1, 1)),
      "INT8 IMMA": "-", "float64": "-"}
MK = {"exact FP8": "o", "B200": "s", "H100 wgmma": "v", "H100 mma.sync": "^", "MI300X": "D", "INT8 IMMA": "x",
      "float64": "."}
kmax = int(auto["k"].max())
fig, axes = plt.subplots(2, 4, figsize=(17, 8.5))
for j, fam in enumerate(FAMILIES):
    ax = axes[0, j]
    sub = auto[(auto["family"] == fam) & (auto["k"] == kmax)]
    for p in pairs:
        s = sub[sub["pair"] == p].groupby("x")["max_relative_error"].median().sort_index()
        if not len(s):
            continue
        meth, _, un = p.partition(" / ")
        ax.semilogy(s.index, np.maximum(s.values, 1e-17), color=COL[meth], ls=LS.get(un or "float64", "-"),
                    marker=MK.get(un or "float64", "."), ms=4, lw=1.2, label=p)
    ax.axhline(kmax * U, color="gray", lw=0.8, ls="--")
    ax.set_title(f"({chr(97 + j)}) {fam}, K = {kmax}, automatic count", fontsize=9)
    ax.set_xlabel("phi" if fam == "gemmul8 phi" else f"{fam}: log10")
    if j == 0:
        ax.set_ylabel("max relative error vs exact (0 drawn at 1e-17)")

# (e) the count axis beside GEMMul8's published B200 table
ax = axes[1, 0]
pub = pd.read_csv(rep.paper_data("paper_data/gemmul8_results07/b200_fp8_ozaki2_accurate_k1024.csv"))
ours = ok[(ok["param.method"] == "ozaki2_fp8") & (ok["k"] == 1024) & (ok["family"] == "gemmul8 phi")
          & ok["param.count"].map(lambda c: str(c).isdigit())].copy()
ours["moduli"] = ours["param.count"].astype(int)
rows = []
for phi in sorted(set(ours["x"])):
    prow = pub[(pub["phi"] == phi) & (pub["function"] == "OS2-accu")]
    for un, mk in (("B200", "s"), ("exact FP8", "o")):
        s = ours[(ours["x"] == phi) & (ours["unit"].map(unit_label) == un)].groupby("moduli")[
            "max_relative_error"].median()
        if len(s):
            line, = ax.semilogy(s.index, np.maximum(s.values, 1e-17), marker=mk, ms=4, lw=1,
                                label=f"ours {un}, phi={phi:g}")
            for n, v in s.items():
                pv = float(prow[str(n)].iloc[0]) if len(prow) and str(n) in prow else np.nan
                rows.append({"phi": phi, "unit": un, "moduli": int(n), "ours_max_rel": float(v),
                             "gemmul8_b200_max_rel": pv})
    if len(prow):
        cols = [c for c in prow.columns if c.isdigit()]
        ax.semilogy([int(c) for c in cols], prow[cols].iloc[0].values, "k*", ms=6, alpha=0.6,
                    label="GEMMul8 B200 (published)" if phi == sorted(set(ours["x"]))[0] else None)
ax.set_xlabel("moduli")
ax.set_ylabel("max relative error")
ax.set_title("(e) FP8 Ozaki-II, K = 1024: ours vs GEMMul8 results_07", fontsize=9)
ax.legend(fontsize=6)
compare = pd.DataFrame(rows)

# (f) Hopper: error against K, phi = 0.5, automatic count
ax = axes[1, 1]
sub = auto[(auto["family"] == "gemmul8 phi") & (auto["x"] == 0.5) & auto["param.method"].isin(["ozaki2_fp8",
                                                                                                  "ozaki1_fp8"])]
for p in sorted(set(sub["pair"])):
    s = sub[sub["pair"] == p].groupby("k")["componentwise_error"].median().sort_index()
    meth, _, un = p.partition(" / ")
    ax.loglog(s.index, np.maximum(s.values, 1e-20), color=COL[meth], ls=LS.get(un, "-"), marker=MK.get(un, "."),
              ms=4, lw=1.2, label=p)
ks = np.array(sorted(set(sub["k"])))
ax.loglog(ks, ks * U, "k--", lw=0.8, label="K 2^-53 (safe)")
ax.axhline(DEGRADED, color="r", lw=0.8, ls=":", label="1e-8 (degraded / wrong)")
ax.set_xlabel("K")
ax.set_ylabel("eta = max |D-C| / (|A||B|)")
ax.set_title("(f) the Hopper finding: wgmma's 13-bit sum breaks exactness", fontsize=9)
ax.legend(fontsize=6)

# (g) classes per pair and family (worst over K and difficulty, automatic count)
ax = axes[1, 2]
RANK = {"safe": 0, "degraded": 1, "wrong": 2}
grid_ = auto.assign(r=auto["class"].map(RANK)).groupby(["pair", "family"])["r"].max().unstack()
grid_ = grid_.reindex(index=pairs, columns=FAMILIES)
from matplotlib.colors import ListedColormap  # noqa: E402

ax.imshow(grid_.values.astype(float), cmap=ListedColormap(["#7fc97f", "#fdc086", "#e7298a"]), vmin=0, vmax=2,
          aspect="auto")
ax.set_xticks(range(len(FAMILIES)), FAMILIES, rotation=20, fontsize=7)
ax.set_yticks(range(len(pairs)), pairs, fontsize=7)
fb = auto.groupby(["pair", "family"])["emulation.fallback"].max().unstack().reindex(index=pairs, columns=FAMILIES)
for i in range(len(pairs)):
    for j in range(len(FAMILIES)):
        v = grid_.values[i, j]
        if np.isfinite(v):
            txt = ["safe", "degr.", "wrong"][int(v)] + (" (fb)" if fb.values[i, j] > 0 else "")
            ax.text(j, i, txt, ha="center", va="center", fontsize=6)
ax.set_title("(g) worst class over K and difficulty (fb: fallback ran)", fontsize=9)
axes[1, 3].axis("off")
handles, labels_ = axes[0, 0].get_legend_handles_labels()
axes[1, 3].legend(handles, labels_, loc="center", fontsize=7, title="emulation / unit")
fig.suptitle(f"Where FP64 emulation is safe: error vs the exact product (m = n = 16; "
             f"{'quick set' if quick else 'full experiment'})")
fig.tight_layout()
rep.save_fig(fig, "emulation_safety")
plt.show()

# %% [markdown]
# ## Tables: every pair at its automatic count; the classes; GEMMul8's numbers beside ours

# %%
cols = ["pair", "family", "x", "k", "emulation.count_auto", "emulation.count", "emulation.fallback",
        "emulation.unit_gemms", "emulation.unit_inexact_gemms", "max_relative_error", "componentwise_error",
        "safe_bound", "class"]
tab = auto[cols].sort_values(["pair", "family", "x", "k"]).rename(columns=lambda c: c.replace("emulation.", ""))
rep.save_table(tab, "emulation_safety", "Every emulation x unit pair at its automatic count: forward error "
               "(max_ij |D-C|/|C|) and eta = max_ij |D-C|/(|A||B|) against the exact product C; class safe: "
               "eta <= K 2^-53 and every unit GEMM exact; degraded: eta <= 1e-8; wrong: above "
               "(count -1: fallback to native FP64)")
summ = (auto.groupby("pair").agg(tasks=("class", "size"), safe=("class", lambda c: int((c == "safe").sum())),
                                 degraded=("class", lambda c: int((c == "degraded").sum())),
                                 wrong=("class", lambda c: int((c == "wrong").sum())),
                                 fallbacks=("emulation.fallback", lambda c: int(c.sum())),
                                 inexact_unit_gemms=("emulation.unit_inexact_gemms", "sum"),
                                 worst_eta=("componentwise_error", "max"),
                                 worst_forward=("max_relative_error", "max")).reset_index())
summ["verdict"] = np.where(summ["wrong"] > 0, "wrong somewhere",
                           np.where(summ["degraded"] > 0, "degraded somewhere", "safe"))
summ["thresholds"] = "safe: eta <= K 2^-53 & exact unit; degraded: eta <= 1e-8"
rep.save_table(summ, "emulation_safety_summary", "Safe / degraded / wrong per emulation x unit pair "
               "(automatic count, every input and K of the run)")
where_wrong = auto[auto["class"] == "wrong"].groupby("pair").agg(
    k_min=("k", "min"), families=("family", lambda f: ", ".join(sorted(set(f))))).reset_index()
print(summ.to_string())
print(where_wrong.to_string())
if len(compare):
    compare["ratio"] = compare["ours_max_rel"] / compare["gemmul8_b200_max_rel"]
    rep.save_table(compare, "emulation_safety_gemmul8", "FP8 Ozaki-II (accurate scaling), K = 1024, GEMMul8's "
                   "phi matrices: our max relative error (m = n = 16) beside GEMMul8's published B200 value "
                   "(GEMMul8_numerical_results results_07, OS2-accu; their matrix size is larger)")
    print(compare.to_string())

# %%
print(rep.summary())
