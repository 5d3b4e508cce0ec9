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
    (wgrad).  Each K-chunk of 128 runs as one :func:`workbench.gemm` call (chained on
    the unit from zero); its result is multiplied by ``s_a * s_b`` and added to an fp32
    accumulator with round-to-nearest on ordinary cores - DeepSeek's promotion every
    N_C = 128 with the dequantisation folded in, so this recipe needs
    ``accumulation="promote", promote_every=128``.  DeepSeek derive the scale from the
    amax directly; a power of two keeps dequantisation exact.
``"mx"``
    OCP Microscaling v1.0 (Section 6.3): per 32 elements of K an E8M0 scale
    ``2**(floor(log2(amax)) - emax_elem)``, elements ``x / scale`` rounded with
    saturation; the scales go to a block-scaled preset (``variant="mx"``), which
    applies them inside the unit (Xie et al. Algorithm 8).

Accumulation (``Policy.accumulation``) is :func:`workbench.gemm`'s: ``"chain"``,
``"outside"`` or ``"promote"`` with ``promote_every`` (a multiple of the unit's L).

Tensors must be float32 or float64 (the unit's outputs are fp32 or fp16 values,
returned exactly in the input dtype); biases of ``linear``/``conv2d`` are added by
PyTorch in that dtype, outside the unit.  The backward GEMMs use the policy and
recorder that were active when the forward product ran.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("workbench.torch needs PyTorch (CPU build): pip install torch==2.13.0, "
                      "or pip install -e '.[torch]' after it") from exc

from . import formats as _formats
from . import schedules as _schedules
from .engine import core as _core
from .engine import gpu as _gpu
from .engine.model import Model
from .matmul import gemm as _gemm

__all__ = ["Policy", "GemmRecord", "Recorder", "simulate", "SCALINGS", "ROLES", "scale_exponents"]

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
        Presets (or :class:`~workbench.engine.Model`) for the forward product and the
        two backward products; ``dgrad`` defaults to ``forward`` and ``wgrad`` to
        ``dgrad``.  Each fixes its GEMM's input and output formats (e.g. e4m3 forward,
        e5m2 gradients: ``preset("H100", "fp8_e4m3")`` / ``preset("H100", "fp8_e5m2")``).
    scaling:
        One of :data:`SCALINGS`.
    accumulation, promote_every:
        As in :func:`workbench.gemm`.
    schedule:
        A library's schedule over the units (:class:`workbench.schedules.Schedule` or
        the name of one in :data:`workbench.schedules.SCHEDULES`), as in
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

    def __post_init__(self) -> None:
        _gpu.check_device(self.device)
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
            if (self.accumulation, self.promote_every) != ("chain", None):
                raise ValueError(f"schedule={self.schedule!r} says how each part is accumulated: give it or "
                                 f"accumulation={self.accumulation!r}/promote_every={self.promote_every!r}, not both")
            if isinstance(self.schedule, str):
                object.__setattr__(self, "schedule", _schedules.get(self.schedule))
            elif not isinstance(self.schedule, _schedules.Schedule):
                raise TypeError(f"schedule={self.schedule!r}: expected a workbench.schedules.Schedule or a name")
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


@dataclass(frozen=True)
class GemmRecord:
    """One simulated GEMM: which product and role, its size, and what quantisation did.

    ``changed``: operand elements (A and B together) that quantisation changed;
    ``underflowed``: nonzero elements quantised to zero; ``subnormal``: elements
    subnormal in the input format after quantisation (a unit with
    ``flush_subnormals`` reads them as zero: MI250X fp16, Xie et al. Algorithm 2);
    ``overflowed``: finite elements quantised to Inf/NaN.  ``seconds``: time in
    :func:`workbench.gemm` (and the fp32 accumulation of ``"deepseek"``).
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


# ----------------------------------------------------------------- scaling
def scale_exponents(amax: np.ndarray, fmt: _formats.FloatFormat, recipe: str) -> np.ndarray:
    """Power-of-two exponents e of the scales 2**e for block maxima ``amax``.

    ``recipe="mx"``: OCP MX v1.0 Section 6.3, ``floor(log2(amax)) - emax`` (0 for an
    all-zero block); otherwise the smallest e with ``amax / 2**e <= fmt.max``.
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


