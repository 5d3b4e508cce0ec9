"""Where a cold test run spends its compile time: one line per numba compilation.

When ``WORKBENCH_COMPILE_LOG`` names a folder, :func:`install_from_env` (called by
``tests/conftest.py`` in the pytest process and in every xdist worker, and by
``tests/warm_kernels.py``) listens to numba's ``numba:compile`` events, which numba
sends only for a real compilation (a kernel loaded from the on-disk cache sends
none), and appends one JSON line per compiled signature to ``<folder>/<pid>.jsonl``:
the function, its argument types, the seconds inclusive of the functions it compiled
on the way and exclusive of them, and the process's role.  ``benchmarks/
bench_first_run.py --tests`` reads the folder back with :func:`summarise`.
"""
from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

ENV = "WORKBENCH_COMPILE_LOG"


def install_from_env(role: str) -> None:
    """Log this process's compilations to the folder named by ``WORKBENCH_COMPILE_LOG`` (if set)."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    from numba.core import event

    path = Path(folder) / f"{os.getpid()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    stack: list[list] = []     # [start, seconds spent in nested compilations]

    class _Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            stack.append([time.perf_counter(), 0.0])

        def on_end(self, ev: event.Event) -> None:
            start, nested = stack.pop()
            seconds = time.perf_counter() - start
            if stack:
                stack[-1][1] += seconds
            dispatcher = ev.data["dispatcher"]
            line = {"role": role, "function": f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}",
                    "signature": str(ev.data["args"]), "seconds": seconds, "exclusive": seconds - nested,
                    "nested": bool(stack)}
            try:
                with path.open("a") as out:
                    out.write(json.dumps(line) + "\n")
            except OSError:      # the folder removed under a running process: the log is lost, not the compile
                pass

    event.register("numba:compile", _Listener())


def summarise(folder: Path, top: int = 25) -> str:
    """Compile seconds by process role, the costliest functions, and what was compiled twice."""
    lines = [json.loads(row) for path in sorted(Path(folder).glob("*.jsonl")) for row in path.open()]
    if not lines:
        return "no compilation was logged"
    by_role: dict[str, float] = defaultdict(float)
    by_function: dict[str, float] = defaultdict(float)
    signatures: dict[str, set[str]] = defaultdict(set)
    copies: dict[tuple[str, str], int] = defaultdict(int)
    for row in lines:
        by_role[row["role"]] += row["exclusive"]
        by_function[row["function"]] += row["exclusive"]
        signatures[row["function"]].add(row["signature"])
        copies[(row["function"], row["signature"])] += 1
    twice = sum(n - 1 for n in copies.values())
    twice_s = sum(row["exclusive"] for row in lines) - sum(
        max(r["exclusive"] for r in lines if (r["function"], r["signature"]) == key) for key in copies)
    out = [f"{len(lines)} compilations, {len(copies)} distinct (function, signature), "
           f"{sum(by_role.values()):.0f} s of compiling in all (CPU seconds, summed over processes)",
           "by process: " + ", ".join(f"{role} {s:.0f} s" for role, s in sorted(by_role.items())),
           f"compiled again in another process: {twice} signatures, {twice_s:.0f} s",
           f"{'function':<64}{'s':>7}{'signatures':>12}"]
    for name, seconds in sorted(by_function.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"{name:<64}{seconds:7.1f}{len(signatures[name]):12d}")
    return "\n".join(out)
