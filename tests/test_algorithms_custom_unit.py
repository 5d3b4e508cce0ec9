"""The splitting algorithms on the user's unit (issue 55 item 6): words in the unit's
own input format.

Markidis et al. (2018, Section V), Ootomo & Yokota (2022, eq. (24), as Valpey et al.
2025 Section 6 restate it), CUTLASS 3xTF32 and Henry et al. (2019, Section III)
split into fp16 / tf32 / bf16, the formats of the papers' units; on a unit reading a
custom format (here e6m9: p = 10, bias 31, emin = -30) the same splits round to that
format, and Ootomo-Yokota's residual is scaled by 2^p of it (2^10; 2^11 = 2^p for
fp16 in the paper).  Oracles: every split is recomputed here with Fractions and a
rounding function written in this file (not ``workbench.round``); the products are
either exact Fraction sums (on inputs where the unit is exact) or the unit's
:func:`workbench.gemm` applied, in the algorithm's published order, to the words
this file computed.  On the papers' presets the default (the unit's format) is the
explicit paper word format, bit for bit.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import algorithms
import workbench as wb
from workbench.engine.model import Model

E6M9 = wb.FloatFormat.custom("e6m9", exp_bits=6, man_bits=9)
UNIT = wb.custom_model(E6M9, "fp32", kind="t-fdpa", L=8, F=24, rounding="rz")

#: (precision p with the implicit bit, emin, largest finite value) of each word format,
#: from its definition: e6m9 has 9 fraction bits and bias 2^5 - 1 = 31
E6M9_DEF = (10, -30, (2 - Fraction(1, 2**9)) * 2**31)
BF16_DEF = (8, -126, (2 - Fraction(1, 2**7)) * 2**127)
FP8_E4M3_DEF = (4, -6, Fraction(448))   # OCP E4M3: S.1111.110 is the largest finite value


def test_the_formats_are_as_defined_here():
    for fmt, (p, emin, largest) in ((E6M9, E6M9_DEF), (wb.format("bf16"), BF16_DEF),
                                    (wb.format("fp8_e4m3"), FP8_E4M3_DEF)):
        assert (fmt.p, fmt.emin, Fraction(fmt.max)) == (p, emin, largest)
        assert fmt.subnormals and fmt.signed
    assert UNIT.in_format == "e6m9" and UNIT.out_format == "fp32"


def rnd(x: Fraction, fmt: tuple[int, int, Fraction], mode: str = "rne") -> Fraction:
    """x rounded to the format (p, emin, largest) with subnormals: ``"rne"`` to nearest
    even, ``"rna"`` to nearest ties away from zero, ``"rz"`` toward zero."""
    p, emin, largest = fmt
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()   # floor(log2 a) or one more
    if Fraction(2) ** e > a:
        e -= 1
    q = Fraction(2) ** (max(e, emin) - p + 1)                   # the spacing at a
    n, r = divmod(a, q)
    up = {"rne": r > q / 2 or (r == q / 2 and n % 2 == 1), "rna": r >= q / 2, "rz": False}[mode]
    m = (n + up) * q
    assert m <= largest, (x, m)
    return m if x > 0 else -m


def fractions(X: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in X]


def array(F: list[list[Fraction]]) -> np.ndarray:
    out = np.array([[float(v) for v in row] for row in F])
    assert all(Fraction(float(v)) == v for row in F for v in row)   # the words are float64 values
    return out


def split_ref(X: np.ndarray, fmt: tuple[int, int, Fraction], words: int, *, scale: int = 1,
              modes: tuple[str, ...] = ("rne",)) -> list[np.ndarray]:
    """w_1 = fl(x), w_j = fl((x - sum_{i<j} w_i / scale^(i-1)) * scale^(j-1)), in Fractions;
    ``modes[j]`` (the last one repeated) is word j's rounding."""
    out = []
    R = fractions(X)
    for j in range(words):
        mode = modes[min(j, len(modes) - 1)]
        W = [[rnd(r * scale**j, fmt, mode) for r in row] for row in R]
        R = [[r - w / scale**j for r, w in zip(rr, ww)] for rr, ww in zip(R, W)]
        out.append(array(W))
    return out


def fp32_data(shape: tuple[int, int], seed: int, emin: int, emax: int) -> np.ndarray:
    """fp32 values m 2^e, m ~ N(0, 1), e uniform on emin..emax."""
    rng = np.random.default_rng(seed)
    return np.ldexp(rng.standard_normal(shape), rng.integers(emin, emax + 1, shape)).astype(np.float32).astype(np.float64)


