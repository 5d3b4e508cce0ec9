"""Block-scaled quantisation of the 2025-26 training recipes: MX (OCP MX v1.0) and NVFP4.

The quantisers that turn a float32 tensor into the elements and block scale factors the
Blackwell block-scaled matrix instructions take (``tcgen05.mma.block_scale``; Xie et al.
2025 Algorithms 8-9, Table 5), plus the random Hadamard transform of NVIDIA's NVFP4
pretraining recipe.  Pure numpy on the values (float64 arrays holding float32 values);
:mod:`workbench.torch` runs the GEMMs on them.

MX (OCP Microscaling Formats v1.0, Section 6.3)
    ``k`` consecutive elements share one E8M0 scale ``X = 2**e``; each element is
    ``x / X`` rounded to the element format, saturating at its largest finite value.
    The specification computes ``e = floor(log2(amax)) - emax_elem``; libraries round
    the scale up instead, because the floor rule lets up to half of the block's binade
    saturate.  Every rule a user may mean has a name (:data:`MX_SCALE_RULES`):

    ``"floor"``  the specification's rule (torchao ``ScaleCalculationMode.FLOOR``, pychop);
    ``"ceil"``   ``ceil(log2(amax)) - emax_elem`` (torchao ``CEIL``);
    ``"even"``   the floor rule on amax rounded to the element's significand width, ties
                 away from zero (torchao ``EVEN``);
    ``"rceil"``  ``ceil(log2(fl32(amax / max_elem)))``, the smallest scale that needs no
                 saturation, the quotient rounded to fp32 first (cuBLAS, "Computing
                 scaling and conversion factors for FP8 with UE8M0 scales" - the
                 ``cvt.rp.satfinite.ue8m0x2.f32`` conversion; Transformer Engine; torchao
                 ``RCEIL``).

    The exponent is clamped to E8M0's range [-127, 127].  Choices the specification
    leaves open, and what this module does (the tests pin where torchao and pychop
    differ): an all-zero block gets the smallest scale 2**-127 (torchao, pychop); a
    block holding a NaN gets the NaN scale (torchao; pychop ignores the NaN) and elements
    ``x / Inf`` (torchao's; formats without NaN get 0 where x is NaN); a block
    whose amax is Inf gets the largest scale 2**127 and its elements saturate (pychop
    and torchao's RCEIL; torchao's FLOOR/CEIL/EVEN take 2**(128 - emax_elem) from the
    Inf's exponent field); the scale is the exact value of log2 for float32-subnormal
    amax (torchao reads the exponent field as -127) and elements are divided by the
    scale stored (torchao's FLOOR/CEIL/EVEN divide by 2**-126 where they store
    2**-127; its eager RCEIL computes log2 in fp32, which rounds quotients just above a
    power of two down onto it).

NVFP4 (NVIDIA, "Pretraining Large Language Models with NVFP4", 2025; torchao ``nvfp4_quantize``)
    Two-level scaling of fp4_e2m1 elements: a float32 per-tensor scale
    ``s_t = fl32(amax_tensor / (448 * 6))`` and a UE4M3 scale per block of 16,
    ``s_b = e4m3(clamp(fl32(fl32(amax_block / 6) / s_t), 2**-6, 448))``; elements
    ``clamp(fl32(x * fl32(fl32(1 / s_t) / s_b)), -6, 6)`` rounded to fp4_e2m1 - every
    step in float32 as torchao computes it (bit for bit: tests/test_blockscale.py).
    Blocks are 1x16 for activations and gradients and 16x16 for weights, so that a
    weight quantises to the same values in the forward GEMM (as W^T) and in dgrad (as W).
    The product of the two tensor scales is the GEMM's alpha (applied in fp32 after the
    unit).  Choices: the tensor amax is taken over finite elements and a block holding
    a NaN or Inf gets the NaN scale (torchao lets them into the tensor amax, which
    makes every scale NaN); an all-zero tensor gets tensor scale 1 (torchao divides by 0), and so
    does a tensor whose scale underflows float32 (amax below 2688 * 2**-150: its elements are 0);
    zeros stay zeros where ``1 / s_t`` overflows float32 (amax below 2688 * 2**-128; torchao
    multiplies them by Inf).

Stochastic rounding (``mode="sr"`` with a numpy Generator) replaces round-to-nearest-even
of the elements only; the scales are computed as above.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import formats as _formats

__all__ = ["MX_SCALE_RULES", "SCHEMES", "Quantised", "Recipe", "mx_scale_exponents", "scale_exponents", "block_amax",
           "expand_blocks", "fl32", "quantize_mx", "quantize_nvfp4",
           "random_hadamard", "nvfp4", "mxfp8", "mxfp6", "mxfp4", "NVFP4_TENSOR_DIVISOR"]

#: MX scale rules by name (see the module docstring).
MX_SCALE_RULES: dict[str, str] = {
    "floor": "OCP MX v1.0 Section 6.3: 2**(floor(log2(amax)) - emax_elem); torchao FLOOR, pychop",
    "ceil": "2**(ceil(log2(amax)) - emax_elem); torchao CEIL",
    "even": "floor rule on amax rounded to the element's significand width, ties away; torchao EVEN",
    "rceil": "2**ceil(log2(fl32(amax / max_elem))), no saturation; cuBLAS/Transformer Engine, torchao RCEIL",
}
#: Block-scaling schemes: name -> (scale format, elements per scale).
SCHEMES: dict[str, tuple[str, int]] = {"mx": ("e8m0", 32), "nvfp4": ("ue4m3", 16)}
#: NVFP4's per-tensor scale is amax / (448 * 6): the largest UE4M3 scale times the largest fp4 element.
NVFP4_TENSOR_DIVISOR = 448.0 * 6.0
_E8M0_MIN, _E8M0_MAX = -127, 127
_E4M3_TINY = 2.0 ** -6        # torchao's E4M3_EPS: the smallest normal UE4M3 scale


class Quantised(NamedTuple):
    """A block-quantised 2-D operand.

    ``elements``: the element values (representable in the element format), x's shape;
    ``scales``: one block scale per block (E8M0 or UE4M3 values; NaN for a block holding
    a NaN), shape ``(ceil(rows / block_rows), ceil(cols / block_cols))``;
    ``tensor_scale``: NVFP4's float32 per-tensor scale (1.0 for MX);
    ``scaled``: x divided by its scales, what the element rounding received.
    """

    elements: np.ndarray
    scales: np.ndarray
    tensor_scale: float
    scaled: np.ndarray


def fl32(x: np.typing.ArrayLike) -> np.ndarray:
    """Round float64 values to float32 (RNE), NaN and Inf kept: the recipes' fp32 steps."""
    return _formats.round(np.asarray(x, dtype=np.float64), "fp32")