def _block_amax(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Max |x| over blocks of rows x cols (edge blocks smaller)."""
    m, n = x.shape
    pm, pn = -(-m // rows) * rows, -(-n // cols) * cols
    padded = np.zeros((pm, pn))
    padded[:m, :n] = np.abs(x)
    return padded.reshape(pm // rows, rows, pn // cols, cols).max(axis=(1, 3))


def _expand(e: np.ndarray, rows: int, cols: int, shape: tuple[int, int]) -> np.ndarray:
    return np.repeat(np.repeat(e, rows, axis=0), cols, axis=1)[:shape[0], :shape[1]]


# -------------------------------------------------------------- the GEMM
class _Session:
    """A policy with its recorder: runs one role's GEMM on numpy operands."""

    def __init__(self, policy: Policy, recorder: Recorder) -> None:
        self.policy = policy
        self.recorder = recorder

    def _to_unit(self, x: np.ndarray, e: np.ndarray | None, fmt: _formats.FloatFormat, what: str,
                 counts: list[int]) -> np.ndarray:
        """x / 2**e quantised to (or checked in) ``fmt``; counts the quantisation's effects."""
        scaled = x if e is None else np.ldexp(x, -e)
        mode = self.policy.quantize
        with _core.threads_for(x.size):
            if mode is None:
                try:
                    q = _formats.check_representable(scaled, fmt, what)
                except ValueError as err:
                    raise ValueError(f"{err}; or name a quantisation in the policy: "
                                     f"workbench.torch.Policy(..., quantize='rne')") from None
            else:
                q = _formats.round(scaled, fmt, mode, saturate=self.policy.scaling == "mx")
        finite = np.isfinite(scaled)
        counts[0] += int(np.count_nonzero(q != scaled) - np.count_nonzero(np.isnan(scaled)))
        counts[1] += int(np.count_nonzero((q == 0) & (scaled != 0)))
        counts[2] += int(np.count_nonzero((q != 0) & (np.abs(q) < fmt.min_normal)))
        counts[3] += int(np.count_nonzero(finite & ~np.isfinite(q)))
        return q

    def gemm(self, A: np.ndarray, B: np.ndarray, role: str, op: str, counts: list[int]) -> np.ndarray:
        """The role's unit computing A @ B (float64 (M, K), (K, N)) under the policy."""
        pol = self.policy
        unit = pol.unit(role)
        fmt = unit.in_fmt
        M, K = A.shape
        N = B.shape[1]
        what_a, what_b = f"{op} {role} A", f"{op} {role} B"
        if pol.scaling == "none":
            return _gemm(self._to_unit(A, None, fmt, what_a, counts), self._to_unit(B, None, fmt, what_b, counts),
                         model=unit, **pol.accumulation_kwargs(), device=pol.device)
        if pol.scaling == "tensor":
            ea = scale_exponents(np.max(np.abs(A), initial=0.0), fmt, "tensor")
            eb = scale_exponents(np.max(np.abs(B), initial=0.0), fmt, "tensor")
            D = _gemm(self._to_unit(A, ea, fmt, what_a, counts), self._to_unit(B, eb, fmt, what_b, counts),
                      model=unit, **pol.accumulation_kwargs(), device=pol.device)
            return _formats.round(np.ldexp(D.astype(np.float64), int(ea + eb)), "fp32")
        if pol.scaling == "mx":
            kb = cast(int, unit.k_block)  # an MX unit has a scale block (STFDPAParams)
            ea = scale_exponents(_block_amax(A, 1, kb), fmt, "mx")
            eb = scale_exponents(_block_amax(B, kb, 1), fmt, "mx")
            Aq = self._to_unit(A, _expand(ea, 1, kb, A.shape), fmt, what_a, counts)
            Bq = self._to_unit(B, _expand(eb, kb, 1, B.shape), fmt, what_b, counts)
            return _gemm(Aq, Bq, model=unit, **pol.accumulation_kwargs(),
                         scale_a=np.ldexp(1.0, ea), scale_b=np.ldexp(1.0, eb), device=pol.device)
        # DeepSeek-V3: 1x128 tiles of A; 128x128 blocks (weights) or 128x1 tiles of B
        nb = DEEPSEEK_BLOCK
        b_cols = 1 if role == "wgrad" else nb
        ea = scale_exponents(_block_amax(A, 1, nb), fmt, "deepseek")            # (M, nK)
        eb = scale_exponents(_block_amax(B, nb, b_cols), fmt, "deepseek")       # (nK, ceil(N / b_cols))
        Aq = self._to_unit(A, _expand(ea, 1, nb, A.shape), fmt, what_a, counts)
        Bq = self._to_unit(B, _expand(eb, nb, b_cols, B.shape), fmt, what_b, counts)
        eb_cols = _expand(eb, 1, b_cols, (eb.shape[0], N))                      # (nK, N)
        acc = np.zeros((M, N))
        for c in range(-(-K // nb)):
            ks = slice(c * nb, min(K, (c + 1) * nb))
            part = _gemm(Aq[:, ks], Bq[ks, :], model=unit, device=pol.device).astype(np.float64)
            term = _formats.round(np.ldexp(part, ea[:, c][:, None] + eb_cols[c][None, :]), "fp32")
            acc = _formats.round(acc + term, "fp32")
        return acc

    def product(self, a: torch.Tensor, b: torch.Tensor, role: str, op: str) -> torch.Tensor:
        """Batched ``a @ b`` ((Bt, M, K) @ (Bt, K, N)) on the role's unit, recorded."""
        An = a.detach().numpy().astype(np.float64)
        Bn = b.detach().numpy().astype(np.float64)
        batch, M, K = An.shape
        N = Bn.shape[2]
        counts = [0, 0, 0, 0]
        t0 = time.perf_counter()
        out = np.empty((batch, M, N))
        for i in range(batch):
            out[i] = self.gemm(An[i], Bn[i], role, op, counts)
        seconds = time.perf_counter() - t0
        self.recorder.records.append(GemmRecord(
            op=op, role=role, unit=_unit_name(self.policy.unit(role)), batch=batch, m=M, k=K, n=N,
            elements=An.size + Bn.size, changed=counts[0], underflowed=counts[1], subnormal=counts[2],
            overflowed=counts[3], seconds=seconds))
        return torch.from_numpy(out.astype(np.float32 if a.dtype == torch.float32 else np.float64))


class _SimulatedProduct(torch.autograd.Function):
    """(Bt, M, K) @ (Bt, K, N) with all three GEMMs on simulated units."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, session: _Session, op: str) -> torch.Tensor:  # noqa: D102
        ctx.save_for_backward(a, b)
        ctx.session = session
        ctx.op = op
        return session.product(a, b, "forward", op)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:  # noqa: D102
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        with torch._C.DisableTorchFunction():
            if ctx.needs_input_grad[0]:
                grad_a = ctx.session.product(g, b.transpose(1, 2), "dgrad", ctx.op)
            if ctx.needs_input_grad[1]:
                grad_b = ctx.session.product(a.transpose(1, 2), g, "wgrad", ctx.op)
        return grad_a, grad_b, None, None


# --------------------------------------------------- torch functions routed
def _check_dtypes(op: str, *tensors: torch.Tensor) -> None:
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: expected tensors, got {type(t).__name__}")
        if t.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"{op}: tensor of dtype {t.dtype}; workbench.torch takes float32/float64 tensors (the "
                            f"policy's units and quantisation decide the formats the unit sees)")
    if len({t.dtype for t in tensors}) > 1:
        raise ValueError(f"{op}: operands of different dtypes {[t.dtype for t in tensors]}")


def _matmul(session: _Session, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
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
        out = _SimulatedProduct.apply(a2.reshape(1, -1, K), b2.unsqueeze(0), session, op).reshape(*lead, M, N)
    else:
        batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a3 = a2.expand(*batch, M, K).reshape(-1, M, K)
        b3 = b2.expand(*batch, K, N).reshape(-1, K, N)
        out = _SimulatedProduct.apply(a3, b3, session, op).reshape(*batch, M, N)
    if squeeze_b:
        out = out.squeeze(-1)
    if squeeze_a:
        out = out.squeeze(-2)
    return out


def _linear(session: _Session, input: torch.Tensor, weight: torch.Tensor,  # noqa: A002
            bias: torch.Tensor | None = None, op: str = "linear") -> torch.Tensor:
    y = _matmul(session, input, weight.t(), op)
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
    y = _linear(session, cols.transpose(1, 2), weight.reshape(out_c, -1), None, "conv2d")
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


def _as_policy(policy: Policy | Model) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Model):
        return Policy(forward=policy)
    raise TypeError(f"policy={policy!r}: expected a workbench.torch.Policy or a preset (workbench.preset(...))")


@contextlib.contextmanager
def simulate(policy: Policy | Model) -> Iterator[Recorder]:
    """Route the matrix products inside the block through simulated units.

    ``policy`` is a :class:`Policy` or a preset (the same unit for the forward, dgrad
    and wgrad GEMMs, no quantisation, no scaling, chained accumulation).  Yields the
    :class:`Recorder` that collects one :class:`GemmRecord` per GEMM, including the
    backward GEMMs of products made inside the block.
    """
    pol = _as_policy(policy)
    recorder = Recorder(pol)
    with _SimulateMode(_Session(pol, recorder)):
        yield recorder
