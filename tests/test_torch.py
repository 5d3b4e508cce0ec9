"""workbench.torch: a PyTorch model's GEMMs on simulated units.

Oracles: :func:`workbench.gemm` called here on operands quantised here (the forward,
dgrad and wgrad products written out by hand), scaling recipes re-implemented here
from their definitions (power-of-two amax scales found by search, OCP MX exponents via
``math.frexp``, DeepSeek's per-chunk dequantisation in numpy float32 arithmetic), and
hand-counted quantisation effects.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="workbench.torch needs PyTorch: pip install torch==2.13.0, then "
                                            "pip install -e '.[torch]'")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import workbench  # noqa: E402
import workbench.torch as wt  # noqa: E402

UNITS = {
    "H100 e4m3/e5m2": (("H100", "fp8_e4m3"), ("H100", "fp8_e5m2")),
    "A100 fp16": (("A100", "fp16"), ("A100", "fp16")),
    "MI250X fp16": (("MI250X", "fp16"), ("MI250X", "fp16")),
    "B200 e4m3 -> fp16": (("B200", "fp8_e4m3", "fp16"), ("B200", "fp8_e5m2", "fp16")),
}
HYP = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.int64)


def assert_bitwise(got: torch.Tensor, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(bits(got.detach().numpy()), bits(expected))


def q(x: np.ndarray, model) -> np.ndarray:
    return workbench.round(x, model.in_fmt)


def training_step(policy, a_np: np.ndarray, b_np: np.ndarray, w_np: np.ndarray):
    """y = a @ b, loss = sum(y * w): grad_y = w exactly."""
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np, requires_grad=True)
    with wt.simulate(policy) as rec:
        y = a @ b
        (y * torch.tensor(w_np)).sum().backward()
    return y, a.grad, b.grad, rec


@HYP
@given(unit=st.sampled_from(sorted(UNITS)), m=st.integers(1, 5), k=st.integers(1, 70), n=st.integers(1, 6),
       seed=st.integers(0, 2**16), promote=st.booleans())
def test_forward_dgrad_wgrad_equal_gemm(unit, m, k, n, seed, promote):
    fwd_args, grad_args = UNITS[unit]
    fwd, grad = workbench.preset(*fwd_args), workbench.preset(*grad_args)
    promote = promote and fwd.kind == "t-fdpa"
    acc = {"accumulation": "promote", "promote_every": 2 * fwd.L} if promote else {}
    policy = wt.Policy(forward=fwd, dgrad=grad, wgrad=grad, quantize="rne", **acc)
    rng = np.random.default_rng(seed)
    a, b, w = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n)) * 1e-3
    y, ga, gb, rec = training_step(policy, a, b, w)
    assert_bitwise(y, workbench.gemm(q(a, fwd), q(b, fwd), model=fwd, **acc))
    assert_bitwise(ga, workbench.gemm(q(w, grad), q(b.T, grad), model=grad, **acc))
    assert_bitwise(gb, workbench.gemm(q(a.T, grad), q(w, grad), model=grad, **acc))
    assert [(r.role, r.m, r.k, r.n) for r in rec.records] == [("forward", m, k, n), ("dgrad", m, n, k),
                                                             ("wgrad", k, m, n)]
    assert rec.macs == 3 * m * k * n


def test_preset_policy_takes_representable_operands_unchanged():
    unit = workbench.preset("A100", "fp16")
    rng = np.random.default_rng(1)
    a, b, w = (workbench.round(rng.standard_normal(s), "fp16") for s in ((3, 20), (20, 4), (3, 4)))
    y, ga, gb, rec = training_step(unit, a, b, w)
    assert_bitwise(y, workbench.gemm(a, b, model=unit))
    assert_bitwise(ga, workbench.gemm(w, b.T, model=unit))
    assert_bitwise(gb, workbench.gemm(a.T, w, model=unit))
    assert [r.changed for r in rec.records] == [0, 0, 0]


def test_unrepresentable_operands_are_refused_without_a_quantisation():
    lin = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match=r"not representable in fp8_e4m3.*quantize='rne'"):
        with wt.simulate(workbench.preset("H100", "fp8_e4m3")):
            lin(torch.full((1, 4), 1 / 3))


def test_quantisation_is_recorded():
    # fp16: 1/3 rounds; 1e-6 is subnormal (below 2^-14) and rounds; 1e-9 is below half the
    # smallest subnormal 2^-24 and underflows; 1e5 is above 65504 and overflows to Inf.
    a = np.array([[1.0, 1 / 3, 1e-6, 1e-9, 1e5]])
    b = np.ones((5, 1))
    with wt.simulate(wt.Policy(forward=workbench.preset("A100", "fp16"), quantize="rne")) as rec:
        torch.tensor(a) @ torch.tensor(b)
    (r,) = rec.records
    assert (r.op, r.role, r.elements, r.changed, r.subnormal, r.underflowed, r.overflowed) == \
        ("matmul", "forward", 10, 4, 1, 1, 1)


# ------------------------------------------------------------ scaling recipes
def pow2_exponent(amax: float, fmax: float) -> int:
    """Smallest e with amax / 2^e <= fmax, by search (0 for amax = 0)."""
    if amax == 0:
        return 0
    e = 0
    while amax / 2.0**e > fmax:
        e += 1
    while amax / 2.0 ** (e - 1) <= fmax:
        e -= 1
    return e


@HYP
@given(m=st.integers(1, 4), k=st.integers(1, 40), n=st.integers(1, 4), seed=st.integers(0, 2**16),
       spread=st.sampled_from([1e-6, 1.0, 1e4]))
def test_tensor_scaling_matches_amax_definition(m, k, n, seed, spread):
    unit = workbench.preset("H100", "fp8_e4m3")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)) * spread, rng.standard_normal((k, n))
    ea = pow2_exponent(np.abs(a).max(), 448.0)
    eb = pow2_exponent(np.abs(b).max(), 448.0)
    D = workbench.gemm(q(a / 2.0**ea, unit), q(b / 2.0**eb, unit), model=unit)
    expected = D * np.float32(2.0 ** (ea + eb))
    with wt.simulate(wt.Policy(forward=unit, scaling="tensor", quantize="rne")):
        y = torch.tensor(a) @ torch.tensor(b)
    assert_bitwise(y, expected.astype(np.float32))


def mx_exponent(amax: float) -> int:
    """OCP MX v1.0 Section 6.3 for E4M3 elements (emax_elem = 8): floor(log2 amax) - 8."""
    return 0 if amax == 0 else math.frexp(amax)[1] - 1 - 8


@HYP
@given(m=st.integers(1, 3), k=st.integers(1, 80), n=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_mx_scaling_matches_ocp_definition(m, k, n, seed):
    unit = workbench.preset("B200", "fp8_e4m3", instruction="tcgen05.mma.block_scale", variant="mx")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)) * 10.0 ** rng.integers(-3, 4, (m, k)), rng.standard_normal((k, n))
    nb = -(-k // 32)
    ea = np.array([[mx_exponent(np.abs(a[i, 32 * c:32 * c + 32]).max()) for c in range(nb)] for i in range(m)])
    eb = np.array([[mx_exponent(np.abs(b[32 * c:32 * c + 32, j]).max()) for j in range(n)] for c in range(nb)])
    cols = np.arange(k) // 32
    aq = workbench.round(a / 2.0 ** ea[:, cols], "fp8_e4m3", saturate=True)
    bq = workbench.round(b / 2.0 ** eb[cols, :], "fp8_e4m3", saturate=True)
    expected = workbench.gemm(aq, bq, model=unit, scale_a=2.0**ea, scale_b=2.0**eb)
    with wt.simulate(wt.Policy(forward=unit, scaling="mx", quantize="rne")):
        y = torch.tensor(a) @ torch.tensor(b)
    assert_bitwise(y, expected)


def deepseek_reference(a: np.ndarray, b: np.ndarray, unit, b_is_weight: bool) -> np.ndarray:
    """DeepSeek-V3 Section 3.3.2 written out: 1x128 tiles of a, 128x128 (weight) or 128x1
    tiles of b, one unit GEMM per K-chunk of 128, dequantised and summed in float32."""
    (m, k), n = a.shape, b.shape[1]
    fmax = unit.in_fmt.max
    acc = np.zeros((m, n), dtype=np.float32)
    for c0 in range(0, k, 128):
        ac, bc = a[:, c0:c0 + 128], b[c0:c0 + 128, :]
        ea = np.array([pow2_exponent(np.abs(row).max(), fmax) for row in ac])
        width = 128 if b_is_weight else 1
        eb = np.array([pow2_exponent(np.abs(bc[:, (j // width) * width:(j // width + 1) * width]).max(), fmax)
                       for j in range(n)])
        part = workbench.gemm(q(ac / 2.0 ** ea[:, None], unit), q(bc / 2.0 ** eb[None, :], unit), model=unit)
        scale = (np.float32(2.0) ** ea[:, None].astype(np.float32)) * (np.float32(2.0) ** eb[None, :].astype(
            np.float32))
        acc = (acc + part.astype(np.float32) * scale).astype(np.float32)
    return acc


@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 3), k=st.integers(100, 300), n=st.integers(120, 140), seed=st.integers(0, 2**16))
def test_deepseek_scaling_matches_fine_grained_recipe(m, k, n, seed):
    fwd, grad = workbench.preset("H100", "fp8_e4m3"), workbench.preset("H100", "fp8_e5m2")
    policy = wt.Policy(forward=fwd, dgrad=grad, wgrad=grad, scaling="deepseek", quantize="rne",
                       accumulation="promote", promote_every=128)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)) * 10.0 ** rng.integers(-2, 3, (m, 1))
    b = rng.standard_normal((k, n)) * 10.0 ** rng.integers(-2, 3, (1, n))
    w = rng.standard_normal((m, n)) * 1e-3
    y, ga, gb, _ = training_step(policy, a, b, w)
    assert_bitwise(y, deepseek_reference(a, b, fwd, b_is_weight=True))
    assert_bitwise(ga, deepseek_reference(w, b.T, grad, b_is_weight=True))
    assert_bitwise(gb, deepseek_reference(a.T, w, grad, b_is_weight=False))


def test_deepseek_chunks_equal_gemm_promotion_when_scales_are_one():
    unit = workbench.preset("H100", "fp8_e4m3")
    rng = np.random.default_rng(3)
    a = workbench.round(rng.uniform(0, 1, (4, 300)), "fp8_e4m3")
    a[:, 0] = 448.0  # every tile and block has amax 448: scale 2^0
    b = workbench.round(rng.uniform(0, 1, (300, 5)), "fp8_e4m3")
    b[np.arange(0, 300, 128), :] = 448.0
    with wt.simulate(wt.Policy(forward=unit, scaling="deepseek", quantize="rne", accumulation="promote",
                               promote_every=128)):
        y = torch.tensor(a) @ torch.tensor(b)
    assert_bitwise(y, workbench.gemm(a, b, model=unit, accumulation="promote", promote_every=128))


# ------------------------------------------------------------- the routes
def im2col(x: np.ndarray, kh: int, kw: int, pad: int) -> np.ndarray:
    """(N, C, H, W) -> (N * H_out * W_out, C * kh * kw), stride 1, patches in (C, kh, kw) order."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = h + 2 * pad - kh + 1, w + 2 * pad - kw + 1
    return np.array([xp[i, :, r:r + kh, s:s + kw].reshape(-1) for i in range(n) for r in range(ho)
                     for s in range(wo)])


