"""Each preset's evidence (issue 36, item 4) against the data it claims.

``workbench/units/evidence.json`` is written by ``tests/evidence_sources.py`` from the test
data and the tests' case lists; each test here derives one kind of check again and
compares it with what the presets carry, so a changed data set, a case added to or
taken from a test, or a hand-edited count fails here (rerun
``python tests/evidence_sources.py --write``).  The GPU vectors are also counted in
``../shared/hw_vectors`` where that tree sits beside the checkout.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.units import catalogue
from workbench.units.evidence import EVIDENCE_KINDS, Evidence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import evidence_sources as es  # noqa: E402

SHARED_HW = Path(__file__).resolve().parents[1].parent / "shared" / "hw_vectors"
HINT = "the evidence file is stale: run python tests/evidence_sources.py --write"


def _carried(kind: str) -> dict[str, list[dict]]:
    out = {}
    for r in catalogue.records():
        recs = [e.as_dict() for e in r.evidence if e.kind == kind]
        if recs:
            out[r.name] = recs
    return out


def test_gpu_vector_evidence_is_the_data():
    assert _carried("hw-vectors") == dict(es.hw_vector_records()), HINT


def test_witness_evidence_is_the_data():
    assert _carried("gpu-witness") == dict(es.witness_records()), HINT


def test_mmasim_evidence_is_the_test():
    pytest.importorskip("torch", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    pytest.importorskip("mmasim", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
    assert _carried("mmasim") == dict(es.mmasim_records()), HINT


def test_paper_evidence_is_the_cases():
    assert _carried("paper") == dict(es.paper_records()), HINT


def test_every_preset_shows_evidence_and_unchecked_ones_say_so():
    for r in catalogue.records():
        ev = r.evidence
        assert ev, f"{r.name} carries no evidence"
        checked = [e for e in ev if e.checked]
        if r.assumed_from:
            assert not checked, f"{r.name} is checked ({checked[0].summary()}): drop its assumed_from"
            assert ev[-1].kind == "unchecked" and ev[-1].what == r.assumed_from
        else:
            assert checked, f"{r.name}: nothing checks it; give it an assumed_from"


def test_the_vector_counts_add_up_to_the_readme():
    """240,000 rows: every row of the 48 sets is claimed by exactly one preset."""
    rows = [e for r in catalogue.records() for e in r.evidence if e.kind == "hw-vectors"]
    assert len(rows) == 48
    assert sum(e.count for e in rows) == 240_000


def test_shared_vectors_match_the_shipped_ones():
    if not SHARED_HW.is_dir():
        pytest.skip(f"{SHARED_HW} is not there (a checkout without ../shared)")
    for r in catalogue.records():
        for e in r.evidence:
            if e.kind != "hw-vectors":
                continue
            dev, = e.devices
            fmt, out = e.formats.split("->")
            with np.load(SHARED_HW / dev / f"{fmt}.npz") as z:
                assert z[f"d_{out}"].shape[0] == e.count, (r.name, e.summary())


def test_hopper_shows_every_kind_of_check():
    ev = wb.preset("H100", "fp16", "fp32").evidence
    assert [e.kind for e in ev] == ["hw-vectors", "hw-vectors", "gpu-witness", "gpu-witness", "mmasim", "paper",
                                    "paper"]
    assert ev[0].summary() == "GPU vectors: H100 fp16->fp32, 5,000 rows (hw_vectors/H100/fp16.npz, d_fp32)"
    assert {e.devices for e in ev if e.kind == "gpu-witness"} == {("H100",), ("H200",)}


def test_unchecked_summary_names_what_it_is_assumed_from():
    rn = wb.preset("blackwell", "fp16", "fp32", variant="rn")
    assert [e.summary() for e in rn.evidence] == [
        "not checked: blackwell/tcgen05.mma/fp16->fp32 with the final rounding RNE instead of RZ (Khattak & "
        "Mikaitis' hypothetical B200-RN); no device performs it"]
    assert rn.assumed_from.split(" ")[0] in {r.name for r in catalogue.records()}


def test_evidence_table_and_record_checks():
    table = catalogue.evidence_table()
    assert {row["preset"] for row in table} == {r.name for r in catalogue.records()}
    assert set(row["kind"] for row in table) == set(EVIDENCE_KINDS)
    with pytest.raises(ValueError, match="evidence kind 'gpu'"):
        Evidence(kind="gpu", what="x", count=1)
    with pytest.raises(ValueError, match="positive count"):
        Evidence(kind="mmasim", what="x", count=0)
