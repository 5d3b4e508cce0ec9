"""What each preset was checked against, and how much: :class:`Evidence` records.

Every :class:`~workbench.units.catalogue.Preset` carries a tuple of these
(:attr:`Preset.evidence <workbench.units.catalogue.Preset.evidence>`), one per check that
pins its arithmetic:

``"hw-vectors"``
    the GPU-measured block-FMA vectors of Khattak & Mikaitis 2025 (their
    MATLAB-tensor-core ``model_validation`` data; ``../shared/hw_vectors``, shipped as
    ``tests/data/hw_vectors``): one record per device and set, ``count`` rows
    reproduced bit for bit (``tests/test_hw_vectors.py``);
``"gpu-witness"``
    products measured on a real H100 / H200 through PyTorch and cuBLAS
    (``tests/data/gpu_witness``): ``count`` output elements reproduced bit for bit
    (``tests/test_gpu_witness.py``);
``"mmasim"``
    the differential test against MMA-Sim 2.1.1 (Xie et al. 2025): ``count`` outputs
    of the default run compared bit for bit (``tests/test_mmasim_differential.py``);
``"paper"``
    results stated in the papers (Xie et al. 2025 Table 8 and Section 4.2, Fasi et al.
    2021, Valpey et al. 2025, Khattak & Mikaitis 2025 Section IV) and the rows of
    Khattak & Mikaitis Table II: ``count`` cases (``tests/test_engine_papers.py``);
``"unchecked"``
    nothing checks the preset; ``what`` says what it is assumed from
    (:attr:`Preset.assumed_from <workbench.units.catalogue.Preset.assumed_from>`).

The counts are not typed by hand: ``tests/evidence_sources.py`` derives them from the
test data and the tests' own case lists and writes ``workbench/units/evidence.json``
(``python tests/evidence_sources.py --write``); ``tests/test_evidence.py`` fails when
the file and the data disagree.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Evidence", "EVIDENCE_KINDS", "stored"]

#: evidence kinds and how :meth:`Evidence.summary` names them
EVIDENCE_KINDS: dict[str, str] = {
    "hw-vectors": "GPU vectors",
    "gpu-witness": "real-GPU witness",
    "mmasim": "MMA-Sim 2.1.1 differential",
    "paper": "paper results",
    "unchecked": "not checked",
}


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """One check of a preset: what it was checked against and how much.

    ``kind`` is a key of :data:`EVIDENCE_KINDS`; ``what`` names the data, oracle or
    papers; ``devices`` the GPUs measured (empty for simulators and papers);
    ``formats`` the input and output formats checked (``"fp16->fp32"``); ``count``
    how many ``unit`` (rows, outputs, cases) agree bit for bit; ``test`` the test
    file that checks them.
    """

    kind: str
    what: str
    devices: tuple[str, ...] = ()
    formats: str = ""
    count: int = 0
    unit: str = ""
    test: str = ""

    def __post_init__(self) -> None:
        if self.kind not in EVIDENCE_KINDS:
            raise ValueError(f"evidence kind {self.kind!r}: expected one of {', '.join(EVIDENCE_KINDS)}")
        if self.kind != "unchecked" and self.count <= 0:
            raise ValueError(f"{self.kind} evidence needs a positive count, got {self.count!r}")

    @property
    def checked(self) -> bool:
        """False for an ``"unchecked"`` record (the preset is assumed, not verified)."""
        return self.kind != "unchecked"

    def summary(self) -> str:
        """One line: ``"GPU vectors: H100 fp16->fp32, 5,000 rows (hw_vectors/H100/fp16.npz)"``."""
        label = EVIDENCE_KINDS[self.kind]
        if not self.checked:
            return f"{label}: {self.what}"
        where = " ".join(x for x in (", ".join(self.devices), self.formats) if x)
        where = f" {where}," if where else ""
        return f"{label}:{where} {self.count:,} {self.unit} ({self.what})"

    def as_dict(self) -> dict[str, Any]:
        """The record as plain JSON-able data (the layout of ``workbench/units/evidence.json``)."""
        return {"kind": self.kind, "what": self.what, "devices": list(self.devices), "formats": self.formats,
                "count": self.count, "unit": self.unit, "test": self.test}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Evidence":
        return cls(kind=d["kind"], what=d["what"], devices=tuple(d.get("devices", ())), formats=d.get("formats", ""),
                   count=int(d.get("count", 0)), unit=d.get("unit", ""), test=d.get("test", ""))


@functools.cache
def stored() -> dict[str, tuple[Evidence, ...]]:
    """The derived checks of every preset, by preset name (``workbench/units/evidence.json``)."""
    text = resources.files("workbench.units").joinpath("evidence.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return {name: tuple(Evidence.from_dict(d) for d in recs) for name, recs in data["presets"].items()}

