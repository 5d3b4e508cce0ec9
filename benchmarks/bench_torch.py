"""Speed of a training step under ``workbench.torch``: ``python benchmarks/bench_torch.py``.

The network of case study B (notebooks/torch_training.py): an MLP 64-256-256-10 on a
batch of 128 (scikit-learn digits' shape; random data here), one forward, backward and
SGD step per repeat, all nine GEMMs (forward, dgrad, wgrad of three layers) on the
simulated units.  Prints min / median / max over ``--repeat`` steps after one warm-up
step (which compiles or loads the engine's cached kernels) of:

* the step's wall time and its simulated multiply-accumulates per second;
* the wrapper's overhead beyond the engine: step time minus the time spent inside
  ``workbench.gemm`` (quantisation, scaling, numpy/torch conversions, and PyTorch's own
  work: activations, loss, autograd, SGD), in ms; the same step in plain fp32 PyTorch
  is printed for comparison.

``--transformer``: instead, case study C's training step (notebooks/charlm_recipes.py at
full size: a 2-layer character transformer of width 32, 2 heads, batch 4 x 32 characters,
Adam) under bf16 and the block-scaled recipes on the simulated B200 (MXFP8, NVFP4, NVFP4
with stochastic rounding and the random Hadamard transform): step wall time min / median
/ max over ``--repeat`` steps after one warm-up step, and the process's CPU time per step
(all threads; less sensitive to other load on a shared machine).

Needs the ``torch`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch

import workbench
import workbench.torch as wt


def policies() -> dict[str, wt.Policy]:
    p = workbench.preset
    h8, h5 = p("H100", "fp8_e4m3"), p("H100", "fp8_e5m2")
    return {
        "A100 fp16": wt.Policy(forward=p("A100", "fp16"), quantize="rne"),
        "MI250X fp16 (FTZ)": wt.Policy(forward=p("MI250X", "fp16"), quantize="rne"),
        "MI250X bf16": wt.Policy(forward=p("MI250X", "bf16"), quantize="rne"),
        "H100 fp8 chain": wt.Policy(forward=h8, dgrad=h5, scaling="tensor", quantize="rne"),
        "H100 fp8 deepseek": wt.Policy(forward=h8, dgrad=h5, scaling="deepseek", quantize="rne",
                                       accumulation="promote", promote_every=128),
    }


def _mmm(v: list[float], f: str) -> str:
    return "/".join(format(x, f) for x in (min(v), statistics.median(v), max(v)))


def transformer(repeat: int) -> None:
    """Case study C's training step on the simulated B200, per recipe."""
    from workbench.torch.charlm import CharTransformer, batches, corpus, encode

    ids, vocab = encode(corpus())
    data = batches(ids, 4, 32, repeat + 1)
    pols: dict[str, wt.Policy | None] = {
        "fp32 PyTorch": None,
        "bf16": wt.Policy(forward=workbench.preset("B200", "bf16"), quantize="rne"),
        "MXFP8 (floor)": wt.Policy.for_recipe(wt.mxfp8()),
        "NVFP4": wt.Policy.for_recipe(wt.nvfp4()),
        "NVFP4 + SR + RHT": wt.Policy.for_recipe(wt.nvfp4(stochastic_rounding=True, hadamard=16)),
    }
    print(f"{'recipe':18} {'step s (min/med/max)':>22} {'CPU s (min/med/max)':>22} {'GEMMs':>6} {'MACs':>9}")
    for name, policy in pols.items():
        torch.manual_seed(0)
        net = CharTransformer(len(vocab), 32, 2, 2, 32)
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        steps, cpu, gemms, macs = [], [], 0, 0
        for i, (x, y) in enumerate(data):
            t0, c0 = time.perf_counter(), time.process_time()
            with (wt.simulate(policy, model=net) if policy is not None else contextlib.nullcontext()) as rec:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x).reshape(-1, len(vocab)), y.reshape(-1)).backward()
            opt.step()
            if i:
                steps.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            if rec is not None:
                gemms, macs = len(rec.records), rec.macs
        print(f"{name:18} {_mmm(steps, '.3f'):>22} {_mmm(cpu, '.3f'):>22} {gemms:>6} {macs:>9}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--transformer", action="store_true", help="case study C's step per recipe instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.transformer:
        transformer(args.repeat)
        return
    engine = [0.0]
    gemm = wt._gemm

    def timed_gemm(*a, **kw):
        t0 = time.perf_counter()
        try:
            return gemm(*a, **kw)
        finally:
            engine[0] += time.perf_counter() - t0

    wt._gemm = timed_gemm
    torch.set_num_threads(1)  # PyTorch's own threads only contend with the engine's on small products
    x = torch.randn(args.batch, 64)
    target = torch.randint(0, 10, (args.batch,))
    print(f"{'policy':20} {'step ms (min/med/max)':>24} {'MAC/s (min/med/max)':>30} {'overhead ms (min/med/max)':>26}")
    for name, policy in policies().items():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                  torch.nn.ReLU(), torch.nn.Linear(256, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        steps, rates, overheads = [], [], []
        for i in range(args.repeat + 1):
            engine[0] = 0.0
            t0 = time.perf_counter()
            with wt.simulate(policy) as rec:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), target).backward()
                opt.step()
            dt = time.perf_counter() - t0
            if i:
                steps.append(dt * 1e3)
                rates.append(rec.macs / dt)
                overheads.append((dt - engine[0]) * 1e3)

        def mmm(v: list[float], f: str) -> str:
            return "/".join(format(x, f) for x in (min(v), statistics.median(v), max(v)))
        print(f"{name:20} {mmm(steps, '.1f'):>24} {mmm(rates, '.2e'):>30} {mmm(overheads, '.1f'):>26}")
    t = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), target).backward()
        opt.step()
        t.append((time.perf_counter() - t0) * 1e3)
    print(f"{'fp32 PyTorch':20} {mmm(t, '.1f'):>24}")
    print(f"MACs per step: {rec.macs} (3 GEMMs x {rec.macs // 3})")


if __name__ == "__main__":
    main()
