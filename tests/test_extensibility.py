"""A new elementary operation defined in this file alone, registered, and run through
``gemm``, ``explain``, the probes' randomised verification and a sweep - the proof
that adding an operation touches no file of the package (docs/architecture.md,
"Adding an operation", walks through the same example).

The operation is a T-FDPA variant whose alignment rounds to odd instead of
truncating: every term of a block (the L products and c) is aligned at the block's
largest exponent e_max (of the normalised values: 2^e_max <= |x| < 2^(e_max+1)) to F
fractional bits, its magnitude truncated and, when bits were lost, its last bit set
(round-to-odd, "jamming"); the aligned terms are added exactly and the sum rounded
once with ``rounding`` to the output format.  Two implementations live here: the
operation's vectorised ``run`` and an independent scalar reference on Fractions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.engine import Operation, register, unregister
from workbench.engine.explain import Block, Term
from workbench.probes import verify

KIND = "t-fdpa-rto"


@dataclass(frozen=True, kw_only=True)
class RTOParams:
    """The parameters the operation reads (names as ``Model``'s), checked here."""

    L: int = 4
    F: int = 24
    rounding: str = "rne"

    def __post_init__(self) -> None:
        if not isinstance(self.L, int) or self.L < 1:
            raise ValueError(f"L={self.L!r}: expected a positive block size")
        if not isinstance(self.F, int) or not 0 <= self.F <= 40:
            raise ValueError(f"F={self.F!r}: expected 0 <= F <= 40 (exact float64 sums)")


def _special(terms: np.ndarray) -> float | None:
    """IEEE result of a sum with Inf/NaN terms (None when all are finite)."""
    if np.isfinite(terms).all():
        return None
    if np.isnan(terms).any() or (np.isposinf(terms).any() and np.isneginf(terms).any()):
        return math.nan
    return math.inf if np.isposinf(terms).any() else -math.inf


def _block(x: np.ndarray, F: int) -> tuple[np.ndarray, np.ndarray]:
    """(aligned terms as integer multiples of 2^(e_max - F), e_max) along the last axis."""
    mag = np.abs(x)
    e = np.where(mag > 0, np.frexp(mag)[1] - 1, -(1 << 20))     # zeros take no part in the maximum
    emax = e.max(axis=-1, keepdims=True)
    scaled = np.ldexp(mag, (F - emax).astype(np.int64))      # exact: powers of two
    t = np.trunc(scaled)
    t = np.where(t != scaled, t + (t % 2 == 0), t)           # lost bits: make the last bit 1
    return np.copysign(t, x), emax[..., 0]


class RoundToOddFDPA(Operation):
    """T-FDPA with round-to-odd alignment (this test's operation)."""

    kind = KIND
    citation = "test_extensibility.py: T-FDPA (Xie et al. 2025 Algorithm 7) with round-to-odd alignment"
    params = RTOParams

    def run(self, model, ops, acc, accumulation, promote_every, scale_a, scale_b):
        self.check_run(accumulation, promote_every, scale_a, scale_b)
        L, F = model.L, model.F
        A, BT = ops.A, ops.BT
        K = A.shape[1]
        d = acc
        for k0 in range(0, max(K, 1), L):
            prods = A[:, None, k0:k0 + L] * BT[None, :, k0:k0 + L]     # exact: fp16 x fp16
            terms = np.concatenate([prods, d[:, :, None]], axis=-1)
            out = np.empty_like(d)
            for idx in np.ndindex(d.shape):
                out[idx] = self._round(terms[idx], F, model)
            d = out
        return d

    def _round(self, terms: np.ndarray, F: int, model) -> float:
        special = _special(terms)
        if special is not None:
            return special
        if not terms.any():
            return 0.0
        aligned, emax = _block(terms, F)
        S = float(aligned.sum())                                   # exact: fewer than 53 bits
        return float(wb.round(math.ldexp(S, int(emax) - F), model.out_format, model.rounding))

    def explain_block(self, index, start, K, a, b, d, model, scale_a, scale_b):
        blk = Block(index=index, c_in=d, F=model.F)
        terms = np.append(a * b, d)
        labels = [f"a{start + k}*b{start + k}" for k in range(len(a))] + ["c"]
        blk.result = self._round(terms, model.F, model)
        if _special(terms) is not None:
            blk.special = "NaN" if math.isnan(blk.result) else ("+Inf" if blk.result > 0 else "-Inf")
            return blk
        if terms.any():
            aligned, emax = _block(terms, model.F)
            blk.e_max = int(emax)
            unit = Fraction(2) ** (int(emax) - model.F)
            for lab, v, al in zip(labels, terms, aligned):
                exp = math.frexp(v)[1] - 1 if v else None
                t = Term(lab, Fraction(v) / Fraction(2) ** exp if v else Fraction(0), exp, Fraction(v),
                         role="c" if lab == "c" else "product")
                t.aligned = Fraction(int(al)) * unit
                t.lost = t.value - t.aligned
                blk.terms.append(t)
            blk.fixed_sum = sum((t.aligned for t in blk.terms), Fraction(0))
            blk.stages.append("round-to-odd alignment: a term that lost bits has its last bit set")
        blk.rounding = f"{model.rounding.upper()} to {model.out_fmt.name}"
        return blk


def reference(a: list[float], b: list[float], c: float, L: int, F: int, out: str, rounding: str) -> float:
    """The operation from its definition, one dot product, on Fractions."""
    K = len(a)
    d = c
    for k0 in range(0, max(K, 1), L):
        vals = [x * y for x, y in zip(a[k0:k0 + L], b[k0:k0 + L])] + [d]
        if any(not math.isfinite(v) for v in vals):
            d = math.fsum(vals) if all(not math.isnan(v) for v in vals) else math.nan
            continue
        nz = [v for v in vals if v != 0]
        if not nz:
            d = 0.0
            continue
        emax = max(math.frexp(v)[1] - 1 for v in nz)
        unit = Fraction(2) ** (emax - F)
        total = Fraction(0)
        for v in nz:
            q = Fraction(abs(v)) / unit
            t = q.numerator // q.denominator
            if t != q and t % 2 == 0:
                t += 1
            total += t * unit if v > 0 else -t * unit
        d = float(wb.round(float(total), out, rounding))
    return d


@pytest.fixture
def rto():
    op = register(RoundToOddFDPA())
    try:
        yield wb.Model(kind=KIND, in_format="fp16", out_format="fp32", L=4, F=10, rounding="rne")
    finally:
        unregister(op.kind)


fp16 = st.floats(min_value=-60000, max_value=60000, allow_nan=False, width=16)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 11), st.data())
def test_gemm_runs_the_new_operation_as_its_definition_says(K, data):
    register(RoundToOddFDPA(), replace=True)
    try:
        model = wb.Model(kind=KIND, in_format="fp16", out_format="fp32", L=4, F=10, rounding="rne")
        A = np.array(data.draw(st.lists(fp16, min_size=2 * K, max_size=2 * K))).reshape(2, K)
        B = np.array(data.draw(st.lists(fp16, min_size=3 * K, max_size=3 * K))).reshape(K, 3)
        C = np.array(data.draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=6, max_size=6))).reshape(2, 3)
        D = wb.gemm(A, B, C, model=model)
        for i in range(2):
            for j in range(3):
                want = reference(list(A[i]), list(B[:, j]), float(C[i, j]), 4, 10, "fp32", "rne")
                assert D[i, j] == want or (math.isnan(D[i, j]) and math.isnan(want)), (i, j)
    finally:
        unregister(KIND)


