"""Units saved as files: :func:`save_unit` and :func:`load_unit` (TOML, human-readable, diffable).

A unit file holds one :class:`~workbench.engine.Model` — its arithmetic parameters
(the names of :data:`workbench.engine.PARAM_NAMES`), the encoding of every format it
uses, and where it comes from — so that a unit probed on a GPU or designed by hand
can be reloaded by a sweep (``unit = "path.toml"``), ``workbench explain --unit``,
``workbench discriminate`` and the explorer, or sent to a colleague::

    workbench_unit = 1

    [unit]
    kind = "t-fdpa"
    in_format = "fp16"
    out_format = "fp32"
    L = 16
    F = 25
    rounding = "rz"
    zero_exponent = -133

    [formats.fp16]          # one table per format the unit names
    exp_bits = 5
    man_bits = 10
    bias = 15
    special = "ieee"        # Inf/NaN convention: ieee, fn, fnuz or none
    subnormals = true
    signed = true

    [provenance]
    origin = "preset"       # preset, custom or probed
    preset = "hopper/wgmma/fp16->fp32"
    devices = ["H100", "H200"]
    target = "H100, H200 (hopper)"
    date = "2026-11-28T02:30:00+00:00"
    workbench = "0.1.0"

    [provenance.verification]   # counts: name -> non-negative integer
    ...

An integer unit (``kind = "int-mma"``) describes its integer formats by width and
signedness only, ``[formats.s8]`` with ``bits = 8`` and ``signed = true``; only the
integer formats :mod:`workbench.numbers.formats` knows (``s8``, ``u8``, ``s32``) are read.

A library model - a unit and how the library composes it into a GEMM - carries its
:class:`~workbench.units.schedules.Schedule` as an optional ``[schedule]`` table (its fields;
``[[schedule.rules]]`` and ``[[schedule.regions]]`` one table each, a rule's ``split``
an inline table; fields at their defaults left out), written by ``save_unit(...,
schedule=...)`` and read back as ``UnitFile.schedule``::

    [schedule]
    name = "openblas-haswell-dgemm"
    c_position = "combine"
    combine_format = "fp64"
    threads = 1

    [[schedule.rules]]
    k_min = 1
    split = {block = 256, block_unroll = 4}

A library model saved by ``workbench probe LIBRARY --save`` also says what it holds for,
in an optional ``[library]`` table (``save_unit(..., library=...)``, read back as
``UnitFile.library``; only with a ``[schedule]``): the library target, the verdict of its
verification on the machine that saved it (the counts are ``[provenance.verification]``)
and the environment it ran in - every key present, strings and integers only
(:data:`LIBRARY_KEYS`)::

    [library]
    target = "numpy-fp32"         # the library target (workbench probe TARGET)
    verdict = "not verified"      # "verified" or "not verified"
    library = "openblas"          # the library that runs the GEMM
    version = "0.3.31.188.0"
    kernel = "SkylakeX"           # OpenBLAS' core (threadpoolctl), MKL's or oneDNN's dispatch
    threads = 1                   # the thread count of the verification
    default_threads = 2           # the library's default (0: not known)
    details = "numpy 2.4.6, .../libscipy_openblas64_.so"

A file is data, never code: it is read with :mod:`tomllib` and every key is checked
against what is expected; nothing in it is imported, evaluated or executed.  A
malformed or hostile file raises :class:`UnitFileError` (a ValueError) naming the
file, the key and what was expected (unknown keys, wrong types, values out of range,
a TOML syntax error with its line).  Formats that :mod:`workbench.numbers.formats` does not
know are registered under their name from their encoding
(:func:`workbench.numbers.formats.register_format`); a known name must carry its known
encoding.
"""

from __future__ import annotations

import datetime as _dt
import re
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from .._version import __version__
from ..numbers import formats as _formats
from . import schedules as _schedules
from .catalogue import Preset, records
from ..engine.model import PARAM_NAMES, Model, check_bounds

__all__ = ["save_unit", "load_unit", "read_unit", "Provenance", "UnitFile", "UnitFileError", "ORIGINS",
           "FORMAT_VERSION", "LIBRARY_KEYS", "VERDICTS"]

