"""Discriminating inputs between two models of a matrix unit, by structured and
randomised search.

Valpey et al. (2025) Section 4 generate, for two hypotheses about a tensor core, an
input on which they give different results ("discriminating inputs", Listing 1.1), one
output element at a time: a row ``a`` of A, a column ``b`` of B and an element ``c`` of C.
:func:`discriminate` does the same for any two :class:`~workbench.engine.Model`
(presets or custom models) by search, cheapest first:

1. structured candidates with the fewest nonzero terms and the simplest values: c alone
   over the whole exponent range of the output format (zero-operand exponent effects,
   subnormals); one product alone over the whole product exponent range; one product
   against c or against a second product at every gap from 0 to beyond F + p (swamping,
   ties at the final rounding position), at block boundaries when the block sizes L
   differ; then a few terms mixing near-equal magnitudes of both signs
   (cancellation) and near-maximal significands (carries out of the window);
2. randomised dense candidates, evaluated as whole matrix products;
3. shrinking of the first discriminating input found: terms are removed and
   significands simplified while the two models still disagree.

The optional exact back end (``backend="smt"``, :mod:`workbench.discrimination.smt`)
encodes both T-FDPA accumulators in bit vectors as in Valpey et al. Sections 4.3 and 5
and either returns a distinguishing input or proves the two models equivalent for
that K.  Every input returned has been re-run through :func:`workbench.gemm` on both
models (:meth:`Discrimination.recheck`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..numbers import formats as _formats
from .. import units
from ..engine.model import Model
from ..units import UnitSpec
from . import _eval, smt
from .outcome import Discrimination, DiscriminationOutcome, _score, model_label

__all__ = [
    "Discrimination", "DiscriminationOutcome", "DiscriminationNotFound", "discriminate",
    "discriminate_outcome", "resolve_model", "model_label",
]



class DiscriminationNotFound(UserWarning):
    """Warning issued when :func:`discriminate` returns ``None``; its message says
    whether no discriminating input exists (identical arithmetic, or proved
    equivalent by the SMT back end) or none was found within the budget."""


# ------------------------------------------------------------------ model names
def resolve_model(spec: UnitSpec) -> Model:
    """A :class:`Model` from a model or a unit name: :func:`workbench.units.resolve`
    (a catalogue name such as ``"hopper/wgmma/fp16->fp32"``,
    ``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]`` such as ``"H100:fp16:fp32"`` or
    ``"B200:fp16:fp32::rn"``, or the path of a unit file ending in ``.toml``)."""
    return units.resolve(spec)


# ------------------------------------------------------------------ candidates
class _Batch:
    """Rows of candidates (a, b, c) for the pairs layout."""

    def __init__(self, K: int) -> None:
        self.K = K
        self.a: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self.c: list[float] = []

    def add(self, terms: list[tuple[int, float, float]], c: float) -> None:
        a = np.zeros(self.K)
        b = np.zeros(self.K)
        for k, x, y in terms:
            a[k] = x
            b[k] = y
        self.a.append(a)
        self.b.append(b)
        self.c.append(c)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.a:
            return np.zeros((0, self.K)), np.zeros((0, self.K)), np.zeros(0)
        return np.array(self.a), np.array(self.b), np.array(self.c)


def _rep1(x: float, fmt: _formats.FloatFormat) -> float:
    """One value rounded to nearest-even into ``fmt`` in plain Python (overflow clipped
    to the largest finite value): cheaper than a vectorised call for one scalar."""
    if x == 0 or not math.isfinite(x):
        return x
    e = max(math.frexp(abs(x))[1] - 1, fmt.emin)
    q = math.ldexp(1.0, e - fmt.man_bits)
    r = round(x / q) * q
    return math.copysign(min(abs(r), fmt.max), x)


def _rep(vals: np.ndarray, fmt: _formats.FloatFormat) -> np.ndarray:
    """Values rounded (RNE) into ``fmt``; overflow clipped to the largest finite value."""
    r = np.asarray(_formats.round(np.asarray(vals, dtype=np.float64), fmt, "rne"), dtype=np.float64)
    big = ~np.isfinite(r) & np.isfinite(vals)
    r[big] = np.copysign(fmt.max, r[big])
    return r


class _Space:
    """The input space of a pair of models: formats, K, value generators, and how
    outputs are compared (``"bits"`` or ``"value"``)."""

    def __init__(self, ma: Model, mb: Model, K: int, compare: str = "bits",
                 exponent_range: tuple[int, int] | None = None, subnormals: bool = True) -> None:
        self.ma, self.mb, self.K, self.compare = ma, mb, K, compare
        self.exponent_range = exponent_range
        self.subnormals = subnormals
        self.fin = ma.in_fmt
        self.fout = ma.out_fmt
        m = self.fin.man_bits
        u = 2.0 ** -m
        self.sigs = sorted({1.0, 1.0 + u, 2.0 - u, 1.5 if m >= 1 else 1.0, 1.0 + 2 * u if m >= 2 else 1.0})
        self.sig_pairs = [(1.0, 1.0), (1.0 + u, 1.0 + u), (2.0 - u, 2.0 - u), (1.5 if m else 1.0, 1.0), (1.0 + u, 1.0)]
        Ls = sorted({ma.L, mb.L})
        pos = {0, 1, Ls[0] - 1, Ls[0], K - 1}
        if len(Ls) > 1:
            pos |= {Ls[1] - 1, Ls[1]}
        self.positions = sorted(p for p in pos if 0 <= p < K)
        self.emin_sub = self.fin.emin - (m if subnormals else 0)   # the smallest input exponent drawn
        self.emax_in = self.fin.emax
        if exponent_range is not None:
            self.emin_sub = max(self.emin_sub, exponent_range[0])
            self.emax_in = min(self.emax_in, exponent_range[1])
        Fs = [x.F for x in (ma, mb) if "F" in x.operation.param_names]
        self.gap_max = max(Fs + [self.fout.p]) + self.fout.p + 6

    def product(self, sa: float, sb: float, e: int, sign: float = 1.0) -> tuple[float, float]:
        """Operands ``a, b`` in the input format with ``a * b`` close to ``sa*sb*2^e``."""
        ea = min(max(-((-e) // 2), self.emin_sub), self.emax_in)
        eb = min(max(e - ea, self.emin_sub), self.emax_in)
        return _rep1(sign * sa * 2.0 ** ea, self.fin), _rep1(sb * 2.0 ** eb, self.fin)

    def c_value(self, s: float, e: int, sign: float = 1.0) -> float:
        return _rep1(sign * s * 2.0 ** e, self.fout)

    def admissible(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Rows representable in both models' formats (the generators produce values of
        ``model_a``'s formats, so only ``model_b``'s are checked, when they differ)."""
        ok = np.ones(a.shape[0], dtype=bool)
        for mdl in (self.mb,) if (self.mb.in_fmt, self.mb.out_fmt) != (self.fin, self.fout) else ():
            ok &= _formats.is_representable(a, mdl.in_fmt).all(axis=1)
            ok &= _formats.is_representable(b, mdl.in_fmt).all(axis=1)
            ok &= _formats.is_representable(c, mdl.out_fmt)
        ok &= self.allowed(a, self.fin).all(axis=1) & self.allowed(b, self.fin).all(axis=1)
        ok &= self.allowed(c, self.fout)
        return ok & np.isfinite(c) & np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)

    def allowed(self, x: np.ndarray, fmt: _formats.FloatFormat) -> np.ndarray:
        """Entries that keep to the requested exponent range (zeros always do) and, with
        ``subnormals=False``, are no subnormals of ``fmt``."""
        ok = np.ones(np.shape(x), dtype=bool)
        if self.exponent_range is None and self.subnormals:
            return ok
        nz = (x != 0) & np.isfinite(x)
        with np.errstate(divide="ignore"):
            e = np.where(nz, np.floor(np.log2(np.where(nz, np.abs(x), 1.0))), 0)
        if self.exponent_range is not None:
            lo, hi = self.exponent_range
            ok &= ~nz | ((e >= lo) & (e <= hi))
        if not self.subnormals:
            ok &= ~nz | (e >= fmt.emin)
        return ok