def test_device_cuda_names_a_kind_without_cuda_kernels(rto):
    """A registered operation runs on the CPU; device="cuda" says that its kind has no
    CUDA kernels (never a silent CPU run), before looking for a GPU."""
    with pytest.raises(NotImplementedError, match=f"kind={KIND!r}"):
        wb.gemm(np.zeros((2, 4)), np.zeros((4, 2)), model=rto, device="cuda")


def test_the_model_checks_the_operations_parameters(rto):
    with pytest.raises(ValueError, match="F=50"):
        wb.Model(kind=KIND, in_format="fp16", out_format="fp32", F=50)
    assert rto.operation_params == RTOParams(L=4, F=10, rounding="rne")
    assert rto.describe() == "kind=t-fdpa-rto, in_format=fp16, out_format=fp32, L=4, F=10, rounding=rne"
    with pytest.raises(ValueError, match="kind"):
        wb.Model(kind="t-fdpa-rtx")


def test_round_to_odd_differs_from_truncation_where_the_paper_says(rto):
    """1 + 2^-12 + 2^-12 with F = 10: truncation (T-FDPA) drops both small terms; round
    to odd keeps each as 2^-10, and the sum 1 + 2^-9 is exact in fp32."""
    a = np.array([[1.0, 2.0**-6, 2.0**-6]])
    b = np.array([[1.0], [2.0**-6], [2.0**-6]])
    trunc = wb.Model(kind="t-fdpa", in_format="fp16", out_format="fp32", L=4, F=10, rounding="rne")
    assert wb.gemm(a, b, model=trunc)[0, 0] == 1.0
    assert wb.gemm(a, b, model=rto)[0, 0] == 1.0 + 2.0**-9


