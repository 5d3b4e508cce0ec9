"""Conformance vectors (workbench.conformance, ``workbench vectors``): every preset round-trips,
a planted one-bit change of a unit (F - 1) is reported with examples, a file edited after
export is refused by its SHA-256, bad folders and versions get clear errors, and the
plain-numpy reader of docs/guide/vectors.md decodes what the workbench wrote.

The export computes rows with ``engine.core.dots`` (scaled units: one ``gemm`` per row);
``test_export_rows_equal_gemm_per_row`` recomputes rows of every preset with
``workbench.gemm`` on 1 x K x 1 products, the public entry point, so the round trip is not
the same code checking itself.
"""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.cli import main
from workbench.conformance import layout, unitvectors as uv
from workbench.matmul.product import gemm
from workbench.units import catalogue
from workbench.units.unitfile import save_unit

ROOT = Path(__file__).resolve().parents[1]
HOPPER = "hopper/wgmma/fp16->fp32"


@pytest.fixture(scope="module")
def every_preset(tmp_path_factory):
    root = tmp_path_factory.mktemp("vec")
    uv.export_units(None, root, count=18)
    return root


def test_every_preset_round_trips(every_preset):
    reports = uv.check_folder(every_preset)
    assert len(reports) == len(catalogue.records())
    assert {r.unit for r in reports} == {p.name for p in catalogue.records()}
    assert all(r.mismatches == 0 and r.rows == 18 for r in reports), [r.text() for r in reports if r.mismatches]


def test_export_rows_equal_gemm_per_row(every_preset):
    for folder in layout.set_folders(every_preset):
        man = layout.read_manifest(folder)
        model = catalogue.by_name(man["unit"]["name"])
        fmts = man["formats"]
        for entry in man["files"]:
            arr = layout.load_file(folder, entry)
            v = {k: layout.from_bits(a, fmts[k]["name"]) for k, a in arr.items()}
            for r in range(2):
                kw = {"scale_a": v["scale_a"][r:r + 1], "scale_b": v["scale_b"][r:r + 1].T} if "scale_a" in v else {}
                d = gemm(v["a"][r:r + 1], v["b"][r:r + 1].T, v["c"][r:r + 1, None], model=model, **kw)[0, 0]
                assert (np.isnan(d) and np.isnan(v["d"][r])) or layout.to_bits(np.array([d]), fmts["d"]["name"])[0] \
                    == arr["d"][r], (man["unit"]["name"], entry["file"], r)


def test_manifest_fields(every_preset):
    man = json.loads((every_preset / "hopper_wgmma_fp16-to-fp32" / "manifest.json").read_text())
    assert man["layout"] == "workbench-vectors" and man["layout_version"] == layout.LAYOUT_VERSION
    assert man["unit"]["name"] == HOPPER and man["unit"]["parameters"]["F"] == 13 or man["unit"]["parameters"]["F"]
    assert man["unit"]["source"] and man["unit"]["evidence"] and man["workbench"]
    assert [f["input_kind"] for f in man["files"]] == list(uv.FLOAT_KINDS)
    assert all(re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) for f in man["files"])
    imma = json.loads((every_preset / "hopper_mma.m16n8k32_s8-to-s32" / "manifest.json").read_text())
    assert [f["input_kind"] for f in imma["files"]] == list(uv.INT_KINDS)
    assert imma["formats"]["a"] == {"name": "s8", "type": "int", "bits": 8, "signed": True, "dtype": "uint8"}
    assert json.loads((every_preset / "index.json").read_text())["sets"][0]["manifest_sha256"]


@pytest.fixture()
def hopper_set(tmp_path):
    uv.export_unit(HOPPER, tmp_path / "h", count=600)
    return tmp_path / "h"


def test_planted_one_bit_change_is_reported(hopper_set, tmp_path, capsys):
    p = catalogue.by_name(HOPPER)
    planted = dataclasses.replace(p.model(), F=p.F - 1)
    save_unit(planted, tmp_path / "f_minus_1.toml")
    rep = uv.check_set(hopper_set, tmp_path / "f_minus_1.toml")
    assert rep.mismatches > 0 and all(f.examples for f in rep.files if f.mismatches)
    ex = next(f for f in rep.files if f.mismatches).examples[0]
    assert {"row", "a", "b", "c", "expected", "got"} <= set(ex)
    assert main(["vectors", "check", str(hopper_set), "--unit", str(tmp_path / "f_minus_1.toml")]) == 1
    out = capsys.readouterr().out
    assert "rows differ; first:" in out and "expected=" in out
    assert main(["vectors", "check", str(hopper_set)]) == 0


def test_edited_file_is_refused(hopper_set, capsys):
    f = hopper_set / "wide.npz"
    data = bytearray(f.read_bytes())
    data[-100] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(layout.VectorsError, match=r"wide.npz was changed after export: its SHA-256 is [0-9a-f]{64}"):
        uv.check_set(hopper_set)
    assert main(["vectors", "check", str(hopper_set)]) == 2
    assert "changed after export" in capsys.readouterr().err


