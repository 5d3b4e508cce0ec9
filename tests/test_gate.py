"""The input gate (issue 15): every public function that takes numbers either answers
right or refuses with a TypeError/ValueError that names the argument and the value.

A fuzz harness draws inputs of every kind a user may pass (numpy ints, bools,
float16/32/64, long double, complex, strings, object arrays of Python ints of any
size, Fractions, Decimals, None, ml_dtypes floats; zero-size shapes; huge, tiny and
special values) and throws them at the entry points.  Accepted inputs are checked
against an independent computation: exact rational arithmetic (fractions) on the
values the user meant, and ml_dtypes' casts for rounding.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import workbench
from workbench.numbers import exact, metrics
from workbench.numbers.validation import real_array

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ what users pass
def exact_value(v) -> Fraction | None:
    """The exact rational value the user meant, None for non-numbers / non-finite."""
    if isinstance(v, (bool, np.bool_)):
        return Fraction(int(v))
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, Fraction):
        return v
    if isinstance(v, Decimal):
        return Fraction(v) if v.is_finite() else None
    if isinstance(v, np.longdouble) and np.dtype(np.longdouble).itemsize > 8:
        if not np.isfinite(v):
            return None
        m, e = np.frexp(v)  # exact for long double
        return Fraction(int(np.ldexp(m, 64))) * Fraction(2) ** (int(e) - 64)
    if isinstance(v, (float, np.floating)) or (isinstance(v, np.generic) and v.dtype.kind == "V"):
        f = float(v)
        return Fraction(f) if math.isfinite(f) else None
    return None


floats = st.floats(allow_nan=True, allow_infinity=True)
scalars = st.one_of(
    floats,
    st.integers(-(2**80), 2**80),
    st.fractions(max_denominator=2**70),
    st.decimals(allow_nan=False, places=30),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.complex_numbers(max_magnitude=10),
    floats.map(np.float32),
    floats.map(np.float16),
    st.builds(lambda a, b: np.longdouble(a) + np.longdouble(b), floats.filter(math.isfinite),
              st.floats(-1e-30, 1e-30)),
    floats.map(lambda x: np.array(x).astype(ml_dtypes.bfloat16)[()]),
)


@st.composite
def arrays_of_anything(draw, max_size=4):
    """A 1-D array-like: a homogeneous numpy array of some dtype, or an object array."""
    n = draw(st.integers(0, max_size))
    kind = draw(st.sampled_from(["object", "int64", "uint8", "bool", "float16", "float32", "float64",
                                 "longdouble", "complex128", "str", "bfloat16", "list"]))
    if kind in ("object", "list"):
        vals = draw(st.lists(scalars, min_size=n, max_size=n))
        if kind == "list":
            return vals
        arr = np.empty(n, dtype=object)
        arr[:] = vals
        return arr
    if kind == "str":
        return np.array(draw(st.lists(st.text(max_size=3), min_size=n, max_size=n)), dtype=str)
    if kind in ("int64", "uint8"):
        info = np.iinfo(kind)
        return np.array(draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=n, max_size=n)), dtype=kind)
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind == "complex128":
        return np.array(draw(st.lists(st.complex_numbers(max_magnitude=4), min_size=n, max_size=n)), dtype=complex)
    vals = draw(st.lists(floats, min_size=n, max_size=n))
    if kind == "longdouble":
        tiny = draw(st.lists(st.floats(-1e-25, 1e-25), min_size=n, max_size=n))
        return np.array(vals, dtype=np.longdouble) + np.array(tiny, dtype=np.longdouble)
    if kind == "bfloat16":
        return np.array(vals).astype(ml_dtypes.bfloat16)
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=kind)


def meant(x) -> list:
    """Per element: ("nan"|"inf"|Fraction) if it is a number, else None."""
    out = []
    for v in np.asarray(x, dtype=object).ravel():
        if isinstance(v, np.ndarray):
            v = v[()]
        if isinstance(v, (str, type(None), complex, np.complexfloating)):
            out.append(None)
            continue
        try:
            f = float(v)
        except (TypeError, ValueError, OverflowError):
            f = 0.0
        if isinstance(v, Decimal) and not v.is_finite():
            out.append("special")
        elif not isinstance(v, (int, Fraction, Decimal)) and not math.isfinite(f):
            out.append("special")
        else:
            out.append(exact_value(v))
    return out


def _offends(w: object) -> bool:
    """meant()'s reading of one element: not a number, or not exactly a float64."""
    return w is None or (isinstance(w, Fraction) and Fraction(_f64(w)) != w)


