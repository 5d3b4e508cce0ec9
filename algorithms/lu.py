"""Blocked LU and Cholesky factorisations whose trailing updates run on a matrix unit.

Haidar, Tomov, Dongarra & Higham, "Harnessing GPU tensor cores for fast FP16
arithmetic to speed up mixed-precision iterative refinement solvers", SC18 (2018),
Section IV, and Haidar et al., Proc. R. Soc. A 476 (2020), Section 3 ("FP16-TC"):
the matrix is held in fp32; a right-looking blocked factorisation factors each
panel in fp32 on ordinary cores, solves for the block row of U (TRSM) in fp32, and
updates the trailing matrix with one GEMM whose operands (the panel's L21 and
U12) are rounded to fp16 and whose products are accumulated by the tensor core
into fp32 (``cublasGemmEx`` with alpha = -1, beta = 1).  Here that GEMM is
:func:`workbench.gemm` on any unit model, so the factorisation can be put on the
V100, H100, B200 or MI300X unit, or on a custom one.

Every choice that changes bits is a keyword (defaults: the papers'):

``precision``  (``"fp32"``) the IEEE format the matrix is stored in and in which the
               panel, the TRSM and the idealised accumulation run, round to nearest
               even, one rounding per operation, no FMA.  With a unit it must be the
               unit's output format (the update's C and D live there).
``update_c``   (``"epilogue"``) where the update's C = A22 lives: ``"epilogue"``:
               the unit computes P = L21 U12 from a zero accumulator and A22 - P is
               formed on ordinary cores in ``precision`` (the cuBLAS epilogue of
               ``cublasGemmEx(alpha=-1, beta=1)`` as in Haidar et al.);
               ``"accumulator"``: A22 is the accumulator input of the unit
               (D = (-L21) U12 + A22, a kernel that keeps C in the unit).
``block``      (128) panel width (LAPACK/MAGMA ``nb``).
operands       L21 and U12 are rounded (RNE) to the unit's input format once per
               update, when they are handed to the unit; the stored factors stay in
               ``precision`` (Haidar et al. 2018, Section IV-B).  A rounded operand
               that overflows raises ValueError (scale A first: Higham, Pranesh &
               Zounon 2019).

``model=None`` is idealised arithmetic: operands rounded to ``unit_format``
(``"fp16"`` or ``"bf16"``), exact products, recursive summation in ``precision``
with round to nearest even in K order - the "round-to-nearest everywhere" unit.
``unit_format="fp16", precision="fp16"`` is the all-half LU of Carson & Higham
(SIAM J. Sci. Comput. 40(2), 2018, u_f = half).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np
import scipy.linalg

from workbench.numbers import formats
from workbench import units
from workbench.engine.model import Model
from workbench.units import UnitSpec

from ._common import unit_gemm

__all__ = ["PRECISIONS", "UPDATE_C", "Factorization", "FactorizationError", "cholesky", "lu"]

#: Formats the stored matrix, panel and TRSM may use (IEEE arithmetic, RNE).
PRECISIONS = ("fp16", "bf16", "fp32", "fp64")
#: Where the trailing update's C lives (see the module docstring).
UPDATE_C = ("epilogue", "accumulator")
_UNIT_FORMATS = ("fp16", "bf16")

Rounder = Callable[[np.ndarray], np.ndarray]

#: What stops a factorisation (:attr:`FactorizationError.reason`).
BREAKDOWNS = ("zero pivot", "non-finite pivot", "not positive definite")


class FactorizationError(ValueError):
    """A factorisation that cannot go on: a zero pivot (LU: no non-zero entry left in
    the pivot column, i.e. A is singular in the arithmetic used), a non-finite pivot
    (NaN or Inf: the elimination overflowed the storage format) or, for Cholesky, a
    non-positive pivot (A is not positive definite in that arithmetic).

    ``algorithm``: who met it (``"lu"``, ``"cholesky"``, ``"reference"`` for the fp64
    LAPACK LU of :func:`algorithms.refinement.reference_solution`, ``"solve"`` for the
    factors cast to the triangular solves' precision); ``reason``: one of
    :data:`BREAKDOWNS`; ``step``: the elimination step (0-based; step j eliminates
    column j); ``column``: the column of A whose pivot it is; ``pivot``: its value;
    ``precision``: the arithmetic.  A ValueError, so callers that catch bad input
    catch it too.
    """

    def __init__(self, algorithm: str, reason: str, step: int, column: int, pivot: float, precision: str,
                 advice: str = "") -> None:
        self.algorithm, self.reason, self.precision = algorithm, reason, precision
        self.step, self.column, self.pivot = int(step), int(column), float(pivot)
        super().__init__(f"{algorithm}: {reason} at step {self.step} (column {self.column}): the pivot is "
                         f"{self.pivot!r} in {precision}{'; ' + advice if advice else ''}")


def rounder(precision: str) -> Rounder:
    """Round-to-nearest-even into ``precision`` of float64 values, as an array function.

    One float64 operation on two values of a format with p <= 26 bits followed by this
    rounding is the correctly rounded operation in that format (double rounding is
    innocuous when 53 >= 2p + 2: Figueroa, SIGNUM Newsl. 30(3), 1995), so the panel
    arithmetic below is IEEE arithmetic in ``precision``.
    """
    if precision == "fp64":
        return lambda x: x
    if precision == "fp32":
        return lambda x: x.astype(np.float32).astype(np.float64)
    return lambda x: formats.round(x, precision)


@dataclass(frozen=True)
class Factorization:
    """Result of :func:`lu` (``P A = L U``) or :func:`cholesky` (``A = L L^T``, U = L^T).

    ``L``, ``U``: float64 arrays holding values of ``precision``; ``perm``: row order
    with ``A[perm] ~ L @ U`` (the identity for Cholesky).  ``solve`` applies
    ``U^-1 L^-1 P`` to vectors in a stated precision.
    """

    L: np.ndarray
    U: np.ndarray
    perm: np.ndarray
    unit_format: str
    precision: str
    block: int
    update_c: str
    model: Model | None
    kind: str = "lu"

    def __iter__(self):
        """``L, U, perm = lu(A, ...)`` unpacks as the issue's (L, U, perm)."""
        return iter((self.L, self.U, self.perm))

    #: the factors converted to each solve precision and checked, made once per precision
    #: (GMRES-IR applies U^-1 L^-1 thousands of times: a copy of both factors per solve was
    #: most of its time at n = 2048)
    _solve_factors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, init=False, repr=False,
                                                                      compare=False)

    def __getstate__(self) -> dict:
        """Pickled without the converted factors (a process pool sends only L, U, perm)."""
        return {**self.__dict__, "_solve_factors": {}}

    def _factors_in(self, precision: str) -> tuple[np.ndarray, np.ndarray]:
        """(L, U) in ``precision``, their diagonals checked (a pivot out of its range raises)."""
        cached = self._solve_factors.get(precision)
        if cached is not None:
            return cached
        dt = {"fp32": np.float32, "fp64": np.float64}.get(precision)
        if dt is None:
            raise ValueError(f"precision={precision!r}: the triangular solves run in 'fp32' or 'fp64'")
        with np.errstate(over="ignore", under="ignore"):
            Ld, Ud = self.L.astype(dt, copy=False), self.U.astype(dt, copy=False)
        for T, stored in ((Ud, self.U), (Ld, self.L)):
            d = np.diag(T)
            bad = np.flatnonzero(~np.isfinite(d) | (d == 0))
            if bad.size:  # a stored pivot that under- or overflows the solve's precision
                j = int(bad[0])
                raise FactorizationError("solve", "zero pivot" if d[j] == 0 else "non-finite pivot", j, j, d[j],
                                         precision, f"the stored pivot {float(stored[j, j])!r} is out of the "
                                         f"range of {precision}; solve in 'fp64'")
        self._solve_factors[precision] = (Ld, Ud)
        return Ld, Ud

    def solve(self, r: np.ndarray, precision: str = "fp64") -> np.ndarray:
        """``U^-1 L^-1 r[perm]`` by forward and back substitution (BLAS trsv) in
        ``precision`` (``"fp32"``: the factors and r in single, as MAGMA's
        ``sgetrs`` in Haidar et al.; ``"fp64"``: the factors' values in double)."""
        Ld, Ud = self._factors_in(precision)
        rp = np.asarray(r, dtype=np.float64)[self.perm].astype(Ld.dtype)
        y = scipy.linalg.solve_triangular(Ld, rp, lower=True, unit_diagonal=self.kind != "cholesky",
                                          check_finite=False)
        z = scipy.linalg.solve_triangular(Ud, y, lower=False, check_finite=False)
        return z.astype(np.float64)


