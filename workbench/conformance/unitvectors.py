"""Conformance vectors of a matrix unit: dot products as bit patterns, exported and re-run.

:func:`export_unit` draws ``count`` dot products for one unit (a catalogue preset, a unit
file, any :class:`~workbench.engine.Model`), spread over the input kinds that find
differences between units (:data:`FLOAT_KINDS`; integer units :data:`INT_KINDS`), runs
them on the unit and writes one set folder (:mod:`~workbench.conformance.layout`): one
``<kind>.npz`` per input kind holding ``a``, ``b`` (n x K), ``c``, ``d`` (n) and, for
block-scaled units, ``scale_a``, ``scale_b`` (n x ceil(K / k_block)), every array the
bit patterns of its format.  Row r is the 1 x K x 1 product ``d = a[r] . b[r] + c[r]`` on
the unit - K consumed in blocks of L, chained, zero-padded at the end, element k scaled
by ``scale_a[r, k // k_block] * scale_b[r, k // k_block]`` - exactly what
:func:`workbench.gemm` returns for ``A = a[r:r+1]``, ``B = b[r:r+1].T``, ``C = c[r]``.

:func:`check_set` re-runs a set on a unit, or on a Python callable
``f(a, b, c, scale_a, scale_b) -> d`` (values as float64 arrays, ``scale_*`` None for
unscaled sets), and reports every file's mismatches with the first examples.
"""
from __future__ import annotations

import importlib
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..engine import core as _core
from ..engine.model import Model, operation
from ..matmul.product import gemm
from ..numbers import formats as _formats
from ..numbers import inputs as _inputs
from ..units import catalogue as _catalogue
from ..units.resolution import UnitSpec, resolve, unit_name
from . import layout as _layout

__all__ = ["FLOAT_KINDS", "INT_KINDS", "DEFAULT_COUNT", "MAX_ELEMENTS", "export_unit", "export_units", "check_set",
           "check_folder", "evaluate", "load_callable", "FileReport", "SetReport", "slug"]

#: input kinds of floating-point units -> what they exercise
FLOAT_KINDS: dict[str, str] = {
    "normal": "N(0, 1) inputs and c (one block of L products)",
    "wide": "s * m * 2**e, e uniform over the input format's whole exponent range, subnormals included "
            "(Ootomo-Yokota style), c over the products' range: alignment, overflow, underflow",
    "dnn": "N(0, 1) + Bernoulli(0.001) * N(0, 100) (Xie et al. 2025, Section 3.1.4, DNN-like)",
    "bits": "uniformly random bit patterns of a, b and c: every binade, subnormals, signed zeros, Inf, NaN",
    "cancel": "dot products whose large products cancel exactly (condition number ~1e6): the sum's low bits",
    "chained": "K = 4.5 blocks, c != 0: the carry of each block's result into the next (Xie Algorithm 5)",
}
#: input kinds of integer units -> what they exercise
INT_KINDS: dict[str, str] = {
    "uniform": "a, b uniform over the input formats, c uniform over int32",
    "extremes": "a, b from {min, max, 0, +-1}, c near the int32 limits: wrap-around or saturation",
    "chained": "K = 4.5 blocks of extremes with c near the limits: overflow inside the chain",
}
#: dot products per unit when not told
DEFAULT_COUNT = 10_000
#: the most elements (count x K, the largest K of a set) one operand may hold: refused before allocation
MAX_ELEMENTS = 1 << 26
_MAX_COUNT = 10_000_000


def slug(name: str) -> str:
    """A folder name for a unit name: ``hopper/wgmma/fp16->fp32`` -> ``hopper_wgmma_fp16-to-fp32``."""
    s = name.replace("->", "-to-").replace("/", "_")
    return re.sub(r"[^A-Za-z0-9._+-]", "_", s) or "unit"


def _formats_of(model: Model) -> dict[str, Any]:
    fa = _formats.number_format(model.in_format)
    fb = _formats.number_format(model.b_format or model.in_format)
    fo = _formats.number_format(model.out_format)
    out: dict[str, Any] = {"a": fa, "b": fb, "c": fo, "d": fo}
    if operation(model.kind).scaled:
        fs = _formats.format(model.scale_format or "e8m0")
        out["scale_a"] = out["scale_b"] = fs
    return out


def _k_one(model: Model) -> int:
    """K of a one-block kind: the unit's block (at least 4 products, a whole scale block)."""
    return max(int(operation(model.kind).block_size(model)), 4, int(model.k_block or 0))


