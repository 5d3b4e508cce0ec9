"""Singular, near-singular and NaN/Inf systems (issue 41, item 5): ``lu``, ``cholesky``,
``lu_ir`` and ``gmres_ir`` report the pivot that stops them (which step, which column)
with :class:`algorithms.FactorizationError`, name a NaN or Inf input, and leak no
library warning (every test here turns warnings into errors).

Oracles, none of them the code under test:

* exact ranks and leading minors in rational arithmetic (``fractions``): LU with any row
  pivoting first meets a zero pivot at the first column that lies in the span of the
  columns before it, and Cholesky at the first non-positive leading principal minor
  (Sylvester), its pivot the ratio of two consecutive minors;
* the matrices are built so that every operation of the factorisation is exact in the
  storage format (A = P^T L U with dyadic L, |l_ij| <= 1/2 below the diagonal so partial
  pivoting has a unique choice, and power-of-two pivots), so the computed run is the
  exact one;
* numpy's float16 casts for where fp16 arithmetic overflows; numpy's float32 cast for
  what underflows; numpy's ``argwhere`` for the first NaN or Inf.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import algorithms
import workbench
from algorithms import FactorizationError
from algorithms.refinement import reference_solution
from workbench.numbers import inputs

pytestmark = pytest.mark.filterwarnings("error")   # a stray LinAlgWarning / RuntimeWarning fails

UNIT = workbench.preset("H100", "fp16", "fp32")
FUNCTIONS = {"lu": algorithms.lu, "cholesky": algorithms.cholesky, "lu_ir": algorithms.lu_ir,
             "gmres_ir": algorithms.gmres_ir}
F16 = np.float16      # numpy's IEEE binary16 cast (round to nearest even, overflow to Inf)


# ----------------------------------------------------------------- exact oracles
def _rank(rows: list[list[Fraction]]) -> int:
    """Rank by Gaussian elimination in rational arithmetic."""
    m = [r[:] for r in rows]
    rank, cols = 0, len(m[0]) if m else 0
    for c in range(cols):
        p = next((i for i in range(rank, len(m)) if m[i][c] != 0), None)
        if p is None:
            continue
        m[rank], m[p] = m[p], m[rank]
        for i in range(rank + 1, len(m)):
            f = m[i][c] / m[rank][c]
            m[i] = [a - f * b for a, b in zip(m[i], m[rank])]
        rank += 1
    return rank


def _det(M: list[list[Fraction]]) -> Fraction:
    """Determinant by rational elimination."""
    m = [r[:] for r in M]
    det = Fraction(1)
    for c in range(len(m)):
        p = next((i for i in range(c, len(m)) if m[i][c] != 0), None)
        if p is None:
            return Fraction(0)
        if p != c:
            m[c], m[p] = m[p], m[c]
            det = -det
        det *= m[c][c]
        for i in range(c + 1, len(m)):
            f = m[i][c] / m[c][c]
            m[i] = [a - f * b for a, b in zip(m[i], m[c])]
    return det


def _frac(A: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in A]


def first_dependent_column(A: np.ndarray) -> int | None:
    """The first j with rank(A[:, :j+1]) <= j (where LU with row pivoting stops), exactly."""
    cols = _frac(A.T)
    for j in range(A.shape[1]):
        if _rank(cols[:j + 1]) <= j:
            return j
    return None


def first_nonpositive_minor(A: np.ndarray) -> tuple[int, Fraction] | None:
    """(j, det_{j+1} / det_j) for the first leading minor det_{j+1} <= 0, exactly."""
    F = _frac(A)
    prev = Fraction(1)
    for j in range(A.shape[0]):
        d = _det([row[:j + 1] for row in F[:j + 1]])
        if d <= 0:
            return j, d / prev
        prev = d
    return None


# ----------------------------------------------------------------- matrices
@st.composite
def dyadic_lu(draw):
    """A = P^T L U, L unit lower with entries in {0, +-1/4, +-1/2}, U upper with small
    integers and diagonal in {+-1, +-2, +-4}, some diagonal entries zero (or none)."""
    n = draw(st.integers(1, 7))
    L = np.eye(n)
    U = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i > j:
                L[i, j] = draw(st.sampled_from([0.0, 0.25, -0.25, 0.5, -0.5]))
            elif i < j:
                U[i, j] = draw(st.integers(-3, 3))
            else:
                U[i, i] = draw(st.sampled_from([1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 0.0]))
    perm = np.array(draw(st.permutations(range(n))))
    A = np.empty((n, n))
    A[perm] = L @ U
    return A


@st.composite
def dyadic_ldl(draw):
    """A = L D L^T, L unit lower with entries in {0, +-1/2, +-1}, D in {1/4, 1, 4} or <= 0."""
    n = draw(st.integers(1, 7))
    L = np.eye(n)
    for i in range(n):
        for j in range(i):
            L[i, j] = draw(st.sampled_from([0.0, 0.5, -0.5, 1.0, -1.0]))
    d = [draw(st.sampled_from([0.25, 1.0, 4.0, 4.0, 1.0, 0.0, -1.0])) for _ in range(n)]
    return (L * d) @ L.T


# ----------------------------------------------------------------- LU
@settings(max_examples=60, deadline=None)
@given(A=dyadic_lu(), precision=st.sampled_from(["fp16", "fp32", "fp64"]), block=st.integers(1, 8))
def test_lu_reports_the_first_zero_pivot_of_exact_arithmetic(A, precision, block):
    j0 = first_dependent_column(A)
    if j0 is None:
        F = algorithms.lu(A, model=None, block=block, precision=precision)
        np.testing.assert_array_equal(F.L @ F.U, A[F.perm])   # every operation exact: the exact factors
        return
    with pytest.raises(FactorizationError) as info:
        algorithms.lu(A, model=None, block=block, precision=precision)
    err = info.value
    assert (err.algorithm, err.reason, err.step, err.column, err.pivot) == ("lu", "zero pivot", j0, j0, 0.0)
    assert f"step {j0} (column {j0})" in str(err) and isinstance(err, ValueError)


@settings(max_examples=15, deadline=None)
@given(A=dyadic_lu(), block=st.integers(1, 4), solver=st.sampled_from(["lu_ir", "gmres_ir"]))
def test_refinement_on_a_unit_reports_the_zero_pivot_not_a_nan(A, block, solver):
    j0 = first_dependent_column(A)
    b = np.ones(A.shape[0])
    if j0 is None:
        res = algorithms.SOLVERS[solver](A, b, model=UNIT, block=block)
        assert res.converged
        x = np.linalg.solve(A, b)
        np.testing.assert_allclose(res.x, x, rtol=0, atol=1e-9 * np.abs(x).max())
        return
    with pytest.raises(FactorizationError) as info:
        algorithms.SOLVERS[solver](A, b, model=UNIT, block=block)
    assert (info.value.algorithm, info.value.step, info.value.column) == ("lu", j0, j0)
    # the fp64 reference solution says the same, from LAPACK, with no LinAlgWarning
    with pytest.raises(FactorizationError) as ref:
        reference_solution(A, b)
    assert (ref.value.algorithm, ref.value.reason, ref.value.step) == ("reference", "zero pivot", j0)


def test_zero_matrix_lu_ir_names_the_pivot():
    """The issue's example: a zero matrix used to end in "B[0, 0] = nan" after a LinAlgWarning."""
    with pytest.raises(FactorizationError, match=r"lu: zero pivot at step 0 \(column 0\)"):
        algorithms.lu_ir(np.zeros((3, 3)), np.ones(3), model=None)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 6), data=st.data(), s=st.floats(8192, 65504), block=st.integers(1, 6),
       on_unit=st.booleans())