# ----------------------------------------------------------------- checks
def _square(A: np.typing.ArrayLike) -> np.ndarray:
    arr = np.asarray(A)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"A must hold real numbers; got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(f"A must be a non-empty square matrix; got shape {arr.shape}")
    return finite(arr, "A")


def finite(X: np.ndarray, name: str) -> np.ndarray:
    """``X`` if it holds no NaN or Inf, else a ValueError naming the first such entry."""
    if not np.isfinite(X).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(X))[0])
        raise ValueError(f"{name}[{', '.join(map(str, where))}] = {float(X[where])!r}; expected finite values "
                         "(no NaN or Inf)")
    return X


def _settings(model: Model | None, unit_format: str | None, precision: str, update_c: str,
              block: int, name: str) -> str:
    """Validate the keywords; return the unit's input format."""
    if precision not in PRECISIONS:
        raise ValueError(f"{name}: precision={precision!r}; expected one of {PRECISIONS}")
    if update_c not in UPDATE_C:
        raise ValueError(f"{name}: update_c={update_c!r}; expected one of {UPDATE_C}")
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"{name}: block={block!r}; expected a positive integer")
    if model is None:
        fin = "fp16" if unit_format is None else unit_format
        if fin not in _UNIT_FORMATS:
            raise ValueError(f"{name}: unit_format={unit_format!r}; expected one of {_UNIT_FORMATS}")
        return fin
    if not isinstance(model, Model):
        raise ValueError(f"{name}: model= must be None (idealised) or a unit from workbench.preset(...) / "
                         f"workbench.custom_model(...); got {type(model).__name__}")
    fin = formats.format(model.in_format).name
    fout = formats.format(model.out_format).name
    if unit_format is not None and unit_format != fin:
        raise ValueError(f"{name}: unit_format={unit_format!r} but the model's input format is {fin!r}")
    if fout != precision:
        raise ValueError(f"{name}: the unit writes {fout} but precision={precision!r}; the update's C and D "
                         f"live in the stored matrix, so choose precision={fout!r} or a unit with out_format "
                         f"{precision!r}")
    if model.scale_format is not None:
        raise ValueError(f"{name}: block-scaled unit kinds ({model.kind}) are not supported")
    return fin


