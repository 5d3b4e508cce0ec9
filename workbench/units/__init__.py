"""Units: the preset catalogue (:mod:`~workbench.units.catalogue`) with each preset's
evidence (:mod:`~workbench.units.evidence`), unit files (:mod:`~workbench.units.unitfile`),
the schedules by which libraries compose a unit's operations into a GEMM
(:mod:`~workbench.units.schedules`), and one way to name a unit: :func:`resolve`
(:mod:`~workbench.units.resolution`), which every entry point that takes a unit calls."""

from .resolution import FORMS, UnitSpec, resolve, unit_name

__all__ = ["UnitSpec", "resolve", "unit_name", "FORMS"]
