"""Multi-word GEMM against Khattak & Mikaitis (2025), Figure 7 (paper_data/khattak2025_fig7).

Our matrices come from our own seeds (MATLAB's rng stream cannot be reproduced), so
the comparison is of magnitudes.  The published run split the inputs by truncation
(CPFloat keeps the round-toward-zero mode GEMM.m sets for C; see
``algorithms/multiword.py``), so the tests against the paper's splitting-limited
curves use ``split_rounding="rz"``: ours/published geometric means 0.5-2.3.  With the
default round-to-nearest split (the published algorithm) the splitting-limited
errors are 2-5x (fp8 p = 4/6 on B200: 4-18x) below the paper's; the older tests
below keep that default with the wider one-sided bands stated in each.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
import pytest

import workbench
import workbench.numbers.inputs
from algorithms import multiword
from workbench.matmul.bounds import multiword_bound
from workbench.numbers.metrics import normwise_error_inf

FIG7 = Path(__file__).resolve().parents[1] / "paper_data" / "khattak2025_fig7"
PAPER_FORMAT = {"fp16": "binary16", "bf16": "bfloat16", "fp8_e5m2": "fp8-e5m2"}
needs_data = pytest.mark.skipif(not FIG7.is_dir(), reason=f"paper data folder {FIG7} is absent")


def paper_error(fmt: str, words: int, model: str, n: int) -> float:
    """The ``error`` column of the paper's CSV for (format, p, model) at inner dimension n."""
    path = FIG7 / f"matmul_test_{PAPER_FORMAT[fmt]}_binary32_words_{words}_model_{model}.csv"
    with path.open() as fh:
        rows = {int(r["n"]): float(r["error"]) for r in csv.DictReader(fh)}
    return rows[n]


@functools.lru_cache(maxsize=None)
def error(device: str, fmt: str, words: int, n: int, *, variant: str | None = None, seed: int = 0,
          instruction: str | None = None, split_rounding: str = "rne") -> float:
    """Our Figure 7 error: log-uniform 10 x n and n x 10 matrices, error against the exact product."""
    rng = np.random.default_rng([seed, n])
    A = workbench.inputs.log_uniform((10, n), rng)
    B = workbench.inputs.log_uniform((n, 10), rng)
    model = workbench.preset(device, fmt, "fp32", instruction=instruction, variant=variant)
    D = multiword(A, B, model=model, words=words, split_rounding=split_rounding)
    return normwise_error_inf(D, workbench.exact.gemm(A, B), A, B)


def geomean_ratio(device: str, fmt: str, words: int, paper_model: str, split_rounding: str, *,
                  instruction: str | None = None, variant: str | None = None,
                  ns: tuple[int, ...] = (33, 206, 1274), seeds: tuple[int, ...] = (0, 1, 2)) -> float:
    """Geometric mean of ours/published over ns x seeds (the paper has one sample per n)."""
    logs = [np.log(error(device, fmt, words, n, variant=variant, seed=s, instruction=instruction,
                         split_rounding=split_rounding) / paper_error(fmt, words, paper_model, n))
            for n in ns for s in seeds]
    return float(np.exp(np.mean(logs)))


# Splitting-limited curves of Figure 7 (device, instruction, paper model, format, p) and the
# geometric mean ours/published measured with the RNE split (the old default reading).
SPLIT_LIMITED = [
    ("A100", None, "a100", "fp16", 1),      # RNE 0.286, RZ 0.747
    ("B200", None, "b200", "bf16", 1),      # RNE 0.374, RZ 0.839
    ("B200", None, "b200", "fp8_e5m2", 4),  # RNE 0.057, RZ 0.867 (mma.sync: 0.055, 0.862)
    ("B200", None, "b200", "fp8_e5m2", 6),  # RNE 0.271, RZ 0.845 (mma.sync: 0.034, 0.500)
]