#: Storage precisions numpy computes in natively: IEEE binary32/binary64 operations are
#: correctly rounded (round to nearest even), so the panel and the TRSM run on the stored
#: array itself, with the same bits as one float64 operation then :func:`rounder` (Figueroa
#: 1995, as :func:`rounder` says) and none of its conversions.
_NATIVE = {"fp32": np.float32, "fp64": np.float64}


def _store(A: np.ndarray, precision: str) -> tuple[np.ndarray, Rounder]:
    """A rounded to the storage precision (the first step of the algorithm), and the
    rounding each panel and TRSM operation then needs: the working array is of
    ``precision``'s own dtype where numpy has one (:data:`_NATIVE`; no rounding to add),
    else float64 values of ``precision`` (:func:`rounder` after each operation)."""
    with np.errstate(over="ignore"):
        W = rounder(precision)(A).copy()
    if not np.isfinite(W).all():
        i, j = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(f"A[{i}, {j}] = {A[i, j]!r} overflows {precision}; scale A first")
    if precision in _NATIVE:
        return W.astype(_NATIVE[precision]), _exact
    return W, rounder(precision)


def _exact(x: np.ndarray) -> np.ndarray:
    """No rounding: the operation that made ``x`` already rounded to the working dtype."""
    return x


def _rank1_update(X: np.ndarray, x: np.ndarray, y: np.ndarray, rnd: Rounder) -> None:
    """``X <- fl(X - fl(x y^T))`` in place (a view of the working array), each operation
    rounded by ``rnd`` - in the working dtype itself where it is ``precision``'s own."""
    P = rnd(np.multiply.outer(x, y))
    np.subtract(X, P, out=X)
    if rnd is not _exact:
        X[...] = rnd(X)


