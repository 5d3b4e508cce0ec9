"""Error metrics: hand-computed values on small matrices (expected values written out)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.numbers import metrics

A = np.array([[1.0, -2.0], [3.0, 4.0]])  # ||A||_inf = 7
B = np.array([[0.5, 1.0], [-1.0, 2.0]])  # ||B||_inf = 3
C = A @ B  # [[2.5, -3], [-2.5, 11]], exact in float64


def test_normwise_error_inf_is_figure7_formula():
    C_hat = C + np.array([[0.25, -0.5], [0.0, 0.125]])
    # ||C_hat - C||_inf = max(0.75, 0.125) = 0.75; 0.75 / (7 * 3)
    assert metrics.normwise_error_inf(C_hat, C, A, B) == pytest.approx(0.75 / 21, rel=1e-15)
    assert metrics.normwise_error_inf(C, C, A, B) == 0.0
    assert metrics.normwise_error_inf(C, C + 1, np.zeros((2, 2)), B) == float("inf")


def test_relative_frobenius_error():
    C_hat = C + np.array([[3.0, 0.0], [0.0, 4.0]])
    fro = np.sqrt(2.5**2 + 3**2 + 2.5**2 + 11**2)
    assert metrics.relative_frobenius_error(C_hat, C) == pytest.approx(5.0 / fro, rel=1e-15)
    assert metrics.relative_frobenius_error(np.zeros(3), np.zeros(3)) == 0.0


def test_componentwise_error():
    # |A||B| = [[2.5, 5], [5.5, 11]]
    C_hat = C + np.array([[0.25, 0.0], [-1.1, 0.0]])
    assert metrics.componentwise_error(C_hat, C, A, B) == pytest.approx(0.2, rel=1e-12)
    # with an addend the denominator grows: entry (1, 0): 1.1 / (5.5 + 5.5)
    add = np.array([[0.0, 0.0], [5.5, 0.0]])
    assert metrics.componentwise_error(C_hat, C, A, B, addend=add) == pytest.approx(0.1, rel=1e-12)
    Z = np.zeros((2, 2))
    assert metrics.componentwise_error(Z, Z, Z, Z) == 0.0
    assert metrics.componentwise_error(Z + 1, Z, Z, Z) == float("inf")


def test_ulp_error_in_formats():
    # fp32: ulp(1) = 2^-23, ulp(3) = 2^-22; fp16 subnormal spacing 2^-24
    e = metrics.ulp_error([1 + 2.0**-23, 3 - 2.0**-22, 2.0**-20 + 2.0**-25], [1.0, 3.0, 2.0**-20], "fp32")
    np.testing.assert_array_equal(e, [1.0, 1.0, 2.0**-25 / 2.0**-43])
    e16 = metrics.ulp_error([2.0**-24 * 3], [2.0**-24 * 2], "fp16")
    np.testing.assert_array_equal(e16, [1.0])
    assert metrics.ulp_error([0.0], [0.0], "bf16")[0] == 0.0
    with pytest.raises(ValueError, match="finite"):
        metrics.ulp_error([1.0], [np.inf], "fp32")


def test_signed_error_stats():
    ref = np.array([1.0, 2.0, 4.0, 8.0])
    hat = ref + np.array([-0.5, -1.0, 0.0, 2.0])
    s = metrics.signed_error_stats(hat, ref)
    assert (s.count, s.mean, s.median, s.max_abs) == (4, 0.125, -0.25, 2.0)  # median of [-1, -0.5, 0, 2]
    assert s.std == pytest.approx(np.sqrt((0.625**2 + 1.125**2 + 0.125**2 + 1.875**2) / 4))
    assert (s.frac_positive, s.frac_negative, s.frac_zero) == (0.25, 0.5, 0.25)
    r = metrics.signed_error_stats(hat, ref, scale="relative")
    assert r.mean == pytest.approx((-0.5 - 0.5 + 0 + 0.25) / 4)
    u = metrics.signed_error_stats(np.array([1 - 2.0**-24, 1 + 2.0**-23]), np.ones(2), scale="fp32")
    assert (u.mean, u.frac_negative) == ((-0.5 + 1.0) / 2, 0.5)


def test_input_errors():
    with pytest.raises(ValueError, match="differ"):
        metrics.relative_frobenius_error(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="inner dimensions"):
        metrics.normwise_error_inf(C, C, A, np.ones((3, 2)))
    with pytest.raises(TypeError, match="real"):
        metrics.relative_frobenius_error(np.ones(2) * 1j, np.ones(2))
    with pytest.raises(ValueError, match="nonzero scale"):
        metrics.signed_error_stats(np.ones(2), np.zeros(2), scale="relative")


def test_infinite_errors_propagate_as_nan_without_a_warning():
    """Inf - Inf in the exact difference is NaN by design (it propagates to the error);
    numpy's 'invalid value' RuntimeWarning for it reached users of the metrics."""
    import warnings

    from workbench.numbers.metrics import _abs_diff

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m, _ = _abs_diff(np.array([np.inf, 1.0]), np.array([np.inf, 0.5]))
    assert np.isnan(m[0]) and m[1] == 0.5
