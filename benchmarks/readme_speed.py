"""Write the README's speed figures from the benchmarks' results files.

    python benchmarks/readme_speed.py [--check]

Reads ``benchmarks/measured/engine.json`` (``bench_engine.py``) and
``benchmarks/measured/sweep.json`` (``bench_sweep.py``, the full Figure 7 grid) and
replaces the part of ``README.md`` between the ``<!-- speed -->`` and
``<!-- /speed -->`` markers with :func:`render` of them: the machine, the load, a table
of simulated MAC/s per kind of unit with the ``mmasim`` ratio, and the sweep's wall,
user and system time.  So every figure there is one of those files, and running the
benchmarks and then this script updates them.  ``--check`` writes nothing and exits 1
when the README differs from what the files give.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ENGINE = ROOT / "benchmarks" / "measured" / "engine.json"
SWEEP = ROOT / "benchmarks" / "measured" / "sweep.json"
BEGIN, END = "<!-- speed -->", "<!-- /speed -->"
SECTION = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), flags=re.S)


def _shape(r: dict[str, Any]) -> str:
    return f"{r['m']}x{r['k']:,}x{r['n']}" if r["k"] >= 100_000 else f"{r['m']}x{r['k']}x{r['n']}"


def _rate(x: float) -> str:
    """Two significant digits, exponent without padding: 1.2e9."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _ratio(x: float) -> str:
    return f"{x:.0f}x" if x >= 10 else f"{x:.1f}x"


def _load_range(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}"


def _machine(m: dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v and k != "torch")
    vectors = f"; {m['vectors']} vectors" if m.get("vectors") else ""
    return f"{m['cpu']}, {m['cores']} cores ({versions}{vectors}; {m['date'][:10]})"


def render(engine: dict[str, Any], sweep: dict[str, Any] | None) -> str:
    """The README's speed text (between the markers) for the two results records."""
    rows = engine["rows"]
    shapes: list[str] = []
    for r in rows:
        if _shape(r) not in shapes:
            shapes.append(_shape(r))
    loads = [r["load"][0] for r in rows if r["load"]]
    lines = [
        f"`bench_engine.py` on {_machine(engine['machine'])}, one-minute load average "
        f"{_load_range(loads)} during the run: simulated multiply-adds per second of `workbench.gemm` "
        f"(median of {engine['repeat']} calls or more: short calls are repeated for about 0.25 s, at most 200 times; "
        "min-max in `benchmarks/measured/engine.json`), the threads the "
        f"products ran on, and the median time of the `mmasim` package on the same {shapes[0]} GEMM over ours "
        "(same bits: its output equals ours bit for bit):",
        "",
        "| unit | preset | " + " | ".join(shapes) + " | threads | x mmasim (same bits) |",
        "|---|---|" + "---|" * len(shapes) + "---|---|",
    ]
    by_preset: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_preset.setdefault((r["family"], r["preset"]), {})[_shape(r)] = r
    for (family, preset), cells in by_preset.items():
        rates = " | ".join(_rate(cells[s]['mac_per_s']) if s in cells else "-" for s in shapes)
        threads = sorted({c["threads"] for c in cells.values()})
        mm = next((c for c in cells.values() if "mmasim" in c), None)
        ratio = f"{_ratio(mm['mmasim_ratio'])} ({'yes' if mm['mmasim']['same_bits'] else 'NO'})" if mm else "-"
        lines.append(f"| {family} | `{preset}` | {rates} | {'/'.join(map(str, threads))} | {ratio} |")
    if sweep is not None:
        m = sweep["machine"]
        threads = f" x {sweep['threads_per_worker']} thread{'s' if sweep['threads_per_worker'] != 1 else ''}" \
            if sweep["threads_per_worker"] else ""
        lines += ["", f"`bench_sweep.py`, the full Figure 7 grid ({sweep['tasks']} GEMMs, {_rate(sweep['macs'])} "
                      f"simulated multiply-adds, {sweep['workers']} workers{threads}) on {_machine(m)}, load average "
                      f"{m['load_start'][0]:.1f} before and {sweep['load_end'][0]:.1f} after: "
                      f"{sweep['wall_s'] / 60:.1f} minutes wall, {sweep['user_s']:.0f} s user and "
                      f"{sweep['system_s']:.0f} s system CPU time."]
    return "\n".join(lines) + "\n"


def _records() -> tuple[dict[str, Any], dict[str, Any] | None]:
    engine = json.loads(ENGINE.read_text())
    sweep = json.loads(SWEEP.read_text()) if SWEEP.exists() else None
    return engine, sweep


def readme_section(text: str) -> str:
    """The text between the speed markers of the README ``text``."""
    found = SECTION.search(text)
    if found is None:
        raise ValueError(f"README.md has no {BEGIN} ... {END} section")
    return found[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only tell whether README.md is up to date (exit 1 if not)")
    args = ap.parse_args(argv)
    text = README.read_text()
    new = render(*_records())
    if args.check:
        same = readme_section(text) == new
        print("README speed figures are up to date" if same else "README speed figures differ from "
              "benchmarks/measured/: run python benchmarks/readme_speed.py")
        return 0 if same else 1
    readme_section(text)
    README.write_text(SECTION.sub(lambda _: f"{BEGIN}\n{new}{END}", text, count=1))
    print(f"README.md speed figures written from {ENGINE.name}" + (f" and {SWEEP.name}" if SWEEP.exists() else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
