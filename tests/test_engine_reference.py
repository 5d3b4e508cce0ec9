"""Differential tests: the compiled engine (``workbench.gemm``) against the slow,
independent Fraction models of tests/reference_mma.py, bit for bit.

For every preset of ``workbench.presets()`` and for random ``custom_model``
parameter sets of every elementary operation (Xie et al. 2025 Section 4.1:
T-FDPA incl. Khattak-Mikaitis' sticky bit / late c / interleaved groups, E-FDPA,
FMA chain, FTZ-AddMul, TR-FDPA, GTR-FDPA, ST-FDPA, GST-FDPA), random dot products
drawn to hit ties, cancellation, carries, subnormals, zeros, Inf and NaN go through
``workbench.gemm`` and through the reference; the output bit patterns must agree.
The Model fields are mapped onto the reference's keyword parameters in
:func:`reference_kwargs` (the reference does not import the engine).

Signs of zeros are compared too.  Where the reference's IEEE sum rule (-0 when every
addend is -0) is not what the units do, :func:`units_zero_sign` gives the expected
zero of each block from an independent source: NVIDIA tensor cores never output -0
(Valpey et al. 2025 Sec. 4.4; MMA-Sim's ``+ 0.0``), MMA-Sim's AMD fused sums of -0
addends are +0.  The rule holds per block, as the GEMM chains its accumulator: a
block that rounds to -0 hands -0 on as the next block's c.
"""
from __future__ import annotations

import math
import struct
import sys
import zlib
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.numbers import formats
from workbench.units import catalogue

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reference_mma as ref  # noqa: E402

# --------------------------------------------------------------- model mapping
def _c_format(m) -> str:
    return "fp16" if m.out_format == "fp16" else m.out_format


def _km_path(m) -> bool:
    return m.kind == "t-fdpa" and (m.sticky or m.c_position == "late" or m.interleave > 1)


def reference_kwargs(m):
    """(dot_chain keyword arguments, scaled?) reproducing Model ``m`` with the reference."""
    rf = m.result_format or m.out_format
    if m.kind == "t-fdpa":
        if _km_path(m):
            if (m.interleave not in (1, 2) or (m.group_F not in (None, m.F)) or m.late_rounding != "rne"
                    or m.flush_output_subnormals):
                raise NotImplementedError("reference block_fma_km: interleave 1 or 2, group_F = F, late RNE")
            n = m.L // 2 if m.interleave == 2 else m.L
            op = partial(ref.block_fma_km, n_fma=n, neab=m.F - 23, rounding=m.rounding, sticky=m.sticky,
                         c_position=m.c_position, interleave=m.interleave == 2, in_format=m.in_format,
                         out_format=m.out_format, c_format=_c_format(m))
            return dict(L=m.L, op=op), False
        return dict(L=m.L, op=ref.t_fdpa, F=m.F, rounding=m.rounding, in_format=m.in_format, out_format=rf,
                    c_format=_c_format(m), zero_exponent=m.zero_exponent,
                    flush_subnormals=m.flush_subnormals, flush_output_subnormals=m.flush_output_subnormals), False
    if m.kind == "e-fdpa":
        return dict(L=m.L, op=ref.e_fdpa, rounding=m.rounding, out_format=rf,
                    flush_output_subnormals=m.flush_output_subnormals), False
    if m.kind == "fma":
        return dict(L=1, op=ref.fma_chain, rounding="rne", out_format=m.out_format), False
    if m.kind == "ftz-addmul":
        return dict(L=m.P, op=partial(ref.ftz_addmul, P=m.P, in_format=m.in_format,
                                      flush_subnormals=m.flush_subnormals)), False
    if m.kind in ("tr-fdpa", "gtr-fdpa"):
        op = ref.tr_fdpa if m.kind == "tr-fdpa" else ref.gtr_fdpa
        return dict(L=m.L, op=op, F=m.F, F2=m.F2, rounding=m.rounding, in_format=m.in_format, out_format=rf,
                    zero_exponent=m.zero_exponent, alignment_rounding=m.alignment_rounding,
                    flush_output_subnormals=m.flush_output_subnormals), False
    if m.kind == "st-fdpa":
        return dict(L=m.L, op=ref.st_fdpa, F=m.F, rounding=m.rounding, in_format=m.in_format, out_format=rf,
                    k_block=m.k_block, scale_format=m.scale_format, zero_exponent=m.zero_exponent,
                    flush_output_subnormals=m.flush_output_subnormals), True
    if m.kind == "pair-dot":
        return dict(L=m.L, op=partial(ref.pair_dot, rule=m.pair_rule)), False
    if m.kind == "int-mma":
        return dict(L=m.L, op=partial(ref.int_mma, overflow=m.overflow)), False
    if m.kind == "gst-fdpa":
        return dict(L=m.L, op=ref.gst_fdpa, F=m.F, G=m.G, rounding=m.rounding, in_format=m.in_format,
                    out_format=rf, k_block=m.k_block, scale_format=m.scale_format,
                    zero_exponent=m.zero_exponent, flush_output_subnormals=m.flush_output_subnormals), True
    raise AssertionError(m.kind)