def assert_names_the_first_offender(err: Exception, x: object) -> None:
    """A refusal that names an element (``x[i, j] = value ...``) names the first one, in C
    order, that is not exactly a real float64 by :func:`meant` (written independently of
    the gate), and shows that element's own value."""
    text = str(err)
    if not text.startswith("x["):
        return
    index = tuple(int(i) for i in text[2:text.index("]")].split(", "))
    arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    want = meant(x)
    first = next(n for n, w in enumerate(want) if _offends(w))
    assert index == tuple(int(i) for i in np.unravel_index(first, arr.shape)), (x, text)
    value = arr[index]
    value = int(value) if isinstance(value, np.integer) else value     # the gate prints integers as ints
    assert text.startswith(f"x[{', '.join(map(str, index))}] = {value!r} "), (x, text)


def assert_clear(err: Exception, name: str) -> None:
    assert isinstance(err, (TypeError, ValueError)), repr(err)
    assert name in str(err), f"the message does not name the argument {name!r}: {err}"


# ------------------------------------------------------------------------- the gate
@FUZZ
@given(arrays_of_anything())
@example(np.array([-(2**63)], dtype=np.int64))     # exact in float64; once refused (found by this test)
def test_gate_accepts_exactly_or_refuses_clearly(x):
    try:
        got = real_array(x, "x")
    except (TypeError, ValueError) as err:
        assert_clear(err, "x")
        if isinstance(x, np.ndarray) and x.dtype.kind in "cUS":
            return  # a dtype that holds no real numbers is refused as such, even when empty
        want = meant(x)
        # refused only when some element is not a number or not exactly a float64
        assert any(w is None or (isinstance(w, Fraction) and Fraction(_f64(w)) != w) for w in want), (x, err)
        return
    assert got.dtype == np.float64
    for g, w in zip(got.ravel(), meant(x)):
        assert w is not None
        if w == "special":
            assert not math.isfinite(g)
        else:
            assert Fraction(float(g)) == w  # accepted values are the user's values exactly


def _f64(w: Fraction) -> float:
    try:
        return float(w)
    except OverflowError:
        return math.inf


@FUZZ
@given(arrays_of_anything(), st.sampled_from(["fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp32"]),
       st.sampled_from(["rne", "rz", "ru", "rd"]))
@example(np.array([0.5, Fraction(1, 3), Decimal("0.1")], dtype=object), "fp16", "rne")  # the 2nd offends, not the 1st
@example(np.array([3, 2**53 + 1, 2**60 + 1], dtype=np.int64), "fp32", "rz")            # the 2nd and 3rd offend
def test_round_answers_right_or_refuses(x, fmt, mode):
    try:
        got = workbench.round(x, fmt, mode)
    except (TypeError, ValueError) as err:
        # refused by the gate, which names the argument first ("x = ...", "x[2] = ...",
        # "x has dtype ..."), and only where the input holds something that is not exactly
        # a real float64 (the rule of meant(), written independently of the gate)
        assert str(err).startswith(("x ", "x[")), err
        if isinstance(x, np.ndarray) and x.dtype.kind in "cUS":
            return
        assert any(w is None or (isinstance(w, Fraction) and Fraction(_f64(w)) != w) for w in meant(x)), (x, err)
        assert_names_the_first_offender(err, x)
        return
    vals = real_array(x, "x")  # the gate accepted them: these are the user's values
    if mode == "rne" and fmt in ("fp16", "bf16", "fp32"):
        dt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32}[fmt]
        with np.errstate(over="ignore", invalid="ignore"):
            ref = vals.astype(dt).astype(np.float64)
        np.testing.assert_array_equal(got, ref)
    else:  # directed modes: the result brackets the value and is representable
        ok = workbench.is_representable(got, fmt)
        assert ok.all()
        fin = np.isfinite(vals) & np.isfinite(got)
        if mode == "ru":
            assert (got[fin] >= vals[fin]).all()
        if mode in ("rd",):
            assert (got[fin] <= vals[fin]).all()
        if mode == "rz":
            assert (np.abs(got[fin]) <= np.abs(vals[fin])).all()


