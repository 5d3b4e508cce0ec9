"""Seconds per update of the explorer of notebooks/explore.ipynb at its default sizes.

Builds ``workbench.studies.explorer.Explorer()`` (the first update compiles the kernels on a cold
cache), then changes one control at a time as a person would, each time to a value not
seen before (so nothing comes from the explorer's caches), and prints min/median/max of
the update's wall time per control, with the share of each panel.
Target (issue 17): each update within 1-2 s on 2 cores.

    python benchmarks/bench_explorer.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

from workbench.studies.explorer import Explorer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    ex = Explorer()
    print(f"first update (builds the widgets; compiles the kernels on a cold cache): {time.perf_counter() - t0:.2f} s")
    changes = {
        "L (unit's curve, trace, discrimination, sheet)": (ex.L, [4, 8, 12, 20, 24, 32, 40, 48][:args.repeat]),
        "F": (ex.F, [20, 21, 22, 27, 28, 29, 30, 31][:args.repeat]),
        "rounding": (ex.rounding, ["rz", "rd", "ru", "rne"][:args.repeat]),
        "seed (every curve)": (ex.seed, list(range(1, args.repeat + 1))),
        "compared presets": (ex.compare_with, [("T4",), ("L40S",), ("B200",), ("MI100",), ("MI300X",)][:args.repeat]),
    }
    print(f"{'control changed':<48} {'min s':>7} {'median s':>9} {'max s':>7}   median per panel (a, b, c, d)")
    for name, (widget, values) in changes.items():
        totals, panels = [], []
        for v in values:
            widget.value = v
            assert ex.error is None, ex.error
            totals.append(ex.timings["total"])
            panels.append([ex.timings[p] for p in "abcd"])
        med = [statistics.median(p[i] for p in panels) for i in range(4)]
        print(f"{name:<48} {min(totals):7.2f} {statistics.median(totals):9.2f} {max(totals):7.2f}   "
              + ", ".join(f"{m:.2f}" for m in med))


if __name__ == "__main__":
    main()
