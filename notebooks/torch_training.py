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
# # Case study B: training a network on simulated matrix units
#
# The two incidents Xie et al. (2025, MMA-Sim, Section 2.2) cite, on a whole training run rather
# than one GEMM: PyTorch's numerical-accuracy notes report fp16 training on AMD CDNA2 (MI250X)
# failing to converge because its matrix cores flush fp16 subnormals (Xie Algorithm 2), with bf16 as
# the workaround; DeepSeek-V3 trained in fp8 on Hopper only after promoting partial sums to fp32.
#
# An MLP 64-h-h-10 (h = 256; 64 in the quick run) on scikit-learn's digits (1797 8x8 images, 80/20 split), SGD with momentum,
# mean cross-entropy, no loss scaling, the same seeds for every run. Every GEMM of the training step
# (forward, dgrad, wgrad of the three layers) and of the evaluation runs through
# `workbench.torch.simulate(policy)`; operands are quantised to the unit's input format with
# round-to-nearest-even (recorded: the share of gradient operands that are fp16 subnormals, which
# MI250X reads as zero, is plotted).

# %% tags=["parameters"]
quick: bool = True  # quick: hidden width 64, 8 epochs (a minute on 2 cores); False: width 256, 40 epochs
out_dir: str = "figures"  # figures PNG+PDF and tables CSV+Markdown, relative to the repository root
sweep_dir: str = "results/sweeps"  # unused here (training runs are not GEMM sweep tasks)
workers: int = 2  # unused here (one process)
seed: int = 0

# %%
import time
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import workbench
from workbench.studies.notebook_support import Report
import workbench.torch as wt

rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)
torch.set_num_threads(1)  # PyTorch's threads only contend with the engine's on these small products


def save(fig, df: pd.DataFrame, name: str, title: str) -> None:
    """Figure (if any) as PNG+PDF, table as CSV+Markdown (workbench.studies.notebook_support)."""
    if fig is not None:
        rep.save_fig(fig, name)
    rep.save_table(df, name, title)


epochs = 8 if quick else 40
hidden = 64 if quick else 256
batch = 256
X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.2, random_state=seed, stratify=y)
X_train, X_test = torch.tensor(X_train, dtype=torch.float32), torch.tensor(X_test, dtype=torch.float32)
y_train, y_test = torch.tensor(y_train), torch.tensor(y_test)

p = workbench.preset
h8, h5 = p("H100", "fp8_e4m3"), p("H100", "fp8_e5m2")
runs = {
    "fp32 (PyTorch)": None,
    "A100 fp16": wt.Policy(forward=p("A100", "fp16"), quantize="rne"),
    "MI250X fp16 (FTZ)": wt.Policy(forward=p("MI250X", "fp16"), quantize="rne"),
    "MI250X bf16": wt.Policy(forward=p("MI250X", "bf16"), quantize="rne"),
    "H100 fp8 chain": wt.Policy(forward=h8, dgrad=h5, scaling="tensor", quantize="rne"),
    "H100 fp8 promote 128": wt.Policy(forward=h8, dgrad=h5, scaling="tensor", quantize="rne",
                                      accumulation="promote", promote_every=128),
    "H100 fp8 DeepSeek": wt.Policy(forward=h8, dgrad=h5, scaling="deepseek", quantize="rne",
                                   accumulation="promote", promote_every=128),
}
print(len(X_train), "training and", len(X_test), "test images;", epochs, "epochs of batch", batch, "; width", hidden)

# %% [markdown]
# Forward GEMMs take e4m3, both backward GEMMs e5m2 (DeepSeek's and Transformer Engine's split;
# the weights are requantised from their fp32 master copy for each). "chain" and "promote 128" use
# per-tensor amax scaling; "DeepSeek" uses its 1x128 / 128x128 tiles with promotion every 128.
# The wgrad GEMMs contract over the batch (K = 256), and with h = 256 the second and third layers'
# forward GEMMs over K = 256 too, so promotion every 128 splits those sums in two.