def _structured_levels(sp: _Space) -> list[tuple[str, _Batch]]:
    """Structured candidate batches, fewest nonzero terms first."""
    K = sp.K
    levels: list[tuple[str, _Batch]] = []
    fo = sp.fout
    uo = 2.0 ** -fo.man_bits
    # level 1a: c alone (zero products carry the zero exponent), whole exponent range
    b1 = _Batch(K)
    for e in range(fo.emin - fo.man_bits, fo.emax + 1):
        for s in (1.0, 1.0 + uo, 2.0 - uo, 1.5):
            for sign in (1.0, -1.0):
                b1.add([], sp.c_value(s, e, sign))
    levels.append(("c alone over the exponent range (zero-operand exponent, subnormal c)", b1))
    # level 1b: one product alone over the product exponent range
    b2 = _Batch(K)
    e_lo, e_hi = 2 * sp.emin_sub, 2 * sp.fin.emax + 1
    for e in range(e_lo, e_hi + 1):
        for sa, sb in sp.sig_pairs:
            for sign in (1.0, -1.0):
                for p in sp.positions:
                    x, y = sp.product(sa, sb, e, sign)
                    b2.add([(p, x, y)], 0.0)
    levels.append(("one product alone over the exponent range (subnormals, zero-operand exponent)", b2))
    # level 2a: c against one product at every gap (swamping, ties, sticky bits)
    b3 = _Batch(K)
    for cs in (1.0, 1.0 + uo, 2.0 - uo):
        for csign in (1.0, -1.0):
            c = sp.c_value(cs, 0, csign)
            for g in range(-4, sp.gap_max + 1):
                for sa, sb in sp.sig_pairs:
                    for sign in (1.0, -1.0):
                        for p in (sp.positions[0], sp.positions[-1]):
                            x, y = sp.product(sa, sb, -g, sign)
                            b3.add([(p, x, y)], c)
    levels.append(("c against one product at every gap (swamping, rounding ties)", b3))
    # level 2b: two products at every gap, at block boundaries
    b4 = _Batch(K)
    pairs = {(0, 1)}
    for p in sp.positions:
        if p > 0:
            pairs.add((0, p))
            pairs.add((p - 1, p))
    pairs = {(i, j) for i, j in pairs if 0 <= i < j < K}
    for i, j in sorted(pairs):
        for big in ((1.0, 1.0), (2.0 - 2.0 ** -sp.fin.man_bits,) * 2):
            x0, y0 = sp.product(*big, 0)
            for g in range(-2, sp.gap_max + 1):
                for sa, sb in sp.sig_pairs[:3]:
                    for sign in (1.0, -1.0):
                        x, y = sp.product(sa, sb, -g, sign)
                        b4.add([(i, x0, y0), (j, x, y)], 0.0)
    levels.append(("two products at every gap, across block boundaries (swamping, cancellation)", b4))
    return levels


