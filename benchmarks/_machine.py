"""What a benchmark records beside its figures: the machine, the software, the load.

Speed figures mean little without the machine they were taken on, and on a shared
machine without the load, so every benchmark that writes a results file
(``benchmarks/measured/*.json``) puts :func:`describe` at its top and the load at
each row; ``benchmarks/readme_speed.py`` quotes them in the README.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "benchmarks" / "measured"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else the platform's processor string)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> list[float]:
    """The one-, five- and fifteen-minute load averages (empty where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return []


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def describe() -> dict[str, Any]:
    """The machine and software a benchmark ran on, and the load when it started."""
    from workbench.sweep.pool import cores

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(), "cores": cores(), "cpu_count": os.cpu_count(),
        "python": platform.python_version(), "system": f"{platform.system()} {platform.release()}",
        "versions": {p: _version(p) for p in ("numpy", "numba", "mmasim", "torch")},
        "commit": _commit(), "load_start": load(), "vectors": vectors(),
    }


def vectors() -> str:
    """The vector width numba's code generator is tuned for: ``512-bit`` where ``import
    workbench`` (:mod:`workbench._runtime.cpu_target`) removed LLVM's 256-bit preference, else
    ``LLVM's default``."""
    from numba.core.registry import cpu_target

    from workbench._runtime.cpu_target import PREFER_256

    features = cpu_target.target_context.codegen().magic_tuple()[2]
    return "512-bit" if "-" + PREFER_256 in features.split(",") else "LLVM's default"


def write(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` (with the load at the end) as indented JSON to ``path``."""
    record["load_end"] = load()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"results written to {path}")
