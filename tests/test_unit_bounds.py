"""Bounded units (issue 55, item 2): every parameter of a unit has a bound, products
are refused before they allocate more than the memory available, and hostile unit
files are refused with a UnitFileError.

Oracles: the bounds and their reasons are written out here (the largest block of a
known unit is 64 products, the kernels' 64-bit sums hold F <= 56, ...); the memory a
product really allocates is measured with :mod:`tracemalloc`, never taken from the
estimate under test; the results of the products run at the bounds are exact sums of
ones, written out.
"""
from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.cli import main
from workbench.engine import core
from workbench.engine.model import PARAM_BOUNDS, Model
from workbench.probes import search
from workbench.units.unitfile import UnitFileError, load_unit

#: The bounds of the integer parameters, written out: (low, high) and a word of the reason.
EXPECTED = {
    "L": (1, 4096, "largest known block is 64"),
    "F": (0, 56, "64-bit"),
    "zero_exponent": (-4096, 4096, "-2148, 2048"),
    "interleave": (1, 2048, "whole pairs"),
    "group_F": (0, 56, "64-bit"),
    "P": (2, 4, "Algorithm 2"),
    "F2": (0, 56, "64-bit"),
    "k_block": (1, 4096, "whole scale blocks"),
    "G": (1, 4096, "divides k_block"),
}

#: For each integer parameter, a unit that reads it, made with the value ``v``.
UNITS = {
    "L": lambda v: dict(kind="t-fdpa", L=v),
    "F": lambda v: dict(kind="t-fdpa", F=v),
    "zero_exponent": lambda v: dict(kind="t-fdpa", zero_exponent=v),
    "interleave": lambda v: dict(kind="t-fdpa", L=4096, interleave=v),
    "group_F": lambda v: dict(kind="t-fdpa", L=8, interleave=2, c_position="late", group_F=v),
    "P": lambda v: dict(kind="ftz-addmul", P=v),
    "F2": lambda v: dict(kind="tr-fdpa", F=24, F2=v),
    "k_block": lambda v: dict(kind="st-fdpa", in_format="fp8_e4m3", L=4096, k_block=v, scale_format="e8m0"),
    "G": lambda v: dict(kind="gst-fdpa", in_format="fp4_e2m1", L=4096, F=35, k_block=4096, G=v,
                        scale_format="ue4m3"),
}

UNIT_TEXT = """workbench_unit = 1

[unit]
kind = "t-fdpa"
in_format = "fp16"
out_format = "fp32"
{extra}

[formats.fp16]
exp_bits = 5
man_bits = 10
bias = 15
special = "ieee"
subnormals = true
signed = true

[formats.fp32]
exp_bits = 8
man_bits = 23
bias = 127
special = "ieee"
subnormals = true
signed = true
"""


def _model(name: str, v: int) -> Model:
    return Model(**{"in_format": "fp16", "out_format": "fp32", **UNITS[name](v)})


