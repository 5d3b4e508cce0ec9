"""The preset table tells the truth (issue 39, item 5): each row shows only the
parameters its kind reads, the text fits 100 columns, csv/json carry every read
parameter, and the legend is the same in ``presets --help`` and ``Preset``'s docstring.
Expected values come from the catalogue's records (their fields) and from the papers'
tables written out here (Xie et al. 2025 Tables 6-7), not from the table code."""
from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.units import catalogue
from workbench.units.catalogue import PRESET_LEGEND, Preset, records
from workbench.cli import main
from workbench.engine.model import operation

RECORDS = records()


def _text(capsys, *argv: str) -> str:
    assert main(["presets", *argv]) == 0
    return capsys.readouterr().out


def _rows(text: str) -> dict[str, str]:
    """name -> the arithmetic text printed for it (continuation lines joined)."""
    out: dict[str, str] = {}
    name = None
    for line in text.split("\n\n")[0].splitlines()[2:]:
        words = line.split()
        if not words or words[0].endswith(":"):
            name = None if not words else name
            continue
        head = [w for w in words[:2] if "->" in w]
        if head:
            name = head[0]
            rest = words[words.index(name) + 1:]
            out[name] = " ".join(rest[1:]) if rest else ""      # rest[0] is the kind
        elif name is not None:
            kinds = {r.kind for r in RECORDS}
            out[name] = (out[name] + " " + " ".join(w for w in words if w not in kinds)).strip()
    return out


@pytest.mark.parametrize("argv", [(), ("--device", "MI300X"), ("--device", "blackwell"), ("--in-format", "fp8")])
def test_the_default_table_fits_100_columns(capsys, argv):
    text = _text(capsys, *argv)
    assert max(len(line) for line in text.splitlines()) <= 100


def test_every_record_has_a_row_with_its_name(capsys):
    rows = _rows(_text(capsys))
    assert sorted(rows) == sorted(r.name for r in RECORDS)


@settings(max_examples=100, deadline=None)
@given(rec=st.sampled_from(RECORDS))
def test_each_row_shows_what_its_kind_reads_and_nothing_else(rec):
    tokens = catalogue.arithmetic(rec)
    read = set(operation(rec.kind).param_names)
    keys = {t.split("=")[0] for t in tokens}
    assert f"L={rec.L}" in tokens
    assert ("F" in keys) == (rec.F is not None and "F" in read)
    assert ("round" in keys) == ("rounding" in read)
    assert ("F2" in keys) == ("F2" in read and rec.F2 is not None)
    assert ("align" in keys) == ("alignment_rounding" in read and rec.alignment_rounding is not None)
    assert ("P" in keys) == ("P" in read)
    assert ("ftz-in" in tokens) == bool(rec.flush_subnormals)
    assert ("ftz-out" in tokens) == bool(rec.flush_output_subnormals)
    assert ("c" in keys) == ("c_position" in read)
    if "c_position" in read:
        assert (f"c=late({rec.late_rounding})" if rec.c_position == "late" else "c=early") in tokens
    if "rounding" in read:
        assert f"round={rec.rounding}" in tokens


def test_fma_chains_say_rne_per_fma_and_no_window():
    for rec in (r for r in RECORDS if r.kind == "fma"):     # Xie Table 3 / Tables 6-7: fp32/fp64 chains of FMAs
        tokens = catalogue.arithmetic(rec)
        assert tokens[:2] == ["L=1", "RNE/FMA"], rec.name
        assert not any(t.startswith(("F=", "round=", "zero=")) for t in tokens), rec.name


@pytest.mark.parametrize("name,P", [("cdna2/mfma/bf16->fp32", 2), ("cdna2/mfma_1k/bf16->fp32/1k", 4),
                                    ("cdna2/mfma/fp16->fp32", 4)])
def test_ftz_addmul_rows_show_p_and_the_flushes(capsys, name, P):
    row = _rows(_text(capsys, "--device", "MI250X"))[name]       # Xie et al. Table 6: CDNA2 P, FTZ in and out
    assert f"P={P}" in row.split() and "ftz-in" in row.split() and "ftz-out" in row.split()
    assert "F=" not in row and "round=" not in row


def test_cdna3_and_its_rz_twin_print_different_rows(capsys):
    rows = _rows(_text(capsys, "--device", "MI300X"))
    real, twin = rows["cdna3/mfma/fp16->fp32"], rows["cdna3/mfma_rz/fp16->fp32/rz"]
    assert real != twin
    assert {"F2=31", "align=rd"} <= set(real.split()) and {"F2=31", "align=rz"} <= set(twin.split())   # Xie Table 7


def test_csv_and_json_carry_exactly_the_read_parameters(capsys):
    data = json.loads(_text(capsys, "--format", "json"))
    assert [d["name"] for d in data] == [r.name for r in RECORDS]
    for d in data:
        rec = catalogue.by_name(d["name"])
        assert set(d["parameters"]) == {"L", *operation(d["kind"]).param_names}
        assert all(d["parameters"][k] == getattr(rec, k) for k in d["parameters"] if k != "L")
    rows = list(csv.DictReader(io.StringIO(_text(capsys, "--format", "csv"))))
    assert [r["name"] for r in rows] == [r.name for r in RECORDS]
    for row in rows:
        read = {"L", *operation(row["kind"]).param_names}
        rec = catalogue.by_name(row["name"])
        for key in ("F", "F2", "P", "rounding", "alignment_rounding", "zero_exponent"):
            if key not in read:
                assert row[key] == "", (row["name"], key)
            elif getattr(rec, key) is not None:
                assert row[key] == str(getattr(rec, key)), (row["name"], key)


def test_the_legend_is_the_same_in_the_table_help_and_docstring(capsys):
    assert PRESET_LEGEND in _text(capsys)
    assert main(["presets", "--help"]) == 0
    assert PRESET_LEGEND in capsys.readouterr().out
    doc = " ".join((Preset.__doc__ or "").split())
    assert " ".join(PRESET_LEGEND.split()) in doc


def test_wide_has_devices_and_sources_on_one_line(capsys):
    text = _text(capsys, "--wide")
    line = next(ln for ln in text.splitlines() if " hopper/wgmma/fp16->fp32 " in ln)
    assert "H100, H200" in line and "Xie et al. 2025 Table 4" in line
