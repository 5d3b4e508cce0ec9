"""Metrics a sweep records per task: name -> f(ctx) -> value.

A metric receives a :class:`Context` (the computed D, the reference, the inputs
and the task parameters) and returns a number, a dict of numbers (recorded as
columns ``name.key``) or a 1-D array (recorded as a list column).  Experiment
files name them in ``metrics = [...]``; ``"module:function"`` names a user metric
with the same signature.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..numbers import formats as _formats


@dataclass
class Context:
    """What a metric may look at."""

    D: np.ndarray
    reference: np.ndarray | None
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray | None
    task: Mapping[str, Any]
    #: What the algorithm returned, before it was turned into the array D (a solver's
    #: result object carries its iterations and error histories).
    result: Any = None

    def ref(self) -> np.ndarray:
        """The reference, or a ValueError if the experiment has ``reference = "none"``."""
        if self.reference is None:
            raise ValueError("this metric needs a reference; the experiment has reference = 'none'")
        return self.reference


def _inf_norm(X: np.ndarray) -> float:
    """Matrix infinity norm: largest absolute row sum."""
    return float(np.max(np.sum(np.abs(X), axis=1))) if X.size else 0.0


def normwise_inf(ctx: Context) -> float:
    """``||D - Dref||_inf / (||A||_inf ||B||_inf)``: Khattak & Mikaitis (2025), Figure 7."""
    return _inf_norm(ctx.D - ctx.ref()) / (_inf_norm(ctx.A) * _inf_norm(ctx.B))


def normwise_fro(ctx: Context) -> float:
    """``||D - Dref||_F / ||Dref||_F``."""
    ref = ctx.ref()
    return float(np.linalg.norm(ctx.D - ref) / np.linalg.norm(ref))


def _relative(ctx: Context) -> np.ndarray:
    ref = ctx.ref()
    diff = np.abs(ctx.D - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(ref)
    rel[(diff == 0) & (ref == 0)] = 0.0
    return rel


def max_relative_error(ctx: Context) -> float:
    """Largest componentwise ``|d - dref| / |dref|`` (0/0 counts as 0)."""
    return float(np.max(_relative(ctx)))


def mean_relative_error(ctx: Context) -> float:
    """Mean componentwise ``|d - dref| / |dref|`` (0/0 counts as 0)."""
    return float(np.mean(_relative(ctx)))


def max_abs_error(ctx: Context) -> float:
    """Largest ``|d - dref|``."""
    return float(np.max(np.abs(ctx.D - ctx.ref())))


def signed_error_stats(ctx: Context) -> dict[str, float]:
    """Summary of ``delta = D - Dref`` (MMA-Sim Figure 3): mean, std, median, share negative/positive."""
    d = (ctx.D - ctx.ref()).ravel()
    return {"mean": float(np.mean(d)), "std": float(np.std(d)), "median": float(np.median(d)),
            "negative": float(np.mean(d < 0)), "positive": float(np.mean(d > 0))}


def signed_errors(ctx: Context) -> np.ndarray:
    """Every ``delta = D - Dref`` (row-major), for histograms such as MMA-Sim Figure 3."""
    return (ctx.D - ctx.ref()).ravel().astype(np.float64)


def ulp_error_max(ctx: Context) -> float:
    """Largest ``|d - dref|`` in units of the last place of ``dref`` in out_format."""
    fmt = _formats.format(ctx.task["out_format"] or "fp64")
    ref = ctx.ref()
    a = np.abs(ref)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, fmt.emin)
    ulp = np.ldexp(1.0, (e - fmt.man_bits).astype(np.int64))
    return float(np.max(np.abs(ctx.D - ref) / ulp))


def exact_match(ctx: Context) -> float:
    """Share of entries equal to the reference (NaN equals NaN)."""
    ref = ctx.ref()
    same = (ctx.D == ref) | (np.isnan(ctx.D) & np.isnan(ref))
    return float(np.mean(same))


def nonfinite(ctx: Context) -> int:
    """Number of Inf or NaN entries of D."""
    return int(np.count_nonzero(~np.isfinite(ctx.D)))


def output_digest(ctx: Context) -> str:
    """SHA-1 of D's float64 bytes: equal digests mean bit-identical outputs (cross-preset checks)."""
    D = np.ascontiguousarray(ctx.D, dtype=np.float64)
    return hashlib.sha1(D.tobytes()).hexdigest()


