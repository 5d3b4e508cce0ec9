"""The fused check-and-decompose pass (ops.decompose_checked, core.prepare) agrees
with ``formats.is_representable`` and ``ops.decompose`` on every value, for every
signed input format with subnormals, in both layouts, and reports the same first
offending element (and the same message) as ``formats.check_representable``.
"""
from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.numbers import formats as F
from workbench.engine import core
from workbench.engine import ops

FORMATS = [f for f in F.list_formats() if f.signed and f.subnormals]


def _mixed(rng: np.random.Generator, fmt: F.FloatFormat, n: int) -> np.ndarray:
    """Representable and non-representable values of every kind: zeros, -0,
    subnormals, values between grid points, the largest values and just beyond,
    Inf/NaN, float64 subnormals."""
    kind = rng.integers(0, 12, n)
    with np.errstate(over="ignore"):   # fp64: beyond the largest value is Inf
        scale = np.exp2(rng.integers(fmt.emin - fmt.p - 3, fmt.emax + 2, n).astype(float))
        big = fmt.max * rng.choice([1.0, 1.0 + 2.0 ** -20, 2.0], (kind == 8).sum())
        x = rng.standard_normal(n) * scale
    x = np.where(kind < 6, F.round(np.clip(x, -fmt.max, fmt.max), fmt), x)
    x[kind == 6] = -0.0
    x[kind == 7] = rng.integers(-9, 10, (kind == 7).sum()) * fmt.min_subnormal
    x[kind == 8] = rng.choice([-1.0, 1.0], (kind == 8).sum()) * big
    x[kind == 9] = rng.choice([np.nan, np.inf, -np.inf], (kind == 9).sum())
    x[kind == 10] = rng.choice([5e-324, -1e-310, 1e-300], (kind == 10).sum())
    x[kind == 11] = (1 + rng.integers(0, 2 ** 20, (kind == 11).sum()) * 2.0 ** -20) * fmt.min_normal
    return x


def _checked(x: np.ndarray, fmt: F.FloatFormat, flush: bool, pad: int, transpose_b: bool) -> tuple:
    """ops.decompose_checked on A = x and B = x.T, B's arrays returned as B^T (so
    that both give x's rows, padded at the end of each row), in either B layout."""
    vmax_bits = int(np.float64(fmt.max).view(np.int64))
    xb = x.T.copy()
    sa, ea = (np.empty((x.shape[0], x.shape[1] + pad), np.int32) for _ in range(2))
    b_shape = (x.shape[0], x.shape[1] + pad) if transpose_b else (x.shape[1] + pad, x.shape[0])
    sb, eb = (np.empty(b_shape, np.int32) for _ in range(2))
    bad_a, bad_b, special = ops.decompose_checked(x.view(np.int64), sa, ea, xb.view(np.int64), sb, eb, transpose_b,
                                                  fmt.man_bits, fmt.emin, flush, vmax_bits, fmt.has_nan,
                                                  fmt.has_inf)
    if not transpose_b:
        sb, eb = sb.T, eb.T
    return bad_a, bad_b, special, sa, ea, sb, eb


