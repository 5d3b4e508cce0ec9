"""The interactive explorer of ``notebooks/explore.ipynb`` (ipywidgets).

Pick a device preset or build a custom unit (kind, L, F or neab, rounding, c early or
late, input and output formats), an input generator and a range of K, and see, updated
on every change:

(a) the normwise error ``||D - AB||_inf / (||A||_inf ||B||_inf)`` against the exact
    product versus K, for the unit and the chosen presets, with the unit's a-priori
    bound (:func:`workbench.matmul.bounds.block_fma_bound`; Blanchard et al. 2020);
(b) the bit-level trace (:func:`workbench.explain`) of one dot product of the unit;
(c) the simplest input found on which the unit differs from a chosen preset
    (:func:`workbench.discrimination.discriminate_outcome`; Valpey et al. 2025 Sec. 4);
(d) the unit's feature sheet: its Khattak & Mikaitis (2025) Table II features and the
    conclusions of the Fasi et al. (2021) test suite run on it as a black box.

Every panel's result is cached, so a change recomputes only what it affects.  The
status line shows a spinner while computing (the first update compiles the kernels,
up to a minute on a cold cache) and then the seconds each panel took
(:attr:`Explorer.timings`).  Without a browser (papermill, pytest) the same object
computes the panels from its initial values: :meth:`Explorer.figure`,
:meth:`Explorer.curves` and friends.

Sits at the top with :mod:`workbench.studies.notebook_support`: nothing else in ``workbench`` imports it.
"""
from __future__ import annotations

import html
import io
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..matmul import bounds
from ..units import catalogue, schedules, unitfile
from ..numbers import exact, inputs, metrics
from .. import units
from ..engine import ROUNDINGS, Model
from ..numbers.formats import round as round_to
from .notebook_support import feature_row

__all__ = ["Explorer", "DEVICES", "CUSTOM_KINDS", "IN_FORMATS", "OUT_FORMATS", "K_CHOICES", "SCHEDULES",
           "dot_trace_length"]

#: devices offered for comparison and discrimination (their preset for the unit's formats)
DEVICES = ("V100", "T4", "A100", "L40S", "H100", "B200", "MI100", "MI250X", "MI300X")
#: kinds a custom unit can have from the controls (the others need parameters set in code)
CUSTOM_KINDS = ("t-fdpa", "e-fdpa", "fma")
IN_FORMATS = ("fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp32")
OUT_FORMATS = ("fp32", "fp16")
#: how this unit's GEMMs are composed (:data:`workbench.units.schedules.SCHEDULES`): the unit alone
#: ("chain"), accumulation outside the unit, DeepSeek's promotion, cuBLAS' H100 schedules
SCHEDULES = tuple(schedules.SCHEDULES)
#: the inner dimensions of the K range slider
K_CHOICES = tuple(2**i for i in range(2, 15))
#: the bound's internal precision for units that add their block exactly (E-FDPA, FMA):
#: delta = 0 there; block_fma_bound needs a positive u_high, and 2^-60 loosens it negligibly
_EXACT_SUM_U = 2.0**-60


def dot_trace_length(k_min: int, L: int) -> int:
    """K of the traced dot product: the smallest K of the range, at most four blocks of L
    (a longer trace is not read)."""
    return max(1, min(k_min, 4 * L))


