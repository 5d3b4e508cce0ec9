"""Crash-safe Parquet storage of result rows.

Layout of an output folder::

    OUT/parts/<task_hash>.parquet      one finished task, written as soon as it ends
    OUT/results-<stamp>.parquet        compacted rows (written at the end of a run)
    OUT/_experiment.json               the experiment as run (for the record)
    OUT/_progress.json                 tasks finished / to run, updated as they finish

The metadata names start with an underscore, so pyarrow (and ``pandas.read_parquet(OUT)``)
skips them and reads the folder as one Parquet dataset.

Every file is written to a temporary name in the same folder, flushed and fsynced,
then renamed with :func:`os.replace` (atomic on POSIX), so a reader or a killed
writer never sees a partial file; temporary leftovers (``*.tmp``) are ignored and
removed on the next run.  Compaction writes the merged file first and deletes its
sources afterwards, so a kill in between only leaves duplicates, which
:func:`load` drops (rows are keyed by ``task_hash``).

Column types do not depend on the history of a folder (which rows were written when,
by a first run, a resumed one or ``retry_errors``): the columns every row has are
written with the types of :data:`COLUMN_TYPES`; a metric or ``param.*`` column has the
Arrow type of its values, promoted across rows (int and float give float); files are
merged as Arrow tables, duplicates dropped, and only then turned into pandas columns,
so a table depends only on the rows it holds.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PARTS = "parts"
#: The experiment as run, and the progress of the current run (pyarrow skips names starting with "_").
METADATA = "_experiment.json"
PROGRESS = "_progress.json"
#: Name of the metadata file before it was renamed; removed when a run rewrites the metadata.
_LEGACY_METADATA = "experiment.json"
#: Columns kept even when every value is missing (other all-missing columns are dropped).
KEEP = ("error", "traceback")
#: Arrow types of the columns every row has (:func:`workbench.sweep.tasks.base_row`, the
#: error and the timing columns), whether or not a row has a value for them.
COLUMN_TYPES: dict[str, pa.DataType] = {
    **dict.fromkeys(("task_hash", "input_hash", "experiment", "algorithm", "preset", "instruction", "variant",
                     "model", "in_format", "out_format", "reference", "generator", "params", "input",
                     "error", "traceback", "worker", "experiment_digest", "unit", "unit_params"), pa.string()),
    **dict.fromkeys(("task_index", "m", "k", "n", "seed"), pa.int64()),
    **dict.fromkeys(("alpha", "beta", "elapsed_s", "cpu_s", "reference_s", "finished_at"), pa.float64()),
}
#: Rows are ordered by these columns.
_ORDER = ("experiment", "task_index", "task_hash")


def _atomic_write_table(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def row_table(row: Mapping[str, Any]) -> pa.Table:
    """One row as an Arrow table: :data:`COLUMN_TYPES` for the columns it names (pandas'
    missing values, NaN included, are missing there), the values' own type for the
    others (metrics, ``param.*``, ``input.*``; a NaN metric stays NaN)."""
    return pa.Table.from_arrays([pa.array([v], type=COLUMN_TYPES.get(k), from_pandas=k in COLUMN_TYPES)
                                 for k, v in row.items()], names=list(row))


def write_row(out: Path, row: Mapping[str, Any]) -> Path:
    """Store one finished task's row atomically as ``OUT/parts/<task_hash>.parquet``."""
    parts = Path(out) / PARTS
    parts.mkdir(parents=True, exist_ok=True)
    path = parts / f"{row['task_hash']}.parquet"
    _atomic_write_table(row_table(row), path)
    return path


