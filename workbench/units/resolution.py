"""One way to name a unit: :func:`resolve` turns every accepted spelling into a Model.

Every entry point that takes a unit - :func:`workbench.gemm`, the algorithms, sweeps,
``workbench explain``, :func:`workbench.discriminate`, ``workbench probe``, the explorer
and :mod:`workbench.torch` - passes what it was given through :func:`resolve`, so they
accept the same four spellings:

* a :class:`~workbench.engine.Model` or :class:`~workbench.units.catalogue.Preset` object,
  returned unchanged;
* the catalogue name that ``workbench presets`` prints, ``ARCH/INSTRUCTION/IN->OUT[/VARIANT]``
  (``"cdna3/mfma/fp16->fp32"``, ``"blackwell/tcgen05.mma/fp16->fp32/rn"``), case ignored;
* ``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]`` (``"H100:fp16:fp32"``,
  ``"H100:fp8:fp16:mma.sync"``, ``"B200:fp16:fp32::rn"``): a device or architecture name,
  the input and output formats, then optionally the instruction and the variant, in that
  order (an empty field is left out; the fourth field also matches a variant name, so
  ``"B200:fp16:fp32:rn"`` works too).  ``OUT`` may be omitted (``"H100:fp16"``: fp32).
  A leading ``preset:`` is ignored (the probe targets' old spelling);
* the path of a unit file (:mod:`workbench.units.unitfile`): a :class:`os.PathLike` or a string
  ending in ``.toml``.

Format names and aliases mean the same everywhere (:func:`workbench.format`); a format
*family* stands for the device's default member of it (:data:`workbench.units.catalogue.FORMAT_FAMILIES`:
``fp8`` is E4M3, its FNUZ encoding on CDNA3).  :func:`unit_name` gives the name the tool
prints for a unit, which :func:`resolve` reads back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from . import catalogue
from ..engine.model import Model

__all__ = ["UnitSpec", "resolve", "unit_name", "FORMS"]

#: what :func:`resolve` accepts
UnitSpec = Union[Model, str, os.PathLike[str]]

#: the accepted spellings, for error messages and ``--help`` texts
FORMS = ("a workbench Model/Preset; a catalogue name such as 'cdna3/mfma/fp16->fp32' (workbench presets); "
         "DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] such as 'H100:fp16:fp32' or 'B200:fp16:fp32::rn'; "
         "or the path of a unit file ending in .toml")


def resolve(unit: UnitSpec, *, what: str = "model") -> Model:
    """The :class:`~workbench.engine.Model` that ``unit`` names (module docstring).

    ``what`` names the argument in error messages.  Raises TypeError for an object that
    is none of the accepted kinds and ValueError for a name that selects no unit (the
    message says which part is wrong and what was expected)."""
    if isinstance(unit, Model):
        return unit
    if isinstance(unit, os.PathLike):
        from .unitfile import load_unit

        return load_unit(Path(unit))
    if not isinstance(unit, str):
        raise TypeError(f"{what}={unit!r}: expected {FORMS}; got {type(unit).__name__}")
    name = unit.strip()
    if not name:
        raise ValueError(f"{what}={unit!r}: empty name; expected {FORMS}")
    if name.lower().endswith(".toml"):
        from .unitfile import load_unit

        return load_unit(name)
    if name.lower().startswith("preset:"):
        name = name[len("preset:"):]
    if "->" in name or ("/" in name and ":" not in name):
        rec = catalogue.by_name(name)
        if rec is None:
            raise ValueError(f"{what}={unit!r}: no preset named {name!r} in the catalogue; names look like "
                             f"'hopper/wgmma/fp16->fp32' or 'blackwell/tcgen05.mma/fp16->fp32/rn' "
                             f"(workbench presets lists them)")
        return rec
    parts = [p.strip() for p in name.split(":")]
    if ":" not in name or not 2 <= len(parts) <= 5 or not parts[0] or not parts[1]:
        raise ValueError(f"{what}={unit!r}: expected {FORMS}")
    dev, fin = parts[0], parts[1]
    fout = (parts[2] or "fp32") if len(parts) > 2 else "fp32"
    instruction = (parts[3] or None) if len(parts) > 3 else None
    variant = (parts[4] or None) if len(parts) > 4 else None
    return catalogue.preset(dev, fin, fout, instruction=instruction, variant=variant)


def unit_name(model: Model) -> str:
    """The name the tool prints for ``model``: a catalogue preset's name (which
    :func:`resolve` reads back), else ``custom(<parameters>)``."""
    if not isinstance(model, Model):
        raise TypeError(f"unit_name takes a workbench Model, got {type(model).__name__}")
    name = getattr(model, "name", "")
    if name and catalogue.by_name(name) is not None:
        return str(name)
    return f"custom({model.describe()})"