@needs_data
@pytest.mark.parametrize("device,instruction,paper_model,fmt,words", SPLIT_LIMITED)
def test_truncated_split_matches_figure7(device, instruction, paper_model, fmt, words):
    """Figure 7 as published (split by round-toward-zero): ours/published geometric mean within 2.5x.

    Nine samples (n = 33, 206, 1274; seeds 0-2).  With the round-to-nearest split the
    same geometric means are 0.057-0.374, all outside the band: the factor the
    reproduction was missing.
    """
    g = geomean_ratio(device, fmt, words, paper_model, "rz", instruction=instruction)
    assert 1 / 2.5 <= g <= 2.5, f"{device} {fmt} p={words}: ours/published geomean {g:.3f}"


@needs_data
@pytest.mark.parametrize("device,instruction,paper_model,fmt,words",
                         [SPLIT_LIMITED[0], SPLIT_LIMITED[2]])
def test_round_to_nearest_split_is_below_figure7(device, instruction, paper_model, fmt, words):
    """The RNE split (the algorithm as published, our default) is systematically more accurate than the paper's run."""
    rne = geomean_ratio(device, fmt, words, paper_model, "rne", instruction=instruction)
    rz = geomean_ratio(device, fmt, words, paper_model, "rz", instruction=instruction)
    assert rne < 0.5 and rne < rz / 2, (rne, rz)


def test_figure7_experiment_uses_the_truncated_split():
    """experiments/fig7_multiword.toml reproduces the published run: every task splits with split_rounding="rz"."""
    from workbench.sweep import spec as sweep_spec
    exp = sweep_spec.parse(Path(__file__).resolve().parents[1] / "experiments" / "fig7_multiword.toml", quick=True)
    assert exp.tasks and {t.spec["params"].get("split_rounding") for t in exp.tasks} == {"rz"}


def test_split_rounding_rz_truncates_every_word():
    """split_rounding="rz": |A_j| words never exceed the residual they round, the default RNE ones sometimes do."""
    rng = np.random.default_rng(11)
    A = workbench.inputs.log_uniform((6, 40), rng)
    B = workbench.inputs.log_uniform((40, 5), rng)
    model = workbench.preset("B200", "fp16", "fp32")
    u = 2.0**-11
    over = {}
    for mode in ("rz", "rne"):
        _, w = multiword(A, B, model=model, words=3, split_rounding=mode, return_words=True)
        r = A * w["row_scale"][:, None]
        over[mode] = False
        for j, Aj in enumerate(w["A"]):
            target = r / u**j
            over[mode] |= bool(np.any(np.abs(Aj) > np.abs(target)))
            assert np.all(np.abs(Aj - target) < 2 ** (1 - 11) * np.abs(target) + 2.0**-24)
            r = r - u**j * Aj
        workbench.check_representable(np.concatenate(w["A"]), "fp16", "word")
    assert not over["rz"] and over["rne"]
    with pytest.raises(ValueError, match="split_rounding"):
        multiword(A, B, model=model, split_rounding="rd")


# (device, variant, paper model, format, largest p in the paper)
ACCUMULATOR_LIMITED = [
    ("V100", None, "v100", "fp16", 3),
    ("A100", None, "a100", "fp16", 3),
    ("B200", None, "b200", "fp16", 3),
    ("B200", "rn", "b200rn", "fp16", 3),
    ("A100", None, "a100", "bf16", 3),
    ("B200", None, "b200", "bf16", 3),
    ("B200", "rn", "b200rn", "bf16", 3),
    ("B200", None, "b200", "fp8_e5m2", 6),
]


@needs_data
@pytest.mark.parametrize("device,variant,paper_model,fmt,words", ACCUMULATOR_LIMITED)
def test_accumulator_limited_error_matches_figure7(device, variant, paper_model, fmt, words):
    """Figure 7 (largest p per format): at n = 1274 and 7847 our error is within a factor 5 of the paper's."""
    for n in (1274, 7847):
        ours = error(device, fmt, words, n, variant=variant)
        ref = paper_error(fmt, words, paper_model, n)
        assert ref / 5 <= ours <= ref * 5, f"{device}/{variant} {fmt} p={words} n={n}: ours {ours:.3e}, paper {ref:.3e}"


