"""One way to name a unit (issue 39, item 2): every spelling of :mod:`workbench.units`
selects the same catalogue record in every entry point, and every name the tool prints
reads back.  Expected records come from the catalogue's own data (each record's
architecture, devices, formats, instruction and variant fields), not from the resolver."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench import units
from workbench.units.catalogue import records
from workbench.numbers.formats import _ALIASES

RECORDS = records()
record = st.sampled_from(RECORDS)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _full_string(rec: catalogue.Preset, device: str) -> str:
    """DEVICE:IN:OUT:INSTRUCTION:VARIANT written out from the record's fields."""
    return f"{device}:{rec.in_format}:{rec.out_format}:{rec.instruction}:{rec.variant or ''}"


@SETTINGS
@given(rec=record, data=st.data())
def test_every_record_reads_back_from_its_name_and_every_string(rec, data):
    assert units.resolve(rec) is rec
    assert units.resolve(rec.name) is rec
    assert units.resolve(f"  {rec.name.upper()} ").name == rec.name          # case and blanks ignored
    device = data.draw(st.sampled_from(rec.devices + (rec.architecture,)), label="device")
    assert units.resolve(_full_string(rec, device)).name == rec.name
    assert units.resolve("preset:" + _full_string(rec, device)).name == rec.name
    short = units.resolve(rec.unit_string)
    assert short.name == rec.name and short.params == rec.params
    # the shortest string leaves out only what the record does not need
    fields = rec.unit_string.split(":")
    assert fields[:3] == [rec.devices[0], rec.in_format, rec.out_format]
    if rec.default:
        assert len(fields) == 3
    else:
        assert fields[3] == rec.instruction


@SETTINGS
@given(rec=record)
def test_default_records_are_what_device_in_out_selects(rec):
    if not rec.default:
        return
    for device in rec.devices:
        assert units.resolve(f"{device}:{rec.in_format}:{rec.out_format}").name == rec.name
        assert catalogue.preset(device, rec.in_format, rec.out_format).name == rec.name
    if rec.out_format == "fp32":
        assert units.resolve(f"{rec.devices[0]}:{rec.in_format}").name == rec.name   # OUT defaults to fp32


# every alias of a format some record reads, with the records that read it
_ALIASED = [(alias, target) for alias, target in _ALIASES.items() if any(r.in_format == target for r in RECORDS)]


@SETTINGS
@given(pair=st.sampled_from(_ALIASED), data=st.data())
def test_format_aliases_mean_the_same_in_preset_and_in_a_unit_string(pair, data):
    alias, target = pair
    rec = data.draw(st.sampled_from([r for r in RECORDS if r.in_format == target and r.default]))
    dev = rec.devices[0]
    assert units.resolve(f"{dev}:{alias}:{rec.out_format}").name == rec.name
    assert catalogue.preset(dev, alias, rec.out_format).name == rec.name


# the device's default fp8: E4M3 (Catalogue data: FNUZ on CDNA3, where the hardware has no OCP fp8)
_FP8 = sorted({(r.architecture, r.out_format) for r in RECORDS if r.default and r.in_format.startswith("fp8_e4m3")})


@pytest.mark.parametrize("arch,fout", _FP8)
def test_fp8_family_is_the_devices_e4m3_everywhere(arch, fout):
    want = "fp8_e4m3fnuz" if arch == "cdna3" else "fp8_e4m3"
    dev = catalogue.ARCHITECTURES[arch][0]
    assert catalogue.preset(dev, "fp8", fout).in_format == want
    assert units.resolve(f"{dev}:fp8:{fout}").in_format == want
    assert units.resolve(f"{dev}:FP8:{fout}").name == catalogue.preset(dev, want, fout).name
    assert want in catalogue.format_family("fp8")           # presets --format fp8 lists it


def test_fp8_on_cdna3_means_fnuz_and_ocp_names_map_to_it():
    assert units.resolve("MI300X:fp8_e5m2:fp32").in_format == "fp8_e5m2fnuz"
    assert units.resolve("MI300X:e4m3:fp32").in_format == "fp8_e4m3fnuz"


