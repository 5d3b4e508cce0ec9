"""The evidence of every preset (``workbench/units/evidence.json``), derived from the test data
and the tests' own case lists, never typed by hand.

* GPU vectors: ``test_hw_vectors.SETS`` says which preset each set checks; the rows are
  counted in the set's .npz (the shipped ``tests/data/hw_vectors`` archive).
* Real-GPU witness: ``test_gpu_witness.CASES`` (every stored product is explained), per GPU; the output
  elements are counted in the stored .npz files.
* MMA-Sim: ``mmasim_oracle.paired_presets()`` with ``test_mmasim_differential``'s input
  kinds and shapes (outputs of the default run).
* Papers: ``paper_cases.CASES`` through ``test_engine_papers.model_for``, and the rows
  of Khattak & Mikaitis Table II through ``test_engine_papers.table2_presets``.

``python tests/evidence_sources.py --write`` rewrites the file (run it from the
repository root after changing a test's cases or data); ``tests/test_evidence.py``
fails while the file and this derivation disagree.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(HERE), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

OUT = ROOT / "workbench" / "units" / "evidence.json"


def hw_vector_records() -> dict[str, list[dict]]:
    """Per preset: one record per (device, set) of the GPU vectors."""
    import test_hw_vectors as hv

    import workbench as wb

    recs: dict[str, list[dict]] = defaultdict(list)
    for dev, fmt, out, instruction, _cmode in hv.SETS:
        with np.load(hv.HW / dev / f"{fmt}.npz") as z:
            rows = int(z["d_fp32" if out == "fp32" else "d_fp16"].shape[0])
        name = wb.preset(dev, fmt, out, instruction=instruction).name
        recs[name].append({"kind": "hw-vectors", "what": f"hw_vectors/{dev}/{fmt}.npz, d_{out}", "devices": [dev],
                           "formats": f"{fmt}->{out}", "count": rows, "unit": "rows",
                           "test": "tests/test_hw_vectors.py"})
    return recs


def witness_records() -> dict[str, list[dict]]:
    """Per preset and GPU: the output elements the Hopper witness reproduces."""
    import test_gpu_witness as gw

    import workbench as wb

    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for gpu in gw.GPUS:
        for fmt, kind, K, call in gw.CASES:
            name = wb.preset("H100", fmt, "fp32").name
            counts[(name, gpu, fmt)] += int(gw.MEASURED[gpu][f"{fmt}__{kind}__K{K}__{call}"].size)
    recs: dict[str, list[dict]] = defaultdict(list)
    for (name, gpu, fmt), n in sorted(counts.items()):
        recs[name].append({"kind": "gpu-witness", "what": f"gpu_witness/{gpu}_cublas.npz, PyTorch/cuBLAS products",
                           "devices": [gpu], "formats": f"{fmt}->fp32", "count": n, "unit": "outputs",
                           "test": "tests/test_gpu_witness.py"})
    return recs


def mmasim_records() -> dict[str, list[dict]]:
    """Per preset paired with MMA-Sim: the outputs compared in the default run."""
    from importlib.metadata import version

    import mmasim_oracle as mo
    import test_mmasim_differential as md

    recs: dict[str, list[dict]] = defaultdict(list)
    tr = {p.name for p in md.TR_UNITS}
    for p in mo.paired_presets():
        n = len(mo.INPUT_KINDS) * md.SHAPE[0] * md.SHAPE[1]
        if p.name in tr:
            n += md.TR_SHAPE[0] * md.TR_SHAPE[1]
        recs[p.name].append({"kind": "mmasim", "what": f"mmasim {version('mmasim')}, "
                             f"{len(mo.INPUT_KINDS)} input kinds", "devices": [],
                             "formats": f"{p.in_format}->{p.out_format}", "count": n, "unit": "outputs",
                             "test": "tests/test_mmasim_differential.py"})
    return recs


def _paper(citation: str) -> str:
    """``"Fasi et al. 2021 (PeerJ), ..."`` -> ``"Fasi et al. 2021"``."""
    m = re.match(r"^(.*?\d{4})", citation)
    return m.group(1) if m else citation


def paper_records() -> dict[str, list[dict]]:
    """Per preset: the papers' stated results it reproduces, and the Table II rows it matches."""
    import test_engine_papers as tp
    from paper_cases import CASES, KM_TABLE2, KM_TABLE2_CITATION

    cases: dict[str, list[str]] = defaultdict(list)
    for case in CASES:
        cases[tp.model_for(case).name].append(_paper(case.citation))
    rows: dict[str, int] = defaultdict(int)
    for row in KM_TABLE2:
        for m in tp.table2_presets(row):
            rows[m.name] += 1
    recs: dict[str, list[dict]] = defaultdict(list)
    for name, cites in cases.items():
        recs[name].append({"kind": "paper", "what": "stated results of " + "; ".join(sorted(set(cites))),
                           "devices": [], "formats": "", "count": len(cites), "unit": "cases",
                           "test": "tests/test_engine_papers.py"})
    for name, n in rows.items():
        recs[name].append({"kind": "paper", "what": f"{KM_TABLE2_CITATION} (block size, alignment bits, rounding, "
                           "c order, interleaving)", "devices": [], "formats": "", "count": n,
                           "unit": "table rows", "test": "tests/test_engine_papers.py"})
    return recs


def derive() -> dict:
    """The whole file's content: ``{"presets": {name: [record, ...]}}`` in catalogue order,
    checks in the order GPU vectors, witness, MMA-Sim, papers."""
    from workbench.units.catalogue import records

    parts = (hw_vector_records(), witness_records(), mmasim_records(), paper_records())
    out = {}
    for r in records():
        recs = [rec for part in parts for rec in part.get(r.name, [])]
        if recs:
            out[r.name] = recs
    return {"generated_by": "tests/evidence_sources.py", "presets": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {OUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    text = json.dumps(derive(), indent=1) + "\n"
    if args.write:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