def test_bad_folders_and_versions(hopper_set, tmp_path):
    with pytest.raises(layout.VectorsError, match="no such folder"):
        uv.check_folder(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(layout.VectorsError, match="holds neither manifest.json nor index.json"):
        uv.check_folder(tmp_path / "empty")
    man = json.loads((hopper_set / "manifest.json").read_text())
    man["layout_version"] = 99
    (hopper_set / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(layout.VectorsError, match="layout_version 99 is unknown"):
        uv.check_set(hopper_set)
    (hopper_set / "manifest.json").write_text("{not json")
    with pytest.raises(layout.VectorsError, match="not a readable JSON file"):
        uv.check_set(hopper_set)


def test_callable_is_imported_never_evaluated(hopper_set, tmp_path, monkeypatch):
    (tmp_path / "mysim_mod.py").write_text(
        "import numpy as np\n"
        "from workbench.engine import core\nfrom workbench.units import catalogue\n"
        "def dot(a, b, c, scale_a, scale_b):\n"
        "    return core.dots(catalogue.by_name('hopper/wgmma/fp16->fp32'), a, b, c)\n"
        "def off(a, b, c, scale_a, scale_b):\n"
        "    d = dot(a, b, c, scale_a, scale_b)\n"
        "    return np.where(np.arange(d.size) % 7 == 3, np.nextafter(d.astype(np.float32), np.float32(np.inf)), d)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert uv.check_set(hopper_set, uv.load_callable("mysim_mod:dot")).mismatches == 0
    rep = uv.check_set(hopper_set, uv.load_callable("mysim_mod:off"))
    assert rep.mismatches > 0
    for bad, msg in [("os.system('true')", "expected 'module:function'"), ("mysim_mod:nope", "has no attribute 'nope'"),
                     ("no_such_module_x:f", "cannot import module"), ("a b:c", "must be dotted Python names")]:
        with pytest.raises(ValueError, match=re.escape(msg)):
            uv.load_callable(bad)


def test_incompatible_unit_and_bad_counts(hopper_set, tmp_path):
    with pytest.raises(ValueError, match="the vectors' a is fp16, but .* takes bf16"):
        uv.check_set(hopper_set, "hopper/wgmma/bf16->fp32")
    with pytest.raises(ValueError, match=r"count=0: expected a whole number of dot products from 1"):
        uv.export_unit(HOPPER, tmp_path / "x", 0)
    with pytest.raises(ValueError, match=r"count=5,000,000 dot products of up to K=\d+ elements"):
        uv.export_units(["blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4"], tmp_path / "y", 5_000_000)
    assert not (tmp_path / "y").exists()
    assert main(["vectors", "export", str(tmp_path / "z")]) == 2


def _reader_source() -> str:
    text = (ROOT / "docs" / "guide" / "vectors.md").read_text()
    start = text.index("# --- plain-numpy reader")
    return text[start:text.index("# --- end of the reader ---")]


def test_plain_numpy_reader_in_the_docs(tmp_path):
    uv.export_units([HOPPER, "blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4",
                     "hopper/mma.m16n8k32/s8->s32"], tmp_path / "v", count=30)
    from workbench.conformance import scales
    scales.export_suite(tmp_path / "v" / "scale-suite")
    driver = _reader_source() + (
        "\nimport sys\nout = {}\n"
        "for d in sys.argv[1:]:\n"
        "    for f, arrays in read_set(d).items():\n"
        "        for k, v in arrays.items():\n"
        "            out[pathlib.Path(d).name + '|' + f + '|' + k] = v\n"
        "assert not any(m.startswith('workbench') for m in sys.modules), 'the reader imported the workbench'\n"
        f"np.savez({str(tmp_path / 'decoded.npz')!r}, **out)\n")
    sets = sorted(p for p in (tmp_path / "v").iterdir() if p.is_dir())
    r = subprocess.run([sys.executable, "-I", "-c", driver, *map(str, sets)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "decoded.npz") as z:
        decoded = {k: z[k] for k in z.files}
    n = 0
    for s in sets:
        man = layout.read_manifest(s)
        for entry in man["files"]:
            names = entry.get("formats")
            for k, bits in layout.load_file(s, entry).items():
                if names is not None and k not in names:
                    continue
                fmt = man["formats"][names[k]]["name"] if names else man["formats"][k]["name"]
                want = layout.from_bits(bits, fmt)
                got = decoded[f"{s.name}|{entry['file']}|{k}"]
                assert np.array_equal(got, want, equal_nan=True), (s.name, entry["file"], k)
                n += 1
    assert n > 40


def test_cli_export_and_check(tmp_path, capsys):
    assert main(["vectors", "export", str(tmp_path / "v"), "H100:fp8_e4m3:fp32", "--count", "60"]) == 0
    assert main(["vectors", "check", str(tmp_path / "v")]) == 0
    out = capsys.readouterr().out
    assert "60 of 60 rows agree, 0 mismatch" in out