@FUZZ
@given(arrays_of_anything(max_size=5))
def test_exact_dot_answers_right_or_refuses(x):
    try:
        got = exact.dot(x, x)
    except (TypeError, ValueError) as err:
        assert_clear(err, "a")
        return
    vals = [Fraction(float(v)) for v in real_array(x, "x").ravel()]
    want = sum((v * v for v in vals), Fraction(0))
    assert got == exact.fraction_to_float64(want)


# --------------------------------------------------------------------- the listed cases
def test_long_double_is_never_rounded_twice():
    x = np.longdouble(1) + np.longdouble(2) ** -11 + np.longdouble(2) ** -60
    if np.longdouble(x) == np.longdouble(float(x)):
        pytest.skip("long double is float64 on this platform")
    with pytest.raises(ValueError, match=r"x\[0\] = .*long double.*not exactly a float64"):
        workbench.round(np.array([x]), "fp16")
    # exactly-float64 long doubles pass
    assert workbench.round(np.array([1.5], dtype=np.longdouble), "fp16")[0] == 1.5


def test_python_ints_fractions_decimals_none():
    assert workbench.round([2**70], "fp32")[0] == 2.0**70
    with pytest.raises(ValueError, match=r"x\[0\] = 1180591620717411303425 .*not exactly a float64"):
        workbench.round([2**70 + 1], "fp32")
    assert workbench.round(np.array([Fraction(3, 4), Decimal("0.5")], dtype=object), "fp16").tolist() == [0.75, 0.5]
    with pytest.raises(ValueError, match=r"A\[0, 1\] = Fraction\(1, 3\)"):
        exact.gemm(np.array([[Fraction(1), Fraction(1, 3)]], dtype=object), np.ones((2, 1)))
    with pytest.raises(TypeError, match=r"x\[1\] = None"):
        workbench.round([1.0, None], "fp16")
    with pytest.raises(ValueError, match=r"Decimal\('0.1'\)"):
        workbench.is_representable([Decimal("0.1")], "fp16")


def test_metrics_refuse_objects_by_name():
    with pytest.raises(TypeError, match=r"C_hat\[0\] = 'a'"):
        metrics.relative_frobenius_error(np.array(["a"], dtype=object), [1.0])


@pytest.mark.parametrize("shape", [(2, 3, 0), (0, 3, 2), (2, 0, 2), (0, 0, 0)])
@pytest.mark.parametrize("preset", [("V100", "fp16", "fp32", None), ("H100", "fp8_e4m3", "fp32", "mma.sync"),
                                    ("MI100", "fp16", "fp32", None), ("MI300X", "bf16", "fp32", None),
                                    ("A100", "fp64", "fp64", None)])
def test_empty_dimensions_give_empty_or_c(shape, preset):
    M, K, N = shape
    dev, fin, fout, ins = preset
    model = workbench.preset(dev, fin, fout, instruction=ins)
    C = np.full((M, N), 2.0)
    D = workbench.gemm(np.zeros((M, K)), np.zeros((K, N)), C, model=model)
    assert D.shape == (M, N)
    assert (D == 2.0).all()  # K = 0: the unit adds nothing to C
    assert exact.gemm(np.zeros((M, K)), np.zeros((K, N))).shape == (M, N)


def test_rng_seed_or_clear_error():
    a = workbench.round([0.1] * 8, "bf16", "sr", rng=0)
    b = workbench.round([0.1] * 8, "bf16", "sr", rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match=r"rng='x'"):
        workbench.round([0.1], "bf16", "sr", rng="x")


@pytest.mark.parametrize(("call", "suggestion"), [
    (lambda: workbench.format("fp17"), "fp16"),
    (lambda: workbench.round([1.0], "fp16", "rnee"), "rne"),
    (lambda: workbench.preset("H10", "fp16"), "H100"),
    (lambda: workbench.custom_model("fp16", kind="t-fdap"), "t-fdpa"),
    (lambda: workbench.custom_model("fp16", stikcy=True), "sticky"),
])
def test_names_suggest_the_close_one(call, suggestion):
    with pytest.raises(ValueError, match=f"did you mean '{suggestion}'"):
        call()


def test_preset_lookup_lists_what_exists_for_the_device():
    with pytest.raises(ValueError, match=r"no preset for 'V100'.*available: fp16->fp16"):
        workbench.preset("V100", "bf16")
    with pytest.raises(ValueError, match="available"):  # records with and without a variant sort together
        workbench.preset("B200", "fp16", "fp32", variant="nope")


