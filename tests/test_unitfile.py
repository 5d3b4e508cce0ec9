"""Units saved as files (issue 36, item 5): ``workbench.save_unit`` / ``load_unit``.

Round trip over drawn models of every kind (custom formats included): the model read
back equals the one saved and gives the same output bits.  Malformed and hostile files
are refused with the file, the key and what was expected, and nothing in them runs.
The unit file is accepted by sweeps (``unit = "path.toml"``), ``workbench explain
--unit``, ``workbench discriminate``, the explorer and written by ``workbench probe
--save`` only when the result verified.
"""
from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.units import catalogue
from workbench.numbers import formats
from workbench.cli import main
from workbench.units.unitfile import Provenance, UnitFileError, read_unit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_reference import CUSTOM_KINDS, _random_model  # noqa: E402

KINDS = [k for k, _ in CUSTOM_KINDS]


def _custom_format(e: int, m: int, special: str) -> str:
    """A format the registry does not have, registered under a name of its encoding."""
    name = f"test_e{e}m{m}_{special}"
    bias = (1 << (e - 1)) - 1
    formats.register_format(formats.FloatFormat(name, e, m, bias, special))  # type: ignore[arg-type]
    return name


@st.composite
def models(draw):
    kind = draw(st.sampled_from(KINDS))
    m = _random_model(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), kind)
    if kind in ("t-fdpa", "e-fdpa") and draw(st.booleans()):
        special = draw(st.sampled_from(["ieee", "fn"]))
        fmt = _custom_format(draw(st.integers(3, 6)), draw(st.integers(1, 9)), special)
        try:
            m = m.with_params(in_format=fmt)
        except ValueError:
            assume(False)
    return m


def _gemm_bits(m, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    L = m.P if m.kind == "ftz-addmul" else m.L
    M, K, N = 3, 2 * L + 1, 2
    if m.operation.integer:          # integer units take integers of their formats (A, B, C/D)
        fa, fb, fc = m.formats
        A, B, C = (rng.integers(f.min, f.max, size=shape, endpoint=True).astype(np.float64)
                   for f, shape in ((fa, (M, K)), (fb, (K, N)), (fc, (M, N))))
    else:
        A = wb.round(rng.standard_normal((M, K)), m.in_format, saturate=True)
        B = wb.round(rng.standard_normal((K, N)), m.in_format, saturate=True)
        C = wb.round(rng.standard_normal((M, N)), m.out_format)
    kw = {}
    if m.scale_format:
        nb = -(-K // m.k_block)
        kw = dict(scale_a=np.full((M, nb), 2.0), scale_b=np.full((nb, N), 0.5))
    D = wb.gemm(A, B, C, model=m, **kw)
    return D.view(np.uint64 if D.dtype == np.float64 else np.uint32 if D.dtype == np.float32 else np.uint16)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.filter_too_much])
@given(m=models(), seed=st.integers(0, 2**16))
def test_round_trip_of_drawn_models(tmp_path, m, seed):
    path = wb.save_unit(m, tmp_path / "unit.toml")
    back = wb.load_unit(path)
    assert back == m and type(back) is type(m)
    assert np.array_equal(_gemm_bits(back, seed), _gemm_bits(m, seed))
    text = path.read_text()
    assert f'in_format = "{m.in_format}"' in text and f"[formats.{m.in_format}]" in text


@pytest.mark.parametrize("rec", catalogue.records()[::7], ids=lambda r: r.name)
def test_round_trip_of_presets(tmp_path, rec):
    """A preset comes back as the catalogue's Preset, devices in the saved order."""
    p = wb.preset(rec.devices[-1], rec.in_format, rec.out_format, instruction=rec.instruction, variant=rec.variant)
    back = wb.load_unit(wb.save_unit(p, tmp_path / "p.toml"))
    assert back == p and isinstance(back, wb.Preset) and back.devices[0] == rec.devices[-1]
    uf = read_unit(tmp_path / "p.toml")
    assert uf.provenance.origin == "preset" and uf.provenance.preset == rec.name


def test_a_custom_format_travels_in_the_file(tmp_path):
    """The file carries the encoding: a process that never saw the format reads it."""
    text = (
        'workbench_unit = 1\n[unit]\nkind = "t-fdpa"\nin_format = "mine_e5m6"\nout_format = "fp32"\nL = 4\nF = 20\n'
        'rounding = "rne"\n[formats.mine_e5m6]\nexp_bits = 5\nman_bits = 6\nbias = 15\nspecial = "ieee"\n'
        'subnormals = true\nsigned = true\n[formats.fp32]\nexp_bits = 8\nman_bits = 23\nbias = 127\n'
        'special = "ieee"\nsubnormals = true\nsigned = true\n[provenance]\norigin = "custom"\n'
        'date = 2026-11-28T01:00:00Z\n[provenance.verification]\nchecked = 12\n')
    (tmp_path / "u.toml").write_text(text)
    uf = read_unit(tmp_path / "u.toml")
    f = formats.format("mine_e5m6")
    assert (f.exp_bits, f.man_bits, f.p) == (5, 6, 7)
    assert uf.model.in_fmt is f and uf.provenance.verification == {"checked": 12}
    assert uf.provenance.date.startswith("2026-11-28T01:00:00")
    # one exact check: 1 + 2^-6 is representable in E5M6, its square rounds (RNE to fp32) exactly
    x = 1 + 2.0**-6
    assert wb.gemm(np.array([[x]]), np.array([[x]]), model=uf.model)[0, 0] == np.float32(x * x)