@lru_cache(maxsize=256)
def _inputs(generator: str, in_format: str, m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    A, B, _ = inputs.matrices(generator, m, k, n, seed)
    A = np.asarray(round_to(A, in_format, saturate=True), dtype=np.float64)
    B = np.asarray(round_to(B, in_format, saturate=True), dtype=np.float64)
    A.setflags(write=False)
    B.setflags(write=False)
    return A, B


@lru_cache(maxsize=256)
def _exact(generator: str, in_format: str, m: int, k: int, n: int, seed: int) -> np.ndarray:
    A, B = _inputs(generator, in_format, m, k, n, seed)
    return np.asarray(exact.gemm(A, B), dtype=np.float64)


@lru_cache(maxsize=2048)
def _error(model: Model, generator: str, m: int, k: int, n: int, seed: int, schedule: str = "chain") -> float:
    from ..matmul.product import gemm

    A, B = _inputs(generator, model.in_format, m, k, n, seed)
    D = np.asarray(gemm(A, B, model=model, schedule=schedule), dtype=np.float64)
    return float(metrics.normwise_error_inf(D, _exact(generator, model.in_format, m, k, n, seed), A, B))


@lru_cache(maxsize=256)
def _discrimination(model_a: Model, model_b: Model, budget: int) -> Any:
    from ..discrimination.search import discriminate_outcome

    return discriminate_outcome(model_a, model_b, budget=budget)


@lru_cache(maxsize=256)
def _fasi(model: Model) -> dict[str, Any]:
    from ..probes import from_model
    from ..probes.fasi import fasi_suite

    return fasi_suite(from_model(model))


def a_priori_bound(model: Model, k: int) -> float:
    """The constant c of ``|D - AB| <= c |A||B|`` for K = ``k`` on ``model``
    (:func:`workbench.matmul.bounds.block_fma_bound`; inputs already in the unit's format).
    Units that add a block exactly (E-FDPA; an FMA chain, block 1) have delta = 0."""
    shape = model.operation.bound_shape(model)
    if shape is None:
        raise ValueError(f"kind={model.kind!r}: no a-priori bound here (the operation gives no block-FMA bound)")
    if shape.F is None:  # the block is summed exactly
        return bounds.block_fma_bound(k, shape.block, None, shape.rounding, model.out_format, u_high=_EXACT_SUM_U)
    return bounds.block_fma_bound(k, shape.block, shape.F, shape.rounding, model.out_format)


def _pre(text: str) -> str:
    return f"<pre style='font-size:11px; line-height:1.25; white-space:pre'>{html.escape(text)}</pre>"


class Explorer:
    """The explorer's controls, panels and callbacks; display it in a notebook.

    The keyword arguments are the initial control values (the ``parameters`` cell of
    ``explore.ipynb``); ``preset`` (a device or a preset name) starts on that preset
    instead of the custom unit (a device with ``in_format``/``out_format``, or a whole unit name
    such as ``"H100:fp16:fp32"`` or ``"hopper/wgmma/fp16->fp32"``, :func:`workbench.units.resolve`); ``unit`` (the path of a unit file, :func:`workbench.load_unit`)
    adds that unit to the preset list as ``"file: <name>"`` and starts on it; ``schedule``
    (a name of :data:`SCHEDULES`) composes this unit's GEMMs of panel (a) as a library would
    (the compared devices run their units alone; a schedule that holds no rule for a K of
    the range says so in the status line).  Raises ValueError for values the controls do
    not offer.
    """

    def __init__(self, *, in_format: str = "fp16", out_format: str = "fp32", kind: str = "t-fdpa", L: int = 16,
                 F: int = 26, rounding: str = "rne", c_position: str = "early", preset: str | None = None,
                 generator: str = "normal", k_range: Sequence[int] = (16, 1024), m: int = 8, n: int = 8,
                 seed: int = 0, compare_with: Sequence[str] = ("V100", "A100", "H100"),
                 discriminate_with: str = "H100", discriminate_budget: int = 20000,
                 unit: str | Path | None = None, schedule: str = "chain") -> None:
        import ipywidgets as w

        def choice(name: str, value: Any, options: Sequence[Any]) -> Any:
            if value not in options:
                raise ValueError(f"{name}={value!r}: expected one of {list(options)}")
            return value

        k_lo, k_hi = (int(k) for k in k_range)
        choice("k_range[0]", k_lo, K_CHOICES)
        choice("k_range[1]", k_hi, K_CHOICES)
        if k_lo > k_hi:
            raise ValueError(f"k_range={tuple(k_range)!r}: expected (smallest K, largest K)")
        for name, v in (("m", m), ("n", n), ("discriminate_budget", discriminate_budget)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}={v!r}: expected a positive integer")
        self._m, self._n = m, n
        records = [r for r in catalogue.records() if not r.operation.scaled]
        self._records: dict[str, Model] = {r.name: r for r in records}
        if unit is not None and preset is not None:
            raise ValueError(f"give preset={preset!r} or unit={str(unit)!r}, not both")
        start = None if preset is None else self._resolve_preset(preset, in_format, out_format)
        if unit is not None:
            start = f"file: {Path(unit).name}"
            self._records[start] = unitfile.load_unit(unit)
        style = {"description_width": "90px"}
        lay = w.Layout(width="260px")

        def css(widget: Any, name: str) -> Any:
            widget.add_class(f"wb-{name}")
            return widget

        self.source = css(w.ToggleButtons(options=["custom", "preset"], value="custom" if start is None else "preset",
                                          description="unit", style={**style, "button_width": "78px"}), "source")
        self.preset = css(w.Dropdown(options=sorted(self._records), value=start or self._default_preset(),
                                     description="preset", style=style, layout=w.Layout(width="330px")), "preset")
        self.kind = css(w.Dropdown(options=CUSTOM_KINDS, value=choice("kind", kind, CUSTOM_KINDS),
                                   description="kind", style=style, layout=lay), "kind")
        self.in_format = css(w.Dropdown(options=IN_FORMATS, value=choice("in_format", in_format, IN_FORMATS),
                                        description="input", style=style, layout=lay), "in-format")
        self.out_format = css(w.Dropdown(options=OUT_FORMATS, value=choice("out_format", out_format, OUT_FORMATS),
                                         description="output", style=style, layout=lay), "out-format")
        self.L = css(w.IntSlider(value=L, min=1, max=64, description="L", continuous_update=False, style=style,
                                 layout=lay), "L")
        self.F = css(w.IntSlider(value=F, min=0, max=56, description="F", continuous_update=False, style=style,
                                 layout=lay), "F")
        self.neab = css(w.IntSlider(value=0, min=-30, max=40, description="neab", continuous_update=False,
                                    style=style, layout=lay), "neab")
        self.rounding = css(w.Dropdown(options=ROUNDINGS, value=choice("rounding", rounding, ROUNDINGS),
                                       description="rounding", style=style, layout=lay), "rounding")
        self.c_position = css(w.ToggleButtons(options=["early", "late"],
                                              value=choice("c_position", c_position, ("early", "late")),
                                              description="c added", style={**style, "button_width": "78px"}),
                              "c-position")
        self.schedule = css(w.Dropdown(options=SCHEDULES, value=choice("schedule", schedule, SCHEDULES),
                                       description="schedule", style=style, layout=lay), "schedule")
        self.generator = css(w.Dropdown(options=sorted(inputs.GENERATORS),
                                        value=choice("generator", generator, sorted(inputs.GENERATORS)),
                                        description="inputs", style=style, layout=lay), "generator")
        self.k_range = css(w.SelectionRangeSlider(options=K_CHOICES, index=(K_CHOICES.index(k_lo),
                                                                            K_CHOICES.index(k_hi)),
                                                  description="K", continuous_update=False, style=style,
                                                  layout=w.Layout(width="330px")), "k-range")
        self.seed = css(w.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed", style=style,
                                         layout=lay), "seed")
        self.compare_with = css(w.SelectMultiple(options=DEVICES, value=tuple(choice("compare_with", d, DEVICES)
                                                                              for d in compare_with),
                                                 description="compare", rows=5, style=style, layout=lay), "compare")
        self.discriminate_with = css(w.Dropdown(options=DEVICES, value=choice("discriminate_with", discriminate_with,
                                                                              DEVICES),
                                                description="differ from", style=style, layout=lay), "discriminate")
        self.budget = discriminate_budget
        self.status = css(w.HTML(), "status")
        self.plot = css(w.Image(format="png", layout=w.Layout(width="640px")), "plot")
        self.trace = css(w.HTML(), "trace")
        self.discrimination = css(w.HTML(), "discrimination")
        self.sheet = css(w.HTML(), "sheet")
        panel = w.Layout(height="250px", overflow="auto", width="640px")
        tabs = w.Tab(children=[w.Box([self.trace], layout=panel), w.Box([self.discrimination], layout=panel),
                               w.Box([self.sheet], layout=panel)])
        for i, title in enumerate(["(b) trace", "(c) differing input", "(d) features"]):
            tabs.set_title(i, title)
        self._custom_controls = [self.kind, self.in_format, self.out_format, self.L, self.F, self.neab, self.rounding,
                                 self.c_position]
        controls = w.VBox([self.source, self.preset, *self._custom_controls, self.schedule,
                           w.HTML("<b>inputs and comparison</b>"), self.generator, self.k_range, self.seed,
                           self.compare_with, self.discriminate_with])
        self.widget = w.HBox([controls, w.VBox([self.status, self.plot, tabs])])
        self.widget.add_class("wb-explorer")
        #: seconds each panel took in the last update ("a", "b", "c", "d", "total")
        self.timings: dict[str, float] = {}
        #: the last error (a ValueError of an impossible unit), or None
        self.error: str | None = None
        self._syncing = False
        self._sync_neab()
        self._enable()
        self.update()
        self.neab.observe(self._on_neab, names="value")
        self.F.observe(self._on_F, names="value")
        self.out_format.observe(lambda _: self._sync_neab(), names="value")
        for c in [self.source, self.preset, *self._custom_controls, self.schedule, self.generator, self.k_range,
                  self.seed, self.compare_with, self.discriminate_with]:
            c.observe(self._on_change, names="value")

    # ------------------------------------------------------------ the unit
    def _default_preset(self) -> str:
        return self._resolve_preset("A100", "fp16", "fp32")

    def _resolve_preset(self, name: str, in_format: str, out_format: str) -> str:
        if name in self._records:
            return name
        if ":" in name or "->" in name:     # a whole unit name (workbench.units.resolve)
            key = str(getattr(units.resolve(name, what="preset"), "name", ""))
            if key not in self._records:
                raise ValueError(f"preset={name!r} is {key}, which takes block scale factors; the explorer "
                                 f"offers the unscaled presets")
            return key
        return catalogue.preset(name, in_format, out_format).name

    def model(self) -> Model:
        """The unit the controls describe (ValueError when they describe none)."""
        if self.source.value == "preset":
            return self._records[self.preset.value]
        kw: dict[str, Any] = {"kind": self.kind.value, "c_position": self.c_position.value}
        if self.kind.value != "fma":
            kw.update(L=self.L.value, F=self.F.value, rounding=self.rounding.value)
        return catalogue.custom_model(self.in_format.value, self.out_format.value, **kw)

    def presets(self) -> dict[str, Model | str]:
        """Device -> its preset for the unit's formats, or the reason it has none."""
        unit = self.model()
        out: dict[str, Model | str] = {}
        for d in self.compare_with.value:
            try:
                out[d] = catalogue.preset(d, unit.in_format, unit.out_format)
            except ValueError:
                out[d] = f"{d} has no {unit.in_format} -> {unit.out_format} preset"
        return out

    def ks(self) -> list[int]:
        """The inner dimensions of the K range (powers of two)."""
        lo, hi = self.k_range.value
        return [k for k in K_CHOICES if lo <= k <= hi]

    # ------------------------------------------------------------ panels
    def curves(self) -> pd.DataFrame:
        """Panel (a) as data: unit, k, normwise error, and the unit's a-priori bound (NaN
        for a kind whose operation gives no block-FMA bound, and under a schedule other
        than the unit alone, which the bound does not describe)."""
        unit = self.model()
        units: list[tuple[str, Model]] = [("this unit", unit)]
        units += [(d, p) for d, p in self.presets().items() if isinstance(p, Model)]
        # the CPU pair units have no block-FMA bound; a library's schedule is not what it bounds
        has_bound = unit.operation.bound_shape(unit) is not None and self.schedule.value == "chain"
        rows = []
        for k in self.ks():
            for label, mdl in units:
                sched = self.schedule.value if label == "this unit" else "chain"
                rows.append({"unit": label, "preset": getattr(mdl, "name", "custom"), "k": k,
                             "normwise_inf": _error(mdl, self.generator.value, self._m, k, self._n,
                                                    int(self.seed.value), sched),
                             "bound": a_priori_bound(unit, k) if label == "this unit" and has_bound else np.nan})
        return pd.DataFrame(rows)

    def figure(self, curves: pd.DataFrame | None = None) -> Any:
        """Panel (a) as a matplotlib Figure (not attached to pyplot)."""
        from matplotlib.figure import Figure

        res = self.curves() if curves is None else curves
        unit = self.model()
        fig = Figure(figsize=(6.4, 3.9), dpi=100)
        ax = fig.subplots()
        for i, (label, sub) in enumerate(res.groupby("unit", sort=False)):
            y = sub["normwise_inf"].to_numpy()
            zero = y == 0
            ax.loglog(sub["k"], np.where(zero, np.nan, y), "o-" if i == 0 else "s--", lw=2.2 if i == 0 else 1.2,
                      ms=5 if i == 0 else 4, label=label if i else f"this unit ({unit.kind}, {self._short(unit)}"
                      + (f"; schedule {self.schedule.value})" if self.schedule.value != "chain" else ")"))
            if zero.any():
                ax.plot(sub["k"][zero], np.full(zero.sum(), ax.get_ylim()[0]), "v", color=ax.lines[-1].get_color(),
                        label=f"{label}: exact (error 0)")
        b = res[res["unit"] == "this unit"]
        if b["bound"].notna().any():
            ax.loglog(b["k"], b["bound"], "k:", lw=1.5, label="a-priori bound of this unit")
        ax.set_xlabel("K (inner dimension)")
        ax.set_ylabel(r"$\|D - AB\|_\infty / (\|A\|_\infty \|B\|_\infty)$")
        ax.set_title(f"(a) error vs K: {self.generator.value} inputs in {unit.in_format}, {self._m} x K x {self._n}, "
                     f"{unit.out_format} output, seed {self.seed.value}", fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        return fig

    @staticmethod
    def _short(m: Model) -> str:
        return ", ".join(x for x in m.describe().split(", ") if not x.startswith(("kind=", "in_format=",
                                                                                  "out_format=", "zero_exponent=")))

    def trace_text(self) -> str:
        """Panel (b): :func:`workbench.explain` on row 0 of A and column 0 of B."""
        from ..engine import explain

        unit = self.model()
        k = dot_trace_length(self.ks()[0], unit.L)
        A, B = _inputs(self.generator.value, unit.in_format, 1, k, 1, int(self.seed.value))
        return f"K = {k}, c = 0 ({self.generator.value} inputs, seed {self.seed.value})\n" + str(
            explain(A[0], B[:, 0], 0.0, unit))

    def discrimination_outcome(self) -> Any:
        """Panel (c) as data: the :class:`DiscriminationOutcome` of the unit against the
        preset of ``discriminate_with`` for its formats (None when that device has none)."""
        unit = self.model()
        try:
            other = catalogue.preset(self.discriminate_with.value, unit.in_format, unit.out_format)
        except ValueError:
            return None
        return _discrimination(unit, other, self.budget)

    def discrimination_text(self) -> str:
        """Panel (c) as text."""
        unit = self.model()
        out = self.discrimination_outcome()
        d = self.discriminate_with.value
        if out is None:
            return f"{d} has no {unit.in_format} -> {unit.out_format} preset to compare with"
        if out.result is None:
            return f"this unit vs {d}: {out.status} ({out.reason}; {out.candidates} candidates tried)"
        r = out.result
        terms = "\n".join(f"  a[{k}] = {a!r:<24} b[{k}] = {b!r}" for k, a, b in r.terms()) or "  (all products 0)"
        return (f"this unit vs {d} ({r.model_b.name}): found after {out.candidates} candidates ({r.method})\n"
                f"K = {r.K}, nonzero products:\n{terms}\nc = {r.c!r}\n"
                f"this unit gives {r.out_a!r}\n{d} gives        {r.out_b!r}")

    def feature_sheet(self) -> pd.DataFrame:
        """Panel (d) as data: feature, value, meaning (Khattak-Mikaitis Table II
        columns, then the Fasi et al. tests run on the unit as a black box)."""
        unit = self.model()
        rows = [{"feature": "parameters", "value": self._short(unit), "meaning": f"kind {unit.kind}"}]
        km = feature_row(unit)
        rows += [{"feature": k, "value": v, "meaning": "Khattak & Mikaitis 2025, Table II"} for k, v in km.items()]
        try:
            fasi = _fasi(unit)
        except ValueError as exc:  # the suite's constants do not fit every format (fp8: too few bits)
            rows.append({"feature": "Fasi et al. tests", "value": "not run", "meaning": str(exc)})
        else:
            rows += [{"feature": t.name, "value": t.conclusion, "meaning": t.meaning} for t in fasi.values()]
        return pd.DataFrame(rows)

    # ------------------------------------------------------------ callbacks
    def _sync_neab(self) -> None:
        from ..numbers.formats import format as fmt

        self._syncing = True
        try:
            self.neab.value = self.F.value - (fmt(self.out_format.value).p - 1)
        finally:
            self._syncing = False

    def _on_neab(self, change: dict) -> None:
        if self._syncing:
            return
        from ..numbers.formats import format as fmt

        self._syncing = True
        try:
            self.F.value = max(self.F.min, min(self.F.max, change["new"] + fmt(self.out_format.value).p - 1))
        finally:
            self._syncing = False
        self.update()

    def _on_F(self, change: dict) -> None:
        if not self._syncing:
            self._sync_neab()

    def _on_change(self, change: dict) -> None:
        if self._syncing:
            return
        self._enable()
        self.update()

    def _enable(self) -> None:
        custom = self.source.value == "custom"
        self.preset.disabled = custom
        for c in self._custom_controls:
            c.disabled = not custom
        if custom and self.kind.value == "fma":
            for c in (self.L, self.F, self.neab, self.rounding):
                c.disabled = True

    def update(self) -> None:
        """Recompute every panel (cached parts are reused) and show them; an impossible
        unit leaves the panels as they were and says why in the status line."""
        self.status.value = ("<span style='color:#a60'>&#9203; computing... (the first update compiles the "
                             "kernels: up to a minute)</span>")
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        try:
            unit = self.model()
            t = time.perf_counter()
            res = self.curves()
            fig = self.figure(res)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            timings["a"] = time.perf_counter() - t
            t = time.perf_counter()
            trace = self.trace_text()
            timings["b"] = time.perf_counter() - t
            t = time.perf_counter()
            disc = self.discrimination_text()
            timings["c"] = time.perf_counter() - t
            t = time.perf_counter()
            sheet = self.feature_sheet()
            timings["d"] = time.perf_counter() - t
        except ValueError as exc:
            self.error = str(exc)
            self.status.value = f"<span style='color:#b00'>&#10007; {html.escape(str(exc))}</span>"
            return
        self.error = None
        self.plot.value = buf.getvalue()
        self.trace.value = _pre(trace)
        self.discrimination.value = _pre(disc)
        self.sheet.value = sheet.to_html(index=False, escape=True)
        timings["total"] = time.perf_counter() - t0
        self.timings = timings
        missing = [p for p in self.presets().values() if isinstance(p, str)]
        self.status.value = (f"<span style='color:#070'>&#10003; {html.escape(getattr(unit, 'name', 'custom unit'))}"
                             f": updated in {timings['total']:.2f} s</span>"
                             + "".join(f"<br><span style='color:#a60'>{html.escape(s)}</span>" for s in missing))

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        try:
            unit = self.model()
        except ValueError as exc:
            return f"Explorer(<no unit: {exc}>)"
        return f"Explorer({getattr(unit, 'name', 'custom')}: {unit.describe()}; K {self.ks()[0]}..{self.ks()[-1]})"

