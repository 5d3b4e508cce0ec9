"""Library schedules recovered and verified on the kernel this environment runs (issue 54).

    python benchmarks/library_kernels.py [TARGET ...] [--k-max K] [--out FILE]

For each library target (default: numpy-fp32 numpy-fp64 torch-cpu-fp32 torch-cpu-bf16) it
runs ``workbench probe TARGET --recover``'s work (:func:`workbench.probes.library.probe_library`
with ``recover=True``): the schedule recovered from the black box, then verified bit for bit on
the verification products (K up to 8192, odd M and N, one thread), and prints one row: the
kernel (threadpoolctl's architecture; torch's CPU capability), the library's version, the
recovery's library calls and seconds, the model verified (the recovered schedule, or the
hand-written candidate where it holds and the recovery does not), the outputs verified, and
the model at the library's default thread count (the same bits, or the threads' cut
recovered and verified on the same products and two larger ones).  ``--out`` appends the rows to a
file.

Run it by hand, once per kernel, choosing the kernel in the command line only - never in a test
or CI, and never on a CPU where the environment itself sets these variables for safety::

    python benchmarks/library_kernels.py numpy-fp32 numpy-fp64
    OPENBLAS_CORETYPE=Haswell python benchmarks/library_kernels.py numpy-fp32 numpy-fp64
    OPENBLAS_CORETYPE=Sandybridge python benchmarks/library_kernels.py numpy-fp32 numpy-fp64
    MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/library_kernels.py torch-cpu-fp32
    python benchmarks/library_kernels.py torch-cpu-bf16 --no-recover   # the hand-written candidate only

The row names the kernel that actually ran, whatever was asked for.
"""
from __future__ import annotations

import argparse
import datetime
import time

from workbench.probes.library import LIBRARIES, LibraryReport, probe_library


def _at_default_threads(report: LibraryReport) -> str:
    """The model at the library's default thread count: the same bits as at one thread, or
    the threads' cut recovered (:func:`~workbench.probes.library.recover_threading`) and
    verified or not, with its calls and seconds."""
    n = report.environment.default_threads
    if report.at_default_threads is None or n <= 1:
        return "-"
    bad, total = report.at_default_threads
    t = report.threading
    if t is None:
        return f"{n}: the one-thread model, {total - bad} of {total}"
    if t.candidate is None:
        return f"{n}: no cut of {t.searched} reproduces the probes ({t.calls} calls, {t.seconds:.0f} s)"
    b, a = t.counts
    return f"{n}: cut recovered ({t.calls} calls, {t.seconds:.0f} s), {a - b} of {a} {'verified' if t.verified else 'NOT verified'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", default=list(LIBRARIES), choices=list(LIBRARIES), metavar="TARGET")
    parser.add_argument("--k-max", type=int, default=8192)
    parser.add_argument("--out", default=None, help="append the rows to this file")
    parser.add_argument("--no-recover", action="store_true",
                        help="verify the hand-written candidate for the kernel that runs, without recovering one")
    args = parser.parse_args()
    rows = []
    for name in args.targets:
        t0 = time.perf_counter()
        report = probe_library(name, recover=not args.no_recover, k_max=args.k_max)
        wall = time.perf_counter() - t0
        bad, total = report.counts
        env = report.environment
        rec = report.recovery
        row = (f"| {datetime.date.today()} | {name} | {env.library} {env.version} | {env.kernel} | "
               f"{rec.queries if rec else '-'} | {rec.seconds if rec else 0:.0f} | {report.candidate.schedule.name} | "
               f"{total - bad} of {total} | {'verified' if report.verified else 'NOT verified'} | "
               f"{_at_default_threads(report)} | {wall:.0f} |")
        print(report.sheet())
        print(row, flush=True)
        rows.append(row)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
