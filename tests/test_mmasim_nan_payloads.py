"""Every NaN payload and sign of every AMD kind against ``mmasim`` 2.1.1, bit for bit.

For each AMD preset that MMA-Sim models (CDNA1-3: FMA, E-FDPA, FTZ-AddMul, TR-FDPA,
GTR-FDPA), every NaN bit pattern of the input format (both signs, every non-zero
payload, quiet and signalling; fp32/fp64/tf32 inputs: every single payload bit and a
random draw, since 2^23 and 2^52 payloads do not fit a default run) is placed in A, in
B and, for fp32 C, every single payload bit and a random draw in C, at every position
of the block, beside Inf, zeros and normal values, so that the rules of
:mod:`workbench.engine.nans` (which operand's NaN wins, quieting, default NaN of
Inf - Inf and Inf * 0) are all met.  The expected bits come from ``mmasim``.
Shapes keep M * N * K a multiple of 8 (see ``tests/test_mmasim_differential.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
pytest.importorskip("mmasim", reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")

import mmasim_oracle as mo  # noqa: E402

from workbench.numbers import formats as _formats  # noqa: E402

AMD = [p for p in mo.paired_presets() if p.architecture.startswith("cdna")]


def _nan_patterns(fmt: str, rng: np.random.Generator) -> np.ndarray:
    """NaN bit patterns of ``fmt``: all of them for formats of up to 16 bits, else
    every single payload bit and 64 random payloads, both signs (empty for formats
    without NaN payloads: the FNUZ fp8 formats have one NaN, 0x80)."""
    f = _formats.format(fmt)
    if fmt.endswith("fnuz"):
        return np.array([0x80], dtype=f.bits_dtype)
    if fmt == "tf32":      # tf32 in fp32 registers: every 10-bit payload above 13 zero bits
        sign, exp_all = np.uint64(1 << 31), 0x7F800000
        pay = np.arange(1, 1 << 10, dtype=np.uint64) << np.uint64(13)
    else:
        m = f.man_bits
        exp_all = ((1 << (f.width - 1)) - 1) ^ ((1 << m) - 1)
        sign = np.uint64(1) << np.uint64(f.width - 1)
        if m <= 10:
            pay = np.arange(1, 1 << m, dtype=np.uint64)
        else:
            pay = np.concatenate([np.uint64(1) << np.arange(m, dtype=np.uint64),
                                  rng.integers(1, 1 << m, 64, dtype=np.uint64)])
    return np.concatenate([pay | np.uint64(exp_all), pay | np.uint64(exp_all) | sign]).astype(f.bits_dtype)


def _background(fmt: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Normal values with Inf (both signs), zeros and NaNs mixed in."""
    f = _formats.format(fmt)
    x = mo.draw("normal", fmt, shape, rng)
    if fmt == "tf32":
        x = x & np.uint32(0xFFFFE000)
    r = rng.random(shape)
    if not fmt.endswith("fnuz"):
        width, man = (32, 23) if fmt == "tf32" else (f.width, f.man_bits)
        inf = np.uint64(((1 << (width - 1)) - 1) ^ ((1 << man) - 1))
        sign = rng.integers(0, 2, shape, dtype=np.uint64) << np.uint64(width - 1)
        x = np.where(r < 0.08, (inf | sign).astype(f.bits_dtype), x)
        nan = _nan_patterns(fmt, rng)
        x = np.where((r >= 0.08) & (r < 0.14), rng.choice(nan, shape), x)
    return np.where((r >= 0.14) & (r < 0.2), np.zeros_like(x), x).astype(f.bits_dtype)


@pytest.mark.parametrize("p", AMD, ids=[p.name for p in AMD])
def test_every_nan_payload_and_sign_matches_mmasim(p):
    rng = np.random.default_rng([40, len(p.name), p.L or 1])
    K = 2 * (p.P if p.kind == "ftz-addmul" else max(p.L or 1, 2))
    nans = _nan_patterns(p.in_format, rng)
    n = 8 * -(-len(nans) // 8)
    pats, idx = np.resize(nans, n), np.arange(n)
    for where in ("A", "B", "C"):
        M, N = (8, n) if where == "B" else (n, 8)
        A = _background(p.in_format, (M, K), rng)
        B = _background(p.in_format, (K, N), rng)
        C = _background(p.out_format, (M, N), rng)
        if where == "A":        # pattern r in row r of A, at block position r % K
            A[idx, idx % K] = pats
        elif where == "B":      # pattern r in column r of B
            B[idx % K, idx] = pats
        else:
            C[idx, idx % N] = np.resize(_nan_patterns(p.out_format, rng), n)
        got, want = mo.compare(p, A, B, C)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (
            f"{p.name}, NaNs in {where}: {len(bad)} of {got.size} outputs differ from mmasim; first at "
            f"{tuple(bad[0])}: workbench {got[tuple(bad[0])]:#x}, mmasim {want[tuple(bad[0])]:#x}")
