"""Ozaki schemes I and II on every s8 integer preset (issue 51): the unit is any
``int-mma`` unit with signed 8-bit operands, the slice / moduli counts may be chosen from
the inputs' exponent span (``"auto"``, after ADP) with a reported fallback to native FP64,
and what cannot work is refused by name.  Expected values: exact rational arithmetic
(:class:`fractions.Fraction`) and float64's own product for the fallback."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import algorithms
from algorithms.ozaki import MAX_MODULI, MAX_SLICES, _slices, integer_unit
from workbench.units import catalogue

S8_PRESETS = [r.name for r in catalogue.records() if r.kind == "int-mma" and r.in_format == "s8"]
U8_PRESETS = [r.name for r in catalogue.records() if r.kind == "int-mma" and r.in_format == "u8"]


def _exact(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B rounded once to float64 from the exact rational dot products."""
    return np.array([[float(sum(Fraction(a) * Fraction(b) for a, b in zip(row, col))) for col in B.T] for row in A])


def _data(seed: int, span: int = 20, M: int = 4, K: int = 70, N: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)) * np.exp2(rng.integers(-span, span + 1, (M, K)))
    B = rng.standard_normal((K, N)) * np.exp2(rng.integers(-span, span + 1, (K, N)))
    return A, B


def test_the_catalogue_has_s8_and_u8_integer_presets():
    assert len(S8_PRESETS) >= 9 and len(U8_PRESETS) >= 6


@pytest.mark.parametrize("name", S8_PRESETS)
@pytest.mark.parametrize("scheme, counts", [("I", {"slices": "auto"}), ("II", {"moduli": "auto"})])
def test_ozaki_on_every_s8_preset_reaches_fp64_accuracy(name, scheme, counts):
    A, B = _data(len(name))
    D, words = algorithms.ozaki(A, B, model=name, scheme=scheme, return_words=True, **counts)
    E = _exact(A, B)
    assert words["unit"] == name and words["auto"] and not words["fallback"]
    assert np.max(np.abs(D - E) / np.abs(E)) <= 2.0**-50


@pytest.mark.parametrize("name", S8_PRESETS[:3])
def test_a_preset_gives_the_bits_of_the_default_unit(name):
    """The integer products are exact on every s8 unit, so the result does not depend on it."""
    A, B = _data(7)
    for scheme in ("I", "II"):
        assert np.array_equal(algorithms.ozaki(A, B, model=name, scheme=scheme),
                              algorithms.ozaki(A, B, scheme=scheme))


@pytest.mark.parametrize("name", U8_PRESETS[:2] + ["H100:fp16:fp32", "MI300X:fp8:fp32"])
def test_units_whose_operands_cannot_hold_signed_slices_are_refused(name):
    A, B = _data(1)
    with pytest.raises(ValueError, match="integer unit|signed 8-bit"):
        algorithms.ozaki(A, B, model=name)


def test_auto_falls_back_to_native_fp64_where_no_count_covers_the_span():
    """Row 0 of A holds 2^100 and 1, column 0 of B 2^-200 and 1: the largest product (1)
    lies 100 binades below the row's and column's scaling (exponent span 100), beyond 20
    slices of 7 bits and beyond the integers 40 moduli recover in scheme II."""
    A = np.array([[2.0**100, 1.0], [1.0, 1.0]])
    B = np.array([[2.0**-200, 1.0], [1.0, 1.0]])
    for scheme, counts in (("I", {"slices": "auto"}), ("II", {"moduli": "auto"})):
        D, words = algorithms.ozaki(A, B, scheme=scheme, return_words=True, **counts)
        assert words["fallback"] and "native FP64" in words["reason"] and words["exponent_span"] == 100
        assert np.array_equal(D, A @ B)


def test_auto_picks_more_moduli_for_a_wider_span():
    A, B = _data(3, span=0)
    A[0, 0] *= 2.0**40                 # the rest of row 0 now lies 40 binades below its scaling
    _, narrow = algorithms.ozaki(*_data(3, span=0), scheme="II", moduli="auto", return_words=True)
    _, wide = algorithms.ozaki(A, B, scheme="II", moduli="auto", return_words=True)
    assert len(wide["moduli"]) > len(narrow["moduli"])


@pytest.mark.parametrize("kw, message", [
    ({"scheme": "II", "moduli": MAX_MODULI + 1}, f"expected 2..{MAX_MODULI}"),
    ({"scheme": "I", "slices": MAX_SLICES + 1}, f"expected 1..{MAX_SLICES}"),
    ({"scheme": "II", "moduli": "many"}, "or 'auto'"),
])
def test_counts_beyond_exact_recovery_are_refused(kw, message):
    A, B = _data(2)
    with pytest.raises(ValueError, match=message):
        algorithms.ozaki(A, B, **kw)


def test_nan_and_inf_are_refused():
    A, B = _data(2)
    A[1, 2] = np.nan
    with pytest.raises(ValueError):
        algorithms.ozaki(A, B, slices="auto")


def test_slices_are_the_base_2_to_the_bits_digits_of_the_scaled_magnitude():
    """Each slice is the next ``bits``-bit digit of |x| 2^-e, truncated, signed like x:
    written out with Fractions, for more slices than an int64 could hold (12 x 7 bits)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, 5)) * np.exp2(rng.integers(-30, 30, (3, 5)))
    e = np.frexp(np.abs(X).max(axis=1))[1]
    got = _slices(X, e, 1, 12, 7)
    for i in range(3):
        for k in range(5):
            rest = abs(Fraction(X[i, k])) / Fraction(2) ** int(e[i])
            for s in range(12):
                rest *= 128
                digit = int(rest)
                rest -= digit
                assert got[s][i, k] == np.sign(X[i, k]) * digit


def test_integer_unit_reads_every_spelling():
    assert integer_unit("MI300X:s8:s32").name == "cdna3/mfma/s8->s32"
    assert integer_unit(algorithms.INT8_UNIT) is algorithms.INT8_UNIT
    custom = catalogue.custom_model("s8", "s32", kind="int-mma", L=64)
    unit = integer_unit(custom)
    assert unit.preset == custom