def _to_unit(X: np.ndarray, fmt: str, what: str) -> np.ndarray:
    """An update operand rounded (RNE) to the unit's input format; overflow is an error.
    (An entry that is already NaN or Inf - the elimination overflowed ``precision`` -
    goes through: it reaches a later pivot, which reports it.)"""
    Xh = formats.round(X, fmt)
    if not np.isfinite(Xh).all() and (bad := ~np.isfinite(Xh) & np.isfinite(X)).any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{what} entry {float(X[i, j])!r} overflows {fmt} when rounded for the unit; scale A first "
                         "(Higham, Pranesh & Zounon, SIAM J. Sci. Comput. 41(4), 2019)")
    return Xh


# ----------------------------------------------------------------- the update
def _idealised_update(C: np.ndarray, Lh: np.ndarray, Uh: np.ndarray, precision: str, update_c: str) -> np.ndarray:
    """C - Lh @ Uh with exact products summed recursively in K order, RNE in ``precision``."""
    if precision in ("fp32", "fp64"):
        dt = np.float32 if precision == "fp32" else np.float64
        Lc: np.ndarray = Lh.astype(dt)  # products of fp16/bf16 values are exact in fp32
        Uc: np.ndarray = Uh.astype(dt)
        acc: np.ndarray
        if update_c == "accumulator":
            acc = C.astype(dt)
            for k in range(Lc.shape[1]):
                acc -= np.multiply.outer(Lc[:, k], Uc[k])
            return acc.astype(np.float64)
        acc = np.zeros(C.shape, dtype=dt)
        for k in range(Lc.shape[1]):
            acc += np.multiply.outer(Lc[:, k], Uc[k])
        return (C.astype(dt) - acc).astype(np.float64)
    rnd = rounder(precision)
    acc = C.copy() if update_c == "accumulator" else np.zeros_like(C)
    sign = -1.0 if update_c == "accumulator" else 1.0
    for k in range(Lh.shape[1]):
        acc = rnd(acc + sign * np.multiply.outer(Lh[:, k], Uh[k]))
    return acc if update_c == "accumulator" else rnd(C - acc)


def trailing_update(C: np.ndarray, L21: np.ndarray, U12: np.ndarray, *, model: Model | None, unit_format: str,
                    precision: str, update_c: str, device: str = "cpu") -> np.ndarray:
    """``C - L21 @ U12`` as the factorisation's update computes it: operands rounded to
    ``unit_format`` once, then one :func:`workbench.gemm` on the whole trailing block
    (or the idealised recursive sum when ``model`` is None), run on ``device``."""
    Lh = _to_unit(np.asarray(L21, dtype=np.float64), unit_format, "L21")
    Uh = _to_unit(np.asarray(U12, dtype=np.float64), unit_format, "U12")
    if model is None:
        return _idealised_update(np.asarray(C, dtype=np.float64), Lh, Uh, precision, update_c)
    if update_c == "accumulator":
        return unit_gemm(-Lh, Uh, C, model=model, device=device)
    # The epilogue of gemm(Lh, Uh, C, alpha=-1, beta=1) is fl(C - P) with P the unit's
    # product from a zero accumulator; forming it here skips the re-check and re-rounding
    # of C and the rounding of -P that gemm's general epilogue does (same bits: the test's
    # per-tile reference calls gemm with alpha=-1, beta=1).  Where C and P are both in
    # ``precision``'s own dtype the subtraction is that IEEE operation itself.
    P = unit_gemm(Lh, Uh, None, model=model, device=device)
    if C.dtype == P.dtype == _NATIVE.get(precision):
        return C - P
    return rounder(precision)(np.asarray(C, dtype=np.float64) - np.asarray(P, dtype=np.float64))


# ----------------------------------------------------------------- LU
def _lu_panel(W: np.ndarray, perm: np.ndarray, k: int, e: int, rnd: Rounder, precision: str) -> None:
    """Unblocked right-looking LU with partial pivoting of columns k..e-1 (rows k..n-1),
    in place; pivot rows are swapped across the whole matrix (LAPACK getf2 + laswp).
    A zero or non-finite pivot raises :class:`FactorizationError` (argmax picks a NaN
    or an Inf first, so any non-finite entry left in the column is its pivot).  A working
    array of ``precision``'s own dtype runs in one compiled pass (:func:`_lu_panel_native`)."""
    if rnd is _exact:
        j, p = _lu_panel_native(W, perm, k, e)
        if j >= 0:
            _raise_pivot(W, perm, j, p, precision)
        return
    for j in range(k, e):
        p = j + int(np.argmax(np.abs(W[j:, j])))
        if not np.isfinite(W[p, j]) or W[p, j] == 0:
            _raise_pivot(W, perm, j, p, precision)
        if p != j:
            W[[j, p]] = W[[p, j]]
            perm[[j, p]] = perm[[p, j]]
        W[j + 1:, j] = rnd(W[j + 1:, j] / W[j, j])
        if j + 1 < e:
            _rank1_update(W[j + 1:, j + 1:e], W[j + 1:, j], W[j, j + 1:e], rnd)


