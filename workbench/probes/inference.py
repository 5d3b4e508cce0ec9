"""``infer``: the closed loop - probe, propose a model, verify it, report.

Xie et al. 2025 Section 3.1 (CLFP: Steps 1-4) and Khattak & Mikaitis 2025 Algorithm 1
(GNFT for the first approximation, ISSM randomised search for mismatches).  Steps:

1. subnormal support (Fasi et al. 2021) and the summation tree by FPRev (Xie 3.1.2):
   block size L / NFMA, interleaving, kind of elementary operation;
2. c early or late, fused-sum precision F (neab = F - (p_out - 1)), precision of the
   final rounding, rounding mode and tie rule, sticky bit (Xie 3.1.3, Khattak-Mikaitis
   Section IV);
3. zero-operand exponent: the value among the candidates that explains the outputs
   on vectors built to be sensitive to it (Xie's MMA-Sim constants -131/-132/-133);
4. a model via :func:`workbench.custom_model`, verified by randomised differential
   testing on several distributions (normal, log-uniform, random bit patterns with
   subnormals/Inf/NaN, cancellation) - "bit-exact on N inputs" or the smallest failing
   input found (shrunk by zeroing terms, as Xie Section 3.1.4 debug failing cases);
5. the revision of Xie Section 3.1.4, made exhaustive (:mod:`workbench.probes.search`):
   a proposal that fails (or that the probes doubt) is replaced by the closest verified
   model among all that reproduce the outputs, and the models the outputs cannot
   separate are reported (``alternatives``, ``consistent``, ``unobservable``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..numbers import formats as _formats
from ..engine import core as _core
from ..engine.model import PARAM_NAMES, ROUNDINGS, Model
from . import features as _f
from .blackbox import BlackBox, as_black_box, from_model
from .differential import DISTRIBUTIONS, random_inputs, same_outputs, window_edges, windows_of
from .search import SEARCHED, agree_on_random_inputs, consistent_models, reproduce, separate_windows
from .vectors import Cases, Ranges

__all__ = ["infer", "verify", "InferenceResult", "Counterexample", "OBSERVABLE_NOTES"]

#: Why some parameters cannot always be recovered from outputs (documented in the
#: feature sheet and used by the tests to decide what to compare).
OBSERVABLE_NOTES = {
    "zero_exponent": "zeros only move the alignment window when every real term lies below "
                     "2^zero_exponent; the truncated bits are then below the output's smallest "
                     "subnormal, so with RZ (fp32 output) no output changes; observable with RNE "
                     "output (fp16) through ties at the subnormal boundary",
    "sticky": "not observable when no term can fall off the window (L = 1)",
    "group_F": "the interleaved groups' precision is measured as F (the presets use one value)",
    "k_block/G/scale_format": "block scales are not inputs of f(A, B, C): a scaled model probed through "
                              "from_model has every scale tied to 1, so ST-FDPA is seen as its T-FDPA core; "
                              "GST-FDPA's groups of G exactly summed products are probed, its scales are not",
    "k_block/scale_format": "block scales are not inputs of f(A, B, C) (from_model ties them to 1): with unit "
                            "scales NVFP4 (UE4M3 per 16) and MXFP4 (E8M0 per 32) give the same outputs",
    "F2": "TR-FDPA's second precision shows only through the final rounding of c + T with c much larger "
          "than T (ties for round-to-nearest, c = -2^E for RZ/RU); with RD it is not observable",
}


#: the widest fused-sum window the engine models (Model checks 0 <= F <= 56)
_MAX_F = 56
#: window-edge dot products per K in each round of :func:`verify` (one chunk of BlackBox.dots)
_EDGE_ROWS = 256
#: the products each round of :func:`verify` adds for a black box of free shape, past any blocking
#: or lane split a library kernel may have: odd M and N with few columns and K well past 256
#: (OpenBLAS' SkylakeX SGEMM is one FMA chain per output on 32 x 32 products at every K, but sums
#: K in 16 vector lanes on 9 x 7 x 513 - a model verified on 32 x K x 32 alone claimed too much)
_STRUCTURE_SHAPES = ((9, 7, 513), (3, 5, 257))


def _engine_rounding(rd: Any, fallback: str, notes: list[str]) -> str:
    """The probed final rounding ``rd.mode`` when the engine models it (rne, rz, rd,
    ru), else ``fallback`` with a note naming the mode and its table."""
    if rd.mode in ROUNDINGS:
        return rd.mode
    notes.append(f"final rounding {rd.mode!r} (table {rd.table}) is not one the engine models; proposing {fallback}")
    return fallback


@dataclass
class Counterexample:
    """The smallest failing dot product found: d = c + sum a_k b_k."""

    a: np.ndarray
    b: np.ndarray
    c: float
    black_box: float
    model: float
    distribution: str

    def __str__(self) -> str:
        nz = np.nonzero((self.a != 0) | (self.b != 0))[0]
        terms = ", ".join(f"a[{k}]={self.a[k]!r} b[{k}]={self.b[k]!r}" for k in nz)
        return (f"[{self.distribution}] {terms or 'all products zero'}; c={self.c!r}: "
                f"black box {self.black_box!r}, model {self.model!r}")


@dataclass
class InferenceResult:
    """What :func:`infer` found.  ``params`` uses :data:`workbench.engine.PARAM_NAMES`."""

    params: dict[str, Any]
    model: Model | None
    verified: bool
    counterexample: Counterexample | None
    n_verified: int
    features: dict[str, Any] = field(default_factory=dict)
    unobservable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    target: str = ""
    #: values of a parameter that explain every probe output (only when more than one)
    consistent: dict[str, list[Any]] = field(default_factory=dict)
    #: the parameters the probes determined (the rest of ``params`` are Model defaults)
    inferred: tuple[str, ...] = ()
    #: every model (parameter dict) the consistency search found to reproduce all the
    #: outputs it saw, when the probes' proposal needed the search; ``params`` is one of them
    alternatives: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.verified:
            return f"bit-exact on {self.n_verified} inputs"
        if self.counterexample is not None:
            return f"NOT verified: {self.counterexample}"
        return "NOT verified: " + ("; ".join(self.notes) or "no model")

    def sheet(self) -> str:
        """The feature sheet printed by ``workbench probe``."""
        lines = [f"Feature sheet: {self.target}"]
        for k, v in self.features.items():
            lines.append(f"  {k:<24} {v}")
        lines.append("  inferred parameters:")
        for k in PARAM_NAMES:
            v = self.params.get(k)
            if k not in self.inferred or v is None or v is False or (k == "interleave" and v == 1):
                continue
            lines.append(f"    {k:<22} {v}")
        for k, why in self.unobservable.items():
            lines.append(f"  not observable: {k}: {why}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        lines.append(f"  verification: {self.verdict}")
        return "\n".join(lines)


# ---------------------------------------------------------------- comparison
def _model_dots(model: Model, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    if model.scale_format is not None:   # scaled model: unit scales, as from_model
        return from_model(model).dots(a, b, c)
    return _core.dots(model, a, b, c)    # one row per output, not the diagonal of a square product


def _shrink(bb: BlackBox, model: Model, a: np.ndarray, b: np.ndarray, c: float,
            d_box: float, d_model: float) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """Zero terms (and c) while the mismatch persists (Xie Section 3.1.4).  Every step
    re-evaluates the candidates as one batch of dot products; a library whose result
    depends on the matrix shape may not reproduce the mismatch that way, and then the
    unshrunk case (with the values seen in the full product) is returned."""
    a = a.copy()
    b = b.copy()
    first = True
    while True:
        nz = [k for k in range(a.size) if a[k] != 0 or b[k] != 0]
        variants_a, variants_b, variants_c = ([a.copy()], [b.copy()], [c]) if first else ([], [], [])
        for k in nz:
            va, vb = a.copy(), b.copy()
            va[k] = vb[k] = 0.0
            variants_a.append(va)
            variants_b.append(vb)
            variants_c.append(c)
        if c != 0:
            variants_a.append(a.copy())
            variants_b.append(b.copy())
            variants_c.append(0.0)
        if not variants_a:
            break
        A, B, C = np.array(variants_a), np.array(variants_b), np.array(variants_c)
        d1 = bb.dots(A, B, C)
        d2 = _model_dots(model, A, B, C)
        bad = np.nonzero(~same_outputs(d1, d2))[0]
        if first:
            if 0 not in bad:
                return a, b, c, d_box, d_model   # not reproducible as a lone dot product
            bad = bad[bad != 0]
            first = False
        if bad.size == 0:
            break
        q = int(bad[0])
        a, b, c, d_box, d_model = A[q], B[q], float(C[q]), float(d1[q]), float(d2[q])
    return a, b, c, d_box, d_model


def verify(black_box: Any, model: Model, *, n: int = 20000, seed: int = 0, K: int | None = None,
           distributions: tuple[str, ...] = DISTRIBUTIONS) -> tuple[int, Counterexample | None]:
    """Randomised differential testing (Xie Step 4, Khattak-Mikaitis ISSM).

    Besides the ``distributions``, each round compares :func:`~workbench.probes.differential.window_edges`
    at the model's own alignment windows (F, F2, the groups' F): a unit whose window is
    one bit wider or narrower parts from the model there, and rarely anywhere else.

    Returns (number of outputs compared, smallest counterexample or None)."""
    bb = as_black_box(black_box)
    from ..matmul.product import gemm

    rng = np.random.default_rng(seed)
    fin, fout = bb.in_fmt, bb.out_fmt
    if bb.shape is not None:
        M, N, Kc = bb.shape
        Ks = [Kc]
        shapes = [bb.shape]
    else:
        L = max(model.L, 1)
        Ks = [K] if K is not None else sorted({2 * L, 2 * L + 3, 64})
        shapes = [(32, 32, Kc) for Kc in Ks] + ([] if K is not None else list(_STRUCTURE_SHAPES))
    windows = windows_of([model.params])
    # the window edges as independent dot products (one per output, not one per row of
    # a GEMM), also at K = 2 and 4, where a cancelling pair is most often built, and at
    # K = L, one whole block (its large products carry the sum past the output's precision)
    edge_Ks = Ks if bb.shape is not None else sorted({2, 4, max(model.L, 2), *Ks})
    done = 0
    rounds = 0
    while done < n:
        for Kc in edge_Ks if windows else []:
            wa, wb, wc = window_edges(rng, fin, fout, windows, _EDGE_ROWS, Kc)
            w1, w2 = bb.dots(wa, wb, wc), _model_dots(model, wa, wb, wc)
            ok = same_outputs(w1, w2)
            if not ok.all():
                r = int(np.argmin(ok))
                a1, b1, c1, e1, e2 = _shrink(bb, model, wa[r].copy(), wb[r].copy(), float(wc[r]), float(w1[r]),
                                             float(w2[r]))
                return done + int(ok.sum()), Counterexample(a1, b1, c1, e1, e2, "window-edges")
            done += ok.size
        for dist in distributions:
            for M, N, Kc in shapes:
                A, B, C = random_inputs(dist, rng, fin, fout, M, Kc, N)
                D1 = bb.matmul(A, B, C)
                if model.scale_format is not None:   # scaled model: unit scales, as from_model
                    D2 = np.asarray(from_model(model).matmul(A, B, C), dtype=np.float64)
                else:
                    D2 = np.asarray(gemm(A, B, C, model=model), dtype=np.float64)
                ok = same_outputs(D1, D2)
                if not ok.all():
                    i, j = map(int, np.argwhere(~ok)[0])
                    a, b, c, d1, d2 = _shrink(bb, model, A[i].copy(), B[:, j].copy(), float(C[i, j]),
                                              float(D1[i, j]), float(D2[i, j]))
                    return done + int(ok.sum()), Counterexample(a, b, c, d1, d2, dist)
                done += ok.size
        rounds += 1
        if rounds > 1000:  # pragma: no cover - n absurdly large
            break
    return done, None


# ------------------------------------------------------------ zero exponent
def _zero_exponent_cases(bb: BlackBox, L: int, allow_sub: bool, rng: np.random.Generator) -> Cases:
    fin, fout = bb.in_fmt, bb.out_fmt
    r = Ranges(fin, fout)
    K = min(max(L, 4), bb.max_k or 4096)
    cs = Cases(K, fin, fout, allow_subnormal=allow_sub)
    lo = r.prod_lo_sub if allow_sub else r.prod_lo
    tie = fout.min_subnormal / 2
    for half in (tie, 3 * tie):  # ties of the output's last rounding at the subnormal boundary
        for k2 in range(lo, int(math.floor(math.log2(half))) - 1):
            for pos in (1, K - 1):
                try:
                    cs.add({0: half, pos: 2.0 ** k2})
                except ValueError:
                    break
    for k in range(lo, min(r.prod_hi, r.out_lo + 2 * fout.p) + 1):
        v = 2.0 ** k * (1 + 2.0 ** (1 - fin.p))
        try:
            cs.add({0: v})
            cs.add({0: v, 1: -(2.0 ** k)})
        except ValueError:
            pass
    # random sparse vectors of tiny values
    span = max(1, min(r.prod_hi, r.out_lo + 8) - lo)
    for _ in range(256):
        a = np.zeros(K)
        b = np.zeros(K)
        m = rng.integers(1, min(K, 4) + 1)
        where = rng.choice(K, size=m, replace=False)
        for p in where:
            e = lo + rng.integers(0, span)
            sig = 1 + rng.integers(0, 1 << max(fin.p - 1, 0)) * 2.0 ** (1 - fin.p)
            val = float(sig * 2.0 ** e * (1 if rng.random() < 0.8 else -1))
            try:
                from .vectors import split_product
                a[p], b[p] = split_product(val, fin, allow_sub)
            except ValueError:
                continue
        cs.add_raw(a, b, 0.0)
    return cs


def _search_zero_exponent(bb: BlackBox, base: dict[str, Any], allow_sub: bool, seed: int) -> tuple[int | None, list[int | None]]:
    from ..engine import core as _core

    fout = bb.out_fmt
    rng = np.random.default_rng(seed + 7)
    cs = _zero_exponent_cases(bb, base["L"], allow_sub, rng)
    a, b, c = cs.arrays()
    d = bb.dots(a, b, c)
    lo = int(math.log2(fout.min_subnormal)) - 12
    cands: list[int | None] = [None] + list(range(lo, fout.emin + 6))
    ok: list[int | None] = []
    for ez in cands:
        m = Model(**{**base, "zero_exponent": ez})
        # without a row kernel the engine's dots loops in Python: batch them as GEMMs
        dm = _core.dots(m, a, b, c) if m.operation.has_row_kernel else _model_dots(m, a, b, c)
        if same_outputs(d, dm).all():
            ok.append(ez)
    if not ok:
        return None, []
    if None in ok:
        return None, ok
    return max(e for e in ok if e is not None), ok


# --------------------------------------------------------------------- infer
def _result_format(p_res: int | None, fout: _formats.FloatFormat) -> str | None:
    if p_res is None or p_res >= fout.p:
        return None
    for f in _formats.list_formats():
        if f.p == p_res and f.exp_bits == fout.exp_bits and f.special == "ieee":
            return f.name
    raise ValueError(f"the fused sum is rounded to {p_res} bits, a format not in the registry")


def infer(black_box: Any, in_format: str | None = None, out_format: str | None = None, *,
          n_verify: int = 20000, seed: int = 0, verify_model: bool = True, progress: bool = False) -> InferenceResult:
    """Recover a unit's arithmetic from its outputs (see the module docstring).

    ``black_box``: a callable ``f(A, B, C) -> D`` (then ``in_format`` and
    ``out_format`` are required), a :class:`~workbench.probes.BlackBox`, or a Model /
    preset (probed through ``workbench.gemm``).  ``progress``: a bar on stderr naming
    the step under way (subnormals, structure, specials, parameters, zero exponent,
    verification)."""
    from tqdm.auto import tqdm

    bar = tqdm(total=len(_STEPS) - 1, disable=not progress, unit="step", bar_format="{desc} {n}/{total} steps "
               "[{elapsed}]")

    def step(i: int) -> None:
        bar.n = i
        bar.set_description_str(f"infer: {_STEPS[i]}")

    step(0)
    try:
        return _infer(black_box, in_format, out_format, n_verify, seed, verify_model, step)
    finally:
        bar.close()


#: The steps :func:`infer` reports on its progress bar.
_STEPS = ("subnormals", "summation structure", "special values", "parameters", "zero-operand exponent",
          "verification", "done")


def _infer(black_box: Any, in_format: str | None, out_format: str | None, n_verify: int, seed: int,
           verify_model: bool, step: Any) -> InferenceResult:
    bb = as_black_box(black_box, in_format, out_format)
    fin, fout = bb.in_fmt, bb.out_fmt
    feats: dict[str, Any] = {"formats": f"{fin.name} -> {fout.name}"}
    notes: list[str] = []
    unobs: dict[str, str] = {}

    sub = _f.probe_subnormals(bb)
    feats["subnormal inputs"] = "kept" if sub.inputs else "flushed to zero"
    feats["subnormal c"] = "kept" if sub.c_passthrough else "flushed / rounded away"
    feats["subnormal outputs"] = {True: "produced", False: "flushed", None: "unreachable from products"}[
        sub.outputs_from_products]
    allow_sub = sub.inputs
    step(1)
    sr = _f.probe_structure(bb, allow_subnormal=allow_sub)
    feats["FPRev swamping range"] = f"2^{sr.swamp_bits} (K = {sr.K})"
    is_narrow = _f.narrow(bb, sr.swamp_bits)
    if is_narrow:
        sr = _f.probe_blocks_by_c(bb, allow_sub)
        notes.append(f"products span only 2^{Ranges(fin, fout).prod_hi - Ranges(fin, fout).prod_lo_sub}: "
                     "structure, F and rounding probed with c carrying the range (c assumed early)")
    if sr.structure is None and not is_narrow:
        # terms that do not vanish cleanly (a sticky bit, or an unknown tree): fall back to
        # block boundaries seen through rounding (Fasi et al.'s constants, generalised)
        alt = _f.probe_blocks_by_c(bb, allow_sub)
        if alt.structure is not None:
            notes.append("FPRev counts are not integers (terms below the window leave traces, e.g. a sticky "
                         "bit); block size from rounding at block boundaries")
            sr = alt
    st = sr.structure
    params: dict[str, Any] = {"in_format": fin.name, "out_format": fout.name}
    if st is None:
        notes.append(sr.note + "; the unit is not a block-FMA chain of the known elementary operations")
        feats["summation tree"] = "unrecognised"
        best = _closest_structure(sr)
        feats["closest tree"] = best.describe()
        st = best
    else:
        feats["summation tree"] = st.describe()
        if len(sr.candidates) > 1:
            feats["also consistent"] = ", ".join(s.describe() for s in sr.candidates[1:4])
    step(2)
    try:
        feats["special values"] = _f.probe_specials(bb)
    except ValueError as exc:  # pragma: no cover - exotic formats
        feats["special values"] = f"not probed ({exc})"

    step(3)
    groups = None
    if st.shape in ("chain", "exact") and st.L >= 4:
        # GST-FDPA (Xie Algorithm 9): groups of G products summed exactly before the window
        groups = _f.probe_exact_groups(bb, st.L, allow_sub)
    if st.shape == "pairwise":
        params.update(kind="ftz-addmul", L=st.L, P=st.L, flush_subnormals=not sub.inputs,
                      flush_output_subnormals=not sub.c_passthrough)
    elif groups is not None and groups.G is not None:
        _gst_fdpa(bb, st, groups, allow_sub, sub, params, feats, unobs, notes)
    elif st.shape == "exact" and _exact_fdpa(bb, st, allow_sub, sub, params, feats, unobs, notes):
        pass
    elif st.L == 1 and fin.name == fout.name:
        params.update(kind="fma", L=1)
        cp = _f.probe_c_position(bb, st, allow_sub, fma_chain=True)
        params["c_position"] = cp.position
        if cp.position == "late":
            params["late_rounding"] = cp.late_rounding if cp.late_rounding in ("rne", "rz", "rd", "ru") else "rne"
            if cp.late_rounding not in ("rne", "rz", "rd", "ru"):
                notes.append(f"late addition rounds as {cp.late_rounding!r}, which the engine cannot model")
        feats["c"] = ("first term of the chain" if cp.position == "early"
                      else f"late (after the chain), rounded {cp.late_rounding}")
    else:
        c_early = True
        params.update(kind="t-fdpa", L=st.L)
        if st.shape == "late":
            cp = _f.probe_c_position(bb, st, allow_sub)
            params["interleave"] = st.interleave
        else:
            cp = _f.probe_c_position(bb, st, allow_sub)
        params["c_position"] = cp.position
        c_early = cp.position == "early"
        if cp.position == "late":
            params["late_rounding"] = cp.late_rounding if cp.late_rounding in ("rne", "rz", "rd", "ru") else "rne"
            if cp.late_rounding not in ("rne", "rz", "rd", "ru"):
                notes.append(f"late addition rounds as {cp.late_rounding!r}, which the engine cannot model")
        feats["c"] = f"{cp.position} (in the fused sum)" if c_early else f"late, rounded {cp.late_rounding}"
        few = len(_f._slots(st, st.L)) < 2 and c_early    # one product per fused sum: c carries the range
        Fm = (_f.probe_precision_c(bb, allow_sub) if (is_narrow or few)
              else _f.probe_precision(bb, st, c_early, allow_sub))
        if Fm.value is None:
            F = min(Fm.bound, _MAX_F)
            unobs["F"] = f"every eps down to 2^-{Fm.bound} U was kept: F >= {Fm.bound} (formats' range)"
        else:
            F = Fm.value
            if F > _MAX_F + 1:   # + 1: a sticky bit found below reads one bit too many
                notes.append(f"eps down to 2^-{F} U survives next to U and -U: the sum keeps more than the "
                             f"{_MAX_F} fractional bits of the engine's widest window, so no T-FDPA model holds "
                             "it (e.g. a library summing in several partial sums or a wider accumulator)")
        params["F"] = F
        feats["fused-sum precision"] = f"F = {F} fractional bits (neab = {F - (fout.p - 1)})"
        pr = (_f.Measure(None, 0) if is_narrow else _f.probe_result_precision(bb, st, F, c_early, allow_sub))
        if is_narrow:
            unobs["result_format"] = "the precision of the final rounding needs carries over 2^(p_out) (narrow format)"
        try:
            params["result_format"] = _result_format(pr.value, fout)
        except ValueError as exc:
            notes.append(str(exc))
        p_res = pr.value if pr.value is not None else fout.p
        feats["final rounding precision"] = f"{p_res} bits" + (
            f" ({params['result_format']})" if params.get("result_format") else "")
        rd = (_f.probe_rounding_c(bb, F, allow_sub) if is_narrow
              else _f.probe_rounding(bb, st, F, min(p_res, fout.p), c_early, allow_sub))
        feats["final rounding"] = f"{rd.mode} ({rd.layout})"
        params["rounding"] = _engine_rounding(rd, "rz", notes)
        sk = None if is_narrow else _f.probe_sticky(bb, st, F, c_early, allow_sub)
        if sk is None:
            unobs["sticky"] = "no vector of this format puts terms just below the window next to U and -U"
        params["sticky"] = bool(sk)
        if sk and Fm.value is not None:
            # a single eps one bit below the window is represented exactly by the sticky
            # bit, so FusedSum(U, -U, eps) reads one bit too many
            F = Fm.value - 1
            params["F"] = F
            feats["fused-sum precision"] = f"F = {F} fractional bits + sticky (neab = {F - (fout.p - 1)})"
        feats["sticky bit"] = {True: "yes", False: "no", None: "not observable"}[sk]
        if c_early and not is_narrow and not sk:
            _rounded_alignment(bb, st, F, allow_sub, params, feats, unobs, notes)
        if not sub.inputs:
            params["flush_subnormals"] = True
        if sub.outputs_from_products is False or (not sub.c_passthrough and params.get("result_format") is None):
            params["flush_output_subnormals"] = True
    model: Model | None = None
    ok: list[int | None] = []
    try:
        model = Model(**params)
        model.operation.check_kernel(model)   # the engine's kernels hold it, or a ValueError says why
    except (ValueError, TypeError) as exc:
        notes.append(f"no model: {exc}")
        model = None
    if model is not None and "F" in unobs and verify_model and model.operation.windowed:
        # Step 4's revision (Xie Section 3.1.4): F is only bounded below by the probes;
        # take the smallest F above the bound that survives randomised testing
        for F_try in range(model.F, _MAX_F + 1):
            trial = model.with_params(F=F_try)
            n_try, cex_try = verify(bb, trial, n=2 * n_verify, seed=seed + 1)
            if cex_try is None:
                model = trial
                unobs["F"] += f"; F = {F_try} is the smallest value above the bound that passes verification"
                break
    step(4)
    searched: dict[str, list[Any]] = {}
    alternatives: list[dict[str, Any]] = []
    passed: dict[str, Any] = {}   # the model _revise returns, if it passed the final verification's inputs
    if verify_model and (model is None or model.operation.revised_by_search):
        model = _revise(bb, model, params, n_verify, seed, searched, alternatives, unobs, notes, allow_sub,
                        passed)
    if model is not None and model.operation.has_zero_exponent:
        ez, ok = _search_zero_exponent(bb, model.params, allow_sub, seed)
        if not ok:
            notes.append("no zero-operand exponent explains the tiny-value probes")
        elif None in ok:
            rest = [e for e in ok if e is not None]
            if len(rest) == len(ok) - 1 and rest:
                unobs["zero_exponent"] = (f"every candidate in [{min(rest)}, {max(rest)}] and none explain the "
                                          "outputs: " + OBSERVABLE_NOTES["zero_exponent"])
            feats["zero-operand exponent"] = "not observable (no effect on outputs)"
        else:
            model = model.with_params(zero_exponent=ez)
            found = [e for e in ok if e is not None]   # None is not among them here
            feats["zero-operand exponent"] = f"{ez}" + (f" (consistent: {min(found)}..{max(found)})"
                                                       if len(found) > 1 else "")
            if len(found) > 1:
                unobs["zero_exponent"] = f"values {min(found)}..{max(found)} are equivalent on these formats"
    consistent: dict[str, list[Any]] = dict(searched)
    if model is not None and model.operation.has_zero_exponent and ok:
        consistent["zero_exponent"] = ok
    full = dict(model.params) if model is not None else {**Model().params, **params}
    n_ok, cex = 0, None
    verified = False
    step(5)
    if model is not None and verify_model:
        try:
            if passed.get("params") == model.params:   # these very inputs, in _revise: not run twice
                n_ok, cex = passed["n"], None
            else:
                n_ok, cex = verify(bb, model, n=n_verify, seed=seed)
            verified = cex is None
        except ValueError as exc:
            notes.append(f"verification impossible: {exc}")
    inferred = tuple(dict.fromkeys(tuple(params) + tuple(searched)
                                   + (("zero_exponent",) if "zero_exponent" in consistent else ())))
    step(6)
    return InferenceResult(full, model, verified, cex, n_ok, feats, unobs, notes, bb.name, consistent, inferred,
                           alternatives)




_MAX_TRIES = 8   # randomised verifications of the search's survivors before giving up
#: the subnormal handling the search varies besides :data:`~workbench.probes.search.SEARCHED`
_FLAGS = ("flush_subnormals", "flush_output_subnormals")


def _revise(bb: BlackBox, model: Model | None, params: dict[str, Any], n_verify: int, seed: int,
            searched: dict[str, list[Any]], alternatives: list[dict[str, Any]], unobs: dict[str, str],
            notes: list[str], allow_sub: bool, passed: dict[str, Any]) -> Model | None:
    """Xie et al.'s Step 4 revision, made exhaustive: when the probes' proposal fails a
    first randomised test (or has no model, or came with doubts in ``notes``), keep
    every model of the searched space (T-FDPA, E-FDPA, FMA chains; TR-/GTR-FDPA around
    their proposal) that reproduces the outputs
    (:func:`~workbench.probes.search.consistent_models`), under every subnormal handling
    the probes could not rule out (a flag seen off is certain; one seen on may be a narrow
    window dropping the subnormal), and return the one closest to
    the proposal that passes randomised verification (three seeds); each failure's
    counterexample prunes the rest, and the rest are kept only if they pass a randomised
    comparison of their own.  Parameters on which the
    consistent models differ go to ``searched`` (values) and ``unobs`` (why), the
    models themselves to ``alternatives``.  Without a proposal (``model`` None) each
    survivor's zero-operand exponent is probed before it is verified (``allow_sub``:
    whether the probes may use subnormal inputs).  A returned model that passed the final
    verification's own inputs (``n_verify`` at ``seed``) is recorded in ``passed``
    (``params``, ``n``: outputs compared), so that the caller need not run them again."""

    cex = None
    if model is not None:
        # the final verification's own inputs: a proposal returned here is one that passes it (a
        # smaller check at another seed let T-FDPA fp8 L 2 F 37, near-exact, through as an E-FDPA
        # that the final verification then failed, with no search in between)
        n_ok, cex = verify(bb, model, n=n_verify, seed=seed)
        # TR-/GTR-FDPA are searched around when the probes had doubts: a window narrower than
        # the output can hide the final rounding and F2 from every probe (and from most random
        # inputs).  An FMA chain and an E-FDPA with L = 1 are always searched: each step of
        # both is the exact a * b + c rounded once, so the two kinds can be twins
        op = model.operation
        if cex is None and not op.has_twin(model) and (not op.searched_when_uncertain or not notes):
            passed.update(params=model.params, n=n_ok)
            return model
    base = dict(model.params) if model is not None else {**Model().params, **params}
    extra = [] if cex is None else [(cex.a, cex.b, cex.c)]
    why = ("had no model" if model is None else "failed randomised testing" if cex is not None
           else "was uncertain")
    probed = tuple(base[f] for f in _FLAGS)
    # a flag the probes saw off is certain (a subnormal came through); one they saw on may
    # be a window narrower than the output dropping the subnormal: search both values
    variants = [probed] + [v for v in ((False, False), (False, True), (True, False), (True, True))
                           if v != probed and all(on or not x for x, on in zip(v, probed))]
    survivors = []   # over every subnormal variant, the probes' first, then closest to the proposal
    for variant in variants:
        survivors += consistent_models(bb, {**base, **dict(zip(_FLAGS, variant))}, seed=seed, extra=extra)
    found = len(survivors)
    # the window edges of every survivor's windows first: one battery rules out the whole
    # run of windows a rare input parts (one counterexample per try would spend the tries
    # on F, F + 1, ... of one kind and never reach the model that explains the outputs)
    survivors = separate_windows(bb, survivors, seed=seed + 5)
    tries = 0
    found_trial: Model | None = None   # verified, but fails the larger batteries
    while survivors and tries < _MAX_TRIES:   # closest to the probes first
        p = survivors[0]
        trial = Model(**p)
        if model is None and trial.zero_exponent is None and trial.operation.has_zero_exponent:
            # without a proposal nothing probed the zero-operand exponent: probe it for this survivor
            ez, _ = _search_zero_exponent(bb, p, allow_sub, seed)
            p = {**p, "zero_exponent": ez}
            trial = Model(**p)
        tries += 1
        cx = None
        for s in (seed, seed + 3 + tries, seed + 101 + tries):   # the final verification's seed, fresh ones
            n_s, cx = verify(bb, trial, n=n_verify, seed=s)
            if cx is not None:
                break
            if s == seed:
                n_trial = n_s
        if cx is not None:   # its counterexample rules out every survivor that agrees with it there
            survivors = reproduce(bb, survivors[1:], [(cx.a, cx.b, cx.c)])
            continue
        # the others are reported only if they too pass a randomised comparison (a battery
        # can miss the rare inputs, e.g. a product far below the output's range, that part them);
        # the trial too: the comparison's batteries are larger than a verification's (a unit whose
        # window is narrower than the output shows its final rounding only on rare carries)
        survivors = [p, *survivors[1:]]     # the trial as verified (with its probed zero exponent)
        kept = separate_windows(bb, agree_on_random_inputs(bb, survivors, seed=seed), seed=seed)
        if not kept and found_trial is None:
            found_trial = trial
        if not kept or kept[0] is not p:   # the trial fails there: verify the next
            survivors = kept
            continue
        survivors = kept
        alternatives.extend(survivors)
        for k in SEARCHED + _FLAGS:
            vals = sorted({q.get(k) for q in survivors
                           if k != "late_rounding" or q.get("c_position") == "late"}, key=str)
            if len(vals) > 1:
                searched[k] = vals
                unobs[k] = (f"{len(survivors)} models reproduce every output seen and differ here: {k} in "
                            f"{vals}; reporting {p.get(k)!r}, the value closest to the probes")
            elif k in unobs and vals[0] is not None:
                # one value of a parameter the kind has: the search determined what the probes could
                # not (their reason may be the proposal's, e.g. an E-FDPA's missing window)
                del unobs[k]
                searched[k] = vals
        if model is None or trial.params != model.params:
            notes.append(f"the probes' proposal {why}; a search of the model space kept "
                         f"{len(survivors)} model(s) consistent with every output; reporting the one closest "
                         "to the probes, verified below")
        elif len(survivors) > 1:
            notes.append(f"a search of the model space kept {len(survivors)} models consistent with every "
                         "output, the probes' proposal among them (reported, verified below)")
        if len(survivors) > 1:
            split = [k for k in SEARCHED + _FLAGS if k in searched]
            notes.append(f"the outputs cannot separate {', '.join(split)}: every model in `alternatives` "
                         "reproduces them")
        passed.update(params=trial.params, n=n_trial)
        return trial
    if found_trial is not None:
        # nothing passes the larger batteries: report the first model that passed randomised
        # verification, and say what it misses
        notes.append(f"the probes' proposal {why}; the reported model passed randomised verification but "
                     "differs from the black box on a few inputs of the search's larger batteries (e.g. the "
                     "sign of a zero), and no model of the searched space reproduces them all")
        return found_trial
    if not found:
        notes.append(f"the probes' proposal {why}, and no model of the searched space reproduces the outputs "
                     "(T-FDPA with L in 1..64, F in 0..56, any rounding, sticky bit or not, c early or late, E-FDPA, "
                     "FMA chains; for a TR-/GTR-FDPA proposal every F2 and final rounding): the unit is outside it")
    else:
        notes.append(f"the probes' proposal {why}; the models of the searched space that reproduce the search's "
                     f"batteries fail randomised testing ({tries} tried)")
    return model


def _exact_fdpa(bb: BlackBox, st: _f.Structure, allow_sub: bool, sub: _f.Subnormals, params: dict[str, Any],
                feats: dict[str, Any], unobs: dict[str, str], notes: list[str]) -> bool:
    """E-FDPA (Xie Algorithm 6): FPRev saw blocks that keep the running sum next to U and
    -U; confirm that no window exists (eps down to the formats' smallest values survives
    FusedSum(U, -U, eps)) and probe the single final rounding.  Returns False (T-FDPA
    with a wide window) when some eps is lost."""
    fout = bb.out_fmt
    ex = _f.probe_exact(bb, st, allow_sub)
    if ex.value is not None:
        notes.append(f"FPRev sees non-swamped blocks but FusedSum(U, -U, eps) loses eps ({ex.evidence}): "
                     "a T-FDPA with a wide window")
        return False
    feats["fused sum"] = f"exact: eps 2^-{ex.bound} U survives next to U and -U ({ex.evidence['kept_down_to']})"
    params.update(kind="e-fdpa", L=st.L)
    unobs["F"] = "E-FDPA keeps every bit of c + sum a_k b_k: there is no alignment window"
    unobs["sticky"] = "no term is ever dropped in an exact sum"
    wide = fout.p + 8   # any F above the final rounding's resolution: the sum is exact
    pr = _f.probe_result_precision(bb, st, wide, True, allow_sub)
    try:
        params["result_format"] = _result_format(pr.value, fout)
    except ValueError as exc:
        notes.append(str(exc))
    p_res = pr.value if pr.value is not None else fout.p
    rd = _f.probe_rounding(bb, st, 4 * wide, min(p_res, fout.p), True, allow_sub)
    feats["final rounding"] = f"{rd.mode} ({rd.layout}), once, on the exact sum"
    params["rounding"] = _engine_rounding(rd, "rne", notes)
    if not sub.inputs:
        params["flush_subnormals"] = True
    if sub.outputs_from_products is False or (not sub.c_passthrough and params.get("result_format") is None):
        params["flush_output_subnormals"] = True
    return True


def _gst_fdpa(bb: BlackBox, st: _f.Structure, gr: _f.ExactGroups, allow_sub: bool, sub: _f.Subnormals,
              params: dict[str, Any], feats: dict[str, Any], unobs: dict[str, str], notes: list[str]) -> None:
    """GST-FDPA (Xie Algorithm 9, Table 5): :func:`~workbench.probes.features.probe_exact_groups`
    found groups of G consecutive products summed exactly and a fused sum of the group
    terms and c truncated to F bits below c's exponent; the final rounding is probed with
    c carrying the range, as for narrow formats.  The scales are not inputs of
    f(A, B, C): the proposed model takes NVFP4's convention (UE4M3, one scale per group)
    when the engine's fixed point holds it, else E8M0 - with unit scales they agree."""
    assert gr.G is not None and gr.F is not None
    G, F = gr.G, gr.F
    params.update(kind="gst-fdpa", L=st.L, G=G, F=F, c_position="early", sticky=False)
    feats["exact groups"] = (f"G = {G}: pairs of half window bits survive only inside one group of {G} "
                             f"consecutive products; eps 2^-{gr.group_exact_to} U kept next to U and -U in a group")
    feats["fused-sum precision"] = f"F = {F} fractional bits below c's exponent (group terms truncated, RZ_F)"
    if gr.group_lost_from is not None:
        notes.append(f"a group lost eps 2^-{gr.group_lost_from} U next to U and -U: the engine's GST-FDPA sums "
                     "groups exactly")
    unobs["group_F"] = (f"groups are summed exactly as far as the formats show (eps down to 2^-{gr.group_exact_to} "
                        "U kept next to U and -U inside a group); GST-FDPA has no group precision")
    rd = _f.probe_rounding_c(bb, F, allow_sub)
    feats["final rounding"] = f"{rd.mode} ({rd.layout})"
    params["rounding"] = _engine_rounding(rd, "rz", notes)
    unobs["result_format"] = "not probed for GST-FDPA (the fused sum is rounded to the output format)"
    if not sub.inputs:
        params["flush_subnormals"] = True
    if sub.outputs_from_products is False or not sub.c_passthrough:
        params["flush_output_subnormals"] = True
    for sf in ("ue4m3", "e8m0"):
        try:
            candidate = Model(**{**params, "k_block": G, "scale_format": sf})
            candidate.operation.check_kernel(candidate)   # the fixed point holds the groups, or a ValueError
        except ValueError:
            continue
        params.update(k_block=G, scale_format=sf)
        break
    else:
        notes.append(f"no scale format lets the engine's fixed point hold {params['in_format']} groups of {G} "
                     f"with F = {F}")
        params.update(k_block=G, scale_format="e8m0")
    unobs["k_block/scale_format"] = (OBSERVABLE_NOTES["k_block/scale_format"]
                                     + f"; proposing k_block = G = {G}, scale_format = {params['scale_format']}")


