"""The Fraction reference models (reference_mma.py) against the papers' stated
results (paper_cases.py) and against measured GPU results (tests/data/hw_vectors).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from functools import partial
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hw_data import hw_vectors_dir  # noqa: E402
from paper_cases import CASES, KM_TABLE2, TABLE9, P  # noqa: E402
from reference_mma import (  # noqa: E402
    block_fma_km,
    decode,
    dot_chain,
    e_fdpa,
    encode,
    exp_sig,
    final_round,
    floor_log2,
    fma_chain,
    ftz_addmul,
    gst_fdpa,
    gtr_fdpa,
    round_fraction,
    st_fdpa,
    t_fdpa,
    tr_fdpa,
)

HW = hw_vectors_dir()  # the copy shipped with the project (tests/hw_data.py)

# ----------------------------------------------------------------------------
# Per-architecture model parameters, as the papers state them.
_T4 = "Xie et al. 2025, Table 4 (T-FDPA: L_max, F, rho)"
_T6 = "Xie et al. 2025, Tables 6 and 7 (AMD models and parameters)"


def _tf(L, F, out="fp32"):
    """T-FDPA with rho = RZ-FP32 / RZ-E8M13 / RNE-FP16 (Xie Table 2)."""
    rounding = "rne" if out == "fp16" else "rz"
    return dict(L=L, op=t_fdpa, F=F, rounding=rounding, out_format=out)


#: (architecture, input format, output format) -> dot_chain keyword arguments
DEVICE_MODELS = {
    ("Volta", "fp16", "fp32"): _tf(4, 23),  # _T4
    ("Volta", "fp16", "fp16"): _tf(4, 23, "fp16"),
    ("Turing", "fp16", "fp32"): _tf(8, 24),
    ("Turing", "fp16", "fp16"): _tf(8, 24, "fp16"),
    **{(arch, i, "fp32"): _tf(4 if i == "tf32" else 8, 24) for arch in ("Ampere", "Ada") for i in ("tf32", "bf16", "fp16")},
    **{(arch, "fp16", "fp16"): _tf(8, 24, "fp16") for arch in ("Ampere", "Ada")},
    **{("Ada", f, "fp32"): _tf(16, 13, "e8m13") for f in ("fp8_e4m3", "fp8_e5m2")},
    **{("Ada", f, "fp16"): _tf(16, 13, "fp16") for f in ("fp8_e4m3", "fp8_e5m2")},
    **{(arch, i, "fp32"): _tf(8 if i == "tf32" else 16, 25)
       for arch in ("Hopper", "Blackwell", "RTX Blackwell") for i in ("tf32", "bf16", "fp16")},
    **{(arch, "fp16", "fp16"): _tf(16, 25, "fp16") for arch in ("Hopper", "Blackwell", "RTX Blackwell")},
    **{("Hopper", f, "fp32"): _tf(32, 13, "e8m13") for f in ("fp8_e4m3", "fp8_e5m2")},
    **{("Hopper", f, "fp16"): _tf(32, 13, "fp16") for f in ("fp8_e4m3", "fp8_e5m2")},
    **{(arch, f, o): _tf(32, 25, o) for arch in ("Blackwell", "RTX Blackwell")
       for f in ("fp8_e4m3", "fp8_e5m2") for o in ("fp32", "fp16")},
    # AMD (_T6)
    ("CDNA1", "bf16", "fp32"): dict(L=2, op=e_fdpa),
    ("CDNA1", "fp16", "fp32"): dict(L=4, op=e_fdpa),
    ("CDNA2", "bf16", "fp32"): dict(L=2, op=partial(ftz_addmul, P=2, in_format="bf16")),
    ("CDNA2", "bf16_1k", "fp32"): dict(L=4, op=partial(ftz_addmul, P=4, in_format="bf16")),
    ("CDNA2", "fp16", "fp32"): dict(L=4, op=partial(ftz_addmul, P=4, in_format="fp16")),
    ("CDNA3", "tf32", "fp32"): dict(L=4, op=tr_fdpa, F=24, F2=31),
    ("CDNA3", "bf16", "fp32"): dict(L=8, op=tr_fdpa, F=24, F2=31),
    ("CDNA3", "fp16", "fp32"): dict(L=8, op=tr_fdpa, F=24, F2=31),
    ("CDNA3", "fp8_e5m2", "fp32"): dict(L=16, op=gtr_fdpa, F=24, F2=31),
    # FP64/FP32 instructions: chain of standard FMAs (Xie Sec. 4.1.2, Tables 3 and 6)
    **{(arch, f, f): dict(L=1, op=fma_chain, out_format=f)
       for arch in ("NVIDIA", "CDNA1", "CDNA2", "CDNA3") for f in ("fp32", "fp64")},
    # fp8 through mma.sync on H100/H200/B200: KM Sec. IV-A5, Fig. 5c, Table II row fp8*;
    # B200TC parameters: fma = 16, neab = 2, inter_pattern = 1, frmode rz (fp32) / rne (fp16).
    **{("Hopper-mma.sync-fp8", f, o): dict(L=32, op=block_fma_km, n_fma=16, neab=2, interleave=True,
                                          rounding="rz" if o == "fp32" else "rne", out_format=o)
       for f in ("fp8_e4m3", "fp8_e5m2") for o in ("fp32", "fp16")},
}
_NO_IN_FORMAT = {e_fdpa, fma_chain}


def run_model(arch, in_format, out_format, a, b, c):
    kw = dict(DEVICE_MODELS[(arch, in_format, out_format)])
    L, op = kw.pop("L"), kw.pop("op")
    if op not in _NO_IN_FORMAT and not isinstance(op, partial):
        kw["in_format"] = in_format
    return dot_chain(list(a), list(b), c, L=L, op=op, **kw)


# ----------------------------------------------------------------------------
# Paper cases


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_paper_case(case):
    inp, out = case.instr
    d = run_model(case.device, inp, out, case.a, case.b, case.c)
    if case.expected == "nan":
        assert encode(d, out) == case.expected_bits, f"{case.citation}: got {d!r}"
    elif isinstance(case.expected, float):  # infinities
        assert d == case.expected, f"{case.citation}: got {d!r}"
    else:
        assert abs(Fraction(d) - case.expected) <= case.tolerance, f"{case.citation}: got {d!r}, paper {case.expected}"
        if case.expected == 0:
            assert math.copysign(1.0, d) > 0, "tensor cores never return -0 (Valpey et al. Sec. 4.4)"


def test_km_table2_accumulator_width_is_alignment_plus_carries():
    """KM Table II: acc. out. precision = product alignment bits + ceil(log2(N_FMA + 1)) carries."""
    for row in KM_TABLE2:
        assert row.acc_out_bits == sum(row.align) + math.ceil(math.log2(row.n_fma + 1)), row


# (KM Table II GPU, input, output) -> the DEVICE_MODELS entry used for that GPU
_KM_GPU_ARCH = {"V100": "Volta", "A100": "Ampere", "A2": "Ampere", "A30": "Ampere", "L40S": "Ada",
                "Ada RTX 1000": "Ada", "H100": "Hopper", "H200": "Hopper", "B200": "Blackwell"}


def test_device_models_agree_with_km_table2():
    """The Xie Table 4 parameters used above reproduce KM Table II (F = alignment
    fraction bits, L = N_FMA, final rounding) for every GPU of Table II."""
    ins = {"fp16, bf16": ("fp16", "bf16"), "tf19": ("tf32",), "fp8": ("fp8_e4m3", "fp8_e5m2"), "fp8*": ("fp8_e4m3",)}
    for row in KM_TABLE2:
        for gpu in row.gpus:
            arch = "Hopper-mma.sync-fp8" if row.interleaving else _KM_GPU_ARCH[gpu]
            for inp in ins[row.input]:
                for out in row.output.split("/"):
                    if gpu == "V100" and inp == "bf16":
                        continue  # V100 supports only fp16 inputs (KM Sec. IV-A1)
                    m = DEVICE_MODELS[(arch, inp, out)]
                    if row.interleaving:
                        assert (m["n_fma"], 23 + m["neab"]) == (row.n_fma, row.align[1])
                        continue
                    if row.input == "tf19" and gpu in ("H100", "H200", "B200"):
                        assert m["F"] == row.align[1]  # L: KM report N_FMA 8 via mma, 4 via WMMA
                        continue
                    assert (m["L"], m["F"]) == (row.n_fma, row.align[1]), (row, gpu, inp)
                    assert m["rounding"] == {"Trunc": "rz", "RNE": "rne"}[row.final_rounding]


def _ulp(v, fmt_name):
    from reference_mma import fmt

    f = fmt(fmt_name)
    return P(max(floor_log2(v), f.emin) - f.p + 1) if v else P(f.emin - f.p + 1)


@pytest.mark.parametrize("L,F,rounding,out", [(4, 23, "rz", "fp32"), (8, 24, "rne", "fp16"), (16, 13, "rz", "e8m13")])
def test_xie_table9_error_bounds(L, F, rounding, out):
    """Random fp16 inputs: |T-FDPA - exact| <= (L + 1) 2**(e_max - F) + (1/2 or 1) ulp,
    and |E-FDPA - exact| <= 0.5 ulp (Xie Table 9)."""
    import random

    rng = random.Random(L * 100 + F)
    ulps = TABLE9["T-FDPA"]["output_rounding_ulp"]
    for _ in range(100):
        a = [final_round(Fraction(rng.gauss(0, 1)) * P(rng.randint(-12, 4)), "fp16") for _ in range(L)]
        b = [final_round(Fraction(rng.gauss(0, 1)) * P(rng.randint(-12, 4)), "fp16") for _ in range(L)]
        c = final_round(Fraction(rng.gauss(0, 1)) * P(rng.randint(-20, 6)), "fp16" if out == "fp16" else "fp32")
        exact = sum(Fraction(x) * Fraction(y) for x, y in zip(a, b)) + Fraction(c)
        e_max = max([exp_sig(Fraction(x), "fp16")[1] + exp_sig(Fraction(y), "fp16")[1]
                     for x, y in zip(a, b) if x and y] + [exp_sig(Fraction(c), "fp16" if out == "fp16" else "fp32")[1]])
        d = Fraction(t_fdpa(a, b, c, F=F, rounding=rounding, in_format="fp16", out_format=out))
        ulp = _ulp(max(abs(d), abs(exact)), out)
        assert abs(d - exact) <= (L + 1) * P(e_max - F) + ulps[rounding] * ulp
        d = Fraction(e_fdpa(a, b, c))
        assert abs(d - exact) <= TABLE9["FMA/E-FDPA"]["output_rounding_ulp"] * _ulp(abs(exact), "fp32")


# ----------------------------------------------------------------------------
# Building blocks written by hand (small, exact examples)


def test_final_round_modes():
    x = 1 + P(-24)  # halfway between two fp32 neighbours
    assert final_round(x, "fp32", "rne") == 1.0
    assert final_round(x, "fp32", "ru") == float(1 + P(-23))
    assert final_round(-x, "fp32", "rd") == -float(1 + P(-23))
    assert final_round(-x, "fp32", "rz") == -1.0
    assert final_round(P(-150), "fp32", "rne") == 0.0  # tie to even at the subnormal quantum
    assert final_round(3 * P(-150), "fp32", "rne") == float(P(-148))
    assert final_round(Fraction(65520), "fp16", "rne") == math.inf
    assert final_round(Fraction(65520), "fp16", "rz") == 65504.0
    assert final_round(1 + P(-13) + P(-14), "e8m13", "rz") == float(1 + P(-13))
    assert round_fraction(Fraction(-5, 8), 1, "rd") == -1 and round_fraction(Fraction(-5, 8), 1, "rz") == Fraction(-1, 2)


def test_encode_decode():
    assert encode(1.0, "fp32") == 0x3F800000 and encode(-2.0, "fp16") == 0xC000
    assert encode(float(P(-149)), "fp32") == 1 and encode(float(P(-24)), "fp16") == 1
    assert encode(float("nan"), "fp32") == 0x7FFFFFFF
    assert decode(0x0109, "fp16") == float(Fraction(265, 1024) * P(-14)) and decode(0x3979, "fp16") == 1.3681640625 / 2
    assert decode(0x7F800000, "fp32") == math.inf and decode(0x7E, "fp8_e4m3") == 448.0


def test_tfdpa_products_not_normalised():
    """Xie Alg. 7 line 4: e_k = Exp(a_k) + Exp(b_k), the significand product stays in [1, 4)."""
    # 1.5*1.5 = 2.25 at exponent 0 keeps bits down to 2^-23 (F = 23); 1*2.25 at exponent 1 does not.
    assert t_fdpa([1.5, P(-23)], [1.5, 1], 0, F=23, in_format="fp16") == float(Fraction(9, 4))  # 2^-23 kept, then RZ
    assert t_fdpa([1.5, P(-23), P(-23)], [1.5, 1, 1], 0, F=23, in_format="fp16") == float(Fraction(9, 4) + P(-22))
    assert t_fdpa([1, P(-23), P(-23)], [2.25, 1, 1], 0, F=23, in_format="fp16") == 2.25


def test_zero_exponent_parameter():
    """A zero term with a large zero exponent truncates tiny terms (MMA-Sim zero handling)."""
    tiny = [P(-126)], [P(-20)]
    assert t_fdpa(*tiny, 0, F=23, in_format="bf16") == float(P(-146))
    assert t_fdpa(*tiny, 0, F=23, in_format="bf16", zero_exponent=-126) == float(P(-146))
    assert t_fdpa(*tiny, 0, F=23, in_format="bf16", zero_exponent=-120) == 0.0


def test_scaled_variants():
    """ST-FDPA (Xie Alg. 8) adds the E8M0 scale exponents; GST-FDPA (Alg. 9) sums
    groups of G exactly before scaling (F = 35, K_block = 16, UE4M3 scales)."""
    a, b = [1.0] * 32, [1.0] * 32
    assert st_fdpa(a, b, 0.0, [P(3)], [P(-1)], F=25, in_format="fp8_e4m3") == 128.0
    # group 1 sums to 0.25 * (2^-9 * 2^-9 scales) = 2^-20 at e_g = -12: kept with F = 35, not with F = 19
    a = [0.5] + [0.0] * 15 + [0.5] + [0.0] * 15
    scales = [1.0, float(P(-9))]
    assert gst_fdpa(a, a, 0.0, scales, scales, F=35) == float(Fraction(1, 4) + P(-20))
    assert gst_fdpa(a, a, 0.0, scales, scales, F=19) == 0.25


def test_km_late_c_and_sticky():
    """KM Sec. IV-C: c late (own RNE rounding) differs from c early; the sticky bit
    makes truncation of a subtracted term visible."""
    a, b = [1.0, P(-12)], [1.0, P(-12)]  # p = 1, 2^-24
    early = block_fma_km(a, b, P(-24), n_fma=2, neab=2, rounding="rz", in_format="fp8_e5m2")
    late = block_fma_km(a, b, P(-24), n_fma=2, neab=2, rounding="rz", c_position="late", in_format="fp8_e5m2")
    assert early == float(1 + P(-23))  # 1 + 2^-24 + 2^-24 exact inside the fused sum
    assert late == 1.0  # RZ(1 + 2^-24) = 1, then RNE(1 + 2^-24) = 1 (tie to even)
    # 1 - 2^-30: without sticky the aligned -2^-30 vanishes (F = 25), with it the sum is below 1
    a, b = [1.0, -P(-15)], [1.0, P(-15)]
    assert block_fma_km(a, b, 0, n_fma=2, neab=2, rounding="rz", in_format="fp8_e5m2") == 1.0
    assert block_fma_km(a, b, 0, n_fma=2, neab=2, rounding="rz", sticky=True, in_format="fp8_e5m2") == float(1 - P(-24))


def test_overflow_gives_infinity():
    """KM Sec. IV-B: finite accumulations that overflow give +-Inf, also with truncation."""
    assert t_fdpa([P(127)], [2], 0, F=24, in_format="bf16") == math.inf
    assert t_fdpa([P(127)], [-2], 0, F=24, in_format="bf16") == -math.inf
    assert final_round(P(128), "fp32", "rz") == float((2 - P(-23)) * P(127))  # whereas the IEEE RZ rule saturates


def test_block_fma_km_consumes_blocks():
    """KM Sec. IV-C: a K longer than N_FMA is computed block by block, recursively."""
    a, b = [1.0] + [0.0] * 3 + [P(-12)] * 2 + [0.0] * 2, [1.0] + [0.0] * 3 + [P(-12)] * 2 + [0.0] * 2
    # one block of 8 (F = 25 keeps 1 + 2^-23); two blocks of 4: RZ(1) then 1 + 2^-24 + 2^-24 again exact
    assert block_fma_km(a, b, 0, n_fma=8, neab=2, in_format="fp8_e5m2") == float(1 + P(-23))
    assert block_fma_km(a, b, 0, n_fma=4, neab=2, in_format="fp8_e5m2") == float(1 + P(-23))
    assert block_fma_km(a, b, 0, n_fma=4, neab=0, in_format="fp8_e5m2") == 1.0  # F = 23 drops 2^-24


def test_ftz_addmul_flushes():
    """Xie Alg. 2: subnormal fp16 inputs are flushed to +0 before multiplication."""
    assert ftz_addmul([P(-24), 0, 0, 0], [P(20), 0, 0, 0], 0.0, P=4, in_format="fp16") == 0.0
    assert ftz_addmul([P(-14), 0, 0, 0], [P(20), 0, 0, 0], 0.0, P=4, in_format="fp16") == 64.0


# ----------------------------------------------------------------------------
# Hardware vectors (Khattak & Mikaitis MATLAB-tensor-core model_validation data)

_HW_ARCH = {"V100": "Volta", "A100": "Ampere", "A2": "Ampere", "Ada": "Ada", "L40S": "Ada",
            "H100": "Hopper", "H200": "Hopper", "B200": "Blackwell"}


def hw_model(device, fmt, out):
    """(arch key, use c?) for one hardware set, from the papers:
    fp16/bf16/tf32: Xie Table 4 = KM Table II.  fp8 on Ada/L40S: QMMA, Xie Table 4
    (L = 16, F = 13).  fp8 on H100/H200, d_fp32: WGMMA with C = 0 (hw_vectors README),
    Xie Table 4 Hopper (L = 32, F = 13, RZ-E8M13) = KM Table II.  fp8 through mma.sync on
    H100/H200 (d_fp16) and B200 (both): KM Sec. IV-A5 interleaved model.
    """
    if fmt.startswith("fp8") and (device == "B200" or (device in ("H100", "H200") and out == "fp16")):
        return "Hopper-mma.sync-fp8", True
    if fmt.startswith("fp8") and device in ("H100", "H200"):
        return "Hopper", False
    return _HW_ARCH[device], True


def _hw_sets():
    if not HW.is_dir():
        return []
    import zipfile

    sets = []
    for dev_dir in sorted(p for p in HW.iterdir() if p.is_dir()):
        for f in sorted(dev_dir.glob("*.npz")):
            names = zipfile.ZipFile(f).namelist()
            for out in ("fp32", "fp16"):
                if f"d_{out}.npy" in names:
                    sets.append((dev_dir.name, f.stem, out))
    return sets


def check_hw_set(device, fmt, out, rows):
    np = pytest.importorskip("numpy")
    z = np.load(HW / device / f"{fmt}.npz")
    key = "d_fp32" if out == "fp32" else "d_fp16"
    if key not in z.files:
        pytest.skip(f"{device}/{fmt} has no {key}")
    arch, use_c = hw_model(device, fmt, out)
    cbits = z["c"] if out == "fp32" else z["c_fp16_rne"]
    bad = []
    for i in range(rows):
        a = [decode(int(x), "fp32") for x in z["a"][i]]
        b = [decode(int(x), "fp32") for x in z["b"][i]]
        c = decode(int(cbits[i]), out) if use_c else 0.0
        d = run_model(arch, fmt, out, a, b, c)
        got = encode(d, out)
        if got != int(z[key][i]):
            bad.append((i, hex(got), hex(int(z[key][i]))))
    assert not bad, f"{device}/{fmt}/{out}: {len(bad)} of {rows} rows differ, first {bad[:5]}"


_SETS = _hw_sets()


@pytest.mark.parametrize("device,fmt,out", _SETS or [("none", "none", "none")])
def test_hw_vectors_first_rows(device, fmt, out):
    """Fast part: the first 50 rows of every set."""
    check_hw_set(device, fmt, out, 50)


@pytest.mark.slow
@pytest.mark.parametrize("device,fmt,out", _SETS or [("none", "none", "none")])
def test_hw_vectors_300_rows(device, fmt, out):
    """Bit equality on the first 300 rows of every set."""
    check_hw_set(device, fmt, out, 300)


@pytest.mark.parametrize("device,out", [("Ada", "fp32"), ("L40S", "fp32"), ("Ada", "fp16")])
def test_hw_exact_zero_result_is_positive(device, out):
    """The only zero results in the data (row 2085 of Ada/L40S fp8_e5m2, hw_vectors
    README) are +0, as the reference gives (Valpey et al. Sec. 4.4: no -0 output)."""
    np = pytest.importorskip("numpy")
    z = np.load(HW / device / "fp8_e5m2.npz")
    i = 2085
    assert int(z[f"d_{out}"][i]) == 0
    a = [decode(int(x), "fp32") for x in z["a"][i]]
    b = [decode(int(x), "fp32") for x in z["b"][i]]
    c = decode(int((z["c"] if out == "fp32" else z["c_fp16_rne"])[i]), out)
    assert encode(run_model("Ada", "fp8_e5m2", out, a, b, c), out) == 0