def _first_bad(ok: np.ndarray) -> int:
    bad = np.flatnonzero(~ok.reshape(-1))
    return int(bad[0]) if bad.size else -1


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("flush", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_agrees_with_is_representable_and_decompose(fmt: F.FloatFormat, flush: bool, transpose_b: bool) -> None:
    rng = np.random.default_rng(7)
    x = _mixed(rng, fmt, 37 * 150).reshape(37, 150)
    ok = F.is_representable(x, fmt)
    xd = np.where(ok, x, 0.0)
    want_s = np.empty(x.shape, np.int32)
    want_e = np.empty(x.shape, np.int32)
    ops.decompose(xd, want_s, want_e, fmt.man_bits, fmt.emin, flush)
    bad_a, bad_b, special, sa, ea, sb, eb = _checked(x, fmt, flush, 3, transpose_b)
    assert special
    assert bad_a == _first_bad(ok)
    assert bad_b == _first_bad(ok.T)
    for s, e in ((sa, ea), (sb, eb)):
        assert (s[:, :150][ok] == want_s[ok]).all() and (e[:, :150][ok] == want_e[ok]).all()
        assert (s[:, 150:] == 0).all() and (e[:, 150:] == fmt.emin).all()
    # with the bad values replaced, both operands are accepted and decomposed alike;
    # without NaN, Inf and float64 subnormals every value takes the branch-free path
    common = ok & np.isfinite(x) & ~((x != 0) & (np.abs(x) < np.finfo(float).tiny))
    for keep in (ok, common):
        xk = np.where(keep, x, 0.0)
        ops.decompose(xk, want_s, want_e, fmt.man_bits, fmt.emin, flush)
        bad_a, bad_b, special, sa, ea, sb, eb = _checked(xk, fmt, flush, 0, transpose_b)
        assert bad_a == bad_b == -1
        # the flag is raised by NaN/Inf and float64 subnormals (the values off the common path)
        assert special == bool((~np.isfinite(xk) | ((xk != 0) & (np.abs(xk) < np.finfo(float).tiny))).any())
        assert (sa == want_s).all() and (ea == want_e).all() and (sb == want_s).all() and (eb == want_e).all()


@pytest.mark.parametrize("operand", ["A", "B"])
def test_same_message_as_check_representable(operand: str) -> None:
    rng = np.random.default_rng(3)
    fmt = F.format("bf16")
    x = F.round(rng.standard_normal((300, 7)), fmt)
    x[200, 3] = 0.1
    x[201, 0] = np.float64(1e-30)
    x[250, 6] = 0.3
    with pytest.raises(ValueError) as want:
        F.check_representable(x, fmt, operand)
    A, B = (x, np.zeros((7, 2))) if operand == "A" else (np.zeros((2, 300)), x)
    with pytest.raises(ValueError) as got:
        core.decompose_checked(A, B, fmt, False, A.shape[1] + 1, operand == "A")
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["e8m0", "ue4m3"])
def test_unsigned_formats_take_the_unfused_path(name: str) -> None:
    rng = np.random.default_rng(2)
    fmt = F.format(name)
    A = 2.0 ** rng.integers(-5, 5, (3, 40)).astype(float)
    B = 2.0 ** rng.integers(-5, 5, (40, 4)).astype(float)
    want = [*core.decompose(np.pad(A, ((0, 0), (0, 8))), fmt.man_bits, fmt.emin),
            *core.decompose(np.pad(B, ((0, 8), (0, 0))), fmt.man_bits, fmt.emin)]
    for transpose_b in (False, True):
        *got, special = core.decompose_checked(A, B, fmt, False, 48, transpose_b)
        assert not special
        # B in its own layout gets zero columns up to a multiple of 8 (the lane width)
        assert got[2].shape == ((48, 4) if transpose_b else (48, 8))
        assert (got[2][:, 4:] == 0).all() and (got[3][:, 4:] == fmt.emin).all()
        for g, w in zip(got, want):
            assert (g[:, :w.shape[1]] == w).all()
    B[7, 2] = -1.0
    with pytest.raises(ValueError) as want_err:
        F.check_representable(B, fmt, "B")
    with pytest.raises(ValueError) as got_err:
        core.decompose_checked(A, B, fmt, False, 48, False)
    assert str(got_err.value) == str(want_err.value)


def test_non_contiguous_and_float32_operands() -> None:
    rng = np.random.default_rng(5)
    m = wb.preset("ampere", "fp16", "fp32")
    A = wb.round(rng.standard_normal((9, 70)), "fp16")
    B = wb.round(rng.standard_normal((70, 5)), "fp16")
    want = wb.gemm(A, B, model=m)
    Bt = np.asfortranarray(B)
    assert (wb.gemm(A[:, :], Bt, model=m).view(np.uint32) == want.view(np.uint32)).all()
    assert (wb.gemm(A.astype(np.float32), B.astype(np.float16), model=m).view(np.uint32)
            == want.view(np.uint32)).all()
    A2 = np.zeros((9, 140))
    A2[:, ::2] = A
    assert (wb.gemm(A2[:, ::2], B, model=m).view(np.uint32) == want.view(np.uint32)).all()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_unpadded_b_is_decomposed_as_one_run(fmt: F.FloatFormat) -> None:
    """``pad_b=False`` (the vector chain's layout): B (K, N) decomposed as one flat run
    of K * N values into (Kp, N) arrays, the rows beyond K decomposed zeros; the same
    significands, exponents, ``special`` flag and first offending element (so the same
    message) as the padded layout and ``formats.check_representable``, from a
    C-ordered or a Fortran-ordered B."""
    rng = np.random.default_rng(11)
    x = _mixed(rng, fmt, 301 * 10).reshape(301, 10)
    ok = F.is_representable(x, fmt)
    A = np.zeros((3, 301))
    for B in (np.where(ok, x, 0.0), np.asfortranarray(np.where(ok, x, 0.0))):
        *want, want_special = core.decompose_checked(A, B, fmt, False, 304, False)
        *got, special = core.decompose_checked(A, B, fmt, False, 304, False, pad_b=False)
        assert special == want_special
        assert got[2].shape == got[3].shape == (304, 10) and got[2].flags.c_contiguous
        for g, w in zip(got, want):
            assert (g == w[:, :g.shape[1]]).all()
        assert (got[2][301:] == 0).all() and (got[3][301:] == fmt.emin).all()
    if ok.all():
        return
    with pytest.raises(ValueError) as want_err:
        F.check_representable(x, fmt, "B")
    with pytest.raises(ValueError) as got_err:
        core.decompose_checked(A, x, fmt, False, 304, False, pad_b=False)
    assert str(got_err.value) == str(want_err.value)