def _unit_file(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "unit.toml"
    path.write_text(UNIT_TEXT.format(extra=extra))
    return path


# ------------------------------------------------------------------ the bounds
def test_every_integer_parameter_has_its_bound_and_every_name_is_checked():
    ints = [f.name for f in dataclasses.fields(Model) if str(f.type).startswith("int")]
    assert sorted(ints) == sorted(EXPECTED) == sorted(PARAM_BOUNDS) == sorted(UNITS)
    for name, (low, high, word) in EXPECTED.items():
        b = PARAM_BOUNDS[name]
        assert (b.low, b.high) == (low, high) and word in b.reason, name
    for f in dataclasses.fields(Model):      # the names and flags: an unknown name or a non-flag is refused
        if f.name in ints:
            continue
        bad: object = 2 if f.type == "bool" else "no-such-name"
        with pytest.raises((ValueError, TypeError)):
            Model(**{f.name: bad})
    assert list(search._WINDOWS) == list(range(57)) and search._F2_MAX == 56
    assert search._BLOCKS == (1, 2, 4, 8, 16, 32, 64)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bound_takes_its_ends_and_refuses_one_beyond(name):
    low, high, word = EXPECTED[name]
    for v in (low, high):
        assert getattr(_model(name, v), name) == v
    for v in (low - 1, high + 1):
        with pytest.raises(ValueError) as exc:
            _model(name, v)
        msg = str(exc.value)
        assert f"{name}={v}: expected {low} <= {name} <= {high}" in msg and word in msg, msg


@pytest.mark.parametrize("name", ["L", "interleave", "k_block", "G"])
def test_units_at_the_bounds_run(name):
    m = _model(name, EXPECTED[name][1])
    A, B = np.ones((2, 16)), np.ones((16, 2))
    kw = {"scale_a": np.ones((2, 1)), "scale_b": np.ones((1, 2))} if m.k_block else {}
    assert (wb.gemm(A, B, model=m, **kw) == 16).all()


def test_a_block_of_a_billion_is_refused_by_custom_model():
    with pytest.raises(ValueError, match=r"L=1000000000: expected 1 <= L <= 4096 \(products per block"):
        wb.custom_model("fp16", "fp32", L=10**9)
    with pytest.raises(ValueError, match=r"L=1000000000 \(from fma=1000000000\): expected 1 <= L <= 4096"):
        wb.custom_model("fp16", "fp32", fma=10**9)
    with pytest.raises(ValueError, match=r"F=123 \(from neab=100\): expected 0 <= F <= 56"):
        wb.custom_model("fp16", "fp32", neab=100)     # fp32 output: F = 23 + neab


def test_a_block_of_a_billion_is_refused_when_a_unit_file_is_loaded(tmp_path):
    path = _unit_file(tmp_path, "L = 1000000000")
    with pytest.raises(UnitFileError, match=r"\[unit\]: L=1000000000: expected 1 <= L <= 4096") as exc:
        load_unit(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_unit_file_beyond_any_bound_is_refused(tmp_path, name):
    low, high, _ = EXPECTED[name]
    path = _unit_file(tmp_path, f"{name} = {high + 1}")
    with pytest.raises(UnitFileError, match=rf"\[unit\]: {name}={high + 1}: expected {low} <= {name} <= {high}"):
        load_unit(path)


# ------------------------------------------------------------------ hostile files
@pytest.mark.parametrize("nested", ["[" * 5000 + "]" * 5000, "{a = " * 5000 + "1" + "}" * 5000])
def test_a_deeply_nested_file_is_a_unit_file_error(tmp_path, nested):
    path = tmp_path / "deep.toml"
    path.write_text(f"workbench_unit = 1\nx = {nested}\n")
    with pytest.raises(UnitFileError, match="nested too deeply") as exc:
        load_unit(path)
    assert str(path) in str(exc.value)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("workbench_unit = 1\n" + "#" * (1 << 20))    # 19 + 1048576 bytes
    with pytest.raises(UnitFileError, match="1048595 bytes; a unit file is at most 1048576 bytes") as exc:
        load_unit(path)
    assert str(path) in str(exc.value)


# ------------------------------------------------------------------ memory
@pytest.fixture
def one_mib(monkeypatch):
    """The memory available, as the workspace check sees it: 1 MiB."""
    monkeypatch.setattr(core, "available_memory", lambda: 1 << 20)


def test_a_product_too_large_is_refused_before_it_allocates(one_mib):
    m = wb.preset("H100", "fp16", "fp32")
    A, B = np.zeros((1, 3_000_000)), np.zeros((3_000_000, 1))    # 24 MB each; the estimate, 96 MB, is checked
    tracemalloc.start()
    try:
        with pytest.raises(core.WorkspaceError) as exc:
            wb.gemm(A, B, model=m)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak                                  # nothing of the product's size was allocated
    msg = str(exc.value)
    assert isinstance(exc.value, MemoryError)
    assert "a 1 x 3000000 x 1 product" in msg and "1.0 MiB of memory is available" in msg, msg
    assert "MiB of workspace" in msg and "a smaller K, M or N" in msg, msg
    small = wb.gemm(np.ones((2, 16)), np.ones((16, 2)), model=m)  # a small product still runs
    assert (small == 16).all()


def test_a_wide_block_on_few_elements_is_refused(one_mib):
    m = wb.custom_model("fp16", "fp32", L=4096)        # 16000 x 1 x 1: each row padded to 4096 elements
    with pytest.raises(core.WorkspaceError, match=r"smaller block size L"):
        wb.gemm(np.ones((16000, 1)), np.ones((1, 1)), model=m)   # the small-product path
    with pytest.raises(core.WorkspaceError, match=r"smaller block size L"):
        wb.gemm(np.ones((20000, 1)), np.ones((1, 1)), model=m)   # the general path


def test_every_entry_of_the_engine_refuses(one_mib):
    m = wb.preset("H100", "fp16", "fp32")
    A, B, C = np.zeros((1, 3_000_000)), np.zeros((3_000_000, 1)), np.zeros((1, 1))
    with pytest.raises(core.WorkspaceError):
        core.prepare(m, A, B)
    with pytest.raises(core.WorkspaceError):
        core.run(m, A, B, C)
    with pytest.raises(core.WorkspaceError, match="1 dot products of 3000000 elements"):
        core.dots(m, A, A, np.zeros(1))
    with pytest.raises(core.WorkspaceError, match="outputs"):
        wb.gemm(np.zeros((3000, 1)), np.zeros((1, 3000)), model=m)   # 9e6 outputs


def test_the_cli_shows_a_refusal_as_one_line_with_status_2(tmp_path, capsys, monkeypatch):
    path = _unit_file(tmp_path, "L = 1000000000")
    assert main(["explain", "--unit", str(path), "--a", "1", "--b", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workbench explain: error: unit file"), err
    assert "L=1000000000" in err

    def refused(*args, **kwargs):       # a product the memory available cannot hold
        core.check_workspace(wb.preset("H100", "fp16", "fp32"), 1, 10**9, 1)

    monkeypatch.setattr(core, "available_memory", lambda: 1 << 20)
    monkeypatch.setattr(wb.engine, "explain", refused)
    assert main(["explain", "--device", "H100", "--a", "1", "--b", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs about" in err and "of memory is available" in err, err


# what the estimate must cover: the numpy allocations of real products, measured
_KINDS = {
    "t-fdpa": lambda: wb.preset("H100", "fp16", "fp32"),
    "e-fdpa": lambda: wb.custom_model("fp16", "fp32", kind="e-fdpa", L=4, rounding="rne"),
    "tr-fdpa": lambda: wb.custom_model("fp16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31, rounding="rne"),
    "gtr-fdpa": lambda: wb.custom_model("fp8_e4m3fnuz", "fp32", kind="gtr-fdpa", L=16, F=24, F2=31),
    "fma": lambda: wb.custom_model("fp32", "fp32", kind="fma"),
    "ftz-addmul": lambda: wb.custom_model("fp16", "fp32", kind="ftz-addmul", P=4),
    "pair-dot": lambda: wb.custom_model("bf16", "fp32", kind="pair-dot", L=2, pair_rule="x86-fma"),
    "st-fdpa": lambda: wb.custom_model("fp8_e4m3", "fp32", kind="st-fdpa", L=32, F=25, k_block=32,
                                       scale_format="e8m0"),
    "gst-fdpa": lambda: wb.custom_model("fp4_e2m1", "fp32", kind="gst-fdpa", L=64, F=35, G=16, k_block=16,
                                        scale_format="ue4m3"),
}


def _traced_peak(m: Model, M: int, K: int, N: int, **kw) -> tuple[int, int]:
    """(numpy's peak allocation during an M x K x N product on ``m`` of small integers,
    beyond its arguments; the largest estimate the engine checked)."""
    A = np.asarray(np.arange(M * K).reshape(M, K) % 3, dtype=np.float64)
    B = np.asarray(np.arange(K * N).reshape(K, N) % 2, dtype=np.float64)
    if m.k_block:
        nb = -(-K // m.k_block)
        kw = {**kw, "scale_a": np.ones((M, nb)), "scale_b": np.ones((nb, N))}
    wb.gemm(A, B, model=m, **kw)                 # compiled, and a first run of the shape
    core.release_workspace()                     # no buffer of that run is reused
    checked: list[int] = []
    spy = core.check_workspace

    def record(model, M, K, N, *, parts=None):
        checked.append(core.workspace_bytes(model, M, K, N, parts=parts))
        spy(model, M, K, N, parts=parts)

    core.check_workspace = record                # the product's own estimate, as gemm computes it
    tracemalloc.start()
    try:
        wb.gemm(A, B, model=m, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        core.check_workspace = spy
    return peak, max(checked)


@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("shape", [(4, 100_000, 16), (1, 100_000, 64), (400, 2, 400)],
                         ids=["long-K", "wide-B", "many-outputs"])
def test_the_estimate_covers_what_a_product_allocates(kind, shape):
    peak, estimate = _traced_peak(_KINDS[kind](), *shape)
    assert peak <= estimate, (peak, estimate)


def test_the_estimate_covers_a_schedule_of_many_parts():
    m = _KINDS["e-fdpa"]()                       # 'outside' on E-FDPA: 32 parts of one block each
    peak, estimate = _traced_peak(m, 200, 128, 200, accumulation="outside")
    assert peak <= estimate, (peak, estimate)
