"""Integer matrix units (issue 51, item 1): kind ``int-mma`` and its presets, NVIDIA IMMA
s8/u8 -> s32 (wrapping, and ``.satfinite`` saturating) and AMD MFMA i8 -> i32.

Every expected value comes from :func:`reference` below: Python integers (unbounded),
each instruction's exact sum ``c + sum a_k b_k`` over its L elements, then wrapped
modulo 2^32 to a signed value or clamped to [-2^31, 2^31 - 1], as the PTX ISA's mma
"Integer operations" paragraph says - written here from that text, not from the code
under test.
"""
from __future__ import annotations

import numpy as np
import pytest

import algorithms
import workbench as wb
from workbench.units import catalogue
from workbench import sweep
from workbench.engine import core

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
RANGES = {"s8": (-128, 127), "u8": (0, 255)}
INT_PRESETS = [r for r in catalogue.records() if r.kind == "int-mma"]


def _wrap(s: int) -> int:
    return (s + 2**31) % 2**32 - 2**31


def _clamp(s: int) -> int:
    return min(max(s, INT32_MIN), INT32_MAX)


def reference(A, B, C, L: int, overflow: str) -> list[list[int]]:
    """D = unit(A, B, C) in Python integers: per output, K in instructions of L elements
    (the last one short: zero padding adds nothing), each instruction's exact result
    brought into int32 (wrap: modulo 2^32; saturate: clamped)."""
    fix = _wrap if overflow == "wrap" else _clamp
    A = [[int(x) for x in row] for row in np.asarray(A)]
    B = [[int(x) for x in row] for row in np.asarray(B)]
    M, K, N = len(A), len(B), len(B[0]) if len(B) else np.asarray(C).shape[1]
    C = [[int(x) for x in row] for row in np.asarray(C)]
    D = []
    for i in range(M):
        row = []
        for j in range(N):
            d = fix(C[i][j])
            for k0 in range(0, K, L):
                d = fix(d + sum(A[i][k] * B[k][j] for k in range(k0, min(k0 + L, K))))
            row.append(d)
        D.append(row)
    return D


def _draw(rng, fmt, shape):
    lo, hi = RANGES[fmt]
    return rng.integers(lo, hi + 1, shape)


def _custom(fin="s8", fb=None, overflow="wrap", L=32):
    return wb.custom_model(fin, "s32", kind="int-mma", L=L, b_format=fb, overflow=overflow)


# ------------------------------------------------------------------ catalogue
def test_presets_in_the_catalogue():
    names = {r.name for r in INT_PRESETS}
    for arch, instr in (("turing", "mma.m8n8k16"), ("ampere", "mma.m16n8k32"), ("ada", "mma.m16n8k32"),
                        ("hopper", "mma.m16n8k32"), ("blackwell", "mma.m16n8k32"), ("rtx-blackwell", "mma.m16n8k32")):
        for fin in ("s8", "u8"):
            assert f"{arch}/{instr}/{fin}->s32" in names
            assert f"{arch}/{instr}/{fin}->s32/satfinite" in names
    assert {"hopper/wgmma/s8->s32/wgmma", "hopper/wgmma/u8->s32/wgmma.satfinite",
            "blackwell/tcgen05.mma/s8->s32/tcgen05.mma"} <= names
    assert {"cdna1/mfma/s8->s32", "cdna2/mfma/s8->s32", "cdna3/mfma/s8->s32"} <= names
    t4 = wb.preset("T4", "s8", "s32")
    assert (t4.L, t4.overflow, t4.instruction) == (16, "wrap", "mma.m8n8k16")
    h = wb.preset("H100", "int8", "int32", variant="satfinite")
    assert (h.L, h.overflow, h.name) == (32, "saturate", "hopper/mma.m16n8k32/s8->s32/satfinite")
    assert wb.preset("H100", "s8", "s32", instruction="wgmma").name == "hopper/wgmma/s8->s32/wgmma"
    assert wb.preset("MI300X", "s8", "s32").L == 32 and wb.preset("MI100", "i8", "i32").L == 16
    with pytest.raises(ValueError, match="no preset"):
        wb.preset("MI300X", "u8", "s32")       # AMD's i8 MFMA is signed only
    for r in INT_PRESETS:
        assert wb.units.resolve(r.name) == r and wb.units.resolve(r.unit_string).name == r.name
        # no integer product of these devices is in the test data: the evidence says what it is assumed from
        assert [e.kind for e in r.evidence] == ["unchecked"] and "specification only" in r.assumed_from
        if r.architecture.startswith("cdna"):
            assert "states the int32 overflow behaviour" in r.assumed_from and "wraparound is assumed" in r.assumed_from
        assert "PTX" in r.source or "AMD" in r.source
    assert "exact" in catalogue.arithmetic(h) and "overflow=saturate" in catalogue.arithmetic(h)