def test_lu_reports_a_non_finite_pivot_when_fp16_storage_overflows(n, data, s, block, on_unit):
    m = data.draw(st.integers(0, n - 2))
    s = float(F16(s))                                  # an fp16 value
    A = np.eye(n)
    A[m:m + 2, m:m + 2] = [[s, s], [-s, s]]            # the elimination forms s + s in fp16
    model = workbench.preset("V100", "fp16", "fp16") if on_unit else None
    with np.errstate(over="ignore"):
        overflows = not np.isfinite(F16(2 * s))
    if not overflows:
        F = algorithms.lu(A, model=model, block=block, precision="fp16")
        assert F.U[m + 1, m + 1] == 2 * s
        return
    with pytest.raises(FactorizationError) as info:
        algorithms.lu(A, model=model, block=block, precision="fp16")
    err = info.value
    assert (err.reason, err.step, err.column, err.pivot) == ("non-finite pivot", m + 1, m + 1, np.inf)


# ----------------------------------------------------------------- Cholesky
@settings(max_examples=60, deadline=None)
@given(A=dyadic_ldl(), precision=st.sampled_from(["fp16", "fp32", "fp64"]), block=st.integers(1, 8),
       on_unit=st.booleans())
def test_cholesky_reports_the_first_nonpositive_pivot_of_exact_arithmetic(A, precision, block, on_unit):
    model = UNIT if on_unit and precision == "fp32" else None
    bad = first_nonpositive_minor(A)
    if bad is None:
        F = algorithms.cholesky(A, model=model, block=block, precision=precision)
        np.testing.assert_array_equal(F.L @ F.L.T, A)
        return
    with pytest.raises(FactorizationError) as info:
        algorithms.cholesky(A, model=model, block=block, precision=precision)
    err = info.value
    j0, pivot = bad
    assert (err.algorithm, err.reason, err.step, err.column) == ("cholesky", "not positive definite", j0, j0)
    assert err.pivot == float(pivot)


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 7), v=st.floats(1.0, 65504), w=st.floats(-65504, 65504))
def test_cholesky_overflow_in_fp16_is_a_non_finite_pivot(t, v, w):
    tiny = 4.0 ** -t                                    # sqrt exact: 2^-t
    v, w = float(F16(v)), float(F16(w))
    A = np.array([[tiny, v], [v, w]])
    # the same three fp16 operations, rounded by numpy
    with np.errstate(over="ignore"):
        l10 = float(F16(v / 2.0 ** -t))
        pivot = float(F16(w - float(F16(l10 * l10))))
    if np.isfinite(pivot) and pivot > 0:
        algorithms.cholesky(A, model=None, precision="fp16")
        return
    with pytest.raises(FactorizationError) as info:
        algorithms.cholesky(A, model=None, precision="fp16")
    err = info.value
    assert (err.step, err.reason) == (1, "non-finite pivot" if not np.isfinite(pivot) else "not positive definite")
    assert err.pivot == pivot


