"""The engine against the papers' stated results (tests/paper_cases.py: MMA-Sim Table 8
for every architecture incl. CDNA1/CDNA3, Xie Sec. 4.2 special values, Fasi et al.
V100/T4/A100 tests, Valpey et al. Tables 1 and 3, Khattak-Mikaitis Sec. IV feature
tests and Table II), and properties: sign symmetry where the final rounding is
symmetric, and the CDNA3 asymmetry (Xie et al. Sec. 6.2.4, Table 10)."""
from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.units import catalogue

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_cases import CASES, KM_TABLE2  # noqa: E402
from test_engine_reference import draw  # noqa: E402

ARCH = {"Volta": "volta", "Turing": "turing", "Ampere": "ampere", "Ada": "ada", "Hopper": "hopper",
        "Blackwell": "blackwell", "RTX Blackwell": "rtx-blackwell", "CDNA1": "cdna1", "CDNA2": "cdna2",
        "CDNA3": "cdna3", "NVIDIA": "hopper"}


def model_for(case):
    fin, out = case.instr
    if case.device == "Hopper-mma.sync-fp8":
        return wb.preset("hopper", fin, out, instruction="mma.sync")
    if fin == "bf16_1k":
        return wb.preset(ARCH[case.device], "bf16", out, variant="1k")
    return wb.preset(ARCH[case.device], fin, out)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_paper_case(case):
    m = model_for(case)
    a = [float(x) for x in case.a]
    b = [float(x) for x in case.b]
    D = wb.gemm(np.array([a]), np.array([b]).T, np.array([[float(case.c)]]), model=m)
    d = D[0, 0]
    if case.expected == "nan":
        assert np.isnan(d)
        assert int(D.view(np.uint32 if D.dtype == np.float32 else np.uint16)[0, 0]) == case.expected_bits
    elif isinstance(case.expected, float) and math.isinf(case.expected):
        assert d == case.expected
    else:
        assert abs(Fraction(float(d)) - Fraction(case.expected)) <= case.tolerance, (case.name, float(d))


def test_every_table8_architecture_is_covered():
    archs = {c.device for c in CASES if c.name.startswith("table8")}
    assert {"CDNA1", "CDNA3", "Volta", "Blackwell", "RTX Blackwell"} <= archs


_TRUNC = {"Trunc": "rz", "RNE": "rne"}


def table2_presets(row) -> list:
    """The presets a row of Khattak-Mikaitis Table II describes: its GPUs' presets for
    its input and output formats (the fp8 mma.sync ones where the row interleaves)."""
    ins = {"fp8": ["fp8_e4m3", "fp8_e5m2"], "fp8*": ["fp8_e4m3", "fp8_e5m2"], "fp16, bf16": ["fp16", "bf16"],
           "tf19": ["tf32"]}[row.input]
    outs = row.output.split("/")
    devs = [d for d in row.gpus if d.lower() in catalogue.DEVICES]
    assert devs
    return [wb.preset(dev, fin, out, instruction="mma.sync" if row.interleaving else None)
            for dev in devs for fin in ins for out in outs
            if not (dev == "V100" and fin == "bf16")]  # Volta has no bf16 (Xie Table 4; KM groups the rows)


@pytest.mark.parametrize("row", KM_TABLE2, ids=[f"{r.input}->{r.output}@{r.gpus[0]}" for r in KM_TABLE2])
def test_khattak_mikaitis_table2_features(row):
    """Table II: block size (NFMA), alignment fraction bits, final rounding, c order,
    interleaving of the presets of the listed GPUs."""
    for m in table2_presets(row):
        assert m.F == row.align[1]
        if row.interleaving:
            assert m.interleave == 2 and m.L == 2 * row.n_fma and m.c_position == "late"
            assert m.late_rounding == "rne"
        else:
            assert m.L == row.n_fma and m.interleave == 1 and m.c_position == row.c_order
            assert m.rounding == _TRUNC[row.final_rounding]


# (integer units round nothing and are not sign-symmetric: -(-128) is no s8, and int32 wraps
# asymmetrically; tests/test_int_units.py holds them to their integer reference)
SYMMETRIC = [r for r in catalogue.records() if r.rounding in ("rz", "rne") and r.kind not in ("tr-fdpa", "gtr-fdpa")
             and not r.operation.integer]


@pytest.mark.parametrize("m", SYMMETRIC, ids=[r.name for r in SYMMETRIC])
def test_sign_symmetry(m):
    """D(-A, B, -C) == -D(A, B, C) when every rounding is RZ or RNE (Xie Sec. 6.2.4)."""
    rng = np.random.default_rng(5)
    L = m.P if m.kind == "ftz-addmul" else m.L
    K = 2 * L + 1
    A = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(6)])
    B = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(3)]).T
    C = np.stack([draw(rng, m.out_format, 3, specials=False) for _ in range(6)])
    kw = {}
    if m.scale_format:
        nb = -(-K // m.k_block)
        kw = dict(scale_a=np.full((6, nb), 2.0), scale_b=np.full((nb, 3), 0.5))
    D = wb.gemm(A, B, C, model=m, **kw).astype(float)
    E = wb.gemm(-A, B, -C, model=m, **kw).astype(float)
    fin = np.isfinite(D)
    assert np.array_equal(E[fin], -D[fin])  # zeros compare equal whatever their sign
    assert np.array_equal(np.isnan(D), np.isnan(E))


def test_cdna3_asymmetry():
    """TR-FDPA rounds T down (toward -inf) to F2 = 31 bits (Xie Alg. 10 line 14), so it
    is not symmetric (Xie Sec. 6.2.4, Table 10).  p = a*b = -(2^-25 + 2^-34), c = 1:
    T' = RD_31(p) = -(2^-25 + 2^-31), S = 1 - 2^-25 - 2^-31 is below the midpoint
    1 - 2^-25, RNE-FP32 gives 1 - 2^-24.  Negated (p > 0, c = -1): T' = 2^-25,
    S = -1 + 2^-25 is exactly the midpoint, ties-to-even gives -1.  So
    D(-A, B, -C) = -1 != -D(A, B, C) = -(1 - 2^-24).  Under RZ (T-FDPA style) both
    would be +-(1 - 2^-24)."""
    m = wb.preset("MI300X", "fp16", "fp32")
    a = np.array([[-(1 + 2.0**-9) * 2.0**-12]])
    b = np.array([[2.0**-13]])
    d = wb.gemm(a, b, np.array([[1.0]]), model=m)[0, 0]
    e = wb.gemm(-a, b, np.array([[-1.0]]), model=m)[0, 0]
    assert d == np.float32(1 - 2.0**-24)
    assert e == -1.0
    assert e != -d