def test_int8_unit_is_the_nvidia_default_preset():
    unit = algorithms.INT8_UNIT
    assert unit.preset is wb.units.resolve(unit.name)
    assert unit.preset == wb.preset("A100", "s8", "s32")
    assert (unit.preset.kind, unit.preset.overflow) == ("int-mma", "wrap")


# ------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("rec", INT_PRESETS, ids=[r.name for r in INT_PRESETS])
def test_every_preset_against_the_integer_reference(rec):
    rng = np.random.default_rng([51, len(rec.name), rec.L])
    for M, K, N in ((1, 1, 1), (3, rec.L + 1, 2), (2, 3 * rec.L - 5, 4), (4, 100, 3), (2, 0, 2)):
        A = _draw(rng, rec.in_format, (M, K))
        B = _draw(rng, rec.in_format, (K, N))
        C = rng.integers(INT32_MIN, INT32_MAX + 1, (M, N))
        D = wb.gemm(A, B, C, model=rec)
        assert D.dtype == np.int32
        assert D.tolist() == reference(A, B, C, rec.L, rec.overflow), (M, K, N)


@pytest.mark.parametrize("fa,fb", [("s8", "u8"), ("u8", "s8"), ("u8", "u8"), ("s8", "s8")])
@pytest.mark.parametrize("overflow", ["wrap", "saturate"])
def test_mixed_signedness(fa, fb, overflow):
    m = _custom(fa, fb, overflow, L=32)
    assert m.formats[0].name == fa and m.formats[1].name == fb
    rng = np.random.default_rng([7, len(fa), len(fb), len(overflow)])
    for M, K, N in ((2, 33, 3), (3, 70, 2)):
        A, B = _draw(rng, fa, (M, K)), _draw(rng, fb, (K, N))
        C = rng.integers(INT32_MAX - 2**21, INT32_MAX + 1, (M, N))    # near the top: some sums leave int32
        assert wb.gemm(A, B, C, model=m).tolist() == reference(A, B, C, 32, overflow)
    # the extremes of each mix: u8 255 x s8 -128 = -32640
    a = np.full((1, 2), RANGES[fa][0] if fa == "s8" else 255)
    b = np.full((2, 1), RANGES[fb][0] if fb == "s8" else 255)
    assert int(wb.gemm(a, b, model=m)[0, 0]) == 2 * int(a[0, 0]) * int(b[0, 0])


def test_wraparound():
    m = wb.preset("A100", "s8", "s32")
    one = np.ones((1, 1))
    # just over 2^31 - 1, and just under -2^31
    assert int(wb.gemm(one, one, [[INT32_MAX]], model=m)[0, 0]) == INT32_MIN
    assert int(wb.gemm(one, -one, [[INT32_MIN]], model=m)[0, 0]) == INT32_MAX
    # far over: 2^17 + 5 products of (-128)(-128) = 2^14 each, many times around the circle
    K = 2**17 + 5
    a = np.full((1, K), -128)
    D = wb.gemm(a, a.T, [[123]], model=m)
    assert int(D[0, 0]) == _wrap(123 + K * 2**14) == reference(a, a.T, [[123]], 32, "wrap")[0][0]


def test_wraparound_far():
    m = wb.preset("A100", "s8", "s32")
    K = 2**17 + 5
    a = np.full((1, K), -128)
    b = np.full((K, 1), 127)
    C = [[-(2**31) + 7]]
    exact = -(2**31) + 7 - K * 128 * 127
    assert int(wb.gemm(a, b, C, model=m)[0, 0]) == _wrap(exact) == reference(a, b, C, 32, "wrap")[0][0]
    # wrapping does not depend on the instruction's K: the sum modulo 2^32
    for L in (1, 16, 32, 4096):
        assert int(wb.gemm(a, b, C, model=_custom(L=L))[0, 0]) == _wrap(exact)


def test_saturation_per_instruction():
    """.satfinite clamps each instruction's result, which feeds the next instruction as C:
    up past MAX_INT32 in the first instruction, then down again in the second."""
    m = wb.preset("A100", "s8", "s32", variant="satfinite")
    a = np.concatenate([np.full(32, 127), np.full(32, -127)])[None, :]
    b = np.full((64, 1), 127)
    C = [[INT32_MAX - 1000]]
    # first instruction: MAX - 1000 + 32 * 16129 > MAX -> MAX; second: MAX - 32 * 16129
    assert int(wb.gemm(a, b, C, model=m)[0, 0]) == INT32_MAX - 32 * 16129
    assert reference(a, b, C, 32, "saturate")[0][0] == INT32_MAX - 32 * 16129
    # the exact sum would have stayed in range, and the wrapping unit gives it
    assert int(wb.gemm(a, b, C, model=wb.preset("A100", "s8", "s32"))[0, 0]) == INT32_MAX - 1000
    # the same products in one instruction of 64 (a custom unit) are not clamped at all
    assert int(wb.gemm(a, b, C, model=_custom(overflow="saturate", L=64))[0, 0]) == INT32_MAX - 1000
    # at the bottom, and a C already at the bound
    neg = np.full((1, 40), -128)
    assert int(wb.gemm(neg, np.full((40, 1), 127), [[INT32_MIN + 5]], model=m)[0, 0]) == INT32_MIN
    assert int(wb.gemm(np.zeros((1, 3)), np.zeros((3, 1)), [[INT32_MAX]], model=m)[0, 0]) == INT32_MAX


