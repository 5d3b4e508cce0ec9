"""Task functions for the sweep tests (importable by worker processes as ``sweep_helpers``).

The inputs the tests use are fp8_e4m3 values with k <= 64, so ``A @ B`` in float64
is exact and the errors the sweep records are known in closed form.
"""

import hashlib
import multiprocessing
import os
import signal
import time


def _log(kind: str) -> None:
    path = os.environ.get("SWEEP_TEST_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{kind} {os.getpid()} {os.environ.get('NUMBA_NUM_THREADS')}\n")


def _die_in_worker(mode, A, B, shift):
    """Kill this process with SIGKILL if it is a spawned worker (never the test's own process):
    always, or once per task (a marker file under $SWEEP_TEST_DIE_DIR remembers the first time)."""
    if multiprocessing.parent_process() is None:
        return
    if mode == "once":
        key = hashlib.sha1(A.tobytes() + B.tobytes() + repr(shift).encode()).hexdigest()
        marker = os.path.join(os.environ["SWEEP_TEST_DIE_DIR"], key)
        if os.path.exists(marker):
            return
        open(marker, "w").close()
    os.kill(os.getpid(), signal.SIGKILL)


def shifted(A, B, C=None, *, model=None, shift=0.0, delay=0.0, fail=False, flaky=False, die=None):
    """A @ B + shift (exact for the tests' inputs); sleeps ``delay``; raises if ``fail``, or if
    ``flaky`` while $SWEEP_TEST_FLAKY is set; ``die`` ("once", "always") kills its worker process."""
    _log("task")
    if die is not None:
        _die_in_worker(die, A, B, shift)
    if delay:
        time.sleep(delay)
    if fail or (flaky and os.environ.get("SWEEP_TEST_FLAKY")):
        raise RuntimeError(f"asked to fail (shift={shift})")
    D = A @ B + shift
    return D if C is None else D + C


def counting_reference(A, B, C=None, *, alpha=1.0, beta=1.0):
    """float64 reference (exact for the tests' inputs) that logs each call."""
    _log("reference")
    D = alpha * (A @ B)
    return D if C is None else D + beta * C


def experiment(name="t", shifts=(0.0, 2.0**-10), ks=(8, 32), seeds=(0, 1), delay=0.0, fail_shift=None,
               reference="sweep_helpers:counting_reference", metrics=("max_abs_error", "normwise_inf", "signed_errors")):
    """A small experiment dict: |shifts| x |ks| x |seeds| tasks on |ks| x |seeds| inputs."""
    grids = [{"params": {"shift": list(shifts), "delay": delay}}]
    if fail_shift is not None:
        grids.append({"params": {"shift": fail_shift, "delay": delay, "fail": True}})
    return {
        "name": name,
        "reference": reference,
        "metrics": list(metrics),
        "defaults": {"algorithm": "sweep_helpers:shifted", "m": 3, "n": 2, "k": list(ks), "seed": list(seeds),
                     "input": {"generator": "uniform", "round_to": "fp8_e4m3"}},
        "grid": grids,
    }
