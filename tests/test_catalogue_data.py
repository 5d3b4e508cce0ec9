"""The preset catalogue is data (issue 50): ``workbench/units/presets/*.toml`` read at import
gives the same presets, field for field, as the table the catalogue held in code before
(``tests/data/preset_table_frozen.json``, written from ``catalogue.records()`` at 38bd0c6),
and a malformed catalogue file is refused with the file, the preset and the key."""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from workbench.units import catalogue

FROZEN = Path(__file__).parent / "data" / "preset_table_frozen.json"


def _frozen() -> dict[str, dict]:
    return {d["name"]: d for d in json.loads(FROZEN.read_text())["presets"]}


def test_every_preset_of_the_frozen_table_is_read_back_field_for_field():
    now = {r.name: r for r in catalogue.records()}
    frozen = _frozen()
    assert set(frozen) <= set(now), sorted(set(frozen) - set(now))
    for name, record in frozen.items():
        got = now[name]
        added = {f.name: f.default for f in fields(got) if f.name not in record}
        assert set(record) <= {f.name for f in fields(got)}, name
        # fields a later kind added (int-mma's b_format, overflow) stay at their defaults here
        assert all(getattr(got, k) == default for k, default in added.items()), (name, added)
        for key, value in record.items():
            have = getattr(got, key)
            have = list(have) if isinstance(have, tuple) else have
            assert (have, type(have)) == (value, type(value)), (name, key)


def test_each_architecture_keeps_its_presets_order():
    frozen = list(_frozen())
    now = [r.name for r in catalogue.records()]
    for arch in catalogue.ARCHITECTURES:
        assert [n for n in now if n.startswith(arch + "/") and n in frozen] == \
            [n for n in frozen if n.startswith(arch + "/")], arch


def test_architectures_devices_and_aliases_come_from_the_index():
    assert catalogue.ARCHITECTURES["hopper"] == ("H100", "H200")
    assert catalogue.architecture_of("sm90") == "hopper"
    assert catalogue.architecture_of("gfx942") == "cdna3"
    assert catalogue.DEVICES["mi300x"] == "cdna3"


def _table(**kw):
    base = dict(instruction="wgmma", kind="t-fdpa", in_format="fp16", out_format="fp32", L=16, F=25,
                rounding="rz", zero_exponent=-133, source="a paper")
    return {k: v for k, v in {**base, **kw}.items() if v is not None}


def test_a_valid_table_becomes_its_preset():
    p = catalogue._preset_from("hopper", ("H100",), _table(), {"fp16": "converted"}, "hopper.toml, preset 1")
    assert p.name == "hopper/wgmma/fp16->fp32" and p.devices == ("H100",) and p.default and p.F == 25
    assert p.wider_inputs == "converted"


@pytest.mark.parametrize("table, wider, message", [
    (_table(F_bits=25), {"fp16": "x"}, "unknown key(s) F_bits"),
    (_table(source=None), {"fp16": "x"}, "missing key 'source'"),
    (_table(), {}, "[wider_inputs] has no entry for 'fp16'"),
    (_table(L=0), {"fp16": "x"}, "(hopper/wgmma/fp16->fp32): L"),
])
def test_a_malformed_table_is_refused_naming_the_file_and_the_key(table, wider, message):
    with pytest.raises(ValueError, match="hopper.toml, preset 3") as err:
        catalogue._preset_from("hopper", ("H100",), table, wider, "hopper.toml, preset 3")
    assert message in str(err.value)


def test_a_catalogue_file_of_another_layout_is_refused(monkeypatch):
    monkeypatch.setattr(catalogue, "CATALOGUE_LAYOUT", 2)
    with pytest.raises(ValueError, match=r"architectures.toml: workbench_catalogue = 1, expected 2"):
        catalogue._load_catalogue()


def test_the_catalogue_files_are_package_data():
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert '"units/presets/*.toml"' in pyproject
    folder = Path(catalogue.__file__).parent / catalogue.CATALOGUE_FOLDER
    assert {p.stem for p in folder.glob("*.toml")} == {"architectures", *catalogue.ARCHITECTURES}
