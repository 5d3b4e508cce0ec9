"""The Dask path: the same experiment on a dask.distributed LocalCluster gives the same table."""

import pandas as pd
import pytest
import sweep_helpers

import workbench.sweep as sweep

distributed = pytest.importorskip("distributed")


def _comparable(df):
    return df.drop(columns=[c for c in sweep.TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


def test_local_cluster_matches_serial(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("SWEEP_TEST_LOG", str(log))
    raw = sweep_helpers.experiment(fail_shift=0.5)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        on_dask = sweep.run(raw, out=tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
    calls = log.read_text().split()
    assert calls.count("reference") == 4 and calls.count("task") == 12
    serial = sweep.run(raw, out=tmp_path / "serial", workers=1, progress=False)
    assert len(on_dask) == 12 and on_dask["error"].notna().sum() == 4
    pd.testing.assert_frame_equal(_comparable(on_dask), _comparable(serial))
