"""Kill a sweep part-way with SIGKILL, resume it, and get the table of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import sweep_helpers

import workbench.sweep as sweep

HERE = Path(__file__).resolve().parent


def _comparable(df):
    return df.drop(columns=[c for c in sweep.TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


def test_kill_then_resume_equals_uninterrupted(tmp_path):
    raw = sweep_helpers.experiment(shifts=(0.0, 2.0**-10, 2.0**-5), ks=(8, 16, 32, 64), seeds=(0, 1),
                                   delay=0.25, fail_shift=1.0)  # 32 tasks, 8 of which raise
    n_tasks = len(sweep.parse(raw))
    assert n_tasks == 32
    spec_file = tmp_path / "exp.json"
    spec_file.write_text(json.dumps(raw))
    out = tmp_path / "killed"
    script = ("import json, sys, workbench.sweep as s; "
              f"s.run(json.load(open({str(spec_file)!r})), out={str(out)!r}, workers=2, progress=False)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    parts = out / "parts"
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            if parts.is_dir() and len(list(parts.glob("*.parquet"))) >= 6:
                break
            if proc.poll() is not None:
                raise AssertionError(f"the sweep ended before it was killed: {proc.communicate()}")
            time.sleep(0.02)
        else:
            raise AssertionError("no task finished within 90 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker processes (its own session)
        proc.wait()
    survivors = {p.stem: pq.read_table(p).to_pandas() for p in parts.glob("*.parquet")}
    assert 6 <= len(survivors) < n_tasks, "kill the run part-way"
    assert not list(out.glob("results-*.parquet"))  # it never reached the end
    # every finished file is complete and readable; load sees exactly them
    partial = sweep.load(out)
    assert set(partial["task_hash"]) == set(survivors)

    resumed = sweep.run(raw, out=out, workers=2, progress=False)
    fresh = sweep.run(raw, out=tmp_path / "fresh", workers=2, progress=False)
    assert len(resumed) == n_tasks and resumed["error"].notna().sum() == 8
    pd.testing.assert_frame_equal(_comparable(resumed), _comparable(fresh))
    pd.testing.assert_frame_equal(_comparable(sweep.load(out)), _comparable(fresh))
    # no finished task was lost or recomputed: its row (finish time included) is unchanged
    by_hash = resumed.set_index("task_hash")
    for h, row in survivors.items():
        assert by_hash.loc[h, "finished_at"] == row["finished_at"].iloc[0]
        assert by_hash.loc[h, "worker"] == row["worker"].iloc[0]
    assert not list(out.rglob("*.tmp"))
