"""Experiment files: parsing, validation, grid expansion and task hashing.

An experiment is a TOML file (or the equivalent dict) described in
``experiments/README.md`` (the documentation's "Sweep files" page).  In short::

    name = "fig7_multiword"          # required; names the default output folder
    description = "..."              # optional free text (also: source, notes)
    reference = "exact"              # "exact" (default), "float64", "none" or "module:function"
    metrics = ["normwise_inf"]       # names in workbench.sweep.measures.METRICS or "module:function"

    [defaults]                       # merged into every [[grid]] table
    ...
    [[grid]]                         # one cartesian product; the experiment is their union
    preset = ["a100", "b200"]        # a list is an axis; scalars are fixed values
    in_format = "fp16"
    ...
    [quick]                          # replaces keys of every grid table under --quick
    k = [10, 100]

Integer keys (seed, m, k, n) also accept a range table ``{start = 0, stop = 100}``
(``step`` optional; stop excluded).

Expansion rule: every list is an axis of the product (in file order, first key
slowest); a table's values are expanded the same way (so ``params = {words = [1, 2]}``
is an axis); a list of tables is an axis whose items are expanded in turn (use it to
pair values, e.g. exponent ranges); a list inside a list is one literal value.
The grid-only key ``cases`` is a list of tables merged into the task, to pair
values of several task keys (``cases = [{preset = "B200"}, {preset = "B200",
variant = "rn"}]``).  ``exclude`` (top level or grid) is a list of tables; a task
matching every key of one of them is left out (``exclude = [{preset = "V100",
in_format = "bf16"}]``: combinations that do not exist).

An experiment file may name code: ``algorithm``, ``metrics`` and ``reference`` take
``"module:function"``, imported when the sweep runs (:func:`imports` lists them, and
``workbench sweep FILE --dry-run`` prints that list before it imports anything).  A unit
file (``unit = "file.toml"``) is data only.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..numbers import formats as _formats
from ..numbers import inputs as _inputs
from . import resources as _resources
from ..numbers.validation import unknown_name

#: Keys allowed at the top of an experiment file.
TOP_KEYS = ("name", "description", "source", "notes", "reference", "metrics", "defaults", "grid", "quick",
            "exclude")
#: Top-level keys that describe an experiment without changing what it computes: they are
#: left out of its :attr:`Experiment.digest`.
DESCRIPTIVE_KEYS = ("description", "source", "notes")

#: Keys of one task (after merging defaults and expanding the grid) -> meaning.
TASK_KEYS: dict[str, str] = {
    "preset": "device or architecture name for workbench.preset() with in_format/out_format, or a whole unit "
              "name (DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] or a catalogue name such as 'cdna3/mfma/fp16->fp32'), "
              "which fills in_format and out_format, or the path of a unit file ('mine.toml': the same as "
              "unit = 'mine.toml') (optional)",
    "instruction": "instruction passed to workbench.preset() (optional)",
    "variant": "variant passed to workbench.preset() (optional)",
    "model": "table of workbench.custom_model() arguments (kind, L, F, rounding, ...) instead of a preset",
    "unit": "path of a unit file (workbench.save_unit; relative to the experiment file) instead of a preset "
            "or model: fills model, in_format and out_format",
    "in_format": "input format of A and B (a workbench.numbers.formats name)",
    "out_format": "output format of C and D (a workbench.numbers.formats name)",
    "algorithm": "name in algorithms.ALGORITHMS, a built-in ('gemm', 'numpy') or 'module:function'",
    "params": "table of keyword arguments for the algorithm",
    "m": "rows of A and C", "k": "inner dimension", "n": "columns of B and C",
    "seed": "seed of the input generator (non-negative integer)",
    "input": "table: generator (workbench.numbers.inputs GENERATORS or PAIR_GENERATORS name), its parameters, round_to, c",
    "alpha": "scalar multiplying A B (default 1)", "beta": "scalar multiplying C (default 1)",
    "formats": "table of custom formats by name, each {exp_bits, man_bits[, bias, special, subnormals, signed]} "
               "(workbench.FloatFormat.custom): registered before the task runs, so in_format, out_format, "
               "model and params (word_format = ...) can name them",
}
#: keys of one entry of ``formats``
FORMAT_KEYS = ("exp_bits", "man_bits", "bias", "special", "subnormals", "signed")
#: Grid-only key: a list of tables, each merged into the task (pairs values of several keys).
CASES = "cases"
#: Grid (or top-level) key: a list of tables; a task whose values match every key of one
#: of them is left out (combinations that do not exist, e.g. ``{preset = "V100", in_format = "bf16"}``).
EXCLUDE = "exclude"
REQUIRED = ("algorithm", "m", "k", "n", "seed", "input")
REFERENCE_KINDS = ("exact", "float64", "none")


@dataclass(frozen=True)
class Task:
    """One point of the grid: the parameters (``spec``) and their hash."""

    index: int
    spec: dict[str, Any]
    hash: str
    input_hash: str

    @property
    def cost(self) -> float:
        """Rough relative cost used to start large tasks first: m k n, times the p(p+1)/2 word
        products of a task with ``words = p`` (multi-word algorithms)."""
        words = self.spec.get("params", {}).get("words", 1)
        products = words * (words + 1) // 2 if isinstance(words, int) and words > 1 else 1
        return float(self.spec["m"]) * self.spec["k"] * self.spec["n"] * products


@dataclass
class Experiment:
    """A parsed and validated experiment: metadata and the expanded tasks.

    ``digest`` identifies the experiment's version: a hash of its definition without the
    descriptive keys (:data:`DESCRIPTIVE_KEYS`), stored with every result row and in the
    results folder, which refuses rows of another version."""

    name: str
    description: str
    reference: str
    metrics: list[str]
    tasks: list[Task] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    excluded: int = 0

    @property
    def digest(self) -> str:
        return experiment_digest(self.raw)

    def __len__(self) -> int:
        return len(self.tasks)


def experiment_digest(raw: Mapping[str, Any]) -> str:
    """The version of an experiment definition: a hash of it without the keys that only
    describe it (:data:`DESCRIPTIVE_KEYS`)."""
    return stable_hash({k: v for k, v in raw.items() if k not in DESCRIPTIVE_KEYS})


def _excluded_by(combo: Mapping[str, Any], rules: list[Mapping[str, Any]]) -> bool:
    """Whether ``combo`` matches every key of one of the ``exclude`` tables (strings
    compared without case and surrounding blanks)."""
    def same(a: Any, b: Any) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            return a.strip().lower() == b.strip().lower()
        return bool(a == b)
    return any(all(k in combo and same(combo[k], v) for k, v in rule.items()) for rule in rules)


def _exclude_rules(value: Any, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(r, Mapping) and r for r in value):
        raise ValueError(f"{where}: exclude={value!r} must be a list of non-empty tables such as "
                         f"[{{preset = 'V100', in_format = 'bf16'}}]")
    for rule in value:
        for key in rule:
            if key not in TASK_KEYS:
                raise ValueError(f"{where}: exclude: {unknown_name('key', key, sorted(TASK_KEYS))}")
    return list(value)


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces (the text that is hashed)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def stable_hash(obj: Any, length: int = 16) -> str:
    """Hex SHA-256 prefix of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def read(path_or_dict: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The experiment as a plain dict: a TOML file is parsed (given by path, or by the name of
    an experiment the package carries, see :func:`workbench.sweep.resources.experiment_path`); a
    mapping is deep-copied."""
    if isinstance(path_or_dict, Mapping):
        return copy.deepcopy(dict(path_or_dict))
    path = _resources.experiment_path(path_or_dict)
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None


def _expand(value: Any) -> list[Any]:
    """All concrete values of a grid value (see the module docstring)."""
    if isinstance(value, Mapping):
        keys = list(value)
        options = [_expand(value[k]) for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*options)]
    if isinstance(value, list):
        if not value:
            raise ValueError("empty list")
        out: list[Any] = []
        for item in value:
            if isinstance(item, list):
                out.append(copy.deepcopy(item))
            else:
                out.extend(_expand(item))
        return out
    return [value]


_RANGE_KEYS = ("seed", "m", "k", "n")


def _ranges(merged: dict[str, Any], where: str) -> dict[str, Any]:
    """Replace ``{start, stop[, step]}`` tables of the integer keys by the lists they denote."""
    out = dict(merged)
    for key in _RANGE_KEYS:
        v = out.get(key)
        if isinstance(v, Mapping):
            extra = set(v) - {"start", "stop", "step"}
            if extra or "stop" not in v or not all(_is_int(x) for x in v.values()):
                raise ValueError(f"{where}: {key}={dict(v)!r}: a range is a table of integers "
                                 "{start = a, stop = b, step = c} (start and step optional)")
            r = list(range(v.get("start", 0), v["stop"], v.get("step", 1)))
            if not r:
                raise ValueError(f"{where}: {key}={dict(v)!r} is an empty range")
            out[key] = r
    return out


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        out[k] = copy.deepcopy(v)
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_format(where: str, key: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key}={value!r} must be a format name")
    try:
        _formats.number_format(value)      # integer formats too (s8, u8, s32: the integer units)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{where}: {key}={value!r} is not a known format ({exc})") from None


def _check_round_to(where: str, key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value in allowed:
        return
    _check_format(where, key, value)


def _check_generator_params(where: str, prefix: str, gen: str, table: Mapping[str, Any],
                            reserved: tuple[str, ...]) -> None:
    func = _inputs.PAIR_GENERATORS[gen] if gen in _inputs.PAIR_GENERATORS else _inputs.GENERATORS[gen]
    allowed = [p.name for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY]
    for key in table:
        if key not in reserved and key not in allowed:
            err = unknown_name(f"parameter of generator {gen!r}", key, allowed + list(reserved))
            raise ValueError(f"{where}: {prefix}.{key}: {err}")


def is_unit_name(preset: str) -> bool:
    """Whether a task's ``preset`` names a whole unit (``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]``
    or a catalogue name) rather than a device or architecture."""
    return ":" in preset or "->" in preset


def is_unit_file(preset: Any) -> bool:
    """Whether a task's ``preset`` is the path of a unit file (a name ending in ``.toml``,
    as :func:`workbench.units.resolve` reads it), which the task reads as ``unit``."""
    return isinstance(preset, str) and preset.strip().lower().endswith(".toml")


def _preset_file_as_unit(combo: dict[str, Any], where: str) -> dict[str, Any]:
    """A task with ``preset = "file.toml"`` as the task ``unit = "file.toml"``: the same
    file read the same way (:func:`_unit_task`, relative to the experiment file)."""
    if combo.get("unit") is not None:
        raise ValueError(f"{where}: preset={combo['preset']!r} is a unit file and unit={combo['unit']!r} is given "
                         f"too; give the file once, as unit = \"file.toml\"")
    out = {k: v for k, v in combo.items() if k != "preset"}
    out["unit"] = combo["preset"].strip()
    return out


def _preset_formats(out: dict[str, Any], where: str) -> None:
    """A preset task's formats: a whole unit name (:func:`workbench.units.resolve`) fills
    ``in_format``/``out_format`` (refusing different ones), and an input format that means
    another format on the device (a family such as ``fp8``, e4m3 on CDNA3) becomes the
    format the unit reads, so that the task says what runs."""
    from ..units import catalogue
    from .. import units

    name = out["preset"]
    if is_unit_name(name):
        if out.get("instruction") is not None or out.get("variant") is not None:
            raise ValueError(f"{where}: preset={name!r} names a whole unit; drop instruction/variant")
        try:
            m = units.resolve(name, what="preset")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        for key in ("in_format", "out_format"):
            given = out.get(key)
            device = name.split(":")[0] if ":" in name else str(getattr(m, "architecture", ""))
            if given is not None and _unit_format_or_none(device, given) != getattr(m, key):
                raise ValueError(f"{where}: {key}={given!r} but preset {name!r} has {key}={getattr(m, key)!r}")
            out[key] = getattr(m, key)
        return
    fin = out.get("in_format")
    if isinstance(fin, str):
        try:
            canon = catalogue.unit_format(name, fin)
        except ValueError:
            return                          # reported below, or by the model at run time
        if canon != _name_or_none(fin):
            out["in_format"] = canon


def _name_or_none(fmt: str) -> str | None:
    try:
        return _formats.number_format(fmt).name
    except ValueError:
        return None


def _unit_format_or_none(device: str, fmt: str) -> str | None:
    from ..units import catalogue

    if not device:
        return _name_or_none(fmt)
    try:
        return catalogue.unit_format(device, fmt)
    except ValueError:
        return _name_or_none(fmt)


def register_formats(table: Any, where: str = "formats") -> None:
    """Register a task's custom formats (``formats = {name = {exp_bits = .., man_bits = ..}}``)
    in this process (:func:`workbench.numbers.formats.register_format`); ValueError naming the
    entry and what was expected."""
    if table is None:
        return
    if not isinstance(table, Mapping):
        raise ValueError(f"{where}: formats={table!r} must be a table of name = {{exp_bits, man_bits, ...}}")
    for name, enc in table.items():
        if not isinstance(enc, Mapping):
            raise ValueError(f"{where}: formats.{name}={enc!r} must be a table with exp_bits and man_bits")
        for key in enc:
            if key not in FORMAT_KEYS:
                raise ValueError(f"{where}: formats.{name}: {unknown_name('format key', key, FORMAT_KEYS)}")
        try:
            _formats.register_format(_formats.FloatFormat.custom(name, **enc))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: formats.{name}: {exc}") from None


def validate_task(spec: dict[str, Any], where: str) -> dict[str, Any]:
    """Check one expanded task and fill defaults; raise ValueError naming the bad key."""
    for key in spec:
        if key not in TASK_KEYS:
            raise ValueError(f"{where}: {unknown_name('key', key, sorted(TASK_KEYS))}")
    register_formats(spec.get("formats"), where)
    for key in REQUIRED:
        if key not in spec:
            raise ValueError(f"{where}: missing required key {key!r} ({TASK_KEYS[key]})")
    out = dict(spec)
    for key in ("m", "k", "n"):
        if not _is_int(out[key]) or out[key] < 1:
            raise ValueError(f"{where}: {key}={out[key]!r} must be a positive integer")
    if not _is_int(out["seed"]) or out["seed"] < 0:
        raise ValueError(f"{where}: seed={out['seed']!r} must be a non-negative integer")
    for key in ("preset", "instruction", "variant", "unit"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise ValueError(f"{where}: {key}={out[key]!r} must be a string")
    if not isinstance(out["algorithm"], str) or not out["algorithm"]:
        raise ValueError(f"{where}: algorithm={out['algorithm']!r} must be a non-empty string")
    if out.get("preset") is not None:
        _preset_formats(out, where)
    for key in ("in_format", "out_format"):
        if out.get(key) is not None:
            _check_format(where, key, out[key])
    if out.get("preset") is not None and out.get("model") is not None:
        raise ValueError(f"{where}: give either preset or model, not both")
    if (out.get("preset") is not None or out.get("model") is not None) and (
            out.get("in_format") is None or out.get("out_format") is None):
        raise ValueError(f"{where}: a preset or model needs in_format and out_format (or name a whole unit: "
                         f"preset = \"H100:fp16:fp32\", or a unit file: unit = \"file.toml\")")
    if out.get("model") is not None and not isinstance(out["model"], Mapping):
        raise ValueError(f"{where}: model={out['model']!r} must be a table of custom_model arguments")
    params = out.setdefault("params", {})
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: params={params!r} must be a table")
    for key in ("alpha", "beta"):
        v = out.setdefault(key, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{where}: {key}={v!r} must be a finite number")
        out[key] = float(v)
    inp = out["input"]
    if not isinstance(inp, Mapping):
        raise ValueError(f"{where}: input={inp!r} must be a table with a 'generator' key")
    inp = dict(inp)
    gen = inp.get("generator")
    known = sorted([*_inputs.GENERATORS, *_inputs.PAIR_GENERATORS])
    if gen not in known:
        raise ValueError(f"{where}: {unknown_name('input.generator', gen, known)}")
    _check_generator_params(where, "input", gen, inp, ("generator", "round_to", "c"))
    inp.setdefault("round_to", "input")
    _check_round_to(where, "input.round_to", inp["round_to"], ("input", "none"))
    if inp["round_to"] == "input" and out.get("in_format") is None:
        raise ValueError(f"{where}: input.round_to='input' needs in_format (or set round_to = 'none' "
                         "or a format name)")
    if "c" in inp:
        c = inp["c"]
        if not isinstance(c, Mapping):
            raise ValueError(f"{where}: input.c={c!r} must be a table with a 'generator' key")
        c = dict(c)
        if c.get("generator") not in _inputs.GENERATORS:
            raise ValueError(f"{where}: {unknown_name('input.c.generator', c.get('generator'), sorted(_inputs.GENERATORS))}")
        _check_generator_params(where, "input.c", c["generator"], c, ("generator", "round_to"))
        c.setdefault("round_to", "output")
        _check_round_to(where, "input.c.round_to", c["round_to"], ("output", "none"))
        if c["round_to"] == "output" and out.get("out_format") is None:
            raise ValueError(f"{where}: input.c.round_to='output' needs out_format")
        inp["c"] = c
    out["input"] = inp
    return out


def input_key(spec: Mapping[str, Any], reference: str) -> dict[str, Any]:
    """The parameters that determine a task's inputs and reference (hashed into input_hash)."""
    inp = dict(spec["input"])
    if inp.get("round_to") == "input":
        inp["round_to"] = spec["in_format"]
    if "c" in inp:
        c = dict(inp["c"])
        if c.get("round_to") == "output":
            c["round_to"] = spec["out_format"]
        inp["c"] = c
    key = {"input": inp, "m": spec["m"], "k": spec["k"], "n": spec["n"], "seed": spec["seed"],
           "alpha": spec["alpha"], "beta": spec["beta"], "reference": reference}
    if spec.get("formats"):
        key["formats"] = spec["formats"]     # the worker registers them before it rounds the inputs
    return key


