"""Property 5 of Valpey et al. (2025), Section 6 / Table 5: Ootomo-Yokota can be less
accurate than Markidis on the Volta tensor core.  Errors are checked with Fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import workbench as wb

algorithms = pytest.importorskip("algorithms", reason="the algorithms package has not landed")
if not (hasattr(algorithms, "markidis") and hasattr(algorithms, "ootomo_yokota")):  # pragma: no cover
    pytest.skip("algorithms.markidis / algorithms.ootomo_yokota not available yet", allow_module_level=True)

from workbench.discrimination import find_worse  # noqa: E402


def _errors(a, b, c, outs):
    ex = sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0)) + Fraction(float(c))
    return [abs(Fraction(float(o)) - ex) for o in outs]


def test_table5_pattern_on_volta():
    """The walk-through of Table 5 (Section 6), on an input of that shape:
    1. a1 b1 + a2 b2 = (1 - 2^-11)^2 + 11 * 1489 * 2^-24 = 1 - 2^-24 exactly (fp16 operands);
    2. a3 b3 = a4 b4 = 2^-24 and c = 2^-24; the exact result is 1 + 2^-23;
    3. inside the unit (Volta: L = 4, F = 23 below the largest product exponent -2, so
       2^-24 is kept) the unnormalised sum of the products is 1 + 2^-24;
    4. Markidis adds c inside the unit: 1 + 2^-23, exact;
    5. Ootomo-Yokota takes the products' sum out of the unit: RZ to fp32 gives 1.0,
       then 1.0 + 2^-24 with round-to-nearest-even outside is 1.0: error 2^-23."""
    m = wb.preset("V100", "fp16", "fp32")
    a = np.array([1 - 2.0**-11, 11 * 2.0**-12, 2.0**-12, 2.0**-12])
    b = np.array([1 - 2.0**-11, 1489 * 2.0**-12, 2.0**-12, 2.0**-12])
    c = 2.0**-24
    assert Fraction(a[0]) * Fraction(b[0]) + Fraction(a[1]) * Fraction(b[1]) == 1 - Fraction(1, 2**24)
    A, B, C = a[None, :], b[:, None], np.array([[c]])
    inside = float(wb.gemm(A, B, model=m)[0, 0])
    assert inside == 1.0  # step 5: the unit's RZ of 1 + 2^-24
    mk = float(algorithms.markidis(A, B, C, model=m)[0, 0])
    oy = float(algorithms.ootomo_yokota(A, B, C, model=m)[0, 0])
    assert mk == 1 + 2.0**-23 and oy == 1.0
    err_m, err_oy = _errors(a, b, c, (mk, oy))
    assert err_m == 0 and err_oy == Fraction(1, 2**23)


def test_find_worse_reproduces_property5():
    m = wb.preset("V100", "fp16", "fp32")
    r = find_worse("ootomo_yokota", algorithms.markidis, m, exponent_range=(-15, 14), budget=200_000)
    assert r is not None
    A, B, C = r.a[None, :], r.b[:, None], np.array([[r.c]])
    oy = float(algorithms.ootomo_yokota(A, B, C, model=m)[0, 0])
    mk = float(algorithms.markidis(A, B, C, model=m)[0, 0])
    assert (oy, mk) == (r.out_x, r.out_y)
    e_oy, e_mk = _errors(r.a, r.b, r.c, (oy, mk))
    assert e_oy > e_mk
    nz = r.a[r.a != 0]
    assert np.all(np.abs(nz) >= 2.0**-15) and np.all(np.abs(nz) < 2.0**15)


def test_find_worse_bad_arguments():
    m = wb.preset("V100", "fp16", "fp32")
    with pytest.raises(ValueError, match="exponent_range"):
        find_worse(algorithms.markidis, algorithms.ootomo_yokota, m, exponent_range=(3, 1))
    with pytest.raises(TypeError, match="alg_x"):
        find_worse(3, algorithms.ootomo_yokota, m)