def _structured_random(sp: _Space, rng: np.random.Generator, nterms: int, n: int) -> _Batch:
    """``n`` candidates with ``nterms`` nonzero terms (c counted) drawn from simple values:
    near-equal magnitudes of both signs (cancellation), gaps near F and p (swamping,
    ties), near-maximal significands (carries)."""
    K = sp.K
    bt = _Batch(K)
    sigs = np.array(sp.sigs)
    for _ in range(n):
        use_c = rng.random() < 0.5
        k = min(nterms - int(use_c), K)
        if k < 1:
            k, use_c = 1, False
        pos = np.sort(rng.choice(K, size=k, replace=False))
        terms = []
        for p in pos:
            g = 0 if rng.random() < 0.45 else int(rng.integers(-2, sp.gap_max + 1))
            sign = 1.0 if rng.random() < 0.6 else -1.0
            sa, sb = rng.choice(sigs), rng.choice(sigs)
            x, y = sp.product(float(sa), float(sb), -g, sign)
            terms.append((int(p), x, y))
        c = 0.0
        if use_c:
            g = 0 if rng.random() < 0.5 else int(rng.integers(-2, sp.gap_max + 1))
            c = sp.c_value(float(rng.choice([1.0, 2.0 - 2.0 ** -sp.fout.man_bits, 1.0 + 2.0 ** -sp.fout.man_bits])),
                           -g, 1.0 if rng.random() < 0.6 else -1.0)
        bt.add(terms, c)
    return bt