def test_conv2d_linear_einsum_bmm_routes():
    unit = workbench.preset("A100", "fp16")
    policy = wt.Policy(forward=unit, quantize="rne")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    W = conv.weight.detach().numpy().reshape(4, -1)
    lin = torch.nn.Linear(5, 3)
    z = rng.standard_normal((2, 6, 5)).astype(np.float32)
    u, v = rng.standard_normal((2, 3, 7)), rng.standard_normal((2, 7, 2))
    with wt.simulate(policy) as rec:
        yc = conv(torch.tensor(x))
        yl = lin(torch.tensor(z))
        ye = torch.einsum("bij,bjk->bki", torch.tensor(u), torch.tensor(v))
        yb = torch.bmm(torch.tensor(u), torch.tensor(v))
    P = im2col(x.astype(np.float64), 3, 3, 1)
    D = workbench.gemm(q(P, unit), q(W.T, unit), model=unit).reshape(2, 5, 4, 4).transpose(0, 3, 1, 2)
    assert_bitwise(yc, D + conv.bias.detach().numpy()[None, :, None, None])
    D = workbench.gemm(q(z.reshape(-1, 5), unit), q(lin.weight.detach().numpy().T, unit), model=unit)
    assert_bitwise(yl, D.reshape(2, 6, 3) + lin.bias.detach().numpy())
    per_batch = np.stack([workbench.gemm(q(u[i], unit), q(v[i], unit), model=unit) for i in range(2)])
    assert_bitwise(yb, per_batch)
    assert_bitwise(ye, per_batch.transpose(0, 2, 1))
    assert [r.op for r in rec.records] == ["conv2d", "linear", "einsum", "bmm"]


