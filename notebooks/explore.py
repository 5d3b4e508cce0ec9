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
# # Explore a matrix unit
#
# Pick a device preset or build a custom unit with the controls (kind, L, F or neab,
# rounding, where c is added, input and output formats), an input generator and a range
# of K.  Every change updates, within a second or two once the kernels are compiled:
#
# * **(a)** the normwise error `||D - AB||_inf / (||A||_inf ||B||_inf)` against the exact
#   product versus K, for the unit and the presets chosen under *compare*, with the unit's
#   a-priori bound (Blanchard et al. 2020, block FMA);
# * **(b)** the bit-level trace (`workbench.explain`) of one dot product of the unit;
# * **(c)** the simplest input found on which the unit and the preset under *differ from*
#   give different bits (`workbench.discriminate`);
# * **(d)** the unit's feature sheet: its Khattak & Mikaitis Table II features and the Fasi et
#   al. (2021) tests run on it as a black box.
#
# The parameters cell sets the controls' starting values.  Run under papermill
# (`workbench reproduce`) the notebook has no live controls: it writes the starting state's
# figure and table (`figures/explore.*`).  The default unit is "an H100 that rounds to
# nearest with one more alignment bit" (L 16, F 26, RNE), so its curve stands apart from
# every compared preset.

# %% tags=["parameters"]
from typing import Optional

quick: bool = True  # no sizes here: quick and full are the same
out_dir: str = "figures"  # figures (PNG, PDF) and tables (CSV, Markdown), relative to the repository root
sweep_dir: str = "results/sweeps"  # sweep results (none here), relative to the repository root
workers: int = 2  # worker processes of the sweeps (none here)
preset: Optional[str] = None  # start from a device (H100) or preset name; None: the custom unit below
in_format: str = "fp16"  # custom unit: input format
out_format: str = "fp32"  # custom unit: output format
kind: str = "t-fdpa"  # custom unit: t-fdpa, e-fdpa or fma
L: int = 16  # custom unit: products per fused step
F: int = 26  # custom unit: fraction bits kept in the alignment (neab: F - 23 for fp32 output)
rounding: str = "rne"  # custom unit: rounding of the block sum (rne, rz, rd, ru)
c_position: str = "early"  # custom unit: c added inside the fused sum (early) or after it (late)
generator: str = "normal"  # inputs: a name of workbench.inputs.GENERATORS
k_range: list[int] = [16, 1024]  # smallest and largest K, powers of two from 4 to 16384
m: int = 8  # rows of A
n: int = 8  # columns of B
seed: int = 0  # seed of the inputs
compare_with: list[str] = ["V100", "A100", "H100"]  # devices whose presets are drawn beside the unit
discriminate_with: str = "H100"  # device of the preset in panel (c)

# %%
from workbench.studies.explorer import Explorer
from workbench.studies.notebook_support import Report, parameter_list

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)
explorer = Explorer(preset=preset, in_format=in_format, out_format=out_format, kind=kind, L=L, F=F, rounding=rounding,
                    c_position=c_position, generator=generator, k_range=parameter_list("k_range", k_range), m=m, n=n,
                    seed=seed, compare_with=parameter_list("compare_with", compare_with, str),
                    discriminate_with=discriminate_with)

# %% [markdown]
# ## The explorer

# %%
explorer

# %% [markdown]
# ## The starting state, saved (what papermill runs write)

# %%
curves = explorer.curves()
fig = explorer.figure(curves)
rep.save_fig(fig, "explore")
rep.save_table(curves, "explore", f"Explore: {explorer!r} against presets (normwise error; a-priori bound)")
fig

# %%
print(explorer.trace_text())

# %%
print(explorer.discrimination_text())

# %%
explorer.feature_sheet()

# %%
print(rep.summary())