def test_random_saturating_near_the_bounds():
    rng = np.random.default_rng(5)
    for rec in (wb.preset("T4", "s8", "s32", variant="satfinite"), wb.preset("H100", "u8", "s32",
                                                                            variant="satfinite")):
        for _ in range(5):
            M, K, N = rng.integers(1, 5), rng.integers(1, 150), rng.integers(1, 5)
            A = _draw(rng, rec.in_format, (M, K))
            B = _draw(rng, rec.in_format, (K, N))
            C = rng.choice([INT32_MAX - 2**20, INT32_MIN + 2**20, 0], (M, N)) + rng.integers(-2**19, 2**19, (M, N))
            assert wb.gemm(A, B, C, model=rec).tolist() == reference(A, B, C, rec.L, "saturate")


def test_beta_zero_and_no_c():
    m = wb.preset("MI250X", "s8", "s32")
    A, B = np.array([[3, -4]]), np.array([[5], [6]])
    assert wb.gemm(A, B, model=m).tolist() == [[-9]]
    assert wb.gemm(A, B, [[100]], model=m, beta=0).tolist() == [[-9]]
    assert wb.gemm(A, B, [[100]], model=m).tolist() == [[91]]


def test_dots_rows_and_explain_agree_with_the_reference():
    rng = np.random.default_rng(11)
    m = wb.preset("B200", "u8", "s32", variant="satfinite")
    a = _draw(rng, "u8", (6, 70)).astype(float)
    b = _draw(rng, "u8", (6, 70)).astype(float)
    c = np.array([INT32_MAX - 10, 0, INT32_MIN, 5, -5, INT32_MAX], float)
    d = core.dots(m, a, b, c)
    for r in range(6):
        want = reference(a[r:r + 1], b[r:r + 1].T, [[int(c[r])]], 32, "saturate")[0][0]
        assert d[r] == want
        t = wb.explain(a[r], b[r], c[r], model=m)
        assert t.value == want and len(t.blocks) == 3
    t = wb.explain([1, 2], [3, 4], INT32_MAX, model=wb.preset("A100", "s8", "s32"))
    assert t.value == _wrap(INT32_MAX + 11)
    text = str(t)
    assert "1*3 = 3" in text and "wrapped modulo 2^32" in text and f"result d = {float(_wrap(INT32_MAX + 11))!r}" in text
    sat = str(wb.explain([1, 2], [3, 4], INT32_MAX, model=m))
    assert "clamped to MAX_INT32" in sat
    # b is checked against B's own format
    mixed = _custom("s8", "u8")
    assert wb.explain([-1], [200], 0, model=mixed).value == -200
    with pytest.raises(ValueError, match=r"b\[0\] = -1.0 is not representable in u8"):
        wb.explain([1], [-1], 0, model=mixed)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("model,which,value,needle", [
    (("A100", "s8"), "A", 128, r"A\[0, 1\] = 128.0 is not representable in s8: expected integers -128..127"),
    (("A100", "s8"), "A", -129, r"A\[0, 1\] = -129.0 is not representable in s8"),
    (("A100", "s8"), "B", 0.5, r"B\[1, 0\] = 0.5 is not representable in s8: expected integers"),
    (("A100", "s8"), "A", np.nan, r"A\[0, 1\] = nan is not representable in s8"),
    (("A100", "s8"), "B", np.inf, r"B\[1, 0\] = inf is not representable in s8"),
    (("A100", "u8"), "A", 256, r"A\[0, 1\] = 256.0 is not representable in u8: expected integers 0..255"),
    (("A100", "u8"), "B", -1, r"B\[1, 0\] = -1.0 is not representable in u8"),
    (("A100", "s8"), "C", 2**31, r"C\[0, 0\] = 2147483648.0 is not representable in s32"),
    (("A100", "s8"), "C", 1.5, r"C\[0, 0\] = 1.5 is not representable in s32"),
])
@pytest.mark.parametrize("size", ["small", "large"])
def test_bad_input_is_refused_never_rounded(model, which, value, needle, size):
    m = wb.preset(model[0], model[1], "s32")
    K = 2 if size == "small" else 300          # the one-call small path and the general path
    A = np.ones((2, K))
    B = np.ones((K, 2))
    C = np.zeros((2, 2))
    {"A": A, "B": B, "C": C}[which][(0, 1) if which == "A" else (1, 0) if which == "B" else (0, 0)] = value
    with pytest.raises(ValueError, match=needle) as info:
        wb.gemm(A, B, C, model=m)
    assert "input_rounding" not in str(info.value)