def write_text(path: Path, text: str) -> None:
    """Write a small text file atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _files(out: Path) -> list[Path]:
    out = Path(out)
    compacted = sorted(out.glob("results-*.parquet"))
    parts = sorted((out / PARTS).glob("*.parquet")) if (out / PARTS).is_dir() else []
    return compacted + parts


def clean_temporaries(out: Path) -> None:
    """Remove ``*.tmp`` files left by a killed writer."""
    out = Path(out)
    for d in (out, out / PARTS):
        if d.is_dir():
            for f in d.glob(".*.tmp"):
                f.unlink(missing_ok=True)


def _read(files: Iterable[Path]) -> list[pa.Table]:
    tables = []
    for f in files:
        try:
            table = pq.read_table(f)
        except FileNotFoundError:  # merged into a results file by a concurrent compaction
            continue
        if table.num_rows:
            tables.append(table.replace_schema_metadata(None))
    return tables


def _merge(tables: list[pa.Table]) -> pa.Table | None:
    """The stored rows as one table: one row per task hash (the last file's), ordered by
    experiment and task index, all-missing columns left out; None if the rows cannot
    share one schema (a column that holds numbers in one file and text in another)."""
    if not tables:
        return pa.table({})
    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    hashes = table.column("task_hash").to_numpy(zero_copy_only=False)
    _, last_reversed = np.unique(hashes[::-1], return_index=True)
    table = table.take(np.sort(len(hashes) - 1 - last_reversed))
    table = table.sort_by([(c, "ascending") for c in _ORDER if c in table.column_names])
    first = [c for c in ("task_hash", "input_hash", "experiment", "task_index") if c in table.column_names]
    rest = sorted(c for c in table.column_names
                  if c not in first and (c in KEEP or table.column(c).null_count < table.num_rows))
    return table.select(first + rest)


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`_merge` for rows that share no schema (pandas concatenation, object columns)."""
    df = df.drop_duplicates(subset="task_hash", keep="last")
    df = df.sort_values([c for c in _ORDER if c in df.columns], kind="stable").reset_index(drop=True)
    first = [c for c in ("task_hash", "input_hash", "experiment", "task_index") if c in df.columns]
    rest = sorted(c for c in df.columns if c not in first and (c in KEEP or df[c].notna().any()))
    return df[first + rest]


def done_hashes(out: Path) -> set[str]:
    """Hashes of the tasks stored in ``out`` (finished, with or without an error)."""
    out = Path(out)
    hashes: set[str] = set()
    if (out / PARTS).is_dir():
        hashes.update(p.stem for p in (out / PARTS).glob("*.parquet"))
    for f in out.glob("results-*.parquet"):
        hashes.update(pq.read_table(f, columns=["task_hash"]).column("task_hash").to_pylist())
    return hashes


def error_hashes(out: Path) -> set[str]:
    """Hashes of stored tasks whose row records an error."""
    df = load(out)
    if df.empty or "error" not in df.columns:
        return set()
    return set(df.loc[df["error"].notna(), "task_hash"])


def load(out: str | Path) -> pd.DataFrame:
    """Every stored row of ``out``, one per task hash, ordered by experiment and task index.

    Columns: task_hash, input_hash, experiment, task_index, then the rest sorted by
    name (parameters, ``param.*`` and ``input.*`` flattened, metrics, ``error``,
    ``traceback`` and the timing columns elapsed_s, reference_s, finished_at,
    worker).  Columns that no stored task uses (all values missing) are left out.
    """
    out = Path(out)
    if not out.is_dir():
        raise FileNotFoundError(f"results folder {str(out)!r} does not exist")
    tables = _read(_files(out))
    merged = _merge(tables)
    if merged is None:
        return _order(pd.concat([t.to_pandas() for t in tables], ignore_index=True, sort=False))
    return merged.to_pandas()


def compact(out: Path) -> Path | None:
    """Merge every stored file into one ``results-<stamp>.parquet`` (columns no row uses
    left out, as in :func:`load`); returns it (None if nothing is stored).

    If the rows cannot share one schema (e.g. a parameter that is a number in one
    experiment and a string in another), the files are left as they are.
    """
    out = Path(out)
    files = _files(out)
    if not files:
        return None
    if len(files) == 1 and files[0].parent == out:  # one merged file already
        return files[0]
    table = _merge(_read(files))
    if table is None:
        return None
    path = out / f"results-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}.parquet"
    _atomic_write_table(table, path)
    for f in files:
        if f != path:
            f.unlink(missing_ok=True)
    return path


class StaleResultsError(ValueError):
    """A results folder holds rows of another version of the experiment."""


def check_version(out: Path, name: str, digest: str, tasks: set[str]) -> None:
    """Refuse to write into ``out`` when it holds rows that are no task of this
    experiment (``tasks``: the task hashes of its definition, quick and full): results
    of another version of it (an edited grid, input, reference or metric), which would
    otherwise be mixed with this version's.  A grown grid keeps its old tasks and is
    resumed.  The :class:`StaleResultsError` names the versions and how to proceed."""
    out = Path(out)
    if not out.is_dir():
        return
    stale = done_hashes(out) - tasks
    if not stale:
        return
    versions: set[str] = set()
    table = load(out)
    if "experiment_digest" in table.columns:
        rows = table[table["task_hash"].isin(stale)]
        versions = {str(d) for d in rows["experiment_digest"].dropna().unique()}
    try:
        meta = json.loads((out / METADATA).read_text())
        if isinstance(meta, dict) and meta.get("_digest") and not versions:
            versions.add(str(meta["_digest"]))
    except (OSError, ValueError):
        pass
    seen = f" (digest {', '.join(sorted(versions))})" if versions else ""
    raise StaleResultsError(
        f"{out} holds {len(stale)} results of another version of experiment {name!r}{seen}, which are no task of "
        f"this definition (digest {digest}): rows of different versions are not mixed. Run into a new folder "
        f"(--out {out}-{digest[:8]}, or sweep.run(..., out=...)), or delete {out} to start again, or restore the "
        f"experiment as it was to resume it")


def save_experiment(out: Path, raw: Mapping[str, Any], digest: str | None = None) -> None:
    """Record the experiment definition next to its results (``OUT/_experiment.json``),
    with its version (``_digest``) when given."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = dict(raw) if digest is None else {**raw, "_digest": digest}
    write_text(out / METADATA, json.dumps(record, indent=2, sort_keys=True, default=str))
    (out / _LEGACY_METADATA).unlink(missing_ok=True)  # it made pandas.read_parquet(OUT) fail


def save_progress(out: Path, experiment: str, phase: str, done: int, total: int) -> None:
    """Record how far the current run of ``out`` is (``OUT/_progress.json``), for watchers
    such as ``workbench reproduce`` whose sweeps run in another process.

    ``phase``: ``"compiling"`` (the first task of each kernel group, in the submitting process),
    ``"running"`` or ``"done"``; ``done`` / ``total``: tasks of this run finished / to run."""
    write_text(Path(out) / PROGRESS, json.dumps({"experiment": experiment, "phase": phase, "done": int(done),
                                                 "total": int(total), "time": time.time()}))


def read_progress(out: Path) -> dict[str, Any] | None:
    """The last :func:`save_progress` record of ``out`` (None if there is none or it is unreadable)."""
    try:
        return json.loads((Path(out) / PROGRESS).read_text())
    except (OSError, ValueError):
        return None
