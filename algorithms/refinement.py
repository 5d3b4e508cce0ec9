"""Mixed-precision iterative refinement whose LU factorisation runs on a matrix unit.

LU-IR in two and three precisions (Carson & Higham, "Accelerating the solution of
linear systems by iterative refinement in three precisions", SIAM J. Sci. Comput.
40(2), 2018, Algorithm 1.1): the LU factors come from :func:`algorithms.lu` (u_f:
the unit, fp16/bf16 operands), the solution is held in the working precision u
(``working``, fp64 by default) and the residual is computed in u_r (``residual``).
GMRES-IR (Carson & Higham, SIAM J. Sci. Comput. 39(6), 2017, and 2018, Algorithm
3.1): each correction solves the left-preconditioned system
``U^-1 L^-1 P A d = U^-1 L^-1 P r`` by GMRES, here in the working precision with
the preconditioner applied in the working precision (the "u_g = u_p = u" variant
that Haidar et al. 2018/2020 run on tensor cores).

Per iteration both record the iterate, its normwise backward error
``||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf)`` (Rigal & Gaches; the residual
computed exactly and rounded once) and its forward error
``||x - x*||_inf / ||x*||_inf`` against a reference x* (:func:`reference_solution`:
fp64 LU refined with exact residuals, i.e. x* to about u = 2^-53 while
kappa(A) u << 1; give ``x_exact`` to use another, e.g. an mpmath solution).

Stopping tests (checked in this order each step):

* converged (backward): ``||r_i||_inf <= sqrt(n) ||x_i||_inf ||A||_inf u`` with the
  residual as the method computes it - the test of LAPACK's DSGESV and MAGMA's
  mixed-precision solvers that Haidar et al. (SC18, Section V) use;
* converged (correction): ``||d_i||_inf <= u ||x_{i+1}||_inf`` (Carson & Higham 2018,
  Section 8);
* diverged: a non-finite iterate, or ``||d_i|| >= ||d_{i-1}||`` for i >= 1 (the
  correction grows);
* stagnated: ``||d_i|| > rho_max ||d_{i-1}||`` (too little progress; Demmel et al.,
  ACM TOMS 32(2), 2006, rho_thresh), default ``rho_max = 0.9``;
* ``max_iterations`` corrections without any of these: status "max_iterations".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import scipy.linalg

from workbench.numbers import formats
from workbench.units import UnitSpec

from .lu import Factorization, FactorizationError, finite, lu, rounder

__all__ = ["RESIDUALS", "WORKING", "RefinementResult", "gmres_ir", "lu_ir", "reference_solution", "solve_system"]

#: Working precisions u of the solution and the refinement (the matrix must be representable in them).
WORKING = ("fp32", "fp64")
#: Residual precisions u_r: ``"exact"`` = the residual computed exactly and rounded once to
#: fp64 (a stand-in for Carson & Higham's u_r = u^2).
RESIDUALS = ("fp32", "fp64", "exact")


@dataclass(frozen=True)
class RefinementResult:
    """What :func:`lu_ir` and :func:`gmres_ir` return.

    ``x``: the last iterate (same shape as b).  ``iterations``: corrections applied.
    ``iterates[i]``, ``backward_errors[i]``, ``forward_errors[i]``: x_i and its
    errors for i = 0..iterations (x_0 is the LU solution).  ``inner_iterations[i]``:
    GMRES iterations of correction i (empty for LU-IR).  ``np.asarray(result)``
    is ``x``, so a sweep records the solution as its output D.
    """

    x: np.ndarray
    converged: bool
    status: str
    iterations: int
    backward_errors: np.ndarray
    forward_errors: np.ndarray
    iterates: np.ndarray
    inner_iterations: tuple[int, ...]
    factorization: Factorization = field(repr=False)
    reference: np.ndarray = field(repr=False)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self.x, dtype=dtype)


# ----------------------------------------------------------------- helpers
def _norm(v: np.ndarray) -> float:
    return float(np.max(np.abs(v))) if v.size else 0.0


def _exact_residual(A: np.ndarray, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """b - A x computed exactly and rounded once to fp64."""
    from workbench.numbers import exact

    D = cast(np.ndarray, exact.gemm(A, x[:, None], b[:, None], alpha=-1.0, beta=1.0))  # D alone: no return_exact
    return D[:, 0]


def reference_solution(A: np.typing.ArrayLike, b: np.typing.ArrayLike, *, max_iterations: int = 10) -> np.ndarray:
    """x* of A x = b to about fp64 accuracy: fp64 LU (LAPACK) and refinement whose
    residuals are computed exactly (:func:`workbench.numbers.exact.gemm`), stopped when the
    correction no longer changes x (Wilkinson's refinement with u_r << u; its limit
    is x* rounded to fp64 for kappa(A) u << 1, Higham 2002, Theorem 12.1)."""
    A = finite(np.asarray(A, dtype=np.float64), "A")
    b = finite(np.asarray(b, dtype=np.float64).reshape(-1), "b")
    getrf, = scipy.linalg.get_lapack_funcs(("getrf",), (A,))
    lu_, piv, info = getrf(A)   # (scipy.linalg.lu_factor would warn and go on at a zero pivot)
    if info > 0:
        raise FactorizationError("reference", "zero pivot", info - 1, info - 1, 0.0, "fp64",
                                 "A is singular in fp64 (LAPACK dgetrf), so the reference solution x* of the "
                                 "forward errors does not exist; pass x_exact= if A x = b has a solution")
    lu_piv = (lu_, piv)
    with np.errstate(over="ignore", invalid="ignore"):
        x = scipy.linalg.lu_solve(lu_piv, b, check_finite=False)
    if not np.isfinite(x).all():
        j = int(np.argmin(np.abs(np.diag(lu_))))
        raise ValueError(f"reference: A is numerically singular in fp64: the LAPACK LU's solution overflows "
                         f"(smallest pivot {float(lu_[j, j])!r} at step {j}), so the reference solution x* of "
                         "the forward errors cannot be computed; pass x_exact=")
    for _ in range(max_iterations):
        d = scipy.linalg.lu_solve(lu_piv, _exact_residual(A, x, b), check_finite=False)
        x_new = x + d
        if np.array_equal(x_new, x) or _norm(d) <= 2.0 ** -54 * _norm(x):
            return x_new
        x = x_new
    return x


def _problem(A: np.typing.ArrayLike, b: np.typing.ArrayLike, working: str, residual: str, max_iterations: int,
             rho_max: float) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    if working not in WORKING:
        raise ValueError(f"working={working!r}; expected one of {WORKING}")
    if residual not in RESIDUALS:
        raise ValueError(f"residual={residual!r}; expected one of {RESIDUALS}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1:
        raise ValueError(f"max_iterations={max_iterations!r}; expected a positive integer")
    if not 0 < rho_max < 1:
        raise ValueError(f"rho_max={rho_max!r}; expected a number in (0, 1)")
    A = np.asarray(A, dtype=np.float64)
    b_in = np.asarray(b, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix; got shape {A.shape}")
    if b_in.shape not in ((A.shape[0],), (A.shape[0], 1)):
        raise ValueError(f"b must have shape ({A.shape[0]},) or ({A.shape[0]}, 1); got {b_in.shape}")
    A = formats.check_representable(finite(A, "A"), working, "A")
    b_vec = formats.check_representable(finite(b_in, "b").reshape(-1), working, "b")
    return A, b_vec, b_in.shape


def _computed_residual(A: np.ndarray, x: np.ndarray, b: np.ndarray, residual: str, working: str) -> np.ndarray:
    """r = b - A x in precision u_r, rounded to the working precision."""
    if residual == "exact":
        r = _exact_residual(A, x, b)
    elif residual == "fp64":
        r = b - A @ x
    else:
        r = (b.astype(np.float32) - A.astype(np.float32) @ x.astype(np.float32)).astype(np.float64)
    return rounder(working)(r)


def _refine(A: np.typing.ArrayLike, b: np.typing.ArrayLike, factorize: Callable[[np.ndarray], Factorization],
            correction: Callable[[np.ndarray, Factorization, np.ndarray], tuple[np.ndarray, int | None]], *,
            working: str, residual: str, solve_precision: str, max_iterations: int, rho_max: float,
            x_exact: np.typing.ArrayLike | None) -> RefinementResult:
    A, b, shape = _problem(A, b, working, residual, max_iterations, rho_max)
    n = A.shape[0]
    if x_exact is not None:
        xs = finite(np.asarray(x_exact, dtype=np.float64).reshape(-1), "x_exact")
        if xs.shape != (n,):
            raise ValueError(f"x_exact must have {n} entries; got shape {np.shape(np.asarray(x_exact))}")
    F = factorize(A)    # first: a singular A is reported by the factorisation that meets it
    if x_exact is None:
        xs = reference_solution(A, b)
    norm_A, norm_b, norm_xs = float(np.max(np.abs(A).sum(axis=1))), _norm(b), _norm(xs)
    with np.errstate(over="ignore", invalid="ignore"):   # a non-finite iterate is the status "diverged"
        return _iterate(A, b, shape, F, xs, correction, working=working, residual=residual,
                        solve_precision=solve_precision, max_iterations=max_iterations, rho_max=rho_max,
                        norms=(norm_A, norm_b, norm_xs))


def _iterate(A: np.ndarray, b: np.ndarray, shape: tuple[int, ...], F: Factorization, xs: np.ndarray,
             correction: Callable[[np.ndarray, Factorization, np.ndarray], tuple[np.ndarray, int | None]], *,
             working: str, residual: str, solve_precision: str, max_iterations: int, rho_max: float,
             norms: tuple[float, float, float]) -> RefinementResult:
    """The refinement loop of :func:`_refine` (its stopping tests: the module docstring)."""
    n = A.shape[0]
    u = 2.0 ** -formats.format(working).p
    wr = rounder(working)
    norm_A, norm_b, norm_xs = norms

    def errors(x: np.ndarray) -> tuple[float, float]:
        if not np.isfinite(x).all():
            return np.inf, np.inf
        eta = _norm(_exact_residual(A, x, b)) / (norm_A * _norm(x) + norm_b)
        return eta, _norm(x - xs) / norm_xs

    x = wr(_scaled_solve(b, F, solve_precision))
    iterates: list[np.ndarray] = [x]
    be: list[float] = []
    fe: list[float] = []
    inner: list[int | None] = []
    for err, hist in zip(errors(x), (be, fe)):
        hist.append(err)
    d_prev = np.inf
    status = "max_iterations" if np.isfinite(x).all() else "diverged"
    while status == "max_iterations" and len(inner) < max_iterations:
        r = _computed_residual(A, x, b, residual, working)
        if _norm(r) <= np.sqrt(n) * _norm(x) * norm_A * u:
            status = "converged"
            break
        d, its = correction(r, F, A)
        x = wr(x + d)
        iterates.append(x)
        inner.append(its)
        for err, hist in zip(errors(x), (be, fe)):
            hist.append(err)
        dn = _norm(d)
        if not np.isfinite(x).all() or not np.isfinite(dn):
            status = "diverged"
        elif dn <= u * _norm(x):
            status = "converged"
        elif dn >= d_prev:
            status = "diverged"
        elif dn > rho_max * d_prev:
            status = "stagnated"
        d_prev = dn
    return RefinementResult(
        x=x.reshape(shape), converged=status == "converged", status=status, iterations=len(inner),
        backward_errors=np.array(be), forward_errors=np.array(fe), iterates=np.array(iterates),
        inner_iterations=tuple(i for i in inner if i is not None), factorization=F, reference=xs)


def _scaled_solve(r: np.ndarray, F: Factorization, precision: str) -> np.ndarray:
    """U^-1 L^-1 P r with r scaled to unit infinity norm first (so that an fp32 solve
    neither underflows nor overflows), and the scale put back in fp64."""
    s = _norm(r)
    if s == 0:
        return np.zeros_like(r)
    return s * F.solve(r / s, precision)


def _factorizer(model: UnitSpec | None, block: int, lu_options: dict[str, Any] | None
                ) -> Callable[[np.ndarray], Factorization]:
    options = dict(lu_options or {})
    return lambda A: lu(A, model=model, block=block, **options)


# ----------------------------------------------------------------- LU-IR
def lu_ir(A: np.typing.ArrayLike, b: np.typing.ArrayLike, *, model: UnitSpec | None, block: int = 128,
          working: str = "fp64", residual: str = "fp64", solve_precision: str = "fp32", max_iterations: int = 50,
          rho_max: float = 0.9, x_exact: np.typing.ArrayLike | None = None,
          lu_options: dict[str, Any] | None = None) -> RefinementResult:
    """LU-based iterative refinement with the factorisation on ``model``.

    Carson & Higham (2018), Algorithm 1.1, with (u_f, u, u_r) = (the unit, ``working``,
    ``residual``); the defaults (fp16 unit, fp64, fp64) are Haidar et al.'s
    FP16-TC-IR (SC18).  x_0 and every correction d_i solve with the fp32 factors
    in ``solve_precision`` (Haidar et al.: sgetrs), the residual scaled to unit
    norm first.  Textbook behaviour: converges for kappa(A) u_f << 1 (u_f = 2^-11
    for fp16 operands), to a backward error of order u, and a forward error of order
    u for u_r = u^2 (``residual="exact"``) or kappa(A) u for u_r = u.
    ``model=None``: idealised arithmetic (:func:`algorithms.lu`); ``lu_options`` go
    to :func:`algorithms.lu` (``precision``, ``update_c``, ``unit_format``).
    """
    def correction(r: np.ndarray, F: Factorization, _A: np.ndarray) -> tuple[np.ndarray, None]:
        return _scaled_solve(r, F, solve_precision), None

    return _refine(A, b, _factorizer(model, block, lu_options), correction, working=working, residual=residual,
                   solve_precision=solve_precision, max_iterations=max_iterations, rho_max=rho_max,
                   x_exact=x_exact)


# ----------------------------------------------------------------- GMRES-IR
def gmres(apply: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, *, tol: float, max_iterations: int
          ) -> tuple[np.ndarray, int]:
    """GMRES from x_0 = 0 (Saad & Schultz, SIAM J. Sci. Stat. Comput. 7(3), 1986) in
    fp64: Arnoldi by classical Gram-Schmidt applied twice (Giraud, Langou & Rozloznik
    2005: as orthogonal as modified Gram-Schmidt) and Givens rotations; stops when
    the residual norm of the least-squares problem is at most ``tol * ||rhs||_2``.
    Returns (solution, iterations)."""
    n = rhs.shape[0]
    beta = float(np.linalg.norm(rhs))
    if beta == 0:
        return np.zeros(n), 0
    m = min(max_iterations, n)
    V = np.zeros((m + 1, n))
    H = np.zeros((m + 1, m))
    cs, sn = np.zeros(m), np.zeros(m)
    g = np.zeros(m + 1)
    g[0] = beta
    V[0] = rhs / beta
    k = 0
    for k in range(1, m + 1):
        w = apply(V[k - 1])
        h = np.zeros(k)
        for _ in range(2):
            c = V[:k] @ w
            w = w - c @ V[:k]
            h += c
        h_next = float(np.linalg.norm(w))
        for i in range(k - 1):
            h[i], h[i + 1] = cs[i] * h[i] + sn[i] * h[i + 1], -sn[i] * h[i] + cs[i] * h[i + 1]
        rho = np.hypot(h[k - 1], h_next)
        cs[k - 1], sn[k - 1] = (1.0, 0.0) if rho == 0 else (h[k - 1] / rho, h_next / rho)
        h[k - 1] = rho
        H[:k, k - 1] = h
        g[k], g[k - 1] = -sn[k - 1] * g[k - 1], cs[k - 1] * g[k - 1]
        if abs(g[k]) <= tol * beta or h_next == 0:
            break
        V[k] = w / h_next
    y = scipy.linalg.solve_triangular(H[:k, :k], g[:k], lower=False, check_finite=False)
    return y @ V[:k], k


def gmres_ir(A: np.typing.ArrayLike, b: np.typing.ArrayLike, *, model: UnitSpec | None, block: int = 128,
             working: str = "fp64", residual: str = "fp64", solve_precision: str = "fp32",
             max_iterations: int = 20, rho_max: float = 0.9, gmres_tol: float = 1e-6,
             gmres_max_iterations: int | None = None, x_exact: np.typing.ArrayLike | None = None,
             lu_options: dict[str, Any] | None = None) -> RefinementResult:
    """GMRES-based iterative refinement, left-preconditioned by the LU on ``model``.

    Carson & Higham (2017; 2018, Algorithm 3.1): x_0 from the LU factors; each
    correction solves ``M^-1 A d = M^-1 r`` (M^-1 = U^-1 L^-1 P applied in fp64 to
    the stored factors) by :func:`gmres` to relative tolerance ``gmres_tol`` in at
    most ``gmres_max_iterations`` (default n) iterations.  Textbook behaviour: with
    u_f = fp16 it converges well beyond kappa(A) ~ 1/u_f, where LU-IR fails.
    Other keywords as :func:`lu_ir`.
    """
    if not 0 < gmres_tol < 1:
        raise ValueError(f"gmres_tol={gmres_tol!r}; expected a number in (0, 1)")
    if gmres_max_iterations is not None and (isinstance(gmres_max_iterations, bool) or gmres_max_iterations < 1):
        raise ValueError(f"gmres_max_iterations={gmres_max_iterations!r}; expected a positive integer or None")

    def correction(r: np.ndarray, F: Factorization, A64: np.ndarray) -> tuple[np.ndarray, int]:
        s = _norm(r)
        if s == 0:
            return np.zeros_like(r), 0
        limit = A64.shape[0] if gmres_max_iterations is None else int(gmres_max_iterations)
        d, its = gmres(lambda v: F.solve(A64 @ v, "fp64"), F.solve(r / s, "fp64"), tol=gmres_tol,
                       max_iterations=limit)
        return s * d, its

    return _refine(A, b, _factorizer(model, block, lu_options), correction, working=working, residual=residual,
                   solve_precision=solve_precision, max_iterations=max_iterations, rho_max=rho_max,
                   x_exact=x_exact)


# ----------------------------------------------------------------- sweeps
def solve_system(A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *, model: UnitSpec | None,
                 solver: str = "lu_ir", **params: Any) -> RefinementResult:
    """A sweep algorithm (``algorithm = "algorithms.refinement:solve_system"``): solve
    ``A x = B`` (one right-hand side, B of shape (n, 1)) with ``solver`` ("lu_ir" or
    "gmres_ir") and ``params``; the result's ``x`` is the sweep's output D and the
    metrics of :mod:`workbench.sweep.measures` (``solver``) read the rest."""
    if C is not None:
        raise ValueError("solve_system takes no C (the input's c table must be absent)")
    solvers = {"lu_ir": lu_ir, "gmres_ir": gmres_ir}
    if solver not in solvers:
        raise ValueError(f"solver={solver!r}; expected one of {sorted(solvers)}")
    return solvers[solver](A, B, model=model, **params)