def exact_friendly(shape: tuple[int, int], seed: int) -> np.ndarray:
    """s (n + j 2^-12) with s = +-1, integers 1 <= n <= 7 and 0 <= j <= 3: the high
    e6m9 word is s n (j 2^-12 is below half the spacing at n, 2^-10 at n = 1) and the
    residual s j 2^-12; every product sum of one row by one column has its bits
    between 2^-12 and 2^9, so the unit (F = 24) and fp32 hold it exactly."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], shape) * (rng.integers(1, 8, shape) + rng.integers(0, 4, shape) * 2.0**-12)


def exact_sum(pairs: list[tuple[np.ndarray, np.ndarray, Fraction]], C: np.ndarray) -> np.ndarray:
    """sum over (X, Y, w) of w X Y, plus C, in Fractions (entry by entry)."""
    M, N = C.shape
    out = np.empty((M, N))
    for i in range(M):
        for j in range(N):
            s = Fraction(float(C[i, j]))
            for X, Y, w in pairs:
                s += w * sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(X[i], Y[:, j])), Fraction(0))
            out[i, j] = float(s)
            assert Fraction(out[i, j]) == s and np.float32(out[i, j]) == out[i, j]   # an fp32 value
    return out


def sequential(pairs: list[tuple[np.ndarray, np.ndarray]], C: np.ndarray | None, model: Model) -> np.ndarray:
    """The unit's products one after another over all of K, sharing the accumulator."""
    D = C
    for X, Y in pairs:
        D = wb.gemm(X, Y, D, model=model)
    return np.asarray(D, dtype=np.float64)


def interleaved(pairs: list[tuple[np.ndarray, np.ndarray]], C: np.ndarray, model: Model) -> np.ndarray:
    """For each block of L columns, the unit's products in turn (one k-tile after another)."""
    D = C
    K = pairs[0][0].shape[1]
    for k0 in range(0, K, model.L):
        for X, Y in pairs:
            D = wb.gemm(X[:, k0:k0 + model.L], Y[k0:k0 + model.L], D, model=model)
    return np.asarray(D, dtype=np.float64)


# --------------------------------------------------------------------------- Markidis


@pytest.mark.parametrize("seed", [0, 1])
def test_markidis_splits_into_the_units_format_and_chains_its_products(seed):
    """A16 = e6m9(A), R_A = e6m9(A - A16), unscaled (small residuals land among e6m9's
    subnormals); D = chain of R_A B16, A16 R_B, A16 B16 from C (Markidis Section V)."""
    A = fp32_data((4, 19), seed, -28, 6)
    B = fp32_data((19, 3), seed + 10, -28, 6)
    C = fp32_data((4, 3), seed + 20, -4, 4)
    D, words = algorithms.markidis(A, B, C, model=UNIT, return_words=True)
    A16, RA = split_ref(A, E6M9_DEF, 2)
    B16, RB = split_ref(B, E6M9_DEF, 2)
    for key, want in (("A16", A16), ("R_A", RA), ("B16", B16), ("R_B", RB)):
        np.testing.assert_array_equal(words[key], want, err_msg=key)
    assert (np.abs(RA[RA != 0]) < 2.0**-30).any()   # some residuals are e6m9 subnormals
    np.testing.assert_array_equal(D, sequential([(RA, B16), (A16, RB), (A16, B16)], C, UNIT))
    D4 = algorithms.markidis(A, B, C, model=UNIT, terms=4)
    np.testing.assert_array_equal(D4, sequential([(RA, RB), (RA, B16), (A16, RB), (A16, B16)], C, UNIT))


def test_markidis_on_the_custom_unit_is_the_exact_sum_of_its_word_products():
    A = exact_friendly((3, 8), 3)
    B = exact_friendly((8, 2), 4)
    C = exact_friendly((3, 2), 5)
    D, words = algorithms.markidis(A, B, C, model=UNIT, return_words=True)
    A16, RA = np.round(A), A - np.round(A)      # the words, by construction of the data
    B16, RB = np.round(B), B - np.round(B)
    np.testing.assert_array_equal(words["A16"], A16)
    np.testing.assert_array_equal(words["R_B"], RB)
    np.testing.assert_array_equal(D, exact_sum([(RA, B16, Fraction(1)), (A16, RB, Fraction(1)),
                                                (A16, B16, Fraction(1))], C))


# ---------------------------------------------------------------------- Ootomo-Yokota