#: the ``workbench_unit`` value this module writes and reads
FORMAT_VERSION = 1
#: where a unit comes from
ORIGINS = ("preset", "custom", "probed")
#: a unit file larger than this is refused before it is parsed
MAX_BYTES = 1 << 20
_TOP_KEYS = ("workbench_unit", "unit", "formats", "provenance", "schedule", "library")
#: the keys of a ``[library]`` table and their types (every one required)
LIBRARY_KEYS: dict[str, type] = {"target": str, "verdict": str, "library": str, "version": str, "kernel": str,
                                 "threads": int, "default_threads": int, "details": str}
#: the verdicts a ``[library]`` table records
VERDICTS = ("verified", "not verified")
_PROVENANCE_KEYS = ("origin", "preset", "devices", "target", "date", "workbench", "verification", "notes")
_FORMAT_KEYS = ("exp_bits", "man_bits", "bias", "special", "subnormals", "signed")
_INT_FORMAT_KEYS = ("bits", "signed")
_FORMAT_PARAMS = ("in_format", "out_format", "result_format", "scale_format", "b_format")
_MODEL_FIELDS = {f.name: f for f in fields(Model)}
_INT_LIMIT = 1 << 31
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class UnitFileError(ValueError):
    """A unit file that cannot be read or does not describe a unit; the message names
    the file, the key and what was expected."""


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where a unit comes from: ``origin`` (``"preset"``, ``"custom"`` or ``"probed"``),
    the ``preset`` name and its ``devices`` (origin preset), a free-text ``target``
    description (the GPU probed, the design's purpose), the ISO ``date`` it was saved,
    the ``workbench`` version that saved it, ``verification`` counts (e.g. the probe's
    ``{"checked": 2000, "agreed": 2000}``) and free ``notes``."""

    origin: str = "custom"
    preset: str = ""
    devices: tuple[str, ...] = ()
    target: str = ""
    date: str = ""
    workbench: str = ""
    verification: dict[str, int] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"provenance origin={self.origin!r}: expected one of {', '.join(ORIGINS)}")
        for k, v in self.verification.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
                raise ValueError(f"provenance verification {k!r}={v!r}: expected a non-negative integer count")
        if self.date:
            _dt.datetime.fromisoformat(self.date)


@dataclass(frozen=True)
class UnitFile:
    """A unit file read back: the ``model`` (a :class:`~workbench.units.catalogue.Preset`
    when the file names a catalogue preset with the same arithmetic), its
    ``provenance``, the ``path`` it was read from, the library ``schedule`` it
    carries (None: the unit alone) and its ``[library]`` table (None: none; the keys
    of :data:`LIBRARY_KEYS`)."""

    model: Model
    provenance: Provenance
    path: Path
    schedule: _schedules.Schedule | None = None
    library: dict[str, str | int] | None = None


# ------------------------------------------------------------------ writing
def _toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):                        # an inline table; None values are left out
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    raise TypeError(f"cannot write {v!r} ({type(v).__name__}) to a unit file")


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_str(k)


def _formats_of(model: Model) -> dict[str, _formats.NumberFormat]:
    names = [getattr(model, p) for p in _FORMAT_PARAMS if getattr(model, p) is not None]
    return {_formats.number_format(n).name: _formats.number_format(n) for n in names}


def _default_provenance(model: Model) -> Provenance:
    if isinstance(model, Preset) and model.name:
        return Provenance(origin="preset", preset=model.name, devices=tuple(model.devices),
                          target=f"{', '.join(model.devices)} ({model.architecture}), {model.instruction}")
    return Provenance(origin="custom")


def _changed(record: Any) -> dict[str, Any]:
    """The fields of a schedule record (a dataclass) that differ from their defaults
    (required fields always), nested records as their own such dicts."""
    out: dict[str, Any] = {}
    for f in fields(record):
        v = getattr(record, f.name)
        if f.default is not MISSING and v == f.default:
            continue
        if isinstance(v, (_schedules.Split, _schedules.KRule, _schedules.Region, _schedules.Threading)):
            v = _changed(v)
        elif isinstance(v, tuple) and any(isinstance(x, _schedules.KRule) for x in v):    # a region's rules
            v = [_changed(x) for x in v]
        out[f.name] = v
    return out


def _schedule_lines(schedule: _schedules.Schedule) -> list[str]:
    """The ``[schedule]`` table of a unit file (:func:`save_unit`)."""
    top = _changed(schedule)
    lines = ["", "[schedule]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in top.items() if k not in ("rules", "regions") and v is not None]
    for key in ("rules", "regions"):
        for rec in getattr(schedule, key):
            lines += ["", f"[[schedule.{key}]]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in _changed(rec).items() if v is not None]
    return lines


def save_unit(model: Model, path: str | Path, provenance: Provenance | dict[str, Any] | None = None,
              schedule: _schedules.Schedule | str | None = None,
              library: dict[str, str | int] | None = None) -> Path:
    """Write ``model`` to the TOML unit file ``path`` and return the path.

    ``schedule`` (a :class:`~workbench.units.schedules.Schedule` or the name of one) makes
    the file a library model: the unit and how the library composes it into a GEMM,
    read back as ``UnitFile.schedule``.  ``library`` (with a schedule only) is its
    ``[library]`` table: the keys of :data:`LIBRARY_KEYS`, checked as the reader
    checks them (a :class:`UnitFileError` naming the key, before anything is written).

    ``provenance`` (a :class:`Provenance` or a dict of its fields) says where the unit
    comes from; without it a preset records its name and devices and any other model
    is ``"custom"``.  The date (now, UTC) and the workbench version are filled in when
    not given.  The parameters left at None are not written (they are the defaults).
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a workbench Model or Preset, got {type(model).__name__}")
    if provenance is None:
        prov = _default_provenance(model)
    elif isinstance(provenance, Provenance):
        prov = provenance
    elif isinstance(provenance, dict):
        prov = Provenance(**{**provenance, "devices": tuple(provenance.get("devices", ()))})
    else:
        raise TypeError(f"provenance must be a Provenance or a dict, got {type(provenance).__name__}")
    if not prov.date:
        prov = Provenance(**{**{f.name: getattr(prov, f.name) for f in fields(prov)},
                             "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()})
    lines = ["# A workbench unit (workbench.save_unit): data only, read with workbench.load_unit.",
             f"workbench_unit = {FORMAT_VERSION}", "", "[unit]"]
    for name, value in model.params.items():
        if value is not None:
            lines.append(f"{name} = {_toml_value(value)}")
    for name, fmt in _formats_of(model).items():
        lines += ["", f"[formats.{_toml_key(name)}]"]
        keys = _INT_FORMAT_KEYS if isinstance(fmt, _formats.IntFormat) else _FORMAT_KEYS
        lines += [f"{k} = {_toml_value(getattr(fmt, k))}" for k in keys]
    lines += ["", "[provenance]"]
    for f in fields(Provenance):
        v = getattr(prov, f.name)
        if f.name == "verification":
            continue
        if f.name == "workbench" and not v:
            v = __version__
        if v or f.name == "origin":
            lines.append(f"{f.name} = {_toml_value(list(v) if isinstance(v, tuple) else v)}")
    if prov.verification:
        lines += ["", "[provenance.verification]"]
        lines += [f"{_toml_key(k)} = {v}" for k, v in prov.verification.items()]
    if schedule is not None:
        if isinstance(schedule, str):
            schedule = _schedules.get(schedule)
        if not isinstance(schedule, _schedules.Schedule):
            raise TypeError(f"schedule must be a Schedule or the name of one, got {type(schedule).__name__}")
        lines += _schedule_lines(schedule)
    out = Path(path)
    if library is not None:
        if schedule is None:
            raise ValueError("save_unit: a [library] table goes with a schedule (a library model is a unit and a "
                             "schedule); got library= without schedule=")
        lines += ["", "[library]"] + [f"{k} = {_toml_value(v)}" for k, v in _read_library(out, library).items()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# ------------------------------------------------------------------ reading
def _fail(path: Path, key: str, msg: str) -> UnitFileError:
    return UnitFileError(f"unit file {str(path)!r}: {key}: {msg}")


def _table(path: Path, key: str, v: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _fail(path, key, f"expected a table, got {type(v).__name__} {v!r}")
    for k in v:
        if k not in allowed:
            raise _fail(path, f"{key}.{k}", f"unknown key; expected one of {', '.join(allowed)}")
    return v


def _int(path: Path, key: str, v: Any, lo: int = -_INT_LIMIT, hi: int = _INT_LIMIT - 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(path, key, f"expected an integer, got {type(v).__name__} {v!r}")
    if not lo <= v <= hi:
        raise _fail(path, key, f"{v} is out of range; expected {lo} to {hi}")
    return v


def _str(path: Path, key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise _fail(path, key, f"expected a string, got {type(v).__name__} {v!r}")
    return v


def _bool(path: Path, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise _fail(path, key, f"expected true or false, got {type(v).__name__} {v!r}")
    return v


def _read_int_format(path: Path, name: str, table: dict[str, Any]) -> _formats.IntFormat:
    """An integer format's table (``bits``, ``signed``): only the integer formats
    :mod:`workbench.numbers.formats` knows (s8, u8, s32), each with its own encoding."""
    key = f"formats.{name}"
    t = _table(path, key, table, _INT_FORMAT_KEYS)
    missing = [k for k in _INT_FORMAT_KEYS if k not in t]
    if missing:
        raise _fail(path, key, f"missing {', '.join(missing)} (an integer format's table holds bits and signed)")
    bits, signed = _int(path, f"{key}.bits", t["bits"], 2, 32), _bool(path, f"{key}.signed", t["signed"])
    if not _formats.is_int_format(name):
        raise _fail(path, key, f"{name!r} is not a known integer format; expected one of "
                               f"{', '.join(f.name for f in _formats.list_int_formats())}")
    known = _formats.int_format(name)
    if known.name != name:
        raise _fail(path, key, f"{name!r} is another name of {known.name!r}; describe it as [formats.{known.name}]")
    if (known.bits, known.signed) != (bits, signed):
        raise _fail(path, key, f"{name!r} is the integer format bits={known.bits}, signed={known.signed}; the file "
                               f"gives bits={bits}, signed={signed}")
    return known


def _read_format(path: Path, name: str, table: Any) -> _formats.NumberFormat:
    key = f"formats.{name}"
    if not _NAME.match(name):
        raise _fail(path, key, "a format name is a lower-case letter then up to 31 letters, digits or '_'")
    if isinstance(table, dict) and table and set(table) <= set(_INT_FORMAT_KEYS):
        return _read_int_format(path, name, table)
    t = _table(path, key, table, _FORMAT_KEYS)
    missing = [k for k in _FORMAT_KEYS if k not in t]
    if missing:
        raise _fail(path, key, f"missing {', '.join(missing)}")
    try:
        fmt = _formats.FloatFormat(name, _int(path, f"{key}.exp_bits", t["exp_bits"], 1, 11),
                                   _int(path, f"{key}.man_bits", t["man_bits"], 0, 52),
                                   _int(path, f"{key}.bias", t["bias"], -4096, 4096),
                                   _str(path, f"{key}.special", t["special"]),  # type: ignore[arg-type]
                                   _bool(path, f"{key}.subnormals", t["subnormals"]),
                                   _bool(path, f"{key}.signed", t["signed"]))
    except ValueError as exc:
        if isinstance(exc, UnitFileError):
            raise
        raise _fail(path, key, str(exc)) from None
    try:
        known = _formats.format(name)
    except ValueError:
        return fmt
    if known.name != name:
        raise _fail(path, key, f"{name!r} is another name of {known.name!r}; describe it as [formats.{known.name}]")
    if (known.name, known.exp_bits, known.man_bits, known.bias, known.special, known.subnormals,
            known.signed) != (fmt.name, fmt.exp_bits, fmt.man_bits, fmt.bias, fmt.special, fmt.subnormals,
                              fmt.signed):
        raise _fail(path, key, f"{name!r} is a known format with another encoding ({_describe(known)}); "
                               f"the file gives {_describe(fmt)}: rename the custom format")
    return known


def _describe(f: _formats.FloatFormat) -> str:
    return (f"exp_bits={f.exp_bits}, man_bits={f.man_bits}, bias={f.bias}, special={f.special!r}, "
            f"subnormals={f.subnormals}, signed={f.signed}")


def _read_params(path: Path, table: Any) -> dict[str, Any]:
    t = _table(path, "unit", table, PARAM_NAMES)
    out: dict[str, Any] = {}
    for k, v in t.items():
        key = f"unit.{k}"
        ftype = str(_MODEL_FIELDS[k].type)
        if ftype.startswith("int"):
            out[k] = _int(path, key, v)
        elif ftype == "bool":
            out[k] = _bool(path, key, v)
        else:
            out[k] = _str(path, key, v)
    for k in ("kind", "in_format", "out_format"):
        if k not in out:
            raise _fail(path, f"unit.{k}", "missing (a unit names its kind and its input and output formats)")
    try:
        check_bounds(out)     # before any format of the file is registered
    except ValueError as exc:
        raise UnitFileError(f"unit file {str(path)!r}: [unit]: {exc}") from None
    return out


def _read_provenance(path: Path, table: Any) -> Provenance:
    t = _table(path, "provenance", table, _PROVENANCE_KEYS)
    kw: dict[str, Any] = {}
    for k, v in t.items():
        key = f"provenance.{k}"
        if k == "devices":
            if not isinstance(v, list):
                raise _fail(path, key, f"expected a list of strings, got {type(v).__name__} {v!r}")
            kw[k] = tuple(_str(path, f"{key}[{i}]", d) for i, d in enumerate(v))
        elif k == "verification":
            if not isinstance(v, dict):
                raise _fail(path, key, f"expected a table of counts, got {type(v).__name__} {v!r}")
            kw[k] = {name: _int(path, f"{key}.{name}", n, 0, 2**63 - 1) for name, n in v.items()}
        elif k == "date" and isinstance(v, (_dt.datetime, _dt.date)):
            kw[k] = v.isoformat()
        else:
            kw[k] = _str(path, key, v)
    if "origin" not in kw:
        raise _fail(path, "provenance.origin", f"missing; expected one of {', '.join(ORIGINS)}")
    if kw["origin"] not in ORIGINS:
        raise _fail(path, "provenance.origin", f"{kw['origin']!r}: expected one of {', '.join(ORIGINS)}")
    if "date" in kw:
        try:
            _dt.datetime.fromisoformat(kw["date"])
        except ValueError:
            raise _fail(path, "provenance.date", f"{kw['date']!r}: expected an ISO 8601 date") from None
    return Provenance(**kw)


def read_unit(path: str | Path) -> UnitFile:
    """Read and check the unit file ``path``: its model, provenance and path.

    Raises FileNotFoundError when there is no such file and :class:`UnitFileError`
    naming the file, the key and what was expected when it does not describe a unit:
    a file over :data:`MAX_BYTES` (refused before it is parsed), one nested too deeply
    to parse, a parameter out of its bound
    (:data:`~workbench.engine.model.PARAM_BOUNDS`: ``L = 1000000000`` is refused here,
    not left to a product that would allocate blocks of 10**9 elements).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"unit file {str(p)!r} does not exist")
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise _fail(p, "file", f"{size} bytes; a unit file is at most {MAX_BYTES} bytes")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(p, "file", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UnitFileError(f"unit file {str(p)!r}: not valid TOML: {exc}") from None
    except RecursionError:     # tomllib parses nested arrays and inline tables recursively
        raise _fail(p, "file", "arrays or inline tables nested too deeply to parse (a unit file nests a few "
                               "levels)") from None
    for k in data:
        if k not in _TOP_KEYS:
            raise _fail(p, k, f"unknown key; expected one of {', '.join(_TOP_KEYS)}")
    if "workbench_unit" not in data:
        raise _fail(p, "workbench_unit", f"missing; expected workbench_unit = {FORMAT_VERSION} (is this a unit file?)")
    if _int(p, "workbench_unit", data["workbench_unit"]) != FORMAT_VERSION:
        raise _fail(p, "workbench_unit", f"{data['workbench_unit']}: this workbench reads version {FORMAT_VERSION}")
    if "unit" not in data:
        raise _fail(p, "unit", "missing [unit] table")
    params = _read_params(p, data["unit"])
    fmt_tables = data.get("formats", {})
    if not isinstance(fmt_tables, dict):
        raise _fail(p, "formats", f"expected a table of format tables, got {type(fmt_tables).__name__}")
    fmts = {name: _read_format(p, name, t) for name, t in fmt_tables.items()}
    used = {params[k] for k in _FORMAT_PARAMS if k in params}
    for name in sorted(used - set(fmts)):
        key = next(k for k in _FORMAT_PARAMS if params.get(k) == name)
        raise _fail(p, f"unit.{key}", f"format {name!r} has no [formats.{name}] table (its encoding)")
    for name in sorted(set(fmts) - used):
        raise _fail(p, f"formats.{name}", "not used by the unit (only the formats it names are described)")
    for name, fmt in fmts.items():
        if isinstance(fmt, _formats.FloatFormat):
            _formats.register_format(fmt)
    prov = _read_provenance(p, data.get("provenance", {"origin": "custom"}))
    try:
        model = Model(**params)
    except (TypeError, ValueError) as exc:
        raise UnitFileError(f"unit file {str(p)!r}: [unit]: {exc}") from None
    schedule = _read_schedule(p, data["schedule"]) if "schedule" in data else None
    library = _read_library(p, data["library"]) if "library" in data else None
    if library is not None and schedule is None:
        raise _fail(p, "library", "a [library] table goes with a [schedule] table (a library model is a unit and "
                                  "a schedule)")
    return UnitFile(model=_as_preset(model, prov), provenance=prov, path=p, schedule=schedule, library=library)


def _read_library(path: Path, table: Any) -> dict[str, str | int]:
    """The ``[library]`` table checked as data: the keys of :data:`LIBRARY_KEYS`, each
    present with its type (thread counts 0 to 2**31 - 1, the verification's at least 1;
    the verdict one of :data:`VERDICTS`), in that order."""
    t = _table(path, "library", table, tuple(LIBRARY_KEYS))
    missing = [k for k in LIBRARY_KEYS if k not in t]
    if missing:
        raise _fail(path, "library", f"missing {', '.join(missing)} (a [library] table has every one of "
                                     f"{', '.join(LIBRARY_KEYS)})")
    out: dict[str, str | int] = {}
    for k, typ in LIBRARY_KEYS.items():
        key = f"library.{k}"
        out[k] = _int(path, key, t[k], 1 if k == "threads" else 0) if typ is int else _str(path, key, t[k])
    if out["verdict"] not in VERDICTS:
        raise _fail(path, "library.verdict", f"{out['verdict']!r}: expected one of {', '.join(VERDICTS)}")
    if not out["target"]:
        raise _fail(path, "library.target", "empty; expected the library target (e.g. 'numpy-fp32')")
    return out


def _read_schedule(path: Path, table: Any) -> _schedules.Schedule:
    """The ``[schedule]`` table as a Schedule; every field is checked by the schedule's
    own records (a wrong key, type or value is a UnitFileError naming it)."""
    t = _table(path, "schedule", table, tuple(f.name for f in fields(_schedules.Schedule)))
    for key in ("rules", "regions"):
        v = t.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise _fail(path, f"schedule.{key}", f"expected [[schedule.{key}]] tables, got {v!r}")
    try:
        return _schedules.Schedule.from_dict(t)
    except (TypeError, ValueError, KeyError) as exc:
        raise UnitFileError(f"unit file {str(path)!r}: [schedule]: {exc}") from None


def _as_preset(model: Model, prov: Provenance) -> Model:
    """The catalogue's preset when the file names one with the same arithmetic (its
    devices in the file's order), else the plain model."""
    if prov.origin != "preset" or not prov.preset:
        return model
    rec = next((r for r in records() if r.name == prov.preset), None)
    if rec is None or rec.params != model.params:
        return model
    devices = prov.devices if sorted(prov.devices) == sorted(rec.devices) else rec.devices
    return Preset(**{**{f.name: getattr(rec, f.name) for f in fields(rec)}, "devices": devices})


def load_unit(path: str | Path) -> Model:
    """The unit of the file ``path`` (see :func:`read_unit`): ``load_unit(save_unit(m,
    path)) == m`` for every model and preset."""
    return read_unit(path).model
