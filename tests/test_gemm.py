"""workbench.gemm: the MMA-Sim Table 8 example on every architecture, validation,
special values, accumulation strategies."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _eq10(K=16):
    # Xie et al. 2025 Equation (10)
    a = np.zeros((1, K))
    b = np.zeros((K, 1))
    a[0, :4] = [-2.0**13, -0.5, -0.25, -0.125]
    b[:4, 0] = [2.0**10, 1, 1, 1]
    return a, b, np.array([[2.0**23]])


# Xie et al. 2025 Table 8 (expected d00), fp8 through e5m2 (e4m3 cannot hold 2^13)
TABLE8 = [("volta", "fp16", None, 0.0), ("turing", "fp16", None, -0.5), ("ampere", "fp16", None, -0.5),
          ("ampere", "bf16", None, -0.5), ("ampere", "tf32", None, -0.5), ("ada", "fp16", None, -0.5),
          ("ada", "bf16", None, -0.5), ("ada", "fp8_e5m2", None, 0.0), ("hopper", "fp16", None, -0.75),
          ("hopper", "bf16", None, -0.75), ("hopper", "tf32", None, -0.75), ("hopper", "fp8_e5m2", None, 0.0),
          ("blackwell", "fp16", None, -0.75), ("blackwell", "tf32", None, -0.75),
          ("blackwell", "fp8_e5m2", None, -0.75), ("rtx-blackwell", "fp16", None, -0.75),
          ("rtx-blackwell", "fp8_e5m2", None, -0.75), ("cdna2", "fp16", None, 0.0),
          ("cdna2", "bf16", None, -0.375), ("cdna2", "bf16", "1k", 0.0)]


@pytest.mark.parametrize("arch,fin,variant,expected", TABLE8)
def test_mmasim_table8(arch, fin, variant, expected):
    m = wb.preset(arch, fin, "fp32", variant=variant)
    a, b, c = _eq10(max(16, m.L))
    D = wb.gemm(a, b, c, model=m)
    assert D[0, 0] == expected and D.dtype == np.float32


@pytest.mark.parametrize("arch", ["ampere", "hopper", "blackwell", "cdna2", "cdna3"])
def test_table8_fp64_fma_chain_is_exact(arch):
    a, b, c = _eq10()
    D = wb.gemm(a, b, c, model=wb.preset(arch, "fp64", "fp64"))
    assert D[0, 0] == -0.875 and D.dtype == np.float64


def test_fasi_fp64_order_khattak():
    # Khattak & Mikaitis IV-A2: only c = p1 = 2^-53, p2 = 1 gives 1 + 2^-52
    m = wb.preset("A100", "fp64", "fp64")
    u = 2.0 ** -53
    for (c, p1, p2), exp in [((u, u, 1.0), 1 + 2 * u), ((1.0, u, u), 1.0), ((u, 1.0, u), 1.0)]:
        D = wb.gemm(np.array([[p1, p2]]), np.array([[1.0], [1.0]]), np.array([[c]]), model=m)
        assert D[0, 0] == exp


def test_validation_errors_name_the_value():
    m = wb.preset("H100", "fp16", "fp32")
    with pytest.raises(ValueError, match=r"A\[0, 1\] = 0.1 is not representable in fp16"):
        wb.gemm(np.array([[1.0, 0.1]]), np.ones((2, 1)), model=m)
    with pytest.raises(ValueError, match="inner dimensions"):
        wb.gemm(np.ones((2, 3)), np.ones((2, 3)), model=m)
    with pytest.raises(ValueError, match="C has shape"):
        wb.gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 3)), model=m)
    with pytest.raises(TypeError, match="model=3"):
        wb.gemm(np.ones((2, 3)), np.ones((3, 2)), model=3)
    with pytest.raises(ValueError, match=r"model='H100'.*DEVICE:IN:OUT"):   # a device alone names no unit
        wb.gemm(np.ones((2, 3)), np.ones((3, 2)), model="H100")


def test_canonical_nan_and_infinities():
    m = wb.preset("H100", "fp16", "fp32")
    A = np.array([[np.inf, 1.0], [np.inf, 0.0], [np.nan, 1.0], [np.inf, -np.inf]])
    B = np.array([[1.0], [1.0]])
    B2 = np.array([[1.0], [1.0]])
    D = wb.gemm(A, B, model=m)
    assert D[0, 0] == np.inf
    assert D.view(np.uint32)[2, 0] == 0x7FFFFFFF
    assert D.view(np.uint32)[3, 0] == 0x7FFFFFFF  # +Inf + -Inf
    D2 = wb.gemm(np.array([[np.inf]]), np.array([[0.0]]), model=m)
    assert D2.view(np.uint32)[0, 0] == 0x7FFFFFFF  # Inf * 0
    h = wb.gemm(np.array([[np.nan]]), B2[:1], model=wb.preset("H100", "fp16", "fp16"))
    assert h.view(np.uint16)[0, 0] == 0x7FFF


def test_no_negative_zero_from_a_sum():
    m = wb.preset("A100", "fp16", "fp32")
    D = wb.gemm(np.array([[-1.0, 1.0]]), np.array([[1.0], [1.0]]), np.array([[-0.0]]), model=m)
    assert D[0, 0] == 0 and not np.signbit(D[0, 0])


def test_fp16_overflow_to_inf():
    m = wb.preset("V100", "fp16", "fp16")
    D = wb.gemm(np.full((1, 4), 65504.0), np.ones((4, 1)), model=m)
    assert D[0, 0] == np.inf and D.dtype == np.float16


def test_chain_blocks_and_padding():
    # Volta L = 4: blocks [1, 2^-24 x3] each truncate; K = 6 is padded with zeros
    m = wb.preset("V100", "fp16", "fp32")
    a = np.array([[1.0, 2**-14, 2**-14, 2**-14, 2**-14, 2**-14]])
    b = np.array([[1.0], [2**-10], [2**-10], [2**-10], [2**-10], [2**-10]])
    D = wb.gemm(a, b, model=m)
    # block 1: 1 + 3*2^-24 with F = 23: each 2^-24 truncated away -> 1
    # block 2: c = 1, two products of 2^-24 truncated -> 1
    assert D[0, 0] == 1.0
    H = wb.gemm(a, b, model=wb.preset("H100", "fp16", "fp32"))  # F = 25 keeps them
    assert H[0, 0] == np.float32(1 + 5 * 2.0**-24)


def _fp32_sum(acc: float, x: float) -> float:
    """One fp32 addition with round-to-nearest-even (IEEE 754, numpy float32)."""
    return float(np.float32(acc) + np.float32(x))


def test_accumulation_outside_and_promote():
    """Every output of the three accumulation modes equals its definition written out
    with the Fraction reference (tests/reference_mma.py): chain = Xie Algorithm 5;
    outside = each block of L from c = 0, added to an fp32 accumulator with RNE;
    promote = chains of 128 from c = 0, added likewise (DeepSeek-V3's recipe)."""
    from test_engine_reference import reference_kwargs
    import reference_mma as ref

    m = wb.preset("ada", "fp8_e5m2", "fp32")
    rng = np.random.default_rng(3)
    A = wb.round(rng.standard_normal((3, 256)) * 2.0 ** rng.integers(-6, 7, (3, 256)), "fp8_e5m2")
    B = wb.round(rng.standard_normal((256, 2)), "fp8_e5m2")
    chain = wb.gemm(A, B, model=m)
    prom = wb.gemm(A, B, model=m, accumulation="promote", promote_every=128)
    out = wb.gemm(A, B, model=m, accumulation="outside")
    kw, _ = reference_kwargs(m)
    L = kw.pop("L")
    for i in range(3):
        for j in range(2):
            a, b = [float(x) for x in A[i]], [float(x) for x in B[:, j]]
            assert chain[i, j] == ref.dot_chain(a, b, 0.0, L=L, **kw)
            want_out, want_prom = 0.0, 0.0
            for k in range(0, 256, L):
                want_out = _fp32_sum(want_out, ref.dot_chain(a[k:k + L], b[k:k + L], 0.0, L=L, **kw))
            for k in range(0, 256, 128):
                want_prom = _fp32_sum(want_prom, ref.dot_chain(a[k:k + 128], b[k:k + 128], 0.0, L=L, **kw))
            assert out[i, j] == want_out and prom[i, j] == want_prom, (i, j)
    # the three modes are told apart on these inputs
    assert not np.array_equal(chain, out) and not np.array_equal(chain, prom) and not np.array_equal(out, prom)
    with pytest.raises(ValueError, match="promote_every"):
        wb.gemm(A, B, model=m, accumulation="promote", promote_every=100)


def test_alpha_beta_epilogue():
    m = wb.preset("A100", "fp16", "fp32")
    A = np.array([[1.0, 2.0]])
    B = np.array([[3.0], [4.0]])
    C = np.array([[5.0]])
    assert wb.gemm(A, B, C, model=m)[0, 0] == 16.0
    assert wb.gemm(A, B, C, model=m, beta=0.0)[0, 0] == 11.0
    assert wb.gemm(A, B, C, model=m, alpha=2.0, beta=0.5)[0, 0] == 24.5


def test_mx_scales():
    m = wb.preset("blackwell", "fp8_e4m3", "fp32", variant="mx")
    A = np.ones((1, 32))
    B = np.ones((32, 1))
    D = wb.gemm(A, B, model=m, scale_a=np.array([[2.0**-3]]), scale_b=np.array([[4.0]]))
    assert D[0, 0] == 32 * 2.0**-1
    with pytest.raises(ValueError, match="scale_a"):
        wb.gemm(A, B, model=m)