@pytest.mark.parametrize("seed", [0, 1])
def test_ootomo_yokota_scales_the_residual_by_2_to_the_p_of_the_units_format(seed):
    """A_hi = e6m9(A), R_A = e6m9((A - A_hi) 2^10) (p = 10; fp16's p = 11 gives the
    paper's 2^11).  D_hi: each k-block of A_hi B_hi from 0 in the unit, added to the
    fp32 accumulator (from C) with round-to-nearest; D_lo: A_hi R_B, R_A B_hi per
    k-tile in the unit; D = fl32(D_hi + fl32(D_lo / 2^10))."""
    A = fp32_data((4, 21), seed, -28, 6)
    B = fp32_data((21, 3), seed + 10, -28, 6)
    C = fp32_data((4, 3), seed + 20, -4, 4)
    D, words = algorithms.ootomo_yokota(A, B, C, model=UNIT, return_words=True)
    A_hi, RA = split_ref(A, E6M9_DEF, 2, scale=2**10)
    B_hi, RB = split_ref(B, E6M9_DEF, 2, scale=2**10)
    for key, want in (("A_hi", A_hi), ("R_A", RA), ("B_hi", B_hi), ("R_B", RB)):
        np.testing.assert_array_equal(words[key], want, err_msg=key)
    D_hi = C.astype(np.float32)
    for k0 in range(0, A.shape[1], UNIT.L):
        block = wb.gemm(A_hi[:, k0:k0 + UNIT.L], B_hi[k0:k0 + UNIT.L], model=UNIT).astype(np.float32)
        D_hi = D_hi + block                                # float32 addition: round to nearest even
    D_lo = interleaved([(A_hi, RB), (RA, B_hi)], np.zeros((4, 3)), UNIT)
    np.testing.assert_array_equal(words["D_hi"], D_hi)
    np.testing.assert_array_equal(words["D_lo"], D_lo)
    np.testing.assert_array_equal(D, D_hi + (D_lo / 2**10).astype(np.float32))


def test_ootomo_yokota_on_the_custom_unit_is_the_exact_sum_of_its_word_products():
    A = exact_friendly((3, 16), 6)
    B = exact_friendly((16, 2), 7)
    C = exact_friendly((3, 2), 8)
    D, words = algorithms.ootomo_yokota(A, B, C, model=UNIT, return_words=True)
    A_hi, RA = np.round(A), (A - np.round(A)) * 2**10   # j 2^-12 2^10 = j / 4: exact
    B_hi, RB = np.round(B), (B - np.round(B)) * 2**10
    np.testing.assert_array_equal(words["R_A"], RA)
    np.testing.assert_array_equal(words["B_hi"], B_hi)
    np.testing.assert_array_equal(D, exact_sum([(A_hi, B_hi, Fraction(1)), (A_hi, RB, Fraction(1, 2**10)),
                                                (RA, B_hi, Fraction(1, 2**10))], C))


@pytest.mark.parametrize("preset,fmt", [(("A100", "bf16", "fp32"), BF16_DEF),
                                        (("H100", "fp8_e4m3", "fp32"), FP8_E4M3_DEF)])
def test_ootomo_yokota_scale_on_other_formats_no_paper_variant_uses(preset, fmt):
    """bf16 words: residual scaled by 2^8; fp8 e4m3 words: by 2^4 (2^p of the format)."""
    A = fp32_data((3, 16), 2, -3, 3)
    B = fp32_data((16, 2), 3, -3, 3)
    _, words = algorithms.ootomo_yokota(A, B, model=wb.preset(*preset), return_words=True)
    A_hi, RA = split_ref(A, fmt, 2, scale=2 ** fmt[0])
    np.testing.assert_array_equal(words["A_hi"], A_hi)
    np.testing.assert_array_equal(words["R_A"], RA)


# ------------------------------------------------------------ CUTLASS 3xTF32, bf16xN


def test_cutlass_split_on_the_custom_unit():
    """big = e6m9(x) toward zero, small = e6m9(x - big) to nearest ties away (CUTLASS's
    truncation and round-half-ulp-truncate); per k-tile small_A big_B, big_A small_B,
    big_A big_B in the unit's accumulator from C."""
    A = fp32_data((4, 20), 4, -20, 6)
    B = fp32_data((20, 3), 5, -20, 6)
    C = fp32_data((4, 3), 6, -4, 4)
    D, words = algorithms.cutlass_xtf32(A, B, C, model=UNIT, return_words=True)
    Ab, As = split_ref(A, E6M9_DEF, 2, modes=("rz", "rna"))
    Bb, Bs = split_ref(B, E6M9_DEF, 2, modes=("rz", "rna"))
    for key, want in (("A_big", Ab), ("A_small", As), ("B_big", Bb), ("B_small", Bs)):
        np.testing.assert_array_equal(words[key], want, err_msg=key)
    np.testing.assert_array_equal(D, interleaved([(As, Bb), (Ab, Bs), (Ab, Bb)], C, UNIT))