def _rounded_alignment(bb: BlackBox, st: _f.Structure, F: int, allow_sub: bool, params: dict[str, Any],
                       feats: dict[str, Any], unobs: dict[str, str], notes: list[str]) -> None:
    """TR-FDPA / GTR-FDPA (Xie Algorithms 10-11, Section 6.2.4): c rounded down (not
    truncated) when aligned with the products' sum; then the grouping of the products
    and the second precision F2 of the products' sum next to a larger c."""
    al = _f.probe_alignment(bb, st, F, allow_sub)
    if al is None:
        return
    feats["alignment below the window"] = f"products {al.products}, c {al.c}" + (
        f" (c dropped from 2^-{al.c_dropped_from} of the window's top)" if al.c_dropped_from else "")
    gr = _f.probe_groups(bb, st, F, allow_sub)
    if gr.description != "one group":
        feats["truncation groups"] = gr.description or f"unrecognised ({gr.mismatches} mismatches to the closest)"
    if al.c != "rd":
        if al.c == "rz" and gr.description == "one group" and al.products in ("rz", "unprobed"):
            # the round-toward-zero twin of TR-FDPA (Xie Figure 3, Phi'_TR-FDPA): the
            # alignment is symmetric as in T-FDPA, but the products' sum keeps F2 > F bits
            # next to a larger c, which one fused window of F bits cannot
            F2m = _f.probe_second_precision(bb, F, allow_sub)
            if F2m.value is not None and F2m.value > F:
                feats["second precision"] = (f"F2 = {F2m.value} > F (products' sum truncated next to a larger c; "
                                             f"{F2m.evidence.get('family', '-')})")
                params.update(kind="tr-fdpa", F2=F2m.value, alignment_rounding="rz")
                if params.get("result_format") is not None:
                    notes.append("TR-FDPA rounds to the output format; the probed narrower final precision is "
                                 "dropped")
                    params["result_format"] = None
                return
        if al.c not in ("rz", "symmetric", "unprobed"):
            notes.append(f"c is aligned as {al.c!r} ({al.table}); the engine models RZ (T-FDPA) or RD (TR-FDPA)")
        if gr.description != "one group":
            notes.append(f"products truncated in groups ({gr.description}) without round-down alignment of c: "
                         "not an elementary operation the engine models")
        return
    if al.products not in ("rz", "unprobed"):
        notes.append(f"products aligned as {al.products!r}: TR-FDPA truncates them toward zero (RZ_F)")
    if gr.description == "one group":
        proposed = "tr-fdpa"
    elif gr.labels == [k % 2 for k in range(st.L)]:
        proposed = "gtr-fdpa"
    else:
        notes.append(f"truncation groups {gr.description or 'unrecognised'}: the engine models one group "
                     "(TR-FDPA) or even/odd products (GTR-FDPA); proposing TR-FDPA")
        proposed = "tr-fdpa"
    if proposed == "gtr-fdpa" and al.c_dropped_from != F + 2:
        notes.append(f"GTR-FDPA drops c below E - F - 1 (t >= {F + 2}); the probe saw c dropped from "
                     f"t = {al.c_dropped_from}")
    if proposed == "tr-fdpa" and al.c_dropped_from is not None:
        notes.append(f"c far below the window is dropped (t >= {al.c_dropped_from}) as in GTR-FDPA, but the "
                     "products form one group")
    if al.c_kept_to is not None and al.c_kept_to != F:
        notes.append(f"c keeps {al.c_kept_to} fractional bits, the products {F}: the engine uses one F for both")
    F2m = _f.probe_second_precision(bb, F, allow_sub)
    if F2m.value is None:
        F2 = max(F, min(F2m.bound, _MAX_F)) if F2m.bound else F
        unobs["F2"] = (f"every bit of T down to 2^-{F2m.bound} of c was kept: F2 >= {F2m.bound}" if F2m.bound
                       else "the final rounding hides T's bits next to a larger c") + f"; proposing F2 = {F2}"
    else:
        F2 = F2m.value
    feats["second precision"] = f"F2 = {F2} (products' sum rounded down next to a larger c; {F2m.evidence.get('family', '-')})"
    params.update(kind=proposed, F2=F2)
    if params.get("result_format") is not None:
        notes.append("TR-/GTR-FDPA round to the output format; the probed narrower final precision is dropped")
        params["result_format"] = None


def _closest_structure(sr: _f.StructureResult) -> _f.Structure:
    iu = np.triu_indices(sr.K, 1)
    best, best_err = None, None
    for st in _f._candidates(sr.K):
        err = int((_f.fprev_prediction(st, sr.K)[iu] != sr.matrix[iu]).sum())
        if best_err is None or err < best_err:
            best, best_err = st, err
    assert best is not None
    return best