def block_amax(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``max |x|`` over blocks of rows x cols (edge blocks smaller, NaN propagated)."""
    m, n = x.shape
    pm, pn = -(-m // rows) * rows, -(-n // cols) * cols
    padded = np.zeros((pm, pn))
    padded[:m, :n] = np.abs(x)
    return padded.reshape(pm // rows, rows, pn // cols, cols).max(axis=(1, 3))


def expand_blocks(s: np.ndarray, rows: int, cols: int, shape: tuple[int, ...]) -> np.ndarray:
    """One value per block of rows x cols spread over the elements of an array of ``shape``."""
    return np.repeat(np.repeat(s, rows, axis=0), cols, axis=1)[:shape[0], :shape[1]]


def scale_exponents(amax: np.ndarray, fmt: _formats.FloatFormat, recipe: str) -> np.ndarray:
    """Power-of-two exponents e of the scales 2**e for block maxima ``amax``, as the
    PyTorch wrapper's scalings choose them (``workbench.torch.SCALINGS``).

    ``recipe="mx"``: OCP MX v1.0 Section 6.3, ``floor(log2(amax)) - emax`` (0 for an
    all-zero block; :func:`mx_scale_exponents` with ``rule="floor"`` is the same rule with
    the E8M0 range and NaN handling); otherwise (``"tensor"``, ``"deepseek"``) the smallest
    e with ``amax / 2**e <= fmt.max``.
    """
    amax = np.asarray(amax, dtype=np.float64)
    pos = amax > 0
    safe = np.where(pos, amax, 1.0)
    if recipe == "mx":
        e = np.floor(np.log2(safe)) - fmt.emax
    else:
        e = np.ceil(np.log2(safe / fmt.max))
        # log2 of a quotient can land one off at exact powers of two: fix by testing
        e = np.where(np.ldexp(safe, -e.astype(np.int64)) > fmt.max, e + 1, e)
        e = np.where(np.ldexp(safe, -(e - 1).astype(np.int64)) <= fmt.max, e - 1, e)
    return np.where(pos, e, 0).astype(np.int64)


def _check_block(block: tuple[int, int]) -> tuple[int, int]:
    if (len(block) != 2 or any(not isinstance(b, (int, np.integer)) or isinstance(b, bool) or b < 1
                               for b in block)):
        raise ValueError(f"block={block!r}: expected (rows, cols), two positive ints")
    return int(block[0]), int(block[1])


def _check_2d(x: np.typing.ArrayLike) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {arr.shape}")
    return arr


def mx_scale_exponents(amax: np.typing.ArrayLike, element: str | _formats.FloatFormat, rule: str = "floor") -> np.ndarray:
    """Exponents e of the E8M0 scales 2**e for block maxima ``amax`` (float32 values)
    under an MX scale rule (:data:`MX_SCALE_RULES`); float64, NaN for a NaN amax."""
    if rule not in MX_SCALE_RULES:
        raise ValueError(f"rule={rule!r}: expected one of {list(MX_SCALE_RULES)}")
    fmt = _formats.format(element)
    a = np.asarray(amax, dtype=np.float64)
    nan = np.isnan(a)
    inf = np.isinf(a)
    pos = (a > 0) & ~inf
    safe = np.where(pos, a, 1.0)
    mant, ex = np.frexp(safe)                         # safe = mant * 2**ex, mant in [0.5, 1)
    floor_log2 = ex - 1
    if rule == "floor":
        e = floor_log2 - fmt.emax
    elif rule == "ceil":
        e = floor_log2 + (mant != 0.5) - fmt.emax
    elif rule == "even":   # amax rounded to man_bits fraction bits, ties away: carries into the next binade?
        e = floor_log2 + (mant >= 1.0 - 2.0 ** -(fmt.man_bits + 2)) - fmt.emax
    else:
        d = fl32(safe / fmt.max)
        dpos = d > 0
        dm, dex = np.frexp(np.where(dpos, d, 1.0))
        e = np.where(dpos, dex - (dm == 0.5), _E8M0_MIN)
    e = np.clip(np.where(pos, e, _E8M0_MIN), _E8M0_MIN, _E8M0_MAX).astype(np.float64)
    e = np.where(inf, _E8M0_MAX, e)
    return np.where(nan, np.nan, e)


def _round_elements(scaled: np.ndarray, fmt: _formats.FloatFormat, mode: str,
                    rng: np.random.Generator | None) -> np.ndarray:
    """Saturating conversion of scaled values to the element format (NaN kept where the
    format has one; formats without NaN get 0 there: the block's NaN scale carries it)."""
    nan = np.isnan(scaled)
    src = np.where(nan, 0.0, scaled) if fmt.special == "none" else scaled
    q = _formats.round(src, fmt, mode, rng=rng if mode == "sr" else None, saturate=True)
    return q


def _check_mode(mode: str, rng: np.random.Generator | None) -> None:
    if mode not in ("rne", "sr"):
        raise ValueError(f"mode={mode!r}: the recipes round elements with 'rne' or 'sr' (stochastic)")
    if (mode == "sr") != (rng is not None):
        raise ValueError(f"mode={mode!r}: a numpy Generator goes with mode='sr' and only with it")


def quantize_mx(x: np.typing.ArrayLike, element: str = "fp8_e4m3", rule: str = "floor", block: tuple[int, int] = (1, 32),
                *, mode: str = "rne", rng: np.random.Generator | None = None) -> Quantised:
    """MX quantisation (OCP MX v1.0 Section 6.3) of a 2-D array in blocks of ``block``
    (rows, cols; edge blocks smaller) with an E8M0 scale per block under ``rule``."""
    arr = _check_2d(x)
    fmt = _formats.format(element)
    rows, cols = _check_block(block)
    _check_mode(mode, rng)
    e = mx_scale_exponents(block_amax(arr, rows, cols), fmt, rule)
    scales = np.where(np.isnan(e), np.nan, np.ldexp(1.0, np.nan_to_num(e).astype(np.int64)))
    e_full = expand_blocks(e, rows, cols, arr.shape)
    # exact: a power of two within float64's range; a NaN scale's block is x / Inf (NaN where x is NaN
    # or Inf, signed zeros elsewhere: torchao's elements there)
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isnan(e_full), arr / np.inf, np.ldexp(arr, -np.nan_to_num(e_full).astype(np.int64)))
    return Quantised(_round_elements(scaled, fmt, mode, rng), scales, 1.0, scaled)


def quantize_nvfp4(x: np.typing.ArrayLike, block: tuple[int, int] = (1, 16), *, mode: str = "rne",
                   rng: np.random.Generator | None = None, tensor_amax: float | None = None) -> Quantised:
    """NVFP4 two-level quantisation of a 2-D array (module docstring): fp4_e2m1 elements,
    a UE4M3 scale per ``block`` (1x16 activations/gradients, 16x16 weights) under a
    float32 per-tensor scale from ``tensor_amax`` (default: ``max |x|`` over finite x)."""
    arr = _check_2d(x)
    rows, cols = _check_block(block)
    _check_mode(mode, rng)
    if tensor_amax is None:
        finite = arr[np.isfinite(arr)]
        tensor_amax = float(np.max(np.abs(finite), initial=0.0))
    ts = float(fl32(tensor_amax / NVFP4_TENSOR_DIVISOR)) if tensor_amax > 0 else 1.0
    if ts == 0.0:   # amax / 2688 underflows float32 (amax below 2688 * 2**-150): quantised as a zero tensor
        ts = 1.0
    bamax = block_amax(arr, rows, cols)
    special = ~np.isfinite(bamax)
    block_scale = fl32(np.where(special, 0.0, bamax) / 6.0)
    s = _formats.round(np.clip(fl32(block_scale / ts), _E4M3_TINY, 448.0), "fp8_e4m3")
    rcp = fl32(fl32(1.0 / ts) / s)
    with np.errstate(invalid="ignore"):   # 0 * Inf where 1 / s_t overflows float32: zeros stay zeros
        scaled = np.where(arr == 0, arr, fl32(arr * expand_blocks(rcp, rows, cols, arr.shape)))
    elements = _round_elements(np.clip(scaled, -6.0, 6.0), _formats.format("fp4_e2m1"), mode, rng)
    return Quantised(elements, np.where(special, np.nan, s), ts, scaled)


def random_hadamard(n: int, seed: int = 0) -> np.ndarray:
    """The n x n random Hadamard transform ``H_n diag(s) / sqrt(n)`` (Sylvester's H_n,
    signs s drawn with ``numpy.random.default_rng(seed)``); orthogonal, so applying it
    along K to A and its transpose to B leaves A @ B unchanged (NVIDIA NVFP4 recipe,
    Section 4: size 16 on the Wgrad inputs)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or n & (n - 1):
        raise ValueError(f"Hadamard size {n!r} is not a power of two (Sylvester's construction needs 1, 2, 4, 8, 16...)")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=n)
    return h * signs[None, :] / math.sqrt(n)


@dataclass(frozen=True)
class Recipe:
    """A block-scaled training recipe: how a GEMM's operands are quantised.

    Parameters
    ----------
    scheme:
        ``"mx"`` (E8M0 scale per ``block`` elements, :func:`quantize_mx`) or ``"nvfp4"``
        (:func:`quantize_nvfp4`).  See :data:`SCHEMES`.
    element:
        The element format (MX: fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1; NVFP4:
        fp4_e2m1).
    scale_rule:
        MX: a key of :data:`MX_SCALE_RULES`; NVFP4: ``"two-level"``.
    block:
        Elements per scale along K (MX 32, NVFP4 16: the unit's ``k_block``).
    weight_block:
        Square blocks of this edge for weights (a multiple of ``block``), or None for
        ``block`` x 1 blocks along K.  NVFP4: 16.
    stochastic_rounding:
        Round the gradient operands (dgrad's A, wgrad's B) stochastically with the
        session's seeded generator instead of to nearest even.
    hadamard, hadamard_seed:
        Size (a power of two) of the random Hadamard transform applied along K to both
        wgrad operands before quantisation (None: none), and the seed of its signs.
    """

    scheme: str
    element: str
    scale_rule: str
    block: int
    weight_block: int | None = None
    stochastic_rounding: bool = False
    hadamard: int | None = None
    hadamard_seed: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme={self.scheme!r}: expected one of {list(SCHEMES)}")
        fmt = _formats.format(self.element)
        object.__setattr__(self, "element", fmt.name)
        if self.scheme == "nvfp4":
            if fmt.name != "fp4_e2m1" or self.scale_rule != "two-level":
                raise ValueError(f"NVFP4 has fp4_e2m1 elements and the 'two-level' scale rule, got "
                                 f"element={self.element!r}, scale_rule={self.scale_rule!r}")
        elif self.scale_rule not in MX_SCALE_RULES:
            raise ValueError(f"scale_rule={self.scale_rule!r}: MX rules are {list(MX_SCALE_RULES)}")
        elif fmt.name not in ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"):
            raise ValueError(f"element={self.element!r}: MX elements are fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, "
                             "fp4_e2m1 (OCP MX v1.0 Table 1)")
        if isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 1:
            raise ValueError(f"block={self.block!r}: expected a positive int")
        if self.weight_block is not None and (self.weight_block < 1 or self.weight_block % self.block):
            raise ValueError(f"weight_block={self.weight_block} does not divide into scale blocks of {self.block} "
                             f"along K: expected a multiple of block={self.block}")
        if self.hadamard is not None:
            random_hadamard(self.hadamard, self.hadamard_seed)   # checks the size

    @property
    def scale_format(self) -> str:
        """The block scales' format (E8M0 for MX, UE4M3 for NVFP4)."""
        return SCHEMES[self.scheme][0]

    @property
    def name(self) -> str:
        """Short name for records: ``nvfp4``, ``mxfp8_e4m3``, ... with ``+sr``/``+rht16``."""
        base = "nvfp4" if self.scheme == "nvfp4" else "mx" + self.element
        return base + ("+sr" if self.stochastic_rounding else "") + (f"+rht{self.hadamard}" if self.hadamard else "")

    def quantize(self, x: np.typing.ArrayLike, block: tuple[int, int], *, mode: str = "rne",
                 rng: np.random.Generator | None = None) -> Quantised:
        """Quantise a 2-D operand in blocks of ``block`` (rows, cols)."""
        if self.scheme == "nvfp4":
            return quantize_nvfp4(x, block, mode=mode, rng=rng)
        return quantize_mx(x, self.element, self.scale_rule, block, mode=mode, rng=rng)


def nvfp4(*, stochastic_rounding: bool = False, hadamard: int | None = None, hadamard_seed: int = 0) -> Recipe:
    """NVFP4 (two-level scales, 1x16 activation/gradient blocks, 16x16 weight blocks)."""
    return Recipe("nvfp4", "fp4_e2m1", "two-level", 16, 16, stochastic_rounding, hadamard, hadamard_seed)


def mxfp8(rule: str = "floor", element: str = "fp8_e4m3", *, stochastic_rounding: bool = False,
          hadamard: int | None = None, hadamard_seed: int = 0) -> Recipe:
    """MXFP8 (OCP MX v1.0): fp8 elements, an E8M0 scale per 32 along K, scale rule ``rule``."""
    return Recipe("mx", element, rule, 32, None, stochastic_rounding, hadamard, hadamard_seed)


def mxfp6(rule: str = "floor", element: str = "fp6_e2m3", *, stochastic_rounding: bool = False,
          hadamard: int | None = None, hadamard_seed: int = 0) -> Recipe:
    """MXFP6 (OCP MX v1.0): fp6 elements, an E8M0 scale per 32 along K."""
    return Recipe("mx", element, rule, 32, None, stochastic_rounding, hadamard, hadamard_seed)


def mxfp4(rule: str = "floor", *, stochastic_rounding: bool = False, hadamard: int | None = None,
          hadamard_seed: int = 0) -> Recipe:
    """MXFP4 (OCP MX v1.0): fp4_e2m1 elements, an E8M0 scale per 32 along K."""
    return Recipe("mx", "fp4_e2m1", rule, 32, None, stochastic_rounding, hadamard, hadamard_seed)