def _check_metrics(metrics: Any) -> list[str]:
    from .measures import METRICS

    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(f"metrics={metrics!r} must be a non-empty list of metric names")
    for m in metrics:
        if m not in METRICS and ":" not in m:
            raise unknown_name("metric", m, sorted(METRICS), extra=" (or 'module:function')")
    return list(metrics)


def _unit_task(combo: dict[str, Any], base: Path, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A task with ``unit = "path.toml"``: the unit file read (relative paths from
    ``base``, the experiment file's folder), its parameters as ``model`` and its formats
    as ``in_format``/``out_format``, the library schedule it carries (if any) as the
    algorithm's ``params.schedule``; ``unit`` becomes the absolute path the workers load.
    Also returns the unit's content, which replaces the path in the task hash."""
    from ..units.unitfile import read_unit

    path = combo["unit"]
    if not isinstance(path, str) or not path:
        raise ValueError(f"{where}: unit={path!r} must be the path of a unit file")
    for key in ("preset", "model", "instruction", "variant"):
        if combo.get(key) is not None:
            raise ValueError(f"{where}: give unit or {key}, not both")
    resolved = Path(path) if Path(path).is_absolute() else base / path
    try:
        uf = read_unit(resolved)
    except FileNotFoundError:
        raise ValueError(f"{where}: unit={path!r}: no such file {str(resolved)!r}") from None
    m = uf.model
    for key in ("in_format", "out_format"):
        given = combo.get(key)
        if given is not None and _formats.format(given).name != getattr(m, key):
            raise ValueError(f"{where}: {key}={given!r} but the unit {path!r} has {key}={getattr(m, key)!r}")
    params = {k: v for k, v in m.params.items() if v is not None and k not in ("in_format", "out_format")}
    out = {**combo, "unit": str(resolved.resolve()), "model": params, "in_format": m.in_format,
           "out_format": m.out_format}
    if uf.schedule is not None:                  # a library model: its schedule goes to the algorithm
        algo_params = dict(combo.get("params") or {})
        if "schedule" in algo_params:
            raise ValueError(f"{where}: unit={path!r} carries a schedule ({uf.schedule.name}); give the schedule "
                             f"in the unit file or in params, not both")
        out["params"] = {**algo_params, "schedule": uf.schedule.to_dict()}
    formats = {n: repr(_formats.format(getattr(m, n))) for n in ("in_format", "out_format", "result_format",
                                                                 "scale_format") if getattr(m, n) is not None}
    return out, {"params": params, "formats": formats}


def task_hashes(path_or_dict: str | Path | Mapping[str, Any], exp: Experiment) -> set[str]:
    """The task hashes of an experiment's definition: those of ``exp`` and of its other
    size (``[quick]`` or full), which share one results folder."""
    hashes = {t.hash for t in exp.tasks}
    if exp.raw.get("quick"):
        for flag in (True, False):
            try:
                hashes |= {t.hash for t in parse(path_or_dict, quick=flag).tasks}
            except ValueError:
                pass
    return hashes


def imports(path_or_dict: str | Path | Mapping[str, Any], exp: Experiment) -> list[tuple[str, str]]:
    """Every ``"module:function"`` an experiment would import when it runs, as ``(key, name)``
    pairs in first-use order, each once: its ``reference``, its ``metrics`` and the
    ``algorithm`` of each task of ``exp`` and of its other size (``[quick]`` or full).
    Parsing imports none of them; a sweep imports them all (and runs their modules' code),
    which is why an experiment file that names one is to be trusted like a script."""
    found: dict[str, str] = {}
    if ":" in exp.reference:
        found.setdefault(exp.reference, "reference")
    for m in exp.metrics:
        if ":" in m:
            found.setdefault(m, "metric")
    runs = [exp]
    if exp.raw.get("quick"):
        for flag in (True, False):
            try:
                runs.append(parse(path_or_dict, quick=flag))
            except ValueError:         # that size does not parse, so it cannot run either
                pass
    for run in runs:
        for t in run.tasks:
            if ":" in t.spec["algorithm"]:
                found.setdefault(t.spec["algorithm"], "algorithm")
    return [(key, name) for name, key in found.items()]


def parse(path_or_dict: str | Path | Mapping[str, Any], *, quick: bool = False) -> Experiment:
    """Parse, validate and expand an experiment into its tasks.

    Raises ValueError naming the offending key and value; duplicate tasks (same
    parameters from two grid tables) are kept once.
    """
    raw = read(path_or_dict)
    base = Path.cwd() if isinstance(path_or_dict, Mapping) else Path(path_or_dict).resolve().parent
    for key in raw:
        if key not in TOP_KEYS:
            raise ValueError(f"unknown top-level key {key!r}; expected one of {list(TOP_KEYS)} "
                             "(task parameters go under [defaults] or [[grid]])")
    name = raw.get("name")
    if not isinstance(name, str) or not name or any(c in name for c in "/\\ "):
        raise ValueError(f"name={name!r} must be a non-empty string without spaces or slashes")
    reference = raw.get("reference", "exact")
    if not isinstance(reference, str) or (reference not in REFERENCE_KINDS and ":" not in reference):
        raise ValueError(f"reference={reference!r}: expected one of {list(REFERENCE_KINDS)} or 'module:function'")
    metrics = _check_metrics(raw.get("metrics", ["normwise_inf"]))
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise ValueError(f"defaults={defaults!r} must be a table")
    grids = raw.get("grid")
    if grids is None:
        raise ValueError("missing [[grid]]: an experiment needs at least one grid table")
    if isinstance(grids, Mapping):
        grids = [grids]
    if not isinstance(grids, list) or not grids or not all(isinstance(g, Mapping) for g in grids):
        raise ValueError("grid must be a table or an array of tables ([[grid]])")
    quick_over = raw.get("quick", {})
    if not isinstance(quick_over, Mapping):
        raise ValueError(f"quick={quick_over!r} must be a table")
    for key in quick_over:
        if key not in TASK_KEYS and key != CASES:
            raise ValueError(f"quick: unknown key {key!r}; expected one of {sorted(TASK_KEYS)}")
    tasks: list[Task] = []
    seen: set[str] = set()
    excluded = 0
    top_rules = _exclude_rules(raw.get(EXCLUDE), "exclude")
    for gi, grid in enumerate(grids):
        grid = dict(grid)
        rules = top_rules + _exclude_rules(grid.pop(EXCLUDE, None), f"grid[{gi}]")
        merged = _merge(defaults, grid)
        if quick:
            merged = _merge(merged, quick_over)
        merged = _ranges(merged, f"grid[{gi}]")
        for key, value in merged.items():
            try:
                _expand(value)
            except ValueError:
                raise ValueError(f"grid[{gi}]: {key} is an empty list; give at least one value") from None
        for combo in _expand(merged):
            if CASES in combo:
                case = combo.pop(CASES)
                if not isinstance(case, Mapping):
                    raise ValueError(f"grid[{gi}]: cases must be a list of tables, got item {case!r}")
                for key in case:
                    if key in combo:
                        raise ValueError(f"grid[{gi}]: key {key!r} is set both in cases and in the grid")
                combo.update(case)
            if rules and _excluded_by(combo, rules):
                excluded += 1
                continue
            unit = None
            if is_unit_file(combo.get("preset")):
                combo = _preset_file_as_unit(combo, f"grid[{gi}]")
            if combo.get("unit") is not None:
                combo, unit = _unit_task(combo, base, f"grid[{gi}]")
            spec = validate_task(combo, f"grid[{gi}]")
            hashed = spec if unit is None else {**spec, "unit": unit}   # the content, not where it lies
            h = stable_hash({"task": hashed, "reference": reference, "metrics": metrics})
            if h in seen:
                continue
            seen.add(h)
            ih = stable_hash(input_key(spec, reference))
            tasks.append(Task(index=len(tasks), spec=spec, hash=h, input_hash=ih))
    return Experiment(name=name, description=str(raw.get("description", "")), reference=reference,
                      metrics=metrics, tasks=tasks, raw=raw, excluded=excluded)