@pytest.mark.parametrize("kw", [{"L": True}, {"L": 8.0}, {"F": "24"}, {"sticky": 1}, {"interleave": None}])
def test_model_parameters_are_typed(kw):
    with pytest.raises(TypeError, match=next(iter(kw))):
        workbench.custom_model("fp16", "fp32", **kw)


def test_ieee_format_needs_a_fraction_bit():
    with pytest.raises(ValueError, match="NaN cannot be told from Inf"):
        workbench.FloatFormat.custom("e5m0", exp_bits=5, man_bits=0)


# ----------------------------------------------------------------------- algorithms
import algorithms  # noqa: E402

SPLITTING = {
    "markidis": lambda A, B, m: algorithms.markidis(A, B, model=m),
    "ootomo_yokota": lambda A, B, m: algorithms.ootomo_yokota(A, B, model=m),
    "multiword": lambda A, B, m: algorithms.multiword(A, B, model=m, words=3),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SPLITTING)), st.integers(0, 3), st.integers(0, 5), st.integers(0, 3),
       st.integers(-40, 40), st.integers(0, 2**32 - 1))
def test_splitting_algorithms_never_invent_nan_or_inf(name, M, K, N, e, seed):
    rng = np.random.default_rng(seed)
    A = np.ldexp(rng.standard_normal((M, K)), e).astype(np.float32).astype(np.float64)
    B = rng.standard_normal((K, N)).astype(np.float32).astype(np.float64)
    model = workbench.preset("A100", "fp16", "fp32")
    try:
        D = SPLITTING[name](A, B, model)
    except ValueError as err:
        # refused only because a word overflows fp16, and the message says where and the limit
        assert name != "multiword" and np.abs(A).max() > 65504, err  # multiword scales its inputs first
        assert "overflows fp16" in str(err) and "65504" in str(err)
        return
    assert D.shape == (M, N)
    assert np.isfinite(D).all()
    E = exact.gemm(A, B)
    if -8 <= e <= 8:
        # Inside fp16's comfortable range the emulation is accurate to about fp32, except that a
        # small element's low word lands among fp16's subnormals (spacing 2^-24), which costs up
        # to 2^-25 absolute per element of A and of B: componentwise,
        # |D - E| <= 1e-5 |A||B| + 2^-24 (|A| 1 + 1 |B|).
        absA, absB = np.abs(A), np.abs(B)
        bound = 1e-5 * (absA @ absB) + 2.0**-24 * (absA @ np.ones((K, N)) + np.ones((M, K)) @ absB)
        assert (np.abs(D - E.astype(np.float64)) <= bound).all(), (D, E)


def test_markidis_refuses_fp32_data_beyond_fp16():
    A = np.array([[1.0, 70000.0]])
    with pytest.raises(ValueError, match=r"A\[0, 1\] = 70000.0: word 1 of its split.*overflows fp16.*65504"):
        algorithms.markidis(A, np.ones((2, 1)), model=workbench.preset("V100", "fp16", "fp32"))


@pytest.mark.parametrize("name", sorted(SPLITTING))
def test_algorithms_with_k_zero_return_c(name):
    model = workbench.preset("A100", "fp16", "fp32")
    D = SPLITTING[name](np.zeros((2, 0)), np.zeros((0, 3)), model)
    assert D.shape == (2, 3) and (D == 0).all()


# ----------------------------------------------------------------- command-line options
from workbench.cli import main  # noqa: E402


