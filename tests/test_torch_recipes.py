"""workbench.torch's block-scaled recipes: GEMMs on the Blackwell block-scaled presets with
torchao's quantisation (an independent implementation), per role and per layer choices,
stochastic rounding, the Hadamard transform, records and bad input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")

import workbench  # noqa: E402
import workbench.torch as wt  # noqa: E402
from workbench.numbers import formats  # noqa: E402


def _net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 8))


def _step(net: torch.nn.Module, policy: wt.Policy, tokens: int = 32, **kw):
    x = torch.randn(tokens, 32, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 8, (tokens,), generator=torch.Generator().manual_seed(2))
    net.zero_grad()
    with wt.simulate(policy, model=net, **kw) as rec:
        torch.nn.functional.cross_entropy(net(x), y).backward()
    return rec, [p.grad.clone() for p in net.parameters()]


@pytest.fixture(scope="module")
def tao():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mx = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor",
                                 reason="torchao is not installed: pip install -e '.[dev]' brings it")
        from torchao.prototype.mx_formats import kernels
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    return mx, kernels, ScaleCalculationMode, nvfp4_quantize, per_tensor_amax_to_scale


def test_mxfp8_linear_forward_is_the_unit_on_torchaos_quantisation(tao):
    mx, _, mode, _, _ = tao
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 64, generator=g) * 3
    w = torch.randn(16, 64, generator=g) / 8
    with wt.simulate(wt.Policy.for_recipe(wt.mxfp8("rceil"))) as rec:
        y = torch.nn.functional.linear(x, w)
    sx, qx = mx.to_mx(x, torch.float8_e4m3fn, 32, mode.RCEIL)
    sw, qw = mx.to_mx(w, torch.float8_e4m3fn, 32, mode.RCEIL)
    e = lambda s: np.ldexp(1.0, s.view(torch.uint8).numpy().astype(np.int64) - 127)  # noqa: E731
    unit = workbench.preset("B200", "fp8_e4m3", variant="mx")
    want = workbench.gemm(qx.float().numpy().astype(np.float64), qw.float().numpy().astype(np.float64).T,
                          model=unit, scale_a=e(sx).reshape(8, 2), scale_b=e(sw).reshape(16, 2).T)
    assert np.array_equal(y.numpy(), want.astype(np.float32))
    (r,) = rec.records
    assert (r.recipe, r.scale_rule, r.unit) == ("mxfp8_e4m3", "rceil", unit.name)


def test_nvfp4_linear_forward_is_the_unit_on_torchaos_quantisation(tao):
    _, kernels, _, nvfp4_quantize, per_tensor = tao
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 64, generator=g)
    w = torch.randn(24, 64, generator=g) / 8
    recipe = wt.Recipe("nvfp4", "fp4_e2m1", "two-level", 16)          # 1x16 weight blocks, as torchao's
    with wt.simulate(wt.Policy.for_recipe(recipe)):
        y = torch.nn.functional.linear(x, w)

    def q(t):
        ts = per_tensor(t.abs().max())
        s, d = nvfp4_quantize(t, 16, ts)
        return float(ts), s.float().numpy().astype(np.float64), \
            kernels.f4_unpacked_to_f32(kernels.unpack_uint4(d)).numpy().astype(np.float64).reshape(t.shape)
    tx, sx, qx = q(x)
    tw, sw, qw = q(w)
    alpha = float(formats.round(tx * tw, "fp32"))                      # the tensor scales: fp32 alpha
    want = workbench.gemm(qx, qw.T, model=workbench.preset("B200", "fp4_e2m1", variant="nvfp4"), alpha=alpha,
                          beta=0.0, scale_a=sx.reshape(8, 4), scale_b=sw.reshape(24, 4).T)
    assert np.array_equal(y.numpy(), want.astype(np.float32))


def test_nvfp4_weight_quantises_alike_in_forward_and_dgrad():
    w = np.random.default_rng(0).standard_normal((40, 48))
    r = wt.nvfp4()
    fwd = r.quantize(w.T, (16, 16))           # B of the forward GEMM: W^T
    dgrad = r.quantize(w, (16, 16))           # B of dgrad: W
    assert np.array_equal(fwd.elements, dgrad.elements.T) and np.array_equal(fwd.scales, dgrad.scales.T)


def test_records_layers_kept_and_attention_on_high():
    net = _net()
    pol = wt.Policy.for_recipe(wt.nvfp4(), keep_first=1, keep=("4",))
    rec, _ = _step(net, pol)
    by = {(r.layer, r.role): r for r in rec.records}
    assert set(by) == {(n, role) for n in ("0", "2", "4") for role in wt.ROLES} - {("0", "dgrad")}
    bf16 = workbench.preset("B200", "bf16").name
    for (layer, role), r in by.items():
        if layer == "2":
            assert (r.recipe, r.scale_rule) == ("nvfp4", "two-level") and "nvfp4" in r.unit
            assert 0 < r.scale_min <= r.scale_max
        else:
            assert (r.recipe, r.unit) == ("", bf16)
    x = torch.randn(2, 4, 16)
    with wt.simulate(wt.Policy.for_recipe(wt.nvfp4())) as rec:
        torch.matmul(x, x.transpose(1, 2))
    assert rec.records[0].unit == bf16 and rec.records[0].recipe == ""


def test_recipe_per_role():
    pol = wt.Policy.for_recipe({"forward": wt.mxfp8(), "dgrad": wt.mxfp8("ceil", "fp8_e5m2"), "wgrad": None})
    rec, _ = _step(_net(), pol)
    got = {(r.role, r.recipe, r.scale_rule) for r in rec.records}
    assert got == {("forward", "mxfp8_e4m3", "floor"), ("dgrad", "mxfp8_e5m2", "ceil"), ("wgrad", "", "")}


def test_stochastic_rounding_is_seeded_and_touches_only_gradients():
    net = _net()
    sr = wt.Policy.for_recipe(wt.nvfp4(stochastic_rounding=True))
    rec_a, ga = _step(net, sr, rng=np.random.default_rng(5))
    _, gb = _step(net, sr, rng=np.random.default_rng(5))
    _, gc = _step(net, sr, rng=np.random.default_rng(6))
    _, gn = _step(net, wt.Policy.for_recipe(wt.nvfp4()))
    assert all(torch.equal(a, b) for a, b in zip(ga, gb))
    assert not all(torch.equal(a, c) for a, c in zip(ga, gc))
    assert not all(torch.equal(a, n) for a, n in zip(ga, gn))
    assert rec_a.records[0].recipe == "nvfp4+sr"
    with wt.simulate(sr, rng=1):
        y1 = torch.nn.functional.linear(torch.ones(2, 32), net[0].weight)
    with wt.simulate(wt.Policy.for_recipe(wt.nvfp4())):
        y2 = torch.nn.functional.linear(torch.ones(2, 32), net[0].weight)
    assert torch.equal(y1, y2)                                  # the forward GEMM rounds to nearest


def test_hadamard_changes_only_wgrad_and_keeps_the_product():
    net = _net()
    rec0, g0 = _step(net, wt.Policy.for_recipe(wt.nvfp4()))
    rec1, g1 = _step(net, wt.Policy.for_recipe(wt.nvfp4(hadamard=16)))
    x = torch.randn(32, 32, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 8, (32,), generator=torch.Generator().manual_seed(2))
    net.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    ref = [p.grad.clone() for p in net.parameters()]
    assert rec1.records[0].recipe == "nvfp4+rht16"
    for r0, r1 in zip(rec0.records, rec1.records):
        same = (r0.changed, r0.saturated, r0.scale_min) == (r1.changed, r1.saturated, r1.scale_min)
        assert same == (r0.role != "wgrad"), r0.role          # only wgrad's operands are transformed
    assert torch.equal(g0[-1], g1[-1])                       # the last bias: no GEMM
    # the transform is orthogonal: wgrad stays an estimate of the same product, as close as
    # without it (NVFP4 through three layers: ~0.3-0.5 relative; a transform left on one
    # operand only gives an unrelated matrix, ~1.4)
    for w0, w1, r in zip(g0[::2], g1[::2], ref[::2]):
        assert not torch.equal(w0, w1)
        e0, e1 = float((w0 - r).norm() / r.norm()), float((w1 - r).norm() / r.norm())
        assert e1 < 0.8 and e1 < 2 * e0


# ----------------------------------------------------------------- bad input
def test_nvfp4_on_hopper_names_the_role_and_unit():
    with pytest.raises(ValueError, match=r"forward GEMMs .*hopper.* cannot run recipe nvfp4: it takes no block scale"):
        wt.Policy(forward=workbench.preset("H100", "fp8_e4m3"), recipe=wt.nvfp4(),
                  high=workbench.preset("H100", "bf16"))
    with pytest.raises(ValueError, match=r"wgrad GEMMs .* cannot run recipe mxfp8_e4m3: its scales are ue4m3 per 16"):
        wt.Policy(forward=workbench.preset("B200", "fp8_e4m3", variant="mx"),
                  wgrad=workbench.preset("B200", "fp4_e2m1", variant="nvfp4"), recipe=wt.mxfp8(),
                  high=workbench.preset("B200", "bf16"))
    with pytest.raises(ValueError, match="its elements are fp8_e4m3"):
        wt.Policy(forward=workbench.preset("B200", "fp8_e4m3", variant="mx"), recipe=wt.mxfp8("floor", "fp8_e5m2"),
                  high=workbench.preset("B200", "bf16"))


def test_hadamard_that_does_not_divide_k_names_layer_and_role():
    with pytest.raises(ValueError, match=r"layer '4' \(linear\) wgrad: K = 20 .* not a multiple of the Hadamard size 16"):
        _step(_net(), wt.Policy.for_recipe(wt.nvfp4(hadamard=16)), tokens=20)


def test_bad_blocks_and_layer_choices():
    with pytest.raises(ValueError, match="weight_block=8 does not divide into scale blocks of 16"):
        wt.Recipe("nvfp4", "fp4_e2m1", "two-level", 16, 8)
    with pytest.raises(ValueError, match="Hadamard size 12 is not a power of two"):
        wt.nvfp4(hadamard=12)
    with pytest.raises(ValueError, match=r"no linear/conv2d layer is or lies under a module named 'head'; .*'0', '2', '4'"):
        _step(_net(), wt.Policy.for_recipe(wt.nvfp4(), keep=("head",)))
    with pytest.raises(ValueError, match="choosing layers needs the model"):
        with wt.simulate(wt.Policy.for_recipe(wt.nvfp4(), keep_last=1)):
            pass
    with pytest.raises(ValueError, match="leave scaling='none' and quantize=None"):
        wt.Policy.for_recipe(wt.nvfp4(), quantize="rne")
    with pytest.raises(ValueError, match="need Policy\\(recipe=...\\)"):
        wt.Policy(forward=workbench.preset("B200", "bf16"), keep_last=1)
    with pytest.raises(ValueError, match=r"recipe: roles \['backward'\]"):
        wt.Policy.for_recipe({"backward": wt.nvfp4()})