def _k_chained(model: Model) -> int:
    k1 = _k_one(model)
    step = int(model.k_block or 1)
    return 4 * k1 + max(step, (k1 // 2) // step * step)


def _round(x: np.ndarray, f: Any) -> np.ndarray:
    return _formats.round(np.asarray(x, dtype=np.float64), f, saturate=True)


def _random_bits(rng: np.random.Generator, shape: tuple[int, ...], f: _formats.FloatFormat) -> np.ndarray:
    if f.width == 64:
        return _formats.from_bits(rng.integers(0, np.iinfo(np.uint64).max, size=shape, dtype=np.uint64,
                                               endpoint=True), f)
    return _formats.from_bits(rng.integers(0, 1 << f.width, size=shape, dtype=np.int64), f)


def _wide(rng: np.random.Generator, shape: tuple[int, ...], f: _formats.FloatFormat, lo: int, hi: int,
          signed: bool = True) -> np.ndarray:
    e = rng.integers(lo, hi + 1, size=shape)
    m = rng.uniform(1.0, 2.0, size=shape)
    s = rng.choice([-1.0, 1.0], size=shape) if signed else 1.0
    return _round(s * np.ldexp(m, e), f)


def _float_rows(kind: str, rng: np.random.Generator, n: int, K: int, fa: Any, fb: Any, fo: Any
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if kind in ("normal", "chained"):
        a, b = _round(rng.standard_normal((n, K)), fa), _round(rng.standard_normal((n, K)), fb)
        if kind == "chained":   # blocks of different magnitudes, so that each carry matters
            a = _round(a * np.ldexp(1.0, rng.integers(-4, 5, size=(n, 1))), fa)
        c = _round(rng.standard_normal(n) * (4.0 if kind == "chained" else 1.0), fo)
    elif kind == "wide":
        a = _wide(rng, (n, K), fa, fa.emin - fa.man_bits, fa.emax - 1)
        b = _wide(rng, (n, K), fb, fb.emin - fb.man_bits, fb.emax - 1)
        lo = max(fo.emin - fo.man_bits, fa.emin + fb.emin - fa.man_bits - fb.man_bits)
        c = _wide(rng, (n,), fo, lo, min(fo.emax - 1, fa.emax + fb.emax + 1))
    elif kind == "dnn":
        s1, s2, s3 = (int(v) for v in rng.integers(0, 2 ** 62, size=3))
        a = _round(_inputs.dnn_like((n, K), s1), fa)
        b = _round(_inputs.dnn_like((n, K), s2), fb)
        c = _round(_inputs.dnn_like((n,), s3), fo)
    elif kind == "bits":
        a, b, c = _random_bits(rng, (n, K), fa), _random_bits(rng, (n, K), fb), _random_bits(rng, (n,), fo)
    else:   # cancel: per row [P, P, S] . [Q, -Q, T], positions shuffled (inputs.adversarial, one row each)
        h = max(1, (K - 1) // 2) if K < 6 else (2 * K) // 5
        s = K - 2 * h
        P, Q = _round(rng.standard_normal((n, h)), fa), _round(rng.standard_normal((n, h)), fb)
        sigma = np.sqrt(2.0 * h / (1e6 * np.sqrt(s)))
        S, T = _round(sigma * rng.standard_normal((n, s)), fa), _round(sigma * rng.standard_normal((n, s)), fb)
        a, b = np.concatenate([P, P, S], axis=1), np.concatenate([Q, -Q, T], axis=1)
        perm = np.argsort(rng.random((n, K)), axis=1)
        a, b = np.take_along_axis(a, perm, 1), np.take_along_axis(b, perm, 1)
        c = np.where(rng.random(n) < 0.5, 0.0, _round(sigma * sigma * rng.standard_normal(n), fo))
    return a, b, c


def _int_rows(kind: str, rng: np.random.Generator, n: int, K: int, fa: Any, fb: Any, fo: Any
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def extremes(f: Any, shape: tuple[int, ...]) -> np.ndarray:
        vals = np.array(sorted({f.min, f.max, 0, 1, -1 if f.min < 0 else 1, f.min + 1, f.max - 1}), dtype=np.float64)
        return rng.choice(vals, size=shape)

    if kind == "uniform":
        a = rng.integers(fa.min, fa.max, size=(n, K), endpoint=True).astype(np.float64)
        b = rng.integers(fb.min, fb.max, size=(n, K), endpoint=True).astype(np.float64)
        c = rng.integers(fo.min, fo.max, size=n, endpoint=True).astype(np.float64)
    else:
        a, b = extremes(fa, (n, K)), extremes(fb, (n, K))
        near = np.concatenate([fo.max - rng.integers(0, 1 << 16, size=n), fo.min + rng.integers(0, 1 << 16, size=n),
                               rng.integers(-(1 << 20), 1 << 20, size=n)])
        c = rng.choice(near, size=n).astype(np.float64)
    return a, b, c


def _scales(kind: str, rng: np.random.Generator, shape: tuple[int, ...], fs: _formats.FloatFormat) -> np.ndarray:
    if kind == "bits":
        return _random_bits(rng, shape, fs)
    if fs.man_bits == 0:    # E8M0: powers of two
        spread = 40 if kind == "wide" else 4
        return np.ldexp(1.0, rng.integers(-spread, spread + 1, size=shape))
    lo, hi = (fs.emin, fs.emax) if kind == "wide" else (-3, 3)    # UE4M3: positive values
    return _wide(rng, shape, fs, lo, hi, signed=False)


def _seed(name: str, seed: int, kind: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), zlib.crc32(kind.encode())])


def evaluate(model: Model, a: np.ndarray, b: np.ndarray, c: np.ndarray, scale_a: np.ndarray | None = None,
             scale_b: np.ndarray | None = None) -> np.ndarray:
    """``d[r]`` = the unit's ``a[r] . b[r] + c[r]`` (with block scales for scaled units):
    :func:`workbench.engine.core.dots` for unscaled units (one compiled call), one
    :func:`workbench.gemm` per row for scaled ones."""
    if not operation(model.kind).scaled:
        return _core.dots(model, a, b, c)
    if scale_a is None or scale_b is None:
        raise ValueError(f"the {model.kind} unit needs block scales: the vectors hold none")
    out = np.empty(a.shape[0])
    for r in range(a.shape[0]):
        out[r] = gemm(a[r:r + 1], b[r:r + 1].T, c[r:r + 1, None], model=model, scale_a=scale_a[r:r + 1],
                      scale_b=scale_b[r:r + 1].T)[0, 0]
    return out


def _unit_record(model: Model) -> dict[str, Any]:
    name = unit_name(model)
    rec: dict[str, Any] = {"name": name, "kind": model.kind,
                           "parameters": {k: v for k, v in model.params.items() if v is not None},
                           "read_parameters": _catalogue.read_parameters(model)}
    if isinstance(model, _catalogue.Preset) and model.name:
        rec.update(unit_string=model.unit_string, devices=list(model.devices), source=model.source,
                   notes=model.notes, evidence=[e.as_dict() for e in model.evidence])
    else:
        rec.update(source="custom unit (not a catalogue preset)", evidence=[])
    return rec


def _check_count(count: int, k_max: int) -> None:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= count <= _MAX_COUNT:
        raise ValueError(f"count={count!r}: expected a whole number of dot products from 1 to {_MAX_COUNT:,}")
    if count * k_max > MAX_ELEMENTS:
        raise ValueError(f"count={count:,} dot products of up to K={k_max} elements is {count * k_max:,} elements "
                         f"per operand: expected at most {MAX_ELEMENTS:,} (count <= {MAX_ELEMENTS // k_max:,})")


def export_unit(unit: UnitSpec, folder: str | Path, count: int = DEFAULT_COUNT, *, seed: int = 0) -> Path:
    """Export ``count`` dot products of ``unit`` into the set folder ``folder`` (created);
    its ``manifest.json``'s path.  The rows are spread evenly over the input kinds."""
    model = resolve(unit, what="unit")
    op = operation(model.kind)
    kinds = INT_KINDS if op.integer else FLOAT_KINDS
    _check_count(count, _k_chained(model))
    fmts = _formats_of(model)
    name = unit_name(model)
    files: dict[str, dict[str, np.ndarray]] = {}
    entries: dict[str, dict[str, Any]] = {}
    per, extra = divmod(count, len(kinds))
    for i, (kind, what) in enumerate(kinds.items()):
        n = per + (i < extra)
        if n == 0:
            continue
        K = _k_chained(model) if kind == "chained" else _k_one(model)
        rng = _seed(name, seed, kind)
        rows = _int_rows if op.integer else _float_rows
        a, b, c = rows(kind, rng, n, K, fmts["a"], fmts["b"], fmts["c"])
        arrays = {"a": a, "b": b, "c": c}
        if op.scaled:
            nb = -(-K // int(model.k_block or K))
            arrays["scale_a"] = _scales(kind, rng, (n, nb), fmts["scale_a"])
            arrays["scale_b"] = _scales(kind, rng, (n, nb), fmts["scale_b"])
        arrays["d"] = evaluate(model, a, b, c, arrays.get("scale_a"), arrays.get("scale_b"))
        fname = f"{kind}.npz"
        files[fname] = {k: _layout.to_bits(v, fmts[k]) for k, v in arrays.items()}
        entries[fname] = {"input_kind": kind, "description": what, "rows": n, "K": K,
                          "arrays": {k: list(v.shape) for k, v in files[fname].items()}}
    manifest: dict[str, Any] = {"type": "unit", "workbench": __version__, "seed": seed, "count": count,
                "unit": _unit_record(model), "formats": {k: _layout.format_record(f) for k, f in fmts.items()},
                "semantics": "d[r] = the unit's 1 x K x 1 product a[r] . b[r] + c[r] (workbench.gemm with "
                             "A = a[r], B = b[r] as a column, C = c[r]): K consumed in blocks of L, chained, "
                             "zero-padded; scaled units multiply element k by scale_a[r, k // k_block] * "
                             "scale_b[r, k // k_block]. NaN results compare equal whatever their payload."}
    if op.scaled:
        unit_rec: dict[str, Any] = manifest["unit"]
        unit_rec["k_block"] = int(model.k_block or 0)
    return _layout.write_set(Path(folder), manifest, files, entries)


def export_units(units: list[UnitSpec] | None, folder: str | Path, count: int = DEFAULT_COUNT, *, seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> list[Path]:
    """Export every unit of ``units`` (None: every catalogue preset) into its own set
    folder under ``folder`` (named by :func:`slug`) and write ``index.json``; the set folders."""
    root = Path(folder)
    models = [resolve(u, what="unit") for u in units] if units is not None else list(_catalogue.records())
    for m in models:   # refuse before writing anything
        _check_count(count, _k_chained(m))
    sets = []
    for m in models:
        sub = root / slug(unit_name(m))
        export_unit(m, sub, count, seed=seed)
        sets.append(sub)
        if progress:
            progress(unit_name(m))
    _layout.write_index(root, sets, {"type": "units", "workbench": __version__, "count": count, "seed": seed})
    return sets


# ------------------------------------------------------------------ checking
#: what a callable under check receives and returns
Callable_ = Callable[..., Any]


def load_callable(spec: str) -> Callable_:
    """The function ``module:function`` (``function`` may be dotted: ``pkg.mod:Class.method``),
    imported with importlib - never evaluated."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"callable {spec!r}: expected 'module:function' (e.g. 'mypkg.mma:dot')")
    mod_name, attr = spec.split(":")
    ident = r"[A-Za-z_][A-Za-z0-9_]*"
    if not re.fullmatch(rf"{ident}(\.{ident})*", mod_name) or not re.fullmatch(rf"{ident}(\.{ident})*", attr):
        raise ValueError(f"callable {spec!r}: 'module:function' must be dotted Python names")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"callable {spec!r}: cannot import module {mod_name!r} ({exc})") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"callable {spec!r}: module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"callable {spec!r}: {attr!r} is a {type(obj).__name__}, not callable")
    return obj


@dataclass
class FileReport:
    """One file's result: rows checked, mismatching rows and the first examples."""

    file: str
    rows: int
    mismatches: int
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SetReport:
    """One set's result on one unit or callable."""

    folder: str
    unit: str
    against: str
    files: list[FileReport]

    @property
    def mismatches(self) -> int:
        return sum(f.mismatches for f in self.files)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def text(self) -> str:
        lines = [f"{self.folder}: {self.unit} on {self.against}: {self.rows - self.mismatches:,} of {self.rows:,} "
                 f"rows agree, {self.mismatches:,} mismatch"]
        for f in self.files:
            if f.mismatches:
                lines.append(f"  {f.file}: {f.mismatches:,} of {f.rows:,} rows differ; first:")
                for ex in f.examples:
                    lines.append("    " + ", ".join(f"{k}={v}" for k, v in ex.items()))
        return "\n".join(lines)


def _hex(v: np.ndarray, width: int) -> str:
    digits = max(1, -(-width // 4))
    return " ".join(f"{int(x):0{digits}x}" for x in np.ravel(v))


def _compatible(model: Model, formats: dict[str, Any], folder: Path) -> None:
    want = {k: _formats.number_format(r["name"]) for k, r in formats.items()}
    have = _formats_of(model)
    for k in ("a", "b", "d") + (("scale_a",) if "scale_a" in want else ()):
        if k not in have:
            raise ValueError(f"{folder}: the vectors are for a block-scaled unit ({k} in {want[k].name}); "
                             f"{unit_name(model)} takes no block scales")
        if have[k] != want[k]:
            raise ValueError(f"{folder}: the vectors' {k} is {want[k].name}, but {unit_name(model)} takes {have[k].name} "
                             f"there: expected a unit with formats a={want['a'].name}, b={want['b'].name}, "
                             f"d={want['d'].name}")
    if "scale_a" in have and "scale_a" not in want:
        raise ValueError(f"{folder}: the vectors hold no block scales, which {unit_name(model)} needs")


def check_set(folder: str | Path, against: UnitSpec | Callable_ | None = None, *, examples: int = 5) -> SetReport:
    """Re-run one set folder on ``against``: a unit (anything :func:`workbench.units.resolve`
    reads), a callable ``f(a, b, c, scale_a, scale_b) -> d`` (float64 values), or None (the
    unit the manifest names, by its catalogue name).  Each file's SHA-256 is checked first."""
    root = Path(folder)
    man = _layout.read_manifest(root)
    if man.get("type") != "unit":
        raise ValueError(f"{root}: a {man.get('type')!r} set (the scale-rounding suite is checked with "
                         "workbench.conformance.scales.check_suite); expected unit vectors")
    fmts = {k: _formats.number_format(r["name"]) for k, r in man["formats"].items()}
    fn: Callable_ | None = None
    if against is None:
        name = man["unit"]["name"]
        if _catalogue.by_name(name) is None:
            raise ValueError(f"{root}: unit {name!r} is not a catalogue preset: give the unit (--unit) or a "
                             "callable (--callable module:function) to check the vectors against")
        model: Model | None = resolve(name)
        label = name
    elif callable(against) and not isinstance(against, Model):
        fn, model, label = against, None, getattr(against, "__qualname__", repr(against))
    else:
        model = resolve(against, what="unit")
        label = unit_name(model)
    if model is not None:
        _compatible(model, man["formats"], root)
    reports = []
    for entry in man["files"]:
        arr = _layout.load_file(root, entry)
        vals = {k: _layout.from_bits(v, fmts[k]) for k, v in arr.items()}
        if model is not None:
            got = evaluate(model, vals["a"], vals["b"], vals["c"], vals.get("scale_a"), vals.get("scale_b"))
        else:
            assert fn is not None
            got = np.asarray(fn(vals["a"], vals["b"], vals["c"], vals.get("scale_a"), vals.get("scale_b")),
                             dtype=np.float64).reshape(-1)
            if got.shape != vals["d"].shape:
                raise ValueError(f"{label} returned {got.shape[0]} values for {entry['file']}'s "
                                 f"{vals['d'].shape[0]} rows: expected one d per row")
        fd = fmts["d"]
        isnan = np.isnan(got)
        ok = np.isnan(vals["d"]) & isnan
        fin = ~isnan
        gbits = np.zeros_like(arr["d"])
        if isinstance(fd, _formats.IntFormat):
            gbits[fin] = _layout.to_bits(got[fin], fd)
        else:
            repr_ok = np.zeros(got.shape, bool)
            repr_ok[fin] = _formats.is_representable(got[fin], fd)
            gbits[repr_ok] = _formats.to_bits(got[repr_ok], fd)
            fin &= repr_ok
        ok |= fin & (gbits == arr["d"]) & ~np.isnan(vals["d"])
        bad = np.flatnonzero(~ok)
        width = fd.width
        exs = []
        for r in bad[:examples]:
            ex = {"row": int(r), "a": _hex(arr["a"][r], fmts["a"].width), "b": _hex(arr["b"][r], fmts["b"].width),
                  "c": _hex(arr["c"][r], width)}
            if "scale_a" in arr:
                ex.update(scale_a=_hex(arr["scale_a"][r], 8), scale_b=_hex(arr["scale_b"][r], 8))
            ex.update(expected=f"{_hex(arr['d'][r], width)} ({vals['d'][r]!r})",
                      got=(f"{_hex(gbits[r], width)} ({got[r]!r})" if fin[r] or isnan[r] else
                           f"{got[r]!r} (not a {fd.name} value)"))
            exs.append(ex)
        reports.append(FileReport(entry["file"], int(len(ok)), int(bad.size), exs))
    return SetReport(str(root), man["unit"]["name"], label, reports)


def check_folder(folder: str | Path, against: UnitSpec | Callable_ | None = None, *, examples: int = 5,
                 only: list[str] | None = None) -> list[SetReport]:
    """:func:`check_set` on every set of ``folder`` (one set folder, or an export of several
    with ``index.json``); ``only``: the unit names to check (others skipped)."""
    sets = _layout.set_folders(folder)
    out = []
    for s in sets:
        if only is not None:
            man = _layout.read_manifest(s)
            if man.get("unit", {}).get("name") not in only:
                continue
        out.append(check_set(s, against, examples=examples))
    if only is not None and not out:
        raise ValueError(f"{folder}: none of the units {only} is in these vectors")
    return out