@pytest.mark.parametrize(("argv", "message"), [
    (["presets", "--device", ""], "--device: an empty name"),
    (["presets", "--format", " "], "--format: an empty name"),
    (["explain", "--device", "V100", "--a", "1,2", "--b", "1,1", "--c", "1,2"], "--c: '1,2' is a list"),
    (["explain", "--device", "V100", "--a", "1,x", "--b", "1,1"], "--a: 'x' is not a decimal or hex float"),
    (["explain", "--device", "V100", "--a", "1,2", "--b", "1"], "--a has 2 values and --b 1"),
    (["explain", "--device", "V10", "--a", "1", "--b", "1"], "did you mean 'V100'"),
    (["probe", "preset:V100:fp16:fp32", "--verify", "-5"], "--verify: -5 is out of range"),
    (["probe", "preset:V100:fp16:fp32", "--seed", "x"], "--seed: 'x' is not an integer"),
    (["discriminate", "V100:fp16:fp32", "A100:fp16:fp32", "--budget", "-1"], "--budget: -1 is out of range"),
    (["discriminate", "V100:fp16:fp32", "A100:fp16:fp32", "-K", "-3"], "-K: -3 is out of range"),
    (["discriminate", "V100:fp16:fp32", "A100:fp16:fp32", "--smt-timeout", "nan"], "expected a finite number > 0"),
    (["sweep", "experiments/smoke.toml", "--workers", "0"], "--workers: 0 is out of range"),
    (["reproduce", "--workers", "-1"], "--workers: -1 is out of range"),
])
def test_every_cli_option_is_validated(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------- gemm and metrics under the fuzz
@st.composite
def matrices_of_anything(draw):
    """(A, B): 2-D array-likes of any of the kinds above, shapes with zero sizes included."""
    m, k, n = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    A = np.asarray(draw(arrays_of_anything(max_size=m * k)), dtype=object)
    B = np.asarray(draw(arrays_of_anything(max_size=k * n)), dtype=object)
    # reshape when the sizes fit, else keep the wrong shape: a shape error is a clear refusal too
    A = A.reshape(m, k) if A.size == m * k else A
    B = B.reshape(k, n) if B.size == k * n else B
    return A, B


@FUZZ
@given(matrices_of_anything())
def test_gemm_answers_right_or_refuses(AB):
    A, B = AB
    model = workbench.preset("A100", "fp16", "fp32")
    try:
        D = workbench.gemm(A, B, model=model)
    except (TypeError, ValueError) as err:
        assert any(name in str(err) for name in ("A", "B")), err
        return
    A64, B64 = real_array(A, "A"), real_array(B, "B")
    assert workbench.is_representable(A64, "fp16").all() and workbench.is_representable(B64, "fp16").all()
    assert D.shape == (A64.shape[0], B64.shape[1]) and D.dtype == np.float32
    if np.isfinite(A64).all() and np.isfinite(B64).all():
        # A100's unit (Xie et al. Table 4: F = 24, RZ) keeps the products' sum within a few
        # units of 2^-24 of the largest product: |D - AB| <= 2^-20 (|A||B|), against Fractions
        for i in range(D.shape[0]):
            for j in range(D.shape[1]):
                terms = [Fraction(float(A64[i, t])) * Fraction(float(B64[t, j])) for t in range(A64.shape[1])]
                scale = sum((abs(t) for t in terms), Fraction(0))
                if scale < 2**120:
                    err = abs(Fraction(float(D[i, j])) - sum(terms, Fraction(0)))
                    assert err <= scale * Fraction(1, 2**20) + Fraction(1, 2**130)


@FUZZ
@given(arrays_of_anything(max_size=4), arrays_of_anything(max_size=4))
# found by this test: a ratio just above 2^1000 whose square root (3.3e150) is a float; the
# reference took any ratio above 2^1000 for an overflow
@example(np.array([0.0, 3.01742643234937e+265, 0.0, 0.0], dtype=object),
         np.array([0.0, 0.0, 0.0, 9.203616286740409e+114], dtype=object))
# and with the exact reference: the metric squared 2^512 and returned Inf for an error of 2^512
@example(np.array([0.0, 2.0 ** 512], dtype=object), np.array([0.0, 1.0], dtype=object))
def test_metrics_answer_right_or_refuse(x_hat, x):
    try:
        got = metrics.relative_frobenius_error(x_hat, x)
    except (TypeError, ValueError) as err:
        assert "C_hat" in str(err) or "C" in str(err), err
        return
    a, b = real_array(x_hat, "a").ravel(), real_array(x, "b").ravel()
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return
    num = sum(((Fraction(float(p)) - Fraction(float(q))) ** 2 for p, q in zip(a, b)), Fraction(0))
    den = sum((Fraction(float(q)) ** 2 for q in b), Fraction(0))
    if num == 0:
        assert got == 0.0
    elif den == 0:
        assert got == math.inf
    else:
        ratio = num / den              # sqrt(ratio) = 2^k sqrt(ratio / 4^k), with ratio / 4^k a float
        k = max(0, (ratio.numerator.bit_length() - ratio.denominator.bit_length() - 1000) // 2 + 1)
        try:
            want = math.ldexp(math.sqrt(float(ratio / 4**k)), k)
        except OverflowError:
            want = math.inf
        assert got == pytest.approx(want, rel=1e-12) or (math.isinf(want) and got > 1e300)