def multiword_bound(ctx: Context) -> float:
    """Bound (3.26) of Mary & Mikaitis (2024) plotted in Khattak & Mikaitis (2025), Figure 7.

    ``2u + n U + 4 n^2 fmin/theta + 4 n^2 Fmin/theta^2`` with u = 2^-t, fmin, fmax of
    the input format, U = 2^-T, Fmin, Fmax of the output format, n the inner
    dimension (our k) and ``theta = min(fmax, sqrt(Fmax / n))``.
    """
    fin = _formats.format(ctx.task["in_format"])
    fout = _formats.format(ctx.task["out_format"])
    n = float(ctx.task["k"])
    u, U = 2.0 ** -fin.p, 2.0 ** -fout.p
    fmin, Fmin = 2.0 ** fin.emin, 2.0 ** fout.emin
    fmax, Fmax = fin.max, fout.max
    theta = min(fmax, math.sqrt(Fmax / n))
    return 2 * u + n * U + 4 * n * n * fmin / theta + 4 * n * n * Fmin / theta ** 2


def componentwise_error(ctx: Context) -> float:
    """``max_ij |D - Dref|_ij / (|A| |B| + |C|)_ij`` (0/0 counts as 0): the error in the units of
    native FP64 GEMM's worst-case componentwise bound ``gamma_K (|A||B| + |C|)``, so that
    ``<= K 2^-53`` is "as accurate as DGEMM is guaranteed to be" whatever the conditioning."""
    ref = ctx.ref()
    scale = np.abs(ctx.A) @ np.abs(ctx.B)
    if ctx.C is not None:
        scale = scale + np.abs(ctx.C)
    diff = np.abs(ctx.D - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = diff / scale
    r[(diff == 0) & (scale == 0)] = 0.0
    return float(np.max(r)) if r.size else 0.0


def emulation(ctx: Context) -> dict[str, Any]:
    """What an emulated GEMM decided (``algorithm = "algorithms.emulation:emulate_task"``):
    columns ``.count .count_auto .fallback .unit_gemms .unit_inexact_gemms
    .unit_max_deviation .exponent_span .warned`` (count and count_auto -1 where None)."""
    res = ctx.result
    if not hasattr(res, "summary") or not hasattr(res, "unit_inexact_gemms"):
        raise ValueError("this metric needs an emulation result (algorithm = 'algorithms.emulation:emulate_task')")
    s = dict(res.summary())
    out: dict[str, Any] = {}
    for k in ("count", "count_auto"):
        out[k] = -1 if s[k] is None else int(s[k])
    for k in ("fallback", "warned"):
        out[k] = float(bool(s[k]))
    for k in ("unit_gemms", "unit_inexact_gemms", "exponent_span"):
        out[k] = int(s[k])
    out["unit_max_deviation"] = float(s["unit_max_deviation"])
    return out


def _solver_result(ctx: Context) -> Any:
    res = ctx.result
    if not all(hasattr(res, a) for a in ("iterations", "status", "forward_errors", "backward_errors")):
        raise ValueError("this metric needs a linear-solver result (algorithm = 'algorithms.refinement:solve_system')")
    return res


def solver(ctx: Context) -> dict[str, Any]:
    """Summary of an iterative-refinement solve (:func:`algorithms.lu_ir` / ``gmres_ir``):
    corrections applied, total GMRES iterations, status, converged (1/0), and the final
    and initial forward and backward errors (Carson & Higham 2018, Section 8)."""
    res = _solver_result(ctx)
    return {"iterations": int(res.iterations), "inner_iterations": int(sum(res.inner_iterations)),
            "status": str(res.status), "converged": float(res.status == "converged"),
            "forward_error": float(res.forward_errors[-1]), "backward_error": float(res.backward_errors[-1]),
            "forward_error_0": float(res.forward_errors[0]), "backward_error_0": float(res.backward_errors[0])}


def solver_forward_errors(ctx: Context) -> np.ndarray:
    """Forward error ``||x_i - x*||_inf / ||x*||_inf`` of every iterate x_0, x_1, ..."""
    return np.asarray(_solver_result(ctx).forward_errors, dtype=np.float64)


def solver_backward_errors(ctx: Context) -> np.ndarray:
    """Normwise backward error of every iterate x_0, x_1, ..."""
    return np.asarray(_solver_result(ctx).backward_errors, dtype=np.float64)


#: Built-in metrics.
METRICS: dict[str, Callable[[Context], Any]] = {
    "normwise_inf": normwise_inf,
    "normwise_fro": normwise_fro,
    "max_relative_error": max_relative_error,
    "mean_relative_error": mean_relative_error,
    "max_abs_error": max_abs_error,
    "signed_error_stats": signed_error_stats,
    "signed_errors": signed_errors,
    "ulp_error_max": ulp_error_max,
    "exact_match": exact_match,
    "nonfinite": nonfinite,
    "output_digest": output_digest,
    "multiword_bound": multiword_bound,
    "componentwise_error": componentwise_error,
    "emulation": emulation,
    "solver": solver,
    "solver_forward_errors": solver_forward_errors,
    "solver_backward_errors": solver_backward_errors,
}