# %%
class _Plain:
    """The fp32 baseline: no simulation, a recorder-less context."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def train(policy) -> tuple[pd.DataFrame, float]:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                              torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    order = torch.Generator().manual_seed(seed)
    rows, t0 = [], time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(len(X_train), generator=order)
        losses, flushed, gemm_inputs = [], 0, 0
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            ctx = wt.simulate(policy) if policy is not None else _Plain()
            with ctx as rec:
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(net(X_train[idx]), y_train[idx])
                loss.backward()
            opt.step()
            losses.append(loss.item())
            if rec is not None:
                grads = [r for r in rec.records if r.role != "forward"]
                flushed += sum(r.subnormal + r.underflowed for r in grads)
                gemm_inputs += sum(r.elements for r in grads)
        with torch.no_grad(), (wt.simulate(policy) if policy is not None else _Plain()):
            accuracy = (net(X_test).argmax(1) == y_test).float().mean().item()
        rows.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "test_accuracy": accuracy,
                     "grad_subnormal_or_zeroed": flushed / gemm_inputs if gemm_inputs else np.nan})
    return pd.DataFrame(rows), time.perf_counter() - t0


curves, seconds = {}, {}
for name, policy in runs.items():
    curves[name], seconds[name] = train(policy)
    last = curves[name].iloc[-1]
    print(f"{name:22} loss {last.train_loss:.4f}  test accuracy {last.test_accuracy:.3f}  ({seconds[name]:.0f} s)")

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
styles = {"fp32 (PyTorch)": ("k", "-"), "A100 fp16": ("C2", "-"), "MI250X fp16 (FTZ)": ("C3", "-"),
          "MI250X bf16": ("C1", "-"), "H100 fp8 chain": ("C0", "--"), "H100 fp8 promote 128": ("C4", "--"),
          "H100 fp8 DeepSeek": ("C9", ":")}
for name, df in curves.items():
    c, ls = styles[name]
    axes[0].semilogy(df.epoch, df.train_loss, color=c, ls=ls, label=name)
    axes[1].plot(df.epoch, df.test_accuracy, color=c, ls=ls, label=name)
    if name != "fp32 (PyTorch)":
        axes[2].plot(df.epoch, 100 * df.grad_subnormal_or_zeroed, color=c, ls=ls, label=name)
axes[0].set(xlabel="epoch", ylabel="mean training loss", title="training loss (same seeds)")
axes[1].set(xlabel="epoch", ylabel="test accuracy", title="test accuracy")
axes[2].set(xlabel="epoch", ylabel="% of dgrad/wgrad operand elements",
            title="gradient GEMM inputs subnormal or zero after quantisation")
axes[0].legend(fontsize=7)
fig.suptitle(f"MLP 64-{hidden}-{hidden}-10 on scikit-learn digits, every GEMM on a simulated unit")
fig.tight_layout()
table = pd.concat([df.assign(unit=name) for name, df in curves.items()], ignore_index=True)
save(fig, table[["unit", "epoch", "train_loss", "test_accuracy", "grad_subnormal_or_zeroed"]], "torch_training",
     "Case study B: training curves per simulated unit")

# %% [markdown]
# **What the figure shows.** Left and middle: training loss and test accuracy per epoch of the same
# network, data order and initialisation on each unit. Right: the share of elements of the backward
# GEMMs' operands that are fp16/bf16/fp8 subnormals or quantised to zero - on MI250X fp16 the
# subnormals are read as zero by the unit (flush to zero), so this is the gradient information the
# unit discards; bf16 keeps fp32's exponent range and loses almost none.

# %%
outcome = pd.DataFrame([{"unit": name, "final_train_loss": df.train_loss.iloc[-1],
                         "final_test_accuracy": df.test_accuracy.iloc[-1],
                         "max_grad_subnormal_or_zeroed": df.grad_subnormal_or_zeroed.max(),
                         "seconds": seconds[name]} for name, df in curves.items()])
save(None, outcome, "torch_training_outcome", "Case study B: outcome after the last epoch")
print(outcome.to_string(index=False))