# ----------------------------------------------------------------- NaN and Inf
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 5), data=st.data(), where=st.sampled_from(["A", "b"]),
       fn=st.sampled_from(["lu", "cholesky", "lu_ir", "gmres_ir"]))
def test_nan_or_inf_input_is_named(n, data, where, fn):
    A = np.eye(n) * 4 + 1
    b = np.ones(n)
    X = A if where == "A" or fn in ("lu", "cholesky") else b
    name = "A" if X is A else "b"
    cells = data.draw(st.lists(st.tuples(*[st.integers(0, d - 1) for d in X.shape]), min_size=1, max_size=3))
    for c in cells:
        X[c] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    first = tuple(int(i) for i in np.argwhere(~np.isfinite(X))[0])
    want = f"{name}[{', '.join(map(str, first))}] = {float(X[first])!r}; expected finite values"
    with pytest.raises(ValueError) as info:
        if fn in ("lu", "cholesky"):
            FUNCTIONS[fn](A, model=None)
        else:
            FUNCTIONS[fn](A, b, model=None)
    assert want in str(info.value) and not isinstance(info.value, FactorizationError)


# ----------------------------------------------------------------- near-singular
@pytest.mark.parametrize("kappa", [1e8, 1e12, 1e16, 1e20, 1e40])
@pytest.mark.parametrize("solver", ["lu_ir", "gmres_ir"])
def test_near_singular_systems_end_in_a_status_or_their_own_error(kappa, solver):
    n = 24
    A = inputs.randsvd(n, kappa, seed=3)
    b = np.random.default_rng(3).standard_normal(n)
    try:
        res = algorithms.SOLVERS[solver](A, b, model=None, block=8, max_iterations=10)
    except FactorizationError as err:           # the fp32 LU met a zero pivot, or fp64 LAPACK did
        assert err.reason == "zero pivot"
        return
    except ValueError as err:                   # the fp64 reference overflows
        assert "numerically singular in fp64" in str(err)
        return
    assert res.status in ("converged", "diverged", "stagnated", "max_iterations")
    if res.converged:   # converged means a backward error at the level of fp64 (the stopping test)
        assert res.backward_errors[-1] <= 1e-13
    assert len(res.backward_errors) == res.iterations + 1


def test_pivot_that_underflows_the_solve_precision_is_reported():
    A = np.diag([1.0, 1e-50])                  # an fp64 LU is fine; its fp32 solve is not
    assert np.float32(1e-50) == 0
    with pytest.raises(FactorizationError) as info:
        algorithms.lu_ir(A, np.ones(2), model=None, lu_options={"precision": "fp64"})
    err = info.value
    assert (err.algorithm, err.reason, err.step, err.precision) == ("solve", "zero pivot", 1, "fp32")
    res = algorithms.lu_ir(A, np.ones(2), model=None, lu_options={"precision": "fp64"}, solve_precision="fp64")
    assert res.converged and res.x[1] == pytest.approx(1e50, rel=1e-15)