@needs_data
@pytest.mark.parametrize("fmt,paper_model", [("fp16", "b200"), ("bf16", "b200"), ("fp8_e5m2", "b200")])
def test_one_word_error_matches_figure7_magnitude(fmt, paper_model):
    """Figure 7, p = 1 (input rounding dominates): ours between paper/10 and paper*2 at n = 112, 1274, 7847."""
    for n in (112, 1274, 7847):
        ours = error("B200", fmt, 1, n)
        ref = paper_error(fmt, 1, paper_model, n)
        assert ref / 10 <= ours <= ref * 2, f"{fmt} n={n}: ours {ours:.3e}, paper {ref:.3e}"


@pytest.mark.parametrize("device,variant,fmt,plateau", [
    ("V100", None, "fp16", True), ("B200", None, "fp16", True), ("B200", "rn", "fp16", True),
    ("B200", None, "bf16", True), ("B200", "rn", "bf16", False),
])
def test_error_falls_with_words_until_accumulator_limits(device, variant, fmt, plateau):
    """Figure 7 at n = 7847: error(p=1) > 10 error(p=2) (paper: 50-400x); then p = 3 either plateaus or falls further.

    fp16 (u = 2^-11): two words already carry the fp32 accumulator's precision, so
    p = 3 is within a factor 2 of p = 2 (the paper's p = 2 and 3 curves coincide:
    V100 4.9e-8 / 2.8e-8, B200 3.6e-7 / 4.0e-7, B200-RN 1.7e-8 / 2.2e-8).  bf16
    (u = 2^-8): on B200-RN p = 3 falls more than 3x below p = 2 (paper 6.0e-7 ->
    2.3e-8), on B200 the truncating accumulator stops it (paper 1.0e-6 -> 5.6e-7).
    """
    n = 7847
    e = [error(device, fmt, p, n, variant=variant) for p in (1, 2, 3)]
    assert e[0] > 10 * e[1], e
    if plateau:
        assert e[1] / 2 <= e[2] <= 2 * e[1], e
    else:
        assert e[2] < e[1] / 3, e


@needs_data
@pytest.mark.parametrize("fmt,words", [("fp16", 3), ("bf16", 3), ("fp8_e5m2", 6)])
def test_b200_rn_beats_rz_at_large_n(fmt, words):
    """Figure 7: B200 with RNE final rounding ("B200-RN") is >= 5x more accurate than B200 (RZ) at n = 7847.

    Paper at n = 7847: fp16 p=3 4.0e-7 vs 2.2e-8 (18x), bf16 p=3 5.6e-7 vs 2.3e-8 (24x),
    fp8-e5m2 p=6 1.1e-6 vs 6.5e-8 (17x).
    """
    n = 7847
    rz = error("B200", fmt, words, n)
    rn = error("B200", fmt, words, n, variant="rn")
    assert rn * 5 < rz, (rz, rn)
    ratio_paper = paper_error(fmt, words, "b200", n) / paper_error(fmt, words, "b200rn", n)
    assert ratio_paper > 5  # the paper's own data shows the same effect


@pytest.mark.parametrize("fmt,words", [("fp16", 2), ("bf16", 3), ("fp8_e5m2", 4)])
def test_error_below_mary_mikaitis_bound(fmt, words):
    """Bound (3.26) of Mary & Mikaitis, the ``bound`` curve of Figure 7, holds at n = 61 and 4281."""
    for n in (61, 4281):
        assert error("B200", fmt, words, n) <= multiword_bound(n, fmt, "fp32")


AMD = [("MI100", "mi100"), ("MI250X", "mi250"), ("MI300X", "mi300x")]