def _random_cross(sp: _Space, rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense random A (n, K), B (K, m), C (n, m): random significands, exponents near 0
    with a geometric spread, random signs and sparsity."""
    K = sp.K
    spread = rng.integers(0, sp.gap_max + 1)

    def draw(shape: tuple[int, ...], fmt: _formats.FloatFormat) -> np.ndarray:
        sig = 1.0 + rng.random(shape)
        e = -rng.geometric(0.5 if rng.random() < 0.5 else 0.15, size=shape) + 1
        e = np.minimum(e, 0) if spread == 0 else np.maximum(e, -int(spread))
        sign = np.where(rng.random(shape) < 0.6, 1.0, -1.0)
        v = _rep(sign * sig * np.exp2(e.astype(float)), fmt)
        v[rng.random(shape) < rng.random() * 0.5] = 0.0
        return v

    A = draw((n, K), sp.fin)
    B = draw((K, m), sp.fin)
    C = draw((n, m), sp.fout)
    C[rng.random((n, m)) < 0.3] = 0.0
    return A, B, C


# ------------------------------------------------------------------ shrinking
def _truncate(v: float, bits: int) -> float:
    """``v`` with its significand cut to ``bits`` bits after the leading one (toward 0):
    still representable in every format that holds ``v``."""
    if v == 0:
        return v
    m, e = math.frexp(abs(v))
    t = math.floor(math.ldexp(m, bits + 1))
    return math.copysign(math.ldexp(t, e - bits - 1), v)


def _variants(a: np.ndarray, b: np.ndarray, c: float) -> list[tuple[np.ndarray, np.ndarray, float]]:
    out: list[tuple[np.ndarray, np.ndarray, float]] = []
    nz = np.flatnonzero((a != 0) & (b != 0))
    if c != 0:
        out.append((a, b, 0.0))
        for bits in range(0, 3):
            t = _truncate(c, bits)
            if t != c:
                out.append((a, b, t))
    for i in nz:
        a2, b2 = a.copy(), b.copy()
        a2[i] = b2[i] = 0.0
        out.append((a2, b2, c))
        for bits in range(0, 3):
            for arr_is_a in (True, False):
                a3, b3 = a.copy(), b.copy()
                tgt = a3 if arr_is_a else b3
                t = _truncate(float(tgt[i]), bits)
                if t != tgt[i]:
                    tgt[i] = t
                    out.append((a3, b3, c))
        free = [j for j in range(int(i)) if a[j] == 0 or b[j] == 0]
        if free:  # move the term to an earlier free position
            j = free[0]
            a4, b4 = a.copy(), b.copy()
            a4[j], b4[j], a4[i], b4[i] = a[i], b[i], 0.0, 0.0
            out.append((a4, b4, c))
    for i in np.flatnonzero((a != 0) != (b != 0)):  # an operand of a zero product: clear it
        a5, b5 = a.copy(), b.copy()
        a5[i] = b5[i] = 0.0
        out.append((a5, b5, c))
    return out


def _shrink(sp: _Space, a: np.ndarray, b: np.ndarray, c: float, max_rounds: int = 60) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Simplify a discriminating input while the two models still disagree."""
    evaluated = 0
    best = _score(a, b, c)
    for _ in range(max_rounds):
        vs = _variants(a, b, c)
        if not vs:
            break
        A = np.array([v[0] for v in vs])
        B = np.array([v[1] for v in vs])
        C = np.array([v[2] for v in vs])
        ok = sp.admissible(A, B, C)
        if not ok.any():
            break
        A, B, C = A[ok], B[ok], C[ok]
        da = _eval.eval_pairs(sp.ma, A, B, C)
        db = _eval.eval_pairs(sp.mb, A, B, C)
        evaluated += A.shape[0]
        diff = np.flatnonzero(~_eval.agree(da, db, sp.compare))
        if diff.size == 0:
            break
        scores = [(_score(A[r], B[r], float(C[r])), r) for r in diff]
        s, r = min(scores)
        if s >= best:
            break
        best, a, b, c = s, A[r].copy(), B[r].copy(), float(C[r])
    return a, b, c, evaluated


# ------------------------------------------------------------------ entry points
def _check_models(ma: Model, mb: Model) -> None:
    for name, m in (("model_a", ma), ("model_b", mb)):
        if not isinstance(m, Model):
            raise TypeError(f"{name} must be a workbench Model or preset name, got {type(m).__name__}")
        if m.operation.scaled:
            raise ValueError(f"{name}: kind={m.kind!r} needs block scale factors; discriminate supports "
                             f"unscaled models (pass the scaled arithmetic as a custom t-fdpa model)")
        if m.operation.integer:
            raise ValueError(f"{name}: kind={m.kind!r} is an integer unit; the search draws floating-point "
                             "inputs. Integer units differ only in overflow (wrap or saturate, and where a "
                             "saturating unit clamps): products near 2^31 through workbench.gemm tell them apart")


def discriminate_outcome(model_a: UnitSpec, model_b: UnitSpec, *, K: int | None = None,
                         budget: int = 200_000, seed: int = 0, backend: str = "search",
                         shrink: bool = True, smt_timeout: float = 60.0,
                         compare: str = "bits", exponent_range: tuple[int, int] | None = None,
                         subnormals: bool = True) -> DiscriminationOutcome:
    """Like :func:`discriminate` but returns the full :class:`DiscriminationOutcome`
    (result, status and reason, candidates evaluated)."""
    ma, mb = resolve_model(model_a), resolve_model(model_b)
    _check_models(ma, mb)
    if backend not in ("search", "smt"):
        raise ValueError(f"backend={backend!r}: expected 'search' or 'smt'")
    if K is None:
        K = max(ma.L, mb.L)
    if not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K={K!r}: expected a positive number of dot-product terms")
    K = int(K)
    if not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget={budget!r}: expected a non-negative number of candidates")
    if compare not in _eval.COMPARISONS:
        raise ValueError(f"compare={compare!r}: expected one of {_eval.COMPARISONS}")
    if exponent_range is not None:
        if (not isinstance(exponent_range, (tuple, list)) or len(exponent_range) != 2
                or not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in exponent_range)
                or exponent_range[0] > exponent_range[1]):
            raise ValueError(f"exponent_range={exponent_range!r}: expected (lo, hi) integers with lo <= hi "
                             f"(every nonzero a, b and c has 2^lo <= |x| < 2^(hi + 1))")
        exponent_range = (int(exponent_range[0]), int(exponent_range[1]))
    if not isinstance(subnormals, bool):
        raise TypeError(f"subnormals={subnormals!r}: expected True or False")
    if ma.params == mb.params:
        return DiscriminationOutcome(None, "none exists",
                                     f"the two models have identical arithmetic parameters "
                                     f"({ma.describe()}): no input can tell them apart")
    if backend == "smt":
        if exponent_range is not None or not subnormals:
            raise ValueError("exponent_range and subnormals=False restrict the search back end's inputs; the SMT "
                             "back end searches every input: use backend='search'")
        if compare != "bits":
            raise ValueError(f"compare={compare!r}: the SMT back end compares output bits; use backend='search'")
        return smt.discriminate_smt(ma, mb, K=K, timeout=smt_timeout)
    sp = _Space(ma, mb, K, compare, exponent_range, subnormals)
    rng = np.random.default_rng(seed)
    tried = 0
    found: tuple[np.ndarray, np.ndarray, float, str] | None = None

    def scan(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
        nonlocal tried
        ok = sp.admissible(a, b, c)
        a, b, c = a[ok], b[ok], c[ok]
        if a.shape[0] == 0:
            return None
        da = _eval.eval_pairs(ma, a, b, c)
        db = _eval.eval_pairs(mb, a, b, c)
        tried += a.shape[0]
        diff = np.flatnonzero(~_eval.agree(da, db, compare))
        if diff.size == 0:
            return None
        r = min(diff, key=lambda i: _score(a[i], b[i], float(c[i])))
        return a[r].copy(), b[r].copy(), float(c[r])

    for label, batch in _structured_levels(sp):
        if tried >= budget:
            break
        hit = scan(*batch.arrays())
        if hit is not None:
            found = (*hit, "structured")
            break
    if found is None:
        for nterms in range(3, min(K + 1, 9) + 1):
            if tried >= budget:
                break
            hit = scan(*_structured_random(sp, rng, nterms, 400).arrays())
            if hit is not None:
                found = (*hit, "structured")
                break
    while found is None and tried < budget:
        n, m = 256, 64
        A, B, C = _random_cross(sp, rng, n, m)
        okA = sp.admissible(A, A, np.zeros(n))
        okB = sp.admissible(B.T, B.T, np.zeros(m))
        okC = np.ones_like(C, dtype=bool)
        for mdl in (ma, mb):
            okC &= _formats.is_representable(C, mdl.out_fmt)
        okC &= sp.allowed(C, sp.fout)
        A[~okA] = 0.0
        B[:, ~okB] = 0.0
        C[~okC] = 0.0
        da = _eval.eval_cross(ma, A, B, C)
        db = _eval.eval_cross(mb, A, B, C)
        tried += n * m
        diff = np.argwhere(~_eval.agree(da, db, compare))
        if diff.size:
            i, j = min(diff.tolist(), key=lambda ij: _score(A[ij[0]], B[:, ij[1]], float(C[ij[0], ij[1]])))
            found = (A[i].copy(), B[:, j].copy(), float(C[i, j]), "random")
    if found is None:
        return DiscriminationOutcome(None, "none found within budget",
                                     f"no discriminating input among {tried} candidates (K={K}, budget {budget}); "
                                     f"the models may still differ: raise the budget or K",
                                     candidates=tried)
    a, b, c, method = found
    if shrink:
        a, b, c, n_sh = _shrink(sp, a, b, c)
        tried += n_sh
    A, B, C = a[None, :], b[:, None], np.array([[c]])
    res = Discrimination(a=a, b=b, c=c, out_a=float(_eval.gemm_f64(ma, A, B, C)[0, 0]),
                         out_b=float(_eval.gemm_f64(mb, A, B, C)[0, 0]), model_a=ma, model_b=mb,
                         method=method, candidates=tried, compare=compare)
    if not res.recheck():  # pragma: no cover - would be an engine nondeterminism bug
        raise RuntimeError(f"internal error: the input found does not discriminate on re-run: {res}")
    return DiscriminationOutcome(res, "found", f"found after {tried} candidates ({method})", candidates=tried)


def discriminate(model_a: UnitSpec, model_b: UnitSpec, *, K: int | None = None, budget: int = 200_000,
                 seed: int = 0, backend: str = "search", shrink: bool = True,
                 smt_timeout: float = 60.0, compare: str = "bits", exponent_range: tuple[int, int] | None = None,
                 subnormals: bool = True) -> Discrimination | None:
    """The simplest input found on which two models give different output bits.

    Parameters
    ----------
    model_a, model_b:
        :class:`~workbench.engine.Model` objects (presets from :func:`workbench.preset`,
        :func:`workbench.custom_model`) or preset names (``"H100:fp16:fp32"``,
        ``"hopper/wgmma/fp16->fp32"``).  Inputs are drawn from ``model_a``'s formats and
        kept only when representable in ``model_b``'s.
    K:
        Dot-product length (default: the larger block size L; use a larger K to
        exercise chaining of several blocks).
    budget:
        Upper bound on candidate inputs evaluated by the search (each run on both
        models).
    backend:
        ``"search"`` (structured then randomised search, then shrinking) or ``"smt"``
        (exact: z3 bit-vector encoding of both T-FDPA accumulators, Valpey et al.
        Sections 4.3 and 5; needs ``pip install z3-solver``; T-FDPA models with equal
        formats, c early, no interleaving; ``smt_timeout`` seconds).
    shrink:
        Simplify the found input (fewer nonzero terms, shorter significands) while it
        still discriminates.
    compare:
        ``"bits"`` (default): any difference in the output bits, the sign of a zero
        included; ``"value"``: only different numbers (+0 and -0 count as equal).
    exponent_range:
        ``(lo, hi)``: every nonzero input (a, b and c) has ``2^lo <= |x| < 2^(hi+1)``
        (as :func:`find_worse`'s), to look past the underflow corners between vendors;
        None (default): the formats' whole range.  Search back end only.
    subnormals:
        False: no input is subnormal in its format (a and b in the input format, c in
        the output format); True (default) allows them.  Search back end only.

    Returns
    -------
    A :class:`Discrimination` (``.a``, ``.b``, ``.c``, ``.out_a``, ``.out_b``), re-checked
    through :func:`workbench.gemm`; or ``None``, with a :class:`DiscriminationNotFound`
    warning saying whether no discriminating input exists (identical arithmetic, or
    proved equivalent by SMT for this K) or none was found within the budget.  Use
    :func:`discriminate_outcome` to get the status as data.
    """
    out = discriminate_outcome(model_a, model_b, K=K, budget=budget, seed=seed, backend=backend,
                               shrink=shrink, smt_timeout=smt_timeout, compare=compare,
                               exponent_range=exponent_range, subnormals=subnormals)
    if out.result is None:
        warnings.warn(DiscriminationNotFound(f"{out.status}: {out.reason}"), stacklevel=2)
    return out.result