def test_bf16xn_split_on_the_custom_unit():
    """b_1 = e6m9(x), b_2 = e6m9(x - b_1), b_3 = e6m9(x - b_1 - b_2) (Henry et al.
    Section III, to nearest even); bf16x3: b^A_1 b^B_2, b^A_2 b^B_1, then b^A_1 b^B_1
    (smaller terms first), each over all of K."""
    A = fp32_data((3, 17), 7, -10, 6)
    B = fp32_data((17, 2), 8, -10, 6)
    D, words = algorithms.bf16xn(A, B, model=UNIT, return_words=True)
    Aw = split_ref(A, E6M9_DEF, 3)
    Bw = split_ref(B, E6M9_DEF, 3)
    for got, want in zip(words["A"] + words["B"], Aw + Bw):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(D, sequential([(Aw[0], Bw[1]), (Aw[1], Bw[0]), (Aw[0], Bw[0])], None, UNIT))


# ------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name,kw,words", [
    ("markidis", {"word_format": "fp16"}, "fp16"),
    ("ootomo_yokota", {"variant": "halfhalf"}, "fp16"),
    ("ootomo_yokota", {"variant": "tf32tf32"}, "tf32"),
    ("cutlass_xtf32", {"word_format": "tf32"}, "tf32"),
    ("bf16xn", {"word_format": "bf16"}, "bf16"),
])
def test_a_word_format_the_unit_cannot_hold_is_refused_naming_both(name, kw, words):
    with pytest.raises(ValueError, match=f"{name}.*: {words} words are not all representable in the preset's "
                                         "input format e6m9"):
        algorithms.get(name)(np.ones((2, 8)), np.ones((8, 2)), model=UNIT, **kw)


def test_a_narrower_word_format_the_unit_holds_is_taken():
    """fp8 e4m3 words (p = 4, largest 448, smallest subnormal 2^-9) are e6m9 values."""
    A = fp32_data((2, 8), 9, -2, 2)
    B = fp32_data((8, 2), 10, -2, 2)
    _, words = algorithms.markidis(A, B, model=UNIT, word_format="fp8_e4m3", return_words=True)
    A16, RA = split_ref(A, FP8_E4M3_DEF, 2)
    np.testing.assert_array_equal(words["A16"], A16)
    np.testing.assert_array_equal(words["R_A"], RA)


# --------------------------------------------- the papers' presets: the figures do not move

PAPER_PRESETS = {"A100 fp16": ("A100", "fp16", "fp32"), "A100 bf16": ("A100", "bf16", "fp32"),
                 "A100 tf32": ("A100", "tf32", "fp32"), "V100 fp16": ("V100", "fp16", "fp32")}
#: (algorithm, preset, the explicit call of the papers' words: the default before issue 55)
EXPLICIT = [
    *(("markidis", p, {"word_format": PAPER_PRESETS[p][1]}) for p in PAPER_PRESETS),
    ("ootomo_yokota", "A100 fp16", {"variant": "halfhalf"}),
    ("ootomo_yokota", "V100 fp16", {"variant": "halfhalf"}),
    ("ootomo_yokota", "A100 tf32", {"variant": "tf32tf32"}),
    ("cutlass_xtf32", "A100 tf32", {"word_format": "tf32"}),
    ("bf16xn", "A100 bf16", {"word_format": "bf16"}),
]


@pytest.mark.parametrize("name,preset,kw", EXPLICIT)
def test_the_default_on_the_papers_presets_is_the_papers_word_format_bit_for_bit(name, preset, kw):
    model = wb.preset(*PAPER_PRESETS[preset])
    f = algorithms.get(name)
    for seed, (emin, emax) in enumerate([(-15, 14), (-2, 1), (-40, -15)]):
        A = fp32_data((6, 37), seed, emin, emax)
        B = fp32_data((37, 5), seed + 10, emin, emax)
        C = fp32_data((6, 5), seed + 20, emin, emax)
        got, got_words = f(A, B, C, model=model, return_words=True)
        want, want_words = f(A, B, C, model=model, return_words=True, **kw)
        assert got.tobytes() == want.tobytes()
        assert got_words.keys() == want_words.keys()
        for key, w in want_words.items():   # arrays, or lists of arrays (bf16xn's words) or index pairs
            assert np.asarray(got_words[key]).tobytes() == np.asarray(w).tobytes(), key
