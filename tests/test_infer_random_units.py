"""``probes.infer`` on units drawn at random from the engine's model space (issue 14,
item 4), not from the catalogue: T-FDPA with L in {1, 2, 4, ..., 64}, F in 8..40,
every final rounding the engine models, c early or late (with every late rounding),
fp8/fp16/bf16/tf32 inputs and fp16/fp32 outputs; and the other kinds (FMA chains,
E-FDPA, FTZ-AddMul, TR-/GTR-FDPA, GST-FDPA) with parameters drawn the same way.

The oracle is the drawn unit itself: inference must return a model that is verified,
that agrees with the drawn unit on fresh random inputs (a second randomised comparison,
another seed), and whose parameters are the drawn ones - or, where the outputs cannot
separate them, the drawn parameters must be among the consistent models it reports
(``alternatives``) or the parameter marked not observable, with the reason; and the
reported set must say so, its members indistinguishable from the drawn unit on a
randomised comparison.
The default run draws a fixed sample (derandomised, so CI is repeatable); the slow
suite draws 300 fresh ones.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from workbench.engine.model import ROUNDINGS, Model
from workbench.probes import from_model, infer, verify
from workbench.probes.features import probe_subnormals
from workbench.probes.search import SEARCHED

N_VERIFY = 2000
#: units drawn in the default run (with the regression examples: 15 T-FDPA units and 8 of
#: the other kinds, about 3 CPU minutes; the 30 and 10 drawn before took 7.5, the
#: searches having grown more thorough since issue 14); the slow suite draws SLOW_UNITS
DEFAULT_UNITS = 12
SLOW_UNITS = 300
DEFAULT_OTHER_UNITS = 6
SLOW_OTHER_UNITS = 100
_CHECKED = ("L", "F", "rounding", "c_position")


@st.composite
def tfdpa_units(draw: st.DrawFn) -> dict:
    p = dict(kind="t-fdpa",
             in_format=draw(st.sampled_from(["fp8_e4m3", "fp8_e5m2", "fp16", "bf16", "tf32"])),
             out_format=draw(st.sampled_from(["fp16", "fp32"])),
             L=2 ** draw(st.integers(0, 6)), F=draw(st.integers(8, 40)),
             rounding=draw(st.sampled_from(ROUNDINGS)), c_position=draw(st.sampled_from(["early", "late"])))
    if p["c_position"] == "late":
        p["late_rounding"] = draw(st.sampled_from(ROUNDINGS))
    return p


#: the subnormal handling, drawn as the Model default (kept) and searched by inference
_FLAGS = ("flush_subnormals", "flush_output_subnormals")


def _agrees(drawn: dict, model: dict) -> bool:
    keys = [k for k in SEARCHED + _FLAGS if k != "late_rounding" or drawn["c_position"] == "late"]
    full = {**Model().params, **drawn}
    return all(model.get(k) == full[k] for k in keys)


#: alternatives of one result compared with the drawn unit (evenly spaced through the
#: set): in the default run, in the slow suite
DEFAULT_ALTERNATIVES_CHECKED = 2
SLOW_ALTERNATIVES_CHECKED = 6


def check_alternatives(truth, res, at_most: int) -> None:
    """A reported set of models the outputs cannot separate says so, and its members are
    indeed indistinguishable from the drawn unit on a randomised comparison (another seed)."""
    if not res.alternatives:
        return
    if len(res.alternatives) > 1:
        assert any("models reproduce every output" in why for why in res.unobservable.values()), res.sheet()
    step = max(1, -(-len(res.alternatives) // at_most))
    for alt in res.alternatives[::step]:
        _, cex = verify(truth, Model(**alt), n=N_VERIFY, seed=4321)
        assert cex is None, (alt, str(cex), res.sheet())


def _outcome(res) -> str:
    """The kind of answer, counted by ``pytest --hypothesis-show-statistics``."""
    if len(res.alternatives) > 1:
        return "verified, with a set of models the outputs cannot separate"
    return "verified, one model" + (" (some parameters not observable)" if res.unobservable else "")


def check_recovered(drawn: dict, alternatives_checked: int = DEFAULT_ALTERNATIVES_CHECKED) -> None:
    truth = from_model(Model(**drawn))
    res = infer(truth, n_verify=N_VERIFY)
    assert res.verified, (drawn, res.sheet())
    _, cex = verify(truth, res.model, n=N_VERIFY, seed=1234)
    assert cex is None, (drawn, str(cex), res.sheet())
    check_alternatives(truth, res, alternatives_checked)
    event(_outcome(res))
    if res.alternatives:
        assert any(_agrees(drawn, alt) for alt in res.alternatives), (drawn, res.sheet())
        return
    for k in _CHECKED:
        assert res.params[k] == drawn[k] or k in res.unobservable, (k, drawn, res.sheet())
    for k in _FLAGS:
        assert res.params[k] == Model().params[k] or k in res.unobservable, (k, drawn, res.sheet())
    if drawn["c_position"] == "late" and "c_position" not in res.unobservable:
        assert res.params["late_rounding"] == drawn["late_rounding"] or "late_rounding" in res.unobservable


#: the default run's T-FDPA units come in three tests of a third each, one more for the
#: simplest unit that each draw starts with (each its own fixed draw: a derandomised draw
#: is seeded by the test's name), so that a parallel run (pytest-xdist) spreads them over
#: the workers; together at least DEFAULT_UNITS different units
_DEFAULT_PART = settings(max_examples=-(-DEFAULT_UNITS // 3) + 1, deadline=None, derandomize=True, database=None,
                         suppress_health_check=[HealthCheck.too_slow])


@_DEFAULT_PART
@given(tfdpa_units())
# found by the slow test: one product per block, F = 22 on bf16 -> fp16; the reported set held
# F up to 30, which parts from the unit only where a product is a tie of fp16 and c a tiny
# term (the "ties" inputs of the verification and of the alternatives' check since)
@example(dict(kind="t-fdpa", in_format="bf16", out_format="fp16", L=1, F=22, rounding="rne", c_position="early"))
# found by the slow test: the probes had no model (one product per block and c late: the window
# probe read F 274), so the search probed each survivor's zero exponent, and the search then
# took its own copy of the survivor for a different model and tried on until it gave up
@example(dict(kind="t-fdpa", in_format="tf32", out_format="fp32", L=1, F=14, rounding="rne", c_position="late",
              late_rounding="rz"))
def test_random_tfdpa_units_are_recovered(drawn):
    check_recovered(drawn)


@_DEFAULT_PART
@given(tfdpa_units())
def test_random_tfdpa_units_are_recovered_second_draw(drawn):
    check_recovered(drawn)


@_DEFAULT_PART
@given(tfdpa_units())
def test_random_tfdpa_units_are_recovered_third_draw(drawn):
    check_recovered(drawn)


#: the slow suite's T-FDPA units: two tests of half each, so that a parallel run spreads them
_SLOW_HALF = settings(max_examples=SLOW_UNITS // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@_SLOW_HALF
@given(tfdpa_units())
# found by this test: with F = 8 every fused sum fits fp32, so the final rounding is not
# observable (a set); the smallest subnormal c falls out of the window, not a flush
@example(dict(kind="t-fdpa", in_format="bf16", out_format="fp32", L=16, F=8, rounding="rne", c_position="early"))
# found by this test: reported as rz with rne among the "indistinguishable" alternatives; the
# "carry" inputs (three large products of one exponent and a small one of the other sign) part them
@example(dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp32", L=8, F=21, rounding="rne", c_position="late",
              late_rounding="rz"))
# found by this test: F 30 and 31 reported as a set the outputs cannot separate; they part
# where a tiny product at the window's edge breaks an output tie (the window-edge inputs)
@example(dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp16", L=2, F=30, rounding="rne", c_position="early"))
# and one product per block: the edge inputs must also span blocks (K = 2L + 3)
@example(dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp32", L=1, F=30, rounding="rne", c_position="early"))
# found by this test: an E-FDPA (F 37 is near exact) passed the proposal's smaller check at another
# seed, failed the final verification, and no search ran in between
@example(dict(kind="t-fdpa", in_format="fp8_e5m2", out_format="fp16", L=2, F=37, rounding="rne", c_position="early"))
# found by this test: reported as RZ with RU among the alternatives; RZ failed a random input at
# another seed (three large products carrying three binades, a tiny one of the other sign, c = 0)
@example(dict(kind="t-fdpa", in_format="fp8_e5m2", out_format="fp32", L=4, F=21, rounding="ru", c_position="early"))
# found by this test (stop 27): the reported set held near twins (GST-FDPA G 64 F 34, and with
# the rows above T-FDPA F 26 with a sticky bit) that pass the search's batteries and the
# verification but fail a log-uniform input at another seed; the edge rows now put a term of
# the other sign at the window's last bit beside the tiny one (where a sticky bit shows)
@example(dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp16", L=64, F=40, rounding="ru",
              c_position="early"))
# found by this test (stop 28): two products per block and c late; the reported set held F 27 .. 56
# with a sticky bit, which part from F 31 only where one product is the output's half ulp with its
# own tail below the window (the edge rows now build that pair)
@example(dict(kind="t-fdpa", in_format="bf16", out_format="fp32", L=2, F=31, rounding="rne", c_position="late",
              late_rounding="rne"))
# found by this test (stop 28, the last run): fp16 -> fp16, two products per block, c late; a
# product at an output tie and the tiny term as the block's other product (c cannot hold it)
@example(dict(kind="t-fdpa", in_format="fp16", out_format="fp16", L=2, F=28, rounding="rne", c_position="late",
              late_rounding="rne"))
# found by this test (stop 29): fp8 -> fp32, one product per block; reported with 468 other
# models (a late c, F 31 .. 56) that part from it only where c holds an fp32 tie and a tiny term
# below the window (no fp8 product lies at an fp32 tie); the edge rows now build that c
@example(dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp32", L=1, F=32, rounding="rne", c_position="early"))
# found by this test (stop 29): reported with its RZ twin as a set the outputs cannot separate; the
# search's edge rows (a whole block of large products, a negative one at the window's last bit)
# part them but ran only for candidates of several windows
@example(dict(kind="t-fdpa", in_format="fp8_e5m2", out_format="fp32", L=64, F=17, rounding="rne", c_position="early"))
def test_many_random_tfdpa_units_are_recovered(drawn):
    check_recovered(drawn, SLOW_ALTERNATIVES_CHECKED)


@pytest.mark.slow
@_SLOW_HALF
@given(tfdpa_units())
def test_many_random_tfdpa_units_are_recovered_second_half(drawn):
    check_recovered(drawn, SLOW_ALTERNATIVES_CHECKED)


@st.composite
def other_units(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "gst-fdpa"]))
    rounding = draw(st.sampled_from(ROUNDINGS))
    if kind == "fma":
        fmt = draw(st.sampled_from(["fp32", "fp64"]))   # the chains of Xie et al. Table 3 (FP32, FP64)
        p = dict(kind=kind, in_format=fmt, out_format=fmt, c_position=draw(st.sampled_from(["early", "late"])))
        if p["c_position"] == "late":
            p["late_rounding"] = rounding
        return p
    if kind == "e-fdpa":
        return dict(kind=kind, in_format=draw(st.sampled_from(["fp16", "bf16", "fp8_e4m3"])),
                    out_format=draw(st.sampled_from(["fp16", "fp32"])), L=2 ** draw(st.integers(0, 4)),
                    rounding=rounding)
    if kind == "ftz-addmul":
        P = draw(st.sampled_from([2, 4]))
        return dict(kind=kind, in_format=draw(st.sampled_from(["fp16", "bf16"])), out_format="fp32", L=P, P=P,
                    flush_subnormals=True, flush_output_subnormals=True)
    F = draw(st.integers(12, 30))
    if kind == "gst-fdpa":
        G = draw(st.sampled_from([8, 16]))
        return dict(kind=kind, in_format="fp4_e2m1", out_format="fp32", L=64, G=G, k_block=G,
                    F=draw(st.integers(25, 40)), rounding=rounding, scale_format="ue4m3")
    fin = (draw(st.sampled_from(["fp16", "bf16", "tf32"])) if kind == "tr-fdpa"
           else draw(st.sampled_from(["fp8_e4m3fnuz", "fp8_e5m2fnuz"])))
    return dict(kind=kind, in_format=fin, out_format="fp32", L=2 ** draw(st.integers(1 if kind == "tr-fdpa" else 2, 4)),
                F=F, F2=F + draw(st.integers(0, 10)), rounding=rounding)


def check_other_recovered(drawn: dict, alternatives_checked: int = DEFAULT_ALTERNATIVES_CHECKED) -> None:
    try:
        unit = Model(**drawn)
    except ValueError:
        assume(False)
    truth = from_model(unit)
    res = infer(truth, n_verify=N_VERIFY)
    assert res.verified, (drawn, res.sheet())
    _, cex = verify(truth, res.model, n=N_VERIFY, seed=1234)
    assert cex is None, (drawn, str(cex), res.sheet())
    check_alternatives(truth, res, alternatives_checked)
    event(_outcome(res))
    if res.params["kind"] != drawn["kind"]:
        # an equivalent model of another kind is only reported as one of a set the outputs cannot separate
        assert res.alternatives and "search" in " ".join(res.notes), (drawn, res.sheet())
        return
    for k, v in {**dict.fromkeys(_FLAGS, False), **drawn}.items():
        if k in ("k_block", "scale_format") or k in res.unobservable:
            continue
        assert res.params[k] == v or any(alt.get(k) == v for alt in res.alternatives), (k, drawn, res.sheet())


@settings(max_examples=DEFAULT_OTHER_UNITS, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(other_units())
# the "ties" inputs' construction underflowed in binary64 for this chain (now guarded)
@example(dict(kind="fma", in_format="fp64", out_format="fp64", c_position="early"))
# an FMA chain with c late reaches -0 + -0 in the late addition on the "ties" inputs: -0 (IEEE 754 Sec. 6.3)
@example(dict(kind="fma", in_format="fp32", out_format="fp32", c_position="late", late_rounding="rd"))
def test_random_units_of_the_other_kinds_are_recovered(drawn):
    check_other_recovered(drawn)


@pytest.mark.slow
@settings(max_examples=SLOW_OTHER_UNITS, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                               HealthCheck.filter_too_much])
@given(other_units())
# found by this test: F2 + 1 and F2 + 2 were reported as alternatives though a random bit
# pattern with two blocks of two products parts them; an FMA chain twin of E-FDPA L = 1
@example(dict(kind="tr-fdpa", in_format="bf16", out_format="fp32", L=2, F=19, F2=29, rounding="rne"))
@example(dict(kind="e-fdpa", in_format="fp16", out_format="fp16", L=1, rounding="rne"))
# found by this test: reported (and verified) with F2 = 30; F2 = 31 shows only where a product
# cancels c down to a value whose ulps reach the sum's last bit (the window-edge inputs)
@example(dict(kind="gtr-fdpa", in_format="fp8_e4m3fnuz", out_format="fp32", L=8, F=30, F2=31, rounding="rd"))
# found by this test: read as an unverified T-FDPA (fp4 products cannot make half an ulp of
# c next to a window bit: the tie is now several products); with F = 36 no tie fits in a
# block and the search (GST-FDPA candidates for narrow inputs) reports the G it cannot part
@example(dict(kind="gst-fdpa", in_format="fp4_e2m1", out_format="fp32", L=64, G=8, k_block=8, F=30, rounding="rne",
              scale_format="ue4m3"))
@example(dict(kind="gst-fdpa", in_format="fp4_e2m1", out_format="fp32", L=64, G=8, k_block=8, F=36, rounding="rne",
              scale_format="ue4m3"))
# found by this test (stop 27): F2 = 33 was one of 26 values (29 .. 54) the search's batteries
# and edge rows could not part; the reported 29 failed a random cancellation input at another
# seed.  F2 = 29 .. 31 part from 33 only where c cancels a sum of 2 .. 8 products 2 .. 4 binades
# below it (the edge rows cancelled one product); F2 >= 32 reproduce every output of this unit
@example(dict(kind="tr-fdpa", in_format="bf16", out_format="fp32", L=8, F=28, F2=33, rounding="rd"))
# found by this test (stop 29): the probes saw one group (an fp8 group's products rarely span 30
# binades) and proposed TR-FDPA; the search around a TR-/GTR-FDPA proposal kept its kind, so no
# model was left.  It now searches both kinds
@example(dict(kind="gtr-fdpa", in_format="fp8_e4m3fnuz", out_format="fp32", L=16, F=30, F2=33, rounding="rz"))
def test_many_random_units_of_the_other_kinds_are_recovered(drawn):
    check_other_recovered(drawn, SLOW_ALTERNATIVES_CHECKED)


def test_subnormal_c_kept_by_a_window_narrower_than_the_output_is_seen_as_kept():
    """A T-FDPA with F = 8 that does not flush: a lone c = 2^-149 falls out of its window,
    c = 2^-127 comes back (the premise, asserted first), so the subnormal probe must not
    read a flush (the slow test's bf16 L 16 F 8 unit was reported as flushing outputs)."""
    import numpy as np

    unit = Model(kind="t-fdpa", in_format="bf16", out_format="fp32", L=16, F=8, rounding="rne")
    zeros = np.zeros((2, 4))
    kept = from_model(unit).dots(zeros, zeros, np.array([2.0 ** -149, 2.0 ** -127]))
    assert list(kept) == [0.0, 2.0 ** -127]
    sub = probe_subnormals(from_model(unit))
    assert sub.c_passthrough and sub.inputs and sub.outputs_from_products
