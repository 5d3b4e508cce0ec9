"""``VDPBF16PS`` (AVX512-BF16): Intel's pseudo-code model against the real instruction.

The differential test runs the instruction itself (LLVM IR JIT-compiled by llvmlite for
this CPU) on 10^7 dot products drawn over the whole bf16 range and skips, naming the
reason, on a CPU without AVX512-BF16 (this project's 2-core development machine is an
AMD Zen 3 without AVX-512).  The other tests hold everywhere: the IR compiles to the
instruction, and the model gives the values the SDM's text implies on hand-made cases.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from workbench.probes import cpu_bf16 as cb  # noqa: E402

AVAILABLE, WHY = cb.unit_available()


def _one(pairs, c):
    """One lane: ``pairs`` = [(a_lo, b_lo), (a_hi, b_hi)] bf16 patterns, c an fp32 pattern."""
    a = np.zeros((1, 32), np.uint16)
    b = np.zeros((1, 32), np.uint16)
    (a[0, 0], b[0, 0]), (a[0, 1], b[0, 1]) = pairs
    cc = np.zeros((1, 16), np.uint32)
    cc[0, 0] = c
    return int(cb.dpbf16ps_model(a, b, cc.view(np.float32)).view(np.uint32)[0, 0])


def test_ir_compiles_to_vdpbf16ps_for_an_avx512_bf16_cpu():
    asm = cb.compile_ir(cpu="sapphirerapids", features="+avx512f,+avx512bw,+avx512vl,+avx512bf16", assembly=True)
    assert "vdpbf16ps" in asm


@pytest.mark.parametrize("pairs, c, want, why", [
    # high pair first: 1 + (-1) = 0, then + 2^-30 (low first would lose 2^-30 in 1 + 2^-30)
    (((0x3080, 0x3f80), (0xbf80, 0x3f80)), 0x3F800000, 0x30800000, "high pair first"),
    # input denormal treated as zero: 2^-133 * 2^100 adds nothing
    (((0x0001, 0x71800000 >> 16), (0, 0)), 0x3F800000, 0x3F800000, "DAZ"),
    # output denormal flushed: 2^-126 - 2^-127 = 2^-127 is subnormal -> +0
    (((0, 0), (0xbf00, 0x0080)), 0x00800000, 0x00000000, "FTZ"),
    # NaN priority: src2 low beats src1 high; quieted, sign and payload kept
    (((0x3f80, 0xff81), (0x7f81, 0x3f80)), 0x3F800000, 0xFFC10000, "NaN priority"),
    # srcdest NaN propagates when no source is NaN
    (((0x3f80, 0x3f80), (0x3f80, 0x3f80)), 0x7F800001, 0x7FC00001, "srcdest NaN"),
    # Inf * 0 without NaN operands: the x86 default NaN
    (((0x7f80, 0x0000), (0, 0)), 0x3F800000, 0xFFC00000, "default NaN"),
    # each step rounds once to nearest even: 1 + 2^-24 is a tie -> 1, twice
    (((0x3380, 0x3f80), (0x3380, 0x3f80)), 0x3F800000, 0x3F800000, "two roundings"),
    # overflow to +Inf in the first step stays Inf
    (((0, 0), (0x7f7f, 0x4000)), 0x7F7FFFFF, 0x7F800000, "overflow"),
])
def test_model_follows_the_pseudo_code(pairs, c, want, why):
    assert _one(pairs, c) == want, why


def draw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n instructions (16 n dot products) over the whole bf16 range: random bit patterns
    (NaN, Inf, subnormals, signed zeros at their natural rates), exponents clustered
    so that products and c meet (cancellation, rounding ties), near overflow and near
    the subnormal boundary, and exact cancellations of the two products."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, (n, 32), dtype=np.uint16)
    b = rng.integers(0, 1 << 16, (n, 32), dtype=np.uint16)
    c = rng.integers(0, 1 << 32, (n, 16), dtype=np.uint64).astype(np.uint32)
    mode = rng.integers(0, 5, (n, 16))
    lanes = np.repeat(mode, 2, axis=1)

    def with_exp(x, lo, hi, m):
        e = rng.integers(lo, hi, x.shape, dtype=np.uint32)
        return np.where(m, (x & 0x807F) | (e << 7), x).astype(np.uint16)

    # mode 1: operands near 1, c near the products (cancellation, ties)
    a = with_exp(a, 120, 135, lanes == 1)
    b = with_exp(b, 120, 135, lanes == 1)
    ec = rng.integers(110, 140, c.shape, dtype=np.uint32)
    c = np.where(mode == 1, (c & np.uint32(0x807FFFFF)) | (ec << 23), c)
    # mode 2: products near the overflow threshold
    a = with_exp(a, 190, 255, lanes == 2)
    b = with_exp(b, 60, 130, lanes == 2)
    # mode 3: products and c near the subnormal boundary
    a = with_exp(a, 0, 70, lanes == 3)
    b = with_exp(b, 50, 128, lanes == 3)
    ec = rng.integers(0, 8, c.shape, dtype=np.uint32)
    c = np.where(mode == 3, (c & np.uint32(0x807FFFFF)) | (ec << 23), c)
    # mode 4: a_hi * b_hi = -(a_lo * b_lo) exactly, c small
    lo_a, lo_b = a[:, 0::2], b[:, 0::2]
    a[:, 1::2] = np.where(mode == 4, lo_a ^ 0x8000, a[:, 1::2])
    b[:, 1::2] = np.where(mode == 4, lo_b, b[:, 1::2])
    return a, b, c.view(np.float32)


def test_the_draw_reaches_every_class():
    a, b, c = draw(4096, 1)
    e = (a >> 7) & 0xFF
    assert (e == 0).any() and (e == 255).any() and ((a & 0x7F)[e == 255] != 0).any()
    assert (a == 0x8000).any() or (b == 0x8000).any()
    assert np.isinf(cb.dpbf16ps_model(a, b, c)).any()


@pytest.mark.skipif(not AVAILABLE, reason=WHY)
def test_model_matches_the_instruction_on_ten_million_dot_products():
    n_total, bad_total = 0, 0
    first = None
    for seed in range(10):
        a, b, c = draw(62_500, seed)          # 10 x 62,500 x 16 = 10^7 dot products
        got = cb.dpbf16ps(a, b, c).view(np.uint32)
        want = cb.dpbf16ps_model(a, b, c).view(np.uint32)
        bad = np.argwhere(got != want)
        n_total += got.size
        bad_total += len(bad)
        if len(bad) and first is None:
            i, j = bad[0]
            first = (f"a {a[i, 2 * j]:#06x},{a[i, 2 * j + 1]:#06x} b {b[i, 2 * j]:#06x},{b[i, 2 * j + 1]:#06x} "
                     f"c {c.view(np.uint32)[i, j]:#010x}: silicon {got[i, j]:#010x}, model {want[i, j]:#010x}")
    assert n_total >= 10 ** 7
    assert bad_total == 0, f"{bad_total} of {n_total} dot products differ; first: {first}"


def test_pairs_gemm_chains_one_instruction_per_pair_from_c():
    from workbench.probes.targets import pairs_gemm

    rng = np.random.default_rng(3)
    A = rng.integers(-8, 9, (3, 5)).astype(np.float64)
    B = rng.integers(-8, 9, (5, 7)).astype(np.float64)
    C = rng.integers(-8, 9, (3, 7)).astype(np.float64)
    assert (pairs_gemm(A, B, C, cb.dpbf16ps_model) == A @ B + C).all()      # small integers: exact
    A[0, 4], B[4, 0], C[0, 0], A[0, :4] = 2.0 ** -30, 1.0, 1.0, 0.0
    assert pairs_gemm(A, B, C, cb.dpbf16ps_model)[0, 0] == 1.0               # rounded in fp32 per step


def test_probe_target_needs_the_instruction():
    from workbench.probes.targets import target

    if AVAILABLE:
        assert target("cpu-vdpbf16ps").out_format == "fp32"
    else:
        with pytest.raises(ValueError, match="VDPBF16PS cannot run here"):
            target("cpu-vdpbf16ps")