def _raise_pivot(W: np.ndarray, perm: np.ndarray, j: int, p: int, precision: str) -> None:
    """The :class:`FactorizationError` of step ``j``, whose pivot W[p, j] is zero or not finite."""
    if not np.isfinite(W[p, j]):
        raise FactorizationError("lu", "non-finite pivot", j, j, W[p, j], precision,
                                 f"the elimination overflowed {precision} (row {int(perm[p])} of A); "
                                 "scale A by a power of two or store it in a wider precision")
    raise FactorizationError("lu", "zero pivot", j, j, 0.0, precision,
                             f"A is singular in {precision} arithmetic: nothing non-zero is left in "
                             f"column {j} once the columns before it are eliminated")


@numba.njit(cache=True)
def _lu_panel_native(W, perm, k, e):  # type: ignore[no-untyped-def]
    """:func:`_lu_panel` on a float32 or float64 working array, every operation that dtype's
    own IEEE operation (numba types float32 op float32 as float32 and contracts nothing into
    an FMA), in the numpy loop's order: per column the pivot as ``argmax`` picks it (the
    first NaN, else the first largest magnitude), the row swap, the multipliers, then the
    rank-1 update of the panel, each element's updates in column order.  Returns the step
    and row of the first zero or non-finite pivot, (-1, -1) where there is none."""
    n, m = W.shape
    for j in range(k, e):
        p = j
        best = abs(W[j, j])
        if best == best:
            for i in range(j + 1, n):
                v = abs(W[i, j])
                if v != v:
                    p = i
                    break
                if v > best:
                    best = v
                    p = i
        piv = W[p, j]
        if piv == 0 or not np.isfinite(piv):
            return j, p
        if p != j:
            for c in range(m):
                t = W[j, c]
                W[j, c] = W[p, c]
                W[p, c] = t
            t2 = perm[j]
            perm[j] = perm[p]
            perm[p] = t2
        d = W[j, j]
        for i in range(j + 1, n):
            W[i, j] = W[i, j] / d
        for i in range(j + 1, n):
            x = W[i, j]
            for c in range(j + 1, e):
                W[i, c] = W[i, c] - x * W[j, c]
    return -1, -1


def _unit_lower_trsm(W: np.ndarray, k: int, e: int, rnd: Rounder) -> None:
    """U12 = L11^-1 A12 for rows k..e-1, columns e.. (forward substitution by rank-1 updates)."""
    if rnd is _exact:
        _unit_lower_trsm_native(W, k, e)
        return
    for i in range(k, e - 1):
        _rank1_update(W[i + 1:e, e:], W[i + 1:e, i], W[i, e:], rnd)


@numba.njit(cache=True)
def _unit_lower_trsm_native(W, k, e):  # type: ignore[no-untyped-def]
    """:func:`_unit_lower_trsm` on a float32 or float64 working array in one compiled pass:
    row r takes the updates of rows k..r-1 in that order, each element's as the rank-1 loop
    gives them (row by row, so each row is read while it is in cache)."""
    m = W.shape[1]
    for r in range(k + 1, e):
        for i in range(k, r):
            x = W[r, i]
            for c in range(e, m):
                W[r, c] = W[r, c] - x * W[i, c]


