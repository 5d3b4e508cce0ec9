"""``workbench.torch``: a PyTorch model's matrix products on a simulated matrix unit.

Inside ``with workbench.torch.simulate(policy):`` every two-operand matrix product a
model computes - ``torch.matmul`` / ``@`` / ``mm`` / ``bmm``, ``nn.functional.linear``,
``torch.einsum`` with two operands, and ``nn.functional.conv2d`` (through ``unfold``) -
runs through :func:`workbench.gemm` on a preset, in the forward pass and in both GEMMs
of the backward pass, each with its own unit:

* forward  ``y = a @ b``
* dgrad    ``grad_a = g @ b^T`` (the gradient of the first operand: the activations'
  gradient of ``linear``/``conv2d``, whose weight is the second operand)
* wgrad    ``grad_b = a^T @ g`` (the gradient of the second operand: the weights')

Xie et al. (2025, MMA-Sim, Section 2.2) motivate bit-accurate models with two training
incidents this module reproduces on a network: DeepSeek-V3's fp8 GEMMs on Hopper
(summation kept to ~14 bits, fixed by promoting partial sums to fp32 every
N_C = 128 elements; DeepSeek-V3 report Section 3.3.2) and fp16 training on AMD CDNA2,
whose matrix cores flush fp16 subnormals (PyTorch's numerical-accuracy notes; the
workaround is bf16).

Quantisation is explicit: without ``Policy(quantize=...)`` every operand must already be
representable in the unit's input format (a ValueError names the first value that is
not); with it, operands are rounded in that mode and the rounding is recorded
(:class:`GemmRecord`).  Scaling recipes (``Policy.scaling``):

``"none"``
    operands are quantised (or checked) as they are.
``"tensor"``
    per-tensor amax scaling: ``x / s`` with ``s = 2**ceil(log2(amax / fmt.max))``, the
    smallest power of two that brings the largest magnitude within the format; the
    unit's output is multiplied by ``s_a * s_b`` (exact: powers of two).
``"deepseek"``
    DeepSeek-V3 Section 3.3.2 fine-grained quantisation: a power-of-two scale per 1x128
    tile of A (per row and per 128 elements of K) and per 128x128 block of B when B is
    a weight (forward and dgrad), per 128x1 tile when B is an activation gradient
    (wgrad).  The product is one :func:`workbench.gemm` call with the scale factors
    applied at promotion: each K-chunk of 128 is chained on the unit from zero, its
    result multiplied by ``s_a * s_b`` and added to an fp32 accumulator with
    round-to-nearest on ordinary cores - DeepSeek's promotion every N_C = 128 with the
    dequantisation folded in, so this recipe needs
    ``accumulation="promote", promote_every=128``.  DeepSeek derive the scale from the
    amax directly; a power of two keeps dequantisation exact.
``"mx"``
    OCP Microscaling v1.0 (Section 6.3): per 32 elements of K an E8M0 scale
    ``2**(floor(log2(amax)) - emax_elem)``, elements ``x / scale`` rounded with
    saturation; the scales go to a block-scaled preset (``variant="mx"``), which
    applies them inside the unit (Xie et al. Algorithm 8).

Block-scaled training recipes (``Policy.recipe``; :mod:`workbench.numbers.blockscale`): NVFP4
(two-level scales: a float32 per tensor and a UE4M3 per 16 elements, 1x16 blocks for
activations and gradients, 16x16 for weights) and MXFP8/MXFP6/MXFP4 (OCP MX v1.0, an
E8M0 scale per 32 elements under a named scale rule), chosen per role (a
:class:`~workbench.numbers.blockscale.Recipe` for all three, or a mapping role -> recipe or None)
and per layer (``keep_first``/``keep_last`` linear/conv2d layers, or the modules named in
``keep``, run on ``high``, a bf16 unit, as do products outside such layers: attention's
matmuls).  Each quantised GEMM runs on a block-scaled preset (``tcgen05.mma.block_scale``:
ST-FDPA for MX, GST-FDPA for NVFP4, Xie et al. 2025 Algorithms 8-9) with the scales the
recipe computed; NVFP4's two tensor scales multiply the unit's result as the GEMM's fp32
alpha.  Gradients (dgrad's A, wgrad's B) may be rounded stochastically with the
session's seeded generator, and both wgrad operands transformed along K by a random
Hadamard matrix first (NVIDIA, "Pretraining LLMs with NVFP4", 2025, Section 4).  Layers
are known by name when :func:`simulate` is given the model.

Accumulation (``Policy.accumulation``) is :func:`workbench.gemm`'s: ``"chain"``,
``"outside"`` or ``"promote"`` with ``promote_every`` (a multiple of the unit's L).

Tensors may be float16, bfloat16, float32 or float64: their values are exact in
float64, and the policy's quantisation still decides what the unit sees.  The unit's
outputs (fp32 or fp16 values) come back exactly in a float32/float64 tensor and, for a
float16/bfloat16 module, rounded once to nearest even into its dtype, as a GEMM writing
a 16-bit D does; biases of ``linear``/``conv2d`` are added by PyTorch in that dtype,
outside the unit.  The backward GEMMs use the policy and
recorder that were active when the forward product ran.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, cast

import numpy as np

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("workbench.torch needs PyTorch (CPU build): pip install torch==2.13.0, "
                      "or pip install -e '.[torch]' after it") from exc

from ..numbers import formats as _formats
from ..numbers.blockscale import (
    MX_SCALE_RULES,
    Recipe,
    block_amax,
    expand_blocks,
    fl32,
    mxfp4,
    mxfp6,
    mxfp8,
    nvfp4,
    random_hadamard,
    scale_exponents,
)
from ..units.catalogue import preset as _preset
from ..units import schedules as _schedules
from .. import units as _units
from ..engine import core as _core
from ..engine import gpu as _gpu
from ..engine.model import Model
from ..matmul.product import gemm as _gemm

__all__ = ["Policy", "GemmRecord", "Recorder", "simulate", "SCALINGS", "ROLES", "scale_exponents", "Recipe",
           "nvfp4", "mxfp8", "mxfp6", "mxfp4", "MX_SCALE_RULES", "recipe_unit"]

#: The three GEMMs of a product's training step.
ROLES = ("forward", "dgrad", "wgrad")
#: Scaling recipes of :class:`Policy` (see the module docstring).
SCALINGS = ("none", "tensor", "deepseek", "mx")
#: DeepSeek-V3's tile/block edge and promotion interval N_C (Section 3.3.2).
DEEPSEEK_BLOCK = 128


@dataclass(frozen=True)
class Policy:
    """Which unit computes each GEMM of a product and how its operands get there.

    Parameters
    ----------
    forward, dgrad, wgrad:
        Presets (or :class:`~workbench.engine.Model`, or any unit name of
        :func:`workbench.units.resolve`: ``"H100:fp8:fp32"``, ``"hopper/wgmma/fp16->fp32"``,
        a unit file) for the forward product and the two backward products; ``dgrad`` defaults to ``forward`` and ``wgrad`` to
        ``dgrad``.  Each fixes its GEMM's input and output formats (e.g. e4m3 forward,
        e5m2 gradients: ``preset("H100", "fp8_e4m3")`` / ``preset("H100", "fp8_e5m2")``).
    scaling:
        One of :data:`SCALINGS`.
    accumulation, promote_every:
        As in :func:`workbench.gemm`.
    schedule:
        A library's schedule over the units (:class:`workbench.units.schedules.Schedule` or
        the name of one in :data:`workbench.units.schedules.SCHEDULES`), as in
        :func:`workbench.gemm`; instead of ``accumulation``/``promote_every``.  Not
        with ``scaling="deepseek"``, which is its own schedule (promotion every 128).
    quantize:
        Rounding mode (a key of :data:`workbench.ROUNDING_MODES` except ``"sr"``) that
        converts operands to each unit's input format, or None: operands must be
        representable already.  Every scaling but ``"none"`` needs one.
    device:
        Where the units' arithmetic runs, as in :func:`workbench.gemm`: ``"cpu"``
        (default) or ``"cuda"`` (the same bits on an NVIDIA GPU).  Not the simulated
        unit, which is ``forward``/``dgrad``/``wgrad``.
    recipe:
        A block-scaled :class:`~workbench.numbers.blockscale.Recipe` (:func:`nvfp4`,
        :func:`mxfp8`, ...) for the three GEMMs of every linear/conv2d layer, or a
        mapping role -> recipe or None (None: that role runs on ``high``).  Each
        quantised role's unit must be a block-scaled preset of the recipe's element
        and scale formats and block (:func:`recipe_unit`; ``Policy.for_recipe`` builds the
        policy).  Needs ``scaling="none"``, ``quantize=None``.
    high:
        The unit of what the recipe leaves out (kept layers, roles mapped to None,
        products outside linear/conv2d layers), operands rounded to its input format
        to nearest even: bf16 in the recipes' papers.  Required with a recipe.
    keep_first, keep_last, keep:
        Linear/conv2d layers run on ``high``: the first and last N of the model's (in
        ``named_modules`` order) and those named in ``keep`` (a module's name keeps
        every layer under it).  Need ``simulate(policy, model=...)``.
    seed:
        Seed of the generator of stochastic rounding (:func:`simulate` takes another).
    """

    forward: Model
    dgrad: Model | None = None
    wgrad: Model | None = None
    scaling: str = "none"
    accumulation: str = "chain"
    promote_every: int | None = None
    quantize: str | None = None
    schedule: _schedules.Schedule | str | None = None
    device: str = "cpu"
    recipe: Recipe | Mapping[str, Recipe | None] | None = None
    high: Model | None = None
    keep_first: int = 0
    keep_last: int = 0
    keep: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        _gpu.check_device(self.device)
        for role in (*ROLES, "high"):     # every spelling of a unit (workbench.units.resolve) -> its Model
            unit = getattr(self, role)
            if unit is not None and not isinstance(unit, Model) and isinstance(unit, (str, os.PathLike)):
                object.__setattr__(self, role, _units.resolve(unit, what=role))
        if self.recipe is not None:
            self._check_recipe()
            return
        if self.high is not None or self.keep_first or self.keep_last or self.keep:
            raise ValueError("high, keep_first, keep_last and keep choose what a recipe leaves out: they need "
                             "Policy(recipe=...)")
        for role in ROLES:
            unit = getattr(self, role)
            if unit is not None and not isinstance(unit, Model):
                raise TypeError(f"{role}={unit!r}: expected a workbench preset or Model (workbench.preset(...))")
        if self.forward is None:
            raise TypeError("forward: a workbench preset or Model is required")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling={self.scaling!r}: expected one of {SCALINGS}")
        if self.accumulation not in _core.ACCUMULATIONS:
            raise ValueError(f"accumulation={self.accumulation!r}: expected one of {_core.ACCUMULATIONS}")
        if (self.accumulation == "promote") != (self.promote_every is not None):
            raise ValueError(f"promote_every={self.promote_every!r} goes with accumulation='promote' and only "
                             f"with it (accumulation={self.accumulation!r})")
        if self.schedule is not None:
            self._check_schedule()
            if self.scaling == "deepseek":
                raise ValueError("scaling='deepseek' runs its own schedule (promotion every 128): leave schedule out")
        if self.quantize is not None and (self.quantize not in _formats.ROUNDING_MODES or self.quantize == "sr"):
            raise ValueError(f"quantize={self.quantize!r}: expected None or a deterministic rounding mode of "
                             f"{[m for m in _formats.ROUNDING_MODES if m != 'sr']}")
        if self.scaling != "none" and self.quantize is None:
            raise ValueError(f"scaling={self.scaling!r} rescales the operands, which then need rounding: name "
                             f"it, e.g. quantize='rne'")
        if self.scaling == "deepseek" and (self.accumulation, self.promote_every) != ("promote", DEEPSEEK_BLOCK):
            raise ValueError("scaling='deepseek' dequantises every K-chunk of 128 in fp32 outside the unit, which "
                             f"is promotion every 128: use accumulation='promote', promote_every={DEEPSEEK_BLOCK}")
        for role in ROLES:
            unit = self.unit(role)
            scaled = unit.scale_format is not None
            if scaled != (self.scaling == "mx"):
                raise ValueError(f"{role} unit {_unit_name(unit)} {'takes' if scaled else 'takes no'} block scale "
                                 f"factors; scaling={self.scaling!r} needs "
                                 f"{'a block-scaled (mx) preset' if self.scaling == 'mx' else 'an unscaled one'}")
            if self.promote_every is not None and self.promote_every % unit.L:
                raise ValueError(f"promote_every={self.promote_every} is not a multiple of the {role} unit's "
                                 f"block size L={unit.L}")

    def _check_schedule(self) -> None:
        """A schedule given by name becomes the :class:`workbench.units.schedules.Schedule`; it replaces
        ``accumulation``/``promote_every``, so those keep their defaults."""
        if (self.accumulation, self.promote_every) != ("chain", None):
            raise ValueError(f"schedule={self.schedule!r} says how each part is accumulated: give it or "
                             f"accumulation={self.accumulation!r}/promote_every={self.promote_every!r}, not both")
        if isinstance(self.schedule, str):
            object.__setattr__(self, "schedule", _schedules.get(self.schedule))
        elif not isinstance(self.schedule, _schedules.Schedule):
            raise TypeError(f"schedule={self.schedule!r}: expected a workbench.units.schedules.Schedule or a name")

    def _check_recipe(self) -> None:
        recipes: dict[str, Recipe | None]
        if isinstance(self.recipe, Recipe):
            recipes = dict.fromkeys(ROLES, self.recipe)
        elif isinstance(self.recipe, Mapping):
            bad = [k for k in self.recipe if k not in ROLES]
            if bad:
                raise ValueError(f"recipe: roles {bad} are not roles of {ROLES}")
            recipes = {role: self.recipe.get(role) for role in ROLES}
            for role, r in recipes.items():
                if r is not None and not isinstance(r, Recipe):
                    raise TypeError(f"recipe[{role!r}]={r!r}: expected a workbench.torch.Recipe or None")
        else:
            raise TypeError(f"recipe={self.recipe!r}: expected a Recipe or a mapping role -> Recipe or None")
        object.__setattr__(self, "recipe", recipes)
        if self.schedule is not None:
            self._check_schedule()
        if self.scaling != "none" or self.quantize is not None:
            raise ValueError(f"recipe: the recipe scales and rounds the operands itself; leave scaling='none' "
                             f"and quantize=None (got scaling={self.scaling!r}, quantize={self.quantize!r})")
        if self.accumulation not in _core.ACCUMULATIONS:
            raise ValueError(f"accumulation={self.accumulation!r}: expected one of {_core.ACCUMULATIONS}")
        if (self.accumulation == "promote") != (self.promote_every is not None):
            raise ValueError(f"promote_every={self.promote_every!r} goes with accumulation='promote' and only "
                             f"with it (accumulation={self.accumulation!r})")
        if not isinstance(self.high, Model):
            raise TypeError(f"high={self.high!r}: a recipe needs the unit of what it leaves out (layers kept, "
                            f"attention's products), e.g. high=workbench.preset('B200', 'bf16')")
        if self.high.scale_format is not None:
            raise ValueError(f"high unit {_unit_name(self.high)} takes block scale factors; expected an unscaled "
                             "unit such as workbench.preset('B200', 'bf16')")
        for name in ("keep_first", "keep_last"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}={v!r}: expected a count of layers >= 0")
        if isinstance(self.keep, str) or not all(isinstance(k, str) for k in self.keep):
            raise TypeError(f"keep={self.keep!r}: expected a tuple of module names")
        object.__setattr__(self, "keep", tuple(self.keep))
        for role in ROLES:
            unit = getattr(self, role)
            if unit is not None and not isinstance(unit, Model):
                raise TypeError(f"{role}={unit!r}: expected a workbench preset or Model (workbench.preset(...))")
            r = recipes[role]
            if r is not None:
                why = _recipe_mismatch(self.unit(role), r)
                if why:
                    raise ValueError(f"{role} GEMMs (every layer the recipe quantises): unit "
                                     f"{_unit_name(self.unit(role))} cannot run recipe {r.name}: {why}; expected "
                                     f"a block-scaled unit with {r.scale_format} scales per {r.block} {r.element} "
                                     f"elements, e.g. workbench.torch.recipe_unit({r.name.split('+')[0]!r}...): "
                                     f"{_unit_name(recipe_unit(r))}")
                if self.promote_every is not None and self.promote_every % self.unit(role).L:
                    raise ValueError(f"promote_every={self.promote_every} is not a multiple of the {role} unit's "
                                     f"block size L={self.unit(role).L}")

    @classmethod
    def for_recipe(cls, recipe: Recipe | Mapping[str, Recipe | None], device: str = "B200", high: str = "bf16",
                   **options: object) -> Policy:
        """The policy running ``recipe`` (one for all roles, or role -> recipe or None) on
        ``device``'s block-scaled presets (:func:`recipe_unit`), the rest on its
        ``high``-format preset; ``options`` are the other :class:`Policy` fields."""
        per_role = dict.fromkeys(ROLES, recipe) if isinstance(recipe, Recipe) else dict(recipe)
        high_unit = _preset(device, high)
        units = {role: recipe_unit(r, device) if r is not None else high_unit for role, r in per_role.items()}
        return cls(forward=units.get("forward", high_unit), dgrad=units.get("dgrad"), wgrad=units.get("wgrad"),
                   recipe=recipe, high=high_unit, **options)  # type: ignore[arg-type]

    def recipe_for(self, role: str) -> Recipe | None:
        """The recipe of a role's GEMMs in the layers it quantises (None: ``high``)."""
        if self.recipe is None:
            return None
        return cast("Mapping[str, Recipe | None]", self.recipe)[role]
    def accumulation_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`workbench.gemm` that say how the units accumulate."""
        if self.schedule is not None:
            return {"schedule": self.schedule}
        return {"accumulation": self.accumulation, "promote_every": self.promote_every}

    def unit(self, role: str) -> Model:
        """The unit of a role (``"forward"``, ``"dgrad"``, ``"wgrad"``)."""
        if role not in ROLES:
            raise ValueError(f"role={role!r}: expected one of {ROLES}")
        if role == "forward":
            return self.forward
        if role == "dgrad":
            return self.dgrad or self.forward
        return self.wgrad or self.dgrad or self.forward

    def __repr__(self) -> str:
        """One short line: the fields that differ from their defaults (``dgrad``/``wgrad``
        where they differ from the unit they default to), each unit by its catalogue name
        (``Model(...)`` with its parameters when it has none), schedules and recipes by name."""
        def short(value: object) -> str:
            if isinstance(value, Model):
                name = getattr(value, "name", "")
                return repr(name) if name else f"Model({value.describe()})"
            if isinstance(value, (_schedules.Schedule, Recipe)):
                return repr(value.name)
            if isinstance(value, Mapping):
                first = next(iter(value.values()))
                if all(v == first for v in value.values()):     # one recipe (or None) for every role
                    return short(first)
                return "{" + ", ".join(f"{k!r}: {short(v)}" for k, v in value.items()) + "}"
            return repr(value)

        fallback = {"dgrad": self.forward, "wgrad": self.unit("dgrad")}
        shown = []
        for f in fields(self):
            value = self.unit(f.name) if f.name in fallback else getattr(self, f.name)
            default = fallback.get(f.name, f.default)
            if default is MISSING or value != default:
                shown.append(f"{f.name}={short(value)}")
        return f"Policy({', '.join(shown)})"


@dataclass(frozen=True)
class GemmRecord:
    """One simulated GEMM: which product and role, its size, and what quantisation did.

    ``changed``: operand elements (A and B together) that quantisation changed;
    ``underflowed``: nonzero elements quantised to zero; ``subnormal``: elements
    subnormal in the input format after quantisation (a unit with
    ``flush_subnormals`` reads them as zero: MI250X fp16, Xie et al. Algorithm 2);
    ``overflowed``: finite elements quantised to Inf/NaN.  ``seconds``: time in
    :func:`workbench.gemm` (and the fp32 accumulation of ``"deepseek"``).
    Under a recipe: ``layer`` (the module's name when :func:`simulate` has the model),
    ``recipe`` (``Recipe.name``, ``""`` on the
    ``high`` unit) and ``scale_rule``; ``saturated``: finite elements whose scaled
    value exceeded the element format's largest finite value (clamped to it);
    ``scale_min``/``scale_max``: the smallest and largest finite effective scale (block
    scale times NVFP4's tensor scale) of the two operands.
    """

    op: str
    role: str
    unit: str
    batch: int
    m: int
    k: int
    n: int
    elements: int
    changed: int
    underflowed: int
    subnormal: int
    overflowed: int
    seconds: float
    layer: str = ""
    recipe: str = ""
    scale_rule: str = ""
    saturated: int = 0
    scale_min: float = math.nan
    scale_max: float = math.nan

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the GEMM."""
        return self.batch * self.m * self.k * self.n


@dataclass
class Recorder:
    """What :func:`simulate` routed: the policy and one :class:`GemmRecord` per GEMM."""

    policy: Policy
    records: list[GemmRecord] = field(default_factory=list)

    @property
    def macs(self) -> int:
        """Multiply-accumulates simulated so far."""
        return sum(r.macs for r in self.records)

    @property
    def engine_seconds(self) -> float:
        """Seconds spent in the engine so far."""
        return sum(r.seconds for r in self.records)


def _unit_name(unit: Model) -> str:
    return getattr(unit, "name", "") or unit.describe()


def recipe_unit(recipe: Recipe, device: str = "B200") -> Model:
    """The block-scaled preset of ``device`` that runs ``recipe``'s GEMMs: NVFP4 on the
    ``.block_scale.k64`` GST-FDPA instruction (UE4M3 scales per 16), MX on
    ``.block_scale`` ST-FDPA (E8M0 per 32; Xie et al. 2025 Table 5)."""
    return _preset(device, recipe.element, variant="nvfp4" if recipe.scheme == "nvfp4" else "mx")


def _recipe_mismatch(unit: Model, recipe: Recipe) -> str:
    """Why ``unit`` cannot run ``recipe``'s GEMMs ('' if it can)."""
    if unit.scale_format is None:
        return "it takes no block scale factors"
    if unit.scale_format != recipe.scale_format or unit.k_block != recipe.block:
        return f"its scales are {unit.scale_format} per {unit.k_block} elements"
    if unit.in_fmt.name != recipe.element:
        return f"its elements are {unit.in_fmt.name}"
    return ""


@dataclass
class _Tally:
    """What quantisation did to one product's operands (see :class:`GemmRecord`)."""

    changed: int = 0
    underflowed: int = 0
    subnormal: int = 0
    overflowed: int = 0
    saturated: int = 0
    scale_min: float = math.inf
    scale_max: float = -math.inf

    def count(self, scaled: np.ndarray, q: np.ndarray, fmt: _formats.FloatFormat) -> None:
        self.add(_formats.rounding_counts(scaled, q, fmt))

    def add(self, counts: tuple[int, int, int, int, int]) -> None:
        """Add :func:`~workbench.numbers.formats.rounding_counts`' five counts."""
        changed, underflowed, subnormal, overflowed, saturated = counts
        self.changed += changed
        self.underflowed += underflowed
        self.subnormal += subnormal
        self.overflowed += overflowed
        self.saturated += saturated

    def scales(self, s: np.ndarray) -> None:
        s = s[np.isfinite(s) & (s > 0)]
        if s.size:
            self.scale_min = min(self.scale_min, float(s.min()))
            self.scale_max = max(self.scale_max, float(s.max()))


@dataclass(frozen=True)
class _Layer:
    """A linear/conv2d layer as :func:`simulate` found it in the model."""

    name: str
    kept: bool


# -------------------------------------------------------------- the GEMM
class _Session:
    """A policy with its recorder: runs one role's GEMM on numpy operands."""

    def __init__(self, policy: Policy, recorder: Recorder, layers: dict[int, _Layer] | None = None,
                 rng: np.random.Generator | None = None) -> None:
        self.policy = policy
        self.recorder = recorder
        self.layers = layers or {}
        self.rng = rng if rng is not None else np.random.default_rng(policy.seed)

    def layer(self, weight: torch.Tensor) -> _Layer:
        """The layer whose weight this is (unnamed and quantised when unknown)."""
        return self.layers.get(id(weight), _Layer("", False))

    def recipe(self, role: str, op: str, layer: _Layer | None) -> Recipe | None:
        """The recipe of this GEMM: None on the high unit (no recipe, a kept layer or a
        product outside linear/conv2d layers)."""
        if layer is None or layer.kept:
            return None
        return self.policy.recipe_for(role)

    def _high_gemm(self, A: np.ndarray, B: np.ndarray, role: str, op: str, counts: _Tally) -> np.ndarray:
        pol = self.policy
        unit = cast(Model, pol.high)
        fmt = unit.in_fmt
        return _gemm(self._to_unit(A, None, (1, 1), fmt, f"{op} {role} A", counts, "rne"),
                     self._to_unit(B, None, (1, 1), fmt, f"{op} {role} B", counts, "rne"), model=unit,
                     **pol.accumulation_kwargs(), device=pol.device)

    def _recipe_gemm(self, A: np.ndarray, B: np.ndarray, role: str, op: str, counts: _Tally, recipe: Recipe,
                     layer: _Layer) -> np.ndarray:
        """A @ B under ``recipe`` on the role's block-scaled unit (module docstring)."""
        pol = self.policy
        unit = pol.unit(role)
        M, K = A.shape
        N = B.shape[1]
        kb = recipe.block
        if role == "wgrad" and recipe.hadamard:
            n = recipe.hadamard
            if K % n:
                raise ValueError(f"layer {layer.name or '(unnamed)'!r} ({op}) wgrad: K = {K} (the tokens of the "
                                 f"batch) is not a multiple of the Hadamard size {n} of recipe {recipe.name}: the "
                                 f"transform mixes whole groups of {n} along K; use a multiple of {n} tokens")
            H = random_hadamard(n, recipe.hadamard_seed)
            A = fl32((A.reshape(M, K // n, n) @ H).reshape(M, K))
            B = fl32(np.einsum("ij,gic->gjc", H, B.reshape(K // n, n, N)).reshape(K, N))
        sr = recipe.stochastic_rounding
        mode_a = "sr" if sr and role == "dgrad" else "rne"
        mode_b = "sr" if sr and role == "wgrad" else "rne"
        wb = recipe.weight_block if role != "wgrad" else None
        b_block = (wb, wb) if wb else (kb, 1)
        with _core.threads_for(A.size + B.size):
            qa = recipe.quantize(A, (1, kb), mode=mode_a, rng=self.rng if mode_a == "sr" else None)
            qb = recipe.quantize(B, b_block, mode=mode_b, rng=self.rng if mode_b == "sr" else None)
        fmt = unit.in_fmt
        counts.count(qa.scaled, qa.elements, fmt)
        counts.count(qb.scaled, qb.elements, fmt)
        counts.scales(qa.scales * qa.tensor_scale)
        counts.scales(qb.scales * qb.tensor_scale)
        nk = -(-K // kb)
        scale_b = np.repeat(np.repeat(qb.scales, b_block[0] // kb, axis=0)[:nk], b_block[1], axis=1)[:, :N]
        alpha = float(fl32(np.float64(qa.tensor_scale * qb.tensor_scale)))
        return _gemm(qa.elements, qb.elements, model=unit, alpha=alpha, beta=0.0, scale_a=qa.scales,
                     scale_b=scale_b, **pol.accumulation_kwargs(),
                     device=pol.device)

    def _to_unit(self, x: np.ndarray, e: np.ndarray | None, block: tuple[int, int], fmt: _formats.FloatFormat,
                 what: str, counts: _Tally, mode: str | None = None) -> np.ndarray:
        """x / 2**e quantised to (or checked in) ``fmt``, ``e`` one exponent per block of
        ``block`` elements (None: unscaled); counts the quantisation's effects."""
        mode = mode or self.policy.quantize
        if mode is None:
            scaled = x if e is None else np.ldexp(x, -expand_blocks(e, *block, x.shape))
            with _core.threads_for(x.size):
                try:
                    q = _formats.check_representable(scaled, fmt, what)
                except ValueError as err:
                    raise ValueError(f"{err}; or name a quantisation in the policy: "
                                     f"workbench.torch.Policy(..., quantize='rne')") from None
            counts.count(scaled, q, fmt)
            return q
        _, q, tally = _formats.round_counted(x, fmt, mode, exponents=e, block=block,
                                             saturate=self.policy.scaling == "mx")
        counts.add(tally)
        return q

    def gemm(self, A: np.ndarray, B: np.ndarray, role: str, op: str, counts: _Tally,
             layer: _Layer | None = None) -> np.ndarray:
        """The role's unit computing A @ B (float64 (M, K), (K, N)) under the policy."""
        pol = self.policy
        if pol.recipe is not None:
            recipe = self.recipe(role, op, layer)
            if recipe is None:
                return self._high_gemm(A, B, role, op, counts)
            return self._recipe_gemm(A, B, role, op, counts, recipe, cast(_Layer, layer))
        unit = pol.unit(role)
        fmt = unit.in_fmt
        M, K = A.shape
        N = B.shape[1]
        what_a, what_b = f"{op} {role} A", f"{op} {role} B"
        if pol.scaling == "none":
            return _gemm(self._to_unit(A, None, (1, 1), fmt, what_a, counts),
                         self._to_unit(B, None, (1, 1), fmt, what_b, counts),
                         model=unit, **pol.accumulation_kwargs(), device=pol.device)
        if pol.scaling == "tensor":
            ea = scale_exponents(np.max(np.abs(A), initial=0.0), fmt, "tensor")
            eb = scale_exponents(np.max(np.abs(B), initial=0.0), fmt, "tensor")
            D = _gemm(self._to_unit(A, np.reshape(ea, (1, 1)), A.shape, fmt, what_a, counts),
                      self._to_unit(B, np.reshape(eb, (1, 1)), B.shape, fmt, what_b, counts),
                      model=unit, **pol.accumulation_kwargs(), device=pol.device)
            return _formats.round(np.ldexp(D.astype(np.float64), int(ea + eb)), "fp32")
        if pol.scaling == "mx":
            kb = cast(int, unit.k_block)  # an MX unit has a scale block (STFDPAParams)
            ea = scale_exponents(block_amax(A, 1, kb), fmt, "mx")
            eb = scale_exponents(block_amax(B, kb, 1), fmt, "mx")
            Aq = self._to_unit(A, ea, (1, kb), fmt, what_a, counts)
            Bq = self._to_unit(B, eb, (kb, 1), fmt, what_b, counts)
            return _gemm(Aq, Bq, model=unit, **pol.accumulation_kwargs(),
                         scale_a=np.ldexp(1.0, ea), scale_b=np.ldexp(1.0, eb), device=pol.device)
        # DeepSeek-V3: 1x128 tiles of A; 128x128 blocks (weights) or 128x1 tiles of B
        nb = DEEPSEEK_BLOCK
        b_cols = 1 if role == "wgrad" else nb
        ea = scale_exponents(block_amax(A, 1, nb), fmt, "deepseek")            # (M, nK)
        eb = scale_exponents(block_amax(B, nb, b_cols), fmt, "deepseek")       # (nK, ceil(N / b_cols))
        Aq = self._to_unit(A, ea, (1, nb), fmt, what_a, counts)
        Bq = self._to_unit(B, eb, (nb, b_cols), fmt, what_b, counts)
        eb_cols = expand_blocks(eb, 1, b_cols, (eb.shape[0], N))                      # (nK, N)
        # each 128-element chain's fp32 sum scaled by 2**(ea + eb) at promotion, added in fp32
        return _gemm(Aq, Bq, model=unit, accumulation="promote", promote_every=nb, scale_a=np.ldexp(1.0, ea),
                     scale_b=np.ldexp(1.0, eb_cols), device=pol.device)

    def product(self, a: torch.Tensor, b: torch.Tensor, role: str, op: str,
                layer: _Layer | None = None) -> torch.Tensor:
        """Batched ``a @ b`` ((Bt, M, K) @ (Bt, K, N)) on the role's unit, recorded;
        ``layer``: the linear/conv2d layer it belongs to (None: outside layers)."""
        An = a.detach().to(torch.float64).numpy()      # exact for float16/bfloat16/float32 values
        Bn = b.detach().to(torch.float64).numpy()
        batch, M, K = An.shape
        N = Bn.shape[2]
        counts = _Tally()
        t0 = time.perf_counter()
        out = np.empty((batch, M, N))
        for i in range(batch):
            out[i] = self.gemm(An[i], Bn[i], role, op, counts, layer)
        seconds = time.perf_counter() - t0
        recipe = self.recipe(role, op, layer) if self.policy.recipe is not None else None
        unit = self.policy.unit(role) if recipe is not None or self.policy.recipe is None else self.policy.high
        self.recorder.records.append(GemmRecord(
            op=op, role=role, unit=_unit_name(cast(Model, unit)), batch=batch, m=M, k=K, n=N,
            elements=An.size + Bn.size, changed=counts.changed, underflowed=counts.underflowed,
            subnormal=counts.subnormal, overflowed=counts.overflowed, seconds=seconds,
            layer=layer.name if layer is not None else "", recipe=recipe.name if recipe else "",
            scale_rule=recipe.scale_rule if recipe else "", saturated=counts.saturated,
            scale_min=counts.scale_min if counts.scale_min <= counts.scale_max else math.nan,
            scale_max=counts.scale_max if counts.scale_min <= counts.scale_max else math.nan))
        if a.dtype in _HALF_DTYPES:    # the unit's fp32/fp16 D written in the module's dtype: one RNE rounding
            return torch.from_numpy(out).to(a.dtype)
        return torch.from_numpy(out.astype(np.float32 if a.dtype == torch.float32 else np.float64))


class _SimulatedProduct(torch.autograd.Function):
    """(Bt, M, K) @ (Bt, K, N) with all three GEMMs on simulated units."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, session: _Session, op: str,  # noqa: D102
                layer: _Layer | None = None) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.session = session
        ctx.op = op
        ctx.layer = layer
        return session.product(a, b, "forward", op, layer)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None, None]:  # noqa: D102
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        with torch._C.DisableTorchFunction():
            if ctx.needs_input_grad[0]:
                grad_a = ctx.session.product(g, b.transpose(1, 2), "dgrad", ctx.op, ctx.layer)
            if ctx.needs_input_grad[1]:
                grad_b = ctx.session.product(a.transpose(1, 2), g, "wgrad", ctx.op, ctx.layer)
        return grad_a, grad_b, None, None, None


# --------------------------------------------------- torch functions routed
#: 16-bit dtypes whose modules the simulation takes (their values are exact in float64)
_HALF_DTYPES = (torch.float16, torch.bfloat16)
_DTYPES = (torch.float32, torch.float64, *_HALF_DTYPES)


def _check_dtypes(op: str, *tensors: torch.Tensor) -> None:
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: expected tensors, got {type(t).__name__}")
        if t.dtype not in _DTYPES:
            raise ValueError(f"{op}: tensor of dtype {t.dtype}; workbench.torch takes float16/bfloat16/float32/"
                             f"float64 tensors (the policy's units and quantisation decide the formats the unit "
                             f"sees)")
    if len({t.dtype for t in tensors}) > 1:
        raise ValueError(f"{op}: operands of different dtypes {[t.dtype for t in tensors]}")


def _matmul(session: _Session, a: torch.Tensor, b: torch.Tensor, op: str, layer: _Layer | None = None) -> torch.Tensor:
    """torch.matmul semantics (1-D operands, broadcast batch dimensions) on the unit."""
    _check_dtypes(op, a, b)
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError(f"{op}: both operands need at least one dimension, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    squeeze_a, squeeze_b = a.dim() == 1, b.dim() == 1
    a2 = a.unsqueeze(0) if squeeze_a else a
    b2 = b.unsqueeze(-1) if squeeze_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    M, K, N = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    if b2.dim() == 2:  # rows of every batch of a share b: one GEMM (row results do not depend on M)
        lead = a2.shape[:-2]
        out = _SimulatedProduct.apply(a2.reshape(1, -1, K), b2.unsqueeze(0), session, op, layer).reshape(*lead, M, N)
    else:
        batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a3 = a2.expand(*batch, M, K).reshape(-1, M, K)
        b3 = b2.expand(*batch, K, N).reshape(-1, K, N)
        out = _SimulatedProduct.apply(a3, b3, session, op, layer).reshape(*batch, M, N)
    if squeeze_b:
        out = out.squeeze(-1)
    if squeeze_a:
        out = out.squeeze(-2)
    return out


def _linear(session: _Session, input: torch.Tensor, weight: torch.Tensor,  # noqa: A002
            bias: torch.Tensor | None = None, op: str = "linear", layer: _Layer | None = None) -> torch.Tensor:
    y = _matmul(session, input, weight.t(), op, layer or session.layer(weight))
    return y if bias is None else y + bias


def _pair(v: int | tuple[int, ...], name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    if len(v) != 2:
        raise ValueError(f"conv2d: {name}={v!r}: expected an int or a pair")
    return (int(v[0]), int(v[1]))


def _conv2d(session: _Session, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
            stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] | str = 0,
            dilation: int | tuple[int, int] = 1, groups: int = 1) -> torch.Tensor:
    """conv2d as unfold + linear: (N, L, C*kh*kw) @ (C*kh*kw, out) on the unit."""
    x = input
    if groups != 1:
        raise ValueError(f"conv2d: groups={groups} is not routed (only groups=1 unfolds into one GEMM)")
    if padding == "valid":
        padding = 0
    if isinstance(padding, str):
        raise ValueError(f"conv2d: padding={padding!r} is not routed; give the padding as ints")
    if x.dim() != 4:
        raise ValueError(f"conv2d: input of shape {tuple(x.shape)}; expected (N, C, H, W)")
    s, p, d = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    n, _, h, w = x.shape
    out_c, _, kh, kw = weight.shape
    h_out = (h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    w_out = (w + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    cols = F.unfold(x, (kh, kw), dilation=d, padding=p, stride=s)            # (N, C*kh*kw, L)
    y = _linear(session, cols.transpose(1, 2), weight.reshape(out_c, -1), None, "conv2d", session.layer(weight))
    y = y.transpose(1, 2).reshape(n, out_c, h_out, w_out)
    return y if bias is None else y + bias.view(1, -1, 1, 1)


def _einsum(session: _Session, equation: str, *operands: torch.Tensor) -> torch.Tensor:
    """Two-operand einsum as a batched product: batch, free-left, contracted, free-right indices."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) != 2:
        raise ValueError(f"einsum {equation!r}: {len(operands)} operands; workbench.torch routes two")
    a, b = operands
    eq = equation.replace(" ", "")
    if "..." in eq:
        raise ValueError(f"einsum {equation!r}: ellipsis is not routed; name every index")
    lhs, _, out = eq.partition("->")
    sa, sb = lhs.split(",")
    if "->" not in eq:
        out = "".join(sorted(c for c in set(sa + sb) if (sa + sb).count(c) == 1))
    for s, t in ((sa, a), (sb, b)):
        if len(set(s)) != len(s) or len(s) != t.dim():
            raise ValueError(f"einsum {equation!r}: subscripts {s!r} for a tensor of shape {tuple(t.shape)} "
                             f"(repeated indices are not routed)")
    if any(c not in sa + sb for c in out) or len(set(out)) != len(out):
        raise ValueError(f"einsum {equation!r}: output subscripts {out!r} are not a set of input indices")
    lone = [c for c in sa + sb if c not in out and (c not in sa or c not in sb)]
    if lone:
        raise ValueError(f"einsum {equation!r}: indices {lone} are summed within one operand, which is not a "
                         f"product of two operands")
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in out if c in sa and c not in sb]
    right = [c for c in out if c in sb and c not in sa]
    contr = [c for c in sa if c in sb and c not in out]
    size = {**{c: a.shape[sa.index(c)] for c in sa}, **{c: b.shape[sb.index(c)] for c in sb}}
    for c in set(sa) & set(sb):
        if a.shape[sa.index(c)] != b.shape[sb.index(c)]:
            raise ValueError(f"einsum {equation!r}: index {c!r} has sizes {a.shape[sa.index(c)]} and "
                             f"{b.shape[sb.index(c)]}")
    prod = lambda cs: math.prod(size[c] for c in cs)  # noqa: E731
    a3 = a.permute(*[sa.index(c) for c in batch + left + contr]).reshape(prod(batch), prod(left), prod(contr))
    b3 = b.permute(*[sb.index(c) for c in batch + contr + right]).reshape(prod(batch), prod(contr), prod(right))
    _check_dtypes("einsum", a3, b3)
    y = _SimulatedProduct.apply(a3, b3, session, "einsum").reshape(*[size[c] for c in batch + left + right])
    order = batch + left + right
    return y.permute(*[order.index(c) for c in out])


def _mm(session: _Session, input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:  # noqa: A002
    return _checked_dims(session, input, mat2, "mm", 2)


def _bmm(session: _Session, input: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:  # noqa: A002
    return _checked_dims(session, input, mat2, "bmm", 3)


def _checked_dims(session: _Session, a: torch.Tensor, b: torch.Tensor, op: str, dims: int) -> torch.Tensor:
    if a.dim() != dims or b.dim() != dims:
        raise ValueError(f"{op}: expected {dims}-D operands, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return _matmul(session, a, b, op)


def _matmul_route(session: _Session, input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:  # noqa: A002
    return _matmul(session, input, other, "matmul")


def _rmatmul_route(session: _Session, input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:  # noqa: A002
    return _matmul(session, other, input, "matmul")


def _routes() -> dict[Callable, Callable]:
    """torch function -> its simulated version (called with the session first)."""
    return {torch.matmul: _matmul_route, torch.Tensor.matmul: _matmul_route, torch.Tensor.__matmul__: _matmul_route,
            torch.Tensor.__rmatmul__: _rmatmul_route, torch.mm: _mm, torch.Tensor.mm: _mm, torch.bmm: _bmm,
            torch.Tensor.bmm: _bmm, F.linear: _linear, F.conv2d: _conv2d, torch.einsum: _einsum}


class _SimulateMode(TorchFunctionMode):
    def __init__(self, session: _Session) -> None:
        super().__init__()
        self.session = session
        self.routes = _routes()

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        route = self.routes.get(func)
        if route is None:
            return func(*args, **(kwargs or {}))
        return route(self.session, *args, **(kwargs or {}))


def _as_policy(policy: Policy | Model | str) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, (Model, str, os.PathLike)):
        return Policy(forward=_units.resolve(policy, what="policy"))
    raise TypeError(f"policy={policy!r}: expected a workbench.torch.Policy or a preset (workbench.preset(...))")


def _layers(policy: Policy, model: torch.nn.Module | None) -> dict[int, _Layer]:
    """id(weight) -> layer for the model's linear/conv2d modules, kept ones marked."""
    wants = policy.keep_first or policy.keep_last or policy.keep
    if model is None:
        if wants:
            raise ValueError(f"keep_first={policy.keep_first}, keep_last={policy.keep_last}, keep={policy.keep}: "
                             "choosing layers needs the model: workbench.torch.simulate(policy, model=net)")
        return {}
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model={model!r}: expected a torch.nn.Module")
    found = [(name, m) for name, m in model.named_modules()
             if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and isinstance(m.weight, torch.Tensor)]
    names = [n for n, _ in found]
    for k in policy.keep:
        if not any(n == k or n.startswith(k + ".") for n in names):
            raise ValueError(f"keep: no linear/conv2d layer is or lies under a module named {k!r}; the model's "
                             f"layers are {names}")
    count = len(found)
    out = {}
    for i, (name, m) in enumerate(found):
        kept = (i < policy.keep_first or i >= count - policy.keep_last
                or any(name == k or name.startswith(k + ".") for k in policy.keep))
        out[id(m.weight)] = _Layer(name, kept)
    return out


@contextlib.contextmanager
def simulate(policy: Policy | Model | str, model: torch.nn.Module | None = None,
             rng: np.random.Generator | int | None = None) -> Iterator[Recorder]:
    """Route the matrix products inside the block through simulated units.

    ``policy`` is a :class:`Policy` or a unit - a preset, or any name
    :func:`workbench.units.resolve` reads such as ``"H100:bf16:fp32"`` - (the same unit for the forward, dgrad
    and wgrad GEMMs, no quantisation, no scaling, chained accumulation).  Yields the
    :class:`Recorder` that collects one :class:`GemmRecord` per GEMM, including the
    backward GEMMs of products made inside the block.  ``model``: the module whose
    linear/conv2d layers the policy's recipe names (``keep_first``/``keep_last``/
    ``keep``; records carry their names).  ``rng``: the generator (or seed) of
    stochastic rounding; default ``numpy.random.default_rng(policy.seed)``, the same
    draws in every block - pass one generator to every step for fresh ones.
    """
    pol = _as_policy(policy)
    recorder = Recorder(pol)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(pol.seed if rng is None else rng)
    with _SimulateMode(_Session(pol, recorder, _layers(pol, model), gen)):
        yield recorder
