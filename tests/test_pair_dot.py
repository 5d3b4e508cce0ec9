"""The CPU bf16 pair units (kind ``pair-dot``: x86 VDPBF16PS / TDPBF16PS, Arm BFDOT /
BFMMLA with and without FEAT_EBF16) against an independent reading of the vendors'
pseudo-code in exact rational arithmetic (``tests/reference_mma.py``), and the VDPBF16PS preset against
``workbench.probes.cpu_bf16.dpbf16ps_model`` (numpy, written separately from the engine's
kernel) and, where the CPU has it, the real instruction."""
from __future__ import annotations

import struct
from functools import partial

import numpy as np
import pytest
import reference_mma as ref

import workbench
from workbench.probes import cpu_bf16
from workbench.engine import Model


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def reference(rule: str, L: int, a: list[float], b: list[float], c: float) -> int:
    """One output by the pseudo-code (``reference_mma.pair_dot`` per instruction, K
    zero-padded to whole instructions), as fp32 bits."""
    pad = (-len(a)) % L
    return f32_bits(ref.dot_chain(list(a) + [0.0] * pad, list(b) + [0.0] * pad, c, L=L,
                                  op=partial(ref.pair_dot, rule=rule)))


def draw_bf16(rng: np.random.Generator, n: int) -> np.ndarray:
    """bf16 values as float64: a third any bit pattern (Inf, NaN, subnormals, extremes),
    the rest exponents near 0 and near the flush and overflow edges, both signs."""
    bits = rng.integers(0, 1 << 16, n).astype(np.uint32)
    pick = rng.integers(0, 3, n)
    exp = np.where(rng.random(n) < 0.5, rng.integers(120, 135, n), rng.choice([1, 2, 60, 190, 250, 254], n))
    narrow = (bits & 0x807F) | (exp.astype(np.uint32) << 7)
    bits = np.where(pick == 0, bits, narrow)
    with np.errstate(invalid="ignore"):
        return (bits << 16).astype(np.uint32).view(np.float32).astype(np.float64)


def draw_tiny(rng: np.random.Generator, n: int, lo: int, hi: int) -> np.ndarray:
    """bf16 values of both signs with biased exponents in [lo, hi] (products near the
    flush threshold 2^-126 when one side is tiny and the other near 1)."""
    bits = (rng.integers(0, 1 << 16, n).astype(np.uint32) & 0x807F) | (rng.integers(lo, hi + 1, n).astype(np.uint32) << 7)
    return (bits << 16).astype(np.uint32).view(np.float32).astype(np.float64)


def draw_c(rng: np.random.Generator, n: int) -> np.ndarray:
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    small = (bits & 0x807FFFFF) | (rng.choice([0, 1, 2, 126, 127, 128, 254], n).astype(np.uint32) << 23)
    bits = np.where(rng.random(n) < 0.5, small, bits)
    with np.errstate(invalid="ignore"):
        return bits.view(np.float32).astype(np.float64)


PRESETS = [
    ("Zen4", None, None, "x86-fma", 2),
    ("SapphireRapids", "tdpbf16ps", None, "x86-even-odd", 32),
    ("Graviton3", "bfdot", None, "arm-odd", 2),
    ("Graviton3", "bfmmla", None, "arm-odd", 4),
    ("Graviton3", "bfdot", "ebf16", "arm-fused", 2),
    ("Graviton3", "bfmmla", "ebf16", "arm-fused", 4),
]


@pytest.mark.parametrize("device,instruction,variant,rule,L", PRESETS)
def test_presets_state_their_rule(device, instruction, variant, rule, L):
    p = workbench.preset(device, "bf16", "fp32", instruction=instruction, variant=variant)
    assert (p.kind, p.pair_rule, p.L) == ("pair-dot", rule, L)
    assert any(e.kind == "unchecked" and e.what.startswith("specification only") for e in p.evidence)


@pytest.mark.parametrize("rule", ["x86-fma", "x86-even-odd", "arm-odd", "arm-fused"])
@pytest.mark.parametrize("L", [2, 4, 8])
def test_gemm_matches_the_pseudo_code(rule, L):
    """Every output of a 6 x K x 5 product, K = 1 ... 11, bit for bit (NaN payloads too)."""
    rng = np.random.default_rng(hash((rule, L)) % 2 ** 32)
    m = Model(kind="pair-dot", in_format="bf16", out_format="fp32", L=L, pair_rule=rule)
    cases = []
    for K in range(1, 12):
        cases.append((draw_bf16(rng, 6 * K).reshape(6, K), draw_bf16(rng, K * 5).reshape(K, 5),
                      draw_c(rng, 30).reshape(6, 5)))
        # every product near 2^-126 and c zero, subnormal or tiny: the flushes decide
        tiny_c = np.where(rng.random(30) < 0.5, 0.0, rng.choice([-1, 1], 30) * 2.0 ** rng.integers(-149, -120, 30))
        cases.append((draw_tiny(rng, 6 * K, 0, 12).reshape(6, K), draw_tiny(rng, K * 5, 112, 128).reshape(K, 5),
                      tiny_c.reshape(6, 5)))
    for A, B, C in cases:
        K = A.shape[1]
        with np.errstate(invalid="ignore"):
            D = np.asarray(workbench.gemm(A, B, C, model=m), dtype=np.float32).view(np.uint32)
        for i in range(6):
            for j in range(5):
                want = reference(rule, L, list(A[i]), list(B[:, j]), float(C[i, j]))
                assert int(D[i, j]) == want, (rule, L, K, i, j, hex(int(D[i, j])), hex(want))


