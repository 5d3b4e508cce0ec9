"""Discriminating inputs (issue 9; Valpey et al. 2025 Sections 4-6).

Every input a search returns is re-run here through ``workbench.gemm`` on both models;
error claims are checked with Fractions, never with the code under test."""

from __future__ import annotations

import argparse
import importlib.util
from fractions import Fraction

import numpy as np
import pytest

import workbench as wb
from workbench.discrimination import (
    DiscriminationNotFound,
    check_carry_bits,
    check_order_independence,
    discriminate,
    discriminate_outcome,
    discrimination_table,
    fixed_point_accumulate,
    resolve_model,
)

HAS_Z3 = importlib.util.find_spec("z3") is not None


def _run(model, a, b, c) -> float:
    return float(np.asarray(wb.gemm(np.asarray(a)[None, :], np.asarray(b)[:, None], np.array([[c]]), model=model),
                            dtype=np.float64)[0, 0])


def _differ(x: float, y: float) -> bool:
    return not (x == y and np.signbit(x) == np.signbit(y)) and not (np.isnan(x) and np.isnan(y))


def _assert_discriminates(r, ma, mb) -> None:
    oa, ob = _run(ma, r.a, r.b, r.c), _run(mb, r.a, r.b, r.c)
    assert _differ(oa, ob), (oa, ob)
    assert (oa, ob) == (r.out_a, r.out_b) or (np.isnan(oa) and np.isnan(r.out_a))


def test_v100_vs_a100_fp16_simplest_input():
    ma, mb = wb.preset("V100", "fp16", "fp32"), wb.preset("A100", "fp16", "fp32")
    r = discriminate(ma, mb)
    assert r is not None and r.method == "structured"
    _assert_discriminates(r, ma, mb)
    # F = 23 vs 24 needs only one product against c (Volta drops the bit Ampere keeps)
    assert r.nonzero_terms <= 2
    assert r.recheck()


def test_h100_vs_b200_rn_by_name():
    r = discriminate("H100:fp16:fp32", "B200:fp16:fp32:rn")
    assert r is not None
    ma, mb = wb.preset("H100", "fp16", "fp32"), wb.preset("B200", "fp16", "fp32", variant="rn")
    _assert_discriminates(r, ma, mb)
    # the final rounding differs (RZ vs RNE): the exact sum is not representable
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(r.a, r.b)), Fraction(0)) + Fraction(r.c)
    assert Fraction(r.out_a) != exact and Fraction(r.out_b) != exact or Fraction(r.out_a) != Fraction(r.out_b)
    assert resolve_model("hopper/wgmma/fp16->fp32").params == ma.params


def test_block_size_difference_custom_models():
    ma = wb.custom_model("fp16", "fp32", L=4, F=23, rounding="rz", zero_exponent=-131)
    mb = ma.with_params(L=8)
    r = discriminate(ma, mb, K=8)
    assert r is not None and r.K == 8
    _assert_discriminates(r, ma, mb)
    # with equal blocks the difference must involve both halves of the 8-block
    ks = [k for k, _, _ in r.terms()]
    assert ks and (max(ks) >= 4 or r.c != 0)


def test_identical_models_none_exists():
    m = wb.preset("H100", "fp16", "fp32")
    with pytest.warns(DiscriminationNotFound, match="none exists"):
        assert discriminate(m, wb.preset("B200", "fp16", "fp32")) is None


def test_budget_exhausted_says_so():
    out = discriminate_outcome("V100:fp16:fp32", "A100:fp16:fp32", budget=0)
    assert out.result is None and out.status == "none found within budget"
    with pytest.warns(DiscriminationNotFound, match="within budget"):
        assert discriminate("V100:fp16:fp32", "A100:fp16:fp32", budget=0) is None


@pytest.mark.parametrize("kw, match", [({"K": 0}, "K=0"), ({"budget": -1}, "budget=-1"),
                                       ({"backend": "magic"}, "backend='magic'"),
                                       ({"compare": "ulps"}, "compare='ulps'")])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        discriminate("V100:fp16:fp32", "A100:fp16:fp32", **kw)


def test_compare_value_ignores_the_sign_of_zero():
    ma, mb = wb.preset("A100", "bf16", "fp32"), wb.preset("MI300X", "bf16", "fp32")
    by_bits = discriminate(ma, mb, budget=20_000)
    assert by_bits is not None
    _assert_discriminates(by_bits, ma, mb)
    by_value = discriminate(ma, mb, budget=20_000, compare="value")
    assert by_value is not None and by_value.recheck()
    oa, ob = _run(ma, by_value.a, by_value.b, by_value.c), _run(mb, by_value.a, by_value.b, by_value.c)
    assert oa != ob and not (np.isnan(oa) and np.isnan(ob)), (oa, ob)   # different numbers, not +0 vs -0


def test_bad_names():
    with pytest.raises(ValueError, match="no preset named"):
        resolve_model("nowhere/x/fp16->fp32")
    with pytest.raises(ValueError, match="DEVICE:IN:OUT"):
        resolve_model("H100")


def test_order_independence_counterexample_rechecked():
    m = wb.preset("V100", "fp16", "fp32")
    rep = check_order_independence(m, K=8, budget=800)
    assert rep.holds is False
    ce = rep.counterexample
    a, b, perm = np.array(ce["a"]), np.array(ce["b"]), np.array(ce["permutation"])
    assert _differ(_run(m, a, b, ce["c"]), _run(m, a[perm], b[perm], ce["c"]))


