"""A real Dask cluster (issue 41, item 4): ``dask scheduler`` and two ``dask worker``
processes on loopback, ``workbench sweep EXPERIMENT --scheduler cluster.json`` (the scheduler file, on a free port)
as a user runs it (the README's cluster how-to is the same commands), one worker
killed with SIGKILL in the middle of a task.

Checked: the result table equals the serial run's (timing columns aside), every task
stored once and recorded once (none lost, none duplicated), the task the dead worker
was running ran again elsewhere; an unreachable scheduler is one line of stderr naming
the address; every process the test started is gone afterwards (psutil).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

import workbench.sweep as sweep

pytest.importorskip("distributed")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the ``dask`` command of this environment (the one pip installed with dask[distributed])
DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")

# 3 shifts x 2 k x 2 seeds = 12 tasks on 4 inputs; each task sleeps 1 s on its worker
EXPERIMENT = """\
name = "cluster"
reference = "sweep_helpers:counting_reference"
metrics = ["max_abs_error", "normwise_inf", "signed_errors"]

[defaults]
algorithm = "sweep_helpers:shifted"
m = 3
n = 2
k = [8, 32]
seed = [0, 1]
input = {generator = "uniform", round_to = "fp8_e4m3"}

[[grid]]
params = {shift = [0.0, 0.0009765625, 0.25], delay = 1.0}
"""
TASKS = 12


def _readme_commands() -> list[list[str]]:
    """The README's cluster how-to: the ``sh`` block that starts ``dask scheduler``."""
    block = next(b for b in re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
                 if "\ndask scheduler" in b)
    lines = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    return [words[:-1] if words[-1] == "&" else words for words in lines]    # "&": run in the background


README_FILE = "cluster.json"


def test_readme_cluster_how_to_is_what_the_test_runs():
    clean, scheduler, worker, worker2, sweep_line, stop, wait = _readme_commands()
    assert clean == ["rm", "-f", README_FILE]
    assert scheduler[:2] == ["dask", "scheduler"] and worker[:2] == ["dask", "worker"] and worker2 == worker
    for command in (scheduler, worker):
        assert command[command.index("--scheduler-file") + 1] == README_FILE
    assert scheduler[scheduler.index("--port") + 1] == "0"        # a free port, written into the file
    assert sweep_line[:2] == ["workbench", "sweep"]
    assert sweep_line[sweep_line.index("--scheduler") + 1] == README_FILE
    # the cluster stopped through its scheduler (a SIGTERM to a worker without a nanny may leave it
    # running, holding the shell's output open), then the shell waits for its processes
    assert stop[:2] == ["python", "-c"] and f"scheduler_file={README_FILE!r}" in stop[2] and "shutdown()" in stop[2]
    assert wait == ["wait"]


def _env(log: Path) -> dict[str, str]:
    """This checkout (not an installed copy) and the tests' task functions, for every process."""
    env = dict(os.environ, SWEEP_TEST_LOG=str(log), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _wait(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _log_lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    df = df.drop(columns=[c for c in sweep.TIMING_COLUMNS if c in df.columns])
    return df.sort_values("task_hash").reset_index(drop=True)


@pytest.mark.skipif(DASK is None, reason="the dask command is not installed")
def test_sweep_on_a_real_cluster_survives_a_killed_worker(tmp_path):
    log = tmp_path / "calls.log"
    env = _env(log)
    exp = tmp_path / "cluster.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "on_cluster"
    started: list[subprocess.Popen] = []
    seen: set[psutil.Process] = set()

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([DASK, *args], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(p)
        return p

    def remember_children() -> None:
        for p in started:
            try:
                proc = psutil.Process(p.pid)
                seen.update([proc, *proc.children(recursive=True)])
            except psutil.NoSuchProcess:
                pass

    try:
        info = tmp_path / README_FILE
        _, scheduler, worker, _, sweep_line, stop, _ = _readme_commands()     # the README's how-to, in tmp_path
        start(*scheduler[1:])
        address = _wait(lambda: info.exists() and json.loads(info.read_text() or "{}").get("address"), 60,
                        "the scheduler's address")
        assert address.startswith("tcp://127.0.0.1:")
        workers = [start(*worker[1:]) for _ in range(2)]
        _wait(lambda: _count_workers(address) == 2, 90, "two workers to register")
        remember_children()
        # the README's experiment (sweep_line[2]) replaced by this test's own
        args = [str(exp), *sweep_line[3:]]
        cli = subprocess.Popen([sys.executable, "-m", "workbench", "sweep", *args, "--out", str(out),
                                "--no-progress"], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(cli)
        victim = workers[0].pid
        # kill the first worker while it runs its second task (each task sleeps 1 s)
        _wait(lambda: sum(w[:2] == ["task", str(victim)] for w in _log_lines(log)) >= 2, 90,
              "the first worker to start its second task")
        remember_children()
        os.kill(victim, signal.SIGKILL)
        progress = json.loads((out / "_progress.json").read_text())
        assert progress["done"] < TASKS and progress["phase"] == "running", "killed after the sweep had ended"
        stdout, stderr = cli.communicate(timeout=120)
        assert cli.returncode == 0, stderr
        assert f"cluster: {TASKS} tasks stored in {out}, 0 with errors" in stdout
        assert workers[0].wait(timeout=10) == -signal.SIGKILL
        # the README's stop line: the scheduler and the surviving worker exit by themselves
        subprocess.run([sys.executable, *stop[1:]], env=env, cwd=tmp_path, check=True, timeout=60)
        assert started[0].wait(timeout=30) == 0 and workers[1].wait(timeout=30) is not None
    finally:
        remember_children()
        for p in reversed(started):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in started:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
    gone = psutil.wait_procs(list(seen), timeout=20)[1]
    assert not gone, f"processes left running: {gone}"

    on_cluster = sweep.load(out)
    assert len(on_cluster) == TASKS and on_cluster["task_hash"].is_unique and on_cluster["error"].isna().all()
    progress = json.loads((out / "_progress.json").read_text())
    assert (progress["done"], progress["total"]) == (TASKS, TASKS)     # each task recorded once
    runs = [w for w in _log_lines(log) if w[0] == "task"]
    victim_runs = sum(w[1] == str(victim) for w in runs)
    victim_rows = int((on_cluster["worker"].str.rsplit(":", n=1).str[-1] == str(victim)).sum())
    assert victim_runs > victim_rows                    # what it was running never finished there ...
    assert len(runs) - TASKS == victim_runs - victim_rows   # ... and ran again; every other run gave one row
    serial = sweep.run(str(exp), out=tmp_path / "serial", workers=1, progress=False)
    pd.testing.assert_frame_equal(_comparable(on_cluster), _comparable(sweep.load(tmp_path / "serial")),
                                  check_exact=True)
    assert len(serial) == TASKS


def _count_workers(address: str) -> int:
    """Workers the scheduler knows (asked through a short-lived client)."""
    from distributed import Client

    try:
        with Client(address, timeout=5) as client:
            return len(client.scheduler_info()["workers"])
    except OSError:
        return 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_one_line_naming_it(tmp_path):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    exp = tmp_path / "cluster.toml"
    exp.write_text(EXPERIMENT)
    done = subprocess.run([sys.executable, "-m", "workbench", "sweep", str(exp), "--scheduler", address,
                           "--out", str(tmp_path / "out"), "--no-progress"], env=_env(tmp_path / "log"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("workbench sweep: error: no Dask scheduler answered at") and address in lines[0]
    assert done.stdout == "" and not list((tmp_path / "out").glob("parts/*"))
