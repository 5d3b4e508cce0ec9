"""``workbench reproduce``: execute the notebooks that regenerate the papers' figures and tables.

Each notebook of ``notebooks/`` (a ``.ipynb`` paired with a jupytext ``.py`` script) reproduces one
result; :func:`reproduce` executes them with papermill on a kernel running the current
Python (so a fresh ``pip install -e .`` needs no Jupyter set-up), writes the executed
notebooks under ``results_dir`` and lets them write their figures (PNG, PDF) and tables
(CSV, Markdown) under ``figures_dir``.

Sits at the top of the package: nothing else in ``workbench`` imports it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NOTEBOOKS", "NEEDS", "reproduce", "notebooks_dir", "kernel_environment", "KERNEL_NAME"]

#: name -> what it reproduces (in execution order; the cheap ones first)
NOTEBOOKS: dict[str, str] = {
    "feature_table": "Khattak & Mikaitis Table II / MMA-Sim Table 4 from the presets",
    "discrepancy_table": "MMA-Sim Table 8 on every preset, bitwise disagreement, discriminating inputs",
    "non_monotonicity": "non-monotonic unnormalised sums (Fasi et al. 2021)",
    "cdna3_rounding_bias": "MMA-Sim Figure 3: CDNA3 round-down bias vs an RZ twin",
    "fig7_multiword": "Khattak & Mikaitis Figure 7: multi-word GEMM, 3x3 panels with the published data",
    "markidis_vs_ootomo": "Markidis vs Ootomo-Yokota over n and exponent ranges; Table 5-style input",
    "explore": "a custom unit vs presets, with its step-by-step trace",
    "solvers_ir": "LU-IR and GMRES-IR with the LU on matrix-unit models, kappa 1e0..1e12 (issue 18)",
    "deepseek_fp8_gemm": "DeepSeek-V3's fp8 GEMM error vs K on Hopper wgmma, chained and promoted, and Blackwell",
    "torch_training": "an MLP trained on digits with every GEMM on MI250X/A100/H100 units (workbench.torch)",
}

#: notebook -> modules it needs beyond the base install (skipped with a message when absent)
NEEDS: dict[str, tuple[str, ...]] = {
    "torch_training": ("torch", "sklearn"),
}

KERNEL_NAME = "workbench-python"


def notebooks_dir() -> Path:
    """The ``notebooks/`` folder of the repository this package is installed from."""
    return Path(__file__).resolve().parent.parent / "notebooks"


def kernel_environment(spec_root: Path) -> dict[str, str]:
    """Write a kernelspec ``workbench-python`` for ``sys.executable`` under ``spec_root``
    and return the environment variables that make Jupyter find it.

    Nothing is installed in the user's Jupyter folders: the spec lives in ``spec_root``
    (a temporary folder) and is found through ``JUPYTER_PATH``.
    """
    import json

    kdir = spec_root / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
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


def reproduce(quick: bool = True, only: str | Sequence[str] | None = None, results_dir: str | Path = "results",
              figures_dir: str | Path = "figures", *, workers: int = 2, parameters: dict | None = None,
              log: bool = True) -> list[Path]:
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
        Figures (PNG, PDF) and tables (CSV, Markdown).
    workers:
        Worker processes of the sweeps.
    parameters:
        Extra papermill parameters given to every notebook (names a notebook does not
        declare are ignored by it).
    log:
        Print one line per notebook (name, seconds).

    Returns
    -------
    The executed notebooks and every figure/table file written or rewritten during the
    run, as paths.  A notebook that fails raises ``papermill.PapermillExecutionError``
    after its partly executed copy has been saved under ``results_dir``.
    """
    import papermill as pm

    names = _select(only)
    results = Path(results_dir).resolve()
    figures = Path(figures_dir).resolve()
    (results / "notebooks").mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    nb_dir = notebooks_dir()
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="workbench-kernel-") as tmp:
        env = kernel_environment(Path(tmp))
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            for name in names:
                absent = [m for m in NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
                if absent:
                    print(f"{name}: skipped: needs {', '.join(absent)} (pip install torch==2.13.0, then "
                          f"pip install -e '.[torch]')", flush=True)
                    continue
                src = nb_dir / f"{name}.ipynb"
                if not src.exists():
                    raise FileNotFoundError(f"{src} not found (make it from its paired script: jupytext --sync notebooks/{name}.py)")
                dst = results / "notebooks" / f"{name}.ipynb"
                params = {"quick": bool(quick), "out_dir": str(figures), "sweep_dir": str(results / "sweeps"),
                          "workers": int(workers), **(parameters or {})}
                before = {p: p.stat().st_mtime_ns for p in figures.iterdir() if p.is_file()}
                t0 = time.time()
                pm.execute_notebook(str(src), str(dst), parameters=params, kernel_name=KERNEL_NAME,
                                    cwd=str(nb_dir.parent), progress_bar=False, report_mode=False)
                if log:
                    print(f"{name}: {time.time() - t0:.1f} s", flush=True)
                written.append(dst)
                written += sorted(p for p in figures.iterdir()
                                  if p.is_file() and before.get(p) != p.stat().st_mtime_ns)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return written