@needs_data
@pytest.mark.parametrize("device,paper_model", AMD)
@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_amd_three_words_match_figure7(device, paper_model, fmt):
    """Figure 7 (AMD CDNA1-3 models): p = 3 error within a factor 5 of the paper's at n = 1274 and 7847."""
    model = workbench.preset(device, fmt, "fp32")
    try:
        workbench.gemm(np.zeros((1, 1)), np.zeros((1, 1)), model=model)
    except ValueError as exc:
        if "not implemented" in str(exc):
            pytest.skip(f"{device} {fmt}: matrix-unit kind {model.kind!r} not implemented in the engine yet")
        raise
    for n in (1274, 7847):
        ours = error(device, fmt, 3, n)
        ref = paper_error(fmt, 3, paper_model, n)
        assert ref / 5 <= ours <= ref * 5, f"{device} {fmt} n={n}: ours {ours:.3e}, paper {ref:.3e}"


def test_alpha_after_and_all_products_options_change_bits_as_documented():
    """Options: alpha applied after the unit (fp64 sum) and all p^2 products; both stay near the default."""
    n = 700
    rng = np.random.default_rng(5)
    A = workbench.inputs.log_uniform((10, n), rng)
    B = workbench.inputs.log_uniform((n, 10), rng)
    model = workbench.preset("B200", "fp16", "fp32")
    exact = workbench.exact.gemm(A, B)
    base = multiword(A, B, model=model, words=2)
    after = multiword(A, B, model=model, words=2, alpha_placement="after")
    full = multiword(A, B, model=model, words=2, products="all")
    assert not np.array_equal(base, after)
    e = [normwise_error_inf(D, exact, A, B) for D in (base, after, full)]
    assert max(e) < 5 * min(e) and max(e) < 1e-6, e


def test_words_reconstruct_scaled_inputs():
    """Mary & Mikaitis Section 4: sum_j u^(j-1) A_j = diag(L) A up to u^p, every word a word-format value."""
    rng = np.random.default_rng(3)
    A = workbench.inputs.log_uniform((4, 50), rng)
    B = workbench.inputs.log_uniform((50, 3), rng)
    _, w = multiword(A, B, model=workbench.preset("B200", "bf16", "fp32"), words=3, return_words=True)
    u = 2.0**-8
    assert w["theta"] == pytest.approx(np.sqrt(float(np.finfo(np.float32).max) / 50))
    scaled = A * w["row_scale"][:, None]
    assert np.abs(scaled).max() <= w["theta"]
    rec = sum(u**j * Aj for j, Aj in enumerate(w["A"]))
    assert np.all(np.abs(rec - scaled) <= u**3 * np.abs(scaled) * 1.0001)
    for Aj in w["A"]:
        workbench.check_representable(Aj, "bf16", "word")
    assert w["pairs"] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    assert np.all(np.log2(w["row_scale"]) == np.round(np.log2(w["row_scale"])))


@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("fmt,words,model,variant", [("fp16", 3, "b200", None), ("fp16", 3, "b200rn", "rn")])
def test_large_n_matches_figure7(fmt, words, model, variant):
    """Figure 7 at n = 88586: within a factor 5 of the paper (slow)."""
    n = 88586
    ours = error("B200", fmt, words, n, variant=variant)
    ref = paper_error(fmt, words, model, n)
    assert ref / 5 <= ours <= ref * 5, (ours, ref)


@needs_data
def test_figure7_b200_fp8_is_a_c_early_truncated_chain():
    """Figure 7's B200 fp8 E5M2 6-word curve at large n is reproduced by a chain that
    keeps c inside the RZ block sum (the B200 default, tcgen05.mma), not by the
    mma.sync model that the GPU vectors validate (c added late with RNE, whose
    error is 10x below the paper's): experiments/fig7_multiword.toml uses the first.
    Measured geometric means: 1.06 and 0.020."""
    ns = (14384, 48329, 162377)
    c_early = geomean_ratio("B200", "fp8_e5m2", 6, "b200", "rz", ns=ns, seeds=(0, 1))
    c_late = geomean_ratio("B200", "fp8_e5m2", 6, "b200", "rz", instruction="mma.sync", ns=ns, seeds=(0, 1))
    assert 1 / 2.5 <= c_early <= 2.5 and c_late < 0.3, (c_early, c_late)
