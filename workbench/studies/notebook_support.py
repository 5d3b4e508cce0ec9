"""What every notebook of ``notebooks/`` shares: paths, figure and table writers, sweeps.

A notebook's ``parameters`` cell sets ``quick``, ``out_dir``, ``sweep_dir`` and ``workers``
(papermill overrides them; ``workbench reproduce`` passes its folders); the next cell
builds ``rep = Report(out_dir, sweep_dir, quick=quick, workers=workers)`` and writes
through it:

* :meth:`Report.save_fig` - ``name.png`` and ``name.pdf`` (no time stamps, so a rerun
  with the same data gives the same PDF);
* :meth:`Report.save_table` - ``name.csv`` (full precision) and ``name.md`` (a GitHub
  Markdown table, numbers to 4 significant digits);
* :meth:`Report.run_sweep` - an experiment of ``experiments/`` run (or resumed) into
  ``sweep_dir/<name>`` (``<name>-quick`` for the quick set).

The experiment files and the published data come from the package
(:func:`workbench.sweep.resources.data_dir`: a checkout's top-level folders, or the copy a
wheel carries), so the notebooks run from a pip-installed wheel too.

:func:`parameter_list` reads a list parameter given as a list (``papermill -y``) or as the
text ``papermill -p`` passes (``"[16, 256]"`` or ``"16,256"``).

Sits above :mod:`workbench.sweep` (data flows formats -> engine -> ... -> sweep ->
notebooks): nothing else in ``workbench`` imports it.
"""
from __future__ import annotations

import ast
import math
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..sweep import resources as _resources

__all__ = ["Report", "repository_root", "markdown_table", "parameter_list", "feature_row", "STYLE"]

#: matplotlib settings of every figure the notebooks write
STYLE: dict[Any, Any] = {"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "font.size": 9,
                         "legend.fontsize": 8, "savefig.bbox": "tight"}


