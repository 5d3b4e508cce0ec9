"""The scale-rounding conformance suite: MX E8M0 scale rules x element formats, NVFP4 two-level.

Block-scale rounding is where deployed libraries disagree (ml_dtypes #298 and PR #398, onnx
PR #7784, ROCm/FlyDSL PR #590, torchao PR #1643).  This module builds blocks at every edge
of the rules of :mod:`workbench.numbers.blockscale` and exports them with the scales and
elements the workbench's quantisers give (OCP MX v1.0 Section 6.3 and its named variants;
NVIDIA's NVFP4 recipe), in the layout of :mod:`~workbench.conformance.layout`.

MX blocks (:func:`mx_blocks`: 32 float32 values each, the same blocks for every rule) come in
groups (:data:`MX_GROUPS`), the block maximum ``amax`` placed at a random position with a
random sign and the other 31 values at most ``amax`` in magnitude:

``random``      magnitudes log-uniform over float32's range;
``pow2``        amax = 2**k, k = -149..127 (float32 subnormal powers included);
``pow2_near``   the float32 neighbours 1 and 2 ulps either side of 2**k;
``elem_max``    amax = max_elem * 2**k and 1..3 ulps either side (where RCEIL's quotient rounds);
``even_edge``   amax = 2**k * (2 - 2**-(m + j)), j = 0..5 (m the element's fraction bits) and
                1 ulp either side: where the EVEN rule's rounding of amax carries into the
                next binade;
``cast_tie``    amax = max_elem * 1.5 * 2**k: the quotient amax / max_elem is a tie of a
                round-to-nearest cast to E8M0 (ml_dtypes #298);
``zero``        all zeros (signs mixed);
``subnormal``   only float32 subnormals;
``nan``         a NaN among finite values;
``inf``         +-Inf (and with a NaN).

NVFP4 cases (:func:`nvfp4_cases`) are blocks of 16 (``1x16``) or 16 x 16 (``16x16``) with the
tensor amax they are quantised under (:data:`NVFP4_GROUPS`): random; block maxima around
powers of two and around the UE4M3 grid of ``amax_block / 6 / s_t``; the block holding the
tensor amax (where ``s_b`` can round above 448 and is clamped: "overflow"); a tensor amax
2**10..2**40 times the block's (``s_b`` below 2**-6, clamped: "underflow"); tensor amax below
2688 * 2**-126 (``1 / s_t`` overflows float32) and below 2688 * 2**-150 (``s_t`` underflows to
0); zero, NaN and Inf blocks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..numbers import blockscale as _bs
from ..numbers import formats as _formats
from . import layout as _layout

__all__ = ["ELEMENTS", "RULES", "MX_GROUPS", "NVFP4_GROUPS", "mx_blocks", "mx_expected", "nvfp4_cases",
           "nvfp4_expected", "export_suite", "check_suite", "e8m0_bits"]

#: MX element formats (OCP MX v1.0 Table 1)
ELEMENTS = ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1")
#: E8M0 scale rules (:data:`workbench.numbers.blockscale.MX_SCALE_RULES`)
RULES = tuple(_bs.MX_SCALE_RULES)
MX_GROUPS = ("random", "pow2", "pow2_near", "elem_max", "even_edge", "cast_tie", "zero", "subnormal", "nan", "inf")
NVFP4_GROUPS = ("random", "pow2", "grid", "tensor_amax", "underflow", "rcp_overflow", "ts_underflow", "zero",
                "nan", "inf")
_F32_MAX = float(np.finfo(np.float32).max)


def _f32(x: Any) -> np.ndarray:
    with np.errstate(over="ignore"):   # beyond float32: Inf, dropped by the callers
        return np.asarray(x, dtype=np.float32).astype(np.float64)


def _ulps(v: np.ndarray, steps: int) -> np.ndarray:
    """float32 neighbours ``steps`` ulps from v (positive v)."""
    out = np.asarray(v, dtype=np.float32)
    toward = np.float32(np.inf) if steps > 0 else np.float32(0)
    for _ in range(abs(steps)):
        out = np.nextafter(out, toward)
    return out.astype(np.float64)


def _fill(rng: np.random.Generator, amax: np.ndarray, width: int) -> np.ndarray:
    """Blocks of ``width`` float32 values with maxima ``amax`` (one per block, at a random
    position, random sign); the others are fractions of amax: random, and the halves and
    eighths where the element rounding ties."""
    n = amax.shape[0]
    frac = rng.random((n, width))
    exact = rng.choice([0.5, 0.75, 0.625, 0.125, 0.1875, 1.0 / 3.0, 0.0], size=(n, width))
    frac = np.where(rng.random((n, width)) < 0.3, exact, frac)
    x = _f32(amax[:, None] * frac)
    x = np.minimum(x, amax[:, None]) * rng.choice([-1.0, 1.0], size=(n, width))
    pos = rng.integers(0, width, size=n)
    x[np.arange(n), pos] = amax * rng.choice([-1.0, 1.0], size=n)
    return x


def _mx_amax(element: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(amax, group index) of the finite non-zero groups of :data:`MX_GROUPS`."""
    fmt = _formats.format(element)
    ks = np.arange(-149, 128)
    parts: list[tuple[str, np.ndarray]] = []
    parts.append(("random", _f32(np.exp2(rng.uniform(-149, 128, size=512)))))
    p2 = np.ldexp(1.0, ks)
    parts.append(("pow2", p2))
    parts.append(("pow2_near", np.concatenate([_ulps(p2, s) for s in (-2, -1, 1, 2)])))
    em = _f32(fmt.max * np.ldexp(1.0, ks))
    em = em[(em > 0) & np.isfinite(em)]
    parts.append(("elem_max", np.concatenate([em] + [_ulps(em, s) for s in (-3, -2, -1, 1, 2, 3)])))
    ee = np.concatenate([_f32(np.ldexp(2.0 - 2.0 ** -(fmt.man_bits + j), ks)) for j in range(6)])
    ee = ee[(ee > 0) & np.isfinite(ee)]
    parts.append(("even_edge", np.concatenate([ee, _ulps(ee, -1), _ulps(ee, 1)])))
    ct = _f32(fmt.max * 1.5 * np.ldexp(1.0, ks))
    parts.append(("cast_tie", ct[(ct > 0) & np.isfinite(ct)]))
    parts.append(("subnormal", _f32(np.ldexp(rng.integers(1, 1 << 23, size=64).astype(np.float64), -149))))
    amax = np.concatenate([p for _, p in parts])
    group = np.concatenate([np.full(p.shape[0], MX_GROUPS.index(g)) for g, p in parts])
    keep = np.isfinite(amax) & (amax > 0) & (amax <= _F32_MAX)
    return amax[keep], group[keep]


