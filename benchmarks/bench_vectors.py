"""Export time of the conformance vectors (issue 52: every preset at the default count
of 10^4 dot products, and the MX/NVFP4 scale suite, in under 2 minutes), and the check of
what was written: ``workbench vectors export DIR --all --scales`` then ``workbench vectors
check DIR``, as the README runs them.  Run by hand from a clone: ``python benchmarks/bench_vectors.py``;
numba's kernels are compiled first (one small export), so the figures are the warm ones.
Prints min/median/max over ``--runs`` exports.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time
from pathlib import Path

from workbench.cli import main as workbench
from workbench.conformance import unitvectors
from workbench.units import catalogue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        unitvectors.export_units(list(catalogue.records()), Path(tmp) / "warm", count=60)   # compile every kind
        export, check = [], []
        for run in range(args.runs):
            out = Path(tmp) / f"run{run}"
            with contextlib.redirect_stdout(io.StringIO()):     # the commands' reports: one line per set
                t0 = time.perf_counter()
                assert workbench(["vectors", "export", str(out), "--all", "--scales"]) == 0
                t1 = time.perf_counter()
                assert workbench(["vectors", "check", str(out)]) == 0
                t2 = time.perf_counter()
            export.append(t1 - t0)
            check.append(t2 - t1)
    for name, xs in (("export (every preset at 10^4 + scale suite)", export), ("check", check)):
        print(f"{name}: min {min(xs):.1f} s, median {statistics.median(xs):.1f} s, max {max(xs):.1f} s "
              f"({len(catalogue.records())} presets)")


if __name__ == "__main__":
    main()