def repository_root(start: Path | None = None) -> Path:
    """The repository holding ``experiments/`` and ``workbench/``: the first of ``start``
    (default: the working directory) and its parents that has both, else the checkout
    this package is installed from.  Raises FileNotFoundError when neither has them."""
    here = Path.cwd() if start is None else Path(start).resolve()
    for p in (here, *here.parents, Path(__file__).resolve().parents[2]):
        if (p / "experiments").is_dir() and (p / "workbench").is_dir():
            return p
    raise FileNotFoundError(f"no folder with experiments/ and workbench/ at or above {here}, nor beside the "
                            f"installed package {Path(__file__).resolve().parents[1]}: run from a checkout of the "
                            "repository")


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub Markdown table of ``df``: floats to 4 significant digits, NaN/None empty,
    ``|`` escaped and line breaks turned into spaces."""
    cols = [_cell(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def parameter_list(name: str, value: Any, element: Callable[[Any], Any] = int) -> list | None:
    """A list parameter of a notebook as a list of ``element``; None stays None.

    Accepts a list or tuple (the notebook's default, ``papermill -y "ks: [16, 256]"``)
    or what ``papermill -p`` passes: the string ``"[16, 256]"`` (a Python/JSON list literal),
    ``"16,256"`` (comma-separated items) or one number (``-p ks 16``).  Raises ValueError naming the parameter and the bad value.
    """
    if value is None:
        return None
    items = value
    if isinstance(value, str):
        text = value.strip()
        try:
            items = ast.literal_eval(text) if text.startswith(("[", "(")) else [s.strip() for s in text.split(",")]
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"{name}={value!r}: expected a list such as [16, 256] ({exc})") from None
    if not isinstance(items, (list, tuple)):  # one value: papermill -p ks 16 passes the int 16
        items = [items]
    if not items:
        raise ValueError(f"{name}={value!r}: expected a non-empty list")
    out = []
    for x in items:
        if element is int and isinstance(x, str) and x.lstrip("-").isdigit():
            x = int(x)
        if element is int and (isinstance(x, bool) or not isinstance(x, (int, np.integer))):
            raise ValueError(f"{name}={value!r}: {x!r} is not an integer")
        out.append(element(x))
    return out


def feature_row(model: Any) -> dict[str, Any]:
    """The features of Khattak & Mikaitis (2025) Table II of a T-FDPA unit: product
    alignment ``(2, F)``, accumulator output precision ``2 + F + ceil(log2(N_FMA + 1))``
    (the carry bits of N_FMA + 1 addends), ``N_FMA = L / interleave``, final rounding
    (``Trunc`` for RZ; with c added late, the rounding of that addition), c order and
    interleaving.  Other kinds have no alignment window: ``{"kind": ..., "note": ...}``.
    """
    features = model.operation.table2_features(model)
    if features is None:
        return {"Table II features": f"none: kind {model.kind} has no alignment window of F bits"}
    return features


class Report:
    """Where a notebook writes, and how: see the module docstring.

    ``out_dir`` and ``sweep_dir`` are taken relative to ``root`` unless absolute: by
    default the repository root (:func:`repository_root`), or the working directory when
    there is none (a pip-installed wheel); ``out_dir`` is created.
    """

    def __init__(self, out_dir: str | Path = "figures", sweep_dir: str | Path = "results/sweeps", *,
                 quick: bool = True, workers: int = 2, root: Path | None = None) -> None:
        import matplotlib.pyplot as plt

        if not isinstance(quick, bool):
            raise ValueError(f"quick={quick!r}: expected True or False")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers={workers!r}: expected a positive number of worker processes")
        if root is None:
            try:
                root = repository_root()
            except FileNotFoundError:   # installed from a wheel, run outside a checkout
                root = Path.cwd()
        self.root = Path(root)
        self.out = self.resolve(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.sweep_dir = self.resolve(sweep_dir)
        self.quick = quick
        self.workers = workers
        #: names of the files written, in order
        self.written: list[str] = []
        plt.rcParams.update(STYLE)

    def resolve(self, p: str | Path) -> Path:
        """``p`` if absolute, else ``p`` under the repository root."""
        p = Path(p)
        return p if p.is_absolute() else self.root / p

    def save_fig(self, fig: Any, name: str) -> None:
        """Write ``name.png`` (110 dpi) and ``name.pdf`` into the output folder."""
        fig.savefig(self.out / f"{name}.png", dpi=110, metadata={"Software": None})
        fig.savefig(self.out / f"{name}.pdf", metadata={"CreationDate": None, "Creator": None, "Producer": None})
        self.written += [f"{name}.png", f"{name}.pdf"]

    def save_table(self, df: pd.DataFrame, name: str, title: str = "") -> None:
        """Write ``name.csv`` (full precision) and ``name.md`` (``title``, then :func:`markdown_table`)."""
        df.to_csv(self.out / f"{name}.csv", index=False)
        (self.out / f"{name}.md").write_text((f"{title}\n\n" if title else "") + markdown_table(df) + "\n")
        self.written += [f"{name}.csv", f"{name}.md"]

    def save_text(self, name: str, text: str) -> None:
        """Write ``name`` (a file name with its suffix) holding ``text``."""
        (self.out / name).write_text(text)
        self.written.append(name)

    def load_experiment(self, name: str) -> dict:
        """The experiment ``experiments/<name>.toml`` as a dict: the root's ``experiments/``
        when it has that file, else the package's (:func:`workbench.sweep.resources.data_dir`)."""
        path = self.root / "experiments" / f"{name}.toml"
        if not path.is_file():
            path = _resources.data_dir("experiments") / f"{name}.toml"
        with open(path, "rb") as f:
            return tomllib.load(f)

    def paper_data(self, p: str | Path) -> Path:
        """Published data: ``p`` if absolute, else ``p`` under the root when it exists there,
        else ``p`` under the package's ``paper_data/`` (a wheel's copy; the leading
        ``paper_data/`` of ``p`` may be left out).  Raises FileNotFoundError naming ``p``."""
        p = Path(p)
        if p.is_absolute():
            return p
        if (self.root / p).exists():
            return self.root / p
        inner = Path(*p.parts[1:]) if p.parts[:1] == ("paper_data",) else p
        bundled = _resources.data_dir("paper_data") / inner
        if not bundled.exists():
            raise FileNotFoundError(f"paper data {str(p)!r} is neither under {self.root} nor in {bundled.parent}")
        return bundled

    def run_sweep(self, name: str, spec: dict | None = None) -> pd.DataFrame:
        """Run (or resume) experiment ``name`` (or ``spec``) into ``sweep_dir/<name>[-quick]``;
        print the task count, errors and seconds; return the results."""
        from workbench import sweep

        spec = self.load_experiment(name) if spec is None else spec
        out = self.sweep_dir / (name + ("-quick" if self.quick else ""))
        t0 = time.time()
        df = sweep.run(spec, out=out, workers=self.workers, quick=self.quick, progress=False, retry_errors=True)
        n_err = int(df["error"].notna().sum()) if "error" in df else 0
        print(f"{name}: {len(df)} tasks ({n_err} with errors) in {time.time() - t0:.1f} s -> {out}")
        return df

    def summary(self) -> str:
        """One line: the output folder and the files written."""
        return f"written to {self.out}: {', '.join(self.written) or 'nothing'}"