def mx_blocks(element: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The suite's MX blocks for ``element``: float32 values (float64 array, n x 32) and each
    block's group (an index into :data:`MX_GROUPS`)."""
    rng = np.random.default_rng([seed, ELEMENTS.index(element)])
    amax, group = _mx_amax(element, rng)
    x = _fill(rng, amax, 32)
    specials = []
    z = np.zeros((4, 32))
    z[1] = -0.0
    z[2, ::2] = -0.0
    specials.append(("zero", z))
    nan = _fill(rng, _f32(np.exp2(rng.uniform(-20, 20, size=8))), 32)
    nan[np.arange(8), rng.integers(0, 32, size=8)] = np.nan
    specials.append(("nan", nan))
    inf = _fill(rng, _f32(np.exp2(rng.uniform(-20, 20, size=8))), 32)
    inf[np.arange(8), rng.integers(0, 32, size=8)] = np.where(np.arange(8) % 2, np.inf, -np.inf)
    inf[7, (np.flatnonzero(~np.isinf(inf[7]))[0])] = np.nan
    specials.append(("inf", inf))
    x = np.concatenate([x] + [s for _, s in specials])
    group = np.concatenate([group] + [np.full(s.shape[0], MX_GROUPS.index(g)) for g, s in specials])
    return x, group


def e8m0_bits(exponents: np.ndarray) -> np.ndarray:
    """E8M0 bit patterns of scale exponents (NaN -> 0xFF)."""
    e = np.asarray(exponents, dtype=np.float64)
    return np.where(np.isnan(e), 255, np.nan_to_num(e) + 127).astype(np.uint8)


def mx_expected(x: np.ndarray, element: str, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The workbench's (E8M0 scale bits (n,), element bits (n, 32)) of the blocks ``x``."""
    q = _bs.quantize_mx(x, element, rule, (1, 32))
    e = np.where(np.isnan(q.scales[:, 0]), np.nan, np.log2(np.where(np.isnan(q.scales[:, 0]), 1.0, q.scales[:, 0])))
    return e8m0_bits(e), _formats.to_bits(q.elements, element)


def _nvfp4_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(blocks, tensor amax, group) of one NVFP4 block shape ((16,) or (16, 16))."""
    width = int(np.prod(shape))
    amaxes: list[tuple[str, np.ndarray, np.ndarray]] = []    # group, block amax, tensor amax
    r = _f32(np.exp2(rng.uniform(-100, 100, size=256)))
    amaxes.append(("random", r, _f32(r * np.exp2(rng.uniform(0, 12, size=256)))))
    ks = np.arange(-120, 127, 3).astype(np.float64)
    p2 = np.concatenate([_ulps(np.ldexp(1.0, ks.astype(int)), s) for s in (-1, 0, 1)])
    amaxes.append(("pow2", p2, _f32(p2 * np.exp2(rng.integers(0, 9, size=p2.size)))))
    # block scale fl32(amax/6)/s_t on and between UE4M3 grid points: amax = 6 * s_t * g
    ta = _f32(np.exp2(rng.uniform(-60, 60, size=64)))
    g = _formats.from_bits(np.arange(1, 127), "ue4m3")
    mids = (g[:-1] + g[1:]) / 2
    grid_vals = np.concatenate([g, mids])
    pick = rng.choice(grid_vals, size=(64, 8))
    ts = _f32(ta / _bs.NVFP4_TENSOR_DIVISOR)
    ba = _f32(6.0 * ts[:, None] * pick).ravel()
    ta_rep = np.repeat(ta, 8)
    ok = (ba > 0) & (ba <= ta_rep)
    amaxes.append(("grid", ba[ok], ta_rep[ok]))
    t = _f32(np.exp2(rng.uniform(-100, 120, size=64)))
    t = np.concatenate([t, _ulps(t, 1), _ulps(t, -1)])
    amaxes.append(("tensor_amax", t, t))
    u = _f32(np.exp2(rng.uniform(-40, 40, size=64)))
    amaxes.append(("underflow", u, _f32(np.minimum(u * np.exp2(rng.integers(10, 41, size=64)), _F32_MAX))))
    ro = _f32(np.exp2(rng.uniform(-139, -116.5, size=32)))
    amaxes.append(("rcp_overflow", ro, ro))
    tu = np.ldexp(rng.integers(1, 1 << 11, size=16).astype(np.float64), -149)
    amaxes.append(("ts_underflow", tu, tu))
    blocks, tens, group = [], [], []
    for gname, bam, tam in amaxes:
        blocks.append(_fill(rng, bam, width))
        tens.append(tam)
        group.append(np.full(bam.size, NVFP4_GROUPS.index(gname)))
    z = np.zeros((2, width))
    z[1, ::3] = -0.0
    blocks.append(z)
    tens.append(np.array([0.0, 1.0]))
    group.append(np.full(2, NVFP4_GROUPS.index("zero")))
    for gname, val in (("nan", np.nan), ("inf", np.inf)):
        b = _fill(rng, np.ones(4), width)
        b[:, 3] = val
        b[1, 4] = -val
        blocks.append(b)
        tens.append(np.full(4, 4.0))
        group.append(np.full(4, NVFP4_GROUPS.index(gname)))
    x = np.concatenate(blocks).reshape((-1, *shape))
    return x, np.concatenate(tens), np.concatenate(group)


def nvfp4_cases(block: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The suite's NVFP4 cases for ``block`` ("1x16" or "16x16"): blocks (n, 16) or (n, 16, 16)
    of float32 values, the tensor amax each is quantised under, and each case's group."""
    if block not in ("1x16", "16x16"):
        raise ValueError(f"block={block!r}: expected '1x16' (activations, gradients) or '16x16' (weights)")
    rng = np.random.default_rng([seed, 100 + (block == "16x16")])
    return _nvfp4_rows(rng, (16,) if block == "1x16" else (16, 16))


def nvfp4_expected(x: np.ndarray, tensor_amax: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The workbench's (tensor scale fp32 bits, UE4M3 block scale bits (NaN -> 0x7F), fp4
    element bits) of each case."""
    n = x.shape[0]
    ts = np.empty(n)
    sb = np.empty(n)
    el = np.empty(x.shape)
    for i in range(n):
        b = x[i].reshape(1, 16) if x.ndim == 2 else x[i]
        q = _bs.quantize_nvfp4(b, (b.shape[0], 16), tensor_amax=float(tensor_amax[i]))
        ts[i], sb[i] = q.tensor_scale, q.scales.ravel()[0]
        el[i] = q.elements.reshape(x.shape[1:])
    return (_formats.to_bits(ts, "fp32"), _formats.to_bits(sb, "ue4m3"), _formats.to_bits(el, "fp4_e2m1"))


def _mx_files(seed: int) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
    files, entries = {}, {}
    for element in ELEMENTS:
        x, group = mx_blocks(element, seed)
        arrays = {"x": _formats.to_bits(x, "fp32"), "group": group.astype(np.uint8)}
        for rule in RULES:
            s, e = mx_expected(x, element, rule)
            arrays[f"scale_{rule}"] = s
            arrays[f"elements_{rule}"] = e
        name = f"mx_{element}.npz"
        files[name] = arrays
        entries[name] = {"scheme": "mx", "element": element, "rules": list(RULES), "block": [1, 32],
                         "rows": int(x.shape[0]),
                         "formats": {"x": "fp32", **{f"scale_{r}": "e8m0" for r in RULES},
                                     **{f"elements_{r}": element for r in RULES}},
                         "groups": list(MX_GROUPS)}
    return files, entries


def _nvfp4_files(seed: int) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
    files, entries = {}, {}
    for block in ("1x16", "16x16"):
        x, ta, group = nvfp4_cases(block, seed)
        ts, sb, el = nvfp4_expected(x, ta)
        name = f"nvfp4_{block}.npz"
        files[name] = {"x": _formats.to_bits(x, "fp32"), "tensor_amax": _formats.to_bits(ta, "fp32"),
                       "group": group.astype(np.uint8), "tensor_scale": ts, "block_scale": sb, "elements": el}
        entries[name] = {"scheme": "nvfp4", "element": "fp4_e2m1", "block": [1, 16] if block == "1x16" else [16, 16],
                         "rows": int(x.shape[0]),
                         "formats": {"x": "fp32", "tensor_amax": "fp32", "tensor_scale": "fp32",
                                     "block_scale": "ue4m3", "elements": "fp4_e2m1"},
                         "groups": list(NVFP4_GROUPS)}
    return files, entries


def export_suite(folder: str | Path, seed: int = 0) -> Path:
    """Write the scale-rounding suite as one set folder (``mx_<element>.npz``,
    ``nvfp4_1x16.npz``, ``nvfp4_16x16.npz`` and ``manifest.json``); the manifest's path."""
    files, entries = _mx_files(seed)
    f2, e2 = _nvfp4_files(seed)
    files.update(f2)
    entries.update(e2)
    fmts = {n: _layout.format_record(n) for n in ("fp32", "e8m0", "ue4m3", *ELEMENTS)}
    manifest = {
        "type": "scales", "workbench": __version__, "seed": seed,
        "unit": {"name": "scale-rounding suite", "source": "workbench.numbers.blockscale: OCP MX v1.0 Section 6.3 "
                 "and the named rules of MX_SCALE_RULES; NVIDIA NVFP4 recipe (two-level scales)",
                 "rules": dict(_bs.MX_SCALE_RULES), "evidence": []},
        "formats": fmts,
        "semantics": "MX: each row of x (float32 bits) is one block of 32; scale_<rule> its E8M0 scale (0xFF: NaN), "
                     "elements_<rule> its elements (x / 2**(scale - 127), rounded to nearest even, saturating). "
                     "NVFP4: each row is one block of 16 (or 16 x 16) quantised under the tensor amax "
                     "tensor_amax: tensor_scale = fl32(tensor_amax / 2688), block_scale in UE4M3 (0x7F: NaN), "
                     "elements in fp4_e2m1.",
    }
    return _layout.write_set(Path(folder), manifest, files, entries)


def check_suite(folder: str | Path, examples: int = 3) -> list[dict[str, Any]]:
    """Re-run a suite set on the workbench's quantisers: one record per file and rule with
    the rows checked, the mismatching rows and the first of them."""
    root = Path(folder)
    man = _layout.read_manifest(root)
    if man.get("type") != "scales":
        raise ValueError(f"{root}: a {man.get('type')!r} set; expected the scale-rounding suite")
    out = []
    for entry in man["files"]:
        arr = _layout.load_file(root, entry)
        x = _formats.from_bits(arr["x"], "fp32")
        if entry["scheme"] == "mx":
            for rule in entry["rules"]:
                s, e = mx_expected(x, entry["element"], rule)
                bad = np.flatnonzero((s != arr[f"scale_{rule}"]) | (e != arr[f"elements_{rule}"]).any(axis=1))
                out.append({"file": entry["file"], "rule": rule, "rows": int(x.shape[0]), "mismatches": int(bad.size),
                            "first": [int(i) for i in bad[:examples]]})
        else:
            ts, sb, el = nvfp4_expected(x, _formats.from_bits(arr["tensor_amax"], "fp32"))
            diff = (ts != arr["tensor_scale"]) | (sb != arr["block_scale"]) | \
                (el != arr["elements"]).reshape(x.shape[0], -1).any(axis=1)
            bad = np.flatnonzero(diff)
            out.append({"file": entry["file"], "rule": "two-level", "rows": int(x.shape[0]),
                        "mismatches": int(bad.size), "first": [int(i) for i in bad[:examples]]})
    return out
