"""Every row of every GPU-measured set, bit for bit.

The expected bits are the GPUs' (Khattak & Mikaitis' MATLAB-tensor-core
model_validation data, BSD-2 licence: tests/data/hw_vectors/LICENCE and README.md):
nothing here is computed by the code under test.  The sets ship with the project as
tests/data/hw_vectors/hw_vectors.tar.xz (the ../shared/hw_vectors tree, xz-compressed),
unpacked once per run into a temporary folder, so a fresh clone tests them.  Each set is checked through the preset the catalogue returns for
that device, input format, output format and instruction, so the test pins the
presets' data as well as the engine.
"""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.engine import dots
from workbench.engine.operations import tfdpa as tfdpa_op

from hw_data import hw_vectors_dir

HW = hw_vectors_dir()

# (device, format, output, instruction used by the harness, C operand)
SETS = []
for dev in ("V100",):
    SETS += [(dev, "fp16", "fp32", None, "c"), (dev, "fp16", "fp16", None, "c16")]
for dev in ("A100", "A2", "Ada", "L40S", "H100", "H200", "B200"):
    SETS += [(dev, "tf32", "fp32", None, "c"), (dev, "bf16", "fp32", None, "c"),
             (dev, "fp16", "fp32", None, "c"), (dev, "fp16", "fp16", None, "c16")]
for dev in ("Ada", "L40S"):
    for f in ("fp8_e4m3", "fp8_e5m2"):
        SETS.append((dev, f, "fp32", None, "c"))
        if dev == "Ada":
            SETS.append((dev, f, "fp16", None, "c16"))
for dev in ("H100", "H200"):
    for f in ("fp8_e4m3", "fp8_e5m2"):
        SETS.append((dev, f, "fp32", "wgmma", "zero"))      # WGMMA harness, C = 0
        SETS.append((dev, f, "fp16", "mma.sync", "c16"))    # mma.sync m16n8k32 .f16
for f in ("fp8_e4m3", "fp8_e5m2"):
    SETS.append(("B200", f, "fp32", "mma.sync", "c"))
    SETS.append(("B200", f, "fp16", "mma.sync", "c16"))


def _load(dev: str, fmt: str, out: str, cmode: str):
    z = np.load(HW / dev / f"{fmt}.npz")
    a = z["a"].view(np.float32).astype(np.float64)
    b = z["b"].view(np.float32).astype(np.float64)
    if cmode == "c":
        c = z["c"].view(np.float32).astype(np.float64)
    elif cmode == "c16":
        c = z["c_fp16_rne"].view(np.float16).astype(np.float64)
    else:
        c = np.zeros(a.shape[0])
    key = "d_fp32" if out == "fp32" else "d_fp16"
    return a, b, c, z[key]


def _available(s):
    dev, fmt, out, _, _ = s
    p = HW / dev / f"{fmt}.npz"
    if not p.exists():
        return False
    with np.load(p) as z:
        return ("d_fp32" if out == "fp32" else "d_fp16") in z.files


def test_every_set_of_the_readme_is_covered():
    on_disk = set()
    for p in HW.glob("*/*.npz"):
        with np.load(p) as z:
            for out in ("fp32", "fp16"):
                if f"d_{out}" in z.files:
                    on_disk.add((p.parent.name, p.stem, out))
    covered = {(d, f, o) for d, f, o, _, _ in SETS}
    assert on_disk == covered
    assert len(on_disk) == 48     # 48 sets x 5000 rows: the README's "240,000 of 240,000"


@pytest.mark.parametrize("dev,fmt,out,instruction,cmode", SETS, ids=[f"{s[0]}-{s[1]}-{s[2]}" for s in SETS])
def test_every_row_bit_exact(dev, fmt, out, instruction, cmode):
    a, b, c, d_bits = _load(dev, fmt, out, cmode)
    assert wb.is_representable(a, fmt).all() and wb.is_representable(b, fmt).all()
    model = wb.preset(dev, fmt, out, instruction=instruction)
    got = dots(model, a, b, c)
    dt = np.float32 if out == "fp32" else np.float16
    got_bits = got.astype(dt).view(d_bits.dtype)
    bad = np.flatnonzero(got_bits != d_bits)
    assert bad.size == 0, (
        f"{dev}/{fmt}->{out} ({model.name}): {bad.size} of {len(d_bits)} rows differ; first row {bad[0]}: "
        f"got {got_bits[bad[0]]:#x}, GPU {d_bits[bad[0]]:#x}"
    )


def test_gemm_matches_rows_through_the_public_api():
    """A few rows through workbench.gemm (checked entry point, dtype and bits)."""
    a, b, c, d_bits = _load("H100", "fp16", "fp32", "c")
    m = wb.preset("H100", "fp16", "fp32")
    for r in range(20):
        D = wb.gemm(a[r:r + 1], b[r:r + 1].T, c[r:r + 1].reshape(1, 1), model=m)
        assert D.dtype == np.float32
        assert D.view(np.uint32)[0, 0] == d_bits[r]


def _rows_through_gemm(model, a: np.ndarray, b: np.ndarray, c: np.ndarray, width: int = 64) -> np.ndarray:
    """Every row r as output (r, r) of a ``width x K x width`` workbench.gemm (A = the
    block's a rows, B = its b rows transposed, C = diag(c)): each row lands in a
    different lane of the lane kernel, next to outputs of unrelated rows."""
    out = []
    for r0 in range(0, a.shape[0], width):
        r1 = min(a.shape[0], r0 + width)
        C = np.diag(c[r0:r1])
        D = wb.gemm(a[r0:r1], b[r0:r1].T, C, model=model)
        out.append(np.diagonal(D).copy())
    return np.concatenate(out)


@pytest.mark.parametrize("dev,fmt,out,instruction,cmode", SETS, ids=[f"{s[0]}-{s[1]}-{s[2]}" for s in SETS])
def test_every_row_bit_exact_through_gemm(dev, fmt, out, instruction, cmode):
    """The same rows through the whole-matrix path (``tfdpa_op.lane_layout`` says which
    models run on the lane kernel; the others on the scalar tile kernel)."""
    a, b, c, d_bits = _load(dev, fmt, out, cmode)
    model = wb.preset(dev, fmt, out, instruction=instruction)
    got_bits = _rows_through_gemm(model, a, b, c).view(d_bits.dtype)
    bad = np.flatnonzero(got_bits != d_bits)
    assert bad.size == 0, (
        f"{dev}/{fmt}->{out} ({model.name}): {bad.size} of {len(d_bits)} rows differ; first row {bad[0]}: "
        f"got {got_bits[bad[0]]:#x}, GPU {d_bits[bad[0]]:#x}"
    )


def test_the_lane_kernel_serves_most_sets():
    """The previous test exercises the lane kernel: every set but the interleaved
    (fp8 mma.sync) and c-late ones runs on it."""
    models = [wb.preset(s[0], s[1], s[2], instruction=s[3]) for s in SETS]
    lanes = [s for s, m in zip(SETS, models) if m.kind in ("t-fdpa", "st-fdpa") and tfdpa_op.lane_layout(m, 64)]
    assert len(lanes) >= len(SETS) - 8, [s for s in SETS if s not in lanes]
