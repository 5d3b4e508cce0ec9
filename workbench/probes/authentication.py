"""Test-vector authentication (Khattak & Mikaitis 2025, Section V-A).

Run probes against custom models whose parameters are known and report which probes
draw a wrong conclusion from which parameters.  The paper's two cases: the fixed test
vectors of Fasi et al. on CustomTC(fp16 -> fp32, neab 0, NFMA 8, RNE) misjudge NFMA
and call the rounding RZ; with neab 1 and RU they still misjudge NFMA.  Here the
"fixed vectors" are :func:`~workbench.probes.fasi.fasi_suite` with the paper's n = 4
and the "generalised" probes are :func:`~workbench.probes.inference.infer`.
"""

from __future__ import annotations

from typing import Any

from ..units.catalogue import custom_model
from ..engine.model import Model
from .fasi import fasi_suite
from .inference import infer

__all__ = ["authenticate", "DEFAULT_MODELS"]

#: (in, out, parameters) of the models probed by default: the paper's two CustomTC
#: configurations plus variations of one parameter at a time.
DEFAULT_MODELS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("fp16", "fp32", {"neab": 0, "fma": 8, "frmode": "rne"}),
    ("fp16", "fp32", {"neab": 1, "fma": 8, "frmode": "ru"}),
    ("fp16", "fp32", {"neab": 0, "fma": 4, "frmode": "rz"}),
    ("fp16", "fp32", {"neab": 2, "fma": 16, "frmode": "rz"}),
    ("fp16", "fp32", {"neab": 3, "fma": 8, "frmode": "rd", "sticky": True}),
    ("bf16", "fp32", {"neab": 1, "fma": 8, "frmode": "rz", "c_position": "late"}),
)


def _fasi_rounding(concl: str) -> set[str]:
    return {"rz": {"rz"}, "rd": {"rd"}, "ru": {"ru"}, "rn or ra": {"rne"}}.get(concl, set())


def authenticate(models: Any = None, *, n_verify: int = 2000) -> list[dict[str, Any]]:
    """One row per model: true parameters, what the fixed (Fasi, n = 4) vectors and the
    generalised inference conclude, and the list of probes that were fooled."""
    rows = []
    for spec in models if models is not None else DEFAULT_MODELS:
        m: Model = spec if isinstance(spec, Model) else custom_model(spec[0], spec[1], **spec[2])
        fs = fasi_suite(m, n=4)
        res = infer(m, n_verify=n_verify)
        fooled = []
        fasi_neab = fs["extra_alignment_bits"].conclusion
        if fasi_neab != m.neab:
            fooled.append(f"fasi extra_alignment_bits says {fasi_neab}, truth {m.neab}")
        if m.rounding not in _fasi_rounding(fs["rounding"].conclusion):
            fooled.append(f"fasi rounding says {fs['rounding'].conclusion}, truth {m.rounding}")
        fasi_block = "fused (>= 4)" if fs["largest_first"].conclusion else "not one fused block of 4"
        if (m.L >= 4) != bool(fs["largest_first"].conclusion):
            fooled.append(f"fasi largest_first says {fasi_block}, truth L = {m.L}")
        for k in ("L", "F", "rounding", "sticky", "c_position"):
            if res.params.get(k) != m.params[k] and k not in res.unobservable:
                fooled.append(f"infer {k} = {res.params.get(k)}, truth {m.params[k]}")
        rows.append({"model": m.describe(), "neab": m.neab, "fasi_neab": fasi_neab,
                     "fasi_rounding": fs["rounding"].conclusion, "fasi_block": fasi_block,
                     "infer": {k: res.params.get(k) for k in ("L", "F", "rounding", "sticky", "c_position")},
                     "verified": res.verified, "fooled": fooled})
    return rows