def test_pair_rules_differ_where_the_specifications_do():
    """c = 2^10, a = (1 + 2^-7, 2^-9), b = (1 + 2^-7, 2^-9 + 2^-16): VDPBF16PS adds the
    small high product to c first, where it rounds away, and the large one then meets c
    at a tie (to even, down); Arm's pair sums keep the small product, and c + sum rounds
    up.  Each rule checked against the reference."""
    a = [1.0 + 2.0 ** -7, 2.0 ** -9]
    b = [1.0 + 2.0 ** -7, 2.0 ** -9 + 2.0 ** -16]
    c = 2.0 ** 10
    got = {}
    for rule in ("x86-fma", "x86-even-odd", "arm-odd", "arm-fused"):
        m = Model(kind="pair-dot", in_format="bf16", out_format="fp32", L=2, pair_rule=rule)
        d = np.asarray(workbench.gemm(np.array([a]), np.array([b]).T, np.array([[c]]), model=m), dtype=np.float32)
        got[rule] = int(d.view(np.uint32)[0, 0])
        assert got[rule] == reference(rule, 2, a, b, c)
    assert len({got["arm-odd"], got["arm-fused"], got["x86-fma"]}) >= 2


def test_bad_rule_and_formats_are_named():
    with pytest.raises(ValueError, match="pair_rule"):
        Model(kind="pair-dot", in_format="bf16", out_format="fp32", L=2, pair_rule="x86")
    with pytest.raises(ValueError, match="even L"):
        Model(kind="pair-dot", in_format="bf16", out_format="fp32", L=3, pair_rule="arm-odd")
    with pytest.raises(ValueError, match="bf16 inputs"):
        Model(kind="pair-dot", in_format="fp16", out_format="fp32", L=2, pair_rule="arm-odd")


def _instruction_operands(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n VDPBF16PS instructions on random bit patterns (a, b: (n, 32) uint16; c: (n, 16))."""
    a = rng.integers(0, 1 << 16, (n, 32), dtype=np.uint16)
    b = rng.integers(0, 1 << 16, (n, 32), dtype=np.uint16)
    near = rng.random((n, 32)) < 0.6           # most exponents near 1, so that sums round and cancel
    a = np.where(near, (a & 0x807F) | (rng.integers(118, 136, (n, 32)) << 7).astype(np.uint16), a)
    b = np.where(near, (b & 0x807F) | (rng.integers(118, 136, (n, 32)) << 7).astype(np.uint16), b)
    c = draw_c(rng, n * 16).astype(np.float32).reshape(n, 16)
    return a, b, c


def _preset_on_instructions(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The VDPBF16PS preset run as 16 n x 2 x 1 products: lane i of each instruction."""
    p = workbench.preset("Zen4", "bf16", "fp32")
    with np.errstate(invalid="ignore"):
        av = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        bv = (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    out = np.empty(c.shape, dtype=np.float32)
    m = workbench.engine.Model(**p.params)
    for lane in range(16):
        A = av[:, 2 * lane:2 * lane + 2]
        Bv = bv[:, 2 * lane:2 * lane + 2]
        # n independent 1 x 2 x 1 products as one batch of dot products
        out[:, lane] = np.asarray(workbench.engine.dots(m, A, Bv, c[:, lane].astype(np.float64)), dtype=np.float32)
    return out


def test_vdpbf16ps_preset_equals_the_numpy_pseudo_code():
    """2 x 10^5 dot products (12,500 instructions of 16 lanes) on random bit patterns:
    the preset against ``dpbf16ps_model``, an independent vectorised reading of the SDM."""
    rng = np.random.default_rng(7)
    a, b, c = _instruction_operands(rng, 12_500)
    want = cpu_bf16.dpbf16ps_model(a, b, c).view(np.uint32)
    got = _preset_on_instructions(a, b, c).view(np.uint32)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


def test_vdpbf16ps_preset_equals_the_instruction():
    """The preset against the real VDPBF16PS on 10^7 dot products (skips without it)."""
    ok, why = cpu_bf16.unit_available()
    if not ok:
        pytest.skip(why)
    rng = np.random.default_rng(11)
    for _ in range(25):
        a, b, c = _instruction_operands(rng, 25_000)
        want = cpu_bf16.dpbf16ps(a, b, c).view(np.uint32)
        got = _preset_on_instructions(a, b, c).view(np.uint32)
        assert np.array_equal(got, want), np.argwhere(got != want)[:5]
