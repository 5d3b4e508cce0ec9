"""Session set-up for the default test run: compile the engine's kernels on both cores
first (see ``tests/warm_kernels.py``).  Only a run of the whole suite warms up (a run of
chosen files compiles just what it calls); ``WORKBENCH_TEST_WARMUP=0`` turns it off."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from compile_log import install_from_env

_HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", {}).get("workerid")
    install_from_env("tests" if worker is None else f"tests {worker}")


def _whole_suite(config: pytest.Config) -> bool:
    return all(Path(arg).is_dir() for arg in config.args)


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):   # a pytest-xdist worker: the controller warmed up
        return
    if os.environ.get("WORKBENCH_TEST_WARMUP", "1") == "0" or not _whole_suite(session.config):
        return
    if session.config.option.collectonly:        # nothing runs: nothing to compile (it cost a cold compile)
        return
    procs = [subprocess.Popen([sys.executable, str(_HERE / "warm_kernels.py"), group], cwd=_HERE.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for group in ("1", "2")]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            warnings.warn(f"kernel warm-up {proc.args[-1]!r} failed (the tests compile on first use): "
                          f"{err.strip().splitlines()[-1] if err.strip() else proc.returncode}", stacklevel=1)