def test_what_an_integer_unit_refuses():
    m = wb.preset("A100", "s8", "s32")
    A, B = np.ones((2, 3)), np.ones((3, 2))
    with pytest.raises(ValueError, match="alpha=2.*integer unit"):
        wb.gemm(A, B, model=m, alpha=2)
    with pytest.raises(ValueError, match="input_rounding='rne'.*integer"):
        wb.gemm(A, B, model=m, input_rounding="rne")
    with pytest.raises(ValueError, match="accumulation 'outside'.*int32 accumulator"):
        wb.gemm(A, B, model=m, accumulation="outside")
    with pytest.raises(ValueError, match="overflow='clip'"):
        _custom(overflow="clip")
    with pytest.raises(ValueError, match="only the integer units"):
        wb.Model(kind="t-fdpa", in_format="fp16", out_format="fp32", overflow="wrap")
    with pytest.raises(ValueError, match="only the integer units"):
        wb.Model(kind="t-fdpa", in_format="fp16", out_format="fp32", b_format="fp16")
    with pytest.raises(ValueError, match="integer unit; expected an integer format"):
        wb.Model(kind="int-mma", in_format="fp16", out_format="s32")
    with pytest.raises(ValueError, match="out_format='s8'.*s32"):
        wb.Model(kind="int-mma", in_format="s8", out_format="s8")
    with pytest.raises(ValueError, match="b_format='s32'.*at most 16 bits"):
        wb.Model(kind="int-mma", in_format="s8", out_format="s32", b_format="s32")
    with pytest.raises(ValueError, match="integer format .*not a floating-point one"):
        wb.Model(kind="t-fdpa", in_format="fp16", out_format="s32")
    with pytest.raises(ValueError, match="integer format"):
        wb.format("s8")


def test_workspace_is_checked_before_allocating():
    m = wb.preset("A100", "s8", "s32")
    with pytest.raises(core.WorkspaceError, match="needs about"):
        core.check_workspace(m, 10**6, 10**6, 10**6)
    # a few outputs of a huge K: refused by gemm before the operands are read
    with pytest.raises(core.WorkspaceError):
        wb.gemm(np.zeros((2**16, 1)), np.zeros((1, 2**16)), model=m) if core.available_memory() < 2**40 else \
            pytest.skip("more than a TiB of memory available")


# ------------------------------------------------------------------ entry points
def test_unit_file_round_trip(tmp_path):
    for i, m in enumerate([*INT_PRESETS, _custom("u8", "s8", "saturate", L=16)]):
        path = wb.save_unit(m, tmp_path / f"u{i}.toml")
        back = wb.load_unit(path)
        assert back == m and back.params == m.params
        assert wb.gemm([[255 if m.in_format == "u8" else 127]], [[-1 if m.formats[1].name == "s8" else 1]],
                       model=path).dtype == np.int32
    text = (tmp_path / "u0.toml").read_text()
    assert "[formats.s8]\nbits = 8\nsigned = true" in text and "[formats.s32]\nbits = 32\nsigned = true" in text
    bad = text.replace("[formats.s8]\nbits = 8", "[formats.s8]\nbits = 9")
    (tmp_path / "bad.toml").write_text(bad)
    with pytest.raises(ValueError, match="bits=8, signed=True; the file gives bits=9"):
        wb.load_unit(tmp_path / "bad.toml")


def test_a_sweep_runs_an_integer_unit(tmp_path):
    raw = {"name": "int", "reference": "float64", "metrics": ["max_abs_error"],
           "grid": {"algorithm": "gemm", "preset": "ampere/mma.m16n8k32/s8->s32", "m": 3, "k": [40, 70], "n": 2,
                    "seed": [0, 1], "input": {"generator": "uniform", "low": -128, "high": 127}}}
    df = sweep.run(raw, out=tmp_path / "out", workers=1, progress=False)
    assert len(df) == 4 and df["error"].isna().all()
    assert (df["max_abs_error"] == 0).all()     # far from int32 overflow: the exact product


def test_the_probes_refuse_an_integer_unit():
    from workbench.probes.blackbox import from_model

    with pytest.raises(ValueError, match="integer unit .*the probes infer floating-point units"):
        from_model(wb.preset("H100", "s8", "s32"))
