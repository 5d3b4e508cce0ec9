"""Worked examples and tables of the tensor-core papers, with their stated results.

Plain data, no computation: every expected value below is written as the paper
states it (powers of two are spelled as ``P(e)`` = 2**e, an exact Fraction).
Each case names the device/architecture and the instruction's formats; the
per-device model parameters live in tests/test_reference_mma.py (DEVICE_MODELS),
with their own citations, so other test files can map the same cases onto
other models (e.g. the engine's presets).

Sources (the papers listed in the README's references):
  [Xie]    P. Xie et al., "Bit-Accurate Modeling of GPU Matrix Multiply-Accumulate
           Units" (MMA-Sim), 2025.
  [Fasi]   M. Fasi, N. J. Higham, M. Mikaitis, S. Pranesh, "Numerical behavior of
           NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330, 2021 (eprint 2020 for
           identical tests; the eprint has nothing extra with a stated value).
  [Valpey] B. Valpey et al., "An SMT Formalization of Mixed-Precision Matrix
           Multiplication", NFM 2025.
  [KM]     F. A. Khattak, M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores",
           ACM TACO 2025.

Conventions: ``a`` and ``b`` are the non-zero part of one row of A / column of B
(the papers set the rest to zero), ``c`` is the accumulator input, ``expected``
the value of d (``"nan"`` for NaN, then ``expected_bits`` holds the pattern).
``device`` is an architecture name understood by DEVICE_MODELS in the tests;
``instr`` is (input format, output format).

Left out (ambiguous or no stated number):
  * [Valpey] Table 5 / walk-through: the a, b rows of Table 5 are inputs of the
    Markidis / Ootomo-Yokota *splitting algorithms* (their products are ~2**-14,
    while the walk-through's tensor-core products sum to 1 - 2**-24 at exponent
    -1), so the tensor-core operands of the walk-through are not stated; its
    individual products a1*b1, a2*b2 are not stated either (only their sum).
  * [Valpey] Table 1 "Result (half)": a CUDA-core fp16 product, not an MMA output.
  * [Fasi] T4/A100 reruns "with 2**-24 replaced by 2**-25": outcomes are only
    said to support the same conclusions, the numbers are not stated.
  * [Fasi] final-normalisation RZ test ("replacing one of the 2**-23 by 1"):
    no output value stated.
  * [KM] Sec. V-A custom-model runs of Li et al.'s vectors: no output values.
  * [Valpey] "no -0 outputs" and canonical NaN description: no input stated;
    the NaN encoding is covered through [Xie] Sec. 4.2 below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction


def P(e: int) -> Fraction:
    """2**e as an exact Fraction."""
    return Fraction(2) ** e


@dataclass(frozen=True)
class PaperCase:
    name: str
    citation: str
    device: str  # architecture key, e.g. "Volta", "Ampere", "CDNA3"
    instr: tuple  # (input format, output format), e.g. ("fp16", "fp32"); ("bf16_1k", "fp32") for CDNA2 _1k
    a: tuple
    b: tuple
    c: object
    expected: object  # exact value (Fraction / float) or "nan"
    expected_bits: int | None = None
    tolerance: Fraction = Fraction(0)  # for values stated as rounded decimals
    note: str = ""


CASES: list[PaperCase] = []


def _add(*args, **kw):
    CASES.append(PaperCase(*args, **kw))


# ----------------------------------------------------------------------------
# [Xie] Section 5, Equation (10) and Table 8: the same input on every MMA unit.
# a = (-2**13, -0.5, -0.25, -0.125, 0, ...), b = (2**10, 1, 1, 1, 0, ...), c = 2**23.
EQ10_A = (-P(13), Fraction(-1, 2), Fraction(-1, 4), Fraction(-1, 8))
EQ10_B = (P(10), 1, 1, 1)
EQ10_C = P(23)
_T8 = "Xie et al. 2025 (MMA-Sim), Sec. 5, Eq. (10) and Table 8"
# Output is fp32 for every mixed-precision instruction (c = 2**23 is above the
# fp16 range).  The FP8 column: -2**13 exceeds the E4M3 range (max 448), so the
# input is only representable in E5M2; encoded as fp8_e5m2.
TABLE8 = {
    # (architecture, input): stated d_{0,0}
    ("Volta", "fp16"): Fraction(0),
    ("Turing", "fp16"): Fraction(-1, 2),
    ("Ampere", "tf32"): Fraction(-1, 2),
    ("Ampere", "bf16"): Fraction(-1, 2),
    ("Ampere", "fp16"): Fraction(-1, 2),
    ("Ada", "tf32"): Fraction(-1, 2),
    ("Ada", "bf16"): Fraction(-1, 2),
    ("Ada", "fp16"): Fraction(-1, 2),
    ("Ada", "fp8_e5m2"): Fraction(0),
    ("Hopper", "tf32"): Fraction(-3, 4),
    ("Hopper", "bf16"): Fraction(-3, 4),
    ("Hopper", "fp16"): Fraction(-3, 4),
    ("Hopper", "fp8_e5m2"): Fraction(0),
    ("Blackwell", "tf32"): Fraction(-3, 4),
    ("Blackwell", "bf16"): Fraction(-3, 4),
    ("Blackwell", "fp16"): Fraction(-3, 4),
    ("Blackwell", "fp8_e5m2"): Fraction(-3, 4),
    ("RTX Blackwell", "tf32"): Fraction(-3, 4),
    ("RTX Blackwell", "bf16"): Fraction(-3, 4),
    ("RTX Blackwell", "fp16"): Fraction(-3, 4),
    ("RTX Blackwell", "fp8_e5m2"): Fraction(-3, 4),
    ("CDNA1", "bf16"): Fraction(-7, 8),  # CDNA1 has no TF32 (Table 6)
    ("CDNA1", "fp16"): Fraction(-7, 8),
    ("CDNA2", "bf16"): Fraction(-3, 8),  # "-0.375 or 0.0": -0.375 without _1k (Sec. 5 text)
    ("CDNA2", "bf16_1k"): Fraction(0),  # 0.0 with the _1k suffix (Sec. 5 text)
    ("CDNA2", "fp16"): Fraction(0),
    ("CDNA3", "tf32"): Fraction(-1, 2),
    ("CDNA3", "bf16"): Fraction(-1, 2),
    ("CDNA3", "fp16"): Fraction(-1, 2),
    ("CDNA3", "fp8_e5m2"): Fraction(-1),
    # "In addition, all FP64/FP32 instructions produce d_{0,0} = -0.875."
    ("NVIDIA", "fp64"): Fraction(-7, 8),
    ("CDNA1", "fp32"): Fraction(-7, 8),
    ("CDNA2", "fp64"): Fraction(-7, 8),
    ("CDNA2", "fp32"): Fraction(-7, 8),
    ("CDNA3", "fp64"): Fraction(-7, 8),
    ("CDNA3", "fp32"): Fraction(-7, 8),
}
for (_arch, _inp), _d in TABLE8.items():
    _out = _inp if _inp in ("fp64", "fp32") else "fp32"
    _add(f"table8[{_arch},{_inp}]", _T8, _arch, (_inp, _out), EQ10_A, EQ10_B, EQ10_C, _d)

# [Xie] Sec. 4.2: NaN from T-FDPA is NVIDIA's canonical 0x7FFFFFFF (FP32) / 0x7FFF (FP16);
# inf*0 = NaN, inf + -inf = NaN, NaN*x = NaN.
_S42 = "Xie et al. 2025, Sec. 4.2 (special values, canonical NaN)"
INF = float("inf")
for _out, _bits in (("fp32", 0x7FFFFFFF), ("fp16", 0x7FFF)):
    _add(f"nan_inf_times_zero[{_out}]", _S42, "Ampere", ("fp16", _out), (INF,), (0,), 0, "nan", _bits)
    _add(f"nan_inf_minus_inf[{_out}]", _S42, "Ampere", ("fp16", _out), (INF, -INF), (1, 1), 0, "nan", _bits)
    _add(f"nan_input[{_out}]", _S42, "Ampere", ("fp16", _out), (float("nan"),), (1,), 0, "nan", _bits)
    _add(f"inf_times_neg[{_out}]", _S42, "Ampere", ("fp16", _out), (INF,), (-2,), 1, -INF)

# ----------------------------------------------------------------------------
# [Fasi] PeerJ 2021, section "NVIDIA Volta tensor cores" (V100 = Volta) and the
# Turing / Ampere sections.  In (3) the first row of A is all ones.
_F = "Fasi et al. 2021 (PeerJ), "
_add("fasi_subnormal_input[fp32]", _F + "Support for subnormal numbers, 1st question",
     "Volta", ("fp16", "fp32"), (P(-24),), (P(2),), 0, P(-22))
_add("fasi_subnormal_input[fp16]", _F + "Support for subnormal numbers, 1st question",
     "Volta", ("fp16", "fp16"), (P(-24),), (P(2),), 0, P(-22))
_add("fasi_subnormal_c", _F + "Support for subnormal numbers, 2nd question",
     "Volta", ("fp16", "fp32"), (0,), (0,), P(-149), P(-149))
for _out in ("fp32", "fp16"):
    _add(f"fasi_subnormal_from_normal[{_out}]", _F + "Support for subnormal numbers, 3rd question",
         "Volta", ("fp16", _out), (P(-14),), (P(-1),), 0, P(-15))
_add("fasi_subnormal_from_normal_with_c", _F + "Support for subnormal numbers, 3rd question",
     "Volta", ("fp16", "fp32"), (P(-14),), (1,), -P(-15), P(-15),
     note="output mode not stated; encoded for binary32 mode")
_add("fasi_subnormal_native", _F + "Support for subnormal numbers, last paragraph",
     "Volta", ("fp16", "fp32"), (1, 1), (P(-23) + P(-24), 2), 0, Fraction(2))
_add("fasi_exact_products", _F + "Accuracy of the dot products, 1st test",
     "Volta", ("fp16", "fp32"), (1 - P(-11),) * 4, (1 - P(-11),) * 4, 0, 4 * (1 - P(-10) + P(-22)))
_add("fasi_exact_products_fp16_out", _F + "Accuracy of the dot products, 2nd test",
     "Volta", ("fp16", "fp16"), (1 - P(-11), 1 - P(-11)), (1 - P(-11), P(-11)), 0, 1 - P(-10) + P(-11))
# Third test: one of the five addends of (3) is 1, the rest 2**-24 -> 1 for all permutations.
for _pos in range(5):
    _vals = [P(-24)] * 5
    _vals[_pos] = Fraction(1)
    _add(f"fasi_order[{_pos}]", _F + "Accuracy of the dot products, 3rd test (all permutations)",
         "Volta", ("fp16", "fp32"), (1, 1, 1, 1), tuple(_vals[:4]), _vals[4], Fraction(1))
_add("fasi_rounding_pos", _F + "Rounding modes in tensor core computations",
     "Volta", ("fp16", "fp32"), (1, 1), (2, P(-23) + P(-24)), 0, Fraction(2))
_add("fasi_rounding_neg", _F + "Rounding modes in tensor core computations (negative semiaxis)",
     "Volta", ("fp16", "fp32"), (1, 1), (-2, -(P(-23) + P(-24))), 0, Fraction(-2))
_add("fasi_fp16_output_rounding", _F + "Rounding modes, binary16 mode",
     "Volta", ("fp16", "fp16"), (P(-24), P(-24)), (P(-1), P(-2)), 0, P(-24))
_add("fasi_no_guard_digit", _F + "Features of the accumulator, extra bits in the alignment",
     "Volta", ("fp16", "fp32"), (1,), (1,), -1 + P(-24), P(-23))
_add("fasi_normalisation_subtraction", _F + "Normalization in subtraction",
     "Volta", ("fp16", "fp32"), (1, 1), (1, -P(-24)), -1 + P(-24), P(-23))
for _pos in range(4):
    _b = [Fraction(1)] * 4
    _b[_pos] = P(-23)
    _add(f"fasi_two_carry_bits[{_pos}]", _F + "Extra bits for carry out (all four orderings)",
         "Volta", ("fp16", "fp32"), (1, 1, 1, 1), tuple(_b), 1 + P(-22) + P(-23), 4 + P(-21))
_add("fasi_third_carry_bit", _F + "Extra bits for carry out (third bit)",
     "Volta", ("fp16", "fp32"), (1, 1, 1, 1), (1, Fraction(3, 2), Fraction(7, 4), Fraction(15, 8)),
     Fraction(15, 8), Fraction(8))
# Normalization in addition (c = 1 - 2**-24, B column 2**-24) states no number; the
# monotonicity section states the outcome of the same input:
_add("fasi_nonmonotone_low", _F + "Monotonicity of dot product (also: Normalization in addition)",
     "Volta", ("fp16", "fp32"), (1, 1, 1, 1), (P(-24),) * 4, 1 - P(-24), 1 + P(-23))
_add("fasi_nonmonotone_high", _F + "Monotonicity of dot product",
     "Volta", ("fp16", "fp32"), (1, 1, 1, 1), (P(-24),) * 4, Fraction(1), Fraction(1))
_add("fasi_t4_extra_bit", _F + "NVIDIA Turing tensor cores ('1 + 2^-24 + 2^-24 ... performed exactly')",
     "Turing", ("fp16", "fp32"), (1, 1, 1), (1, P(-24), P(-24)), 0, 1 + P(-23),
     note="operand placement of the three addends not stated; placement-independent in all models")
_add("fasi_a100_bf16_subnormal_output", _F + "NVIDIA Ampere tensor cores, bfloat16/binary32 mode",
     "Ampere", ("bf16", "fp32"), (P(-126),), (P(-1),), 0, P(-127))

# ----------------------------------------------------------------------------
# [Valpey]
_add("valpey_table1_exact_product", "Valpey et al. 2025, Sec. 4.1, Table 1",
     "Volta", ("fp16", "fp32"), (Fraction(265, 1024) * P(-14),), (Fraction(1401, 1024) * P(-1),), 0,
     Fraction("1.4162635803222656") * P(-17), tolerance=Fraction(1, 2 * 10**16) * P(-17),
     note="Table 1 prints a as '1.2587890625 * 2^-15': the subnormal's raw fields "
          "(fraction .2587890625, exponent field 0 -> 2^-15) read as a normal number; "
          "the value is 0.2587890625 * 2^-14 (bits 0x0109), which is the reading that "
          "makes the stated exact result a*b.  b = 0x3979.  Device not stated "
          "(tested on Volta/Turing/Ampere); the result is exact on all three.")
_add("valpey_table3_truncation", "Valpey et al. 2025, Sec. 4.2, Table 3",
     "Volta", ("fp16", "fp32"), (2,), (1,), -P(-40), Fraction(2))

# ----------------------------------------------------------------------------
# [KM] Section IV feature tests.  The papers state the products p_k; where the
# operands are not stated they are exact fp16/fp8 factorisations (a_k, b_k)
# of the stated p_k, which is all the models depend on for non-largest terms.
_K = "Khattak & Mikaitis 2025, "
_add("km_v100_unnormalised_1", _K + "Sec. IV-A1 (V100, p1 = 1.5*1.5)",
     "Volta", ("fp16", "fp32"), (Fraction(3, 2), P(-12), P(-12)), (Fraction(3, 2), P(-11), P(-11)), 0,
     Fraction(9, 4) + P(-22))
_add("km_v100_unnormalised_2", _K + "Sec. IV-A1 (V100, p1 = 1*2.25)",
     "Volta", ("fp16", "fp32"), (1, P(-12), P(-12)), (Fraction(9, 4), P(-11), P(-11)), 0, Fraction(9, 4))
_add("km_v100_unnormalised_3", _K + "Sec. IV-A1 (V100, c = 2.25, p1 = 0)",
     "Volta", ("fp16", "fp32"), (0, P(-12), P(-12)), (0, P(-11), P(-11)), Fraction(9, 4), Fraction(9, 4))
_add("km_a100_unnormalised", _K + "Sec. IV-A2 (A100)",
     "Ampere", ("fp16", "fp32"), (Fraction(3, 2), P(-12), P(-12), P(-12)), (Fraction(3, 2), P(-11), P(-12), P(-12)), 0,
     Fraction(9, 4) + P(-22))
for _fmt, (_x13, _y13, _x14, _y14) in {
    "fp8_e5m2": (P(-13), 1, P(-14), 1),
    "fp8_e4m3": (P(-7), P(-6), P(-7), P(-7)),
}.items():
    _add(f"km_ada_fp8_13_bits[{_fmt}]", _K + "Sec. IV-A4 (L40S fp8: p1 = 1, p2 = p3 = 2^-13 -> 1 + 2^-12)",
         "Ada", (_fmt, "fp32"), (1, _x13, _x13), (1, _y13, _y13), 0, 1 + P(-12))
    _add(f"km_ada_fp8_c_early[{_fmt}]", _K + "Sec. IV-A4 (L40S fp8: c = 1, p1 = p2 = 2^-14 -> 1, fp32 output)",
         "Ada", (_fmt, "fp32"), (_x14, _x14), (_y14, _y14), 1, Fraction(1))
_add("km_h100_unnormalised", _K + "Sec. IV-A5 (H100 fp16/bf16, neab = 2)",
     "Hopper", ("fp16", "fp32"), (Fraction(3, 2), Fraction(7, 4) * P(-12), P(-12)), (Fraction(3, 2), P(-11), P(-13)), 0,
     Fraction(9, 4) + P(-22))
# Interleaving (H100/H200/B200 fp8 through mma.sync): p1 = 1, p2 = 2^-24, and 2^-24 at
# position j = 3..32.  Same group as p1, p2 -> 1 + 2^-23, other group -> 1.  Groups are
# "alternating pairs of elements" (Fig. 5c), so j is in p1's group iff (j - 1) % 4 < 2.
for _j in range(3, 33):
    _a = [Fraction(0)] * 32
    _b = [Fraction(0)] * 32
    _a[0], _b[0] = Fraction(1), Fraction(1)
    for _i in (1, _j - 1):
        _a[_i], _b[_i] = P(-12), P(-12)
    _add(f"km_fp8_interleave[{_j}]", _K + "Sec. IV-A5 (interleaved pattern test, m16n8k32)",
         "Hopper-mma.sync-fp8", ("fp8_e5m2", "fp32"), tuple(_a), tuple(_b), 0,
         1 + P(-23) if (_j - 1) % 4 < 2 else Fraction(1),
         note="2^-24 = 2^-12 * 2^-12 in E5M2 (E4M3 cannot form 2^-24)")
# A100 fp64 DMMA: ((c + p1) + p2) + ... with RNE; permutations of 1, 2^-53, 2^-53.
_perms = [(P(-53), P(-53), 1), (P(-53), 1, P(-53)), (1, P(-53), P(-53))]
for _c, _p1, _p2 in _perms:
    _add(f"km_a100_fp64_order[c={_c},p1={_p1}]", _K + "Sec. IV-A2 (A100 fp64 accumulation order)",
         "NVIDIA", ("fp64", "fp64"), (_p1, _p2), (1, 1), _c,
         1 + P(-52) if (_c, _p1) == (P(-53), P(-53)) else Fraction(1))


# ----------------------------------------------------------------------------
# [KM] Table II: numerical features of NVIDIA tensor cores.
@dataclass(frozen=True)
class FeatureRow:
    input: str
    output: str
    gpus: tuple
    align: tuple  # (integer bits, fraction bits) of the product alignment
    acc_out_bits: int
    n_fma: int
    final_rounding: str  # "Trunc" | "RNE"
    c_order: str  # "early" | "late"
    interleaving: bool
    note: str = field(default="")


KM_TABLE2_CITATION = _K + "Table II"
KM_TABLE2 = [
    FeatureRow("fp8", "fp32", ("H100", "H200"), (2, 13), 21, 32, "Trunc", "early", False),
    FeatureRow("fp8", "fp32", ("L40S", "Ada RTX 1000"), (2, 13), 20, 16, "Trunc", "early", False),
    FeatureRow("fp8", "fp16", ("H100", "H200"), (2, 13), 21, 32, "RNE", "early", False),
    FeatureRow("fp8", "fp16", ("L40S", "Ada RTX 1000"), (2, 13), 20, 16, "RNE", "early", False),
    FeatureRow("fp8*", "fp16/fp32", ("H100", "H200", "B200"), (2, 25), 32, 16, "RNE", "late", True,
               note="fp8 via mma.sync (converted to fp16, HMMA); RNE is the rounding of the late c addition"),
    FeatureRow("fp16, bf16", "fp32", ("H100", "H200", "B200"), (2, 25), 32, 16, "Trunc", "early", False),
    FeatureRow("fp16, bf16", "fp32", ("L40S", "Ada RTX 1000"), (2, 24), 30, 8, "Trunc", "early", False),
    FeatureRow("fp16, bf16", "fp32", ("A100", "A2", "A30"), (2, 24), 30, 8, "Trunc", "early", False),
    FeatureRow("fp16, bf16", "fp32", ("V100",), (2, 23), 28, 4, "Trunc", "early", False),
    FeatureRow("tf19", "fp32", ("H100", "H200", "B200"), (2, 25), 31, 8, "Trunc", "early", False),
    FeatureRow("tf19", "fp32", ("L40S", "Ada RTX 1000"), (2, 24), 29, 4, "Trunc", "early", False),
    FeatureRow("tf19", "fp32", ("A100", "A2", "A30"), (2, 24), 29, 4, "Trunc", "early", False),
]
# Table II note: "fp16 output for fp16 input is supported on all mentioned GPUs (rounded via RNE)".


# ----------------------------------------------------------------------------
# [Xie] Table 9: sources and upper bounds of numerical error (per elementary operation).
TABLE9_CITATION = "Xie et al. 2025, Sec. 6.1, Table 9"
TABLE9 = {
    "FTZ-AddMul": {"input_ftz": {"bf16": P(-126), "fp16": P(-14)}, "add_mul_ulp": Fraction(1, 2),
                   "output_ftz": P(-126)},
    "FMA/E-FDPA": {"output_rounding_ulp": Fraction(1, 2)},
    # fused summation: (L + 1) * 2**(e_max - F); output rounding 0.5 ulp (RNE) or 1 ulp (RZ)
    "T-FDPA": {"fused_sum_terms": "L + 1", "output_rounding_ulp": {"rne": Fraction(1, 2), "rz": Fraction(1)}},
}