def reference_dot(m, a, b, c, sa=None, sb=None):
    kw, scaled = reference_kwargs(m)
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    L = kw.pop("L")
    kw["op"] = units_zero_sign(m, kw["op"])
    # the engine zero-pads K to whole blocks; so does the reference here
    pad = (-len(a)) % (L if m.kind != "ftz-addmul" else m.P)
    a = a + [0.0] * pad
    b = b + [0.0] * pad
    if scaled:
        nb = len(a) // m.k_block
        sa = [float(x) for x in sa] + [1.0] * (nb - len(sa))
        sb = [float(x) for x in sb] + [1.0] * (nb - len(sb))
        kw.pop("k_block")
        return ref.dot_chain(a, b, float(c), L=L, scale_a=sa, scale_b=sb, k_block=m.k_block, **kw)
    return ref.dot_chain(a, b, float(c), L=L, **kw)


def bits(x: float, out: str) -> int:
    """Output bit pattern; NaN as NVIDIA's canonical NaN (what workbench.gemm returns); an
    integer format's two's-complement bits."""
    if formats.is_int_format(out):
        return int(x) % 2**formats.int_format(out).bits
    if out == "fp64":
        if math.isnan(x):
            return 0x7FF8000000000000
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    return ref.encode(float(x), out)


# --------------------------------------------------------------- input drawing
def draw(rng, fmt: str, n: int, *, specials: bool, narrow: int = 4, top: int | None = None) -> np.ndarray:
    """n values of ``fmt``: a mix of values near 1 (carries, cancellation), powers of two
    and 1 + ulp patterns (ties), the whole exponent range (subnormals, overflow),
    signed zeros and (optionally) Inf/NaN.  An integer format: its extremes, zeros, small
    values and uniform draws (no specials: integers have none)."""
    if formats.is_int_format(fmt):
        fi = formats.int_format(fmt)
        kind = rng.integers(0, 5, n)
        x = rng.integers(fi.min, fi.max, n, endpoint=True)
        x = np.where(kind == 0, rng.choice([fi.min, fi.max], n), x)
        x = np.where(kind == 1, rng.integers(max(fi.min, -3), min(fi.max, 3), n, endpoint=True), x)
        x = np.where(kind == 2, np.clip(rng.integers(-3, 4, n) + rng.choice([fi.min, fi.max], n), fi.min, fi.max), x)
        return x.astype(np.float64)
    f = wb.format(fmt)
    kind = rng.integers(0, 10, n)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0) if f.signed else np.ones(n)
    x = rng.uniform(1, 2, n) * 2.0 ** rng.integers(-narrow, narrow + 1, n)
    hi = f.emax if top is None else min(f.emax, top)
    wide = rng.uniform(1, 2, n) * 2.0 ** rng.integers(f.emin - f.man_bits, hi + 1, n)
    x = np.where(kind >= 6, wide, x)
    tie = 2.0 ** rng.integers(-narrow, narrow + 1, n) * (1 + np.where(rng.random(n) < 0.5, 0.0, 2.0 ** -f.man_bits))
    x = np.where(kind == 4, tie, x)
    sub = rng.integers(1, 1 << max(1, f.man_bits), n) * 2.0 ** (f.emin - f.man_bits)
    x = np.where(kind == 5, sub, x)
    x = np.minimum(x, f.max)
    x = wb.round(x * sign, f, "rne")
    zero = kind == 3
    x = np.where(zero, np.where(rng.random(n) < 0.5, -0.0, 0.0) if f.signed else 0.0, x)
    if specials:
        sp = rng.random(n) < 0.03
        if f.special == "ieee":
            vals = rng.choice(np.array([np.inf, -np.inf, np.nan]), n)
        elif f.special in ("fn", "fnuz"):
            vals = np.full(n, np.nan)
        else:
            vals = x
        x = np.where(sp, vals, x)
    return x