def test_provenance_is_written_and_read(tmp_path):
    m = wb.custom_model("bf16", "fp32", L=8, F=24, rounding="rz")
    prov = Provenance(origin="probed", target='GPU "X"\nline two \\ and \x01', verification={"checked": 5, "agreed": 5},
                      notes="ünïcödé ✓")
    uf = read_unit(wb.save_unit(m, tmp_path / "u.toml", provenance=prov))
    assert uf.model == m
    got = uf.provenance
    assert (got.origin, got.target, got.verification, got.notes) == (prov.origin, prov.target, prov.verification,
                                                                      prov.notes)
    assert got.date and got.workbench == wb.__version__


@pytest.fixture
def good(tmp_path) -> str:
    return wb.save_unit(wb.preset("A100", "fp16", "fp32"), tmp_path / "good.toml").read_text()


@pytest.mark.parametrize("edit,match", [
    (lambda t: t.replace("L = 8", "L = 8\nL = 9"), r"not valid TOML: Cannot overwrite a value \(at line 9,"),
    (lambda t: "extra = 1\n" + t, r"extra: unknown key; expected one of workbench_unit, unit"),
    (lambda t: t.replace("[unit]", "[unit]\nspeed = 3"), r"unit\.speed: unknown key; expected one of kind"),
    (lambda t: t.replace("L = 8", 'L = "8"'), r"unit\.L: expected an integer, got str '8'"),
    (lambda t: t.replace("L = 8", "L = true"), r"unit\.L: expected an integer, got bool"),
    (lambda t: t.replace("L = 8", "L = 99999999999"), r"unit\.L: 99999999999 is out of range"),
    (lambda t: t.replace("F = 24", "F = 99"), r"\[unit\]: F=99: expected 0 <= F <= 56"),
    (lambda t: t.replace('rounding = "rz"', 'rounding = "nearest"'), r"\[unit\]: unknown rounding mode"),
    (lambda t: t.replace("sticky = false", "sticky = 0"), r"unit\.sticky: expected true or false"),
    (lambda t: t.replace('kind = "t-fdpa"', "kind = \"__import__('os').system('touch PWNED')\""),
     r"\[unit\]: .*kind"),
    (lambda t: t.replace("exp_bits = 5", "exp_bits = 12"), r"formats\.fp16\.exp_bits: 12 is out of range"),
    (lambda t: t.replace("exp_bits = 5", "exp_bits = 6"), r"formats\.fp16: 'fp16' is a known format with another"),
    (lambda t: t.replace("[formats.fp16]", "[formats.mine]"), r"unit\.in_format: format 'fp16' has no \[formats"),
    (lambda t: t.replace("[formats.fp16]", "[formats.half]"), r"formats\.half: 'half' is another name of 'fp16'"),
    (lambda t: t + '\n[formats.bf16]\nexp_bits = 8\n', r"formats\.bf16: missing man_bits"),
    (lambda t: t.replace('origin = "preset"', 'origin = "guess"'), r"provenance\.origin: 'guess': expected one"),
    (lambda t: t.replace('date = "', 'date = "yesterday'), r"provenance\.date: .*expected an ISO 8601 date"),
    (lambda t: t.replace("workbench_unit = 1", "workbench_unit = 2"), r"workbench_unit: 2: this workbench reads"),
    (lambda t: t.replace("workbench_unit = 1", ""), r"workbench_unit: missing"),
    (lambda t: t.replace('devices = ["A100"', 'devices = [1'), r"provenance\.devices\[0\]: expected a string"),
], ids=["syntax", "top-key", "unit-key", "str-int", "bool-int", "huge-int", "F-range", "rounding", "flag", "code",
        "exp-range", "known-format", "missing-format", "alias", "format-keys", "origin", "date", "version", "not-unit",
        "devices"])