def test_explain_traces_the_new_operation(rto):
    a, b, c = [1.0, 2.0**-6, 2.0**-6, 0.5, 3.0], [1.0, 2.0**-6, 2.0**-6, 0.25, -1.0], 2.0**-20
    trace = wb.explain(a, b, c, model=rto)
    D = wb.gemm(np.array([a]), np.array([b]).T, np.array([[c]]), model=rto)
    assert trace.value == D[0, 0] == reference(a, b, c, 4, 10, "fp32", "rne")
    assert len(trace.blocks) == 2
    assert "round-to-odd alignment" in str(trace)
    assert trace.blocks[0].terms[1].aligned == Fraction(2) ** -10      # 2^-12 kept as the odd last bit


def _reference_unit(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The operation's scalar Fraction reference as a black box (not the registered
    operation): the probes' verification compares the registered model against it."""
    D = np.empty(C.shape)
    for i, j in np.ndindex(*C.shape):
        D[i, j] = reference(list(A[i]), list(B[:, j]), float(C[i, j]), 4, 10, "fp32", "rne")
    return D


def test_probe_verification_accepts_the_operation_and_rejects_truncation(rto):
    bb = wb.probes.BlackBox(_reference_unit, "fp16", "fp32", name="round-to-odd FDPA (Fraction reference)")
    n, cex = verify(bb, rto, n=1500, seed=1)
    assert cex is None and n >= 1500
    trunc = wb.Model(kind="t-fdpa", in_format="fp16", out_format="fp32", L=4, F=10, rounding="rne")
    _, cex = verify(bb, trunc, n=1500, seed=1)
    assert cex is not None and cex.black_box != cex.model


def test_a_sweep_runs_the_operation_from_its_model_table(rto, tmp_path):
    sweep = pytest.importorskip("workbench.sweep")
    exp = {
        "name": "rto",
        "reference": "exact",
        "metrics": ["max_abs_error"],
        "defaults": {"algorithm": "gemm", "m": 2, "n": 2, "k": [4, 9], "seed": 0, "in_format": "fp16",
                     "out_format": "fp32", "model": {"kind": KIND, "L": 4, "F": 10, "rounding": "rne"},
                     "input": {"generator": "uniform", "round_to": "fp16"}},
        "grid": [{}],
    }
    df = sweep.run(exp, out=tmp_path, workers=1, progress=False)
    assert len(df) == 2
    assert df["max_abs_error"].notna().all()


def test_the_callers_ask_the_operation_what_it_can_do(rto):
    """Probes, the SMT back end, the report and the GPU back end read the new operation's
    capabilities (the protocol's defaults here), never its name."""
    from workbench.discrimination.smt import supported
    from workbench.engine import gpu
    from workbench.studies.notebook_support import feature_row

    assert supported(rto) == f"kind={KIND!r} (only 't-fdpa' is encoded)"
    assert feature_row(rto) == {"Table II features": f"none: kind {KIND} has no alignment window of F bits"}
    assert KIND not in gpu.gpu_kinds() and "t-fdpa" in gpu.gpu_kinds()
    assert not rto.operation.has_twin(rto) and not rto.operation.searched_when_uncertain