def _scale_values(rng, fmt: str, n: int) -> np.ndarray:
    f = wb.format(fmt)
    if fmt == "e8m0":
        return 2.0 ** rng.integers(-20, 21, n).astype(float)
    v = rng.uniform(1, 2, n) * 2.0 ** rng.integers(f.emin - f.man_bits, f.emax + 1, n)
    v = wb.round(np.minimum(v, f.max), f, "rne")
    return np.where(v == 0, 1.0, v)  # zero scales: see test_gst_zero_scale


def no_overflow(m) -> bool:
    """Models whose reference function fails on an overflowing intermediate result:
    fp64 FMA chains (Fraction -> float conversion of huge values), FTZ-AddMul
    (an overflowing fp32 product reaches Fraction(inf)) and Khattak-Mikaitis' block
    FMA (a group result of inf is fed to the next group as a finite value)."""
    return m.kind in ("fma", "ftz-addmul") or _km_path(m)


def draw_case(rng, m, K: int, *, specials: bool):
    """One dot product (a, b, c[, scale_a, scale_b]) for model m, shaped to stress it."""
    fin = m.in_format
    if m.operation.integer:   # integer units: A and B of their own formats, c often near the int32 bounds
        return (draw(rng, fin, K, specials=False), draw(rng, m.formats[1].name, K, specials=False),
                float(draw(rng, m.out_format, 1, specials=False)[0]), None, None)
    # The reference cannot take overflowing intermediates in some operations
    # (see NO_OVERFLOW): their inputs stay well inside the range.
    ff, fo = wb.format(fin), wb.format(m.out_format)
    # the output's range too: a bf16 -> fp16 block FMA overflows fp16 with bf16-range products
    top = max(min(ff.emax, fo.emax) // 2 - 3, ff.emin - ff.man_bits + 1) if no_overflow(m) else None
    a = draw(rng, fin, K, specials=specials, top=top)
    b = draw(rng, fin, K, specials=specials, top=top)
    style = rng.integers(0, 4)
    if style == 1 and K >= 2:  # cancellation between products
        a[1::2] = -a[0:K - 1:2] if K % 2 == 0 else np.concatenate([-a[0:K - 1:2]])
        b[1::2] = b[0:K - 1:2]
    cfmt = m.out_format
    c = draw(rng, cfmt, 1, specials=specials, top=top)[0]
    if style == 2:  # c cancels the exact sum (as far as cfmt allows)
        with np.errstate(all="ignore"):
            s = float(np.sum(a * b))
        if np.isfinite(s):
            fo = wb.format(cfmt)
            c = float(wb.round(np.array([-min(max(s, -fo.max), fo.max)]), fo, "rne")[0])
    if style == 3 and top is None:  # one dominant product, tiny others: alignment losses and carries
        a[0] = wb.round(np.array([wb.format(fin).max / 4]), fin, "rne")[0] if rng.random() < 0.3 else a[0]
    if m.kind in ("st-fdpa", "gst-fdpa"):
        nb = -(-K // m.k_block)
        return a, b, c, _scale_values(rng, m.scale_format, nb), _scale_values(rng, m.scale_format, nb)
    return a, b, c, None, None


def _all_neg_zero_addends(a, b, c) -> bool:
    prods = [x * y for x, y in zip(a, b)]
    return all(p == 0 and math.copysign(1, p) < 0 for p in prods) and c == 0 and math.copysign(1, c) < 0


#: Fused kinds of NVIDIA tensor cores: every zero output is +0 (Valpey et al. 2025
#: Sec. 4.4, measured on the hardware: "tensor cores do not output -0"; MMA-Sim
#: 2.1.1's t_fdpa, st_fdpa and gst_fdpa end in ``+ 0.0``).
NVIDIA_FUSED = ("t-fdpa", "st-fdpa", "gst-fdpa")
#: AMD fused kinds whose sum of zeros is +0 even when every addend is -0 (MMA-Sim
#: 2.1.1's e_fdpa, tr_fdpa and gtr_fdpa: their float sums start from +0).
AMD_FUSED = ("e-fdpa", "tr-fdpa", "gtr-fdpa")


def units_zero_sign(m, op):
    """The reference's block operation ``op`` with the units' rule for a zero output in
    place of the reference's IEEE sum rule (-0 when every addend is -0), block by block:
    NVIDIA fused kinds never output -0; the AMD fused kinds give +0 for a block of -0
    addends, c (the previous block's output) included (MMA-Sim 2.1.1's e_fdpa, tr_fdpa,
    gtr_fdpa), and a non-zero sum that rounds to zero keeps its sign there (MMA-Sim's
    float conversion; the reference has it).  FMA chains and FTZ-AddMul follow IEEE 754
    (the reference)."""
    if m.kind not in NVIDIA_FUSED + AMD_FUSED:
        return op

    def block(a, b, c, *args, **kw):
        d = op(a, b, c, *args, **kw)
        if d == 0 and (m.kind in NVIDIA_FUSED or _all_neg_zero_addends(a, b, c)):
            return 0.0
        return d
    return block


def check_model(m, rng, n_cases: int, K_choices, *, specials: bool = True) -> int:
    """Run n_cases random dot products through gemm (one GEMM, diagonal) and the reference."""
    Ks = sorted(int(rng.choice(K_choices)) for _ in range(n_cases))
    scaled = m.kind in ("st-fdpa", "gst-fdpa")
    cases = []
    D = []
    for K in sorted(set(Ks)):  # one GEMM per K: zero padding is not neutral for -0 in an FMA chain
        n = Ks.count(K)
        A = np.zeros((n, K))
        B = np.zeros((K, n))
        C = np.zeros((n, n))
        nb = -(-K // m.k_block) if scaled else 0
        SA = np.ones((n, nb))
        SB = np.ones((nb, n))
        for r in range(n):
            a, b, c, sa, sb = draw_case(rng, m, K, specials=specials and m.kind != "ftz-addmul")
            A[r], B[:, r], C[r, r] = a, b, c
            if scaled:
                SA[r], SB[:, r] = sa, sb
            cases.append((a, b, c, sa, sb))
        kw = dict(scale_a=SA, scale_b=SB) if scaled else {}
        D.extend(np.diagonal(wb.gemm(A, B, C, model=m, **kw)).tolist())
    out = m.out_format
    bad = []
    for r, (a, b, c, sa, sb) in enumerate(cases):
        want = reference_dot(m, a, b, c, sa, sb)
        got = float(D[r])
        gb = bits(got, out) if not np.isnan(got) else bits(math.nan, out)
        wbits = bits(want, out)
        if gb != wbits:
            row = (r, list(a), list(b), c, sa, sb, got, want)
            bad.append(row)
    assert not bad, f"{m.describe()}: {len(bad)} of {n_cases} differ; first: {bad[0]}"
    return n_cases


# --------------------------------------------------------------------- presets
PRESETS = [r for r in catalogue.records()]


def _preset_id(p):
    return p.name


@pytest.mark.parametrize("p", PRESETS, ids=_preset_id)
def test_every_preset_single_block_and_chained(p):
    rng = np.random.default_rng(zlib.crc32(p.name.encode()))  # the same in every process
    L = 1 if p.kind == "fma" else (p.P if p.kind == "ftz-addmul" else p.L)
    Ks = [L, L, max(1, L - 1), 2 * L + L // 2 + 1] if p.kind != "fma" else [1, 3, 8]
    check_model(p, rng, 12 if p.L >= 32 else 20, Ks)


# ------------------------------------------------------- random custom models
def _random_model(rng, kind: str):
    m = _random_model_plain(rng, kind)
    if kind in FLUSH_KINDS and rng.random() < 0.4 and not _km_path(m):
        m = m.with_params(flush_output_subnormals=True)
    return m


#: Kinds whose flush_output_subnormals the reference models (every kind that has the
#: parameter but FMA, whose reference is IEEE; FTZ-AddMul always flushes).
FLUSH_KINDS = ("t-fdpa", "e-fdpa", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa")


def _random_model_plain(rng, kind: str):
    ri = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    pick = lambda xs: xs[int(rng.integers(0, len(xs)))]  # noqa: E731
    if kind == "t-fdpa":
        fin = pick(["fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp4_e2m1"])
        out = pick(["fp32", "fp32", "fp16"])
        style = pick(["plain", "plain", "km"])
        if style == "plain":
            return wb.custom_model(fin, out, L=pick([1, 2, 4, 8, 16, 32]), F=ri(3, 40),
                                   rounding=pick(["rz", "rne", "rd", "ru"]),
                                   zero_exponent=pick([None, ri(-140, -10)]))
        inter = pick([1, 1, 2])
        return wb.custom_model(fin, out, L=pick([4, 8, 16, 32]), neab=ri(0, 6) if out == "fp32" else None,
                               F=None if out == "fp32" else ri(23, 29),
                               rounding=pick(["rz", "rne", "rd", "ru"]), sticky=bool(rng.integers(0, 2)),
                               c_position="late" if inter == 2 else pick(["early", "late"]), interleave=inter)
    if kind == "e-fdpa":
        return wb.custom_model(pick(["fp16", "bf16", "fp8_e4m3", "tf32"]), pick(["fp32", "fp16"]), kind="e-fdpa",
                               L=pick([1, 2, 4, 8, 16]), rounding=pick(["rne", "rz", "rd", "ru"]))
    if kind in ("tr-fdpa", "gtr-fdpa"):
        F = ri(8, 30)
        fin = pick(["fp16", "bf16", "tf32"]) if kind == "tr-fdpa" else pick(["fp8_e4m3fnuz", "fp8_e5m2fnuz", "fp8_e4m3"])
        return wb.custom_model(fin, "fp32", kind=kind, L=pick([2, 4, 8, 16]), F=F, F2=ri(F, 36),
                               rounding=pick(["rne", "rz", "rd", "ru"]), zero_exponent=pick([None, ri(-150, -20)]))
    if kind == "gst-fdpa":
        sf = pick(["e8m0", "ue4m3"])
        kb = pick([16, 32])
        G = pick([g for g in (4, 8, 16, 32) if kb % g == 0])
        return wb.custom_model(pick(["fp4_e2m1", "fp6_e2m3", "fp6_e3m2", "fp8_e4m3"]), "fp32", kind="gst-fdpa",
                               L=kb * pick([1, 2, 4]), F=ri(16, 35), G=G, k_block=kb, scale_format=sf,
                               rounding=pick(["rz", "rne"]), zero_exponent=pick([None, ri(-150, -20)]))
    if kind == "st-fdpa":
        return wb.custom_model(pick(["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp4_e2m1"]), "fp32", kind="st-fdpa",
                               L=pick([32, 64]), F=ri(13, 30), k_block=32, scale_format="e8m0",
                               rounding=pick(["rz", "rne"]), zero_exponent=pick([None, -133]))
    if kind == "ftz-addmul":
        P = pick([2, 4])
        return wb.custom_model(pick(["fp16", "bf16"]), "fp32", kind="ftz-addmul", L=P, P=P,
                               flush_subnormals=True, flush_output_subnormals=True)
    if kind == "fma":
        f = pick(["fp32", "fp64"])
        return wb.custom_model(f, f, kind="fma", L=1, rounding="rne")
    if kind == "int-mma":
        return wb.custom_model(pick(["s8", "u8"]), "s32", kind="int-mma", L=pick([1, 4, 16, 32, 64]),
                               b_format=pick([None, "s8", "u8"]), overflow=pick(["wrap", "saturate"]))
    raise AssertionError(kind)


CUSTOM_KINDS = [("t-fdpa", 10), ("e-fdpa", 6), ("tr-fdpa", 6), ("gtr-fdpa", 6), ("gst-fdpa", 6), ("st-fdpa", 2),
                ("ftz-addmul", 2), ("fma", 2), ("int-mma", 6)]


@pytest.mark.parametrize("kind,count", CUSTOM_KINDS, ids=[k for k, _ in CUSTOM_KINDS])
def test_random_custom_models(kind, count):
    rng = np.random.default_rng(sum(map(ord, kind)))
    for _ in range(count):
        m = _random_model(rng, kind)
        L = m.P if kind == "ftz-addmul" else m.L
        check_model(m, rng, 12, [L, 2 * L + 1] if kind != "fma" else [1, 5])


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k, _ in CUSTOM_KINDS])
def test_random_custom_models_many(kind, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("heavy: run with -m slow")
    rng = np.random.default_rng(1000 + sum(map(ord, kind)))
    for _ in range(40):
        m = _random_model(rng, kind)
        L = m.P if kind == "ftz-addmul" else m.L
        check_model(m, rng, 60, [L, 3 * L + 1] if kind != "fma" else [1, 9])


# --------------------------------------------------------------- small GEMMs
@pytest.mark.parametrize("name", ["cdna1/mfma/fp16->fp32", "cdna3/mfma/bf16->fp32", "cdna3/mfma/fp8_e5m2fnuz->fp32",
                                  "blackwell/tcgen05.mma.block_scale.k64/fp4_e2m1->fp32/nvfp4",
                                  "rtx-blackwell/mma.block_scale.k64/fp4_e2m1->fp32/mxfp4",
                                  "hopper/wgmma/fp16->fp32"])
def test_small_gemms_every_element(name):
    """3 x 4 GEMMs with K over several blocks (plus a ragged tail): every element."""
    m = next(r for r in catalogue.records() if r.name == name)
    rng = np.random.default_rng(7)
    M, N, K = 3, 4, 2 * m.L + m.L // 2
    A = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(M)])
    B = np.stack([draw(rng, m.in_format, K, specials=False) for _ in range(N)]).T
    C = np.stack([draw(rng, m.out_format, N, specials=False) for _ in range(M)])
    kw = {}
    if m.scale_format:
        nb = -(-K // m.k_block)
        kw = dict(scale_a=_scale_values(rng, m.scale_format, M * nb).reshape(M, nb),
                  scale_b=_scale_values(rng, m.scale_format, nb * N).reshape(nb, N))
    D = wb.gemm(A, B, C, model=m, **kw)
    for i in range(M):
        for j in range(N):
            want = reference_dot(m, A[i], B[:, j], C[i, j],
                                 kw["scale_a"][i] if kw else None, kw["scale_b"][:, j] if kw else None)
            assert bits(float(D[i, j]), m.out_format) == bits(want, m.out_format), (name, i, j)


def test_gst_zero_scale_is_a_zero_term():
    """A zero UE4M3 scale makes its groups zero terms (Xie Algorithm 9 line 4: the
    group sum is multiplied by SignedSig(alpha) = 0): the result is c + the other
    groups, exactly as if the zero-scaled elements were zero."""
    m = wb.preset("blackwell", "fp4_e2m1", "fp32", variant="nvfp4")
    A = np.full((1, 64), 6.0)
    B = np.full((64, 1), 0.5)
    sa = np.array([[0.0, 1.0, 2.0, 0.0]])
    sb = np.array([[1.0], [1.0], [1.0], [448.0]])
    D = wb.gemm(A, B, np.array([[0.25]]), model=m, scale_a=sa, scale_b=sb)
    assert D[0, 0] == 0.25 + 16 * 3.0 * (1 + 2)


@pytest.mark.parametrize("name", ["ampere/mma/fp16->fp16", "volta/mma.m8n8k4/fp16->fp16", "hopper/wgmma/fp16->fp16"])
def test_tfdpa_underflow_to_zero_is_plus_zero(name):
    """2^-14 * -2^-14 = -2^-28 is below fp16's smallest subnormal 2^-24: the sum rounds to
    zero, and an NVIDIA tensor core outputs +0 (Valpey et al. 2025 Sec. 4.4: "tensor
    cores do not output -0"; MMA-Sim 2.1.1 t_fdpa: ``+ 0.0``)."""
    m = next(r for r in catalogue.records() if r.name == name)
    a, b = np.array([[2.0**-14]]), np.array([[-2.0**-14]])
    D = wb.gemm(a, b, np.zeros((1, 1)), model=m)
    assert D[0, 0] == 0 and not np.signbit(D[0, 0])
    assert bits(reference_dot(m, [2.0**-14], [-2.0**-14], 0.0), "fp16") == 0   # the reference agrees
    # every path: C = -0, the row kernel, the trace, the in-register fp32 total of "outside"
    assert not np.signbit(wb.gemm(a, b, np.full((1, 1), -0.0), model=m)[0, 0])
    assert not np.signbit(wb.engine.dots(m, a, b.T, np.array([-0.0]))[0])
    assert not np.signbit(wb.explain(a[0], b[:, 0], -0.0, model=m).value)
    assert not np.signbit(wb.gemm(a, b, np.full((1, 1), -0.0), model=m, accumulation="outside")[0, 0])


#: E-FDPA chains of blocks of one product (K = 2, L = 1) and their outputs: the first
#: block's -2^-200 (fp32) or -2^-40 (fp16) rounds to a zero of its sign (IEEE 754
#: Sec. 6.3); the second block's addends, -0 * 1 and that -0, are all -0 and sum to +0
#: (MMA-Sim 2.1.1's e_fdpa, checked below).
EFDPA_ZERO_CASES = [("fp32", [-2.0**-100], [2.0**-100], -0.0), ("fp32", [-2.0**-100, -0.0], [2.0**-100, 1.0], 0.0),
                    ("fp16", [-2.0**-20], [2.0**-20], -0.0), ("fp16", [-2.0**-20, -0.0], [2.0**-20, 1.0], 0.0)]


@pytest.mark.parametrize("L", [1, 2])
@pytest.mark.parametrize("out,a,b,want", EFDPA_ZERO_CASES)
def test_efdpa_zero_signs_block_by_block(out, a, b, want, L):
    """A non-zero E-FDPA sum that rounds to zero keeps its sign; a block of -0 addends
    (c included) gives +0.  With L = 2 the two products share one block: -0 as well,
    since the non-zero product decides the sign.  The branch of 4f48014 had L = 1's
    first case as an engine finding (+0): that was the test's own rule, applied to
    the whole row instead of each block; the engine gives what MMA-Sim does."""
    if L == 2:
        want = -0.0
    m = wb.custom_model("bf16", out, kind="e-fdpa", L=L, rounding="rne")
    D = wb.gemm(np.array([a]), np.array(b)[:, None], np.zeros((1, 1)), model=m)
    assert D[0, 0] == 0 and np.signbit(D[0, 0]) == np.signbit(want), (out, a, b, L, D[0, 0])
    assert bits(reference_dot(m, a, b, 0.0), out) == bits(want, out)     # the reference with the units' rule
    if out == "fp32":                                                     # MMA-Sim models fp32 outputs only
        torch = pytest.importorskip("torch",
                                    reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
        fdpa = pytest.importorskip("mmasim.arithmetic.fdpa",
                                   reason="needs MMA-Sim: pip install torch==2.13.0 && pip install -e '.[oracle]'")
        t = lambda v: torch.tensor([v], dtype=torch.float32)  # noqa: E731
        got = fdpa.MMA_E_FDPA(L).dpa(t(a), t(b), torch.tensor([0.0])).item()
        assert got == 0 and math.copysign(1, got) == math.copysign(1, want), got


@pytest.mark.parametrize("kind", FLUSH_KINDS)
def test_flush_output_subnormals_on_a_subnormal_c(kind):
    """A subnormal c with zero products: the result is c after the alignment (c itself, or
    - TR-/GTR-FDPA's round-down alignment at the zero terms' exponent - a negative c cut
    to a larger normal step), and a model with ``flush_output_subnormals`` never outputs
    a subnormal (the independent expectation), bit for bit the Fraction reference.  Random
    models of the kind (every format, window, rounding), so that a kernel path that
    ignores the flag (GTR-, ST- and GST-FDPA's random draws seldom build a subnormal
    result) fails here."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    done = 0
    while done < 6:
        m = _random_model_plain(rng, kind)
        if _km_path(m):
            continue
        # every other model without a zero-operand exponent: with one, zero products can lift
        # the window above a subnormal c (TR-/GTR-FDPA), so no subnormal is left to flush
        m = m.with_params(flush_output_subnormals=True,
                          **({"zero_exponent": None} if done % 2 == 0 and m.zero_exponent is not None else {}))
        fo = wb.format(m.out_format)
        L = m.L
        K = 2 * L
        mag = float(int(rng.integers(1, 2 ** fo.man_bits)) * 2.0 ** (fo.emin - fo.man_bits))
        a = np.zeros(K)
        b = wb.round(rng.uniform(1, 2, K), m.in_fmt, "rz")
        kw, sa, sb = {}, None, None
        if m.kind in ("st-fdpa", "gst-fdpa"):
            nb = K // m.k_block
            sa, sb = np.ones(nb), np.ones(nb)
            kw = {"scale_a": sa[None, :], "scale_b": sb[:, None]}
        for c in (mag, -mag):   # both signs: TR-/GTR-FDPA's round-down alignment cuts a negative c to a normal step
            got = float(wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=m, **kw)[0, 0])
            assert got == 0 or abs(got) >= fo.min_normal, (m.describe(), c, got)
            want = reference_dot(m, a, b, c, sa, sb)
            assert bits(got, m.out_format) == bits(want, m.out_format), (m.describe(), c, got, want)
        done += 1
