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
# # The quantisers' discrepancy table (issue 52)
#
# Block-scale rounding is where deployed libraries disagree (ml_dtypes #298 / PR #398, onnx PR
# #7784, ROCm/FlyDSL PR #590, torchao PR #1643). On the scale-rounding suite
# (`workbench.conformance.scales`: blocks at and around powers of two, around the element maximum,
# at the EVEN rule's carry, at E8M0 cast ties, zero, subnormal-only, NaN and Inf blocks; NVFP4 cases
# with tensor-scale overflow and underflow), each library's MX quantiser is compared with OCP MX
# v1.0 Section 6.3 and its named rules as the workbench implements them (the reference is itself
# checked against the rules written out in `tests/test_scale_suite.py`), and NVFP4 with NVIDIA's
# recipe. Per rule and element: the share of blocks where the library gives the same E8M0 scale and
# the same elements, its first disagreeing block, and what the disagreements do to a GEMM's
# error on the Blackwell block-scaled preset of that element.
#
# Libraries: torchao (`to_mx`, `ScaleCalculationMode`), pychop (`MXTensor_`, the floor rule
# only), ml_dtypes (no quantiser: the scale by its round-to-nearest cast of amax / max_elem to
# `float8_e8m0fnu`, elements by its casts, which do not saturate - compared with every rule) and
# MMA-Sim 2.1.1 (it takes scales, it does not compute them: its decoding of the scale bytes).

# %% tags=["parameters"]
quick: bool = True  # quick: 24 GEMM rows per disagreement; False: 128
out_dir: str = "figures"  # figures PNG+PDF and tables CSV+Markdown, relative to the repository root
sweep_dir: str = "results/sweeps"  # unused here (no sweep file); kept for workbench reproduce
workers: int = 2  # unused here (one process)
seed: int = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import workbench
from workbench.conformance import libraries as libs
from workbench.conformance import scales
from workbench.numbers import formats
from workbench.studies.notebook_support import Report

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)
gemm_rows = 24 if quick else 128


def available(fn, *args):
    """The library's result, or the reason it is missing."""
    try:
        return fn(*args)
    except ImportError as exc:
        return f"not installed ({exc.name})"


def exponents(bits: np.ndarray) -> np.ndarray:
    return np.where(bits == 255, np.nan, bits.astype(np.float64) - 127)


def gemm_error(x, el, e, rows, element, rule, rng) -> float:
    """Median relative error of the block-scaled GEMM (Blackwell preset) of the quantised
    blocks x[rows] (elements el, scale exponents e) times a random B quantised by the reference."""
    unit = workbench.preset("B200", element, "fp32", variant="mx")
    B = rng.standard_normal((32, 16)).T.copy()
    qb = workbench.numbers.blockscale.quantize_mx(B, element, rule, (1, 32))
    exact = x[rows] @ B.T
    D = workbench.gemm(el[rows], qb.elements.T, model=unit, scale_a=np.exp2(e[rows])[:, None],
                       scale_b=qb.scales.T)
    with np.errstate(all="ignore"):
        rel = np.abs(D - exact) / np.abs(exact)
    return float(np.nanmedian(np.where(np.isfinite(rel), rel, np.inf))) if rel.size else float("nan")


# %%
rows = []
rng = np.random.default_rng(seed)
for element in scales.ELEMENTS:
    x, group = scales.mx_blocks(element, seed)
    amax = np.max(np.abs(np.where(np.isnan(x), 0, x)), axis=1)
    finite = np.isfinite(x).all(axis=1) & (amax > 2.0 ** -60) & (amax < 2.0 ** 60)
    cast = available(libs.ml_dtypes_mx, x, element)
    for rule in scales.RULES:
        ref_bits, ref_el_bits = scales.mx_expected(x, element, rule)
        ref_e, ref_el = exponents(ref_bits), formats.from_bits(ref_el_bits, element)
        mmasim = available(libs.mmasim_scale_values, ref_bits, "e8m0")
        results = {"torchao": available(libs.torchao_mx, x, element, rule),
                   "pychop": available(libs.pychop_mx, x, element) if rule == "floor" else "floor rule only",
                   "ml_dtypes (cast)": cast}
        for lib, res in results.items():
            row = {"library": lib, "scheme": "MX", "rule": rule, "element": element, "blocks": x.shape[0]}
            if isinstance(res, str):
                rows.append({**row, "agree %": None, "first disagreement": res})
                continue
            e, el = res
            ok = ((e == ref_e) | (np.isnan(e) & np.isnan(ref_e))) & libs.same_values(el, ref_el)
            bad = np.flatnonzero(~ok)
            first = "-"
            if bad.size:
                i = bad[0]
                first = (f"{scales.MX_GROUPS[group[i]]}: amax {float(amax[i]).hex()}, scale 2^{ref_e[i]:g} "
                         f"(OCP) vs 2^{e[i]:g}" + ("; elements differ" if e[i] == ref_e[i] else ""))
                counts = pd.Series([scales.MX_GROUPS[g] for g in group[bad]]).value_counts()
                first += " (groups: " + ", ".join(f"{g} {n}" for g, n in counts.items()) + ")"
            sel = bad[finite[bad] & ~np.isnan(e[bad])][:gemm_rows]
            err_ref = gemm_error(x, ref_el, ref_e, sel, element, rule, np.random.default_rng(seed)) if sel.size else None
            err_lib = gemm_error(x, el, e, sel, element, rule, np.random.default_rng(seed)) if sel.size else None
            rows.append({**row, "agree %": 100.0 * ok.mean(), "disagree": int(bad.size), "first disagreement": first,
                         "GEMM rel. err. OCP": err_ref, "GEMM rel. err. library": err_lib})
        if not isinstance(mmasim, str):
            ok = libs.same_values(mmasim[:, None], libs.e8m0_values(ref_bits)[:, None])
            rows.append({"library": "MMA-Sim (scale decode)", "scheme": "MX", "rule": rule, "element": element,
                         "blocks": x.shape[0], "agree %": 100.0 * ok.mean(), "disagree": int((~ok).sum()),
                         "first disagreement": "-" if ok.all() else f"byte {int(ref_bits[~ok][0]):#04x}"})

