"""Input generators: determinism, the documented distributions, and clear errors."""

import subprocess
import sys

import numpy as np
import pytest

from workbench.numbers import formats, inputs


@pytest.mark.parametrize("name", sorted(inputs.GENERATORS))
def test_generators_are_deterministic_from_their_seed(name):
    gen = inputs.GENERATORS[name]
    a = gen((7, 5), 42)
    b = gen((7, 5), 42)
    c = gen((7, 5), 43)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (7, 5) and a.dtype == np.float64
    assert not np.array_equal(a, c, equal_nan=True)


def test_determinism_across_processes():
    code = ("from workbench import inputs; import numpy as np; "
            "A, B, C = inputs.matrices('log_uniform', 3, 4, 2, [5, 3, 4, 2], c={'generator': 'normal'}); "
            "print(repr(np.concatenate([A.ravel(), B.ravel(), C.ravel()]).tolist()))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(outs) == 1
    A, B, C = inputs.matrices("log_uniform", 3, 4, 2, [5, 3, 4, 2], c={"generator": "normal"})
    assert outs.pop().strip() == repr(np.concatenate([A.ravel(), B.ravel(), C.ravel()]).tolist())


def test_normal_and_uniform_moments():
    x = inputs.normal(200_000, 1, mean=3.0, std=2.0)
    assert abs(x.mean() - 3.0) < 0.02 and abs(x.std() - 2.0) < 0.02
    u = inputs.uniform(200_000, 1, low=2.0, high=6.0)
    assert u.min() >= 2.0 and u.max() < 6.0
    assert abs(u.mean() - 4.0) < 0.02 and abs(u.var() - 16 / 12) < 0.02


def test_log_uniform_is_figure7_distribution():
    x = inputs.log_uniform(200_000, 7)
    e = np.log10(np.abs(x))
    assert e.min() >= -10 and e.max() < 10
    # U(-10, 10): mean 0, variance 20^2 / 12, each decade about 5% of the entries
    assert abs(e.mean()) < 0.1 and abs(e.var() - 400 / 12) < 0.3
    counts = np.histogram(e, bins=20, range=(-10, 10))[0] / x.size
    assert np.all(np.abs(counts - 0.05) < 0.004)
    assert abs(np.mean(x > 0) - 0.5) < 0.01


def test_exponent_range_type1_and_explicit():
    x = inputs.exponent_range(100_000, 3, type="type1")
    a = np.abs(x)
    assert a.min() >= 2.0 ** -15 and a.max() < 2.0 ** 15
    exps = np.floor(np.log2(a)).astype(int)
    assert set(exps) == set(range(-15, 15))  # all 30 binades of the range occur
    y = inputs.exponent_range(10_000, 3, emin=-2, emax=-2)
    assert np.all((np.abs(y) >= 0.25) & (np.abs(y) < 0.5))
    with pytest.raises(ValueError, match="emin=3, emax=1"):
        inputs.exponent_range(4, 0, emin=3, emax=1)
    with pytest.raises(ValueError, match="type='type9'"):
        inputs.exponent_range(4, 0, type="type9")


def test_dnn_like_outlier_rate():
    n = 1_000_000
    x = inputs.dnn_like(n, 11)
    # P(|x| > 5): standard part ~5.7e-7; outliers (p = 0.001) of std ~10.05 exceed 5 with
    # probability P(|z| > 5 / 10.05) = 0.619 -> expected count about 619 + 0.6 = 620.
    big = np.count_nonzero(np.abs(x) > 5)
    assert 520 < big < 720
    assert abs(np.std(x) - np.sqrt(1 + 0.001 * 100)) < 0.01
    assert np.count_nonzero(np.abs(inputs.dnn_like(n, 11, outlier_probability=0.0)) > 6) < 5


def test_random_bits_covers_every_class():
    x = inputs.random_bits(200_000, 5, fmt="fp8_e5m2")
    # fp8 E5M2 has 256 encodings: 6 NaN, 2 Inf, 6 nonzero subnormals x 1, zeros +-0
    assert abs(np.mean(np.isnan(x)) - 6 / 256) < 0.003
    assert abs(np.mean(np.isinf(x)) - 2 / 256) < 0.002
    sub = (x != 0) & (np.abs(x) < 2.0 ** -14)
    assert abs(np.mean(sub) - 6 / 256) < 0.003
    finite = x[np.isfinite(x)]
    assert len(np.unique(finite)) == 247  # 248 finite encodings, +0 and -0 compare equal
    assert np.all(formats.is_representable(finite, "fp8_e5m2"))
    y = inputs.random_bits(50_000, 5, fmt="fp16", specials=False)
    assert np.all(np.isfinite(y)) and np.abs(y).max() > 30000


@pytest.mark.parametrize("condition", [1e3, 1e8, 1e14])
@pytest.mark.parametrize("k", [3, 8, 100])
def test_adversarial_condition_numbers(condition, k):
    A, B = inputs.adversarial(12, k, 9, 2, condition=condition)
    assert A.shape == (12, k) and B.shape == (k, 9)
    # computed independently of the generator: sum |a b| / |sum a b| with exact sums
    from fractions import Fraction
    num = np.abs(A) @ np.abs(B)
    exact = np.array([[float(sum(Fraction(a) * Fraction(b) for a, b in zip(A[i], B[:, j])))
                       for j in range(9)] for i in range(12)])
    cond = num / np.abs(exact)
    assert condition / 3 < np.median(cond) < condition * 3


def test_adversarial_in_a_format_cancels_exactly():
    A, B = inputs.adversarial(8, 40, 8, 0, condition=1e4, fmt="fp16")
    assert np.all(formats.is_representable(A, "fp16")) and np.all(formats.is_representable(B, "fp16"))
    cond = inputs.condition_numbers(A, B)
    assert np.median(cond) > 1e3
    with pytest.raises(ValueError, match="k=2"):
        inputs.adversarial(2, 2, 2, 0)


def test_matrices_streams_and_errors():
    A, B, C = inputs.matrices("normal", 3, 4, 5, 9)
    A2, B2, C2 = inputs.matrices("normal", 3, 4, 5, 9, c={"generator": "uniform"})
    assert C is None and C2.shape == (3, 5)
    np.testing.assert_array_equal(A, A2)
    np.testing.assert_array_equal(B, B2)
    assert not np.array_equal(A[:3, :3], B[:3, :3])
    with pytest.raises(ValueError, match="generator='gauss'"):
        inputs.matrices("gauss", 2, 2, 2, 0)
    with pytest.raises(ValueError, match="k=0"):
        inputs.matrices("normal", 2, 0, 2, 0)
    with pytest.raises(ValueError, match="std=-1"):
        inputs.normal(3, 0, std=-1)


def test_inputs_import_nothing_above_formats():
    code = ("import sys, workbench.numbers.inputs; "
            "bad = [m for m in sys.modules if m.startswith(('workbench.engine', 'workbench.units.catalogue', "
            "'workbench.sweep', 'workbench.numbers.exact', 'algorithms', 'pandas', 'dask'))]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
