"""``workbench reproduce``: execute the notebooks that regenerate the papers' figures and tables.

Each notebook of ``notebooks/`` (a ``.ipynb`` paired with a jupytext ``.py`` script) reproduces one
result (a pip-installed wheel carries the notebooks, see :mod:`workbench.sweep.resources`); :func:`reproduce` executes them with papermill on a kernel running the current
Python (so a fresh ``pip install -e .`` needs no Jupyter set-up), writes the executed
notebooks under ``results_dir`` and lets them write their figures (PNG, PDF) and tables
(CSV, Markdown) under ``figures_dir``: ``figures/quick/`` (git-ignored) for the quick
sizes, so that a quick run never overwrites the full-size files committed in
``figures/``.  Before the first notebook it compiles the kernels the notebooks' sweeps
call, once, in this process (:func:`workbench.sweep.warmup.compile_experiments`), and
while a notebook runs it shows the progress its sweeps record (``_progress.json``).

Sits at the top of the package: nothing else in ``workbench`` imports it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..sweep import pool as _pool
from ..sweep import resources as _resources

__all__ = ["NOTEBOOKS", "NEEDS", "EXPERIMENTS", "reproduce", "notebooks_dir", "kernel_environment",
           "KERNEL_NAME", "QUICK_FIGURES", "default_figures_dir"]

#: name -> what it reproduces (in execution order; the cheap ones first)
NOTEBOOKS: dict[str, str] = {
    "feature_table": "Khattak & Mikaitis Table II / MMA-Sim Table 4 from the presets",
    "discrepancy_table": "MMA-Sim Table 8 on every preset, bitwise disagreement, discriminating inputs",
    "quantiser_discrepancy": "MX/NVFP4 quantisers (torchao, pychop, ml_dtypes, MMA-Sim) vs OCP on the scale suite (issue 52)",
    "non_monotonicity": "non-monotonic unnormalised sums (Fasi et al. 2021)",
    "cdna3_rounding_bias": "MMA-Sim Figure 3: CDNA3 round-down bias vs an RZ twin",
    "fig7_multiword": "Khattak & Mikaitis Figure 7: multi-word GEMM, 3x3 panels with the published data",
    "markidis_vs_ootomo": "Markidis vs Ootomo-Yokota over n and exponent ranges; Table 5-style input",
    "explore": "a custom unit vs presets, with its step-by-step trace",
    "solvers_ir": "LU-IR and GMRES-IR with the LU on matrix-unit models, kappa 1e0..1e12 (issue 18)",
    "deepseek_fp8_gemm": "DeepSeek-V3's fp8 GEMM error vs K on Hopper wgmma, chained and promoted, and Blackwell",
    "torch_training": "an MLP trained on digits with every GEMM on MI250X/A100/H100 units (workbench.torch)",
    "emulation_safety": "where each FP64 emulation (FP8/INT8 Ozaki-I/-II) is safe, per unit; GEMMul8's B200 table",
    "charlm_recipes": "case study C: a char transformer in bf16, MXFP8, NVFP4 (+SR, +RHT) on a simulated B200",
}

#: notebook -> modules it needs beyond the base install (skipped with a message when absent)
NEEDS: dict[str, tuple[str, ...]] = {
    "torch_training": ("torch", "sklearn"),
    "charlm_recipes": ("torch",),
}

#: name -> the experiment files of ``experiments/`` its sweeps start from
EXPERIMENTS: dict[str, tuple[str, ...]] = {
    "discrepancy_table": ("preset_discrepancy",),
    "cdna3_rounding_bias": ("cdna3_rounding_bias",),
    "fig7_multiword": ("fig7_multiword",),
    "markidis_vs_ootomo": ("markidis_vs_ootomo",),
    "emulation_safety": ("emulation_safety",),
}

KERNEL_NAME = "workbench-python"
#: Where quick runs write their figures and tables by default (git-ignored).
QUICK_FIGURES = Path("figures") / "quick"


def notebooks_dir() -> Path:
    """The reproduction notebooks: ``notebooks/`` of the checkout this package is imported
    from, or the copy a wheel carries (:func:`workbench.sweep.resources.data_dir`)."""
    return _resources.data_dir("notebooks")


def kernel_environment(spec_root: Path) -> dict[str, str]:
    """Write a kernelspec ``workbench-python`` for ``sys.executable`` under ``spec_root``
    and return the environment variables that make Jupyter find it.

    Nothing is installed in the user's Jupyter folders: the spec lives in ``spec_root``
    (a temporary folder) and is found through ``JUPYTER_PATH``.
    """
    import json

    kdir = spec_root / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     "--IPKernelApp.log_level=ERROR"],   # not its warning about local TCP, once per notebook
            "display_name": f"Python ({Path(sys.executable).parent.parent.name})", "language": "python",
            "env": {"MPLBACKEND": "Agg"}}
    (kdir / "kernel.json").write_text(json.dumps(spec, indent=1))
    old = os.environ.get("JUPYTER_PATH")
    return {"JUPYTER_PATH": str(spec_root) + (os.pathsep + old if old else "")}


def _select(only: str | Sequence[str] | None) -> list[str]:
    if only is None:
        return list(NOTEBOOKS)
    names = [only] if isinstance(only, str) else list(only)
    out = []
    for n in names:
        key = n[:-6] if n.endswith(".ipynb") else n
        if key not in NOTEBOOKS:
            raise ValueError(f"unknown notebook {n!r}; expected one of {', '.join(NOTEBOOKS)}")
        out.append(key)
    return out


def default_figures_dir(quick: bool) -> Path:
    """Where a run writes its figures unless told: :data:`QUICK_FIGURES` (``figures/quick``,
    git-ignored) for quick runs, ``figures`` (the committed files) for full ones."""
    return QUICK_FIGURES if quick else Path("figures")


class _SweepProgress(threading.Thread):
    """Shows, on stderr, the progress the sweeps under ``root`` record while a notebook runs
    (each sweep rewrites ``<root>/<name>/_progress.json`` as its tasks finish)."""

    def __init__(self, root: Path, label: str) -> None:
        super().__init__(daemon=True)
        self.root, self.label, self.since = root, label, time.time()
        self._stop_event = threading.Event()
        self._bars: dict[str, Any] = {}

    def run(self) -> None:
        while not self._stop_event.wait(0.5):
            self._poll()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self._poll()
        for bar in self._bars.values():
            bar.close()

    def _poll(self) -> None:
        from tqdm.auto import tqdm

        from ..sweep import store, warmup

        for folder in sorted(self.root.glob("*/")):
            rec = store.read_progress(folder)
            if rec is None or rec["time"] < self.since or rec["total"] == 0:
                continue
            phase = f": {warmup.COMPILING}" if rec["phase"] == "compiling" else ""
            desc = f"{self.label}: sweep {folder.name}{phase}"
            bar = self._bars.get(folder.name)
            if bar is None:
                bar = self._bars[folder.name] = tqdm(total=rec["total"], initial=rec["done"], desc=desc, unit="task",
                                                     file=sys.stderr, dynamic_ncols=True, leave=True)
            if bar.disable:       # closed: that sweep is done
                continue
            bar.set_description_str(desc, refresh=False)
            bar.bar_format = warmup.NO_ETA if rec["phase"] == "compiling" else None
            bar.total = rec["total"]
            bar.n = rec["done"]
            bar.refresh()
            if rec["phase"] == "done":
                bar.close()


def reproduce(quick: bool = True, only: str | Sequence[str] | None = None, results_dir: str | Path = "results",
              figures_dir: str | Path | None = None, *, workers: int = 2, parameters: dict | None = None,
              log: bool = True, out: str | Path | None = None) -> list[Path]:
    """Execute the reproduction notebooks and return the files they wrote.

    Parameters
    ----------
    quick:
        Run each notebook's quick defaults (minutes on 2 cores); False runs its full set.
    only:
        A notebook name (``"fig7_multiword"``; see :data:`NOTEBOOKS`) or several; None = all.
    results_dir:
        Executed notebooks go to ``results_dir/notebooks/``; sweep results (Parquet, resumable)
        to ``results_dir/sweeps/``.
    figures_dir:
        Figures (PNG, PDF) and tables (CSV, Markdown); default :data:`QUICK_FIGURES`
        (``figures/quick``, git-ignored) for quick runs and ``figures`` for full ones.
    workers:
        Worker processes of the sweeps.
    parameters:
        Extra papermill parameters given to every notebook (names a notebook does not
        declare are ignored by it).
    log:
        Show progress on stderr: the kernels compiled before the first notebook, one line
        per notebook (its number, name and, when done, seconds) and its sweeps' progress bars.
    out:
        The folder that relative ``results_dir`` and ``figures_dir`` are taken in (created);
        default the working directory.  The notebooks run there too.

    Returns
    -------
    The executed notebooks and every figure/table file written or rewritten during the
    run, as paths.  A notebook that fails raises ``papermill.PapermillExecutionError``
    after its partly executed copy has been saved under ``results_dir``.
    """
    import papermill as pm

    names = _select(only)
    base = Path.cwd() if out is None else Path(out).resolve()
    base.mkdir(parents=True, exist_ok=True)
    results = (base / Path(results_dir)).resolve()
    figures = (base / Path(default_figures_dir(quick) if figures_dir is None else figures_dir)).resolve()
    (results / "notebooks").mkdir(parents=True, exist_ok=True)
    (results / "sweeps").mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    nb_dir = notebooks_dir()
    experiments = [_resources.data_dir("experiments") / f"{e}.toml" for n in names for e in EXPERIMENTS.get(n, ())]
    if experiments:
        from ..sweep.warmup import KERNEL_TOUR, compile_experiments

        seconds, compiled = compile_experiments([*experiments, KERNEL_TOUR], quick=quick, progress=log)
        if log and compiled:
            print(f"compiled {compiled} kernels in {seconds:.0f} s (cached for the next runs)", file=sys.stderr,
                  flush=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="workbench-kernel-") as tmp, \
            _pool.environment(kernel_environment(Path(tmp))):
        for number, name in enumerate(names, 1):
            absent = [m for m in NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
            if absent:
                print(f"[{number}/{len(names)}] {name}: skipped: needs {', '.join(absent)} (pip install "
                      "torch==2.13.0, then pip install -e '.[torch]')", flush=True)
                continue
            src = nb_dir / f"{name}.ipynb"
            if not src.exists():
                raise FileNotFoundError(f"{src} not found (make it from its paired script: "
                                        f"jupytext --sync notebooks/{name}.py)")
            dst = results / "notebooks" / f"{name}.ipynb"
            params = {"quick": bool(quick), "out_dir": str(figures), "sweep_dir": str(results / "sweeps"),
                      "workers": int(workers), **(parameters or {})}
            before = {p: p.stat().st_mtime_ns for p in figures.iterdir() if p.is_file()}
            label = f"[{number}/{len(names)}] {name}"
            if log:
                print(f"{label}: {NOTEBOOKS[name]}", file=sys.stderr, flush=True)
            watch = _SweepProgress(results / "sweeps", label)
            if log:
                watch.start()
            t0 = time.time()
            try:
                pm.execute_notebook(str(src), str(dst), parameters=params, kernel_name=KERNEL_NAME,
                                    cwd=str(base), progress_bar=False, report_mode=False)
            finally:
                if log:
                    watch.stop()
            if log:
                print(f"{label}: done in {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
            written.append(dst)
            written += sorted(p for p in figures.iterdir()
                              if p.is_file() and before.get(p) != p.stat().st_mtime_ns)
    return written