# %% [markdown]
# ## NVFP4: two-level scales (UE4M3 under an fp32 tensor scale)
#
# torchao's `nvfp4_quantize` has 1x16 blocks only; the 16x16 weight blocks are the workbench's
# (checked against the recipe written out in `tests/test_scale_suite.py`). MMA-Sim reads UE4M3
# bytes with the sign bit dropped.

# %%
for block in ("1x16", "16x16"):
    x, ta, group = scales.nvfp4_cases(block, seed)
    ts_bits, sb_bits, el_bits = scales.nvfp4_expected(x, ta)
    ref_ts, ref_sb = formats.from_bits(ts_bits, "fp32"), formats.from_bits(sb_bits, "ue4m3")
    ref_el = formats.from_bits(el_bits, "fp4_e2m1")
    row = {"scheme": "NVFP4", "rule": f"two-level {block}", "element": "fp4_e2m1", "blocks": x.shape[0]}
    res = available(libs.torchao_nvfp4, x, ta) if block == "1x16" else "1x16 blocks only"
    if isinstance(res, str):
        rows.append({**row, "library": "torchao", "agree %": None, "first disagreement": res})
    else:
        ts, sb, el = res
        ok = libs.same_values(ts[:, None], ref_ts[:, None]) & libs.same_values(sb[:, None], ref_sb[:, None]) \
            & libs.same_values(el, ref_el)
        bad = np.flatnonzero(~ok)
        first = "-" if not bad.size else (f"{scales.NVFP4_GROUPS[group[bad[0]]]}: tensor amax {float(ta[bad[0]]).hex()}, "
                                          f"s_t {ref_ts[bad[0]]:.4g} vs {ts[bad[0]]:.4g}, s_b {ref_sb[bad[0]]:g} vs "
                                          f"{sb[bad[0]]:g}")
        groups = ", ".join(sorted({scales.NVFP4_GROUPS[g] for g in group[bad]}))
        rows.append({**row, "library": "torchao", "agree %": 100.0 * ok.mean(), "disagree": int(bad.size),
                     "first disagreement": first + (f" (groups: {groups})" if groups else "")})
    mm = available(libs.mmasim_scale_values, sb_bits, "ue4m3")
    if not isinstance(mm, str):
        ok = libs.same_values(mm[:, None], ref_sb[:, None])
        rows.append({**row, "library": "MMA-Sim (scale decode)", "agree %": 100.0 * ok.mean(),
                     "disagree": int((~ok).sum()), "first disagreement": "-" if ok.all() else
                     f"byte {int(sb_bits[~ok][0]):#04x}"})

table = pd.DataFrame(rows)
rep.save_table(table, "quantiser_discrepancy", "Block quantisers vs OCP MX v1.0 / NVIDIA NVFP4 on the scale suite: "
               "share of blocks with the same scale and elements, first disagreement, GEMM error on the disagreeing "
               "blocks (Blackwell block-scaled preset, median relative error)")
print(table.drop(columns=["first disagreement"]).to_string())

# %% [markdown]
# ## Figure: where each library disagrees

# %%
t = table[table["agree %"].notna()].copy()
t["column"] = np.where(t["scheme"] == "MX", t["rule"] + "\n" + t["element"].str.replace("fp", ""), t["rule"])
grid = t.pivot_table(index="library", columns="column", values="agree %", sort=False)
fig, ax = plt.subplots(figsize=(max(8, 0.55 * grid.shape[1]), 0.7 * grid.shape[0] + 1.8))
im = ax.imshow(100.0 - grid.to_numpy(dtype=float), cmap="Reds", vmin=0, vmax=max(5.0, float(np.nanmax(100 - grid))),
               aspect="auto")
ax.set_xticks(range(grid.shape[1]), grid.columns, fontsize=6, rotation=90)
ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
    if np.isfinite(v):
        ax.text(j, i, f"{100 - v:.1f}", ha="center", va="center", fontsize=5)
fig.colorbar(im, ax=ax, label="blocks disagreeing with OCP MX / NVFP4 (%)")
ax.set_title("Block quantisers on the scale-rounding suite (blank: rule not offered)")
fig.tight_layout()
rep.save_fig(fig, "quantiser_discrepancy")