@pytest.mark.parametrize("bad,match", [
    ("H100", "DEVICE:IN:OUT"),
    ("H100:", "DEVICE:IN:OUT"),
    ("H100:fp16:fp32:wgmma:x:y", "DEVICE:IN:OUT"),
    ("nowhere/x/fp16->fp32", "no preset named 'nowhere/x/fp16->fp32'"),
    ("Z9:fp16:fp32", "'Z9'"),
    ("H100:fp15:fp32", "'fp15'"),
    ("V100:bf16:fp32", "no preset for 'V100'"),
    ("", "empty name"),
])
def test_bad_names_name_the_offending_value(bad, match):
    with pytest.raises(ValueError, match=match):
        units.resolve(bad)


def test_objects_that_are_no_unit_are_a_type_error():
    with pytest.raises(TypeError, match="model=3"):
        units.resolve(3)  # type: ignore[arg-type]


def test_unit_name_reads_back_and_custom_units_say_so():
    for rec in RECORDS:
        assert units.resolve(units.unit_name(rec)) is rec
    custom = wb.custom_model("fp16", "fp32", L=4, F=30, rounding="rne")
    assert units.unit_name(custom).startswith("custom(")


# ------------------------------------------------------------- the entry points
A = np.array([[1.0, 2.0 ** -11, 2.0 ** -11, -1.0]])
B = np.array([[1.0], [1.0], [1.0], [1.0]])


def test_gemm_takes_every_spelling_and_gives_the_same_bits(tmp_path):
    rec = catalogue.preset("V100", "fp16", "fp32")
    path = wb.save_unit(rec, tmp_path / "v100.toml")
    want = wb.gemm(A, B, model=rec)
    for spec in (rec.name, "V100:fp16:fp32", "volta:half:binary32", "V100:fp16:fp32:mma.m8n8k4", path, str(path)):
        got = wb.gemm(A, B, model=spec)
        assert got.tobytes() == want.tobytes(), spec
    # V100 (F = 23, RZ): 1 + 2^-11 + 2^-11 - 1 is exact in the 23 fraction bits of the sum
    assert want[0, 0] == 2.0 ** -10


def test_gemm_refuses_a_device_alone_with_the_forms_it_takes():
    with pytest.raises(ValueError, match=r"model='H100'.*DEVICE:IN:OUT"):
        wb.gemm(A, B, model="H100")


def test_algorithms_take_unit_names():
    import algorithms

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((4, 8)), rng.standard_normal((8, 4))
    rec = catalogue.preset("A100", "fp16", "fp32")
    want = algorithms.markidis(X, Y, model=rec)
    for spec in ("A100:fp16:fp32", rec.name):
        assert algorithms.markidis(X, Y, model=spec).tobytes() == want.tobytes()
    with pytest.raises(ValueError, match=r"markidis: model='A100'"):
        algorithms.markidis(X, Y, model="A100")


def test_discriminate_and_probe_targets_take_the_same_names():
    from workbench.discrimination import resolve_model
    from workbench.probes.targets import target

    for spec in ("H100:fp16:fp32", "hopper/wgmma/fp16->fp32", "H100:fp16:fp32:wgmma", "preset:H100:fp16:fp32"):
        assert resolve_model(spec).name == "hopper/wgmma/fp16->fp32"
        assert target(spec).name == "preset hopper/wgmma/fp16->fp32"
    assert resolve_model("B200:fp16:fp32::rn").name == "blackwell/tcgen05.mma/fp16->fp32/rn"
    assert resolve_model("B200:fp16:fp32:rn").name == "blackwell/tcgen05.mma/fp16->fp32/rn"


def _cli(argv: list[str]) -> str:
    from workbench.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("spec", ["H100:bf16:fp32", "hopper/wgmma/bf16->fp32"])
def test_explain_takes_a_whole_unit_name(spec):
    text = _cli(["explain", "--device", spec, "--a", "1,1", "--b", "1,1"])
    assert text.startswith("preset hopper/wgmma/bf16->fp32 ")
    text = _cli(["explain", "--unit", spec, "--a", "1,1", "--b", "1,1"])
    assert text.startswith("preset hopper/wgmma/bf16->fp32 ")


def test_explain_refuses_format_options_beside_a_whole_unit_name(capsys):
    from workbench.cli import main

    assert main(["explain", "--device", "H100:bf16:fp32", "--in-format", "fp16", "--a", "1", "--b", "1"]) != 0
    assert "--in-format: 'H100:bf16:fp32' names a whole unit" in capsys.readouterr().err


