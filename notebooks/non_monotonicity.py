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
# # Non-monotonicity of unnormalised multi-operand sums (Fasi et al. 2021)
#
# Fasi et al.'s input: the products a_i b_i = 2^-24 and c = 1 - 2^-24 or c = 1.  Raising c to 1
# *lowers* d on units that align to the largest exponent with too few bits.  We run it on every
# chosen fp16 -> fp32 preset, then the same construction with products 2^-(F+1) for each unit's
# own F, and sweep c across the binade boundary.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # small sizes, seconds on 2 cores; False: the full set (see the next cell)
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # Parquet results of the sweeps (none here), relative to the repository root
workers: int = 2  # local worker processes of the sweeps (none here)
presets: Optional[list[str]] = None  # DEVICE:IN:OUT names; None: set below
search_budget: Optional[int] = None  # candidates of the randomised monotonicity search per unit; None: set below

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import workbench as wb
from workbench.units import catalogue
from workbench.discrimination import check_monotonicity
from workbench.studies.notebook_support import Report, parameter_list

QUICK = {"presets": ["V100:fp16:fp32", "A100:fp16:fp32", "H100:fp16:fp32", "MI100:fp16:fp32", "MI300X:fp16:fp32"],
         "search_budget": 1000}
FULL = {"presets": QUICK["presets"][:3] + ["T4:fp16:fp32", "L40S:fp16:fp32", "B200:fp16:fp32", "MI100:fp16:fp32",
                                           "MI250X:fp16:fp32", "MI300X:fp16:fp32"],
        "search_budget": 20000}
S = QUICK if quick else FULL
presets = parameter_list("presets", presets, str) or S["presets"]
search_budget = int(search_budget or S["search_budget"])
rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)

# %%
units = [catalogue.preset(*s.split(":")) for s in presets]
U24 = 2.0**-24


def d_of(model, c: float, prod_exp: int, n_terms: int) -> float:
    """d = c + n_terms products 2^prod_exp (zeros elsewhere) on ``model``."""
    ea = prod_exp // 2
    a = np.full((1, model.L), 2.0**ea)
    b = np.full((model.L, 1), 2.0 ** (prod_exp - ea))
    a[0, n_terms:] = 0.0
    return float(wb.gemm(a, b, np.array([[c]]), model=model)[0, 0])


def own_exponent(model) -> int:
    """Products 2^-(F+1): just below the last bit the unit keeps (2^-25, half an fp32 ulp of 1, where it has no F)."""
    return -25 if model.kind not in ("t-fdpa", "tr-fdpa", "gtr-fdpa") else -(model.F + 1)


rows = []
for m in units:
    row = {"preset": m.name, "kind": m.kind, "L": m.L, "F": m.F}
    lo, hi = d_of(m, 1 - U24, -24, min(4, m.L)), d_of(m, 1.0, -24, min(4, m.L))
    row.update({"fasi: (d-1)/2^-24 at c=1-2^-24": (lo - 1) / U24, "fasi: (d-1)/2^-24 at c=1": (hi - 1) / U24,
                "fasi: non-monotone": hi < lo})
    lo, hi = d_of(m, 1 - U24, own_exponent(m), m.L), d_of(m, 1.0, own_exponent(m), m.L)
    row.update({"L x 2^-(F+1): (d-1)/2^-24 at c=1-2^-24": (lo - 1) / U24,
                "L x 2^-(F+1): (d-1)/2^-24 at c=1": (hi - 1) / U24, "L x 2^-(F+1): non-monotone": hi < lo})
    rows.append(row)
mono = pd.DataFrame(rows)
rep.save_table(mono, "non_monotonicity", "Fasi et al. 2021: d = c + products (4 of 2^-24; L of 2^-(F+1)); "
               "non-monotone when d(c=1) < d(c=1-2^-24)")
print(mono.to_string())

# %%
# d - 1 (in units of 2^-24) as c moves across 1 in fp32 steps: a staircase that drops at c = 1.
steps = np.arange(-8, 9)
fig, axes = plt.subplots(1, len(units), figsize=(2.7 * len(units), 3.3), sharey=True, squeeze=False)
for ax, m in zip(axes[0], units):
    cs = [1.0 + (s * 2.0**-24 if s < 0 else s * 2.0**-23) for s in steps]
    x = [(c - 1) / U24 for c in cs]
    ds = [d_of(m, c, own_exponent(m), m.L) for c in cs]
    ax.plot(x, [(d - 1) / U24 for d in ds], "o-", ms=3, label="d computed by the unit")
    ax.plot(x, x, "k--", lw=0.8, label="d = c (the products lost)")
    f_text = f"F={m.F}" if m.kind in ("t-fdpa", "tr-fdpa", "gtr-fdpa") else "no F"
    ax.set_title(f"{m.devices[0]} ({m.kind}, {f_text})", fontsize=8)
    ax.set_xlabel("(c - 1) / 2^-24")
axes[0, 0].set_ylabel("(d - 1) / 2^-24")
axes[0, 0].legend(loc="upper left", fontsize=7)
fig.suptitle("d = c + L products of 2^-(F+1): non-monotone where d drops as c rises (Fasi et al. 2021)")
fig.tight_layout()
rep.save_fig(fig, "non_monotonicity")
plt.show()

# %%
# A randomised search for monotonicity violations (workbench.discrimination.check_monotonicity)
rep_rows = []
for m in units:
    r = check_monotonicity(m, budget=search_budget)
    rep_rows.append({"preset": m.name, "holds": r.holds, "explanation": r.explanation, "checked": r.checked})
rep.save_table(pd.DataFrame(rep_rows), "monotonicity_search", "Randomised search for monotonicity violations")
print(pd.DataFrame(rep_rows).to_string())

# %%
print(rep.summary())
