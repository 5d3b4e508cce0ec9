"""The adapter every probe talks to: a black box ``f(A, B, C) -> D``.

Design (docs/architecture.md, "Habits of the house"): a probe never knows what
it probes.  It hands float64 matrices to :class:`BlackBox` and reads float64 results;
the adapter converts to whatever the target wants (a numpy dtype, a torch tensor, a
GPU kernel launch).  MMA-Sim's Step 1 (Xie et al. 2025, Section 3.1.1) reduces an MMA
interface to independent dot products ``d = c + sum_k a_k b_k``; :meth:`BlackBox.dots`
evaluates a batch of such dot products with few calls of ``f`` by placing case ``r``
on the diagonal of a square product (row r of A, column r of B, C[r, r]) and ignoring
the off-diagonal outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..numbers import formats as _formats

MatMul = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]

__all__ = ["BlackBox", "as_black_box", "from_model"]


@dataclass
class BlackBox:
    """A matrix unit seen from outside.

    Parameters
    ----------
    fn:
        ``fn(A, B, C) -> D``: A (M x K) and B (K x N) hold values representable in
        ``in_format``, C (M x N) values representable in ``out_format``, all as
        float64 arrays; D is anything ``np.asarray`` turns into an (M x N) array of
        values in ``out_format``.
    in_format, out_format:
        Format names (:func:`workbench.format`).
    shape:
        ``(M, N, K)`` if the unit only accepts one shape (an ``mma`` instruction);
        probes then pad with zeros and never use more than K terms.  ``None``: any
        shape (a library GEMM).
    name:
        Shown in reports.
    """

    fn: MatMul
    in_format: str
    out_format: str
    shape: tuple[int, int, int] | None = None
    name: str = "black box"
    calls: int = field(default=0, compare=False)
    evaluations: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"fn must be callable f(A, B, C) -> D, got {type(self.fn).__name__}")
        self.in_fmt = _formats.format(self.in_format)
        self.out_fmt = _formats.format(self.out_format)
        self.in_format = self.in_fmt.name
        self.out_format = self.out_fmt.name
        if self.shape is not None:
            if len(self.shape) != 3 or any(int(s) < 1 for s in self.shape):
                raise ValueError(f"shape={self.shape!r}: expected (M, N, K) of positive integers")
            self.shape = tuple(int(s) for s in self.shape)  # type: ignore[assignment]

    @property
    def max_k(self) -> int | None:
        """Largest K a single call accepts (``None``: unlimited)."""
        return None if self.shape is None else self.shape[2]

    # ------------------------------------------------------------------ calls
    def matmul(self, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None) -> np.ndarray:
        """D = f(A, B, C) as float64 (shape-checked; fixed-shape units get zero padding)."""
        A = np.asarray(A, dtype=np.float64)
        B = np.asarray(B, dtype=np.float64)
        M, K = A.shape
        N = B.shape[1]
        C = np.zeros((M, N)) if C is None else np.asarray(C, dtype=np.float64)
        if self.shape is not None:
            Ms, Ns, Ks = self.shape
            if M > Ms or N > Ns or K > Ks:
                raise ValueError(f"{self.name} accepts {Ms}x{Ns}x{Ks} products; got {M}x{N}x{K}")
            A = np.pad(A, ((0, Ms - M), (0, Ks - K)))
            B = np.pad(B, ((0, Ks - K), (0, Ns - N)))
            C = np.pad(C, ((0, Ms - M), (0, Ns - N)))
        with np.errstate(all="ignore"):
            D = np.asarray(self.fn(A, B, C), dtype=np.float64)
        self.calls += 1
        self.evaluations += M * N
        if D.shape != A.shape[:1] + B.shape[1:]:
            raise ValueError(f"{self.name} returned shape {D.shape}; expected {(A.shape[0], B.shape[1])}")
        return D[:M, :N]

    def dots(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, chunk: int = 256) -> np.ndarray:
        """Batched independent dot products ``d[r] = c[r] + sum_k a[r, k] b[r, k]``.

        Case r sits on the diagonal of a square product (Xie et al. Section 3.1.1:
        outputs are independent dot products), ``chunk`` cases per call of ``fn``."""
        a = np.atleast_2d(np.asarray(a, dtype=np.float64))
        b = np.atleast_2d(np.asarray(b, dtype=np.float64))
        n, K = a.shape
        if b.shape != a.shape:
            raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}")
        c = np.zeros(n) if c is None else np.broadcast_to(np.asarray(c, dtype=np.float64), (n,))
        if self.max_k is not None and K > self.max_k:
            raise ValueError(f"{self.name} takes at most K={self.max_k} terms per call; a probe asked for {K}")
        if self.shape is not None:
            chunk = min(chunk, self.shape[0], self.shape[1])
        out = np.empty(n)
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            m = e - s
            C = np.zeros((m, m))
            C[np.arange(m), np.arange(m)] = c[s:e]
            D = self.matmul(a[s:e], b[s:e].T, C)
            out[s:e] = np.diagonal(D)
        return out


def from_model(model: Any, name: str | None = None, shape: tuple[int, int, int] | None = None) -> BlackBox:
    """A preset or custom model as a black box: ``f = gemm(A, B, C, model=model)``.

    This is the closed loop of the papers run on our own models (Khattak & Mikaitis
    2025, Section V-A: probing a model when no GPU is at hand).  Scaled models
    (``st-fdpa``/``gst-fdpa``) get every block scale factor equal to 1.  Integer units
    (``int-mma``) are refused with a ValueError: the probes infer floating-point
    arithmetic (alignment windows, roundings) from floating-point inputs."""
    from ..matmul.product import gemm

    if model.operation.integer:
        raise ValueError(f"{getattr(model, 'name', '') or model.describe()} is an integer unit ({model.in_format} -> "
                         f"{model.out_format}): the probes infer floating-point units; an integer unit's products "
                         "are exact, and what is left - overflow (wrap or saturate) and, when saturating, the "
                         "instruction's K - is told apart by workbench.gemm on inputs near 2^31 "
                         "(tests/test_int_units.py)")

    kb = getattr(model, "k_block", None)
    if getattr(model, "scale_format", None) is not None and kb:
        # scaled units (MX, NVFP4): f(A, B, C) has no scale inputs, so they are tied to 1
        # (representable in E8M0 and UE4M3); the probes then see the unit's arithmetic
        # on unscaled blocks - k_block and scale_format are not observable
        def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
            nb = -(-A.shape[1] // kb)
            return gemm(A, B, C, model=model, scale_a=np.ones((A.shape[0], nb)), scale_b=np.ones((nb, B.shape[1])))
    else:
        def fn(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
            return gemm(A, B, C, model=model)

    label = name or getattr(model, "name", "") or f"model({model.describe()})"
    if kb and getattr(model, "scale_format", None) is not None:
        label += " (scales = 1)"
    return BlackBox(fn, model.in_format, model.out_format, shape=shape, name=label)


def as_black_box(target: Any, in_format: str | None = None, out_format: str | None = None) -> BlackBox:
    """Accept a :class:`BlackBox`, a Model/Preset, or a callable plus formats."""
    from ..engine.model import Model

    if isinstance(target, BlackBox):
        if in_format is not None and _formats.format(in_format).name != target.in_format:
            raise ValueError(f"in_format={in_format!r} differs from the black box's {target.in_format!r}")
        if out_format is not None and _formats.format(out_format).name != target.out_format:
            raise ValueError(f"out_format={out_format!r} differs from the black box's {target.out_format!r}")
        return target
    if isinstance(target, Model):
        bb = from_model(target)
        return as_black_box(bb, in_format, out_format)
    if callable(target):
        if in_format is None or out_format is None:
            raise ValueError("a callable black box needs in_format and out_format")
        return BlackBox(target, in_format, out_format, name=getattr(target, "__name__", "black box"))
    raise TypeError(f"cannot probe {type(target).__name__}: pass f(A, B, C) -> D, a BlackBox or a Model")