def test_products_outside_the_block_and_other_ops_are_untouched():
    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    exact_sum = math.fsum(np.maximum(a.numpy(), 0.0).ravel())
    with wt.simulate(wt.Policy(forward=workbench.preset("A100", "fp16"), quantize="rne")) as rec:
        s = torch.relu(a).sum()
    assert rec.records == [] and abs(float(s) - exact_sum) <= 1e-15 * exact_sum   # float64, untouched
    # after the block, torch's matmul is torch's again: float64 products, not the fp16 unit's
    # (independent: numpy's float64 matmul; the simulated unit rounds inputs to fp16 and
    # returns fp32 values, ~1e-3 away)
    after = (a @ b).numpy()
    assert after.dtype == np.float64 and np.allclose(after, a.numpy() @ b.numpy(), rtol=1e-14, atol=1e-14)
    assert not np.allclose(after, workbench.gemm(workbench.round(a.numpy(), "fp16"), workbench.round(b.numpy(), "fp16"),
                                                  model=workbench.preset("A100", "fp16")), rtol=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"scaling": "tensor"}, "quantize='rne'"),
    ({"scaling": "deepseek", "quantize": "rne"}, "promote_every=128"),
    ({"scaling": "mx", "quantize": "rne"}, "block-scaled"),
    ({"accumulation": "promote", "promote_every": 48}, "multiple of the forward unit's block size L=32"),
    ({"promote_every": 128}, "accumulation='promote'"),
    ({"quantize": "sr"}, "deterministic rounding mode"),
    ({"scaling": "amax"}, "expected one of"),
])
def test_policy_rejects_inconsistent_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        wt.Policy(forward=workbench.preset("H100", "fp8_e4m3"), **kwargs)


def test_integer_tensors_and_unrouted_einsums_are_refused():
    policy = wt.Policy(forward=workbench.preset("A100", "fp16"), quantize="rne")
    with wt.simulate(policy), pytest.raises(ValueError, match="float16/bfloat16/float32/float64"):
        torch.ones(2, 2, dtype=torch.int32) @ torch.ones(2, 2, dtype=torch.int32)
    with wt.simulate(policy):       # half tensors run (issue 39): 2 * (1 * 1) in float16
        assert (torch.ones(2, 2, dtype=torch.float16) @ torch.ones(2, 2, dtype=torch.float16)).tolist() == \
            [[2.0, 2.0], [2.0, 2.0]]
    with wt.simulate(policy), pytest.raises(ValueError, match="summed within one operand"):
        torch.einsum("ij,kl->ik", torch.ones(2, 2), torch.ones(2, 2))
