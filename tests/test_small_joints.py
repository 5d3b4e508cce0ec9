"""Issue 39, item 6: float16/bfloat16 modules under workbench.torch, discriminate's
exponent range and no-subnormal options with exact printing, and no paths of a
development machine in the repository.  Expected values are worked out by hand."""
from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.discrimination import discriminate_outcome
from workbench.discrimination.outcome import exact_text

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ torch
@pytest.mark.parametrize("dtype_name,tail,want", [
    # H100 bf16 unit (fp32 output, RZ): 1 + 2^-8 + 2^-10 is exact in fp32; into bfloat16
    # (7 fraction bits) it lies above the midpoint 1 + 2^-8 of 1 and 1 + 2^-7: rounds up
    ("bfloat16", [2.0 ** -8, 2.0 ** -10], 1.0 + 2.0 ** -7),
    # fp16 unit: 1 + 2^-11 + 2^-13 into float16 (10 fraction bits): above 1 + 2^-11, rounds up
    ("float16", [2.0 ** -11, 2.0 ** -13], 1.0 + 2.0 ** -10),
])
def test_half_precision_modules_run_on_the_unit(dtype_name, tail, want):
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    from workbench.torch import simulate

    dtype = getattr(torch, dtype_name)
    unit = "H100:bf16:fp32" if dtype_name == "bfloat16" else "H100:fp16:fp32"
    lin = torch.nn.Linear(3, 1, bias=False).to(dtype)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 1.0, 1.0]]))
    x = torch.tensor([[1.0, *tail]], dtype=dtype)
    with simulate(unit) as rec:
        y = lin(x)
    assert y.dtype == dtype and float(y.detach()[0, 0]) == want
    assert len(rec.records) == 1


def test_half_precision_gradients_keep_the_dtype():
    torch = pytest.importorskip("torch", reason="needs PyTorch: pip install torch==2.13.0 && pip install -e '.[torch]'")
    from workbench.torch import simulate

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.bfloat16, requires_grad=True)
    w = torch.tensor([[1.0, 0.5], [0.25, 2.0]], dtype=torch.bfloat16, requires_grad=True)
    with simulate("H100:bf16:fp32"):
        (x @ w).sum().backward()
    assert x.grad is not None and x.grad.dtype == torch.bfloat16
    # d/dx sum(x @ w) = ones @ w^T: row sums of w, exact small values
    assert x.grad.float().tolist() == [[1.5, 2.25], [1.5, 2.25]]


# ------------------------------------------------------------- discriminate
@settings(max_examples=3, deadline=None)
@given(lo=st.integers(-12, -4), width=st.integers(4, 10))
def test_discriminate_keeps_to_the_exponent_range_without_subnormals(lo, width):
    hi = lo + width
    out = discriminate_outcome("H100:fp16:fp32", "MI300X:fp16:fp32", exponent_range=(lo, hi), subnormals=False,
                               budget=40_000)
    if out.result is None:
        return
    r = out.result
    for v in [*r.a, *r.b, r.c]:
        if v != 0:
            e = math.frexp(abs(v))[1] - 1
            assert lo <= e <= hi, (v, lo, hi)
    for v in [*r.a, *r.b]:
        assert v == 0 or abs(v) >= 2.0 ** -14        # fp16's smallest normal: no subnormal inputs
    assert r.c == 0 or abs(r.c) >= 2.0 ** -126


def test_discriminate_options_are_checked():
    with pytest.raises(ValueError, match=r"exponent_range=\(3, 1\)"):
        discriminate_outcome("H100:fp16:fp32", "A100:fp16:fp32", exponent_range=(3, 1))
    with pytest.raises(ValueError, match="SMT back end searches every input"):
        discriminate_outcome("H100:fp16:fp32", "A100:fp16:fp32", exponent_range=(-4, 4), backend="smt")


@pytest.mark.parametrize("v,text", [(2.0 ** -24, "2^-24"), (-1.0, "-2^0"), (0.1875, "0x1.8000000000000p-3"),
                                    (0.0, "0"), (-0.0, "-0"), (1 + 2.0 ** -23, "0x1.0000020000000p+0")])
def test_exact_text_writes_powers_of_two_and_hex_floats(v, text):
    assert exact_text(v) == text
    assert float.fromhex(text.replace("2^", "0x1p")) == v if "^" in text else float.fromhex(text) == v


def test_the_cli_prints_exact_values(capsys):
    from workbench.cli import main

    rc = main(["discriminate", "H100:fp16:fp32", "MI300X:fp16:fp32", "--exponent-range=-8,8", "--no-subnormals",
               "--budget", "40000"])
    text = capsys.readouterr().out
    assert rc == 0, text
    values = [line.split("=", 1)[1].split()[0] for line in text.splitlines() if line.strip().startswith(("a[", "c "))]
    assert values and all(v in ("0", "-0") or "^" in v or v.lstrip("-").startswith("0x") for v in values), text


# ------------------------------------------------------------------ paths
def test_no_development_machine_paths_in_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    bad = ["/" + "home/", "/" + "Users/", "/" + "work/"]
    found = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in (".npz", ".png", ".parquet", ".pdf", ".gz"):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{name}: {b}" for b in bad if b in text]
    assert not found, found