def _aligned_max(n_terms: int, m: int) -> Fraction:
    top = Fraction(2) - Fraction(1, 2 ** m)
    return (n_terms - 1) * top * top / 2 + (Fraction(2) - Fraction(1, 2 ** 23))


def test_carry_bits_bound_and_counterexample():
    ok = check_carry_bits(5, 3, smt=False)
    assert ok.holds is True and _aligned_max(5, 10) < 16
    bad = check_carry_bits(5, 2, smt=False)
    assert bad.holds is False and _aligned_max(5, 10) >= 8
    ce = bad.counterexample
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(ce["a"], ce["b"])), Fraction(0)) + Fraction(ce["c"])
    # every term is exact at F = 23 here: the unbounded register equals the exact sum,
    # and a register of 1 + 2 + 1 + 23 bits (units 2^(1-23)) wraps it by 2^(1+1+2+1)
    assert fixed_point_accumulate(ce["a"], ce["b"], ce["c"]) == exact
    assert Fraction(ce["register"]) == exact - 2 ** 5
    with pytest.raises(ValueError, match="carry_bits=-1"):
        check_carry_bits(5, -1)


@pytest.mark.needs_smt
@pytest.mark.skipif(not HAS_Z3, reason="needs z3: pip install -e '.[smt]'")
def test_carry_bits_smt():
    assert check_carry_bits(5, 3, smt=True).details["smt"] == "unsat"
    assert check_carry_bits(5, 2, smt=True).details["smt"] == "sat"


def _assert_row_discriminates(row) -> None:
    """Rebuild a table row's input and run it on both presets again."""
    ma, mb = resolve_model(row["model_a"]), resolve_model(row["model_b"])
    a = np.zeros(row["K"])
    b = np.zeros(row["K"])
    for t in row["terms"]:
        a[t["k"]], b[t["k"]] = t["a"], t["b"]
    assert _differ(_run(ma, a, b, row["c"]), _run(mb, a, b, row["c"]))


def test_table_subset_rechecked():
    names = ["V100:fp16:fp32", "H100:fp16:fp32", "B200:fp16:fp32"]
    rows = discrimination_table(names, budget=20_000)
    assert len(rows) == 3
    assert [r["status"] for r in rows] == ["found", "found", "none exists"]  # H100 and B200 share numerics
    for row in rows[:2]:
        _assert_row_discriminates(row)


@pytest.mark.slow
def test_table_all_presets():
    rows = discrimination_table(budget=20_000)
    found = [r for r in rows if r["status"] == "found"]
    assert found
    for row in found:
        _assert_row_discriminates(row)


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    from workbench.cli import discriminate as discrimination_cli

    p = argparse.ArgumentParser()
    discrimination_cli.add_arguments(p)
    code = discrimination_cli.run_command(p.parse_args(argv))
    return code, capsys.readouterr().out


def test_cli(capsys):
    code, out = _cli(["V100:fp16:fp32", "ampere/mma/fp16->fp32"], capsys)
    assert code == 0 and "volta/mma.m8n8k4/fp16->fp32" in out and "c    =" in out
    code, out = _cli(["H100:fp16:fp32", "B200:fp16:fp32"], capsys)
    assert code == 1 and out.startswith("none exists")
    code, out = _cli(["V100:fp16:fp32", "A100:fp16:fp32", "--json", "--budget", "0"], capsys)
    assert code == 1 and '"status": "none found within budget"' in out


@pytest.mark.needs_smt
@pytest.mark.skipif(not HAS_Z3, reason="needs z3: pip install -e '.[smt]'")
def test_smt_finds_rechecked_input():
    ma, mb = wb.preset("V100", "fp16", "fp32"), wb.preset("A100", "fp16", "fp32")
    r = discriminate(ma, mb, K=4, backend="smt", smt_timeout=120)
    assert r is not None and r.method == "smt"
    _assert_discriminates(r, ma, mb)


@pytest.mark.needs_smt
@pytest.mark.skipif(not HAS_Z3, reason="needs z3: pip install -e '.[smt]'")
def test_smt_proves_equivalence_and_rejects_unsupported():
    ma = wb.custom_model("fp16", "fp32", L=8, F=24, rounding="rz", zero_exponent=-132)
    mb = ma.with_params(L=16)  # K = 4 fits in one block of either: same arithmetic
    out = discriminate_outcome(ma, mb, K=4, backend="smt", smt_timeout=120)
    assert out.status == "proved equivalent" and out.result is None
    with pytest.warns(DiscriminationNotFound, match="proved equivalent"):
        assert discriminate(ma, mb, K=4, backend="smt") is None
    # the same pair at K = 9 differs (two Ampere-like blocks vs one), and z3 says so
    r = discriminate(ma, mb, K=9, backend="smt", smt_timeout=120)
    assert r is not None
    _assert_discriminates(r, ma, mb)
    with pytest.raises(ValueError, match="kind='fma'"):
        discriminate(wb.preset("A100", "fp64", "fp64"), wb.preset("H100", "fp64", "fp64").with_params(L=2),
                     backend="smt")


def test_integer_units_are_refused_with_the_reason():
    """The search draws floating-point inputs: an integer unit (kind int-mma) is refused by
    name, and the table lists such pairs as unsupported instead of failing."""
    with pytest.raises(ValueError, match="integer unit"):
        discriminate("A100:s8:s32", "A100:s8:s32:satfinite")
    rows = discrimination_table(["A100:s8:s32", "A100:s8:s32:satfinite"], budget=100, progress=False)
    assert len(rows) == 1 and rows[0]["status"].startswith("unsupported: ") and "integer unit" in rows[0]["status"]