def test_every_name_presets_prints_reads_back():
    text = _cli(["presets"])
    names = [t for line in text.splitlines() for t in line.split()[:2] if "->" in t]
    assert len(names) == len(RECORDS)
    assert sorted(units.resolve(n).name for n in names) == sorted(r.name for r in RECORDS)


def test_torch_policies_take_unit_names():
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    from workbench.torch import Policy, simulate

    pol = Policy(forward="H100:bf16:fp32", dgrad="hopper/wgmma/bf16->fp32")
    assert pol.forward.name == pol.dgrad.name == "hopper/wgmma/bf16->fp32"
    x = torch.tensor([[1.0, 2.0 ** -8]], dtype=torch.float32)
    w = torch.tensor([[1.0], [1.0]], dtype=torch.float32)
    with simulate("H100:bf16:fp32"):
        got = x @ w
    with simulate(catalogue.preset("H100", "bf16", "fp32")):
        want = x @ w
    assert got.numpy().tobytes() == want.numpy().tobytes()


def test_explorer_starts_on_a_whole_unit_name():
    pytest.importorskip("ipywidgets")
    from workbench.studies.explorer import Explorer

    ex = Explorer(preset="A100:fp16:fp32", k_range=(16, 16), compare_with=("V100",))
    assert ex.preset.value == "ampere/mma/fp16->fp32"
    ex = Explorer(preset="ampere/mma/fp16->fp32", k_range=(16, 16), compare_with=("V100",))
    assert ex.model().name == "ampere/mma/fp16->fp32"


def test_a_sweep_task_takes_a_whole_unit_name():
    from workbench.sweep.spec import validate_task

    base = {"algorithm": "gemm", "m": 2, "k": 4, "n": 2, "seed": 0, "input": {"generator": "normal"}}
    spec = validate_task({**base, "preset": "MI300X:fp8:fp32"}, "grid[0]")
    assert (spec["in_format"], spec["out_format"]) == ("fp8_e4m3fnuz", "fp32")
    spec = validate_task({**base, "preset": "MI300X", "in_format": "fp8", "out_format": "fp32"}, "grid[0]")
    assert spec["in_format"] == "fp8_e4m3fnuz"              # the format the unit reads, not the one typed
    with pytest.raises(ValueError, match="in_format='bf16' but preset 'H100:fp16:fp32' has in_format='fp16'"):
        validate_task({**base, "preset": "H100:fp16:fp32", "in_format": "bf16"}, "grid[0]")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=record, data=st.data())
def test_explain_takes_every_spelling_and_traces_the_same_unit(rec, data, tmp_path_factory):
    """``workbench.explain`` reads the unit as ``gemm`` does: the record, its catalogue
    name, a DEVICE:IN:OUT:INSTRUCTION:VARIANT string and a saved unit file give one trace,
    whose value is ``gemm``'s output for that 1 x K x 1 product."""
    device = data.draw(st.sampled_from(rec.devices + (rec.architecture,)), label="device")
    path = tmp_path_factory.mktemp("unit") / "unit.toml"
    wb.save_unit(rec, path)
    a, b = [1.0, 0.5, 2.0, -1.0], [1.0, 1.0, 1.5, 0.5]     # values of every input format, fp4 included
    c = 0.5
    if rec.operation.integer:                               # integer units: integers of s8 and u8, an s32 c
        a, b = [1.0, 5.0, 2.0, 127.0], [1.0, 1.0, 3.0, 255.0 if rec.formats[1].name == "u8" else 100.0]
        c = 5.0
    kw = {}
    if rec.scale_format is not None:
        nb = -(-len(a) // rec.k_block)
        kw = {"scale_a": [1.0] * nb, "scale_b": [1.0] * nb}
    traces = [wb.explain(a, b, c, spec, **kw) for spec in (rec, rec.name, _full_string(rec, device), str(path))]
    assert {t.model.params == rec.params for t in traces} == {True}
    assert len({t.value for t in traces}) == 1
    gkw = {k: np.array(v)[None, :] if k == "scale_a" else np.array(v)[:, None] for k, v in kw.items()}
    D = wb.gemm(np.array([a]), np.array(b)[:, None], np.array([[c]]), model=rec, **gkw)
    assert traces[0].value == float(D[0, 0])


def test_explain_without_a_unit_says_what_it_takes():
    with pytest.raises(TypeError, match="DEVICE:IN:OUT"):
        wb.explain([1.0], [1.0], 0.0)