def test_malformed_files_are_refused_naming_file_and_key(tmp_path, good, edit, match, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(edit(good))
    with pytest.raises(UnitFileError, match=match) as exc:
        wb.load_unit(bad)
    assert str(bad) in str(exc.value)
    assert not (tmp_path / "PWNED").exists()


def test_non_files_and_oversized_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        wb.load_unit(tmp_path / "nope.toml")
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1 << 20))
    with pytest.raises(UnitFileError, match="at most 1048576 bytes"):
        wb.load_unit(big)
    raw = tmp_path / "raw.toml"
    raw.write_bytes(b"workbench_unit = 1\n\xff\xfe")
    with pytest.raises(UnitFileError, match="not UTF-8"):
        wb.load_unit(raw)


def test_format_registration_refuses_a_clash():
    with pytest.raises(ValueError, match="registered with another encoding"):
        formats.register_format(formats.FloatFormat("fp16", 5, 9, 15))
    with pytest.raises(ValueError, match="alias of 'fp16'"):
        formats.register_format(formats.FloatFormat("half", 5, 10, 15))
    assert formats.register_format(formats.FloatFormat("fp16", 5, 10, 15)) is formats.format("fp16")


# ------------------------------------------------------------------ consumers
def _experiment(unit: str, **extra) -> dict:
    return {"name": "unit_test", "grid": [{"unit": unit, "algorithm": "gemm", "m": 4, "k": 32, "n": 4, "seed": 0,
                                           "input": {"generator": "normal"}, **extra}]}


def test_sweep_takes_a_unit_file(tmp_path):
    from workbench.sweep import spec as sp
    from workbench.sweep.tasks import build_model

    m = wb.custom_model("fp16", "fp32", L=8, F=26, rounding="rne")
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        wb.save_unit(m, tmp_path / d / "u.toml")
    (tmp_path / "a" / "exp.toml").write_text(
        'name = "x"\n[[grid]]\nunit = "u.toml"\nalgorithm = "gemm"\nm = 4\nk = 32\nn = 4\nseed = 0\n'
        'input = {generator = "normal"}\n')
    exp = sp.parse(tmp_path / "a" / "exp.toml")     # relative to the experiment file
    t, = exp.tasks
    assert t.spec["in_format"] == "fp16" and t.spec["model"]["F"] == 26
    assert build_model(t.spec) == m
    # the hash follows the unit's content, not where the file lies
    other = sp.parse(_experiment(str(tmp_path / "b" / "u.toml")))
    assert other.tasks[0].hash == t.hash
    wb.save_unit(m.with_params(F=25), tmp_path / "b" / "u.toml")
    assert sp.parse(_experiment(str(tmp_path / "b" / "u.toml"))).tasks[0].hash != t.hash
    with pytest.raises(ValueError, match="give unit or preset"):
        sp.parse(_experiment(str(tmp_path / "a" / "u.toml"), preset="A100"))
    with pytest.raises(ValueError, match="in_format='bf16' but the unit"):
        sp.parse(_experiment(str(tmp_path / "a" / "u.toml"), in_format="bf16"))
    with pytest.raises(ValueError, match="no such file"):
        sp.parse(_experiment("missing.toml"))


def test_explain_and_discriminate_take_a_unit_file(tmp_path, capsys):
    path = wb.save_unit(wb.custom_model("fp16", "fp32", L=8, F=24, rounding="rne"), tmp_path / "u.toml")
    assert main(["explain", "--unit", str(path), "--a", "1,0x1p-24", "--b", "1,1", "--c", "0"]) == 0
    out = capsys.readouterr().out
    assert str(path) in out and "rounding=rne" in out
    assert main(["explain", "--unit", str(path), "--device", "H100", "--a", "1", "--b", "1"]) == 2
    assert "one of the two" in capsys.readouterr().err
    # RNE vs the A100's RZ (same L and F): any sum that needs rounding up separates them
    assert main(["discriminate", str(path), "A100:fp16:fp32", "--budget", "5000"]) == 0
    assert "rounding=rne" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text("workbench_unit = 1\n[unit]\nL = 'x'\n")
    assert main(["discriminate", str(bad), "A100:fp16:fp32"]) == 2
    assert "unit.L: expected an integer" in capsys.readouterr().err


def test_explorer_takes_a_unit_file(tmp_path):
    pytest.importorskip("ipywidgets")
    from workbench.studies.explorer import Explorer

    m = wb.custom_model("bf16", "fp32", L=8, F=22, rounding="rne")
    ex = Explorer(unit=wb.save_unit(m, tmp_path / "mine.toml"))
    assert ex.model() == m and ex.preset.value == "file: mine.toml" and ex.source.value == "preset"


def test_presets_evidence_cli(capsys):
    assert main(["presets", "--evidence", "--device", "B200"]) == 0
    out = capsys.readouterr().out
    assert "GPU vectors: B200 fp16->fp32, 5,000 rows" in out
    assert "not checked: blackwell/tcgen05.mma/fp16->fp32 with the final rounding RNE" in out


