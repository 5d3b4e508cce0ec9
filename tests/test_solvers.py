"""Linear solvers on matrix units (issue 18): test matrices, blocked LU bit for bit against a
slow per-block reference, the textbook behaviour of LU-IR / GMRES-IR, forward errors
against mpmath, and the sweep plumbing.

Oracles: numpy's SVD (randsvd), a scalar float32 reference factorisation written here that
calls ``workbench.gemm`` once per output tile, mpmath solutions at 60 digits, and the
theory of Carson & Higham (2017, 2018).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import algorithms
import workbench
from algorithms.refinement import reference_solution
from workbench.numbers import inputs

U64 = 2.0 ** -53

UNITS = {
    "V100": ("V100", "fp16", None),
    "H100-bf16": ("H100", "bf16", None),
    "B200-rn": ("B200", "fp16", "rn"),
    "MI250X": ("MI250X", "fp16", None),
    "MI300X-bf16": ("MI300X", "bf16", None),
}


def unit(name: str):
    dev, fmt, variant = UNITS[name]
    return workbench.preset(dev, fmt, "fp32", variant=variant)


# ----------------------------------------------------------------- test matrices
@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), log_kappa=st.floats(0, 10), mode=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_randsvd_singular_values_and_condition_number(n, log_kappa, mode, seed):
    kappa = 10.0 ** log_kappa
    A = inputs.randsvd(n, kappa, mode=mode, seed=seed)
    assert A.shape == (n, n) and A.dtype == np.float64
    s = np.linalg.svd(A, compute_uv=False)
    sigma = inputs.randsvd_singular_values(n, kappa, mode, np.random.default_rng(seed))
    assert sigma[0] == 1.0 and sigma[-1] == pytest.approx(1.0 / kappa, rel=1e-15)
    assert np.all(np.diff(sigma) <= 0)
    # forming U diag(sigma) V^T in fp64 moves each singular value by O(n u ||A||_2)
    np.testing.assert_allclose(s, sigma, rtol=0, atol=20 * n * U64)
    assert s[0] / s[-1] == pytest.approx(kappa, rel=40 * n * U64 * kappa + 1e-12)
    np.testing.assert_array_equal(A, inputs.randsvd(n, kappa, mode=mode, seed=seed))


def test_randsvd_modes_follow_higham():
    n, kappa = 6, 1e4
    np.testing.assert_allclose(inputs.randsvd_singular_values(n, kappa, 1), [1] + [1e-4] * 5)
    np.testing.assert_allclose(inputs.randsvd_singular_values(n, kappa, 2), [1] * 5 + [1e-4])
    np.testing.assert_allclose(inputs.randsvd_singular_values(n, kappa, 3), 10.0 ** (-4 * np.arange(6) / 5))
    np.testing.assert_allclose(inputs.randsvd_singular_values(n, kappa, 4), 1 - np.arange(6) / 5 * (1 - 1e-4))
    with pytest.raises(ValueError, match="mode=7"):
        inputs.randsvd(4, 10.0, mode=7)
    with pytest.raises(ValueError, match="kappa=0.5"):
        inputs.randsvd(4, 0.5)


def test_diagonally_dominant_and_scaled_matrices():
    A = inputs.diagonally_dominant(30, seed=3, dominance=2.0)
    off = np.abs(A).sum(axis=1) - np.abs(np.diag(A))
    np.testing.assert_allclose(np.abs(np.diag(A)), 2.0 * off)
    S = inputs.two_sided_scaling(A, decades=8, seed=1)
    ratio = S / A
    r, c = ratio[:, :1], ratio[:1, :] / ratio[0, 0]
    np.testing.assert_array_equal(ratio, r * c)  # D_r A D_c exactly
    assert np.all(np.log2(np.abs(ratio)) == np.round(np.log2(np.abs(ratio))))  # powers of two


# ----------------------------------------------------------------- LU bit for bit
def _slow_reference_lu(A: np.ndarray, block: int, model, fin: str, update_c: str, tile: int = 5):
    """Haidar et al.'s blocked LU written out with float32 scalars (panel and TRSM) and
    one workbench.gemm per tile x tile block of each trailing update."""
    W = A.astype(np.float32)
    n = W.shape[0]
    perm = list(range(n))
    for k in range(0, n, block):
        e = min(k + block, n)
        for j in range(k, e):
            p = max(range(j, n), key=lambda i: (abs(W[i, j]), -i))
            W[[j, p]] = W[[p, j]]
            perm[j], perm[p] = perm[p], perm[j]
            for i in range(j + 1, n):
                W[i, j] = W[i, j] / W[j, j]
                for c in range(j + 1, e):
                    W[i, c] = W[i, c] - W[i, j] * W[j, c]
        for i in range(k, e):
            for r in range(i + 1, e):
                for c in range(e, n):
                    W[r, c] = W[r, c] - W[r, i] * W[i, c]
        if e == n:
            continue
        L21 = workbench.round(W[e:, k:e].astype(np.float64), fin)
        U12 = workbench.round(W[k:e, e:].astype(np.float64), fin)
        new = W[e:, e:].copy()
        for i0 in range(0, n - e, tile):
            for j0 in range(0, n - e, tile):
                Lt, Ut = L21[i0:i0 + tile], U12[:, j0:j0 + tile]
                Ct = W[e + i0:e + i0 + tile, e + j0:e + j0 + tile].astype(np.float64)
                if model is None:  # idealised: exact products, fp32 recursive sum in K order
                    acc = Ct.astype(np.float32) if update_c == "accumulator" else np.zeros_like(Ct, np.float32)
                    for kk in range(Lt.shape[1]):
                        for a in range(acc.shape[0]):
                            for b in range(acc.shape[1]):
                                prod = np.float32(Lt[a, kk]) * np.float32(Ut[kk, b])
                                acc[a, b] = acc[a, b] - prod if update_c == "accumulator" else acc[a, b] + prod
                    out = acc if update_c == "accumulator" else Ct.astype(np.float32) - acc
                elif update_c == "accumulator":
                    out = workbench.gemm(-Lt, Ut, Ct, model=model)
                else:
                    out = workbench.gemm(Lt, Ut, Ct, model=model, alpha=-1.0, beta=1.0)
                new[i0:i0 + tile, j0:j0 + tile] = out
        W[e:, e:] = new
    return W.astype(np.float64), np.array(perm)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 24), block=st.integers(1, 12), which=st.sampled_from([None, *UNITS]),
       update_c=st.sampled_from(["epilogue", "accumulator"]), log_kappa=st.floats(0, 6),
       seed=st.integers(0, 2**31))
def test_blocked_lu_equals_slow_per_block_reference(n, block, which, update_c, log_kappa, seed):
    A = inputs.randsvd(n, 10.0 ** log_kappa, seed=seed) * 8.0
    model = None if which is None else unit(which)
    fin = "fp16" if which is None else UNITS[which][1]
    F = algorithms.lu(A, model=model, block=block, update_c=update_c, unit_format=None if model else fin)
    W, perm = _slow_reference_lu(A, block, model, fin, update_c)
    np.testing.assert_array_equal(F.perm, perm)
    np.testing.assert_array_equal(F.U, np.triu(W))
    np.testing.assert_array_equal(np.tril(F.L, -1), np.tril(W, -1))
    L, U, p = F
    assert np.all(np.diag(L) == 1.0) and np.all(np.abs(L) <= 1.0)
    # Backward error, componentwise (Higham 2002 Thm 9.3 with the update operands rounded
    # to the unit's input format): |A[p] - L U| <= (2 u_in + (2 n + 4) 2^-24) |L| |U|,
    # u_in = 2^-p of that format; float64 products and sums of these float32 factors are
    # exact to 2^-50, far below the bound.
    u_in = 2.0 ** -workbench.format(fin).p
    bound = (2 * u_in + (2 * n + 4) * 2.0 ** -24) * (np.abs(L) @ np.abs(U))
    assert np.all(np.abs(A[p] - L @ U) <= bound * (1 + 2.0**-40)), np.max(np.abs(A[p] - L @ U) / (bound + 1e-300))


def test_cholesky_on_a_unit_factors_an_spd_matrix():
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    S = (Q * np.logspace(0, -2, 40)) @ Q.T
    S = (S + S.T) / 2
    F = algorithms.cholesky(S, model=unit("H100-bf16"), block=16)
    assert np.array_equal(F.L, np.tril(F.L)) and np.all(np.diag(F.L) > 0)
    assert np.linalg.norm(F.L @ F.L.T - S, 2) <= 0.05 * np.linalg.norm(S, 2)
    x = F.solve(S @ np.ones(40), "fp64")
    assert np.max(np.abs(x - 1)) < 0.5


def test_lu_rejects_bad_settings_and_overflow():
    A = inputs.randsvd(8, 10.0, seed=0)
    with pytest.raises(ValueError, match="precision='fp32'"):
        algorithms.lu(A, model=workbench.preset("V100", "fp16", "fp16"))
    with pytest.raises(ValueError, match="block=0"):
        algorithms.lu(A, model=None, block=0)
    with pytest.raises(ValueError, match="unit_format='fp8'"):
        algorithms.lu(A, model=None, unit_format="fp8")
    big = inputs.two_sided_scaling(A, decades=14, seed=2)
    with pytest.raises(ValueError, match="overflows fp16"):
        algorithms.lu(big, model=unit("V100"), block=2)


# ----------------------------------------------------------------- textbook behaviour
@pytest.mark.parametrize("unit_format, kappa", [("fp16", 10.0), ("fp16", 300.0), ("bf16", 10.0)])
def test_lu_ir_reaches_fp64_backward_error_when_kappa_uf_is_small(unit_format, kappa):
    n = 80
    A = inputs.randsvd(n, kappa, seed=7)
    b = np.random.default_rng(7).standard_normal(n)
    res = algorithms.lu_ir(A, b, model=None, block=16, lu_options={"unit_format": unit_format})
    assert res.converged and res.status == "converged"
    assert res.backward_errors[-1] <= 2 * np.sqrt(n) * U64  # the DSGESV stopping level
    assert res.forward_errors[-1] <= 10 * kappa * U64
    assert res.forward_errors[0] > 1e3 * res.forward_errors[-1]  # the fp16/bf16 LU alone is far from it
    assert len(res.iterates) == res.iterations + 1 == len(res.forward_errors)
    np.testing.assert_array_equal(np.asarray(res), res.x)


@pytest.mark.parametrize("kappa", [1e6, 1e9])
def test_lu_ir_fails_beyond_one_over_uf_and_gmres_ir_goes_further(kappa):
    n = 80
    A = inputs.randsvd(n, kappa, seed=3)
    b = np.random.default_rng(3).standard_normal(n)
    lu_res = algorithms.lu_ir(A, b, model=None, block=16)  # u_f = 2^-11: kappa u_f >> 1
    assert not lu_res.converged and lu_res.status in ("diverged", "stagnated")
    assert lu_res.forward_errors[-1] > 1e-2
    gm = algorithms.gmres_ir(A, b, model=None, block=16)
    assert gm.converged and gm.backward_errors[-1] <= 2 * np.sqrt(n) * U64
    assert gm.forward_errors[-1] <= 100 * kappa * U64
    assert len(gm.inner_iterations) == gm.iterations >= 1


def test_lu_ir_on_units_matches_idealised_behaviour():
    n = 64
    A = inputs.randsvd(n, 100.0, seed=11)
    b = np.random.default_rng(11).standard_normal(n)
    for name in ("V100", "MI250X"):
        res = algorithms.lu_ir(A, b, model=unit(name), block=16)
        assert res.converged and res.backward_errors[-1] <= 2 * np.sqrt(n) * U64


def test_forward_errors_against_mpmath():
    n = 10
    A = inputs.randsvd(n, 1e3, seed=2)
    b = np.random.default_rng(2).standard_normal(n)
    with mpmath.workdps(60):
        xs = mpmath.lu_solve(mpmath.matrix(A.tolist()), mpmath.matrix(b.tolist()))
        x_mp = np.array([float(v) for v in xs])
    ref = reference_solution(A, b)
    assert np.max(np.abs(ref - x_mp)) <= 2 * U64 * np.max(np.abs(x_mp))
    res = algorithms.lu_ir(A, b, model=unit("V100"), block=4)
    for x, fe in zip(res.iterates, res.forward_errors):
        with mpmath.workdps(60):
            num = max(abs(mpmath.mpf(float(xi)) - v) for xi, v in zip(x, xs))
            want = float(num / max(abs(v) for v in xs))
        assert fe == pytest.approx(want, rel=1e-6, abs=4 * U64)


def test_solvers_reject_bad_arguments():
    A = inputs.randsvd(6, 10.0, seed=0)
    with pytest.raises(ValueError, match="residual='fp128'"):
        algorithms.lu_ir(A, np.ones(6), model=None, residual="fp128")
    with pytest.raises(ValueError, match=r"b must have shape \(6,\)"):
        algorithms.gmres_ir(A, np.ones(5), model=None)
    with pytest.raises(ValueError, match="not representable in fp32"):
        algorithms.lu_ir(A, np.ones(6), model=None, working="fp32")


# ----------------------------------------------------------------- sweeps
def test_solver_sweep_records_iterations_and_errors(tmp_path):
    import workbench.sweep as sweep

    spec = {"name": "solvers_tiny", "reference": "none", "metrics": ["solver", "solver_forward_errors"],
            "defaults": {"algorithm": "algorithms.refinement:solve_system", "m": 24, "k": 24, "n": 1, "seed": 0,
                         "input": {"generator": "linear_system", "kappa": [10.0, 1e6], "round_to": "none"}},
            "grid": [{"in_format": "fp16", "out_format": "fp32", "preset": "V100",
                      "params": {"solver": ["lu_ir", "gmres_ir"], "block": 8}},
                     {"params": {"solver": "lu_ir", "block": 8}}]}
    df = sweep.run(spec, out=tmp_path / "s", workers=1, progress=False)
    assert df["error"].isna().all() and len(df) == 6
    A, B, _ = inputs.matrices("linear_system", 24, 24, 1, [0, 24, 24, 1], kappa=1e6)
    direct = algorithms.gmres_ir(A, B, model=unit("V100"), block=8)
    row = df[(df["input.kappa"] == 1e6) & (df["param.solver"] == "gmres_ir")].iloc[0]
    assert row["solver.iterations"] == direct.iterations
    assert row["solver.forward_error"] == direct.forward_errors[-1]
    assert list(row["solver_forward_errors"]) == direct.forward_errors.tolist()
    lu_rows = df[(df["input.kappa"] == 10.0) & (df["param.solver"] == "lu_ir")]
    assert (lu_rows["solver.status"] == "converged").all()