def lu(A: np.typing.ArrayLike, *, model: UnitSpec | None, block: int = 128, precision: str = "fp32",
       update_c: str = "epilogue", unit_format: str | None = None, device: str = "cpu") -> Factorization:
    """Right-looking blocked LU with partial pivoting, trailing updates on ``model``.

    Haidar et al. (SC18, Section IV; Proc. R. Soc. A 2020, Section 3): A is rounded
    to ``precision`` (fp32), each panel of ``block`` columns is factored in
    ``precision`` with partial pivoting, the block row of U is formed by a unit
    lower triangular solve in ``precision``, and the trailing matrix is updated by
    one GEMM on the unit, ``A22 <- A22 - fl_in(L21) fl_in(U12)`` (``fl_in``: RNE to
    the unit's input format).  See the module docstring for every keyword;
    ``device`` (``"cpu"`` or ``"cuda"``) is where the unit's GEMMs run.

    Returns a :class:`Factorization` (it unpacks as ``L, U, perm``), with
    ``A[perm] ~ L @ U``.
    """
    model = None if model is None else units.resolve(model)
    fin = _settings(model, unit_format, precision, update_c, block, "lu")
    W, rnd = _store(_square(A), precision)
    n = W.shape[0]
    perm = np.arange(n)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by the pivot it reaches
        for k in range(0, n, block):
            e = min(k + block, n)
            _lu_panel(W, perm, k, e, rnd, precision)
            if e < n:
                _unit_lower_trsm(W, k, e, rnd)
                W[e:, e:] = trailing_update(W[e:, e:], W[e:, k:e], W[k:e, e:], model=model, unit_format=fin,
                                            precision=precision, update_c=update_c, device=device)
    L = np.tril(W, -1).astype(np.float64)
    np.fill_diagonal(L, 1.0)
    return Factorization(L=L, U=np.triu(W).astype(np.float64), perm=perm, unit_format=fin, precision=precision, block=int(block),
                         update_c=update_c, model=model)


# ----------------------------------------------------------------- Cholesky
def _cholesky_panel(W: np.ndarray, k: int, e: int, rnd: Rounder, precision: str) -> None:
    """Unblocked right-looking Cholesky of the diagonal block k..e-1 and L21 = A21 L11^-T
    (column by column: l_jj = sqrt(a_jj), l_ij = a_ij / l_jj, rank-1 update), in place
    on the lower triangle.  A non-finite or non-positive pivot a_jj raises
    :class:`FactorizationError`."""
    for j in range(k, e):
        if not np.isfinite(W[j, j]):
            raise FactorizationError("cholesky", "non-finite pivot", j, j, W[j, j], precision,
                                     f"the elimination overflowed {precision}; scale A by a power of two or "
                                     "store it in a wider precision")
        if not W[j, j] > 0:
            raise FactorizationError("cholesky", "not positive definite", j, j, W[j, j], precision,
                                     f"A is not positive definite in {precision} arithmetic (the leading "
                                     f"{j + 1}x{j + 1} block is not); factor it with lu")
        W[j, j] = rnd(np.sqrt(W[j, j:j + 1]))[0]
        W[j + 1:, j] = rnd(W[j + 1:, j] / W[j, j])
        if j + 1 < e:
            _rank1_update(W[j + 1:, j + 1:e], W[j + 1:, j], W[j + 1:e, j], rnd)


def cholesky(A: np.typing.ArrayLike, *, model: UnitSpec | None, block: int = 128, precision: str = "fp32",
             update_c: str = "epilogue", unit_format: str | None = None, device: str = "cpu") -> Factorization:
    """Right-looking blocked Cholesky ``A = L L^T`` with trailing updates on ``model``.

    The same scheme as :func:`lu` (Haidar et al. 2020 use it for symmetric positive
    definite systems, Section 3): the panel (diagonal block and the block column
    below it) is factored in ``precision``, and the trailing matrix is updated by
    one GEMM ``A22 <- A22 - fl_in(L21) fl_in(L21)^T`` on the unit over the whole
    square block (both triangles; only the lower one is read later).  Only the
    lower triangle of A is used.
    """
    model = None if model is None else units.resolve(model)
    fin = _settings(model, unit_format, precision, update_c, block, "cholesky")
    A64 = _square(A)
    W, rnd = _store(np.tril(A64) + np.tril(A64, -1).T, precision)
    n = W.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by the pivot it reaches
        for k in range(0, n, block):
            e = min(k + block, n)
            _cholesky_panel(W, k, e, rnd, precision)
            if e < n:
                L21 = W[e:, k:e]
                W[e:, e:] = trailing_update(W[e:, e:], L21, L21.T, model=model, unit_format=fin,
                                            precision=precision, update_c=update_c, device=device)
    L = np.tril(W).astype(np.float64)
    return Factorization(L=L, U=L.T.copy(), perm=np.arange(n), unit_format=fin, precision=precision,
                         block=int(block), update_c=update_c, model=model, kind="cholesky")