def test_probe_saves_a_verified_unit_and_refuses_otherwise(tmp_path, capsys, monkeypatch):
    out = tmp_path / "a100.toml"
    assert main(["probe", "preset:A100:fp16:fp32", "--verify", "200", "--save", str(out)]) == 0
    uf = read_unit(out)
    a100 = wb.preset("A100", "fp16", "fp32")
    # the probe sees every parameter but the zero exponent (unobservable with RZ to fp32)
    assert uf.model.with_params(zero_exponent=a100.zero_exponent) == a100.model()
    assert uf.provenance.origin == "probed" and uf.provenance.verification["outputs_agreed"] > 0

    from workbench.probes import inference

    real = inference.infer

    def unverified(*a, **kw):
        res = real(*a, **kw)
        res.verified = False
        res.notes.append("forced failure")
        return res

    monkeypatch.setattr(inference, "infer", unverified)
    refused = tmp_path / "no.toml"
    assert main(["probe", "preset:A100:fp16:fp32", "--verify", "200", "--save", str(refused)]) == 1
    assert not refused.exists()
    assert "not saved" in capsys.readouterr().err


def test_saved_file_is_plain_toml(tmp_path):
    path = wb.save_unit(wb.preset("MI300X", "fp8_e4m3", "fp32"), tmp_path / "u.toml")
    data = tomllib.loads(path.read_text())
    assert data["unit"]["kind"] == "gtr-fdpa" and data["formats"]["fp8_e4m3fnuz"]["special"] == "fnuz"
    shutil.copy(path, tmp_path / "copy.toml")
    assert wb.load_unit(tmp_path / "copy.toml") == wb.load_unit(path)


def test_a_library_model_carries_its_schedule(tmp_path):
    """save_unit(..., schedule=...) writes the schedule as a [schedule] table that reads back
    equal (every named schedule and the library probes' own); a sweep task with that unit
    file runs the schedule, and a schedule given twice is refused."""
    from workbench.units import schedules as S
    from workbench.probes.library import LIBRARIES
    from workbench.sweep import spec as sp

    fma32 = wb.custom_model("fp32", "fp32", kind="fma")
    for sched in [S.get(n) for n in S.SCHEDULES] + [c.schedule for lib in LIBRARIES.values() for c in lib.candidates]:
        uf = read_unit(wb.save_unit(fma32, tmp_path / "lib.toml", schedule=sched))
        assert uf.schedule == sched and uf.model == fma32
    text = (tmp_path / "lib.toml").read_text()
    assert "[schedule]" in text and "[[schedule.rules]]" in text and "None" not in text
    path = wb.save_unit(wb.preset("H100", "fp16", "fp32"), tmp_path / "h100.toml", schedule="cublas-h100-fp16-fp32")
    assert read_unit(path).schedule == S.get("cublas-h100-fp16-fp32")
    assert read_unit(wb.save_unit(fma32, tmp_path / "plain.toml")).schedule is None
    t, = sp.parse({**_experiment(str(path)), "grid": [{**_experiment(str(path))["grid"][0], "k": 2048}]}).tasks
    assert S.Schedule.from_dict(t.spec["params"]["schedule"]) == S.get("cublas-h100-fp16-fp32")
    with pytest.raises(ValueError, match="in the unit file or in params, not both"):
        sp.parse(_experiment(str(path), params={"schedule": "chain"}))
    with pytest.raises(TypeError, match="schedule must be a Schedule"):
        wb.save_unit(fma32, tmp_path / "x.toml", schedule=3)


@pytest.mark.parametrize("edit,match", [
    (lambda t: t.replace("[schedule]", "[schedule]\nspeed = 1"), r"schedule\.speed: unknown key"),
    (lambda t: t.replace('c_position = "epilogue"', 'c_position = "late"'), r"\[schedule\]: Schedule\.c_position"),
    (lambda t: t.replace("part_size = 1408", "part_size = -3"), r"\[schedule\]: Split\.part_size=-3"),
    (lambda t: t.replace("part_size = 1408", "size = 3"), r"\[schedule\]: .*size"),
    (lambda t: t.replace("[schedule]", "[schedule]\nregions = 3"), r"schedule\.regions: expected \[\[schedule\.regions"),
], ids=["key", "c-position", "part-size", "split-key", "regions-value"])
def test_malformed_schedules_are_refused(tmp_path, edit, match):
    good = wb.save_unit(wb.preset("H100", "fp16", "fp32"), tmp_path / "g.toml",
                        schedule="cublas-h100-fp16-fp32").read_text()
    assert "part_size = 1408" in good and 'c_position = "epilogue"' in good
    bad = tmp_path / "bad.toml"
    bad.write_text(edit(good))
    with pytest.raises(UnitFileError, match=match):
        read_unit(bad)
