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


def test_scheduler_file_and_a_cluster_without_workers(tmp_path, monkeypatch, capsys):
    """A scheduler file names the scheduler; with no worker the tasks wait, the sweep says so
    once on stderr, and the first worker to join runs them."""
    import json
    import threading

    from workbench.sweep import runner

    monkeypatch.setattr(runner, "NO_WORKER_NOTICE", 0.4)
    raw = sweep_helpers.experiment()
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        info = tmp_path / "cluster.json"
        info.write_text(json.dumps({"address": cluster.scheduler_address}))
        result = {}
        thread = threading.Thread(target=lambda: result.update(
            df=sweep.run(raw, out=tmp_path / "dask", scheduler=str(info), progress=False)))
        thread.start()
        deadline = 60
        while "no Dask worker" not in capsys.readouterr().err and deadline > 0:
            thread.join(0.1)
            deadline -= 0.1
        assert deadline > 0, "no notice of the missing worker"
        assert thread.is_alive()                 # waiting, not failed
        cluster.scale(1)
        thread.join(120)
    assert not thread.is_alive() and len(result["df"]) == 2 * 2 * 2     # shifts x ks x seeds
    assert result["df"]["error"].isna().all()


def test_scheduler_file_never_written_and_an_address_without_protocol(tmp_path, monkeypatch):
    import socket

    from workbench.sweep import runner

    monkeypatch.setattr(runner, "SCHEDULER_FILE_WAIT", 0.3)
    missing = tmp_path / "cluster.json"
    with pytest.raises(ConnectionError, match="no Dask scheduler wrote an address into the scheduler file"):
        sweep.run(sweep_helpers.experiment(), out=tmp_path / "out", scheduler=str(missing), progress=False,
                  scheduler_timeout=0.1)
    with socket.socket() as s:          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # host:port is an address, as dask reads it (not a file): nothing answers there
    with pytest.raises(ConnectionError, match=f"no Dask scheduler answered at '127.0.0.1:{port}'"):
        sweep.run(sweep_helpers.experiment(), out=tmp_path / "out", scheduler=f"127.0.0.1:{port}", progress=False,
                  scheduler_timeout=0.5)
