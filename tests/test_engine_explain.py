"""workbench.explain: the trace's value is workbench.gemm's output bit for bit (random
inputs, every traced kind), and its text walks through the steps of Valpey et al.
2025 (under Table 5) / Xie et al. 2025 Algorithm 7."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.units import catalogue
from workbench.engine import EXPLAINED_KINDS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_reference import bits, draw, draw_case  # noqa: E402

MODELS = [r for r in catalogue.records() if r.kind in EXPLAINED_KINDS and r.interleave == 1
          and r.kind not in ("ftz-addmul", "st-fdpa", "gst-fdpa")]
MODELS += [wb.custom_model("fp16", "fp32", L=8, neab=2, sticky=True, rounding="rne"),
           wb.custom_model("bf16", "fp32", L=4, F=24, c_position="late", rounding="rz"),
           wb.custom_model("fp16", "fp32", kind="tr-fdpa", L=4, F=20, F2=26, zero_exponent=-60),
           wb.custom_model("fp8_e4m3", "fp16", kind="e-fdpa", L=8, rounding="rd")]


@pytest.mark.parametrize("m", MODELS, ids=lambda m: getattr(m, "name", "") or m.describe())
def test_trace_value_is_the_kernel_value(m):
    rng = np.random.default_rng(11)
    L = 1 if m.kind == "fma" else m.L
    for t in range(5):
        K = int(rng.choice([L, 2 * L + 1]))
        a = draw(rng, m.in_format, K, specials=t == 4)
        b = draw(rng, m.in_format, K, specials=t == 4)
        c = float(draw(rng, m.out_format, 1, specials=False)[0])
        d = float(wb.gemm(a[None, :], b[:, None], np.array([[c]]), model=m)[0, 0])
        tr = wb.explain(a, b, c, m)
        assert bits(tr.value, m.out_format) == bits(d, m.out_format), (m.describe(), a, b, c, tr.value, d)
        assert len(tr.blocks) == (1 if m.kind == "fma" and K == 0 else -(-K // L))


def test_walkthrough_text_fasi_normalisation_example():
    """Fasi et al. / Valpey et al. Sec. 6: 1 - 2^-24 plus four 2^-24 on Volta gives
    1 + 2^-23 because the sum is not normalised before the final rounding."""
    tr = wb.explain([1, 1, 1, 1], [2.0**-24] * 4, 1 - 2.0**-24, wb.preset("V100", "fp16", "fp32"))
    s = str(tr)
    assert tr.value == 1 + 2.0**-23
    assert "largest exponent of all terms is -1" in s
    assert "a0*b0 = 2^-10 * 2^-14 = 2^-24" in s
    assert "not normalised" in s and "final rounding RZ to fp32" in s
    assert tr.blocks[0].e_max == -1 and not tr.blocks[0].zero_exponent_set_max


def test_zero_exponent_and_lost_bits_are_reported():
    m = wb.preset("H100", "fp16", "fp32")  # zero exponent -133
    tr = wb.explain([2.0**-14, 0.0], [2.0**-14, 1.0], 0.0, m)
    assert tr.blocks[0].zero_exponent_set_max is False and tr.blocks[0].e_max == -28
    tr = wb.explain([1.0, 2.0**-14], [1.0, 2.0**-14], 0.0, wb.preset("V100", "fp16", "fp32"))
    lost = [t.lost for t in tr.blocks[0].terms if t.label == "a1*b1"][0]
    assert lost == 2.0**-28 and tr.value == 1.0  # 2^-28 is below the 23 bits kept at 2^0


def test_cdna3_fp8_table8_trace():
    tr = wb.explain([-2.0**13, -0.5, -0.25, -0.125], [2.0**10, 1, 1, 1], 2.0**23, wb.preset("cdna3", "fp8_e5m2"))
    assert tr.value == -1.0  # Xie et al. Table 8
    assert "rounded down" in str(tr)


def test_every_engine_kind_is_explained_and_bad_values():
    from workbench.engine.model import KINDS

    assert set(EXPLAINED_KINDS) == set(KINDS)
    nv = wb.preset("blackwell", "fp4_e2m1", variant="nvfp4")
    with pytest.raises(ValueError, match="needs scale_a and scale_b"):
        wb.explain([1.0] * 64, [1.0] * 64, 0.0, nv)
    with pytest.raises(ValueError, match="ceil"):
        wb.explain([1.0] * 20, [1.0] * 20, 0.0, nv, scale_a=[1.0], scale_b=[1.0])
    with pytest.raises(ValueError, match="not representable"):
        wb.explain([1.0] * 16, [1.0] * 16, 0.0, nv, scale_a=[3.0], scale_b=[1.1])
    with pytest.raises(ValueError, match="takes no scale factors"):
        wb.explain([1.0], [1.0], 0.0, wb.preset("A100", "fp16"), scale_a=[1.0], scale_b=[1.0])
    with pytest.raises(ValueError, match="not representable"):
        wb.explain([0.1], [1.0], 0.0, wb.preset("A100", "fp16"))
    assert math.isnan(wb.explain([np.inf], [0.0], 0.0, wb.preset("A100", "fp16")).value)


# ------------------------------------------------------------- kinds added later
def _gemm_one(m, a, b, c, sa=None, sb=None) -> float:
    kw = {} if sa is None else {"scale_a": np.asarray(sa)[None, :], "scale_b": np.asarray(sb)[:, None]}
    return float(wb.gemm(np.asarray(a)[None, :], np.asarray(b)[:, None], np.array([[c]]), model=m, **kw)[0, 0])


def _check_random(m, seeds=(1, 2, 3, 4, 5, 6), n=6):
    """Several seeds of draw_case (cancellation, c cancelling the sum, a dominant product,
    subnormals, Inf/NaN): the trace's value is gemm's bit for bit."""
    L = m.P if m.kind == "ftz-addmul" else m.L
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for t in range(n):
            K = int(rng.choice([L, 2 * L, L + L // 2 + 1]))
            a, b, c, sa, sb = draw_case(rng, m, K, specials=t % 3 == 2)
            d = _gemm_one(m, a, b, c, sa, sb)
            kw = {} if sa is None else {"scale_a": sa, "scale_b": sb}
            tr = wb.explain(a, b, c, m, **kw)
            assert bits(tr.value, m.out_format) == bits(d, m.out_format), (m.describe(), seed, t, a, b, c, sa, sb,
                                                                            tr.value, d)
            assert len(tr.blocks) == -(-K // L)
            str(tr)  # the text renders


INTERLEAVED = [r for r in catalogue.records() if r.interleave > 1]
INTERLEAVED += [wb.custom_model("fp8_e4m3", "fp32", L=16, F=25, interleave=2, group_F=22, rounding="rz",
                                c_position="late", zero_exponent=-133),
                wb.custom_model("fp8_e5m2", "fp16", L=16, F=24, interleave=2, c_position="early", rounding="rne",
                                zero_exponent=-21, sticky=True),
                wb.custom_model("fp8_e5m2", "fp16", L=8, F=24, c_position="late", rounding="rz", zero_exponent=-21)]


@pytest.mark.parametrize("m", INTERLEAVED, ids=lambda m: getattr(m, "name", "") or m.describe())
def test_interleaved_trace_value_is_the_kernel_value(m):
    _check_random(m)


def test_interleaved_groups_khattak_probe():
    """Khattak & Mikaitis Sec. IV-A5: p0 = 1, p1 = 2^-24 and one more 2^-24 at position k.
    Elements 0,1,4,5,... form group 0: the three terms meet in one fused sum,
    1 + 2^-23 is exact with F = 25 and RZ keeps it.  At positions 2,3,6,7,... the extra
    2^-24 is in group 1: group 0 gives RZ(1 + 2^-24) = 1, group 1 RZ(1 + 2^-24) = 1."""
    m = wb.preset("H100", "fp8_e5m2", "fp32", instruction="mma.sync")
    for k in range(2, 32):
        a = [0.0] * 32
        b = [0.0] * 32
        a[0] = b[0] = 1.0
        a[1] = b[1] = a[k] = b[k] = 2.0 ** -12
        tr = wb.explain(a, b, 0.0, m)
        same = (k >> 1) % 2 == 0
        assert tr.value == (1 + 2.0 ** -23 if same else 1.0), k
        groups = tr.blocks[0].groups
        assert [g.result for g in groups] == ([1 + 2.0 ** -23, 1 + 2.0 ** -23] if same else [1.0, 1.0])
    s = str(tr)
    assert "-- group 0 (elements 0,1,4,5,...,28,29" in s and "-- group 1 (elements 2,3,6,7,...,30,31" in s
    assert "group 0 result: 2^0 -> 2^0, exact" in s and "group 1 rounded RZ to fp32: 1.0" in s


def test_interleaved_c_added_late_with_rne():
    """c late: the groups give RZ(1 + 2^-24) = 1 each; then 1 + c with c = 3 * 2^-25
    (0.75 ulp of 1) is rounded to nearest: 1 + 2^-23.  With a = b = (1, 0, ...) the
    same holds late, while c early in the RZ fused sum gives RZ(1 + 3 * 2^-25) = 1."""
    m = wb.preset("H100", "fp8_e5m2", "fp32", instruction="mma.sync")
    a = [1.0, 2.0 ** -12] + [0.0] * 30
    tr = wb.explain(a, a, 3 * 2.0 ** -25, m)
    assert tr.value == 1 + 2.0 ** -23
    assert [g.result for g in tr.blocks[0].groups] == [1.0, 1.0]
    s = str(tr)
    assert "is added late with its own rounding" in s
    assert "final rounding RNE to fp32 of the late addition 1.0 + c: 1.0000001192092896" in s
    early = wb.custom_model("fp8_e5m2", "fp32", L=32, F=25, rounding="rz", zero_exponent=-133)
    one = [1.0] + [0.0] * 31
    assert wb.explain(one, one, 3 * 2.0 ** -25, m).value == 1 + 2.0 ** -23
    assert wb.explain(one, one, 3 * 2.0 ** -25, early).value == 1.0


def test_group_F_truncates_each_group():
    """group_F = 22: each group's terms keep 22 fractional bits at the group's largest
    exponent, so 2^-23 next to 1 is lost in group 0 (1 + 2^-23 -> 1) while F = 25
    would keep it; group 1 (empty, c = 1) leaves 1."""
    m = wb.custom_model("fp8_e5m2", "fp32", L=8, F=25, interleave=2, group_F=22, rounding="rz",
                        c_position="late", zero_exponent=-133)
    a = [1.0, 2.0 ** -12] + [0.0] * 6
    b = [1.0, 2.0 ** -11] + [0.0] * 6
    tr = wb.explain(a, b, 0.0, m)
    g0 = tr.blocks[0].groups[0]
    assert g0.F == 22 and [t.lost for t in g0.terms if t.label == "a1*b1"] == [2.0 ** -23]
    assert tr.value == 1.0 == _gemm_one(m, a, b, 0.0)
    assert wb.explain(a, b, 0.0, m.with_params(group_F=None)).value == 1 + 2.0 ** -23


FTZ = [r for r in catalogue.records() if r.kind == "ftz-addmul"]


@pytest.mark.parametrize("m", FTZ, ids=lambda m: m.name)
def test_ftz_addmul_trace_value_is_the_kernel_value(m):
    _check_random(m)


def test_ftz_addmul_pairwise_order_by_hand():
    """Xie et al. Algorithm 2 with four products 2^-25 and c = 1 (bf16 in, fp32 out).
    P = 4 ("_1k"): s = FTZ-Add(2^-25, 2^-25) = 2^-24, s' = 2^-24, s = 2^-23 and
    d = RNE-FP32(1 + 2^-23) = 1 + 2^-23.  P = 2: each pair gives 2^-24 and
    RNE-FP32(1 + 2^-24) is a tie that rounds to the even 1, twice: d = 1."""
    a = [2.0 ** -25] * 4
    b = [1.0] * 4
    p4 = wb.preset("MI250X", "bf16", "fp32", variant="1k")
    tr = wb.explain(a, b, 1.0, p4)
    assert tr.value == 1 + 2.0 ** -23 and len(tr.blocks) == 1
    s = str(tr)
    assert "s' = FTZ-Add(p2, p3) = FTZ-Add(2.9802322387695312e-08, 2.9802322387695312e-08) = " in s
    assert "s = FTZ-Add(s, s')" in s and "final rounding d = FTZ-Add(c, s) = FTZ-Add(1.0, 1.1920928955078125e-07)" in s
    p2 = wb.preset("MI250X", "bf16", "fp32")
    tr = wb.explain(a, b, 1.0, p2)
    assert tr.value == 1.0 and len(tr.blocks) == 2
    assert "RNE-FP32(1.0000000596046448) = 1.0" in str(tr)


def test_ftz_addmul_flushes_by_hand():
    """Output flush: 2^-63 * 2^-64 = 2^-127 is subnormal in fp32, so FTZ-Mul gives 0
    and d = c = 2^-126 (an IEEE product would give 1.5 * 2^-126).  Input flush: the
    fp16 subnormal 2^-15 becomes +0 before the multiplication, so d = c = 1 (not
    1 + 2^-15).  A subnormal c is flushed to +0 (Algorithm 2 line 3)."""
    m = wb.preset("MI250X", "bf16", "fp32")
    tr = wb.explain([2.0 ** -63, 0.0], [2.0 ** -64, 0.0], 2.0 ** -126, m)
    assert tr.value == 2.0 ** -126
    assert "p0 = FTZ-Mul(a0, b0)" in str(tr) and "below 2^-126, flushed to zero keeping its sign" in str(tr)
    m16 = wb.preset("MI250X", "fp16", "fp32")
    tr = wb.explain([2.0 ** -15, 0, 0, 0], [1.0, 0, 0, 0], 1.0, m16)
    assert tr.value == 1.0 and "a0 = 3.0517578125e-05 is subnormal in fp16: flushed to +0" in str(tr)
    tr = wb.explain([1.0, 0, 0, 0], [1.0, 0, 0, 0], 2.0 ** -130, m16)
    assert tr.value == 1.0 and "is subnormal in fp32: flushed to +0" in str(tr)
    assert math.copysign(1, wb.explain([-(2.0 ** -63), 0.0], [2.0 ** -64, 0.0], -0.0, m).value) == 1


SCALED = [r for r in catalogue.records() if r.kind in ("st-fdpa", "gst-fdpa")]


@pytest.mark.parametrize("m", SCALED, ids=lambda m: m.name)
def test_scaled_trace_value_is_the_kernel_value(m):
    _check_random(m, seeds=(1, 2, 3), n=6)


@pytest.mark.parametrize("m", [SCALED[0], SCALED[-1], SCALED[-2]], ids=lambda m: m.name)
def test_scaled_nan_scale_and_2d_scales(m):
    """A NaN scale makes the result NaN as in gemm; gemm's (1, nb) / (nb, 1) scale
    arrays are accepted as they are."""
    rng = np.random.default_rng(7)
    K = m.L + 3
    a, b, c, sa, sb = draw_case(rng, m, K, specials=False)
    sa = sa.copy()
    sa[-1] = np.nan
    d = _gemm_one(m, a, b, c, sa, sb)
    tr = wb.explain(a, b, c, m, scale_a=sa[None, :], scale_b=sb[:, None])
    assert math.isnan(d) and math.isnan(tr.value)
    assert "NaN" in str(tr)


def test_st_fdpa_by_hand():
    """Xie et al. Algorithm 8 (MXFP8 e4m3, L = 32, F = 25, RZ-FP32), with
    alpha = 2^-3 and beta = 2^5: the products 1*1, 2*(-1) and 448*1 carry the scale
    exponent 2, so the terms are 4, -8 and 1792 (e_max = 10) and c = 2^-30 (exponent
    -30): aligned at 2^10 with 25 fractional bits c keeps 2^-15 as its last bit, so
    2^-30 is lost entirely: S = 1788, RZ-FP32 gives 1788.  Without the scale
    (alpha = beta = 1) the top is 448 (2^8) and the sum is 447 + RZ(2^-30) = 447."""
    m = wb.preset("blackwell", "fp8_e4m3", variant="mx")
    a, b = [1.0, 2.0, 448.0], [1.0, -1.0, 1.0]
    tr = wb.explain(a, b, 2.0 ** -30, m, scale_a=[2.0 ** -3], scale_b=[2.0 ** 5])
    assert tr.value == 1788.0 == _gemm_one(m, a, b, 2.0 ** -30, [2.0 ** -3], [2.0 ** 5])
    s = str(tr)
    assert "alpha = 2^-3, beta = 2^5 (E8M0, significand 1): their exponents -3 + 5 = 2 are added" in s
    assert "a2*b2 = 1.75 * 2^10 (scale exponents -3 + 5 included) = 1792" in s
    assert "largest exponent of all terms is 10" in s and "c: 2^-30 -> 0, lost 2^-30" in s
    assert wb.explain(a, b, 2.0 ** -30, m, scale_a=[1.0], scale_b=[1.0]).value == 447.0


def test_gst_fdpa_nvfp4_by_hand():
    """Xie et al. Algorithm 9 (NVFP4: G = k_block = 16, UE4M3 scales, F = 35, RZ-FP32).
    Group 0: p_0 = 3 * 1.5 = 4.5, scales 1 and 1: s_0 = 4.5, e_0 = 0.
    Group 1: p_1 = 0.5 * 1.5 = 0.75, scales 2 (sig 1, exp 1) and 0.125 (sig 1, exp -3):
    s_1 = 0.75, e_1 = -2 (value 0.1875).  Group 2: p_2 = 6 * 1.5 = 9, scales 448 =
    1.75 * 2^8 and 2^-9 (UE4M3 subnormal: sig 0.125 at exp -6): s_2 = 9 * 1.75 * 0.125
    = 1.96875, e_2 = 2 (value 7.875).  Group 3 is zero.  c = 2^-40: e_max = 2, so c
    (below 2^(2-35)) is truncated away; the sum 12.5625 is exact in fp32."""
    m = wb.preset("blackwell", "fp4_e2m1", variant="nvfp4")
    a = [1.0] * 3 + [0.0] * 13 + [0.5] + [0.0] * 15 + [6.0] + [0.0] * 31
    b = [1.5] * 64
    sa, sb = [1.0, 2.0, 448.0, 1.0], [1.0, 0.125, 2.0 ** -9, 1.0]
    tr = wb.explain(a, b, 2.0 ** -40, m, scale_a=sa, scale_b=sb)
    assert tr.value == 12.5625 == _gemm_one(m, a, b, 2.0 ** -40, sa, sb)
    s = str(tr)
    assert "group 2 (elements 32..47): exact fixed-point dot product p_2 = 9" in s
    assert "s_2 = p_2 * SignedSig(alpha) * SignedSig(beta) = 9 * 1.75 * 2^-3 = 1.96875" in s
    assert "e_2 = Exp(alpha) + Exp(beta) = 8 + -6 = 2" in s
    assert "group 1: 0.1875 -> 0.1875, exact" in s and "c: 2^-40 -> 0, lost 2^-40" in s
    assert [t.exponent for t in tr.blocks[0].terms] == [0, -2, 2, -139, -40]


def test_gst_fdpa_mxfp4_groups_share_a_scale():
    """MXFP4 k64: k_block = 32 but G = 16, so groups 0 and 1 share the scales alpha_0,
    beta_0 = 2^3, 2^-1 (E8M0) yet are separate terms: with a_0 = 6, b_0 = 6 (36 *
    2^2 = 144) and a_16 = 0.5, b_16 = 0.5 (0.25 * 2^2 = 1) and c = -144: e_max = 2,
    the sum is 1, RZ-FP32 -> 1."""
    m = wb.preset("blackwell", "fp4_e2m1", variant="mxfp4")
    a = [6.0] + [0.0] * 15 + [0.5] + [0.0] * 15
    b = [6.0] + [0.0] * 15 + [0.5] + [0.0] * 15
    tr = wb.explain(a, b, -144.0, m, scale_a=[8.0], scale_b=[0.5])
    assert tr.value == 1.0 == _gemm_one(m, a, b, -144.0, [8.0], [0.5])
    s = str(tr)
    assert "group 0: 144 -> 144" in s and "group 1: 2^0 -> 2^0" in s
    assert "scale factors alpha = 8.0, beta = 0.5 (e8m0, elements 0..31)" in s
