"""The test suite of Fasi, Higham, Mikaitis & Pranesh 2021 (PeerJ CS 7:e330), generalised.

Each test of the paper's Sections "Support for subnormal numbers", "Accuracy of the
dot products", "Rounding modes in tensor core computations" and "Features of the
accumulator" is written with constants derived from the formats (Khattak & Mikaitis
2025, Section III-A) instead of fp16/fp32 numbers: u = 2^-p_out plays the role of
2^-24, the input's smallest normal the role of 2^-14, and so on.  As the paper says of
the T4 (Section "NVIDIA Turing tensor cores"), constants that probe below the
accumulator's last bit move down by the number of extra alignment bits: the suite
first measures them (the "extra bits in the alignment" test) and uses
``delta = 2^-(p_out + neab)``.  ``n`` is the number of products fused (4 in the paper;
the block size when known).

:func:`fasi_suite` returns a dict test name -> :class:`FasiTest` (inputs' description,
outputs, and the conclusion the paper draws from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .blackbox import BlackBox, as_black_box
from .vectors import Cases, fits

__all__ = ["fasi_suite", "FasiTest"]


@dataclass
class FasiTest:
    name: str
    outputs: list[float]
    conclusion: Any
    meaning: str


def fasi_suite(black_box: Any, in_format: str | None = None, out_format: str | None = None,
               n: int = 4) -> dict[str, FasiTest]:
    """Run the Fasi et al. suite on a black box; see the module docstring."""
    bb: BlackBox = as_black_box(black_box, in_format, out_format)
    fin, fout = bb.in_fmt, bb.out_fmt
    K = max(n, 4) if bb.max_k is None else min(max(n, 4), bb.max_k)
    n = min(n, K)
    p = fout.p
    u = 2.0 ** -p
    out: dict[str, FasiTest] = {}

    def run(rows: list[tuple[dict[int, float], float]]) -> np.ndarray:
        cs = Cases(K, fin, fout)
        for prods, c in rows:
            cs.add(prods, c)
        return cs.run(bb)

    def raw(rows: list[tuple[list[float], list[float], float]]) -> np.ndarray:
        cs = Cases(K, fin, fout)
        for a, b, c in rows:
            cs.add_raw(list(a) + [0.0] * (K - len(a)), list(b) + [0.0] * (K - len(b)), c)
        return cs.run(bb)

    # ---------------------------------------------------------- subnormals
    kb = min(fin.emax, 2)
    d = raw([([fin.min_subnormal], [2.0 ** kb], 0.0), ([fin.min_normal], [0.5], 0.0)]
            + ([([], [], fout.min_subnormal)] if fout.subnormals else []))
    out["subnormal_inputs"] = FasiTest("subnormal_inputs", [float(d[0])], bool(d[0] == fin.min_subnormal * 2.0 ** kb),
                                       "a = smallest subnormal of the input, b = 2^k: product kept")
    out["subnormal_from_normal"] = FasiTest("subnormal_from_normal", [float(d[1])], bool(d[1] == fin.min_normal / 2),
                                            "a = smallest normal input, b = 1/2: the input-subnormal result is returned")
    if fout.subnormals:
        out["subnormal_c"] = FasiTest("subnormal_c", [float(d[2])], bool(d[2] == fout.min_subnormal),
                                      "c = smallest output subnormal, A = B = 0: c returned unchanged")

    # ------------------------------------------------------ exact products
    x = 1 - 2.0 ** -fin.p
    d = raw([([x] * n, [x] * n, 0.0)])
    exact = n * x * x
    out["exact_products"] = FasiTest("exact_products", [float(d[0])], bool(d[0] == exact),
                                     "a_i = b_i = 1 - 2^-p_in: n (1 - 2^-p_in)^2 returned exactly")
    d = raw([([x, x], [x, 2.0 ** -fin.p], 0.0)])
    out["exact_products_sum"] = FasiTest("exact_products_sum", [float(d[0])],
                                         bool(d[0] == x * x + x * 2.0 ** -fin.p),
                                         "a11 = b11 = a12 = 1 - 2^-p_in, b21 = 2^-p_in: sum of unrounded products")

    # ---------------------------------------- extra alignment bits (guard digits)
    d = run([({0: 1.0}, -(1 - u))])
    neab = 0 if d[0] == 2 * u else (1 if d[0] == u else None)
    out["extra_alignment_bits"] = FasiTest(
        "extra_alignment_bits", [float(d[0])], neab,
        "b11 = 1, c = -(1 - u): 2u means no extra bit (relative error 1, V100), u means at least one "
        "(T4/A100; c has only p_out bits, so more cannot show - the generalised F probe measures them)")
    delta = 2.0 ** -(p + (neab or 0))

    # ------------------------------------ order of accumulation / rounding errors
    rows = []
    for big in range(n + 1):
        prods = {k: (1.0 if k == big else delta) for k in range(n)}
        rows.append((prods, 1.0 if big == n else delta))
    d = run(rows)
    out["largest_first"] = FasiTest(
        "largest_first", [float(v) for v in d], bool(np.all(d == 1.0)),
        "one addend 1, the others delta, in every position: 1 each time means the terms are aligned to the "
        "largest and each delta is lost (up to n rounding errors; order does not matter)")

    # ------------------------------------------------------------- rounding
    r = 0.75 * 2.0 ** (1 - (p - 1))
    d = run([({0: 2.0, 1: r}, 0.0), ({0: -2.0, 1: -r}, 0.0)])
    up = bool(d[0] > 2.0)
    dn = bool(d[1] < -2.0)
    mode = {(True, True): "rn or ra", (True, False): "ru", (False, True): "rd", (False, False): "rz"}[(up, dn)]
    out["rounding"] = FasiTest("rounding", [float(d[0]), float(d[1])], mode,
                               "b11 = 2, b21 = 3/4 ulp(2) and the negated pair: 2 and -2 mean round towards zero")
    if fout.p <= fin.p + 1:  # low-precision output: the paper's binary16 test of the final conversion
        q = fout.min_subnormal
        try:
            d = run([({0: q / 2, 1: q / 4}, 0.0)])
            out["output_rounding"] = FasiTest("output_rounding", [float(d[0])],
                                              "rn or ru" if d[0] == q else "rz or rd",
                                              "products q/2 + q/4 (q: smallest output subnormal): q means not RZ")
        except ValueError:
            pass

    # --------------------------------------------- normalisation, carries, monotonicity
    m = n
    d = run([({k: delta for k in range(m)}, 1 - u)])
    out["normalisation_in_addition"] = FasiTest(
        "normalisation_in_addition", [float(d[0])], "final only" if d[0] > 1.0 else "every partial sum",
        "c = 1 - u, B = delta: a result above 1 means the partial sums are not normalised")
    c_sub = -1 + delta
    if float(np.float64(c_sub)) == c_sub and abs(c_sub) >= fout.min_normal:
        try:
            if fits(c_sub, fout):
                d = run([({0: 1.0, 1: -delta}, c_sub)])
                out["normalisation_in_subtraction"] = FasiTest(
                    "normalisation_in_subtraction", [float(d[0])],
                    "not normalised" if d[0] == 2 * delta else ("normalised" if d[0] == 0 else "other"),
                    "c = -1 + delta, B = (1, -delta): 2 delta means no normalisation after subtraction")
        except ValueError:
            pass
    c2 = 1 + 2 * u * 2 + 2 * u          # 1 + 2^-22 + 2^-23 for fp32: the two last bits set
    ok = True
    vals = []
    for perm in range(4):
        prods = {((k + perm) % 4): v for k, v in enumerate([1.0, 1.0, 1.0, 2 * u])}
        d = run([(prods, c2)])
        vals.append(float(d[0]))
        ok &= bool(d[0] == 4 + 4 * u * 2)
    out["carry_bits_2"] = FasiTest("carry_bits_2", vals, ok,
                                   "c = 1 + 2^(2-p) + 2^(1-p), B = permutations of (1, 1, 1, 2^(1-p)): 4 + 2^(3-p) "
                                   "exactly means at least two extra bits for carries")
    if n >= 4:
        d = run([({0: 1.0, 1: 1.5, 2: 1.75, 3: 1.875}, 1.875)])
        out["carry_bits_3"] = FasiTest("carry_bits_3", [float(d[0])], bool(d[0] == 8.0),
                                       "c = 1.875, B = (1, 1.5, 1.75, 1.875): 8 means a third carry bit")
    d = run([({k: delta for k in range(m)}, 1 - u), ({k: delta for k in range(m)}, 1.0)])
    out["monotonicity"] = FasiTest("monotonicity", [float(d[0]), float(d[1])],
                                   "non-monotonic" if d[0] > d[1] else "monotonic on this vector",
                                   "B = delta, c = 1 - u then c = 1: a larger c giving a smaller d")
    return out
